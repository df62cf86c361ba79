//! What the engine simulates, as typed values: the topology (family and
//! sizes), the router (virtual channels, request, injection, arbitration
//! and consumption policies), switching and the random seed. The
//! configuration layer (INSEE's key names, files, validation) builds one;
//! this crate reads nothing else.

/// A network to simulate. Field names follow INSEE's options; units are
/// network cycles, phits and packets. Values are expected to be valid as
/// the configuration layer checks them (sizes, combinations).
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkSpec {
    /// The topology family (`topo`).
    pub topo: TopoKind,
    /// Compute nodes per dimension as traffic patterns see them (1 to 3
    /// entries): the grid of tori, meshes, twisted tori and SpiNNaker;
    /// `[N]` for midimews, circulants, trees, hypercubes and indirect
    /// cubes.
    pub dims: Vec<u32>,
    /// What the family has beyond `dims`.
    pub family: FamilyParams,
    /// 1 = unidirectional links, 2 = bidirectional.
    pub nways: u32,
    /// A twisted torus's skews (zero for the others).
    pub skews: Skews,
    /// Packet length in phits.
    pub plength: u32,
    /// Transit queue capacity in packets.
    pub tql: u32,
    /// Injection queue capacity in packets.
    pub iql: u32,
    /// Virtual channels per physical link.
    pub nchan: u32,
    /// Injection queues per node.
    pub ninj: u32,
    /// Every injection queue may inject a packet in the same cycle
    /// (`parallel_injection`; false: one per node per cycle).
    pub par_inj: bool,
    /// A generated packet is dropped when its injection queue is full
    /// (`drop_packets`; false: it waits at the source).
    pub drop_packets: bool,
    /// The packet at the head of an injection queue is dropped when it
    /// cannot be injected (`extract`).
    pub extract: bool,
    /// The SpiNNaker router (`hol`, INSEE paper section 2.2.4): one routing
    /// engine per router, serving one input at a time.
    pub hol: bool,
    /// SpiNNaker router: cycles a packet that cannot be forwarded may hold
    /// the routing engine before it is discarded (`hol_timeout`; 0: never).
    pub hol_timeout: u64,
    /// Failed full-duplex links (`faults`).
    pub faults: u32,
    /// Root of the up*/down* tables (`updown_root`; file topologies and
    /// networks with faults); `None`: the default, router 0 (node 0's
    /// own router in a direct network, node 0 itself in an indirect one).
    pub updown_root: Option<UpDownRoot>,
    /// Wormhole switching instead of virtual cut-through (`switching`).
    pub wormhole: bool,
    /// Bubble size in packets, per dimension.
    pub bsize: [u32; 3],
    /// How a head packet picks its output virtual channel (`rmode`).
    pub rmode: RequestMode,
    /// The escape routing's order (`routing`).
    pub routing: RoutingOrder,
    /// Which injection queue a new packet joins (`imode`).
    pub imode: InjectionMode,
    /// Output-port arbitration among requesting inputs (`amode`).
    pub amode: Arbitration,
    /// How nodes consume arriving packets (`cmode`).
    pub cmode: Consumption,
    /// Random seed: the same spec and seed give identical results.
    pub rseed: u64,
    /// Threads one network's cycles run on (`threads`): its routers are
    /// split into this many parts (consecutive compute nodes and consecutive
    /// switches), each stepped on
    /// a thread of its own. Reports are the same for every value. One
    /// under wormhole switching, with timeouts (`timeout_upper_limit`) and
    /// with SpiNNaker discards (`hol` with `hol_timeout` > 0).
    pub threads: u32,
    /// In-transit priority (`intransit_pr`): probability that transit
    /// inputs are arbitrated before injection inputs.
    pub intransit_pr: f64,
    /// Timeout-based congestion detection, cycles (`timeout_upper_limit`;
    /// 0: off).
    pub timeout_upper_limit: u64,
    /// Stay below which a congested router recovers (`timeout_lower_limit`;
    /// `None`: 3/4 of the upper limit, INSEE's default).
    pub timeout_lower_limit: Option<u64>,
    /// Local bubble restriction for injection, in packets (`bub_to_adap`).
    pub bub_to_adap: u32,
    /// Whose behaviour to follow where INSEE's code departs from its paper
    /// (`compat`).
    pub compat: Compat,
}

