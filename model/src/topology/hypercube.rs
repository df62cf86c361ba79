//! Binary n-cubes (`hypercube_N`): 2^N routers, one per node, linked along
//! N dimensions, node `i` to `i XOR 2^d` (the 2-ary n-cube that SimuRed
//! offers, SimuRed paper). Its own family rather than a cube of N dimensions of
//! size 2, so that a routing record stays one word whatever N is.
//!
//! Port `d` leads along dimension `d` and arrives at port `d` of the
//! neighbour. The routing record is `[src XOR dst, 0, 0]`: the set bits are
//! the dimensions still to correct, and a hop along `d` clears bit `d`.

use rand::Rng;

use super::family::{Record, RecordRouting, TopologyFamily};

/// A built binary n-cube.
#[derive(Debug, Clone)]
pub struct Hypercube {
    dims: u32,
}

impl Hypercube {
    /// The `dims`-dimensional binary cube (`1 <= dims <= 20`).
    pub fn new(dims: u32) -> Hypercube {
        Hypercube { dims }
    }
}

/// Port `d` leads along dimension `d` and arrives at port `d`.
impl TopologyFamily for Hypercube {
    /// `2^dims`.
    fn nodes(&self) -> usize {
        1 << self.dims
    }

    /// One per dimension.
    fn ports(&self) -> usize {
        self.dims as usize
    }

    /// The neighbour along dimension `port`.
    fn link(&self, r: u32, port: usize) -> Option<(u32, usize)> {
        Some((r ^ (1 << port), port))
    }

    fn reverse_port(&self, port: usize, _arrive: usize) -> Option<usize> {
        Some(port)
    }

    /// `N / 2`: the cut across any one dimension.
    fn bisection_links(&self) -> Option<u64> {
        Some(1 << (self.dims - 1))
    }

    /// Half the traffic crosses the `N / 2` links of the bisection: `2`.
    fn throughput_bound(&self) -> Option<f64> {
        Some(2.0)
    }
}

impl RecordRouting for Hypercube {
    /// A hop along `d` clears bit `d` of entry 0.
    fn hop(&self, port: usize) -> (u8, i32) {
        (0, -(1 << port))
    }

    fn direction(&self, port: usize) -> (usize, bool) {
        (port, true)
    }

    /// `[src XOR dst, 0, 0]`: the dimensions to correct, as a bit mask.
    fn record<R: Rng>(&self, src: u32, dst: u32, _rng: &mut R) -> Record {
        [(src ^ dst) as i32, 0, 0]
    }

    /// One per dimension still to correct.
    fn hops(&self, rr: &Record) -> u32 {
        rr[0].count_ones()
    }
}
