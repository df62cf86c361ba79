//! Link faults (`faults=N`); the network routes around them by the
//! up*/down* tables of [`super::tables`] over the surviving links.
//!
//! Faults: `N` full-duplex links between routers fail, drawn uniformly
//! with the run's seed (in trees, among links between switches: a node's
//! only link is its NIC). A fault set that leaves some compute node unable
//! to reach another is refused, naming the failed links and the pair.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

/// Picks `count` of the `candidates` links (`(router, port)` of one end,
/// with the other end) at random with `seed`.
pub fn pick(
    candidates: &[(u32, usize, u32, usize)],
    count: usize,
    seed: u64,
) -> Vec<(u32, usize, u32, usize)> {
    let mut rng = Pcg64Mcg::seed_from_u64(seed ^ 0x6661_756c_7473);
    let mut all = candidates.to_vec();
    all.shuffle(&mut rng);
    all.truncate(count);
    all.sort_unstable();
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_are_seeded_and_distinct() {
        let links: Vec<_> = (0..20u32).map(|i| (i, 0, i + 1, 1)).collect();
        let a = pick(&links, 5, 7);
        assert_eq!(a, pick(&links, 5, 7));
        assert_ne!(a, pick(&links, 5, 8));
        let mut d = a.clone();
        d.dedup();
        assert_eq!(d.len(), 5);
    }
}
