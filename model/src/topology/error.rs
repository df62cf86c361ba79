//! Why a topology's failed links cannot be failed or routed around.

use super::tables::MAX_ENTRIES;

/// Why the failed links of a network (`faults`) cannot be failed or
/// routed around.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FaultError {
    /// Up*/down* tables of routers x nodes entries would pass
    /// [`MAX_ENTRIES`].
    #[error("routing around faults keeps tables of routers x nodes entries; {routers} x {nodes} is more than {}", MAX_ENTRIES)]
    TablesTooLarge {
        /// Routers of the network.
        routers: usize,
        /// Its compute nodes.
        nodes: usize,
    },
    /// More failed links than links that may fail.
    #[error("{count} failed links, but the network has {links} that may fail")]
    TooMany {
        /// Failed links asked for.
        count: usize,
        /// Links that may fail.
        links: usize,
    },
    /// The failed links (router-router) leave node `lost` unable to reach
    /// node 0.
    #[error("the failed links (router-router: {}) leave node {lost} unable to reach node 0; choose fewer faults or another rseed", links.iter().map(|(r, v)| format!("{r}-{v}")).collect::<Vec<_>>().join(", "))]
    Disconnected {
        /// The failed links, as (router, router).
        links: Vec<(u32, u32)>,
        /// A node cut off from node 0.
        lost: usize,
    },
    /// The failed links cut the root of up*/down* (`updown_root`) off
    /// the nodes.
    #[error("the failed links cut router {root} (updown_root) off the nodes; choose another root or rseed")]
    RootCut {
        /// The root's router.
        root: u32,
    },
}

/// The failed links of a network (`faults`) that cannot be failed or
/// routed around: how many were asked for, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("faults={faults}: {reason}")]
pub struct FaultsError {
    /// The `faults` asked for.
    pub faults: u32,
    /// Why they cannot be.
    pub reason: FaultError,
}
