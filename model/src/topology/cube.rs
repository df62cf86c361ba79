//! The k-ary n-cube family of direct topologies (INSEE paper, section 2.1.1):
//! meshes and tori in 1 to 3 dimensions with unidirectional or
//! bidirectional links, twisted tori (skewed wrap-around links, INSEE paper
//! ref. \[9\]), midimew (the circulant C_N(b, b-1), b = ceil(sqrt(N/2)),
//! INSEE paper ref. \[7\]), circulants C_N(1, S) (INSEE's `circulant_N_S`) and
//! the SpiNNaker triangular torus (INSEE paper section 2.1.1, Fig. 2e): an X x
//! Y torus (links U along X, V along Y) with diagonal links W from (x, y)
//! to (x+1, y+1), wrapping in both; W is its third dimension.
//!
//! Nodes are numbered with X varying fastest: `id = x + y*nx + z*nx*ny`.
//! Each router has `ndim * nways` link ports; port `dim * nways + way`
//! leads in the positive direction of `dim` for `way = 0` and in the
//! negative direction for `way = 1`. A packet that leaves on port `p`
//! arrives on input port `p` of the neighbour. For midimew the two
//! "dimensions" are the jump classes `b` (X) and `b-1` (Y); for circulants
//! `1` (X) and `S` (Y), with minimal records from a breadth-first search
//! over the jump pairs (the graph is vertex-transitive, so one search from
//! node 0 serves every source).
//!
//! Packets carry a routing record: the signed number of hops still to
//! travel in each dimension, computed once at generation (minimal in every
//! family; ties in even rings broken at random, as FSIN does).

use rand::Rng;

use super::family::{Record, RecordRouting, TopologyFamily, MAX_DIMS};
use crate::spec::{FamilyParams, NetworkSpec, TopoKind};

/// Marker in the neighbour table for a port without a link (mesh edges).
pub const NO_LINK: u32 = u32::MAX;

/// A built k-ary n-cube: sizes, links and routing records.
#[derive(Debug, Clone)]
pub struct Cube {
    kind: TopoKind,
    /// Nodes per dimension, padded with 1.
    dims: [u32; MAX_DIMS],
    ndim: usize,
    nways: usize,
    /// `skew[a][b]`: shift of coordinate `b` when crossing the wrap-around
    /// link of dimension `a` in the positive direction.
    skew: [[u32; MAX_DIMS]; MAX_DIMS],
    /// Midimew jump `b` (X); Y jumps are `b - 1`. Circulant: the jump S
    /// (Y; X jumps are 1).
    jump: u32,
    /// Circulant: the minimal (X jumps, Y jumps) pairs to each offset.
    circ_routes: Vec<Vec<(i32, i32)>>,
    nodes: u32,
    /// `neighbour[node * ports + port]`, or [`NO_LINK`].
    neighbour: Vec<u32>,
}

impl Cube {
    /// Builds the topology named by `cfg.topo`, `cfg.dims`, `cfg.nways`
    /// and the skews. The configuration must have been validated by
    /// the configuration layer.
    pub fn new(cfg: &NetworkSpec) -> Cube {
        let mut dims = [1u32; MAX_DIMS];
        let ndim = cfg.ndim();
        let mut jump = 0;
        if cfg.topo == TopoKind::Midimew {
            let n = cfg.dims[0];
            jump = (f64::from(n) / 2.0).sqrt().ceil() as u32;
            dims[0] = n;
        } else if let FamilyParams::Circulant { jump: s } = cfg.family {
            dims[0] = cfg.dims[0];
            jump = s;
        } else if cfg.topo == TopoKind::Spinnaker {
            dims[..2].copy_from_slice(&cfg.dims);
        } else {
            dims[..cfg.dims.len()].copy_from_slice(&cfg.dims);
        }
        let s = cfg.skews;
        let skew = [[0, s.xy, s.xz], [s.yx, 0, s.yz], [s.zx, s.zy, 0]];
        let nodes = dims.iter().product();
        let mut cube = Cube {
            kind: cfg.topo,
            dims,
            ndim,
            nways: cfg.nways as usize,
            skew,
            jump,
            circ_routes: Vec::new(),
            nodes,
            neighbour: Vec::new(),
        };
        if cfg.topo == TopoKind::Circulant {
            cube.circ_routes = circulant_routes(nodes, jump);
        }
        let ports = cube.ports();
        let mut table = vec![NO_LINK; nodes as usize * ports];
        for node in 0..nodes {
            for port in 0..ports {
                table[node as usize * ports + port] = cube.compute_neighbour(node, port);
            }
        }
        cube.neighbour = table;
        cube
    }

