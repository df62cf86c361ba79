//! Independent Bernoulli sources (seed 000, section 3.2.1): in every cycle
//! each node generates a packet with probability `load / plength`, so the
//! offered load is `load` phits/node/cycle. No trial is made while the
//! node still holds a packet that found its injection buffers full.
//!
//! Trials are drawn as geometric gaps between successes (the same
//! distribution as one coin per node per cycle), so the cost is per
//! generated packet, not per node and cycle.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use super::pattern::Pattern;
use super::{NodeState, TrafficSource};

/// Bernoulli packet generation at every node with a spatial pattern.
pub struct Bernoulli<P: Pattern> {
    /// Success probability of each per-cycle trial.
    p: f64,
    /// `ln(1 - p)`, for the geometric gaps.
    ln_q: f64,
    pattern: P,
    rng: Pcg64Mcg,
    /// Next successful trial per node.
    next: BinaryHeap<Reverse<(u64, u32)>>,
}

impl<P: Pattern> Bernoulli<P> {
    /// Sources at `nodes` nodes offering `load` phits/node/cycle in packets
    /// of `plength` phits, starting at cycle `start`, seeded by `seed`.
    pub fn new(nodes: u32, load: f64, plength: u32, pattern: P, seed: u64, start: u64) -> Self {
        let p = (load / f64::from(plength)).clamp(0.0, 1.0);
        let mut s = Bernoulli {
            p,
            ln_q: (1.0 - p).ln(),
            pattern,
            rng: Pcg64Mcg::seed_from_u64(seed),
            next: BinaryHeap::with_capacity(nodes as usize),
        };
        if p > 0.0 {
            for n in 0..nodes {
                let t = start + s.gap() - 1;
                s.next.push(Reverse((t, n)));
            }
        }
        s
    }

    /// Cycles until the next success, >= 1 (geometric with parameter p).
    fn gap(&mut self) -> u64 {
        if self.p >= 1.0 {
            return 1;
        }
        let u: f64 = 1.0 - self.rng.gen::<f64>(); // (0, 1]
        1 + (u.ln() / self.ln_q).floor() as u64
    }
}

impl<P: Pattern> TrafficSource for Bernoulli<P> {
    fn generate(&mut self, now: u64, nodes: &dyn NodeState, out: &mut Vec<(u32, u32)>) {
        while let Some(&Reverse((t, n))) = self.next.peek() {
            if t > now {
                break;
            }
            self.next.pop();
            // A blocked node makes no trial this cycle; trials are
            // memoryless, so the next success is a fresh gap away.
            if !nodes.blocked(n) {
                if let Some(dst) = self.pattern.destination(n, &mut self.rng) {
                    out.push((n, dst));
                }
            }
            let g = self.gap();
            self.next.push(Reverse((now + g, n)));
        }
    }

    fn next_event(&self, now: u64) -> Option<u64> {
        self.next.peek().map(|Reverse((t, _))| (*t).max(now))
    }
}

#[cfg(test)]
mod tests {
    use super::super::pattern::Uniform;
    use super::*;

    struct Free;
    impl NodeState for Free {
        fn blocked(&self, _: u32) -> bool {
            false
        }
    }

    #[test]
    fn rate_matches_probability() {
        // 16 nodes, p = 0.2/16 per cycle: 100k cycles give 20000 expected
        // packets, sd ~ 140; accept +-5 sd.
        let mut s = Bernoulli::new(16, 0.2, 16, Uniform { nodes: 16 }, 9, 0);
        let mut out = Vec::new();
        for t in 0..100_000 {
            s.generate(t, &Free, &mut out);
        }
        let n = out.len() as f64;
        assert!((n - 20_000.0).abs() < 700.0, "{n}");
    }

    #[test]
    fn full_load_generates_every_cycle() {
        let mut s = Bernoulli::new(4, 1.0, 1, Uniform { nodes: 4 }, 1, 0);
        let mut out = Vec::new();
        for t in 0..10 {
            s.generate(t, &Free, &mut out);
        }
        assert_eq!(out.len(), 40);
    }
}
