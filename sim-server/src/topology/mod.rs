//! Topologies, one family per file. The k-ary n-cube family (meshes, tori,
//! twisted tori, midimew) is in [`cube`]. [`summary`] describes a built
//! topology for `fsin topology`: counts, distances and bisection.

pub mod cube;

use std::collections::VecDeque;

use serde::Serialize;

use crate::config::{Config, TopoKind};
pub use cube::{Cube, Record, MAX_DIMS};

/// What `fsin topology` prints (JSON keys as in the contract).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// The `topo` value.
    pub topology: String,
    /// Compute nodes.
    pub nodes: u64,
    /// Routers or switches (a direct network has one per node).
    pub switches: u64,
    /// Links counted as seed 002 counts them: full-duplex links between
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
    /// Ideal uniform-traffic throughput relative to a full network: thin
    /// trees' (k'/k)^(n-1); `None` for direct networks.
    pub theta: Option<f64>,
    /// Uniform-traffic bisection bound in phits/node/cycle (tori 8/k,
    /// unidirectional tori and meshes 4/k with k the largest dimension),
    /// if known.
    pub throughput_bound: Option<f64>,
}

/// Builds the topology of `cfg` and measures it: links from the built
/// neighbour tables and distances by breadth-first search over them (from
/// one node for the vertex-transitive tori, twisted tori and midimews;
/// from every node for meshes of up to 4096 nodes, the closed form above
/// that).
pub fn summary(cfg: &Config) -> Summary {
    let cube = Cube::new(cfg);
    let n = cube.nodes();
    let ports = cube.ports();
    let mut directed = 0u64;
    for node in 0..n as u32 {
        directed += (0..ports)
            .filter(|&p| cube.neighbour(node, p).is_some())
            .count() as u64;
    }
    let router_links = if cube.nways() == 2 {
        directed / 2
    } else {
        directed
    };
    let (diameter, avg_distance) = match cfg.topo {
        TopoKind::Mesh if n > 4096 => mesh_distances(&cfg.dims),
        TopoKind::Mesh => {
            let mut max = 0;
            let mut sum = 0u64;
            for s in 0..n as u32 {
                let (m, t) = bfs(&cube, s);
                max = max.max(m);
                sum += t;
            }
            (max, sum as f64 / (n as f64 * (n as f64 - 1.0)))
        }
        _ => {
            let (m, t) = bfs(&cube, 0);
            (m, t as f64 / (n as f64 - 1.0))
        }
    };
    let kmax = cfg.dims.iter().copied().max().unwrap_or(1);
    let cross = n as u64 / u64::from(kmax);
    let bisection_links = match cfg.topo {
        TopoKind::Torus => Some(2 * cross),
        TopoKind::Mesh => Some(cross),
        _ => None,
    };
    Summary {
        topology: crate::config::keys::lookup("topo").map_or_else(String::new, |k| (k.show)(cfg)),
        nodes: n as u64,
        switches: n as u64,
        links: router_links + n as u64,
        router_links,
        ports: ports as u64,
        diameter,
        avg_distance,
        bisection_links,
        theta: None,
        throughput_bound: throughput_bound(cfg),
    }
}

/// Uniform-traffic bisection bound in phits/node/cycle: half the traffic
/// of each node crosses the bisection, which carries 2 N/k phits per cycle
/// and direction on a torus (`8/k`), N/k on a mesh or a unidirectional
/// torus (`4/k`); `None` for other families.
pub fn throughput_bound(cfg: &Config) -> Option<f64> {
    let kmax = f64::from(cfg.dims.iter().copied().max().unwrap_or(1));
    match cfg.topo {
        TopoKind::Torus if cfg.nways == 2 => Some(8.0 / kmax),
        TopoKind::Torus | TopoKind::Mesh => Some(4.0 / kmax),
        _ => None,
    }
}

/// Hops from `src` to every node over the built links: (largest, sum).
///
/// # Panics
/// If some node cannot be reached (the topology is disconnected).
fn bfs(cube: &Cube, src: u32) -> (u64, u64) {
    let dist = hops_from(cube, src);
    assert!(
        dist.iter().all(|&d| d != u32::MAX),
        "node {src} does not reach every node"
    );
    (
        u64::from(dist.iter().copied().max().unwrap_or(0)),
        dist.iter().map(|&d| u64::from(d)).sum(),
    )
}

/// Breadth-first search over the built links: hops from `src` to every
/// node (`u32::MAX`: unreachable).
pub fn hops_from(cube: &Cube, src: u32) -> Vec<u32> {
    let mut dist = vec![u32::MAX; cube.nodes()];
    let mut q = VecDeque::from([src]);
    dist[src as usize] = 0;
    while let Some(u) = q.pop_front() {
        for p in 0..cube.ports() {
            if let Some(v) = cube.neighbour(u, p) {
                if dist[v as usize] == u32::MAX {
                    dist[v as usize] = dist[u as usize] + 1;
                    q.push_back(v);
                }
            }
        }
    }
    dist
}