    /// Number of dimensions (midimew: 2).
    pub fn ndim(&self) -> usize {
        self.ndim
    }

    /// Directions per dimension: 1 (unidirectional) or 2.
    pub fn nways(&self) -> usize {
        self.nways
    }

    /// Nodes per dimension (padded with 1).
    pub fn dims(&self) -> [u32; MAX_DIMS] {
        self.dims
    }

    /// Link port for a dimension and direction (`positive` = way 0).
    #[inline]
    pub fn port(&self, dim: usize, positive: bool) -> usize {
        dim * self.nways + usize::from(!positive)
    }

    /// Nodes along the largest dimension.
    fn largest_dim(&self) -> u32 {
        self.dims.iter().copied().max().unwrap_or(1)
    }

    /// Coordinates of a node.
    pub fn coords(&self, node: u32) -> [u32; MAX_DIMS] {
        let [nx, ny, _] = self.dims;
        [node % nx, (node / nx) % ny, node / (nx * ny)]
    }

    fn node_of(&self, c: [u32; MAX_DIMS]) -> u32 {
        let [nx, ny, _] = self.dims;
        c[0] + c[1] * nx + c[2] * nx * ny
    }

    /// Circulants: the minimal routes to the node `offset` ahead, as signed
    /// (jumps of 1, jumps of `S`) pairs; empty for other families.
    pub fn circulant_routes(&self, offset: usize) -> &[(i32, i32)] {
        self.circ_routes.get(offset).map_or(&[], Vec::as_slice)
    }

    /// The router at the other end of `port` of `node`, or `None` at a
    /// mesh edge.
    #[inline]
    pub fn neighbour(&self, node: u32, port: usize) -> Option<u32> {
        let n = self.neighbour[node as usize * self.ports() + port];
        (n != NO_LINK).then_some(n)
    }

    fn compute_neighbour(&self, node: u32, port: usize) -> u32 {
        let dim = port / self.nways;
        let positive = port.is_multiple_of(self.nways);
        if self.kind == TopoKind::Spinnaker && dim == 2 {
            let [nx, ny, _] = self.dims;
            let [x, y, _] = self.coords(node);
            return if positive {
                self.node_of([(x + 1) % nx, (y + 1) % ny, 0])
            } else {
                self.node_of([(x + nx - 1) % nx, (y + ny - 1) % ny, 0])
            };
        }
        if matches!(self.kind, TopoKind::Midimew | TopoKind::Circulant) {
            let step = match (self.kind, dim) {
                (TopoKind::Midimew, 0) => self.jump,
                (TopoKind::Midimew, _) => self.jump - 1,
                (_, 0) => 1,
                _ => self.jump,
            };
            let n = self.nodes;
            return if positive {
                (node + step) % n
            } else {
                (node + n - step % n) % n
            };
        }
        let mut c = self.coords(node);
        let n = self.dims[dim];
        let wraps = if positive {
            c[dim] == n - 1
        } else {
            c[dim] == 0
        };
        if wraps && self.kind == TopoKind::Mesh {
            return NO_LINK;
        }
        c[dim] = if positive {
            (c[dim] + 1) % n
        } else {
            (c[dim] + n - 1) % n
        };
        if wraps {
            for (b, cb) in c.iter_mut().enumerate() {
                let sk = self.skew[dim][b] % self.dims[b];
                *cb = if positive {
                    (*cb + sk) % self.dims[b]
                } else {
                    (*cb + self.dims[b] - sk) % self.dims[b]
                };
            }
        }
        self.node_of(c)
    }

    /// Whether a packet at `node` with `hops` still to travel in `dim`
    /// will cross that dimension's wrap-around link (Dally's P_W class).
    #[inline]
    pub fn will_wrap(&self, node: u32, dim: usize, hops: i32) -> bool {
        if matches!(self.kind, TopoKind::Midimew | TopoKind::Circulant) {
            return false;
        }
        let c = self.coords(node)[dim] as i64 + i64::from(hops);
        c < 0 || c >= i64::from(self.dims[dim])
    }

