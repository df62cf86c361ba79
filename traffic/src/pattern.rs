//! Spatial traffic patterns: the destination of each generated packet
//! (INSEE paper, section 3.2.1).

use rand::Rng;

/// Chooses destinations.
pub trait Pattern {
    /// Destination of a packet generated at `src` (never `src` itself), or
    /// `None` when `src` sends nothing (a permutation's fixed point).
    fn destination(&mut self, src: u32, rng: &mut dyn rand::RngCore) -> Option<u32>;
}

/// Uniform (UN): every other node is equally likely.
#[derive(Debug, Clone)]
pub struct Uniform {
    /// Number of nodes (at least 2).
    pub nodes: u32,
}

impl Pattern for Uniform {
    fn destination(&mut self, src: u32, rng: &mut dyn rand::RngCore) -> Option<u32> {
        Some(uniform_other(src, self.nodes, rng))
    }
}

/// Uniform over `0..n` without `src`, in one draw (the distribution of
/// TrGen's draw-until-not-the-source).
fn uniform_other(src: u32, n: u32, rng: &mut dyn rand::RngCore) -> u32 {
    if src >= n {
        return rng.gen_range(0..n);
    }
    let d = rng.gen_range(0..n - 1);
    if d >= src {
        d + 1
    } else {
        d
    }
}

/// Hot region (HR, INSEE paper section 3.2.1, with TrGen's constants): a
/// quarter of the packets go to the first eighth of the nodes, the others
/// to any node; never to the source. TrGen needs more than 8 nodes.
#[derive(Debug, Clone)]
pub struct HotRegion {
    /// Nodes of the network.
    pub nodes: u32,
}

impl Pattern for HotRegion {
    fn destination(&mut self, src: u32, rng: &mut dyn rand::RngCore) -> Option<u32> {
        let region = (self.nodes / 8).max(1);
        let hot = rng.gen::<f64>() <= 0.25 && !(region == 1 && src == 0);
        Some(uniform_other(
            src,
            if hot { region } else { self.nodes },
            rng,
        ))
    }
}

/// Hot spot (HS, INSEE paper section 3.2.1, with TrGen's constant): each draw
/// picks node 0 with probability 0.02 and any node otherwise, again until
/// it is not the source.
#[derive(Debug, Clone)]
pub struct HotSpot {
    /// Nodes of the network.
    pub nodes: u32,
}

impl Pattern for HotSpot {
    fn destination(&mut self, src: u32, rng: &mut dyn rand::RngCore) -> Option<u32> {
        loop {
            let d = if rng.gen::<f64>() <= 0.02 {
                0
            } else {
                rng.gen_range(0..self.nodes)
            };
            if d != src {
                return Some(d);
            }
        }
    }
}

/// Semi (TrGen's `semi`): the nodes in the lower half of the first
/// dimension (`x < n_x/2`) send uniformly to the other nodes of that half
/// (any value of the other coordinates); the upper half sends nothing.
#[derive(Debug, Clone)]
pub struct Semi {
    /// Nodes of the network.
    pub nodes: u32,
    /// Nodes in the first dimension.
    pub nx: u32,
}

impl Pattern for Semi {
    fn destination(&mut self, src: u32, rng: &mut dyn rand::RngCore) -> Option<u32> {
        let half = self.nx / 2;
        if src % self.nx >= half || half * (self.nodes / self.nx) < 2 {
            return None;
        }
        loop {
            let d = rng.gen_range(0..half) + self.nx * rng.gen_range(0..self.nodes / self.nx);
            if d != src {
                return Some(d);
            }
        }
    }
}

/// Distribution (INSEE paper section 3.2.1): each source sends to every other
/// node in turn, in order of identifier. The first destination is the next
/// node (`distribute`, SD) or a random other node (`rsdist`, RD).
#[derive(Debug, Clone)]
pub struct Distribute {
    next: Vec<u32>,
}

impl Distribute {
    /// Sources at `nodes` nodes starting at their next node, or with
    /// `random_start` at a node drawn from `rng`.
    pub fn new(nodes: u32, random_start: bool, rng: &mut dyn rand::RngCore) -> Distribute {
        let next = (0..nodes)
            .map(|s| {
                if random_start {
                    uniform_other(s, nodes, rng)
                } else {
                    (s + 1) % nodes
                }
            })
            .collect();
        Distribute { next }
    }
}

impl Pattern for Distribute {
    fn destination(&mut self, src: u32, _rng: &mut dyn rand::RngCore) -> Option<u32> {
        let n = self.next.len() as u32;
        let mut d = self.next[src as usize];
        if d == src {
            d = (d + 1) % n;
        }
        self.next[src as usize] = (d + 1) % n;
        Some(d)
    }
}

