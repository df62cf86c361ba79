//! Spatial traffic patterns: the destination of each generated packet
//! (seed 000, section 3.2.1).

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

/// Hot region (HR, seed 000 section 3.2.1, with TrGen's constants): a
/// quarter of the packets go to the first eighth of the nodes, the others
/// to any node; never to the source. TrGen needs more than 8 nodes.
#[derive(Debug, Clone)]
pub struct HotRegion {
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

/// Hot spot (HS, seed 000 section 3.2.1, with TrGen's constant): each draw
/// picks node 0 with probability 0.02 and any node otherwise, again until
/// it is not the source.
#[derive(Debug, Clone)]
pub struct HotSpot {
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

/// Distribution (seed 000 section 3.2.1): each source sends to every other
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

/// TrGen's permutations (seed 000, section 3.2.1, Table 2): each source
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
    Complement,
    Reversal,
    Transpose,
    Butterfly,
    Shuffle,
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
}

impl Pattern for Permuted {
    fn destination(&mut self, src: u32, _rng: &mut dyn rand::RngCore) -> Option<u32> {
        let d = self.dest[src as usize];
        (d != src).then_some(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn uniform_never_self_and_covers_all() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(3);
        let mut u = Uniform { nodes: 5 };
        let mut seen = [0u32; 5];
        for _ in 0..5000 {
            let d = u.destination(2, &mut rng).unwrap();
            seen[d as usize] += 1;
        }
        assert_eq!(seen[2], 0);
        // Each of the 4 others gets 1250 +- a generous 5 sigma (~137).
        for (i, &n) in seen.iter().enumerate() {
            if i != 2 {
                assert!((1100..1400).contains(&n), "node {i}: {n}");
            }
        }
    }

    /// The permutation written out bit by bit on the binary text of the
    /// address, independently of the shifts and masks above.
    fn by_text(p: Permutation, src: u32, l: usize) -> u32 {
        let bits: Vec<char> = format!("{src:0l$b}").chars().rev().collect(); // bits[i] = s_i
        let d: Vec<char> = (0..l)
            .map(|i| match p {
                Permutation::Complement => {
                    if bits[i] == '1' {
                        '0'
                    } else {
                        '1'
                    }
                }
                Permutation::Reversal => bits[l - 1 - i],
                Permutation::Transpose => bits[(i + l / 2) % l],
                Permutation::Butterfly if i == 0 => bits[l - 1],
                Permutation::Butterfly if i == l - 1 => bits[0],
                Permutation::Butterfly => bits[i],
                Permutation::Shuffle => bits[(i + l - 1) % l],
                Permutation::Tornado => unreachable!(),
            })
            .collect();
        u32::from_str_radix(&d.iter().rev().collect::<String>(), 2).unwrap()
    }

    /// Fraction of `draws` destinations from `src` that satisfy `hit`.
    fn fraction(p: &mut dyn Pattern, src: u32, draws: u32, hit: impl Fn(u32) -> bool) -> f64 {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        let n = (0..draws)
            .filter(|_| {
                let d = p.destination(src, &mut rng).unwrap();
                assert_ne!(d, src);
                hit(d)
            })
            .count();
        n as f64 / f64::from(draws)
    }

    #[test]
    fn hot_region_sends_a_quarter_plus_its_share_to_the_region() {
        // 64 nodes, region 0..8. From node 40: 1/4 directly, and the
        // uniform 3/4 hits the region with probability 8/63.
        let want = 0.25 + 0.75 * 8.0 / 63.0;
        let got = fraction(&mut HotRegion { nodes: 64 }, 40, 40_000, |d| d < 8);
        assert!((got - want).abs() < 0.012, "{got} vs {want}");
        // From node 3, inside: 1/4 to the 7 other region nodes, plus 3/4 x 7/63.
        let want = 0.25 + 0.75 * 7.0 / 63.0;
        let got = fraction(&mut HotRegion { nodes: 64 }, 3, 40_000, |d| d < 8);
        assert!((got - want).abs() < 0.012, "{got} vs {want}");
    }

    #[test]
    fn hot_spot_favours_node_0() {
        // A draw is node 0 with probability 0.02 + 0.98/64, and is
        // repeated when it gives the source (probability 0.98/64).
        let want = (0.02 + 0.98 / 64.0) / (1.0 - 0.98 / 64.0);
        let got = fraction(&mut HotSpot { nodes: 64 }, 5, 100_000, |d| d == 0);
        assert!((got - want).abs() < 0.003, "{got} vs {want}");
    }

    #[test]
    fn semi_keeps_to_the_lower_half() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(2);
        let mut p = Semi { nodes: 64, nx: 8 };
        let mut seen = [0u32; 64];
        for _ in 0..31_000 {
            seen[p.destination(9, &mut rng).unwrap() as usize] += 1;
        }
        for (d, &k) in seen.iter().enumerate() {
            if d % 8 < 4 && d != 9 {
                // 31 destinations, 1000 each on average.
                assert!((850..1150).contains(&k), "node {d}: {k}");
            } else {
                assert_eq!(k, 0, "node {d}");
            }
        }
        assert_eq!(p.destination(12, &mut rng), None);
    }

