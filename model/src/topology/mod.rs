//! Topologies, one family per file: the k-ary n-cube family (meshes,
//! tori, twisted tori, midimew, circulants) in [`cube`], multistage trees
//! (k-ary n-trees, thin and slim trees) in [`tree`], binary hypercubes in
//! [`hypercube`], indirect cubes in [`icube`], networks read from a file
//! in [`graph`] (routed by [`tables`]); the traits every family
//! implements sit below them all, in `family.rs`. [`Topology`] is what the
//! engine sees of any of them: routers, ports, links with their arrival
//! port, routing records and what a hop does to a record. [`summary`]
//! describes a built topology for `fsin topology`: counts, distances and
//! bisection.

pub mod cube;
mod error;
mod family;
pub mod faults;
pub mod graph;
pub mod hypercube;
pub mod icube;
mod summary;
pub mod tables;
pub mod tree;

use rand::Rng;

use crate::spec::{FamilyParams, Graph, NetworkSpec, RoutingOrder, TopoKind, UpDownRoot};
pub use cube::Cube;
pub use error::{FaultError, FaultsError};
pub use family::{links_left, Record, RecordRouting, TopologyFamily, MAX_DIMS};
pub use graph::GraphFamily;
pub use hypercube::Hypercube;
pub use icube::Icube;
pub use summary::{RoutingBounds, TopologySummary};
pub use tables::{ShortestPaths, UpDown};
pub use tree::Tree;

/// The family of a built topology, with its own description.
#[derive(Debug, Clone)]
pub enum Family {
    /// Meshes, tori, twisted tori, midimews, circulants.
    Cube(Cube),
    /// k-ary n-trees, thin trees, slim trees.
    Tree(Tree),
    /// Binary n-cubes.
    Hypercube(Hypercube),
    /// Indirect cubes (`icube`).
    Icube(Icube),
    /// Networks read from a file (`file:PATH`).
    Graph(GraphFamily),
}

/// `$body` with `$f` bound to the family description of `$family`, whatever
/// its variant (the one place that lists them).
macro_rules! each_family {
    ($family:expr, $f:ident => $body:expr) => {
        match $family {
            Family::Cube($f) => $body,
            Family::Tree($f) => $body,
            Family::Hypercube($f) => $body,
            Family::Icube($f) => $body,
            Family::Graph($f) => $body,
        }
    };
}

impl TopologyFamily for Family {
    fn nodes(&self) -> usize {
        each_family!(self, f => TopologyFamily::nodes(f))
    }
    fn routers(&self) -> usize {
        each_family!(self, f => TopologyFamily::routers(f))
    }
    fn ports(&self) -> usize {
        each_family!(self, f => TopologyFamily::ports(f))
    }
    fn link(&self, r: u32, port: usize) -> Option<(u32, usize)> {
        each_family!(self, f => TopologyFamily::link(f, r, port))
    }
    fn reverse_port(&self, port: usize, arrive: usize) -> Option<usize> {
        each_family!(self, f => TopologyFamily::reverse_port(f, port, arrive))
    }
    fn indirect(&self) -> bool {
        each_family!(self, f => TopologyFamily::indirect(f))
    }
    fn duplex(&self) -> bool {
        each_family!(self, f => TopologyFamily::duplex(f))
    }
    fn bisection_links(&self) -> Option<u64> {
        each_family!(self, f => TopologyFamily::bisection_links(f))
    }
    fn theta(&self) -> Option<f64> {
        each_family!(self, f => TopologyFamily::theta(f))
    }
    fn throughput_bound(&self) -> Option<f64> {
        each_family!(self, f => TopologyFamily::throughput_bound(f))
    }
    fn router_classes(&self) -> Vec<std::ops::Range<usize>> {
        each_family!(self, f => TopologyFamily::router_classes(f))
    }
}

/// `$body` with `$f` bound to the family of `$family` when it routes by
/// records ([`RecordRouting`]), else `$graph` (a file network, routed by
/// its tables).
macro_rules! each_record_family {
    ($family:expr, $f:ident => $body:expr, $graph:expr) => {
        match $family {
            Family::Cube($f) => $body,
            Family::Tree($f) => $body,
            Family::Hypercube($f) => $body,
            Family::Icube($f) => $body,
            Family::Graph(_) => $graph,
        }
    };
}