/// `compat`: the corrected model (the default), or INSEE's code where it
/// departs from the INSEE paper, so that INSEE's published figures can be
/// reproduced with INSEE's configuration (docs/model.md, "Deliberate
/// differences from INSEE").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compat {
    /// The model as the INSEE paper describes it.
    #[default]
    None,
    /// INSEE's code: `imode=dor` and the other pre-routed injection modes
    /// choose the queue from a routing record of their own, drawn again at
    /// every try, with `dor` taking the last dimension to correct; Dally's
    /// adaptive request mode never takes an adaptive VC (INSEE's
    /// `improved`); latency counts from the cycle a packet enters its
    /// injection buffer; the static thin tree climbs by the destination's
    /// digits; and traces replay as INSEE's `trace.c` does (crate
    /// `fsin-traffic`, `insee_replay`).
    Insee,
}

/// Where up*/down* routing roots its breadth-first search
/// (`updown_root`; Autonet's rule, docs/model.md "Link faults").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpDownRoot {
    /// The router with the smallest eccentricity (longest distance to
    /// any router, in hops), then the smallest total distance, then the
    /// lowest id: the fewest up hops forced on the longest routes.
    Center,
    /// This router.
    Router(u32),
}

impl Default for NetworkSpec {
    /// INSEE's defaults: an 8x8 bidirectional torus, bubble router with
    /// two VCs, 16-phit packets, queues of 4 packets.
    fn default() -> Self {
        NetworkSpec {
            topo: TopoKind::Torus,
            dims: vec![8, 8],
            family: FamilyParams::Grid,
            nways: 2,
            skews: Skews::default(),
            plength: 16,
            tql: 4,
            iql: 4,
            nchan: 2,
            ninj: 1,
            par_inj: true,
            drop_packets: false,
            extract: false,
            hol: false,
            hol_timeout: 64,
            faults: 0,
            updown_root: None,
            wormhole: false,
            bsize: [2; 3],
            rmode: RequestMode::Smart,
            routing: RoutingOrder::Dimension,
            imode: InjectionMode::Shortest,
            amode: Arbitration::RoundRobin,
            cmode: Consumption::Multiple,
            rseed: 17,
            threads: 1,
            intransit_pr: 0.0,
            bub_to_adap: 0,
            timeout_upper_limit: 0,
            timeout_lower_limit: None,
            compat: Compat::None,
        }
    }
}

impl NetworkSpec {
    /// Whether compute nodes hang from switches through links of their own:
    /// trees, indirect cubes and file topologies that are not direct
    /// ([`Graph::is_direct`]).
    pub fn is_indirect(&self) -> bool {
        match &self.family {
            FamilyParams::File { graph, .. } => !graph.is_direct(),
            _ => self.topo.is_indirect(),
        }
    }

    /// The lower timeout limit in cycles (3/4 of the upper one by default).
    pub fn timeout_lower(&self) -> u64 {
        self.timeout_lower_limit
            .unwrap_or(self.timeout_upper_limit * 3 / 4)
    }

    /// Compute nodes of the topology.
    pub fn nodes(&self) -> usize {
        self.dims.iter().product::<u32>() as usize
    }

    /// Number of dimensions of the cube (midimews and circulants count as
    /// 2: their two jump classes; SpiNNaker 3: U, V and the diagonal W;
    /// hypercubes have `n`; trees 1).
    pub fn ndim(&self) -> usize {
        if matches!(self.topo, TopoKind::Midimew | TopoKind::Circulant) {
            2
        } else if self.topo == TopoKind::Spinnaker {
            3
        } else {
            match &self.family {
                FamilyParams::Hypercube { dimensions } => *dimensions as usize,
                FamilyParams::Icube { switches, .. } => switches.len(),
                FamilyParams::Tree { .. } | FamilyParams::File { .. } => 1,
                FamilyParams::Grid | FamilyParams::Circulant { .. } => self.dims.len(),
            }
        }
    }
}