    #[test]
    fn distribution_visits_every_other_node_in_turn() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(4);
        let mut p = Distribute::new(5, false, &mut rng);
        let seq: Vec<u32> = (0..8)
            .map(|_| p.destination(2, &mut rng).unwrap())
            .collect();
        assert_eq!(seq, [3, 4, 0, 1, 3, 4, 0, 1]);
        let mut p = Distribute::new(16, true, &mut rng);
        for s in 0..16 {
            let mut seq: Vec<u32> = (0..15)
                .map(|_| p.destination(s, &mut rng).unwrap())
                .collect();
            // In order after the random start, skipping the source.
            for w in seq.windows(2) {
                let step = if (w[0] + 1) % 16 == s { 2 } else { 1 };
                assert_eq!(w[1], (w[0] + step) % 16, "source {s}: {seq:?}");
            }
            seq.sort_unstable();
            assert_eq!(seq, (0..16).filter(|&d| d != s).collect::<Vec<_>>());
        }
    }

    #[test]
    fn seed_000_table_2_examples() {
        let s = 0b1101_1000;
        let n = 256;
        assert_eq!(Permutation::Complement.of(s, n, 16), 0b0010_0111);
        assert_eq!(Permutation::Reversal.of(s, n, 16), 0b0001_1011);
        assert_eq!(Permutation::Transpose.of(s, n, 16), 0b1000_1101);
        assert_eq!(Permutation::Butterfly.of(s, n, 16), 0b0101_1001);
        assert_eq!(Permutation::Shuffle.of(s, n, 16), 0b1011_0001);
        // 8x8 torus: <3,2> is node 3 + 2*8 = 19; <7,2> is node 23.
        assert_eq!(Permutation::Tornado.of(19, 64, 8), 23);
    }

    #[test]
    fn bit_permutations_match_their_definitions_bit_by_bit() {
        use Permutation::*;
        for l in 1..=10usize {
            let n = 1u32 << l;
            for p in [Complement, Reversal, Transpose, Butterfly, Shuffle] {
                let mut hit = vec![false; n as usize];
                for s in 0..n {
                    let d = p.of(s, n, n);
                    assert_eq!(d, by_text(p, s, l), "{p:?} of {s} with {l} bits");
                    hit[d as usize] = true;
                }
                assert!(
                    hit.iter().all(|&h| h),
                    "{p:?} with {l} bits is a permutation"
                );
            }
        }
    }

    #[test]
    fn fixed_points_send_nothing() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
        // Reversal of 4 bits keeps 0000, 0110, 1001, 1111.
        let mut p = Permuted::new(Permutation::Reversal, 16, 4);
        let silent: Vec<u32> = (0..16)
            .filter(|&s| p.destination(s, &mut rng).is_none())
            .collect();
        assert_eq!(silent, [0, 6, 9, 15]);
    }
}
