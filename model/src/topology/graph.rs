//! A network read from a file (`topo=file:PATH`): any connected graph of
//! routers ([`Graph`]), routed by the tables of [`super::tables`]
//! (Duato's routing over minimal paths with an up*/down* escape by
//! default, up*/down* alone, or minimal paths with a VC per hop).
//!
//! Router ids: in a direct graph ([`Graph::is_direct`]) router `i` is node
//! `i`'s, as in INSEE's direct families. Otherwise the compute nodes come
//! first (`0..N`, each with one port, port 0, to its router) and the
//! file's routers follow (`N + r`). A router's ports are its nodes' links
//! (in node order), then its links to other routers in the file's order;
//! every router has as many ports as the busiest one, the rest without a
//! link. A link arrives at the port of the same link at the other end.

use std::sync::Arc;

use super::family::TopologyFamily;
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

    fn indirect(&self) -> bool {
        !self.direct
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
}
