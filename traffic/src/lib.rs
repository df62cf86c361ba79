//! TrGen: traffic that feeds the network (INSEE paper, section 3).
//!
//! A [`TrafficSource`] decides, cycle by cycle, which packets the nodes
//! generate; the run driver hands them to the engine. Sources plug in
//! through this trait: independent Bernoulli sources with a spatial
//! [`pattern`] are in [`bernoulli`]. Application workloads are traces
//! (the `fsin-trace` crate) or [`kernels`] generated as traces, placed on
//! nodes by [`placement`] and replayed by [`replay`].

#![warn(missing_docs)]

pub mod bernoulli;
pub mod insee_replay;
pub mod kernels;
pub mod pattern;
pub mod placement;
pub mod replay;
pub mod slice;
pub use slice::{SliceError, SlicePart, SliceRatio, MAX_SLICE_CYCLES};

use fsin_model::engine::Delivered;

use fsin_model::network::Network;

/// Sees every packet a source hands the network, as it does (crate
/// `fsin`'s `plevel` outputs).
pub trait Observer {
    /// A packet from node `src` to node `dst` handed to `net`.
    fn generated(&mut self, net: &Network, src: u32, dst: u32);
}

/// What a source may ask of the network while generating.
pub trait NodeState {
    /// Whether `node` still holds a generated packet that found no room in
    /// its injection buffers (INSEE: no new packet is generated then).
    fn blocked(&self, node: u32) -> bool;
}

impl NodeState for Network {
    fn blocked(&self, node: u32) -> bool {
        self.source_backlog(node) > 0
    }
}

/// A generator of packets.
pub trait TrafficSource {
    /// Appends to `out` the `(source, destination)` pairs generated in
    /// cycle `now`. Called once per simulated cycle, in increasing order.
    fn generate(&mut self, now: u64, nodes: &dyn NodeState, out: &mut Vec<(u32, u32)>);

    /// The earliest cycle `>= now` at which [`TrafficSource::generate`] may
    /// produce a packet (`None`: never again); lets the driver skip cycles
    /// in which the network is idle.
    fn next_event(&self, now: u64) -> Option<u64>;

    /// Whether the source wants every delivered packet
    /// ([`TrafficSource::delivered`]); the driver records deliveries only
    /// then.
    fn wants_deliveries(&self) -> bool {
        false
    }

    /// A delivered packet, for sources that react to deliveries. The
    /// default ignores it.
    fn delivered(&mut self, _packet: &Delivered) {}
}