/// TrGen's permutations (INSEE paper, section 3.2.1, Table 2): each source
/// always sends to the same destination, a function of its identifier.
/// With `l` address bits (`2^l` nodes) and `s_i` the i-th bit of the
/// source:
/// - bit complement (`complement`): `d_i = !s_i`;
/// - bit reversal (`reversal`): `d_i = s_(l-1-i)`;
/// - bit transpose (`transpose`): `d_i = s_((i + l/2) mod l)`, the two
///   halves swapped (for odd `l` this is the table's rotation; INSEE's
///   code rotates the other way);
/// - butterfly (`butterfly`): `s_0` and `s_(l-1)` swapped;
/// - perfect shuffle (`shuffle`): `d_i = s_((i - 1) mod l)`, a rotation
///   left by one;
/// - tornado (`tornado`): `d_x = (s_x + n_x / 2) mod n_x`, the other
///   coordinates unchanged (`n_x` nodes in the first dimension; Table 2's
///   example: 8x8, <3,2> -> <7,2>).
///
/// The bit permutations need a power-of-two number of nodes (INSEE rounds
/// the bit count and may name nodes that do not exist; the configuration
/// refuses it instead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permutation {
    /// To the node whose id is the source's with every bit flipped.
    Complement,
    /// To the source's id with its bits in reverse order.
    Reversal,
    /// To the source's id rotated left by half its bits, rounded up
    /// (a matrix transpose when the bit count is even).
    Transpose,
    /// To the source's id with its first and last bits swapped.
    Butterfly,
    /// To the source's id rotated left by one bit (the perfect shuffle).
    Shuffle,
    /// Halfway round the first dimension: `x + nx / 2` modulo `nx`.
    Tornado,
}

impl Permutation {
    /// Destination of `src` among `nodes` nodes (a power of two for the
    /// bit permutations) whose first dimension has `nx` nodes.
    pub fn of(self, src: u32, nodes: u32, nx: u32) -> u32 {
        let l = nodes.trailing_zeros();
        let mask = nodes.wrapping_sub(1);
        // Rotation left by `r` within the low `l` bits.
        let rotl = |x: u32, r: u32| {
            if l == 0 {
                x
            } else {
                ((x << (r % l)) | (x >> ((l - r % l) % l))) & mask
            }
        };
        match self {
            Permutation::Complement => !src & mask,
            Permutation::Reversal if l == 0 => src,
            Permutation::Reversal => src.reverse_bits() >> (32 - l),
            Permutation::Transpose => rotl(src, l - l / 2),
            Permutation::Butterfly => {
                let (lo, hi) = (src & 1, (src >> l.saturating_sub(1)) & 1);
                let top = 1 << l.saturating_sub(1);
                (src & !(1 | top)) | (lo << l.saturating_sub(1)) | hi
            }
            Permutation::Shuffle => rotl(src, 1),
            Permutation::Tornado => {
                let x = src % nx;
                src - x + (x + nx / 2) % nx
            }
        }
    }

    /// Destination of `src` as INSEE's code computes it (pattern.c,
    /// data_generation.c; `compat=insee`): `transpose` with an odd bit
    /// count rotates the other way (`d_((i + l/2) mod l) = s_i`), and
    /// `tornado` adds `(n_x - 1) / 2` to the whole node id, modulo the
    /// node count; the others as [`Permutation::of`].
    pub fn of_insee(self, src: u32, nodes: u32, nx: u32) -> u32 {
        match self {
            Permutation::Transpose => {
                let l = nodes.trailing_zeros();
                let r = l / 2;
                if r == 0 {
                    src
                } else {
                    ((src << r) | (src >> (l - r))) & nodes.wrapping_sub(1)
                }
            }
            Permutation::Tornado => (src + (nx - 1) / 2) % nodes,
            _ => self.of(src, nodes, nx),
        }
    }

    /// Whether it permutes bits (and needs a power-of-two node count).
    pub fn needs_power_of_two(self) -> bool {
        self != Permutation::Tornado
    }
}

/// Sources that send to a fixed [`Permutation`] of their identifier; a
/// source the permutation maps to itself sends nothing (as in TrGen).
#[derive(Debug, Clone)]
pub struct Permuted {
    dest: Vec<u32>,
}

impl Permuted {
    /// The destinations of the `nodes` sources (first dimension `nx`).
    pub fn new(p: Permutation, nodes: u32, nx: u32) -> Permuted {
        Permuted {
            dest: (0..nodes).map(|s| p.of(s, nodes, nx)).collect(),
        }
    }

