//! Generators of topology files (`fsin topology --write FAMILY`, issue
//! 58): the families users ask for that INSEE has not, as [`Graph`]s to
//! write as edge lists ([`edge_list`]) and read back with `topo=file:`.
//!
//! - `dragonfly_A_H_P`: groups of `A` routers, each router with `H` global
//!   links and `P` nodes, `A H + 1` groups (every pair of groups joined by
//!   one global link), routers of a group fully connected (Kim, Dally,
//!   Scott and Abts, ISCA 2008). Global links are arranged consecutively
//!   (the "absolute" arrangement): group `G`'s global link `j` (router
//!   `j / H`, its port `j mod H`) leads to group `j` if `j < G`, else
//!   `j + 1`.
//! - `slimfly_Q_P`: the McKay-Miller-Siran graph of a prime power `Q = 4w
//!   + d` (`d` in -1, 0, 1) with `P` nodes per router (Besta and Hoefler,
//!   SC 2014): `2 Q^2` routers of network radix `(3Q - d) / 2`, diameter
//!   2, built over the finite field of `Q` elements ([`Field`]).
//! - `jellyfish_N_K_P`: `N` routers joined at random into a `K`-regular
//!   graph (seeded by `rseed`; Singla et al., NSDI 2012), `P` nodes each.
//! - `hyperx_S1[_S2[_S3]]_P`: routers on a grid whose rows along each
//!   dimension are complete graphs (Ahn et al., SC 2009), `P` nodes each.

use fsin_model::spec::{Graph, GraphLink};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

/// The families [`generate`] knows.
pub const FAMILIES: [&str; 4] = ["dragonfly", "slimfly", "jellyfish", "hyperx"];

/// Most routers a generator writes.
pub const MAX_ROUTERS: u64 = 1 << 20;

/// Why a family cannot be generated: what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct GenError(pub String);

/// A full-duplex link of one cycle.
fn link(a: u32, b: u32) -> GraphLink {
    GraphLink {
        a,
        b,
        latency_ab: 1,
        latency_ba: 1,
    }
}

/// `per` nodes on each of `routers` routers, in router order.
fn nodes_on(routers: u32, per: u32) -> Vec<u32> {
    (0..routers)
        .flat_map(|r| std::iter::repeat_n(r, per as usize))
        .collect()
}

/// The graph of `name` (`dragonfly_4_2_2`, ...; module docs), random
/// choices seeded with `seed`.
///
/// # Errors
/// [`GenError`] naming the family's form when `name` is not one, or when
/// it would have more than [`MAX_ROUTERS`] routers.
pub fn generate(name: &str, seed: u64) -> Result<Graph, GenError> {
    let mut parts = name.split('_');
    let family = parts.next().unwrap_or_default();
    let numbers: Result<Vec<u64>, _> = parts.map(str::parse::<u64>).collect();
    let expect = |form: &str| GenError(format!("`{name}`: expected {form}"));
    let numbers =
        numbers.map_err(|_| expect("a family and whole numbers, e.g. dragonfly_4_2_2"))?;
    match (family, numbers.as_slice()) {
        ("dragonfly", &[a, h, p]) if a >= 1 && h >= 1 && p >= 1 => dragonfly(a, h, p),
        ("dragonfly", _) => Err(expect("dragonfly_A_H_P with A, H, P >= 1")),
        ("slimfly", &[q, p]) if q >= 3 && p >= 1 => {
            // The size first: the field is tabulated, q entries.
            let routers = fits(2 * q.min(MAX_ROUTERS) * q.min(MAX_ROUTERS), p)?;
            let field = Field::of(q).ok_or_else(|| expect("slimfly_Q_P with Q a prime power >= 3"))?;
            Ok(slimfly(&field, routers, p))
        }
        ("slimfly", _) => Err(expect("slimfly_Q_P with Q a prime power >= 3 and P >= 1")),
        ("jellyfish", &[n, k, p]) if k >= 2 && k < n && (n * k).is_multiple_of(2) && p >= 1 => {
            jellyfish(n, k, p, seed)
        }
        ("jellyfish", _) => Err(expect("jellyfish_N_K_P with 2 <= K < N, N K even, P >= 1")),
        ("hyperx", [sizes @ .., p]) if (1..=3).contains(&sizes.len()) && sizes.iter().all(|&s| s >= 2) && *p >= 1 => {
            hyperx(sizes, *p)
        }
        ("hyperx", _) => Err(expect("hyperx_S1[_S2[_S3]]_P with sizes >= 2 and P >= 1")),
        _ => Err(expect(
            "dragonfly_A_H_P, slimfly_Q_P, jellyfish_N_K_P or hyperx_S1[_S2[_S3]]_P (or a built-in topology)",
        )),
    }
}

