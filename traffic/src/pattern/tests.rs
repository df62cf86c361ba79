//! Tests of `pattern`.

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
fn insee_paper_table_2_examples() {
    let s = 0b1101_1000;
    let n = 256;
    assert_eq!(Permutation::Complement.of(s, n, 16), 0b0010_0111);
    assert_eq!(Permutation::Reversal.of(s, n, 16), 0b0001_1011);
    assert_eq!(Permutation::Transpose.of(s, n, 16), 0b1000_1101);
    assert_eq!(Permutation::Butterfly.of(s, n, 16), 0b0101_1001);
    assert_eq!(Permutation::Shuffle.of(s, n, 16), 0b1011_0001);
    // 8x8 torus: <3,2> is node 3 + 2*8 = 19; <7,2> is node 23.
    assert_eq!(Permutation::Tornado.of(19, 64, 8), 23);
    // INSEE's code: 19 + (8 - 1) / 2 = 22; on 32 nodes (5 bits) its
    // transpose sends bit i to bit (i + 2) mod 5: 0b00001 -> 0b00100
    // and 0b10000 -> 0b00010, where the table's rotation gives 0b01000
    // and 0b00100.
    assert_eq!(Permutation::Tornado.of_insee(19, 64, 8), 22);
    assert_eq!(Permutation::Tornado.of_insee(63, 64, 8), 2);
    assert_eq!(Permutation::Transpose.of_insee(0b00001, 32, 8), 0b00100);
    assert_eq!(Permutation::Transpose.of_insee(0b10000, 32, 8), 0b00010);
    assert_eq!(Permutation::Transpose.of(0b00001, 32, 8), 0b01000);
    assert_eq!(Permutation::Transpose.of(0b10000, 32, 8), 0b00100);
    // With an even bit count both are the table's swap of halves.
    for s in 0..64 {
        assert_eq!(
            Permutation::Transpose.of_insee(s, 64, 8),
            Permutation::Transpose.of(s, 64, 8)
        );
    }
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

/// Minimal ring offset magnitude of b - a on a ring of n.
fn ring(a: i64, b: i64, n: i64) -> i64 {
    let d = (b - a).rem_euclid(n);
    d.min(n - d)
}

#[test]
fn local_offsets_follow_trgen_classes() {
    // Classes of the X offset: {0,1}, {2,3}, {4..7}, {8}, drawn with
    // 1/2, 1/4, 1/8, 1/8; the source itself (X and Y offsets 0, 1/36)
    // is drawn again, so the classes are 17/35, 9/35, 4.5/35, 4.5/35.
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(8);
    let mut l = Local { dims: vec![16, 16] };
    let src = 5 + 16 * 9;
    let mut class = [0u32; 4];
    let n = 40_000;
    for _ in 0..n {
        let d = l.destination(src, &mut rng).unwrap();
        assert_ne!(d, src);
        let dx = ring(5, i64::from(d % 16), 16);
        class[match dx {
            0 | 1 => 0,
            2 | 3 => 1,
            4..=7 => 2,
            _ => 3,
        }] += 1;
    }
    for (c, want) in class.iter().zip([17.0, 9.0, 4.5, 4.5]) {
        let f = f64::from(*c) / f64::from(n);
        assert!((f - want / 35.0).abs() < 0.012, "{class:?}");
    }
}

#[test]
fn destinations_by_distance_follow_the_weights() {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(4);
    // 8x8 torus: distance 1 with weight 1, 3 with weight 3.
    let mut b = ByDistance::new(&[8, 8], true, &[0.0, 1.0, 0.0, 3.0]);
    let src = 9u32; // (1, 1)
    let mut at = std::collections::HashMap::new();
    let n = 20_000;
    for _ in 0..n {
        let d = b.destination(src, &mut rng).unwrap();
        let dist = ring(1, i64::from(d % 8), 8) + ring(1, i64::from(d / 8), 8);
        *at.entry((dist, d)).or_insert(0u32) += 1;
    }
    let by_dist = |k: i64| {
        at.iter()
            .filter(|((d, _), _)| *d == k)
            .map(|(_, c)| *c)
            .sum::<u32>()
    };
    assert_eq!(by_dist(1) + by_dist(3), n);
    let f1 = f64::from(by_dist(1)) / f64::from(n);
    assert!((f1 - 0.25).abs() < 0.015, "{f1}");
    // Uniform within a distance: 4 nodes at 1 hop, 12 at 3 hops (4d
    // while d is under half the ring).
    let at1: Vec<u32> = at
        .iter()
        .filter(|((d, _), _)| *d == 1)
        .map(|(_, c)| *c)
        .collect();
    assert_eq!(at1.len(), 4);
    assert_eq!(at.iter().filter(|((d, _), _)| *d == 3).count(), 12);
    for c in at1 {
        assert!((1_000..1_500).contains(&c), "{c}");
    }
    // Mesh 4x4: from corner 0 the only node 6 hops away is 15; from
    // (1,1) no node is 6 hops away.
    let mut m = ByDistance::new(&[4, 4], false, &[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]);
    assert_eq!(m.destination(0, &mut rng), Some(15));
    assert_eq!(m.destination(5, &mut rng), None);
}

#[test]
fn distance_files_and_their_errors() {
    let dir = std::env::temp_dir().join(format!("fsin-dist-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("d.txt");
    std::fs::write(&f, "# pop\n2\n2\n5\n").unwrap();
    assert_eq!(
        read_distances(&f, false).unwrap(),
        [0.0, 0.0, 2.0, 0.0, 0.0, 1.0]
    );
    std::fs::write(&f, "1 0.5\n3 1.5\n").unwrap();
    assert_eq!(read_distances(&f, true).unwrap(), [0.0, 0.5, 0.0, 1.5]);
    for (text, hist, want) in [
        ("1 x\n", true, ":1: weight `x`"),
        ("0\n", false, ":1: distance `0`"),
        ("1 2 3\n", true, ":1: expected `distance weight`"),
        ("3 0\n", true, "no distance with a positive weight"),
    ] {
        std::fs::write(&f, text).unwrap();
        let e = read_distances(&f, hist).unwrap_err().to_string();
        assert!(e.contains(want), "{e} (wanted {want})");
    }
    let _ = std::fs::remove_dir_all(dir);
}