impl Family {
    /// What a hop on `port` does to a routing record
    /// ([`RecordRouting::hop`]); under a file network's tables every hop
    /// takes one link off entry 0.
    fn hop(&self, port: usize) -> (u8, i32) {
        each_record_family!(self, f => RecordRouting::hop(f, port), (0, -1))
    }

    /// Dimension and direction of `port` ([`RecordRouting::direction`]); a
    /// file network's ports have no dimension and all count as dimension
    /// 0, positive.
    fn direction(&self, port: usize) -> (usize, bool) {
        each_record_family!(self, f => RecordRouting::direction(f, port), (0, true))
    }

    /// The family's own minimal record from `src` to `dst`, `None` for a
    /// file network (its tables give the record).
    fn record<R: Rng>(&self, src: u32, dst: u32, rng: &mut R) -> Option<Record> {
        each_record_family!(self, f => Some(RecordRouting::record(f, src, dst, rng)), None)
    }

    /// Links left for record `rr` ([`RecordRouting::hops`]; under tables
    /// entry 0's).
    fn hops(&self, rr: &Record) -> u32 {
        each_record_family!(self, f => RecordRouting::hops(f, rr), links_left(rr))
    }
}

/// Marker in [`Topology`]'s link table for a port without a link.
const NO_PEER: (u32, u16) = (u32::MAX, u16::MAX);

/// A built topology as the engine uses it. Routers are numbered with the
/// compute nodes first (`0..nodes`: in direct networks every router is a
/// node's; in trees the nodes are elements of their own and the switches
/// follow). Every router has [`Topology::ports`] link ports (some may have
/// no link); a packet that leaves router `r` on port `p` arrives at
/// [`Topology::neighbour`]`(r, p)`.
#[derive(Debug, Clone)]
pub struct Topology {
    family: Family,
    nodes: u32,
    routers: u32,
    ports: usize,
    /// `(router, arrival port)` per `router * ports + port`, or [`NO_PEER`].
    link: Vec<(u32, u16)>,
    /// With faults (up*/down* needs it): the router that feeds input port
    /// `router * ports + port`, or `u32::MAX`.
    sender: Vec<u32>,
    /// Per port: the record entry a hop on it changes, and by how much.
    hop: Vec<(u8, i32)>,
    /// With faults: the failed links (router, port, router, port back;
    /// `usize::MAX` for a unidirectional link) and the
    /// up*/down* tables that route around them.
    failed: Vec<(u32, usize, u32, usize)>,
    up_down: Option<UpDown>,
    /// A file topology under `routing=shortest`: its minimal-path tables
    /// (instead of up*/down*'s); under `routing=duato` both.
    shortest: Option<ShortestPaths>,
    /// `routing=duato`: minimal adaptive on VCs 1 and up, up*/down* on VC
    /// 0; a packet's record counts the links left on the route its VC
    /// follows ([`Topology::duato_left`]).
    duato: bool,
    /// Cycles over the link of each (router, port) where a file gives
    /// some link more than one; empty when every link takes one.
    latency: Vec<u32>,
}

impl Topology {
    /// Builds the topology of `cfg`, failing `cfg.faults` links.
    ///
    /// # Errors
    /// [`FaultsError`]: more faults than links, or failed links that
    /// disconnect two nodes (both named), or tables beyond
    /// [`tables::MAX_ENTRIES`] (the configuration layer refuses all three).
    pub fn build(cfg: &NetworkSpec) -> Result<Topology, FaultsError> {
        Topology::build_with(cfg, true).map_err(|reason| FaultsError {
            faults: cfg.faults,
            reason,
        })
    }

    /// Checks that `cfg`'s faults leave a connected network that the
    /// tables can route, without building the tables.
    ///
    /// # Errors
    /// As [`Topology::build`].
    pub fn check_faults(cfg: &NetworkSpec) -> Result<(), FaultsError> {
        Topology::build_with(cfg, false)
            .map(|_| ())
            .map_err(|reason| FaultsError {
                faults: cfg.faults,
                reason,
            })
    }