/// The parameters of a topology family beyond its nodes per dimension
/// (INSEE's topology names, INSEE paper section 2.1; thin-trees paper
/// for the trees).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum FamilyParams {
    /// Tori, meshes, twisted tori, midimews and SpiNNaker: `dims` (and,
    /// for twisted tori, the skews) say everything.
    #[default]
    Grid,
    /// `circulant_N_S`: C_N(1, S), the second jump `S`.
    Circulant {
        /// The second jump, S.
        jump: u32,
    },
    /// `fattree_K_N` (`up` = `down` = K), `thintree_K_K'_N`,
    /// `slimtree_K_K'_N`: switch ports towards the nodes (k) and towards
    /// the root (k'), and levels (n).
    Tree {
        /// Switch ports towards the nodes, k.
        down: u32,
        /// Switch ports towards the root, k'.
        up: u32,
        /// Levels, n.
        levels: u32,
    },
    /// `hypercube_N`: N dimensions, 2^N nodes.
    Hypercube {
        /// Dimensions, N.
        dimensions: u32,
    },
    /// `icube_N_L_X[_Y[_Z]]`: N nodes per switch, L links per direction,
    /// and the switch torus, switches per dimension.
    Icube {
        /// Compute nodes per switch, N.
        per_switch: u32,
        /// Links per direction between neighbouring switches, L.
        lanes: u32,
        /// Switches per dimension of the switch torus.
        switches: Vec<u32>,
    },
    /// `file:PATH`: the file's name as given, and the graph read from it.
    File {
        /// The file's name as given.
        path: String,
        /// The network it holds.
        graph: std::sync::Arc<Graph>,
    },
}

/// Topology family of the k-ary n-cube group (INSEE paper, section 2.1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopoKind {
    /// Mesh: no wrap-around links.
    Mesh,
    /// Torus: wrap-around links in every dimension.
    Torus,
    /// Twisted torus: a torus whose wrap-around links in one dimension are
    /// shifted (skewed) along another (`sk_xy`, ...).
    TwistedTorus,
    /// Midimew: the minimal-distance circulant of degree 4 on N nodes.
    Midimew,
    /// Circulant C_N(1, S): node i linked to i +- 1 and i +- S (INSEE's
    /// `circulant_N_S`).
    Circulant,
    /// k-ary n-tree (`fattree_K_N`): a k:k-ary n-thin-tree (thin-trees paper,
    /// section 3.2).
    FatTree,
    /// k:k'-ary n-thin-tree (`thintree_K_K'_N`, thin-trees paper, section 3.3).
    ThinTree,
    /// INSEE's slim tree (`slimtree_K_K'_N`): groups of k switches share
    /// the same k' parents.
    SlimTree,
    /// Binary n-cube (`hypercube_N`, 2^N nodes; SimuRed, SimuRed paper).
    Hypercube,
    /// SpiNNaker's triangular torus (`spinnaker_X_Y`, INSEE paper section
    /// 2.1.1): a 2D torus plus diagonal links, three link classes.
    Spinnaker,
    /// INSEE's indirect cube (`icube_N_L_X[_Y[_Z]]`, alias `tricube`): a
    /// torus of switches with N nodes each and L links per direction.
    Icube,
    /// A network read from a file (`topo=file:PATH`), routed by
    /// up*/down*: [`FamilyParams::File`] holds its graph.
    File,
}

impl TopoKind {
    /// Whether compute nodes hang from switches through links of their own
    /// (trees and indirect cubes).
    pub fn is_indirect(self) -> bool {
        self.is_tree() || self == TopoKind::Icube
    }

    /// Whether the family is a multistage tree (nodes hang from level-0
    /// switches through links of their own).
    pub fn is_tree(self) -> bool {
        matches!(
            self,
            TopoKind::FatTree | TopoKind::ThinTree | TopoKind::SlimTree
        )
    }

    /// Whether the family is one of the k-ary n-cube group, routed by the
    /// bubble, Dally and double routers.
    pub fn is_cube(self) -> bool {
        !self.is_indirect() && !matches!(self, TopoKind::Hypercube | TopoKind::File)
    }
}