    /// Displacement around the ring of dimension `i` (bidirectional:
    /// shortest way, random at exactly half; unidirectional: positive).
    fn ring<R: Rng>(&self, delta: i32, i: usize, rng: &mut R) -> i32 {
        let n = self.dims[i] as i32;
        let r = delta.rem_euclid(n);
        if self.nways == 1 {
            return r;
        }
        if 2 * r > n || (2 * r == n && rng.gen::<bool>()) {
            r - n
        } else {
            r
        }
    }

    fn twisted_record<R: Rng>(&self, src: u32, dst: u32, rng: &mut R) -> Record {
        // Target dimension T: the one the skews shift.
        let t = (0..MAX_DIMS)
            .find(|&b| (0..MAX_DIMS).any(|a| self.skew[a][b] != 0))
            .unwrap_or(1);
        let (s, d) = (self.coords(src), self.coords(dst));
        let others: Vec<usize> = (0..self.ndim).filter(|&e| e != t).collect();
        let base: Record = std::array::from_fn(|i| d[i] as i32 - s[i] as i32);
        let mut best: [Record; 4] = [[0; MAX_DIMS]; 4];
        let mut nbest = 0;
        let mut best_cost = i32::MAX;
        // Each subset W of the other dimensions: go the other way round
        // each e in W, which shifts T by the skew of the wrap crossed.
        for w in 0..(1u32 << others.len()) {
            let mut rec = base;
            let mut t0 = s[t] as i64;
            for (bit, &e) in others.iter().enumerate() {
                if w & (1 << bit) != 0 {
                    let m = base[e];
                    let sgn = if m >= 0 { 1 } else { -1 };
                    rec[e] = -sgn * (self.dims[e] as i32 - m.abs());
                    t0 -= i64::from(sgn) * i64::from(self.skew[e][t]);
                }
            }
            let t0 = t0.rem_euclid(i64::from(self.dims[t])) as i32;
            rec[t] = self.ring(d[t] as i32 - t0, t, rng);
            let cost: i32 = rec.iter().map(|x| x.abs()).sum();
            if cost < best_cost {
                best_cost = cost;
                nbest = 0;
            }
            if cost == best_cost {
                best[nbest] = rec;
                nbest += 1;
            }
        }
        best[rng.gen_range(0..nbest)]
    }

    /// SpiNNaker: the route of a fixed table per source and destination
    /// (INSEE paper, section 2.2.4), minimal on the triangular torus. With
    /// displacements `a` (X) and `b` (Y), each taken either way round, the
    /// candidates use two of the three link classes: `(a - b, 0, b)`,
    /// `(0, b - a, a)` or `(a, b, 0)` hops along (U, V, W); the first
    /// shortest is kept, as INSEE does, so every pair has one route.
    fn spinnaker_record(&self, src: u32, dst: u32) -> Record {
        let [nx, ny, _] = self.dims.map(|d| d as i32);
        let (s, d) = (self.coords(src), self.coords(dst));
        let dx = (d[0] as i32 - s[0] as i32).rem_euclid(nx);
        let dy = (d[1] as i32 - s[1] as i32).rem_euclid(ny);
        let mut best = [0; MAX_DIMS];
        let mut cost = i32::MAX;
        for a in [dx, dx - nx] {
            for b in [dy, dy - ny] {
                for rec in [[a - b, 0, b], [0, b - a, a], [a, b, 0]] {
                    let c = rec.iter().map(|h: &i32| h.abs()).sum();
                    if c < cost {
                        (best, cost) = (rec, c);
                    }
                }
            }
        }
        best
    }

    fn midimew_record(&self, src: u32, dst: u32) -> Record {
        let n = self.nodes as i64;
        let b = i64::from(self.jump);
        let (s, t) = (i64::from(src), i64::from(dst));
        let mut m = (t - s).abs();
        let mut sigma = if t > s { 1 } else { -1 };
        if m > n / 2 {
            sigma = -sigma;
            m = n - m;
        }
        let (q, r) = (m / b, m % b);
        let (x, y) = if r == 0 || q + r < b - r {
            (q + r, -r)
        } else {
            (q + r - (b - 1), b - r)
        };
        [(sigma * x) as i32, (sigma * y) as i32, 0]
    }
}