/// Checks a router count against [`MAX_ROUTERS`] (and nodes per router).
fn fits(routers: u64, per: u64) -> Result<u32, GenError> {
    if routers > MAX_ROUTERS || routers.saturating_mul(per) > MAX_ROUTERS {
        return Err(GenError(format!(
            "{routers} routers of {per} nodes: more than {MAX_ROUTERS}"
        )));
    }
    Ok(routers as u32)
}

fn dragonfly(a: u64, h: u64, p: u64) -> Result<Graph, GenError> {
    let groups = a * h + 1;
    let routers = fits(a.saturating_mul(groups), p)?;
    let (a, h, groups) = (a as u32, h as u32, groups as u32);
    let mut links = Vec::new();
    for g in 0..groups {
        let base = g * a;
        for i in 0..a {
            for j in i + 1..a {
                links.push(link(base + i, base + j));
            }
        }
    }
    // Global link j of group g leads to group j (j < g) or j + 1; each pair
    // once, from the lower group.
    for g in 0..groups {
        for j in 0..a * h {
            let to = if j < g { j } else { j + 1 };
            if to > g {
                let back = g; // g < to: its index at group `to` is g itself
                links.push(link(g * a + j / h, to * a + back / h));
            }
        }
    }
    Ok(Graph {
        routers,
        node_router: nodes_on(routers, p as u32),
        links,
    })
}

/// The finite field of `q = p^k` elements (`p` prime), small enough to
/// tabulate: element `e` is the polynomial over the integers mod `p`
/// whose coefficients are `e`'s base-`p` digits (lowest first), taken
/// modulo a primitive polynomial of degree `k` (the first in base-`p`
/// order; for `k = 1` the integers mod `p`). Products go through
/// logarithms to the base of [`Field::generator`].
#[derive(Debug, Clone)]
pub struct Field {
    p: u64,
    /// The degree: `q = p^k`.
    k: u32,
    q: u64,
    /// `exp[i]` = generator^i, `i` in `0..q - 1`.
    exp: Vec<u64>,
    /// `log[e]` for `e` in `1..q` (`log[0]` unused).
    log: Vec<u64>,
}

impl Field {
    /// The field of `q` elements, if `q` is a prime power (`q >= 2`).
    pub fn of(q: u64) -> Option<Field> {
        if q < 2 {
            return None;
        }
        let p = (2..).find(|d| d * d > q || q.is_multiple_of(*d))?;
        let p = if p * p > q { q } else { p };
        let mut k = 0;
        let mut rest = q;
        while rest.is_multiple_of(p) {
            rest /= p;
            k += 1;
        }
        if rest != 1 {
            return None;
        }
        // The polynomial x^k + sum c_i x^i whose lower coefficients are
        // the digits of `low`; x (element p, or for k = 1 a candidate g)
        // generates the field iff its powers reach all q - 1 units.
        let powers = |low: u64, g: u64| -> Option<Vec<u64>> {
            let mut exp = Vec::with_capacity(q as usize - 1);
            let mut e = 1u64;
            for _ in 0..q - 1 {
                if e == 1 && !exp.is_empty() {
                    return None;
                }
                exp.push(e);
                e = if k == 1 {
                    e * g % p
                } else {
                    times_x(e, low, p, k)
                };
            }
            (e == 1).then_some(exp)
        };
        let exp = if k == 1 {
            (1..q).find_map(|g| powers(0, g))?
        } else {
            (0..q).find_map(|low| powers(low, 0))?
        };
        let mut log = vec![0; q as usize];
        for (i, &e) in exp.iter().enumerate() {
            log[e as usize] = i as u64;
        }
        Some(Field { p, k, q, exp, log })
    }