/// Diameter and mean distance of a mesh in closed form: per dimension of
/// `k` nodes the ordered pairs sum to `(k^3 - k) / 3` hops, repeated for
/// every pair of lines, `(N / k)^2` of them.
fn mesh_distances(dims: &[u32]) -> (u64, f64) {
    let n: f64 = dims.iter().map(|&k| f64::from(k)).product();
    let total: f64 = dims
        .iter()
        .map(|&k| {
            let k = f64::from(k);
            (n / k).powi(2) * (k.powi(3) - k) / 3.0
        })
        .sum();
    (
        dims.iter().map(|&k| u64::from(k) - 1).sum(),
        total / (n * (n - 1.0)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(settings: &[&str]) -> Summary {
        summary(&Config::from_settings(settings).unwrap())
    }

    #[test]
    fn torus_and_mesh_against_closed_forms() {
        // 8x8 torus: 64 nodes, 128 router links + 64 node links, diameter
        // 8, mean distance 4 * 64 / 63 (every ring of 8 adds 2 on average
        // over all 64 nodes, self included), bisection 2 * 8 links.
        let t = sum(&["topo=torus_8_8"]);
        assert_eq!(
            (t.nodes, t.switches, t.router_links, t.links),
            (64, 64, 128, 192)
        );
        assert_eq!(t.diameter, 8);
        assert!((t.avg_distance - 4.0 * 64.0 / 63.0).abs() < 1e-12);
        assert_eq!(
            (t.bisection_links, t.throughput_bound),
            (Some(16), Some(1.0))
        );
        // 4x4 mesh: 24 links, diameter 6, mean 2 * (64 - 4) / 3 / 16 per
        // dimension over ordered pairs, 8/3 in all, over 240 distinct pairs.
        let m = sum(&["topo=mesh_4_4"]);
        assert_eq!(
            (m.router_links, m.diameter, m.bisection_links),
            (24, 6, Some(4))
        );
        assert!(
            (m.avg_distance - 2.0 * 4.0 * 4.0 * 20.0 / 240.0).abs() < 1e-12,
            "{}",
            m.avg_distance
        );
        // The closed form used for large meshes agrees with the search.
        let (d, a) = mesh_distances(&[4, 4]);
        assert_eq!(d, 6);
        assert!((a - m.avg_distance).abs() < 1e-12);
        let (d, a) = mesh_distances(&[5, 3, 2]);
        let b = sum(&["topo=mesh_5_3_2"]);
        assert_eq!((d, b.diameter), (7, 7));
        assert!((a - b.avg_distance).abs() < 1e-12);
        // Unidirectional ring of 5: every node 1..4 hops away.
        let u = sum(&["topo=torus_5", "nways=1"]);
        assert_eq!((u.router_links, u.diameter), (5, 4));
        assert!((u.avg_distance - 2.5).abs() < 1e-12);
        // Midimew of 32 nodes (jumps 4 and 3): the minimum-distance
        // circulant of degree 4 has diameter 4.
        let w = sum(&["topo=midimew_32"]);
        assert_eq!(
            (w.router_links, w.diameter, w.bisection_links),
            (64, 4, None)
        );
    }

    #[test]
    fn every_node_reaches_every_other_and_routes_are_minimal() {
        use rand::SeedableRng;
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
        for settings in [
            &["topo=torus_5_4"][..],
            &["topo=torus_4_4_2"],
            &["topo=mesh_3_4"],
            &["topo=torus_6", "nways=1"],
            &["topo=ttorus_4_4", "sk_xy=1"],
            &["topo=ttorus_6_3", "sk_xy=2"],
            &["topo=midimew_13"],
            &["topo=midimew_50"],
            &["topo=circulant_16_4"],
            &["topo=circulant_23_5"],
            &["topo=circulant_10_5"],
        ] {
            let cfg = Config::from_settings(settings).unwrap();
            let cube = Cube::new(&cfg);
            for src in 0..cube.nodes() as u32 {
                let dist = hops_from(&cube, src);
                for (dst, &d) in dist.iter().enumerate() {
                    assert_ne!(d, u32::MAX, "{settings:?}: {src} -> {dst} unreachable");
                    let r = cube.record(src, dst as u32, &mut rng);
                    let hops: u32 = r.iter().map(|h| h.unsigned_abs()).sum();
                    assert_eq!(hops, d, "{settings:?}: {src} -> {dst} record {r:?}");
                }
            }
        }
    }
}
