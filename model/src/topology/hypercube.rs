//! Binary n-cubes (`hypercube_N`): 2^N routers, one per node, linked along
//! N dimensions, node `i` to `i XOR 2^d` (the 2-ary n-cube that SimuRed
//! offers, SimuRed paper). Its own family rather than a cube of N dimensions of
//! size 2, so that a routing record stays one word whatever N is.
//!
//! Port `d` leads along dimension `d` and arrives at port `d` of the
//! neighbour. The routing record is `[src XOR dst, 0, 0]`: the set bits are
//! the dimensions still to correct, and a hop along `d` clears bit `d`.

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

    /// Nodes (= routers): `2^dims`.
    pub fn nodes(&self) -> usize {
        1 << self.dims
    }

    /// Link ports per router: one per dimension.
    pub fn ports(&self) -> usize {
        self.dims as usize
    }

    /// The neighbour along dimension `port`.
    pub fn neighbour(&self, node: u32, port: usize) -> u32 {
        node ^ (1 << port)
    }

    /// Routing record: the dimensions to correct, as a bit mask.
    pub fn record(&self, src: u32, dst: u32) -> [i32; 3] {
        [(src ^ dst) as i32, 0, 0]
    }

    /// Bisection links: `N / 2` (the cut across any one dimension).
    pub fn bisection_links(&self) -> u64 {
        1 << (self.dims - 1)
    }
}