    /// The family of `cfg`'s topology (cheap: no per-router tables).
    fn family_of(cfg: &NetworkSpec) -> Family {
        match &cfg.family {
            &FamilyParams::Icube {
                per_switch,
                lanes,
                ref switches,
            } => Family::Icube(Icube::new(per_switch, lanes, switches)),
            &FamilyParams::Tree { down, up, levels } => Family::Tree(Tree::new(
                down,
                up,
                levels,
                cfg.topo == TopoKind::SlimTree,
                cfg.dims[0],
            )),
            &FamilyParams::Hypercube { dimensions } => {
                Family::Hypercube(Hypercube::new(dimensions))
            }
            FamilyParams::File { graph, .. } => Family::Graph(GraphFamily::new(graph.clone())),
            FamilyParams::Grid | FamilyParams::Circulant { .. } => Family::Cube(Cube::new(cfg)),
        }
    }

    /// Nodes, routers and link ports per router of `cfg`'s topology,
    /// without building it.
    pub fn shape(cfg: &NetworkSpec) -> (usize, usize, usize) {
        let family = Topology::family_of(cfg);
        (family.nodes(), family.routers(), family.ports())
    }

    /// [`Topology::build`]; `tables`: whether to build the up*/down*
    /// tables of a network with faults.
    fn build_with(cfg: &NetworkSpec, tables: bool) -> Result<Topology, FaultError> {
        let family = Topology::family_of(cfg);
        let (nodes, routers, ports) = (family.nodes(), family.routers(), family.ports());
        let hop = (0..ports).map(|p| family.hop(p)).collect();
        let mut link = vec![NO_PEER; routers * ports];
        for r in 0..routers as u32 {
            for p in 0..ports {
                if let Some((n, q)) = family.link(r, p) {
                    link[r as usize * ports + p] = (n, q as u16);
                }
            }
        }
        let mut topo = Topology {
            family,
            nodes: nodes as u32,
            routers: routers as u32,
            ports,
            link,
            sender: Vec::new(),
            hop,
            failed: Vec::new(),
            up_down: None,
            shortest: None,
            duato: false,
            latency: Vec::new(),
        };
        if let Family::Graph(g) = &topo.family {
            if g.graph().max_latency() > 1 {
                topo.latency = (0..routers * ports)
                    .map(|i| g.latency((i / ports) as u32, i % ports))
                    .collect();
            }
        }
        let graph = matches!(topo.family, Family::Graph(_));
        if cfg.faults > 0 {
            topo.fail_links(cfg.faults as usize, cfg.rseed)?;
            if let Some(UpDownRoot::Router(r)) = cfg.updown_root {
                let reach = topo.hops_to_routers(0);
                if reach.get(r as usize).is_none_or(|&d| d == u32::MAX) {
                    return Err(FaultError::RootCut { root: r });
                }
            }
        } else if graph && topo.routers() * topo.nodes() > tables::MAX_ENTRIES {
            return Err(FaultError::TablesTooLarge {
                routers: topo.routers(),
                nodes: topo.nodes(),
            });
        }
        let duato = graph && cfg.faults == 0 && cfg.routing == RoutingOrder::Duato;
        if tables && graph && cfg.faults == 0 && cfg.routing == RoutingOrder::Shortest {
            topo.route_shortest();
        } else if tables && (cfg.faults > 0 || graph) {
            topo.route_up_down(cfg.updown_root.unwrap_or(UpDownRoot::Router(0)));
            if duato {
                topo.route_shortest();
                topo.duato = true;
            }
        }
        Ok(topo)
    }

    /// The router whose link feeds input port `port` of router `r`.
    #[inline]
    pub fn sender(&self, r: u32, port: usize) -> Option<u32> {
        let s = self.sender[r as usize * self.ports + port];
        (s != u32::MAX).then_some(s)
    }