    /// As [`Permuted::new`], with INSEE's code's destinations
    /// ([`Permutation::of_insee`]).
    pub fn insee(p: Permutation, nodes: u32, nx: u32) -> Permuted {
        Permuted {
            dest: (0..nodes).map(|s| p.of_insee(s, nodes, nx)).collect(),
        }
    }
}

impl Pattern for Permuted {
    fn destination(&mut self, src: u32, _rng: &mut dyn rand::RngCore) -> Option<u32> {
        let d = self.dest[src as usize];
        (d != src).then_some(d)
    }
}

impl Pattern for Box<dyn Pattern> {
    fn destination(&mut self, src: u32, rng: &mut dyn rand::RngCore) -> Option<u32> {
        (**self).destination(src, rng)
    }
}

/// Node id of coordinates `c` in a cube of `dims` (X varies fastest).
fn node_of(c: &[i64], dims: &[u32]) -> u32 {
    let mut id = 0;
    let mut stride = 1;
    for (&x, &n) in c.iter().zip(dims) {
        id += x as u32 * stride;
        stride *= n;
    }
    id
}

fn coords_of(node: u32, dims: &[u32]) -> Vec<i64> {
    let mut r = node;
    dims.iter()
        .map(|&n| {
            let c = r % n;
            r /= n;
            i64::from(c)
        })
        .collect()
}

/// Local (TrGen's LOCAL pattern): in every dimension an offset from the
/// source, a half of the draws in {-1, 0, +1}, a quarter in {-3, -2, +2,
/// +3}, an eighth in {-7..-4, +4..+7} and an eighth far away (8 to n-8
/// ahead); wrapped around the torus, never the source. Every dimension
/// needs at least 16 nodes (TrGen only warns, and its far draw divides by
/// n - 15).
#[derive(Debug, Clone)]
pub struct Local {
    /// Nodes in each dimension.
    pub dims: Vec<u32>,
}

impl Pattern for Local {
    fn destination(&mut self, src: u32, rng: &mut dyn rand::RngCore) -> Option<u32> {
        let c = coords_of(src, &self.dims);
        loop {
            let d: Vec<i64> = c
                .iter()
                .zip(&self.dims)
                .map(|(&x, &n)| {
                    let n = i64::from(n);
                    let u: f64 = rng.gen();
                    let off = if u < 0.5 {
                        rng.gen_range(-1..=1)
                    } else if u < 0.75 {
                        let v = rng.gen_range(2..=3);
                        if rng.gen::<bool>() {
                            v
                        } else {
                            -v
                        }
                    } else if u < 0.875 {
                        let v = rng.gen_range(4..=7);
                        if rng.gen::<bool>() {
                            v
                        } else {
                            -v
                        }
                    } else {
                        rng.gen_range(8..=n - 8)
                    };
                    (x + off).rem_euclid(n)
                })
                .collect();
            let dst = node_of(&d, &self.dims);
            if dst != src {
                return Some(dst);
            }
        }
    }
}

/// Destinations by distance (TrGen's `population` and `histogram`
/// patterns): the hop distance is drawn from `weights` (index = distance
/// in hops, minimal routes), then the destination uniformly among the nodes
/// at that distance from the source. On a mesh a source may have no node
/// at the drawn distance; it draws again (and sends nothing if no weighted
/// distance exists from it).
#[derive(Debug, Clone)]
pub struct ByDistance {
    dims: Vec<u32>,
    torus: bool,
    /// Cumulative weights by distance.
    cumulative: Vec<f64>,
    /// Offsets (one per dimension) at each distance.
    offsets: Vec<Vec<Vec<i64>>>,
    scratch: Vec<usize>,
}

impl ByDistance {
    /// `weights[d]` is the relative frequency of distance `d` (index 0 is
    /// ignored); `torus` selects wrap-around distances.
    pub fn new(dims: &[u32], torus: bool, weights: &[f64]) -> ByDistance {
        let max_d = weights.len().saturating_sub(1);
        let ranges: Vec<(i64, i64)> = dims
            .iter()
            .map(|&n| {
                let n = i64::from(n);
                if torus {
                    (-((n - 1) / 2), n / 2)
                } else {
                    (-(n - 1), n - 1)
                }
            })
            .collect();
        let mut offsets = vec![Vec::new(); max_d + 1];
        let mut cur: Vec<i64> = ranges.iter().map(|r| r.0).collect();
        'all: loop {
            let d = cur.iter().map(|x| x.unsigned_abs() as usize).sum::<usize>();
            if d > 0 && d <= max_d {
                offsets[d].push(cur.clone());
            }
            for (k, r) in ranges.iter().enumerate() {
                if cur[k] < r.1 {
                    cur[k] += 1;
                    continue 'all;
                }
                cur[k] = r.0;
            }
            break;
        }
        let mut acc = 0.0;
        let cumulative = weights
            .iter()
            .enumerate()
            .map(|(d, &w)| {
                if d > 0 && !offsets[d].is_empty() {
                    acc += w.max(0.0);
                }
                acc
            })
            .collect();
        ByDistance {
            dims: dims.to_vec(),
            torus,
            cumulative,
            offsets,
            scratch: Vec::new(),
        }
    }
}

