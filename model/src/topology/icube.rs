//! The indirect cube (`icube_N_L_X[_Y[_Z]]`, alias `tricube`, as INSEE
//! names it): an X x Y x Z torus of switches, each with N compute nodes
//! attached by links of their own and L parallel links ("lanes") to its
//! neighbour in each direction of each dimension.
//!
//! Router ids: the compute nodes first (node `i` hangs from switch `i /
//! N`), then the switches (`nodes + s`, `s` numbered with X fastest).
//! Switch ports: `0..N` lead to its nodes (port `i mod N` to node `i`);
//! port `N + L (2d + w) + n` leads along dimension `d`, direction `w` (0:
//! positive), lane `n`, and arrives at port `N + L (2d + 1 - w) + n` of the
//! neighbour. A node's only port is port 0.
//!
//! The routing record is the torus record of the two switches (the
//! shortest signed offset per dimension, an exact half broken at random);
//! the node links add two hops (INSEE's `2 + sum |rr|`).

use rand::Rng;

use super::cube::Cube;
use super::family::{links_left, Record, RecordRouting, TopologyFamily};
use crate::spec::NetworkSpec;

/// The port layout of an indirect cube's switches: `N` node ports, then
/// `L` lanes per dimension and direction.
#[derive(Debug, Clone, Copy)]
pub struct PortLayout {
    /// Nodes per switch.
    per_switch: u32,
    /// Parallel links per direction.
    lanes: u32,
}

impl PortLayout {
    /// Nodes per switch (`N`).
    pub fn per_switch(self) -> usize {
        self.per_switch as usize
    }

    /// Lanes per direction (`L`).
    pub fn lanes(self) -> usize {
        self.lanes as usize
    }

    /// Port of dimension `d`, direction `positive`, lane `lane`.
    #[inline]
    pub fn port(self, d: usize, positive: bool, lane: usize) -> usize {
        self.per_switch() + self.lanes() * (2 * d + usize::from(!positive)) + lane
    }

    /// Where packets travelling along `d` in direction `positive` on `lane`
    /// arrive at a switch.
    #[inline]
    pub fn arrival_port(self, d: usize, positive: bool, lane: usize) -> usize {
        self.port(d, !positive, lane)
    }

    /// Dimension, direction and lane of switch port `p >= N`.
    #[inline]
    pub fn port_info(self, p: usize) -> (usize, bool, usize) {
        let q = p - self.per_switch();
        let (dw, lane) = (q / self.lanes(), q % self.lanes());
        (dw / 2, dw.is_multiple_of(2), lane)
    }
}

/// A built indirect cube.
#[derive(Debug, Clone)]
pub struct Icube {
    layout: PortLayout,
    /// The torus of switches.
    torus: Cube,
    nodes: u32,
}

impl Icube {
    /// Builds `icube_N_L_...`: `per_switch` nodes per switch and `lanes`
    /// links per direction over the switch torus `switches` (switches per
    /// dimension).
    pub fn new(per_switch: u32, lanes: u32, switches: &[u32]) -> Icube {
        let torus = Cube::new(&NetworkSpec {
            topo: crate::spec::TopoKind::Torus,
            dims: switches.to_vec(),
            ..NetworkSpec::default()
        });
        Icube {
            layout: PortLayout { per_switch, lanes },
            nodes: torus.nodes() as u32 * per_switch,
            torus,
        }
    }

    /// The switches' port layout.
    pub fn layout(&self) -> PortLayout {
        self.layout
    }

    /// Switch dimensions.
    pub fn ndim(&self) -> usize {
        self.torus.ndim()
    }

    /// The switch of router `r`, if it is one.
    #[inline]
    pub fn switch_of(&self, r: u32) -> Option<u32> {
        r.checked_sub(self.nodes)
    }
}

/// The compute nodes first, then the switches; see the module's port
/// layout.
impl TopologyFamily for Icube {
    /// Compute nodes.
    fn nodes(&self) -> usize {
        self.nodes as usize
    }

    /// Routers: nodes and switches.
    fn routers(&self) -> usize {
        self.nodes as usize + self.torus.nodes()
    }

    /// Ports per router: `N + 2 ndim L`.
    fn ports(&self) -> usize {
        self.layout.per_switch() + 2 * self.torus.ndim() * self.layout.lanes()
    }

    /// The router and arrival port at the other end of `port` of `r`.
    fn link(&self, r: u32, port: usize) -> Option<(u32, usize)> {
        let n = self.layout.per_switch;
        let Some(s) = self.switch_of(r) else {
            return (port == 0).then(|| (self.nodes + r / n, (r % n) as usize));
        };
        if port < self.layout.per_switch() {
            return Some((s * n + port as u32, 0));
        }
        let (d, positive, lane) = self.layout.port_info(port);
        let t = self.torus.neighbour(s, self.torus.port(d, positive))?;
        Some((self.nodes + t, self.layout.arrival_port(d, positive, lane)))
    }

    fn reverse_port(&self, _port: usize, arrive: usize) -> Option<usize> {
        Some(arrive)
    }

    fn indirect(&self) -> bool {
        true
    }
}

impl RecordRouting for Icube {
    /// Node ports change nothing; a torus port one hop fewer in its
    /// dimension and direction.
    fn hop(&self, port: usize) -> (u8, i32) {
        if port < self.layout.per_switch() {
            return (0, 0);
        }
        let (d, positive, _) = self.layout.port_info(port);
        (d as u8, if positive { -1 } else { 1 })
    }

    /// Node ports report dimension `ndim`.
    fn direction(&self, port: usize) -> (usize, bool) {
        if port < self.layout.per_switch() {
            return (self.ndim(), true);
        }
        let (d, positive, _) = self.layout.port_info(port);
        (d, positive)
    }

    /// Routing record between the switches of nodes `src` and `dst`.
    fn record<R: Rng>(&self, src: u32, dst: u32, rng: &mut R) -> Record {
        let n = self.layout.per_switch;
        self.torus.record(src / n, dst / n, rng)
    }

    /// Links the packet crosses in all: the torus hops and both node links.
    fn hops(&self, rr: &Record) -> u32 {
        2 + links_left(rr)
    }
}