    /// Fails `count` links drawn with `seed` and checks that every node
    /// still reaches every other.
    fn fail_links(&mut self, count: usize, seed: u64) -> Result<(), FaultError> {
        let (nodes, routers) = (self.nodes(), self.routers());
        if routers * nodes > tables::MAX_ENTRIES {
            return Err(FaultError::TablesTooLarge { routers, nodes });
        }
        let tree = self.family.indirect();
        let mut candidates = Vec::new();
        for r in 0..self.routers {
            for p in 0..self.ports {
                if let Some((v, q)) = self.neighbour(r, p) {
                    let node_link = tree && (r < self.nodes || v < self.nodes);
                    let back = self.family.reverse_port(p, q);
                    // Each full-duplex link once, from its lower end (or
                    // lower port between the same two routers).
                    let first = back.is_none_or(|b| (r, p) < (v, b));
                    if first && !node_link {
                        candidates.push((r, p, v, back.unwrap_or(usize::MAX)));
                    }
                }
            }
        }
        if count > candidates.len() {
            return Err(FaultError::TooMany {
                count,
                links: candidates.len(),
            });
        }
        self.failed = faults::pick(&candidates, count, seed);
        for &(r, p, v, back) in &self.failed {
            self.link[r as usize * self.ports + p] = NO_PEER;
            if back != usize::MAX {
                self.link[v as usize * self.ports + back] = NO_PEER;
            }
        }
        let reach = hops_from(self, 0);
        if let Some(lost) = reach.iter().position(|&d| d == u32::MAX) {
            let links = self.failed.iter().map(|&(r, _, v, _)| (r, v)).collect();
            return Err(FaultError::Disconnected { links, lost });
        }
        Ok(())
    }

    /// Builds what up*/down* routing needs over the links (those that
    /// survive faults; every link of a file topology): the tables, the
    /// routers feeding each input, and records that count the links left
    /// to cross.
    fn route_up_down(&mut self, root: UpDownRoot) {
        let ports = self.ports;
        self.sender = vec![u32::MAX; self.routers() * ports];
        for r in 0..self.routers {
            for p in 0..ports {
                if let Some((v, q)) = self.neighbour(r, p) {
                    self.sender[v as usize * ports + q] = r;
                }
            }
        }
        self.hop = vec![(0, -1); ports];
        let neighbour = |r, p| self.neighbour(r, p).map(|(v, _)| v);
        let root = match root {
            UpDownRoot::Router(r) => r,
            UpDownRoot::Center => tables::center(self.routers(), ports, neighbour),
        };
        let up_down = UpDown::new(self.routers(), self.nodes(), ports, root, neighbour);
        self.up_down = Some(up_down);
    }

    /// Builds the minimal-path tables of a file topology under
    /// `routing=shortest`, and records that count the links left to cross.
    fn route_shortest(&mut self) {
        self.hop = vec![(0, -1); self.ports];
        let shortest = ShortestPaths::new(self.routers(), self.nodes(), self.ports, |r, p| {
            self.neighbour(r, p).map(|(v, _)| v)
        });
        self.shortest = Some(shortest);
    }

    /// The up*/down* tables of a network with faults or read from a file.
    #[inline]
    pub fn up_down(&self) -> Option<&UpDown> {
        self.up_down.as_ref()
    }

    /// The failed links: (router, port, router, port).
    pub fn failed_links(&self) -> &[(u32, usize, u32, usize)] {
        &self.failed
    }

    /// The topology as a [`Graph`] (`fsin topology --write`):
    /// in a direct network router `i` holds node `i`; in an indirect one
    /// the graph's routers are the switches (router `nodes + s` is `s`),
    /// each node on the switch its one link reaches. Each full-duplex link
    /// once, of one cycle; failed links left out. `None` on unidirectional
    /// rings (`nways=1`), which a graph of full-duplex links cannot hold.
    pub fn to_graph(&self) -> Option<Graph> {
        if !self.family.duplex() {
            return None;
        }
        let indirect = self.family.indirect();
        let first = if indirect { self.nodes } else { 0 };
        let mut links = Vec::new();
        let mut node_router: Vec<u32> = (0..self.nodes).collect();
        for r in 0..self.routers {
            for p in 0..self.ports {
                let Some((v, q)) = self.neighbour(r, p) else {
                    continue;
                };
                if indirect && r < self.nodes {
                    node_router[r as usize] = v - first;
                } else if !(indirect && v < self.nodes)
                    && self
                        .family
                        .reverse_port(p, q)
                        .is_some_and(|back| (r, p) < (v, back))
                {
                    links.push(crate::spec::GraphLink {
                        a: r - first,
                        b: v - first,
                        latency_ab: 1,
                        latency_ba: 1,
                    });
                }
            }
        }
        Some(Graph {
            routers: self.routers - first,
            node_router,
            links,
        })
    }

    /// The family and its description.
    pub fn family(&self) -> &Family {
        &self.family
    }

