//! A network read from a file (`topo=file:PATH`, issue 58): any connected
//! graph of routers ([`Graph`]), routed by up*/down* tables (Autonet's
//! rule, [`super::faults`]), which is deadlock-free on any connected graph.
//!
//! Router ids: in a direct graph ([`Graph::is_direct`]) router `i` is node
//! `i`'s, as in INSEE's direct families. Otherwise the compute nodes come
//! first (`0..N`, each with one port, port 0, to its router) and the
//! file's routers follow (`N + r`). A router's ports are its nodes' links
//! (in node order), then its links to other routers in the file's order;
//! every router has as many ports as the busiest one, the rest without a
//! link. A link arrives at the port of the same link at the other end.

use std::sync::Arc;

use rand::Rng;

use super::{Record, TopologyFamily};
use crate::spec::Graph;

/// A built file topology.
#[derive(Debug, Clone)]
pub struct GraphFamily {
    graph: Arc<Graph>,
    direct: bool,
    ports: usize,
    /// Per router, per port with a link: (neighbour, arrival port).
    adjacent: Vec<Vec<(u32, u32)>>,
    /// Per router, per port with a link: the link's latency from this
    /// end, cycles (node links 1).
    latency: Vec<Vec<u32>>,
}

impl GraphFamily {
    /// The topology of `graph` (checked when read: connected, links
    /// between routers of the graph, at least one node).
    pub fn new(graph: Arc<Graph>) -> GraphFamily {
        let direct = graph.is_direct();
        let nodes = graph.node_router.len();
        let first_router = if direct { 0 } else { nodes };
        let routers = first_router + graph.routers as usize;
        let mut adjacent: Vec<Vec<(u32, u32)>> = vec![Vec::new(); routers];
        let mut latency: Vec<Vec<u32>> = vec![Vec::new(); routers];
        if !direct {
            for (n, &r) in graph.node_router.iter().enumerate() {
                let s = first_router + r as usize;
                let at = adjacent[s].len() as u32;
                adjacent[s].push((n as u32, 0));
                adjacent[n].push((s as u32, at));
                latency[s].push(1);
                latency[n].push(1);
            }
        }
        for l in &graph.links {
            let (a, b) = (first_router + l.a as usize, first_router + l.b as usize);
            let (pa, pb) = (adjacent[a].len() as u32, adjacent[b].len() as u32);
            adjacent[a].push((b as u32, pb));
            adjacent[b].push((a as u32, pa));
            latency[a].push(l.latency_ab);
            latency[b].push(l.latency_ba);
        }
        let ports = adjacent.iter().map(Vec::len).max().unwrap_or(0).max(1);
        GraphFamily {
            graph,
            direct,
            ports,
            adjacent,
            latency,
        }
    }

    /// Cycles a phit takes over the link of `port` of router `r` (1 for
    /// node links and ports without a link).
    pub fn latency(&self, r: u32, port: usize) -> u32 {
        self.latency
            .get(r as usize)
            .and_then(|l| l.get(port))
            .copied()
            .unwrap_or(1)
    }

    /// The graph it was built from.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }
}

impl TopologyFamily for GraphFamily {
    fn nodes(&self) -> usize {
        self.graph.node_router.len()
    }

    fn routers(&self) -> usize {
        self.adjacent.len()
    }

    fn ports(&self) -> usize {
        self.ports
    }

    fn link(&self, r: u32, port: usize) -> Option<(u32, usize)> {
        self.adjacent
            .get(r as usize)?
            .get(port)
            .map(|&(v, q)| (v, q as usize))
    }

    fn reverse_port(&self, _port: usize, arrive: usize) -> Option<usize> {
        Some(arrive)
    }

    /// Every hop takes one link off the record (the up*/down* tables give
    /// its length).
    fn hop(&self, _port: usize) -> (u8, i32) {
        (0, -1)
    }

    fn direction(&self, _port: usize) -> (usize, bool) {
        (0, true)
    }

    /// Not used: a file topology's records come from its up*/down* tables
    /// (`Topology::record`), which always exist for it.
    fn record<R: Rng>(&self, _src: u32, _dst: u32, _rng: &mut R) -> Record {
        [0; 3]
    }

    fn indirect(&self) -> bool {
        !self.direct
    }
}

/// Minimal-path tables of a file topology (`routing=shortest`): the hops
/// from every router to every compute node, by breadth-first search from
/// each node over the links (`routers x nodes` entries).
#[derive(Debug, Clone)]
pub struct ShortestPaths {
    nodes: usize,
    /// `dist[r * nodes + d]`: links from router `r` to node `d`.
    dist: Vec<u16>,
    /// `next[r * nodes + d]`: the ports of `r` one link nearer to `d` (bit
    /// set), when the tables hold at most [`MASK_ENTRIES`] entries; else
    /// empty, and [`ShortestPaths::next`] folds them from `dist`.
    next: Vec<u128>,
}

/// Most routers x nodes entries for which the routing tables keep each
/// router's ports towards each node (16 bytes an entry, 16 MiB; up*/down*
/// keeps two, 32 MiB): a request then reads its ports instead of folding
/// them over the router's links.
pub const MASK_ENTRIES: usize = 1 << 20;

/// The ports `p` (bit set) of router `r` whose neighbour `v` passes
/// `keep(v)`.
pub(crate) fn ports_where(
    r: u32,
    ports: usize,
    neighbour: &impl Fn(u32, usize) -> Option<u32>,
    keep: impl Fn(u32) -> bool,
) -> u128 {
    (0..ports)
        .filter(|&p| neighbour(r, p).is_some_and(&keep))
        .fold(0, |m, p| m | 1 << p)
}