/// Request mode (`rmode`): how a head packet chooses its output VC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestMode {
    /// Bubble: every VC is an escape VC with DOR; a packet never changes VC.
    Oblivious,
    /// Bubble: same VC if possible, else a random profitable adaptive VC,
    /// else the escape VC.
    Random,
    /// Bubble: as `Random` but choose the adaptive VC with most room.
    Shortest,
    /// Bubble: keep dimension and VC if possible, else change dimension.
    Smart,
    /// Dally: switch escape channel at the wrap-around link.
    Trc,
    /// Dally: packets that cross the wrap-around use one escape channel,
    /// the others the other one.
    Basic,
    /// Dally: as `Basic`, but packets that do not wrap may use both.
    Improved,
    /// Dally: `Improved` escape channels plus minimal adaptive channels.
    /// Trees: credit-based adaptive up-routing (INSEE paper, section 2.2.3);
    /// hypercubes: minimal adaptive VCs with the most credit over an
    /// escape VC 0 in dimension order.
    Adaptive,
    /// Trees: up port fixed by the source, down port by the destination,
    /// VC drawn at injection and kept (INSEE paper, section 2.2.3);
    /// hypercubes: dimension order (e-cube), VC kept.
    Static,
    /// Double: oblivious DOR, one escape channel per dimension.
    DoubleOblivious,
    /// Double: escape channel per dimension plus adaptive channels.
    DoubleAdaptive,
}

/// Oblivious routing order (`routing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoutingOrder {
    /// Dimension order: X, then Y, then Z.
    Dimension,
    /// Direction order: all positive hops (X+, Y+, Z+) then all negative.
    Direction,
    /// Trees and hypercubes (INSEE's `routing=static`): the static routing
    /// of [`RequestMode::Static`].
    Static,
    /// Trees and hypercubes (INSEE's default for trees): the adaptive
    /// routing of [`RequestMode::Adaptive`].
    Adaptive,
    /// File topologies: minimal paths, hop `k` on virtual
    /// channel `k` (SST merlin anytopo's rule, deadlock-free while the
    /// diameter fits the VCs); among the ports of minimal paths as
    /// [`RequestMode::Static`] or [`RequestMode::Adaptive`] choose.
    Shortest,
    /// File topologies: Duato's minimal adaptive routing with
    /// an up*/down* escape channel. VCs 1 and up take any minimal port;
    /// a packet that finds none free takes VC 0 along a shortest legal
    /// up*/down* route and stays there; deadlock-free on any connected
    /// graph with `nchan >= 2`.
    Duato,
}

/// Injection mode (`imode`), INSEE paper section 2.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InjectionMode {
    /// Into the injection queue with most room.
    Shortest,
    /// One injection queue per dimension/direction, chosen by DOR
    /// pre-routing; blocks if that queue is full.
    Dor,
    /// `Dor`, falling back to `Shortest` when the DOR queue is full.
    DorShortest,
    /// Into the profitable (pre-routed) queue with most room.
    ShortestProfitable,
    /// Into the queue of the direction with the most hops to travel.
    LongestPath,
}

/// Output-port arbitration (`amode`), INSEE paper section 2.2.5.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arbitration {
    /// Round robin over input queues.
    RoundRobin,
    /// The input that has been requesting for the longest time.
    Fifo,
    /// The input queue with the highest occupancy.
    Longest,
    /// A uniformly random requesting input.
    Random,
    /// The input whose head packet was injected earliest.
    Age,
}

/// Consumption mode (`cmode`), INSEE paper section 2.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consumption {
    /// One consumption port, arbitrated like any output port.
    Single,
    /// A consumption port that takes one phit from every input per cycle.
    Multiple,
}

/// Skews of a twisted torus: `sk_ab` shifts coordinate `b` when a packet
/// crosses a wrap-around link of dimension `a` (INSEE paper, section 2.1.1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Skews {
    /// Shift of Y on X's wrap-around links.
    pub xy: u32,
    /// Shift of Z on X's wrap-around links.
    pub xz: u32,
    /// Shift of X on Y's wrap-around links.
    pub yx: u32,
    /// Shift of Z on Y's wrap-around links.
    pub yz: u32,
    /// Shift of X on Z's wrap-around links.
    pub zx: u32,
    /// Shift of Y on Z's wrap-around links.
    pub zy: u32,
}