    /// The cube description.
    ///
    /// # Panics
    /// If the topology is not of the k-ary n-cube family (the cube routers
    /// are only built for those).
    #[inline]
    pub fn cube(&self) -> &Cube {
        match &self.family {
            Family::Cube(c) => c,
            _ => panic!("cube routing on a network that is not a cube"),
        }
    }

    /// Compute nodes.
    pub fn nodes(&self) -> usize {
        self.nodes as usize
    }

    /// Ranges of routers doing the same job ([`TopologyFamily::router_classes`]).
    pub fn router_classes(&self) -> Vec<std::ops::Range<usize>> {
        self.family.router_classes()
    }

    /// Routers (direct networks: the nodes; trees: nodes and switches).
    pub fn routers(&self) -> usize {
        self.routers as usize
    }

    /// Link ports per router.
    pub fn ports(&self) -> usize {
        self.ports
    }

    /// The router and its arrival port at the other end of `port` of
    /// router `r`, or `None` where the port has no link.
    #[inline]
    pub fn neighbour(&self, r: u32, port: usize) -> Option<(u32, usize)> {
        let (n, q) = self.link[r as usize * self.ports + port];
        (n != NO_PEER.0).then_some((n, usize::from(q)))
    }

    /// Dimension and direction (true: positive) of `port`, for reports:
    /// cubes their dimension and way, hypercubes their dimension, trees 0
    /// for upward and 1 for downward ports.
    pub fn direction(&self, port: usize) -> (usize, bool) {
        self.family.direction(port)
    }

    /// What a hop on `port` does to a routing record: entry and change.
    #[inline]
    pub fn hop(&self, port: usize) -> (usize, i32) {
        let (i, d) = self.hop[port];
        (usize::from(i), d)
    }

    /// Minimal routing record from node `src` to node `dst` (ties broken
    /// with `rng` where the family has them).
    pub fn record<R: Rng>(&self, src: u32, dst: u32, rng: &mut R) -> Record {
        if let (true, Some(sp)) = (self.duato, &self.shortest) {
            return [sp.dist(src, dst) as i32, 0, 0];
        }
        if let Some(ud) = &self.up_down {
            return [ud.legal(src, dst).unwrap_or(0) as i32, 0, 0];
        }
        if let Some(sp) = &self.shortest {
            return [sp.dist(src, dst) as i32, 0, 0];
        }
        // A file network has its tables (above) whenever it routes; only
        // one built to check its faults has none, and routes nothing.
        self.family.record(src, dst, rng).unwrap_or_default()
    }

    /// Links a packet with record `rr` still has to cross.
    #[inline]
    pub fn hops(&self, rr: &Record) -> u32 {
        if self.up_down.is_some() || self.shortest.is_some() {
            links_left(rr)
        } else {
            self.family.hops(rr)
        }
    }

    /// The minimal-path tables of a file topology under `routing=shortest`
    /// or `duato`.
    #[inline]
    pub fn shortest(&self) -> Option<&ShortestPaths> {
        self.shortest.as_ref()
    }

    /// Links crossed from router `from` to every router over the built
    /// links (`u32::MAX`: unreachable).
    fn hops_to_routers(&self, from: u32) -> Vec<u32> {
        let neighbour = |u, p| self.neighbour(u, p).map(|(v, _)| v);
        tables::hops(self.routers(), self.ports, from, &neighbour)
    }

    /// Whether some link takes more than a cycle (a file's latencies).
    #[inline]
    pub fn slow_links(&self) -> bool {
        !self.latency.is_empty()
    }

    /// Cycles a phit takes over the link of `port` of router `r` (1 but
    /// on a file's slower links).
    #[inline]
    pub fn latency(&self, r: usize, port: usize) -> u32 {
        self.latency
            .get(r * self.ports + port)
            .copied()
            .unwrap_or(1)
    }

    /// Whether the network routes by `routing=duato`.
    #[inline]
    pub fn duato(&self) -> bool {
        self.duato
    }

