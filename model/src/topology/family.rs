//! The traits at the bottom of the topologies: what every family provides
//! ([`TopologyFamily`]: routers, ports, links) and what the families that
//! route by coordinates add ([`RecordRouting`]: the cubes, trees,
//! hypercubes and indirect cubes of the INSEE paper carry a routing record
//! of per-dimension hops). A network read from a file has no coordinates:
//! its packets follow the tables of [`super::tables`] instead.

use rand::Rng;

/// Most dimensions a routing record has (the cubes' three).
pub const MAX_DIMS: usize = 3;

/// A packet's routing record: signed hops still to travel per dimension
/// (positive = `way` 0) in a cube, links to climb and descend in a tree,
/// the dimensions to correct (a bit mask) in a hypercube; under table
/// routing, entry 0 counts the links left.
pub type Record = [i32; MAX_DIMS];

/// Links a packet with record `rr` still has to cross when every entry
/// counts hops: the sum of the entries' magnitudes (a cube's per-dimension
/// hops, a tree's climb and descent, the links left under table routing).
pub fn links_left(rr: &Record) -> u32 {
    rr.iter().map(|h| h.unsigned_abs()).sum()
}

/// What every topology family provides (one file per family implements
/// it): its shape, its links and the figures `fsin topology` reports.
/// `Topology` (in the parent module) builds its link tables from it once;
/// the engine's per-cycle loop reads those tables, not the family.
///
/// To add a family: a file in this module implementing this trait (and
/// [`RecordRouting`] when the family is routed by records of its own), a
/// variant of `Family` (and an arm of `each_family!`), and its name in the
/// configuration layer's key table.
pub trait TopologyFamily {
    /// Compute nodes.
    fn nodes(&self) -> usize;

    /// Routers: one per node in direct networks (the default); nodes and
    /// switches in indirect ones, nodes numbered first.
    fn routers(&self) -> usize {
        self.nodes()
    }

    /// Link ports per router.
    fn ports(&self) -> usize;

    /// The router and its arrival port at the other end of `port` of
    /// router `r`, or `None` where the port has no link.
    fn link(&self, r: u32, port: usize) -> Option<(u32, usize)>;

    /// The port of the other end of the full-duplex link that leaves on
    /// `port` and arrives at input `arrive` of the neighbour: the port
    /// that leads back (`None` on unidirectional rings).
    fn reverse_port(&self, port: usize, arrive: usize) -> Option<usize>;

    /// Whether the nodes are network elements of their own, each joined by
    /// one link to a switch (trees, indirect cubes): those links are among
    /// the topology's links and never fail.
    fn indirect(&self) -> bool {
        false
    }

    /// Whether every link is full duplex (false: unidirectional rings).
    fn duplex(&self) -> bool {
        true
    }

    /// Links cut by a minimal bisection, if known for the family.
    fn bisection_links(&self) -> Option<u64> {
        None
    }

    /// Ideal uniform-traffic throughput relative to a full network (thin
    /// trees' Theta); `None` for direct networks.
    fn theta(&self) -> Option<f64> {
        None
    }

    /// Uniform-traffic bisection bound in phits/node/cycle, if known.
    fn throughput_bound(&self) -> Option<f64> {
        None
    }

    /// The router ids in consecutive ranges of routers doing the same job
    /// (default: the compute nodes, then the switches if any), each
    /// numbered so that its first half, say, is near the first half of
    /// the others: a network in parts splits every range evenly
    /// (`threads`), so that each part gets its share of every job and the
    /// routers its nodes reach first.
    fn router_classes(&self) -> Vec<std::ops::Range<usize>> {
        let (nodes, routers) = (self.nodes(), self.routers());
        [0..nodes, nodes..routers]
            .into_iter()
            .filter(|class| !class.is_empty())
            .collect()
    }
}

/// The families routed by a record computed once at injection (INSEE
/// paper, section 2.1: a packet carries its remaining hops per dimension and
/// each hop takes one off an entry): k-ary n-cubes, trees, hypercubes and
/// indirect cubes.
pub trait RecordRouting: TopologyFamily {
    /// What a hop on `port` does to a routing record: the entry it changes
    /// and by how much.
    fn hop(&self, port: usize) -> (u8, i32);

    /// Dimension and direction (true: positive) of `port`, for reports.
    fn direction(&self, port: usize) -> (usize, bool);

    /// Minimal routing record from node `src` to node `dst`, ties broken
    /// with `rng` where the family has them (zeros when `src == dst`).
    fn record<R: Rng>(&self, src: u32, dst: u32, rng: &mut R) -> Record;

    /// Links a packet with record `rr` still has to cross (default:
    /// [`links_left`]).
    fn hops(&self, rr: &Record) -> u32 {
        links_left(rr)
    }
}
