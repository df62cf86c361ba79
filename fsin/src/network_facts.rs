//! What a configuration's network is, measured, for every front end
//! (`fsin topology`, Python's `fsin.topology`, the bounds drawn by `fsin
//! sweep`): the topology's summary with a file topology's bisection
//! filled in, and the uniform-traffic throughput bound that follows from
//! it.

use crate::config::{bisection, Config, FamilyParams};
use crate::topology::{self, FaultsError, TopologySummary};

/// A topology's summary, and for a file topology the routers on one
/// side of its bisection (by router id), for drawing it.
#[derive(Debug, Clone)]
pub struct Facts {
    /// The topology's size, degree, diameter and bisection.
    pub summary: TopologySummary,
    /// For a file topology, whether each router (by id) is on the first
    /// side of its bisection; `None` for the cube families.
    pub side: Option<Vec<bool>>,
    /// What to tell the user of its routing ([`routing_warning`]).
    pub warning: Option<String>,
}

/// The summary of `cfg`'s topology ([`topology::summary`]); for a file
/// topology (`topo=file:...`) with its bisection links (exact up to
/// [`bisection::EXACT_ROUTERS`] routers, METIS above), the throughput
/// bound [`file_bound`] gives and its routings' channel-load bounds; with
/// the routing in use.
///
/// # Errors
/// As [`topology::summary`] (faults that disconnect the network).
pub fn facts(cfg: &Config) -> Result<Facts, FaultsError> {
    let mut summary = topology::summary(&cfg.net, cfg.topology_name())?;
    summary.routing = Some(cfg.routing_in_use());
    let bounds = fsin_model::channel_load::routing_bounds(&cfg.net);
    summary.routing_bounds =
        bounds.map(|(updown, minimal)| topology::RoutingBounds { updown, minimal });
    let warning = bounds.and_then(|b| warning(cfg, b));
    let mut side = None;
    if let FamilyParams::File { graph, .. } = &cfg.net.family {
        if let Some(b) = bisection::bisection(graph) {
            summary.bisection_links = Some(b.links);
            summary.bisection_method = Some(b.method);
            summary.throughput_bound = Some(file_bound(b.links, summary.nodes));
            side = Some(b.side);
        }
    }
    Ok(Facts {
        summary,
        side,
        warning,
    })
}

/// The uniform-traffic throughput bound of `cfg`'s network, in
/// phits/node/cycle: the family's closed form ([`topology::throughput_bound`],
/// without building the network), or for a file topology the bound
/// [`file_bound`] gives from its bisection; `None` where neither is known.
pub fn throughput_bound(cfg: &Config) -> Option<f64> {
    match &cfg.net.family {
        FamilyParams::File { graph, .. } => {
            bisection::bisection(graph).map(|b| file_bound(b.links, graph.node_router.len() as u64))
        }
        _ => topology::throughput_bound(&cfg.net),
    }
}

/// Share of minimal paths' channel-load bound below which a routing's
/// paths are said to throw throughput away (more than 30%).
pub const ROUTING_LOSS: f64 = 0.3;

/// What to tell a user whose file topology routes by up*/down* (chosen
/// with `routing=static|adaptive|updown` or `rmode`) where its paths'
/// channel-load bound under uniform traffic
/// ([`fsin_model::channel_load::routing_bounds`]) is more than
/// [`ROUTING_LOSS`] below minimal paths': those bounds track the measured
/// saturation of up*/down* and Duato's routing on the file networks of
/// docs/model.md, "Routing a file topology". `None` otherwise.
pub fn routing_warning(cfg: &Config) -> Option<String> {
    if routes_minimally(cfg) {
        return None;
    }
    warning(cfg, fsin_model::channel_load::routing_bounds(&cfg.net)?)
}

/// Whether `cfg` routes a file network by minimal paths (Duato's routing
/// or `shortest`), which no warning concerns.
fn routes_minimally(cfg: &Config) -> bool {
    use crate::config::RoutingOrder;
    matches!(
        cfg.net.routing,
        RoutingOrder::Duato | RoutingOrder::Shortest
    )
}

/// [`routing_warning`] from the channel-load bounds `(updown, minimal)`
/// already computed.
fn warning(cfg: &Config, (updown, minimal): (f64, f64)) -> Option<String> {
    (!routes_minimally(cfg) && updown < (1.0 - ROUTING_LOSS) * minimal).then(|| {
        format!(
            "up*/down* paths bound uniform traffic at {updown:.3} phits/node/cycle on this network, {:.0}% below minimal paths' {minimal:.3} (channel loads); {}",
            100.0 * (1.0 - updown / minimal),
            if cfg.net.nchan >= 2 {
                "routing=duato (the default) takes minimal paths with an up*/down* escape"
            } else {
                "with nchan=2 or more, routing=duato (the default then) takes minimal paths with an up*/down* escape"
            }
        )
    })
}

/// The uniform-traffic bound of a network of `nodes` nodes whose
/// bisection cuts `links` full-duplex links, phits/node/cycle: half of
/// every node's traffic crosses the cut, `nodes / 2 * load / 2` phits a
/// cycle each way over `links` phits a cycle each way, so load <= 4
/// links / nodes (Dally and Towles, ch. 3; a torus 8x8: 16 links, 1.0).
/// With METIS's cut, an upper bound on the bisection, the bound may be
/// loose but is never wrong.
pub fn file_bound(links: u64, nodes: u64) -> f64 {
    4.0 * links as f64 / nodes.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_ring_has_the_bound_of_a_ring() {
        // A ring of 4 routers with a node each, written as a file: the
        // bisection cuts 2 links, so 4 * 2 / 4 = 2 phits/node/cycle,
        // 8/k with k = 4 as the torus family gives.
        let dir = std::env::temp_dir().join(format!("fsin-facts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ring.edges");
        std::fs::write(&path, "0 1\n1 2\n2 3\n3 0\n").unwrap();
        let topo = format!("topo=file:{}", path.display());
        let cfg = Config::from_settings(&[topo.as_str()]).unwrap();
        let f = facts(&cfg).unwrap();
        assert_eq!(f.summary.bisection_links, Some(2));
        assert_eq!(f.summary.throughput_bound, Some(2.0));
        assert_eq!(throughput_bound(&cfg), Some(2.0));
        let torus = Config::from_settings(&["topo=torus_4"]).unwrap();
        assert_eq!(throughput_bound(&torus), Some(2.0));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
