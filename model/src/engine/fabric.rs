//! The switching fabric of a part: its routers' shape, input queues,
//! output VCs and congestion state, the packets they hold, and the clock.
//! It is what a router's request reads: request policies
//! ([`crate::router::RequestPolicy`]) get it as a shared view (`&Fabric`)
//! and change nothing of it; what they draw comes from their router's own
//! random stream, handed to them beside it.

use super::congestion::Congestion;
use super::outputs::Outputs;
use super::queues::Queues;
use super::{InQueue, Packet, Shape, Split, CONSUME, NONE};
use crate::spec::NetworkSpec;
use crate::topology::Topology;

/// A part's fabric at cycle `now` (see [`super::Part`], which owns it).
pub(crate) struct Fabric {
    pub(crate) topo: std::sync::Arc<Topology>,
    pub(crate) cfg: NetworkSpec,
    pub(crate) now: u64,
    /// The routers' shape: ports, VCs, capacities, switching.
    pub(crate) shape: Shape,
    /// Input queues and their requests.
    pub(crate) queues: Queues,
    /// Output VCs and consumption.
    pub(crate) outputs: Outputs,
    /// Timeout-based congestion detection.
    pub(crate) congestion: Congestion,
    /// The records of the packets in the part (indexed by id; a part
    /// holds the records of the packets in its queues and sources).
    pub(crate) packets: Vec<Packet>,
    /// The part's index, and how the network is split into parts.
    pub(crate) part: u32,
    pub(crate) split: std::sync::Arc<Split>,
}

impl Fabric {
    /// Whether router `r` is the part's.
    #[inline]
    pub(crate) fn owns(&self, r: usize) -> bool {
        self.split.part_of(r) == self.part as usize
    }

    /// Phits in input queue `gi` now. Every queue has one writer (the
    /// output VC that feeds it, or the injection buffer) and drains through
    /// the one output it holds, and virtual cut-through makes transfers
    /// contiguous; so the occupancy is the settled count plus the phits
    /// sent so far by the feeding transfer minus those sent by the draining
    /// one, and phase B only has to count phits per transfer.
    #[inline]
    pub(crate) fn occ(&self, gi: usize) -> u32 {
        let InQueue {
            base,
            in_start,
            aop,
            cons_sent,
            ..
        } = self.queues.inq[gi];
        let incoming = self.now.saturating_sub(in_start) as u32;
        let outgoing = match aop {
            NONE => 0,
            CONSUME => cons_sent,
            go => self.sent(go as usize),
        };
        base + incoming - outgoing
    }

    /// Phits in the queue that global output VC `go` feeds, as
    /// [`Fabric::occ`] of it, from the copies kept in `go` (virtual
    /// cut-through: consumption and transfers drain one phit per cycle
    /// from their start); wormhole switching reads the queue itself.
    #[inline]
    pub(crate) fn down_occ(&self, go: usize) -> u32 {
        let out = self.outputs.out[go];
        if self.shape.wormhole {
            return self.occ(out.dst as usize);
        }
        let occ = self.copied_occ(go);
        debug_assert!(
            !self.owns(out.dst as usize / self.shape.n_in) || occ == self.occ(out.dst as usize),
            "copies of output VC {go}"
        );
        occ
    }

    /// [`Fabric::down_occ`] under virtual cut-through, from the copies in
    /// `go` alone (in debug builds the network compares those of queues in
    /// another part with the queue at the end of every cycle).
    #[inline]
    pub(crate) fn copied_occ(&self, go: usize) -> u32 {
        let out = self.outputs.out[go];
        let incoming = self.now.saturating_sub(out.start) as u32;
        let outgoing = self.now.saturating_sub(out.down_drain) as u32;
        out.down_base + incoming - outgoing
    }

    /// Phits that global output VC `go` has sent of its transfer before
    /// the current cycle's phase B (0 when it holds none).
    #[inline]
    pub(crate) fn sent(&self, go: usize) -> u32 {
        self.now.saturating_sub(self.outputs.out[go].start) as u32
    }
}
