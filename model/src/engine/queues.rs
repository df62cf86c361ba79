//! Input queues (index `router * n_in + e`): their occupancy state, the
//! rings of packets they hold, and the requests of their head packets
//! (which inputs wait for an output, which sleep until when).

use super::{
    ring_slots, wrap, ActiveSet, InQueue, Mail, Part, Record, Slot, Wheel, NONE, NOT_STARTED,
};
use crate::spec::Arbitration;

/// The input queues of a part's routers and their requests.
pub(crate) struct Queues {
    /// What [`super::Fabric::occ`] reads of each input queue, kept together:
    /// a request reads it for a queue of the next router.
    pub(crate) inq: Vec<InQueue>,
    pub(crate) fifo: Vec<Slot>,
    /// The head slot of every non-empty queue, a copy of its place in
    /// `fifo`: requests read it every cycle a head waits, and the copies
    /// of a router's queues share a few cache lines.
    pub(crate) heads: Vec<Slot>,
    pub(crate) fifo_head: Vec<u16>,
    pub(crate) fifo_len: Vec<u16>,
    /// Where each queue's ring of slots starts in `fifo`, and (one past
    /// the last queue) where the last ends: a queue's ring holds
    /// `fifo_start[gi + 1] - fifo_start[gi]` slots ([`ring_slots`]).
    pub(crate) fifo_start: Vec<usize>,
    /// Cycle the head packet first became eligible to request, kept only
    /// for FIFO arbitration (`amode=fifo`), which alone reads it.
    pub(crate) in_tor: Vec<u64>,
    /// Cycle before which the head packet cannot be granted, so its input
    /// skips requesting (see `RequestPolicy::retry_in`).
    pub(crate) in_wake: Vec<u64>,
    /// Inputs asleep until `in_wake`, out of `waiting` meanwhile: bucket
    /// `t % len` holds those to wake up in cycle `t` (or to put back to
    /// sleep, for a wake-up beyond the wheel's horizon).
    pub(crate) wake_wheel: Wheel<Vec<u32>>,
    /// Whether blocked requests sleep until they could succeed.
    pub(crate) sleep_blocked: bool,
    /// SpiNNaker router (`hol`): per router, the input whose head packet
    /// holds the routing engine ([`NONE`]: free) and the one served last.
    pub(crate) hol_cur: Vec<u32>,
    pub(crate) hol_last: Vec<u32>,
    /// Cycle the holder took the engine.
    pub(crate) hol_since: Vec<u64>,
    /// Per router, the inputs whose head packet holds no output (bit per
    /// local input).
    pub(crate) waiting: Vec<u128>,
    /// Routers with a nonzero `waiting` mask.
    pub(crate) req_routers: ActiveSet,
    /// Scratch: requesting inputs per output (bit per local input).
    pub(crate) req_by_out: Vec<u128>,
}

impl Queues {
    /// Empty queues of `routers` routers with `n_in` inputs, the first
    /// `n_tr` of them transit queues, of `tql` packets (injection queues
    /// also hold `iql`), for packets of `plen` phits; `hol`: the SpiNNaker
    /// router's engine.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        routers: usize,
        n_in: usize,
        n_tr: usize,
        tql: u32,
        iql: u32,
        plen: u32,
        hol: bool,
        sleep_blocked: bool,
    ) -> Queues {
        let fifo_start: Vec<usize> = std::iter::once(0)
            .chain((0..routers * n_in).scan(0, |end, gi| {
                *end += ring_slots(tql, iql, gi % n_in < n_tr);
                Some(*end)
            }))
            .collect();
        let empty = Slot {
            pkt: NONE,
            rr: Record::default(),
        };
        let hol_routers = if hol { routers } else { 0 };
        Queues {
            inq: vec![
                InQueue {
                    base: 0,
                    feeder: NONE,
                    in_start: NOT_STARTED,
                    aop: NONE,
                    cons_sent: 0,
                };
                routers * n_in
            ],
            fifo: vec![empty; fifo_start[routers * n_in]],
            heads: vec![empty; routers * n_in],
            fifo_head: vec![0; routers * n_in],
            fifo_len: vec![0; routers * n_in],
            fifo_start,
            in_tor: vec![0; routers * n_in],
            in_wake: vec![0; routers * n_in],
            wake_wheel: Wheel::new(2 * plen as usize - 1, Vec::new()),
            sleep_blocked,
            hol_cur: vec![NONE; hol_routers],
            hol_last: vec![NONE; hol_routers],
            hol_since: vec![0; hol_routers],
            waiting: vec![0; routers],
            req_routers: ActiveSet::new(routers),
            req_by_out: vec![0; n_tr + 1],
        }
    }
    /// The head slot of non-empty input queue `gi`.
    #[inline]
    pub(crate) fn head_slot(&self, gi: usize) -> Slot {
        debug_assert!(self.fifo_len[gi] > 0, "empty input queue {gi}");
        self.heads[gi]
    }

    /// The head packet of input queue `gi` ([`NONE`] when empty).
    #[inline]
    pub(crate) fn head(&self, gi: usize) -> u32 {
        if self.fifo_len[gi] == 0 {
            NONE
        } else {
            self.head_slot(gi).pkt
        }
    }

    /// Where queue `gi`'s ring starts in `fifo`, and its slots.
    #[inline]
    pub(crate) fn ring(&self, gi: usize) -> (usize, usize) {
        let start = self.fifo_start[gi];
        (start, self.fifo_start[gi + 1] - start)
    }

    /// Whether every phit of the head packet of transit or injection input
    /// `gi` is in its queue (a later packet follows it, or nothing is
    /// being sent into the queue).
    pub(crate) fn head_complete(&self, gi: usize) -> bool {
        let feeder = self.inq[gi].feeder;
        self.fifo_len[gi] > 1 || feeder == NONE || self.inq[gi].in_start == NOT_STARTED
    }

    /// The input holding router `r`'s SpiNNaker routing engine ([`NONE`]).
    pub(crate) fn hol_holder(&self, r: usize) -> u32 {
        self.hol_cur[r]
    }

    /// Whether blocked requests sleep (see `Network::set_sleep_blocked`).
    pub(crate) fn set_sleep_blocked(&mut self, on: bool) {
        self.sleep_blocked = on && self.sleep_blocked;
    }
}

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
