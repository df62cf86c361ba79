//! The switching fabric of a part: its routers' shape, input queues,
//! output VCs and congestion state, the packets they hold, and the clock.
//! It is what a router's request reads: request policies
//! ([`crate::router::RequestPolicy`]) get it as a shared view (`&Fabric`)
//! and change nothing of it; what they draw comes from their router's own
//! random stream, handed to them beside it.

mod congestion;
mod outputs;
mod queues;
mod shape;

pub(crate) use congestion::Congestion;
pub(crate) use outputs::Outputs;
pub(crate) use queues::Queues;
pub(crate) use shape::{RouterKind, Shape};

use crate::spec::NetworkSpec;
use crate::topology::{Record, Topology};

/// A part's fabric at cycle `now` (see [`crate::engine::Part`], which
/// owns it).
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
        } = *self.queues.inq(gi);
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
        let out = *self.outputs.out(go);
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
        let out = *self.outputs.out(go);
        let incoming = self.now.saturating_sub(out.start) as u32;
        let outgoing = self.now.saturating_sub(out.down_drain) as u32;
        out.down_base + incoming - outgoing
    }

    /// Phits that global output VC `go` has sent of its transfer before
    /// the current cycle's phase B (0 when it holds none).
    #[inline]
    pub(crate) fn sent(&self, go: usize) -> u32 {
        self.now.saturating_sub(self.outputs.out(go).start) as u32
    }
}

/// Marker for "no input / no output / no packet".
pub(crate) const NONE: u32 = u32::MAX;
/// `aop` value of an input that holds the consumption port.
pub(crate) const CONSUME: u32 = u32::MAX - 1;

/// Per-packet state (pool entry).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Packet {
    pub src: u32,
    pub dst: u32,
    pub tag: u64,
    pub t_gen: u64,
    pub t_inj: u64,
    /// Hops to travel per dimension when generated (the record of a queued
    /// packet travels with it in its [`Slot`]).
    pub rr: Record,
    /// Hops of the route: every hop takes one step of the record towards
    /// zero, as routing is minimal.
    pub hops: u32,
    /// First cycle its header may be routed where it is, when the link it
    /// crossed takes more than a cycle (file topologies' link latency:
    /// crossing in cycle `c` a link of `L` cycles, `c + L`); earlier
    /// values are past.
    pub ready: u64,
}

/// A packet in an input queue, with the hops it still has to travel per
/// dimension: requests read the record of every head packet every cycle it
/// waits, so it lives in the queue, next to its neighbours, instead of in
/// the packet pool.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    pub pkt: u32,
    pub rr: Record,
}

/// An output VC port: where it leads and the transfer it holds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OutVc {
    /// Global input fed by the output VC, or [`NONE`] (mesh edge).
    pub dst: u32,
    /// Input holding the output VC (local input index or [`NONE`]).
    pub sip: u32,
    /// Cycle the transfer's first phit crossed the link ([`NOT_STARTED`]
    /// before that): the phits sent by the start of cycle `t` are
    /// `t - start` (see [`Fabric::sent`]).
    pub start: u64,
    /// A copy of the downstream queue's `InQueue::base`, and the cycle
    /// from which its head drains one phit per cycle (its output VC's
    /// `start`, the cycle it took consumption, or [`NOT_STARTED`]): with
    /// `start` they give the downstream occupancy ([`Fabric::down_occ`])
    /// without reading the neighbour's state, which requests check every
    /// cycle a head waits (virtual cut-through switching only).
    pub(crate) down_base: u32,
    pub(crate) down_drain: u64,
}

/// `OutVc::start` of an output VC whose link has not started its transfer.
pub(crate) const NOT_STARTED: u64 = u64::MAX;

/// The occupancy state of an input queue.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InQueue {
    /// Phits of the queue not counting the transfers in progress into and
    /// out of it (see [`Fabric::occ`]).
    pub(crate) base: u32,
    /// Global output VC that feeds the queue ([`NONE`] for injection).
    pub(crate) feeder: u32,
    /// A copy of the feeder's `OutVc::start`, so that the occupancy of a
    /// router's own queues reads only that router's state.
    pub(crate) in_start: u64,
    /// Output held by the queue's head packet (global output VC index,
    /// [`CONSUME`] or [`NONE`]).
    pub(crate) aop: u32,
    /// Phits consumed of the head packet while it holds consumption.
    pub(crate) cons_sent: u32,
}