/// A network read from a file (`topo=file:PATH`): routers, the
/// router each compute node hangs from, and the links between routers.
/// Routers are numbered `0..routers`, compute nodes `0..node_router.len()`
/// in the file's order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Graph {
    /// Routers (switches), at least one.
    pub routers: u32,
    /// Per compute node, in node order, the router it hangs from.
    pub node_router: Vec<u32>,
    /// Full-duplex links between two routers (parallel links allowed).
    pub links: Vec<GraphLink>,
}

/// A full-duplex link of a [`Graph`] between routers `a` and `b`, and its
/// latency each way in cycles (at least 1: a phit crosses in that many
/// cycles, as a pipeline).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphLink {
    /// One end's router.
    pub a: u32,
    /// The other end's router.
    pub b: u32,
    /// Cycles a phit takes from `a` to `b`.
    pub latency_ab: u32,
    /// Cycles a phit takes from `b` to `a`.
    pub latency_ba: u32,
}

impl Graph {
    /// Whether every router has exactly its own compute node (node `i` on
    /// router `i`): a direct network, whose nodes inject into their
    /// routers as INSEE's direct families do. Otherwise the nodes are
    /// elements of their own, each linked to its router (as in trees).
    pub fn is_direct(&self) -> bool {
        self.node_router.len() == self.routers as usize
            && self
                .node_router
                .iter()
                .enumerate()
                .all(|(i, &r)| r == i as u32)
    }

    /// Cycles of its slowest link, either way (1 when every link takes
    /// one).
    pub fn max_latency(&self) -> u32 {
        (self.links.iter())
            .map(|l| l.latency_ab.max(l.latency_ba))
            .fold(1, u32::max)
    }

    /// Hops of the longest minimal route between two compute nodes, node
    /// links included (two more than the routers' distance where nodes
    /// hang from links of their own; none between two nodes of one
    /// router of a direct graph, which are the same node).
    pub fn diameter(&self) -> u32 {
        let n = self.routers as usize;
        let mut adjacent = vec![Vec::new(); n];
        for l in &self.links {
            adjacent[l.a as usize].push(l.b as usize);
            adjacent[l.b as usize].push(l.a as usize);
        }
        let mut used = vec![false; n];
        for &r in &self.node_router {
            used[r as usize] = true;
        }
        let mut worst = 0;
        for s in (0..n).filter(|&s| used[s]) {
            let mut d = vec![u32::MAX; n];
            d[s] = 0;
            let mut queue = std::collections::VecDeque::from([s]);
            while let Some(u) = queue.pop_front() {
                for &v in &adjacent[u] {
                    if d[v] == u32::MAX {
                        d[v] = d[u] + 1;
                        queue.push_back(v);
                    }
                }
            }
            for t in (0..n).filter(|&t| used[t]) {
                worst = worst.max(d[t]);
            }
        }
        if self.is_direct() {
            worst
        } else {
            worst + 2
        }
    }

    /// Link ports of router `r`: its links to other routers (a link from a
    /// router to itself is refused when read).
    pub fn degree(&self, r: u32) -> usize {
        self.links.iter().filter(|l| l.a == r || l.b == r).count()
    }

    /// The routers in connected parts, each part sorted, parts by their
    /// smallest router; one part when the graph is connected.
    pub fn parts(&self) -> Vec<Vec<u32>> {
        let n = self.routers as usize;
        let mut adjacent = vec![Vec::new(); n];
        for l in &self.links {
            adjacent[l.a as usize].push(l.b);
            adjacent[l.b as usize].push(l.a);
        }
        let mut part = vec![usize::MAX; n];
        let mut parts: Vec<Vec<u32>> = Vec::new();
        for start in 0..n {
            if part[start] != usize::MAX {
                continue;
            }
            let k = parts.len();
            part[start] = k;
            let mut members = vec![start as u32];
            let mut next = 0;
            while let Some(&u) = members.get(next) {
                next += 1;
                for &v in &adjacent[u as usize] {
                    if part[v as usize] == usize::MAX {
                        part[v as usize] = k;
                        members.push(v);
                    }
                }
            }
            members.sort_unstable();
            parts.push(members);
        }
        parts
    }
}
