//! Output-port arbitration (`amode`, INSEE paper section 2.2.5): which of the
//! input queues requesting a free output VC (or the consumption port in
//! `cmode=single`) is granted it. Requesters are a bit set over the
//! router's local input indices.

use rand::Rng;

use super::members;
use crate::engine::{wrap, Part, NONE};
use crate::spec::Arbitration;

/// The first requester at or after `start`, cyclically.
#[inline]
fn first_from(requesters: u128, start: usize) -> usize {
    let after = requesters & (!0u128 << start);
    if after != 0 {
        after.trailing_zeros() as usize
    } else {
        requesters.trailing_zeros() as usize
    }
}

impl Part {
    /// Chooses the input granted output VC `o` of router `r`. With
    /// in-transit priority (`intransit_pr`, INSEE's arbitrate_direct), with
    /// that probability only in-transit requesters compete when there are
    /// any (with timeouts, only at congested routers).
    pub(crate) fn arbitrate(&mut self, r: usize, o: usize, requesters: u128) -> usize {
        let last = self.fab.outputs.out_ri[r * self.fab.shape.n_tr + o];
        let transit = requesters & ((1u128 << self.fab.shape.n_tr) - 1);
        let requesters = if self.fab.cfg.intransit_pr > 0.0
            && self.fab.congestion.cc_active(r)
            && transit != 0
            && transit != requesters
            && self.rng(r).gen::<f64>() < self.fab.cfg.intransit_pr
        {
            transit
        } else {
            requesters
        };
        self.choose(r, requesters, last)
    }

    /// Chooses the input granted the consumption port (`cmode=single`).
    pub(crate) fn arbitrate_consumption(&mut self, r: usize, requesters: u128) -> usize {
        let last = self.fab.outputs.cons_last(r);
        self.choose(r, requesters, last)
    }

    fn choose(&mut self, r: usize, requesters: u128, last: u32) -> usize {
        debug_assert!(requesters != 0);
        let start = if last == NONE {
            0
        } else {
            wrap(last as usize + 1, self.fab.shape.n_in)
        };
        let gi = |e: usize| r * self.fab.shape.n_in + e;
        match self.fab.cfg.amode {
            Arbitration::RoundRobin => first_from(requesters, start),
            Arbitration::Fifo => members(requesters)
                .min_by_key(|&e| self.fab.queues.in_tor[gi(e)])
                .unwrap_or(0),
            Arbitration::Longest => {
                // Highest occupancy; ties go to the first in round-robin order.
                let rotated = |e: usize| (e + self.fab.shape.n_in - start) % self.fab.shape.n_in;
                members(requesters)
                    .max_by_key(|&e| (self.occ(gi(e)), std::cmp::Reverse(rotated(e))))
                    .unwrap_or(0)
            }
            Arbitration::Random => {
                let k = self.draw(r, requesters.count_ones() as usize);
                members(requesters).nth(k).unwrap_or(0)
            }
            Arbitration::Age => members(requesters)
                .min_by_key(|&e| self.fab.packets[self.fab.queues.head(gi(e)) as usize].t_gen)
                .unwrap_or(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_wraps() {
        let req = 0b1001_0000u128 | 0b10;
        assert_eq!(first_from(req, 0), 1);
        assert_eq!(first_from(req, 2), 4);
        assert_eq!(first_from(req, 5), 7);
        assert_eq!(first_from(req, 8), 1);
        assert_eq!(members(req).collect::<Vec<_>>(), vec![1, 4, 7]);
    }
}
