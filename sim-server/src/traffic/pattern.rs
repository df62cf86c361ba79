//! Spatial traffic patterns: the destination of each generated packet
//! (seed 000, section 3.2.1).

use rand::Rng;

/// Chooses destinations.
pub trait Pattern {
    /// Destination of a packet generated at `src` (never `src` itself).
    fn destination(&mut self, src: u32, rng: &mut dyn rand::RngCore) -> u32;
}

/// Uniform (UN): every other node is equally likely.
#[derive(Debug, Clone)]
pub struct Uniform {
    /// Number of nodes (at least 2).
    pub nodes: u32,
}

impl Pattern for Uniform {
    fn destination(&mut self, src: u32, rng: &mut dyn rand::RngCore) -> u32 {
        let d = rng.gen_range(0..self.nodes - 1);
        if d >= src {
            d + 1
        } else {
            d
        }
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
            let d = u.destination(2, &mut rng);
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
}
