//! Timeout-based congestion detection (INSEE's perform_mov,
//! `timeout_upper_limit`): a router times the stay of one packet at a
//! time; when the count passes the limit the router is congested if that
//! packet is still there, and timing starts over.

use super::NONE;

/// Per router: the packet whose stay is being timed ([`NONE`]: none), the
/// cycles it has stayed, and whether the router is congested.
pub(crate) struct Congestion {
    /// Whether the mechanism is on (`timeout_upper_limit > 0`).
    pub(crate) timeouts: bool,
    pub(crate) to_packet: Vec<u32>,
    pub(crate) to_counter: Vec<u64>,
    pub(crate) congested: Vec<bool>,
}

impl Congestion {
    /// The detector of `routers` routers, off when `upper` is 0.
    pub(crate) fn new(routers: usize, upper: u64) -> Congestion {
        Congestion {
            timeouts: upper > 0,
            to_packet: vec![NONE; routers],
            to_counter: vec![0; routers],
            congested: vec![false; routers],
        }
    }

    /// One cycle of timing, with limit `upper` (cycles).
    pub(crate) fn time_stays(&mut self, upper: u64) {
        for r in 0..self.to_counter.len() {
            self.to_counter[r] += 1;
            if self.to_counter[r] > upper {
                self.congested[r] = self.to_packet[r] != NONE;
                self.to_counter[r] = 0;
                self.to_packet[r] = NONE;
            }
        }
    }

    /// An idle network skips `cycles` cycles with limit `upper`: no packet
    /// to time, so every router would reset to uncongested within `upper`
    /// cycles.
    pub(crate) fn skip_idle(&mut self, cycles: u64, upper: u64) {
        if cycles > upper {
            self.congested.fill(false);
        }
        self.to_packet.fill(NONE);
    }
    /// Whether router `r` is congested (always false without timeouts).
    pub(crate) fn is_congested(&self, r: usize) -> bool {
        self.congested[r]
    }

    /// Whether the congestion-control restrictions apply at router `r`:
    /// always without timeouts, only while congested with them.
    #[inline]
    pub(crate) fn cc_active(&self, r: usize) -> bool {
        !self.timeouts || self.congested[r]
    }

    /// Whether the timeout mechanism is on.
    #[inline]
    pub(crate) fn timeouts_on(&self) -> bool {
        self.timeouts
    }
}
