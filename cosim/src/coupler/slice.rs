//! A slice's frames and what became of them: the frames the nodes sent
//! and the network delivered, each frame's admission, and the counts a
//! coupler keeps ([`super::Coupler`]).

use fsin::config::SliceRatio;
use fsin::stats::Moments;
use serde::Serialize;

/// A frame a node sent during a slice.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InFrame {
    /// Sending node.
    pub node: u32,
    /// Node cycle at which it left the NIC.
    pub node_cycle: u64,
    /// Arrival order among the frames of its node (ties of equal stamps).
    pub seq: u64,
    /// Raw Ethernet frame.
    pub data: Vec<u8>,
}

/// A frame reaching a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutFrame {
    /// Destination node.
    pub node: u32,
    /// Node cycle at which it reaches the NIC.
    pub node_cycle: u64,
    /// Sending node, and the node cycle at which it left its NIC
    /// ([`InFrame`]'s `node` and `node_cycle`).
    pub src: u32,
    /// The node cycle at which it left the sender's NIC.
    pub sent: u64,
    /// The Ethernet frame, bytes.
    pub data: Vec<u8>,
}

/// What the NIC does with a frame a node sends ([`Admission::admit`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admitted {
    /// Queued for the network: hand it to [`super::Coupler::run_slice`].
    Frame(InFrame),
    /// Its node's `nic_queue_bytes` were full: dropped (and counted), as a
    /// full transmit queue drops it.
    Dropped,
    /// The CLEAR_STATS magic packet: the measured phase starts at the next
    /// barrier ([`super::Coupler::settle`] says so).
    ClearStats,
    /// A magic packet with another command (its payload byte, if any),
    /// ignored.
    Magic(Option<u8>),
}

/// The one owner of the NIC queue rule (`nic_queue_bytes`) while a slice
/// runs: what each node may still send, counting the frames it sent during
/// the slice, so that nothing a client sends is buffered without bound
/// (docs/cosim.md, "Nothing is buffered without bound"). From
/// [`super::Coupler::admission`]; the network applies the same rule again when it
/// injects each copy of a frame (a broadcast queues one per destination).
#[derive(Debug, Clone, Default)]
pub struct Admission {
    /// Bytes each node may still queue during this slice.
    pub(super) room: Vec<u64>,
    /// Nodes of the frames dropped, one entry per frame.
    pub(super) dropped: Vec<u32>,
    pub(super) clear_stats: bool,
}

impl Admission {
    /// Admits the frame `node` sent at `node_cycle`, the `seq`th of its
    /// client: cut to one byte beyond [`fsin_frames::MAX_FRAME_BYTES`]
    /// (still too long, so the network counts it as rejected, but never
    /// buffered whole: gRPC lets 4 MiB through), then queued if its node
    /// has room, dropped if not. Magic packets take room as any frame but
    /// never enter the network.
    ///
    /// # Panics
    /// If `node` is not a node of the run (the server checks ownership
    /// first).
    pub fn admit(&mut self, node: u32, node_cycle: u64, seq: u64, mut data: Vec<u8>) -> Admitted {
        data.truncate(fsin_frames::MAX_FRAME_BYTES + 1);
        let room = &mut self.room[node as usize];
        let Some(left) = room.checked_sub(data.len() as u64) else {
            self.dropped.push(node);
            return Admitted::Dropped;
        };
        *room = left;
        if fsin_frames::is_magic(&data) {
            return match data.get(fsin_frames::MAGIC_PAYLOAD) {
                Some(1) => {
                    self.clear_stats = true;
                    Admitted::ClearStats
                }
                other => Admitted::Magic(other.copied()),
            };
        }
        Admitted::Frame(InFrame {
            node,
            node_cycle,
            seq,
            data,
        })
    }
}

/// One slice: node cycles `[node_start, node_start + node_cycles)` matched
/// to network cycles `[net_start, net_start + net_cycles)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slice {
    /// Its first node cycle.
    pub node_start: u64,
    /// Its node cycles.
    pub node_cycles: u64,
    /// Its first network cycle.
    pub net_start: u64,
    /// Its network cycles.
    pub net_cycles: u64,
}

