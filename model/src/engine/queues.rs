//! The phases of a part on its input queues: packets in and out of them,
//! their counts, and the requests of their head packets.

use super::{Mail, Part};
use crate::fabric::{wrap, Slot, NONE};
use crate::spec::Arbitration;

// ----- Packets in and out of input queues, and their counts --------------
impl Part {
    #[inline]
    pub(super) fn push(&mut self, gi: usize, slot: Slot) {
        let len = self.fab.queues.fifo_len[gi] as usize;
        let (start, slots) = self.fab.queues.ring(gi);
        debug_assert!(len < slots, "input queue {gi} over capacity");
        let at = wrap(self.fab.queues.fifo_head[gi] as usize + len, slots);
        self.fab.queues.fifo[start + at] = slot;
        self.fab.queues.fifo_len[gi] += 1;
        if len == 0 {
            self.fab.queues.heads[gi] = slot;
            self.mark_waiting(gi);
        }
    }

    #[inline]
    pub(super) fn pop(&mut self, gi: usize) {
        let (start, slots) = self.fab.queues.ring(gi);
        self.fab.queues.fifo_head[gi] =
            wrap(self.fab.queues.fifo_head[gi] as usize + 1, slots) as u16;
        self.fab.queues.fifo_len[gi] -= 1;
        self.fab.queues.inq[gi].aop = NONE;
        if self.fab.cfg.amode == Arbitration::Fifo {
            self.fab.queues.in_tor[gi] = 0;
        }
        // A packet leaves only after a granted request, which it makes no
        // sooner than its wake-up: the next head finds no wake-up pending.
        debug_assert!(
            self.fab.queues.in_wake[gi] <= self.fab.now,
            "input {gi} popped asleep"
        );
        if self.fab.queues.fifo_len[gi] > 0 {
            self.fab.queues.heads[gi] =
                self.fab.queues.fifo[start + self.fab.queues.fifo_head[gi] as usize];
            self.mark_waiting(gi);
        }
    }

    /// Notes that input `gi` has a head packet that holds no output.
    #[inline]
    pub(super) fn mark_waiting(&mut self, gi: usize) {
        let r = gi / self.fab.shape.n_in;
        let e = gi % self.fab.shape.n_in;
        self.fab.queues.waiting[r] |= 1u128 << e;
        self.fab.queues.req_routers.insert(r);
    }

    /// Adds `delta` phits to the settled count of input `gi` and its copy
    /// (one of the two may be another part's: then by mail, as a delta).
    #[inline]
    pub(super) fn add_base(&mut self, gi: usize, delta: i32) {
        let feeder = self.fab.queues.inq[gi].feeder;
        if !self.owns_input(gi) {
            // The header's router sends its tail's phits on: it owns the
            // feeder, whose copy tracks the count.
            self.post(
                gi / self.fab.shape.n_in,
                Mail::AddBase {
                    gi: gi as u32,
                    delta,
                },
            );
            let out = &mut self.fab.outputs.out[feeder as usize];
            out.down_base = out.down_base.wrapping_add_signed(delta);
            return;
        }
        let base = self.fab.queues.inq[gi].base.wrapping_add_signed(delta);
        self.fab.queues.inq[gi].base = base;
        if feeder != NONE {
            if self.owns_output(feeder as usize) {
                self.fab.outputs.out[feeder as usize].down_base = base;
            } else {
                self.post(
                    feeder as usize / self.fab.shape.n_tr,
                    Mail::AddDownBase { go: feeder, delta },
                );
            }
        }
    }

    /// Notes in the output VC feeding input `gi` (if any) the cycle from
    /// which `gi`'s head drains.
    #[inline]
    pub(super) fn set_drain(&mut self, gi: usize, from: u64) {
        let feeder = self.fab.queues.inq[gi].feeder;
        if feeder != NONE {
            if self.owns_output(feeder as usize) {
                self.fab.outputs.out[feeder as usize].down_drain = from;
            } else {
                self.post(
                    feeder as usize / self.fab.shape.n_tr,
                    Mail::DownDrain { go: feeder, from },
                );
            }
        }
    }

    /// Drops the head packet of injection input `gi` (`extract=1`).
    pub(crate) fn extract(&mut self, gi: usize) {
        let r = gi / self.fab.shape.n_in;
        let j = gi % self.fab.shape.n_in - self.fab.shape.n_tr;
        let id = self.fab.queues.head(gi);
        let in_port = self.occ(gi).min(self.fab.shape.plen);
        self.add_base(gi, -(in_port as i32));
        self.sources.qi_occ[r * self.fab.shape.ninj + j] -= self.fab.shape.plen - in_port;
        if self.sources.serial_cur[r] == j as u32 {
            self.sources.serial_cur[r] = NONE;
            self.sources.serial_next[r] = ((j + 1) % self.fab.shape.ninj) as u32;
        }
        self.fab.queues.waiting[r] &= !(1u128 << (gi % self.fab.shape.n_in));
        self.pop(gi);
        self.counters.dropped += 1;
        self.release(id);
        self.sources.list_injection(r);
    }

    /// Discards the (complete) head packet of transit input `gi`, which
    /// holds no output (the SpiNNaker router's timeout).
    pub(super) fn discard_transit(&mut self, gi: usize) {
        let r = gi / self.fab.shape.n_in;
        let id = self.fab.queues.head(gi);
        self.add_base(gi, -(self.fab.shape.plen as i32));
        self.fab.queues.waiting[r] &= !(1u128 << (gi % self.fab.shape.n_in));
        if self.fab.congestion.timeouts && self.fab.congestion.to_packet[r] == id {
            self.fab.congestion.to_packet[r] = NONE;
        }
        self.pop(gi);
        self.counters.dropped += 1;
        self.in_network -= 1;
        self.release(id);
    }
}