    /// The number of elements.
    pub fn size(&self) -> u64 {
        self.q
    }

    /// A primitive element: every unit is a power of it.
    pub fn generator(&self) -> u64 {
        self.exp.get(1).copied().unwrap_or(1)
    }

    /// `generator^i`.
    pub fn pow(&self, i: u64) -> u64 {
        self.exp[(i % (self.q - 1)) as usize]
    }

    /// `a + b`: digit by digit mod `p`.
    pub fn add(&self, a: u64, b: u64) -> u64 {
        self.digits(a, b, |x, y| (x + y) % self.p)
    }

    /// `a - b`.
    pub fn sub(&self, a: u64, b: u64) -> u64 {
        self.digits(a, b, |x, y| (x + self.p - y) % self.p)
    }

    /// `a b`.
    pub fn mul(&self, a: u64, b: u64) -> u64 {
        if a == 0 || b == 0 {
            return 0;
        }
        self.pow(self.log[a as usize] + self.log[b as usize])
    }

    fn digits(&self, mut a: u64, mut b: u64, f: impl Fn(u64, u64) -> u64) -> u64 {
        let (mut out, mut place) = (0, 1);
        for _ in 0..self.k {
            out += f(a % self.p, b % self.p) * place;
            a /= self.p;
            b /= self.p;
            place *= self.p;
        }
        out
    }
}

/// `e x` modulo `x^k + low(x)` (`low`'s base-`p` digits its coefficients),
/// over the integers mod `p`: the digits shift up one place and the one
/// that leaves, times `-low`, is added back.
fn times_x(e: u64, low: u64, p: u64, k: u32) -> u64 {
    let top = e / p.pow(k - 1);
    let shifted = (e % p.pow(k - 1)) * p;
    let (mut out, mut place, mut s, mut l) = (0, 1, shifted, low);
    for _ in 0..k {
        let digit = (s % p + (p - l % p) * top) % p;
        out += digit * place;
        s /= p;
        l /= p;
        place *= p;
    }
    out
}

/// The Slim Fly over field `f`: its `routers` (`2 q^2`, checked by
/// [`fits`]) with `p` nodes each.
fn slimfly(f: &Field, routers: u32, p: u64) -> Graph {
    let q = f.size();
    // q = 4w + d with d in -1, 0, 1.
    let delta: i64 = match q % 4 {
        1 => 1,
        3 => -1,
        _ => 0,
    };
    // The generator sets of Besta and Hoefler's construction, with xi a
    // primitive element: X holds xi^0, xi^2, ..., xi^(q-3) (d = 1);
    // xi^0, xi^2, ..., xi^(2w-2) and xi^(2w-1), xi^(2w+1), ..., xi^(4w-3)
    // (d = -1); xi^0, xi^2, ..., xi^(q-2) (d = 0); X' is xi X. Both are
    // closed under negation, so the local links are undirected.
    let w = ((q as i64 - delta) / 4) as u64;
    let x: Vec<u64> = match delta {
        1 => (0..2 * w).map(|k| f.pow(2 * k)).collect(),
        -1 => (0..w)
            .map(|k| f.pow(2 * k))
            .chain((w - 1..2 * w - 1).map(|k| f.pow(2 * k + 1)))
            .collect(),
        _ => (0..q / 2).map(|k| f.pow(2 * k)).collect(),
    };
    let mut in_x = vec![false; q as usize];
    let mut in_x2 = vec![false; q as usize];
    for &v in &x {
        in_x[v as usize] = true;
        in_x2[f.mul(v, f.generator()) as usize] = true;
    }
    // Router (s, a, b): s in {0, 1}, a and b field elements; id s q^2 + a q + b.
    let id = |s: u64, a: u64, b: u64| (s * q * q + a * q + b) as u32;
    let mut links = Vec::new();
    for a in 0..q {
        for b in 0..q {
            for c in b + 1..q {
                let diff = f.sub(c, b) as usize;
                if in_x[diff] {
                    links.push(link(id(0, a, b), id(0, a, c)));
                }
                if in_x2[diff] {
                    links.push(link(id(1, a, b), id(1, a, c)));
                }
            }
        }
    }
    // (0, x, y) ~ (1, m, c) iff y = m x + c.
    for xx in 0..q {
        for y in 0..q {
            for m in 0..q {
                let c = f.sub(y, f.mul(m, xx));
                links.push(link(id(0, xx, y), id(1, m, c)));
            }
        }
    }
    Graph {
        routers,
        node_router: nodes_on(routers, p as u32),
        links,
    }
}