impl Slice {
    /// Network cycle containing node cycle `c` (linear within the slice).
    pub fn net_of(&self, c: u64) -> u64 {
        let off = u128::from(c.saturating_sub(self.node_start));
        self.net_start + (off * u128::from(self.net_cycles) / u128::from(self.node_cycles)) as u64
    }

    /// First node cycle at or after network cycle `t` (the slice's ratio
    /// extended beyond its end).
    pub fn node_of(&self, t: u64) -> u64 {
        let off = u128::from(t.saturating_sub(self.net_start));
        self.node_start
            + (off * u128::from(self.node_cycles)).div_ceil(u128::from(self.net_cycles)) as u64
    }

    /// The slice that follows, of `lengths` (network and node cycles), or
    /// `None` when it would end past 2^64 - 1 cycles on either clock.
    pub fn next(&self, lengths: SliceRatio) -> Option<Slice> {
        let SliceRatio {
            net: net_cycles,
            node: node_cycles,
        } = lengths;
        let node_start = self.node_start.checked_add(self.node_cycles)?;
        let net_start = self.net_start.checked_add(self.net_cycles)?;
        node_start.checked_add(node_cycles)?;
        net_start.checked_add(net_cycles)?;
        Some(Slice {
            node_start,
            node_cycles,
            net_start,
            net_cycles,
        })
    }
}

/// Per-node frame counters.
#[derive(Debug, Clone, Default, Serialize)]
pub struct NodeTraffic {
    /// Frames it sent into the network.
    pub frames_sent: u64,
    /// Their bytes.
    pub bytes_sent: u64,
    /// Frames delivered to it.
    pub frames_received: u64,
    /// Their bytes.
    pub bytes_received: u64,
    /// Frames it sent that found its `nic_queue_bytes` full (dropped).
    pub frames_dropped: u64,
    /// What the bridge did with the node's unusual frames.
    pub conduct: Conduct,
}

/// A node's frames that a well-behaved NIC does not send, and what the
/// bridge did with each kind (its policy as a switch's data sheet states
/// it: docs/cosim.md, "Frames a switch would not expect"). Counted over
/// the measured phase, for the node that sent them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Conduct {
    /// Frames under the 14-byte Ethernet header: dropped.
    pub short: u64,
    /// Frames over 9,018 bytes (a jumbo frame with a VLAN tag): dropped.
    pub oversized: u64,
    /// Frames whose source MAC is not the node's own: carried as they are
    /// (the bridge routes on the destination and never learns sources).
    pub foreign_source: u64,
    /// Unicast frames to a MAC that no node has, or to the node's own:
    /// dropped, not flooded.
    pub unknown_destination: u64,
    /// Frames to a group address (broadcast or multicast): flooded to
    /// every other node.
    pub broadcast: u64,
}

impl Conduct {
    /// Whether the node sent any frame a well-behaved NIC does not
    /// (broadcasts are usual: ARP).
    pub fn unusual(&self) -> bool {
        self.short + self.oversized + self.foreign_source + self.unknown_destination > 0
    }
}

/// Frame statistics of the measured phase.
#[derive(Debug, Clone, Default)]
pub struct FrameStats {
    /// Each node's counters, by node id.
    pub per_node: Vec<NodeTraffic>,
    /// Frames rejected for their size (outside 14..=9018 bytes) or for a
    /// sending node outside the network.
    pub rejected: u64,
    /// Frames to a MAC that no node of the network owns.
    pub unknown_mac: u64,
    /// Frames to or from a node that left the run.
    pub to_lost_nodes: u64,
    /// Frames that skipped the network (warm-up).
    pub bypassed: u64,
    /// Frames dropped because their sender's `nic_queue_bytes` were full
    /// (also per node).
    pub dropped: u64,
    /// Frames the network lost (`frame_loss`).
    pub lost: u64,
    /// Frames whose last packet arrived before an earlier frame of their
    /// source and destination had: held for it (`frame_order=pair`) or
    /// delivered ahead of it (`frame_order=network`).
    pub reordered: u64,
    /// Send stamp to NIC arrival, node cycles (false delay included).
    pub latency_node: Moments,
    /// First packet's injection to last packet's consumption, network cycles.
    pub latency_net: Moments,
}
