//! The phases of a part on its input queues that reach beyond them: their
//! counts and their copies in the feeding outputs (by mail when another
//! part owns those), and packets dropped from them.

use super::{Mail, Part};
use crate::fabric::NONE;

// ----- Packets in and out of input queues, and their counts --------------
impl Part {
    /// Adds `delta` phits to the settled count of input `gi` and its copy
    /// (one of the two may be another part's: then by mail, as a delta).
    #[inline]
    pub(super) fn add_base(&mut self, gi: usize, delta: i32) {
        let feeder = self.fab.queues.inq(gi).feeder;
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
            let out = self.fab.outputs.out_mut(feeder as usize);
            out.down_base = out.down_base.wrapping_add_signed(delta);
            return;
        }
        let q = self.fab.queues.inq_mut(gi);
        q.base = q.base.wrapping_add_signed(delta);
        let base = q.base;
        if feeder != NONE {
            if self.owns_output(feeder as usize) {
                self.fab.outputs.out_mut(feeder as usize).down_base = base;
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
        let feeder = self.fab.queues.inq(gi).feeder;
        if feeder != NONE {
            if self.owns_output(feeder as usize) {
                self.fab.outputs.out_mut(feeder as usize).down_drain = from;
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
        let ninj = self.fab.shape.ninj;
        self.sources
            .extracted(r, j, ninj, self.fab.shape.plen - in_port);
        self.fab.queues.unmark_waiting(r, gi % self.fab.shape.n_in);
        self.fab.queues.pop(gi, self.fab.now);
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
        self.fab.queues.unmark_waiting(r, gi % self.fab.shape.n_in);
        if self.fab.congestion.timeouts && self.fab.congestion.to_packet[r] == id {
            self.fab.congestion.to_packet[r] = NONE;
        }
        self.fab.queues.pop(gi, self.fab.now);
        self.counters.dropped += 1;
        self.in_network -= 1;
        self.release(id);
    }
}
