//! What `fsin topology` reports of a topology ([`super::summary`] builds
//! it).

use serde::Serialize;

/// What `fsin topology` prints (its JSON keys are docs/contracts.md's).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopologySummary {
    /// The `topo` value.
    pub topology: String,
    /// Compute nodes.
    pub nodes: u64,
    /// Routers or switches (a direct network has one per node).
    pub switches: u64,
    /// Links counted as the thin-trees paper counts them: full-duplex links between
    /// routers (unidirectional links, with `nways=1`, count one each) plus
    /// one link per compute node.
    pub links: u64,
    /// Of `links`, those between routers.
    pub router_links: u64,
    /// Link ports per router.
    pub ports: u64,
    /// Longest minimal route, in router-to-router hops.
    pub diameter: u64,
    /// Mean minimal route over ordered pairs of distinct nodes, in hops
    /// (the mean distance of uniform traffic).
    pub avg_distance: f64,
    /// Links cut by a minimal bisection (tori and meshes: the cut across
    /// the largest dimension), if known for the family.
    pub bisection_links: Option<u64>,
    /// How `bisection_links` was found: the family's closed form, or for
    /// a file topology the exact search or METIS's estimate (`fsin
    /// topology` fills it in: `fsin_config::bisection`).
    pub bisection_method: Option<String>,
    /// Ideal uniform-traffic throughput relative to a full network: thin
    /// trees' (k'/k)^(n-1); `None` for direct networks.
    pub theta: Option<f64>,
    /// Uniform-traffic bisection bound in phits/node/cycle (tori 8/k,
    /// unidirectional tori and meshes 4/k with k the largest dimension),
    /// if known.
    pub throughput_bound: Option<f64>,
    /// The routing the configuration uses, in words (`fsin topology`
    /// fills it in from the configuration).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routing: Option<String>,
    /// A file topology's uniform-traffic bounds from channel loads,
    /// phits/node/cycle, of up*/down*'s paths and of minimal paths
    /// ([`crate::channel_load::routing_bounds`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routing_bounds: Option<RoutingBounds>,
}

/// Uniform-traffic bounds of a file topology's routings from their
/// channel loads, phits/node/cycle.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RoutingBounds {
    /// Up*/down*'s shortest legal paths.
    pub updown: f64,
    /// Minimal paths (those of `routing=duato` and `shortest`).
    pub minimal: f64,
}