impl ShortestPaths {
    /// The tables of `routers` routers (the first `nodes` are the compute
    /// nodes' own, as the engine numbers them) whose links are
    /// `neighbour(r, p)` over `ports` ports, full duplex. Every node
    /// reaches every router (the file was checked connected).
    pub fn new(
        routers: usize,
        nodes: usize,
        ports: usize,
        neighbour: impl Fn(u32, usize) -> Option<u32>,
    ) -> ShortestPaths {
        let mut dist = vec![u16::MAX; routers * nodes];
        let mut queue = std::collections::VecDeque::new();
        for d in 0..nodes {
            dist[d * nodes + d] = 0;
            queue.push_back(d as u32);
            while let Some(u) = queue.pop_front() {
                let du = dist[u as usize * nodes + d];
                for p in 0..ports {
                    if let Some(v) = neighbour(u, p) {
                        let at = v as usize * nodes + d;
                        if dist[at] == u16::MAX {
                            dist[at] = du.saturating_add(1);
                            queue.push_back(v);
                        }
                    }
                }
            }
        }
        let mut sp = ShortestPaths {
            nodes,
            dist,
            next: Vec::new(),
        };
        if routers * nodes <= MASK_ENTRIES {
            sp.next = (0..routers * nodes)
                .map(|i| sp.fold_next((i / nodes) as u32, (i % nodes) as u32, ports, &neighbour))
                .collect();
        }
        sp
    }

    /// Links from router `r` to node `d`.
    #[inline]
    pub fn dist(&self, r: u32, d: u32) -> u32 {
        u32::from(self.dist[r as usize * self.nodes + d as usize])
    }

    /// The ports of router `r` one link nearer to node `d` (bit set), read
    /// from the table or folded over `r`'s links (`neighbour(r, p)` over
    /// `ports` ports, those the tables were built with).
    #[inline]
    pub fn next(
        &self,
        r: u32,
        d: u32,
        ports: usize,
        neighbour: impl Fn(u32, usize) -> Option<u32>,
    ) -> u128 {
        match self.next.get(r as usize * self.nodes + d as usize) {
            Some(&m) => m,
            None => self.fold_next(r, d, ports, &neighbour),
        }
    }

    fn fold_next(
        &self,
        r: u32,
        d: u32,
        ports: usize,
        neighbour: &impl Fn(u32, usize) -> Option<u32>,
    ) -> u128 {
        let left = self.dist(r, d);
        ports_where(r, ports, neighbour, |v| self.dist(v, d) + 1 == left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::GraphLink;

    fn link(a: u32, b: u32) -> GraphLink {
        GraphLink {
            a,
            b,
            latency_ab: 1,
            latency_ba: 1,
        }
    }

    #[test]
    fn a_direct_ring_links_each_router_to_two() {
        let g = Graph {
            routers: 4,
            node_router: vec![0, 1, 2, 3],
            links: vec![link(0, 1), link(1, 2), link(2, 3), link(3, 0)],
        };
        let f = GraphFamily::new(Arc::new(g));
        assert!(!f.indirect());
        assert_eq!((f.nodes(), f.routers(), f.ports()), (4, 4, 2));
        // Router 0: port 0 to 1 (arriving at 1's port 0), port 1 to 3
        // (arriving at 3's port 1, its second link).
        assert_eq!(f.link(0, 0), Some((1, 0)));
        assert_eq!(f.link(0, 1), Some((3, 1)));
        assert_eq!(f.link(3, 1), Some((0, 1)));
        assert_eq!(f.link(0, 2), None);
    }

    #[test]
    fn nodes_of_an_indirect_graph_come_first_with_one_port() {
        // Two routers, three nodes: 0 and 1 on router 0, 2 on router 1.
        let g = Graph {
            routers: 2,
            node_router: vec![0, 0, 1],
            links: vec![link(0, 1), link(0, 1)],
        };
        let f = GraphFamily::new(Arc::new(g));
        assert!(f.indirect());
        // Switch 0 is router 3: nodes 0 and 1, then two links to router 4.
        assert_eq!((f.nodes(), f.routers(), f.ports()), (3, 5, 4));
        assert_eq!(f.link(0, 0), Some((3, 0)));
        assert_eq!(f.link(1, 0), Some((3, 1)));
        assert_eq!(f.link(2, 0), Some((4, 0)));
        assert_eq!(f.link(3, 1), Some((1, 0)));
        assert_eq!(f.link(3, 2), Some((4, 1)));
        assert_eq!(f.link(3, 3), Some((4, 2)));
        assert_eq!(f.link(4, 2), Some((3, 3)));
        assert_eq!(f.link(1, 1), None);
    }

    /// A ring of 6 routers (ports 0: next, 1: previous).
    fn ring6(r: u32, p: usize) -> Option<u32> {
        Some(if p == 0 { (r + 1) % 6 } else { (r + 5) % 6 })
    }

    #[test]
    fn the_next_ports_are_the_ones_a_link_nearer_by_hand() {
        let sp = ShortestPaths::new(6, 6, 2, ring6);
        assert!(!sp.next.is_empty());
        // From 0: 1 and 2 by port 0, 4 and 5 by port 1, 3 both ways.
        let want = [0, 0b01, 0b01, 0b11, 0b10, 0b10];
        for (d, &m) in want.iter().enumerate() {
            assert_eq!(sp.next(0, d as u32, 2, ring6), m, "to {d}");
        }
        // The table and the fold agree everywhere.
        for r in 0..6 {
            for d in 0..6 {
                assert_eq!(sp.next(r, d, 2, ring6), sp.fold_next(r, d, 2, &ring6));
            }
        }
    }
}
