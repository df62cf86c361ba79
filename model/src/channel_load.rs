//! Channel loads of a file topology's routings under uniform traffic
//! (Dally and Towles, "Principles and Practices of Interconnection
//! Networks", ch. 3.3.1 and 9): every node sends the same share of its
//! packets to every other node, each packet splits evenly over the ports
//! its routing allows at every router, and the most loaded link between
//! routers bounds the injection rate the routing can sustain. Used to
//! say when a chosen routing's paths throw throughput away against
//! minimal paths (docs/model.md, "Routing a file topology").

use crate::spec::{FamilyParams, NetworkSpec, RoutingOrder};
use crate::topology::{ShortestPaths, Topology, TopologyFamily, UpDown};

/// Most routers x nodes entries the analysis walks (each destination
/// once over every router's ports).
pub const MAX_ENTRIES: usize = 1 << 20;

/// [`Topology::routing_bounds`] of `cfg`'s file topology, whatever its
/// routing (the network is built here with both tables): `(up*/down*,
/// minimal)` in phits/node/cycle. `None` for other families, with faults
/// (only up*/down* routes around them), or past [`MAX_ENTRIES`].
pub fn routing_bounds(cfg: &NetworkSpec) -> Option<(f64, f64)> {
    let FamilyParams::File { graph, .. } = &cfg.family else {
        return None;
    };
    let routers = graph.routers as usize
        + if graph.is_direct() {
            0
        } else {
            graph.node_router.len()
        };
    if cfg.faults > 0 || routers * graph.node_router.len() > MAX_ENTRIES {
        return None;
    }
    let spec = NetworkSpec {
        routing: RoutingOrder::Duato,
        ..cfg.clone()
    };
    Topology::build(&spec).ok()?.routing_bounds()
}

impl Topology {
    /// Throughput bounds of uniform traffic, phits/node/cycle, from the
    /// channel loads of up*/down*'s shortest legal paths and of minimal
    /// paths over the built links: `(up*/down*, minimal)`. `None` unless
    /// both tables exist (a file topology under `routing=duato` builds
    /// both; see [`Topology::shortest`] and [`Topology::up_down`]) and
    /// routers x nodes is at most [`MAX_ENTRIES`].
    pub fn routing_bounds(&self) -> Option<(f64, f64)> {
        let (ud, sp) = (self.up_down()?, self.shortest()?);
        if self.routers() * self.nodes() > MAX_ENTRIES || self.nodes() < 2 {
            return None;
        }
        Some((self.bound(&UpDownPaths(ud)), self.bound(&MinimalPaths(sp))))
    }

    /// 1 over the most loaded link between routers, per unit of each
    /// node's injection rate spread over all `nodes` nodes (as the
    /// families' bisection bounds count it: 8/k for a k-ary torus).
    fn bound(&self, paths: &impl Paths) -> f64 {
        let (routers, ports, nodes) = (self.routers(), self.ports(), self.nodes());
        let indirect = self.family().indirect();
        let neighbour = |r: u32, p: usize| self.neighbour(r, p).map(|(v, _)| v);
        let mut load = vec![0.0f64; routers * ports];
        // Flow per (router, may still climb), and the states of each
        // distance left, walked from the farthest.
        let mut flow = vec![[0.0f64; 2]; routers];
        let mut levels: Vec<Vec<(u32, bool)>> = Vec::new();
        for d in 0..nodes as u32 {
            for s in (0..nodes as u32).filter(|&s| s != d) {
                let left = paths.left(s, d, true) as usize;
                if levels.len() <= left {
                    levels.resize(left + 1, Vec::new());
                }
                flow[s as usize][1] += 1.0;
                levels[left].push((s, true));
            }
            for left in (1..levels.len()).rev() {
                let states = std::mem::take(&mut levels[left]);
                for (r, climb) in states {
                    let f = std::mem::take(&mut flow[r as usize][usize::from(climb)]);
                    if f == 0.0 {
                        continue;
                    }
                    let mask = paths.ports(r, d, climb, ports, &neighbour);
                    let share = f / f64::from(mask.count_ones().max(1));
                    for p in (0..ports).filter(|&p| mask >> p & 1 == 1) {
                        let Some(v) = neighbour(r, p) else { continue };
                        load[r as usize * ports + p] += share;
                        let still = climb && paths.climbs(r, v);
                        let slot = &mut flow[v as usize][usize::from(still)];
                        if *slot == 0.0 {
                            levels[left - 1].push((v, still));
                        }
                        *slot += share;
                    }
                }
            }
            if let Some(arrived) = levels.first_mut() {
                arrived.clear();
            }
            flow[d as usize] = [0.0; 2];
        }
        let busiest = (0..routers * ports)
            .filter(|&i| {
                let r = (i / ports) as u32;
                let v = neighbour(r, i % ports);
                !indirect || v.is_some_and(|v| r as usize >= nodes && v as usize >= nodes)
            })
            .map(|i| load[i])
            .fold(0.0, f64::max);
        if busiest == 0.0 {
            f64::INFINITY
        } else {
            nodes as f64 / busiest
        }
    }
}