impl Pattern for ByDistance {
    fn destination(&mut self, src: u32, rng: &mut dyn rand::RngCore) -> Option<u32> {
        let total = *self.cumulative.last()?;
        if total <= 0.0 {
            return None;
        }
        let c = coords_of(src, &self.dims);
        for _ in 0..64 {
            let u = rng.gen::<f64>() * total;
            let d = self.cumulative.partition_point(|&w| w <= u);
            let set = &self.offsets[d.min(self.offsets.len() - 1)];
            if self.torus {
                let o = &set[rng.gen_range(0..set.len())];
                let dst: Vec<i64> = c
                    .iter()
                    .zip(o)
                    .zip(&self.dims)
                    .map(|((&x, &off), &n)| (x + off).rem_euclid(i64::from(n)))
                    .collect();
                return Some(node_of(&dst, &self.dims));
            }
            self.scratch.clear();
            self.scratch.extend((0..set.len()).filter(|&k| {
                set[k]
                    .iter()
                    .zip(&c)
                    .zip(&self.dims)
                    .all(|((&off, &x), &n)| (0..i64::from(n)).contains(&(x + off)))
            }));
            if let Some(&k) = self
                .scratch
                .get(rng.gen_range(0..self.scratch.len().max(1)))
            {
                let dst: Vec<i64> = c.iter().zip(&set[k]).map(|(&x, &off)| x + off).collect();
                return Some(node_of(&dst, &self.dims));
            }
        }
        None
    }
}

/// Why a distance file for [`ByDistance`] cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DistanceError {
    /// The file cannot be read.
    #[error("{file}: {source}")]
    Read {
        /// The file.
        file: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A line (1-based) that does not parse, and what was expected.
    #[error("{file}:{line}: {what}")]
    Line {
        /// The file.
        file: String,
        /// The line, from 1.
        line: usize,
        /// What was expected.
        what: String,
    },
    /// No distance has a positive weight.
    #[error("{file}: no distance with a positive weight")]
    NoWeight {
        /// The file.
        file: String,
    },
}

/// Reads a distance distribution for [`ByDistance`]: `population` files
/// hold one distance per line (each line equally likely, as TrGen's
/// population file); `histogram` files hold `distance weight` lines. `#`
/// starts a comment.
///
/// # Errors
/// [`DistanceError`]: the file cannot be read, a line does not parse
/// (named `file:line`), or no distance has a positive weight.
pub fn read_distances(path: &std::path::Path, histogram: bool) -> Result<Vec<f64>, DistanceError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| DistanceError::Read {
        file: file.clone(),
        source,
    })?;
    let mut w: Vec<f64> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let f: Vec<&str> = raw
            .split('#')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        if f.is_empty() {
            continue;
        }
        let err = |what: &str| DistanceError::Line {
            file: file.clone(),
            line: i + 1,
            what: what.to_string(),
        };
        let want = if histogram { 2 } else { 1 };
        if f.len() != want {
            return Err(err(if histogram {
                "expected `distance weight`"
            } else {
                "expected one distance"
            }));
        }
        let d: usize = f[0]
            .parse()
            .ok()
            .filter(|&d| (1..=1 << 16).contains(&d))
            .ok_or_else(|| err(&format!("distance `{}` is not an integer >= 1", f[0])))?;
        let weight: f64 = if histogram {
            f[1].parse()
                .ok()
                .filter(|&x: &f64| x >= 0.0 && x.is_finite())
                .ok_or_else(|| err(&format!("weight `{}` is not a number >= 0", f[1])))?
        } else {
            1.0
        };
        if w.len() <= d {
            w.resize(d + 1, 0.0);
        }
        w[d] += weight;
    }
    if !w.iter().any(|&x| x > 0.0) {
        return Err(DistanceError::NoWeight { file });
    }
    Ok(w)
}

#[cfg(test)]
mod tests;