/// Where local output VC (or transit input) index `o` leads: dimension,
/// direction and VC (`o = port * nchan + vc`, `port = dim * nways + k`,
/// `k = 0` positive).
#[derive(Debug, Clone, Copy)]
pub(crate) struct VcInfo {
    pub dim: u8,
    pub positive: bool,
    pub vc: u8,
}

/// A set of indices (routers, links) with work to do, one bit each, so
/// that a phase visits them in index order and its memory accesses stay
/// sequential.
#[derive(Debug, Clone)]
pub(crate) struct ActiveSet {
    pub(crate) words: Vec<u64>,
}

impl ActiveSet {
    pub(crate) fn new(len: usize) -> Self {
        ActiveSet {
            words: vec![0; len.div_ceil(64)],
        }
    }

    #[inline]
    pub(crate) fn insert(&mut self, i: usize) {
        self.words[i / 64] |= 1 << (i % 64);
    }
}

/// Slots of a queue's ring: the packets it can hold at once. A transit
/// queue holds at most `tql` packets under virtual cut-through (a packet
/// is admitted with room for all of it, and its feeding output VC sends
/// one packet at a time) and `tql + 1` under wormhole switching (one
/// partly gone, one partly come); an injection queue also holds the
/// packets of its injection buffer (`iql`). One slot more, to spare.
pub(crate) fn ring_slots(tql: u32, iql: u32, transit: bool) -> usize {
    let packets = if transit { tql + 1 } else { tql + iql + 1 };
    packets as usize + 1
}

/// `i mod n` for `i < 2 n`, without a division (ring buffers and cyclic
/// scans on the per-cycle path).
#[inline]
pub(crate) fn wrap(i: usize, n: usize) -> usize {
    debug_assert!(i < 2 * n, "{i} wrapped at {n}");
    if i >= n {
        i - n
    } else {
        i
    }
}

/// Events of the next few cycles: bucket `t % len` holds those of cycle
/// `t`, for `t` within [`Wheel::horizon`] cycles of now (a power of two
/// at least as long as the span asked for, so no bucket mixes two cycles).
#[derive(Debug, Clone)]
pub(crate) struct Wheel<B> {
    buckets: Vec<B>,
}

impl<B: Clone> Wheel<B> {
    /// A wheel for events up to `span` cycles ahead, every bucket `empty`.
    pub(crate) fn new(span: usize, empty: B) -> Self {
        Wheel {
            buckets: vec![empty; (span + 1).max(2).next_power_of_two()],
        }
    }

    /// How many cycles ahead an event may be.
    pub(crate) fn horizon(&self) -> u64 {
        self.buckets.len() as u64 - 1
    }

    #[inline]
    pub(crate) fn at(&mut self, cycle: u64) -> &mut B {
        let len = self.buckets.len();
        &mut self.buckets[cycle as usize & (len - 1)]
    }
}

/// How a network's routers are split into parts: part `p` owns the
/// share from `p / parts` to `(p + 1) / parts` of each class of routers
/// ([`Topology::router_classes`]: the compute nodes, then the switches,
/// level by level in trees), each split as evenly as its count allows, so
/// that every part gets its share of each job (most of a tree's routing
/// happens in its switches) and the switches its nodes reach first.
#[derive(Debug)]
pub(crate) struct Split {
    /// The part owning each router.
    owner: Vec<u32>,
    parts: usize,
}

impl Split {
    /// `parts` parts of `topo`'s routers.
    pub(crate) fn new(topo: &Topology, parts: usize) -> Split {
        let mut owner = vec![0; topo.routers()];
        for class in topo.router_classes() {
            let (first, n) = (class.start, class.len());
            for p in 0..parts {
                owner[first + p * n / parts..first + (p + 1) * n / parts].fill(p as u32);
            }
        }
        Split { owner, parts }
    }

    /// How many parts.
    pub(crate) fn parts(&self) -> usize {
        self.parts
    }

    /// The part owning router `r`.
    #[inline]
    pub(crate) fn part_of(&self, r: usize) -> usize {
        self.owner[r] as usize
    }

    /// The routers of part `p`, in id order.
    #[cfg(debug_assertions)]
    pub(crate) fn routers_of(&self, p: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.owner.len()).filter(move |&r| self.part_of(r) == p)
    }
}