fn jellyfish(n: u64, k: u64, p: u64, seed: u64) -> Result<Graph, GenError> {
    use rand::Rng;
    use std::collections::HashSet;
    let routers = fits(n, p)?;
    let mut rng = Pcg64Mcg::seed_from_u64(seed ^ 0x6a65_6c6c_7966_6973);
    let key = |a: u32, b: u32| (a.min(b), a.max(b));
    let mut linked: HashSet<(u32, u32)> = HashSet::new();
    let mut free = vec![k as u32; routers as usize];
    // Singla et al.'s construction: join random pairs of routers with free
    // ports that are not yet linked, while such pairs exist.
    loop {
        let mut open: Vec<u32> = (0..routers).filter(|&r| free[r as usize] > 0).collect();
        open.shuffle(&mut rng);
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        for (i, &a) in open.iter().enumerate() {
            for &b in &open[i + 1..] {
                if !linked.contains(&key(a, b)) {
                    pairs.push((a, b));
                }
            }
            if pairs.len() > 64 {
                break;
            }
        }
        let Some(&(a, b)) = pairs.get(rng.gen_range(0..pairs.len().max(1))) else {
            break;
        };
        linked.insert(key(a, b));
        free[a as usize] -= 1;
        free[b as usize] -= 1;
    }
    // Then a router with two free ports takes the place of a random link
    // x-y it is on neither end of nor next to: x-r and r-y instead.
    for r in 0..routers {
        while free[r as usize] >= 2 {
            let mut all: Vec<(u32, u32)> = linked.iter().copied().collect();
            all.sort_unstable();
            all.shuffle(&mut rng);
            let Some(&(x, y)) = all.iter().find(|&&(x, y)| {
                x != r && y != r && !linked.contains(&key(r, x)) && !linked.contains(&key(r, y))
            }) else {
                break;
            };
            linked.remove(&(x, y));
            linked.insert(key(r, x));
            linked.insert(key(r, y));
            free[r as usize] -= 2;
        }
    }
    // Two routers left with one free port each (already linked to each
    // other): they take the place of a random link x-y, r1-x and r2-y.
    let singles: Vec<u32> = (0..routers).filter(|&r| free[r as usize] == 1).collect();
    for pair in singles.chunks_exact(2) {
        let (r1, r2) = (pair[0], pair[1]);
        let mut all: Vec<(u32, u32)> = linked.iter().copied().collect();
        all.sort_unstable();
        all.shuffle(&mut rng);
        let fits_swap = |x: u32, y: u32| {
            ![r1, r2].contains(&x)
                && ![r1, r2].contains(&y)
                && !linked.contains(&key(r1, x))
                && !linked.contains(&key(r2, y))
        };
        let swap = all.iter().find_map(|&(x, y)| {
            if fits_swap(x, y) {
                Some((x, y, x, y))
            } else if fits_swap(y, x) {
                Some((x, y, y, x))
            } else {
                None
            }
        });
        if let Some((x, y, to1, to2)) = swap {
            linked.remove(&(x, y));
            linked.insert(key(r1, to1));
            linked.insert(key(r2, to2));
            free[r1 as usize] = 0;
            free[r2 as usize] = 0;
        }
    }
    let mut links: Vec<GraphLink> = linked.into_iter().map(|(a, b)| link(a, b)).collect();
    links.sort_unstable_by_key(|l| (l.a, l.b));
    let g = Graph {
        routers,
        node_router: nodes_on(routers, p as u32),
        links,
    };
    if g.parts().len() != 1 {
        return Err(GenError(format!(
            "jellyfish_{n}_{k}_{p}: the random graph of seed {seed} is not connected; try another rseed"
        )));
    }
    Ok(g)
}

