//! The shape of a part's routers: ports, virtual channels, capacities and
//! switching, fixed at construction and read by every phase and request.

use super::VcInfo;

/// What every router of a network is built with (INSEE paper, section 2.2):
/// the same for every part, read-only once built.
pub(crate) struct Shape {
    /// How requests are made: the router of the topology family.
    pub(crate) kind: RouterKind,
    /// Cube routers: dimensions and directions per dimension.
    pub(crate) ndim: usize,
    pub(crate) nways: usize,
    /// Link ports per router.
    pub(crate) radix: usize,
    /// Virtual channels per port.
    pub(crate) nchan: usize,
    /// Injection queues per router.
    pub(crate) ninj: usize,
    /// Transit inputs per router (`radix * nchan`); also output VC ports.
    pub(crate) n_tr: usize,
    /// Inputs per router (`n_tr + ninj`).
    pub(crate) n_in: usize,
    /// Dimension, direction and VC of each local output VC index.
    pub(crate) vc_info: Vec<VcInfo>,
    /// Phit capacity of transit queues and injection ports (`tql * L`).
    pub(crate) cap: u32,
    /// Phit capacity of injection buffers (`iql * L`).
    pub(crate) qi_cap: u32,
    /// Packet length `L` in phits.
    pub(crate) plen: u32,
    /// Wormhole switching (`switching=wormhole`), and the phits a queue
    /// must have free for a packet to take an output (virtual cut-through:
    /// a whole packet).
    pub(crate) wormhole: bool,
    pub(crate) admit: u32,
}

/// The router whose requests a network makes (fixed at construction): one
/// [`crate::router::RequestPolicy`] each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RouterKind {
    /// The bubble, Dally and double routers of the k-ary n-cubes
    /// ([`crate::router::request::CubeRouter`]).
    Cube,
    /// The multistage router of trees ([`crate::router::multistage::TreeRouter`]).
    Tree,
    /// The hypercube router ([`crate::router::multistage::HypercubeRouter`]).
    Hypercube,
    /// Up*/down* tables around failed links ([`crate::router::multistage::UpDownRouter`]).
    UpDown,
    /// Minimal paths of a file topology, a VC per hop
    /// ([`crate::router::multistage::ShortestRouter`]).
    Shortest,
    /// Minimal adaptive paths with an up*/down* escape VC, Duato's
    /// ([`crate::router::multistage::DuatoRouter`]).
    Duato,
    /// The switches and node links of an indirect cube
    /// ([`crate::router::multistage::IcubeRouter`]).
    Icube,
}