/// A routing's paths to a destination, as the analysis walks them.
trait Paths {
    /// Links left from router `r` to node `d`; `climb`: the packet may
    /// still go up (up*/down*).
    fn left(&self, r: u32, d: u32, climb: bool) -> u32;
    /// The ports (bit set) the routing allows at `r` towards `d`.
    fn ports(
        &self,
        r: u32,
        d: u32,
        climb: bool,
        ports: usize,
        neighbour: &impl Fn(u32, usize) -> Option<u32>,
    ) -> u128;
    /// Whether the hop from `r` to `v` keeps the packet climbing.
    fn climbs(&self, r: u32, v: u32) -> bool;
}

struct UpDownPaths<'a>(&'a UpDown);

impl Paths for UpDownPaths<'_> {
    fn left(&self, r: u32, d: u32, climb: bool) -> u32 {
        let l = if climb {
            self.0.legal(r, d)
        } else {
            self.0.down(r, d)
        };
        l.unwrap_or(0)
    }

    fn ports(
        &self,
        r: u32,
        d: u32,
        climb: bool,
        ports: usize,
        neighbour: &impl Fn(u32, usize) -> Option<u32>,
    ) -> u128 {
        self.0.ports(r, d, climb, ports, neighbour)
    }

    fn climbs(&self, r: u32, v: u32) -> bool {
        self.0.is_up(r, v)
    }
}

struct MinimalPaths<'a>(&'a ShortestPaths);

impl Paths for MinimalPaths<'_> {
    fn left(&self, r: u32, d: u32, _climb: bool) -> u32 {
        self.0.dist(r, d)
    }

    fn ports(
        &self,
        r: u32,
        d: u32,
        _climb: bool,
        ports: usize,
        neighbour: &impl Fn(u32, usize) -> Option<u32>,
    ) -> u128 {
        self.0.next(r, d, ports, neighbour)
    }

    /// Minimal paths have no climbing phase: every state is one.
    fn climbs(&self, _r: u32, _v: u32) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::spec::{Graph, GraphLink};

    /// A ring of 4 routers, a node each. Minimal paths: every directed
    /// link carries its one neighbour pair and half of two pairs two hops
    /// apart, 2 units, so 4 / 2 = 2 phits/node/cycle (8/k, k = 4).
    /// Up*/down* rooted at router 0 (ranks 0 < 1 < 3 < 2): routes from 1
    /// to 3 and from 3 to 1 must pass router 0, so links 0-1 and 0-3
    /// carry 2.5 units each way: 4 / 2.5 = 1.6.
    #[test]
    fn a_ring_of_four_by_hand() {
        let link = |a, b| GraphLink {
            a,
            b,
            latency_ab: 1,
            latency_ba: 1,
        };
        let graph = Graph {
            routers: 4,
            node_router: vec![0, 1, 2, 3],
            links: vec![link(0, 1), link(1, 2), link(2, 3), link(3, 0)],
        };
        let spec = NetworkSpec {
            family: FamilyParams::File {
                path: "ring".into(),
                graph: Arc::new(graph),
            },
            ..NetworkSpec::default()
        };
        let spec = NetworkSpec {
            topo: crate::spec::TopoKind::File,
            dims: vec![4],
            ..spec
        };
        let (updown, minimal) = routing_bounds(&spec).unwrap();
        assert!((updown - 1.6).abs() < 1e-12, "{updown}");
        assert!((minimal - 2.0).abs() < 1e-12, "{minimal}");
    }
}
