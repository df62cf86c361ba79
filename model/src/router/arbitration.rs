//! Output-port arbitration (`amode`, INSEE paper section 2.2.5): which of the
//! input queues requesting a free output VC (or the consumption port in
//! `cmode=single`) is granted it. Requesters are a bit set over the
//! router's local input indices.

use rand::Rng;
use rand_pcg::Pcg64Mcg;

use super::members;
use crate::fabric::{wrap, Fabric, NONE};
use crate::spec::Arbitration;

/// The first member of `requesters` at or after `start`, cyclically.
#[inline]
fn first_from(requesters: u128, start: usize) -> usize {
    let after = requesters & (!0u128 << start);
    if after != 0 {
        after.trailing_zeros() as usize
    } else {
        requesters.trailing_zeros() as usize
    }
}

/// The input (local index) that router `r` grants its free output VC `o`
/// among `requesters` (a bit set, not empty): with in-transit priority
/// (`intransit_pr`, while the router's congestion control is active) the
/// transit inputs first, with that probability; then by `amode`. Draws
/// come from `rng`, router `r`'s own random stream.
pub(crate) fn arbitrate(
    fab: &Fabric,
    rng: &mut Pcg64Mcg,
    r: usize,
    o: usize,
    requesters: u128,
) -> usize {
    let last = fab.outputs.last_granted(r * fab.shape.n_tr + o);
    let transit = requesters & ((1u128 << fab.shape.n_tr) - 1);
    let requesters = if fab.cfg.intransit_pr > 0.0
        && fab.congestion.cc_active(r)
        && transit != 0
        && transit != requesters
        && rng.gen::<f64>() < fab.cfg.intransit_pr
    {
        transit
    } else {
        requesters
    };
    choose(fab, rng, r, requesters, last)
}

/// The input of router `r` granted its consumption port (`cmode=single`)
/// among `requesters`, by `amode`.
pub(crate) fn arbitrate_consumption(
    fab: &Fabric,
    rng: &mut Pcg64Mcg,
    r: usize,
    requesters: u128,
) -> usize {
    choose(fab, rng, r, requesters, fab.outputs.cons_last(r))
}

/// One of `requesters` by `amode`, after `last` (the input granted last,
/// or [`NONE`]) in round-robin order.
fn choose(fab: &Fabric, rng: &mut Pcg64Mcg, r: usize, requesters: u128, last: u32) -> usize {
    debug_assert!(requesters != 0);
    let n_in = fab.shape.n_in;
    let start = if last == NONE {
        0
    } else {
        wrap(last as usize + 1, n_in)
    };
    let gi = |e: usize| r * n_in + e;
    match fab.cfg.amode {
        Arbitration::RoundRobin => first_from(requesters, start),
        Arbitration::Fifo => members(requesters)
            .min_by_key(|&e| fab.queues.requesting_since(gi(e)))
            .unwrap_or(0),
        Arbitration::Longest => {
            // Highest occupancy; ties go to the first in round-robin order.
            let rotated = |e: usize| (e + n_in - start) % n_in;
            members(requesters)
                .max_by_key(|&e| (fab.occ(gi(e)), std::cmp::Reverse(rotated(e))))
                .unwrap_or(0)
        }
        Arbitration::Random => {
            let k = rng.gen_range(0..requesters.count_ones() as usize);
            members(requesters).nth(k).unwrap_or(0)
        }
        Arbitration::Age => members(requesters)
            .min_by_key(|&e| fab.packets[fab.queues.head(gi(e)) as usize].t_gen)
            .unwrap_or(0),
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
