//! The phases of a part on its output VCs: outputs taken, consumption and
//! delivery.

use super::{Delivered, Mail, Part};
use crate::fabric::{OutVc, CONSUME, NONE, NOT_STARTED};
use crate::router::arbitration;
use crate::spec::Consumption;

// ----- Output VCs taken, consumption and delivery ------------------------
impl Part {
    pub(super) fn reserve(&mut self, r: usize, e: usize, o: usize) {
        if e >= self.fab.shape.n_tr {
            self.sources.list_injection(r);
        }
        let gi = r * self.fab.shape.n_in + e;
        let go = r * self.fab.shape.n_tr + o;
        self.fab.queues.inq_mut(gi).aop = go as u32;
        self.router.in_bet[gi] = 0;
        self.fab.outputs.grant(go, e);
        self.fab.queues.unmark_waiting(r, e);
        let link = r * self.fab.shape.radix + o / self.fab.shape.nchan;
        let wormhole = self.fab.shape.wormhole;
        if wormhole {
            // A transfer in progress from now on; it stalls until the
            // link picks it (see advance_wormhole).
            self.set_start(go, self.fab.now);
        }
        let vc = o % self.fab.shape.nchan;
        self.links.take_vc(link, vc, self.fab.now, wormhole);
    }

    /// Sets the start of output VC `go`'s transfer, and its copies: in the
    /// queue it feeds, and in the output VC feeding the queue it drains.
    #[inline]
    pub(super) fn set_start(&mut self, go: usize, start: u64) {
        let OutVc { dst, sip, .. } = *self.fab.outputs.out(go);
        self.fab.outputs.out_mut(go).start = start;
        if self.owns_input(dst as usize) {
            self.fab.queues.inq_mut(dst as usize).in_start = start;
        } else {
            self.post(
                dst as usize / self.fab.shape.n_in,
                Mail::InStart { gi: dst, start },
            );
        }
        let src = go / self.fab.shape.n_tr * self.fab.shape.n_in + sip as usize;
        self.set_drain(src, start);
    }

    pub(super) fn grant_consumption(&mut self, r: usize, requesters: u128) {
        match self.fab.cfg.cmode {
            Consumption::Multiple => {
                let mut m = requesters;
                while m != 0 {
                    let e = m.trailing_zeros() as usize;
                    m &= m - 1;
                    self.start_consuming(r, e);
                }
            }
            Consumption::Single => {
                if self.fab.outputs.consumption_holder(r) == NONE {
                    let e = arbitration::arbitrate_consumption(
                        &self.fab,
                        &mut self.router.rngs[r],
                        r,
                        requesters,
                    );
                    self.fab.outputs.grant_consumption(r, e);
                    self.start_consuming(r, e);
                }
            }
        }
    }

    pub(super) fn start_consuming(&mut self, r: usize, e: usize) {
        let gi = r * self.fab.shape.n_in + e;
        self.fab.queues.inq_mut(gi).aop = CONSUME;
        self.router.in_bet[gi] = 0;
        self.fab.queues.inq_mut(gi).cons_sent = 0;
        self.set_drain(gi, self.fab.now);
        self.fab.queues.unmark_waiting(r, e);
        self.fab.outputs.start_consuming(gi);
    }

    /// Consuming input `gi` delivers one phit; returns whether that was the
    /// packet's last (it is delivered).
    pub(super) fn consume_phit(&mut self, gi: usize) -> bool {
        self.fab.queues.inq_mut(gi).cons_sent += 1;
        self.counters.phits_delivered += 1;
        if self.fab.queues.inq(gi).cons_sent == self.fab.shape.plen {
            self.add_base(gi, -(self.fab.shape.plen as i32));
            self.deliver(gi);
            true
        } else {
            false
        }
    }

    /// Inputs holding consumption deliver one phit each.
    pub(super) fn consume(&mut self) {
        let mut i = 0;
        while i < self.fab.outputs.consuming().len() {
            if self.consume_phit(self.fab.outputs.consuming()[i] as usize) {
                self.fab.outputs.stop_consuming_at(i);
            } else {
                i += 1;
            }
        }
    }

    pub(super) fn deliver(&mut self, gi: usize) {
        let id = self.fab.queues.head(gi);
        debug_assert!(
            crate::router::routing::arrived(&self.fab.queues.head_slot(gi).rr),
            "packet {id} delivered before its destination"
        );
        let p = self.fab.packets[id as usize];
        let r = gi / self.fab.shape.n_in;
        self.fab
            .outputs
            .end_consumption(r, gi % self.fab.shape.n_in);
        self.set_drain(gi, NOT_STARTED);
        self.fab.queues.pop(gi, self.fab.now);
        self.release(id);
        self.in_network -= 1;
        self.moved = true;
        let c = &mut self.counters;
        c.delivered += 1;
        // Latency is a difference of cycle stamps, as in FSIN and BookSim.
        c.latency.add(self.fab.now - p.t_gen);
        c.inj_latency.add(self.fab.now - p.t_inj);
        c.hops += u64::from(p.hops);
        if self.record_deliveries {
            self.delivered.push(Delivered {
                src: p.src,
                dst: p.dst,
                tag: p.tag,
                t_gen: p.t_gen,
                t_inj: p.t_inj,
                t_done: self.fab.now,
                hops: p.hops,
            });
        }
    }
}