    /// Under `routing=duato`, the links a packet to node `d` has left once
    /// it crossed from router `r` to router `v`: on the escape VC the
    /// rest of its up*/down* route (the legal distance if that hop went
    /// up, the all-down one once it has gone down), else the minimal
    /// distance.
    #[inline]
    pub fn duato_left(&self, r: u32, v: u32, d: u32, escape: bool) -> u32 {
        match self.up_down.as_ref().filter(|_| escape) {
            Some(ud) => {
                let left = if ud.is_up(r, v) {
                    ud.legal(v, d)
                } else {
                    ud.down(v, d)
                };
                left.expect("an escape hop keeps to a legal route")
            }
            None => self.shortest.as_ref().map_or(0, |sp| sp.dist(v, d)),
        }
    }
}

/// Builds the topology of `cfg` and measures it: links from the built
/// link tables and distances by breadth-first search over them (from one
/// node for the node-symmetric tori, twisted tori, midimews, circulants,
/// trees and hypercubes; from every node for meshes of up to 4096 nodes,
/// the closed form above that). In trees the distances count the links
/// of both nodes (a route climbs and descends `L + 1` links). `name` is
/// how the topology is written (e.g. `torus_8_8`), for the report.
///
/// # Errors
/// As [`Topology::build`].
pub fn summary(cfg: &NetworkSpec, name: String) -> Result<TopologySummary, FaultsError> {
    let topo = Topology::build(cfg)?;
    let n = topo.nodes();
    let mut directed = 0u64;
    for r in 0..topo.routers() as u32 {
        directed += (0..topo.ports())
            .filter(|&p| topo.neighbour(r, p).is_some())
            .count() as u64;
    }
    let family = topo.family();
    let duplex = if family.duplex() {
        directed / 2
    } else {
        directed
    };
    let (router_links, links) = if family.indirect() {
        (duplex - n as u64, duplex)
    } else {
        (duplex, duplex + n as u64)
    };
    let (diameter, avg_distance) = match cfg.topo {
        TopoKind::Mesh if n > 4096 => mesh_distances(&cfg.dims),
        // Not node-symmetric: from every node.
        TopoKind::Mesh | TopoKind::File => {
            let mut max = 0;
            let mut sum = 0u64;
            for s in 0..n as u32 {
                let (m, t) = bfs(&topo, s);
                max = max.max(m);
                sum += t;
            }
            (max, sum as f64 / (n as f64 * (n as f64 - 1.0)))
        }
        _ => {
            let (m, t) = bfs(&topo, 0);
            (m, t as f64 / (n as f64 - 1.0))
        }
    };
    let bisection_links = family.bisection_links();
    Ok(TopologySummary {
        topology: name,
        nodes: n as u64,
        switches: (topo.routers() - if family.indirect() { n } else { 0 }) as u64,
        links,
        router_links,
        ports: topo.ports() as u64,
        diameter,
        avg_distance,
        bisection_links,
        bisection_method: bisection_links.map(|_| "the family's closed form".to_string()),
        theta: family.theta(),
        throughput_bound: family.throughput_bound(),
        routing: None,
        routing_bounds: None,
    })
}

/// Uniform-traffic bisection bound in phits/node/cycle of `cfg`'s
/// topology, without building its tables
/// ([`TopologyFamily::throughput_bound`]).
pub fn throughput_bound(cfg: &NetworkSpec) -> Option<f64> {
    Topology::family_of(cfg).throughput_bound()
}

/// Hops from node `src` to every node over the built links: (largest, sum).
///
/// # Panics
/// If some node cannot be reached (the topology is disconnected).
fn bfs(topo: &Topology, src: u32) -> (u64, u64) {
    let dist = hops_from(topo, src);
    assert!(
        dist.iter().all(|&d| d != u32::MAX),
        "node {src} does not reach every node"
    );
    (
        u64::from(dist.iter().copied().max().unwrap_or(0)),
        dist.iter().map(|&d| u64::from(d)).sum(),
    )
}

/// Breadth-first search over the built links: links crossed from node
/// `src` to every node (`u32::MAX`: unreachable), through any router.
pub fn hops_from(topo: &Topology, src: u32) -> Vec<u32> {
    let mut dist = topo.hops_to_routers(src);
    dist.truncate(topo.nodes());
    dist
}

/// Diameter and mean distance of a mesh in closed form: per dimension of
/// `k` nodes the ordered pairs sum to `(k^3 - k) / 3` hops, repeated for
/// every pair of lines, `(N / k)^2` of them.
pub fn mesh_distances(dims: &[u32]) -> (u64, f64) {
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