fn hyperx(sizes: &[u64], p: u64) -> Result<Graph, GenError> {
    let total = sizes.iter().try_fold(1u64, |a, &s| a.checked_mul(s));
    let routers = fits(total.unwrap_or(u64::MAX), p)?;
    let mut links = Vec::new();
    let mut stride = 1u64;
    for &s in sizes {
        for r in 0..u64::from(routers) {
            let coord = r / stride % s;
            for other in coord + 1..s {
                links.push(link(r as u32, (r + (other - coord) * stride) as u32));
            }
        }
        stride *= s;
    }
    Ok(Graph {
        routers,
        node_router: nodes_on(routers, p as u32),
        links,
    })
}

/// `g` as an edge list `topo=file:` reads back: a comment `header`, the
/// links (`A B`, or `A B LATENCY` where it is not 1 both ways; a link of
/// two latencies is written as its slower one) and, unless the graph is
/// direct, a `node N R` line per node.
pub fn edge_list(g: &Graph, header: &str) -> String {
    let mut out = String::new();
    for line in header.lines() {
        out.push_str(&format!("# {line}\n"));
    }
    for l in &g.links {
        let lat = l.latency_ab.max(l.latency_ba);
        if lat == 1 {
            out.push_str(&format!("{} {}\n", l.a, l.b));
        } else {
            out.push_str(&format!("{} {} {lat}\n", l.a, l.b));
        }
    }
    if !g.is_direct() {
        for (n, r) in g.node_router.iter().enumerate() {
            out.push_str(&format!("node {n} {r}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Router hops between the farthest routers with nodes (the graph's
    /// diameter less its node links).
    fn diameter(g: &Graph) -> u32 {
        g.diameter() - if g.is_direct() { 0 } else { 2 }
    }

    fn degrees(g: &Graph) -> Vec<usize> {
        (0..g.routers).map(|r| g.degree(r)).collect()
    }

    /// A balanced dragonfly (Kim et al.): a = 2h, g = a h + 1 groups; a
    /// router has a - 1 local and h global links; one global link per
    /// pair of groups; diameter 3 (local, global, local).
    #[test]
    fn a_dragonfly_has_one_global_link_per_pair_of_groups() {
        let g = generate("dragonfly_4_2_2", 0).unwrap();
        let groups = 4 * 2 + 1;
        assert_eq!(g.routers, 4 * groups);
        assert_eq!(g.node_router.len(), 2 * 4 * groups as usize);
        assert!(degrees(&g).iter().all(|&d| d == 3 + 2), "{:?}", degrees(&g));
        let mut pairs = std::collections::HashSet::new();
        for l in &g.links {
            let (ga, gb) = (l.a / 4, l.b / 4);
            if ga != gb {
                assert!(
                    pairs.insert((ga.min(gb), ga.max(gb))),
                    "two links {ga}-{gb}"
                );
            }
        }
        assert_eq!(pairs.len(), (groups * (groups - 1) / 2) as usize);
        assert_eq!(diameter(&g), 3);
    }

    /// Slim Fly of q = 5 (d = 1): 50 routers of radix (3 q - d) / 2 = 7,
    /// diameter 2 (the Hoffman-Singleton graph); q = 7 (d = -1): 98
    /// routers of radix 11; the prime powers q = 4 and 8 (d = 0): 32 and
    /// 128 routers of radix 6 and 12; q = 9 (d = 1): 162 of radix 13;
    /// q = 27 (d = -1): 1,458 of radix 41; all of diameter 2.
    #[test]
    fn slim_flies_have_diameter_two() {
        for (q, routers, radix) in [
            (5, 50, 7),
            (7, 98, 11),
            (4, 32, 6),
            (8, 128, 12),
            (9, 162, 13),
            (27, 1458, 41),
        ] {
            let g = generate(&format!("slimfly_{q}_1"), 0).unwrap();
            assert_eq!(g.routers, routers);
            assert!(
                degrees(&g).iter().all(|&d| d == radix),
                "q {q}: {:?}",
                degrees(&g)
            );
            assert_eq!(diameter(&g), 2, "q {q}");
        }
        for q in ["6", "12", "1000000000"] {
            assert!(generate(&format!("slimfly_{q}_1"), 0)
                .unwrap_err()
                .to_string()
                .contains(if q.len() > 2 {
                    "more than"
                } else {
                    "prime power"
                }));
        }
    }

    /// Every port used (at worst one free port left on two routers when no
    /// link can be swapped for them).
    #[test]
    fn a_jellyfish_is_regular_simple_connected_and_seeded() {
        let g = generate("jellyfish_40_5_2", 7).unwrap();
        let short: Vec<usize> = degrees(&g).into_iter().filter(|&d| d != 5).collect();
        assert!(short.is_empty(), "{short:?}");
        let g1000 = generate("jellyfish_1000_8_1", 1).unwrap();
        assert!(degrees(&g1000).iter().filter(|&&d| d != 8).count() <= 1);
        assert_eq!(g.parts().len(), 1);
        let mut seen = std::collections::HashSet::new();
        assert!(g
            .links
            .iter()
            .all(|l| l.a != l.b && seen.insert((l.a, l.b))));
        assert_eq!(generate("jellyfish_40_5_2", 7).unwrap(), g);
        assert_ne!(generate("jellyfish_40_5_2", 8).unwrap(), g);
    }

    /// HyperX 4 x 3: each router linked to the 3 others of its row and
    /// the 2 others of its column; diameter 2.
    #[test]
    fn a_hyperx_is_a_product_of_complete_graphs() {
        let g = generate("hyperx_4_3_1", 0).unwrap();
        assert_eq!(g.routers, 12);
        assert!(degrees(&g).iter().all(|&d| d == 3 + 2));
        assert_eq!(g.links.len(), 3 * 6 + 4 * 3);
        assert_eq!(diameter(&g), 2);
    }

    #[test]
    fn an_edge_list_reads_back() {
        for name in ["dragonfly_2_1_1", "hyperx_3_3_2"] {
            let g = generate(name, 0).unwrap();
            let text = edge_list(&g, name);
            let again = crate::topology_file::parse(&text, "g.edges", 126).unwrap();
            assert_eq!(again, g, "{text}");
        }
        assert!(generate("torus_4", 0).is_err());
        assert!(generate("dragonfly_4_2", 0)
            .unwrap_err()
            .to_string()
            .contains("dragonfly_A_H_P"));
    }

    /// The field of 9 elements (digits base 3): every unit a power of the
    /// generator, addition digit by digit, and multiplication distributing
    /// over addition and with inverses, checked over all pairs; the field
    /// of 8 has characteristic 2 (a + a = 0); 6 and 1 are not fields.
    #[test]
    fn finite_fields_of_prime_powers() {
        let f = Field::of(9).unwrap();
        let mut units: Vec<u64> = (0..8).map(|i| f.pow(i)).collect();
        units.sort_unstable();
        assert_eq!(units, (1..9).collect::<Vec<_>>());
        // (2 + x) + (1 + x) = 2x: digits (0, 2), element 6.
        assert_eq!(f.add(5, 4), 6);
        for a in 0..9 {
            assert_eq!(f.sub(f.add(a, 4), 4), a);
            if a > 0 {
                assert!((1..9).any(|b| f.mul(a, b) == 1), "{a} has no inverse");
            }
            for b in 0..9 {
                for c in 0..9 {
                    assert_eq!(f.mul(a, f.add(b, c)), f.add(f.mul(a, b), f.mul(a, c)));
                }
            }
        }
        let g = Field::of(8).unwrap();
        assert!((0..8).all(|a| g.add(a, a) == 0));
        assert_eq!(Field::of(7).unwrap().generator(), 3);
        assert!(Field::of(6).is_none());
        assert!(Field::of(1).is_none());
    }
}