/// Minimal routes of the circulant C_n(1, s) from node 0: for every
/// offset, each (jumps of 1, jumps of s) pair, signed, that reaches it in
/// the fewest hops (breadth-first over the jumps, keeping every minimal
/// pair).
fn circulant_routes(n: u32, s: u32) -> Vec<Vec<(i32, i32)>> {
    let mut dist = vec![u32::MAX; n as usize];
    let mut routes: Vec<Vec<(i32, i32)>> = vec![Vec::new(); n as usize];
    dist[0] = 0;
    routes[0].push((0, 0));
    let mut frontier = vec![0u32];
    let steps = [
        (1i64, (1, 0)),
        (-1, (-1, 0)),
        (i64::from(s), (0, 1)),
        (-i64::from(s), (0, -1)),
    ];
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for &u in &frontier {
            for &(step, (dx, dy)) in &steps {
                let v = (i64::from(u) + step).rem_euclid(i64::from(n)) as usize;
                let d = dist[u as usize] + 1;
                if dist[v] < d {
                    continue;
                }
                if dist[v] == u32::MAX {
                    dist[v] = d;
                    next.push(v as u32);
                }
                let from = routes[u as usize].clone();
                for (x, y) in from {
                    let r = (x + dx, y + dy);
                    if !routes[v].contains(&r) {
                        routes[v].push(r);
                    }
                }
            }
        }
        frontier = next;
    }
    routes
}

/// Nodes are routers; port `dim * nways + way` (way 0 positive) arrives on
/// the same port of the neighbour.
impl TopologyFamily for Cube {
    fn nodes(&self) -> usize {
        self.nodes as usize
    }

    /// `ndim * nways`.
    fn ports(&self) -> usize {
        self.ndim * self.nways
    }

    fn link(&self, r: u32, port: usize) -> Option<(u32, usize)> {
        self.neighbour(r, port).map(|n| (n, port))
    }

    fn reverse_port(&self, port: usize, _arrive: usize) -> Option<usize> {
        (self.nways == 2).then_some(port ^ 1)
    }

    fn duplex(&self) -> bool {
        self.nways != 1
    }

    /// Tori: the two rings of links across the largest dimension, `2 N /
    /// k`; meshes `N / k`; unknown for the other members of the family.
    fn bisection_links(&self) -> Option<u64> {
        let cross = u64::from(self.nodes / self.largest_dim());
        match self.kind {
            TopoKind::Torus => Some(2 * cross),
            TopoKind::Mesh => Some(cross),
            _ => None,
        }
    }

    /// Half the traffic of each node crosses the bisection, which carries
    /// 2 N/k phits per cycle and direction on a torus (`8/k`), N/k on a
    /// mesh or a unidirectional torus (`4/k`).
    fn throughput_bound(&self) -> Option<f64> {
        let kmax = f64::from(self.largest_dim());
        match self.kind {
            TopoKind::Torus if self.nways == 2 => Some(8.0 / kmax),
            TopoKind::Torus | TopoKind::Mesh => Some(4.0 / kmax),
            _ => None,
        }
    }
}

impl RecordRouting for Cube {
    /// Entry `dim`, one hop fewer in the port's direction.
    fn hop(&self, port: usize) -> (u8, i32) {
        let delta = if port.is_multiple_of(self.nways) {
            -1
        } else {
            1
        };
        ((port / self.nways) as u8, delta)
    }

    fn direction(&self, port: usize) -> (usize, bool) {
        (port / self.nways, port.is_multiple_of(self.nways))
    }

    /// Minimal routing record from `src` to `dst`. Ties (a displacement of
    /// exactly half an even ring, or equally short twisted paths) are broken
    /// with `rng`, as FSIN does. `src != dst` is not required (gives zeros).
    fn record<R: Rng>(&self, src: u32, dst: u32, rng: &mut R) -> Record {
        match self.kind {
            TopoKind::Midimew => self.midimew_record(src, dst),
            TopoKind::Circulant => {
                let off = (dst + self.nodes - src) % self.nodes;
                let routes = &self.circ_routes[off as usize];
                let (x, y) = routes[rng.gen_range(0..routes.len())];
                [x, y, 0]
            }
            TopoKind::Mesh => {
                let (s, d) = (self.coords(src), self.coords(dst));
                std::array::from_fn(|i| d[i] as i32 - s[i] as i32)
            }
            TopoKind::Torus => {
                let (s, d) = (self.coords(src), self.coords(dst));
                std::array::from_fn(|i| self.ring(d[i] as i32 - s[i] as i32, i, rng))
            }
            TopoKind::TwistedTorus => self.twisted_record(src, dst, rng),
            TopoKind::Spinnaker => self.spinnaker_record(src, dst),
            kind => unreachable!("{kind:?} is not built as a cube"),
        }
    }
}
