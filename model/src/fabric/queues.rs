//! Input queues (index `router * n_in + e`): their occupancy state, the
//! rings of packets they hold, and the requests of their head packets
//! (which inputs wait for an output, which sleep until when).

use super::{ring_slots, wrap, ActiveSet, InQueue, Record, Slot, Wheel, NONE, NOT_STARTED};

/// The input queues of a part's routers and their requests.
pub(crate) struct Queues {
    /// Inputs per router (`gi = router * n_in + e`).
    n_in: usize,
    /// FIFO arbitration (`amode=fifo`) reads `in_tor`; nothing else does.
    fifo_arbitration: bool,
    /// What [`super::Fabric::occ`] reads of each input queue, kept together:
    /// a request reads it for a queue of the next router.
    inq: Vec<InQueue>,
    fifo: Vec<Slot>,
    /// The head slot of every non-empty queue, a copy of its place in
    /// `fifo`: requests read it every cycle a head waits, and the copies
    /// of a router's queues share a few cache lines.
    heads: Vec<Slot>,
    fifo_head: Vec<u16>,
    fifo_len: Vec<u16>,
    /// Where each queue's ring of slots starts in `fifo`, and (one past
    /// the last queue) where the last ends: a queue's ring holds
    /// `fifo_start[gi + 1] - fifo_start[gi]` slots ([`ring_slots`]).
    fifo_start: Vec<usize>,
    /// Cycle the head packet first became eligible to request, kept only
    /// for FIFO arbitration (`amode=fifo`), which alone reads it.
    in_tor: Vec<u64>,
    /// Cycle before which the head packet cannot be granted, so its input
    /// skips requesting (see `RequestPolicy::retry_in`).
    in_wake: Vec<u64>,
    /// Inputs asleep until `in_wake`, out of `waiting` meanwhile: bucket
    /// `t % len` holds those to wake up in cycle `t` (or to put back to
    /// sleep, for a wake-up beyond the wheel's horizon).
    wake_wheel: Wheel<Vec<u32>>,
    /// Whether blocked requests sleep until they could succeed.
    sleep_blocked: bool,
    /// SpiNNaker router (`hol`): per router, the input whose head packet
    /// holds the routing engine ([`NONE`]: free) and the one served last.
    hol_cur: Vec<u32>,
    hol_last: Vec<u32>,
    /// Cycle the holder took the engine.
    hol_since: Vec<u64>,
    /// Per router, the inputs whose head packet holds no output (bit per
    /// local input).
    waiting: Vec<u128>,
    /// Routers with a nonzero `waiting` mask.
    req_routers: ActiveSet,
    /// Scratch: requesting inputs per output (bit per local input).
    req_by_out: Vec<u128>,
}

impl Queues {
    /// Empty queues of `routers` routers with `n_in` inputs, the first
    /// `n_tr` of them transit queues, of `tql` packets (injection queues
    /// also hold `iql`), for packets of `plen` phits; `hol`: the SpiNNaker
    /// router's engine; `fifo`: FIFO arbitration, which keeps the cycle
    /// each head became eligible.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        routers: usize,
        n_in: usize,
        n_tr: usize,
        tql: u32,
        iql: u32,
        plen: u32,
        hol: bool,
        fifo: bool,
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
            n_in,
            fifo_arbitration: fifo,
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
    // ----- What the other phases read --------------------------------

    /// Input queue `gi`'s occupancy record.
    #[inline]
    pub(crate) fn inq(&self, gi: usize) -> &InQueue {
        &self.inq[gi]
    }

    /// Input queue `gi`'s occupancy record, to change.
    #[inline]
    pub(crate) fn inq_mut(&mut self, gi: usize) -> &mut InQueue {
        &mut self.inq[gi]
    }

    /// Every input queue's occupancy record, by `gi`.
    #[inline]
    pub(crate) fn inqs(&self) -> &[InQueue] {
        &self.inq
    }

    /// Packets in input queue `gi` (the one arriving counts).
    #[inline]
    pub(crate) fn len(&self, gi: usize) -> usize {
        usize::from(self.fifo_len[gi])
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
    fn ring(&self, gi: usize) -> (usize, usize) {
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

    // ----- Packets in and out -------------------------------------------

    /// Appends `slot` to input queue `gi`; a new head waits for an output.
    #[inline]
    pub(crate) fn push(&mut self, gi: usize, slot: Slot) {
        let len = self.fifo_len[gi] as usize;
        let (start, slots) = self.ring(gi);
        debug_assert!(len < slots, "input queue {gi} over capacity");
        let at = wrap(self.fifo_head[gi] as usize + len, slots);
        self.fifo[start + at] = slot;
        self.fifo_len[gi] += 1;
        if len == 0 {
            self.heads[gi] = slot;
            self.mark_waiting(gi);
        }
    }

    /// Removes the head packet of input queue `gi` at cycle `now`; the
    /// next one, if any, waits for an output.
    #[inline]
    pub(crate) fn pop(&mut self, gi: usize, now: u64) {
        let (start, slots) = self.ring(gi);
        self.fifo_head[gi] = wrap(self.fifo_head[gi] as usize + 1, slots) as u16;
        self.fifo_len[gi] -= 1;
        self.inq[gi].aop = NONE;
        if self.fifo_arbitration {
            self.in_tor[gi] = 0;
        }
        // A packet leaves only after a granted request, which it makes no
        // sooner than its wake-up: the next head finds no wake-up pending.
        debug_assert!(self.in_wake[gi] <= now, "input {gi} popped asleep");
        if self.fifo_len[gi] > 0 {
            self.heads[gi] = self.fifo[start + self.fifo_head[gi] as usize];
            self.mark_waiting(gi);
        }
    }

    // ----- Requests -----------------------------------------------------

    /// The inputs of router `r` whose head packet holds no output (bit
    /// per local input).
    #[inline]
    pub(crate) fn waiting(&self, r: usize) -> u128 {
        self.waiting[r]
    }

    /// Notes that input `gi` has a head packet that holds no output.
    #[inline]
    pub(crate) fn mark_waiting(&mut self, gi: usize) {
        let (r, e) = (gi / self.n_in, gi % self.n_in);
        self.waiting[r] |= 1u128 << e;
        self.req_routers.insert(r);
    }

    /// Notes that the head packet of local input `e` of router `r` waits
    /// no more (it holds an output, or left).
    #[inline]
    pub(crate) fn unmark_waiting(&mut self, r: usize, e: usize) {
        self.waiting[r] &= !(1u128 << e);
    }

    /// The routers with waiting inputs, to sweep.
    #[inline]
    pub(crate) fn requesting_routers(&mut self) -> &mut ActiveSet {
        &mut self.req_routers
    }

    /// Whether input `gi`'s head cannot be granted before a later cycle
    /// than `now`.
    #[inline]
    pub(crate) fn asleep(&self, gi: usize, now: u64) -> bool {
        now < self.in_wake[gi]
    }

    /// Notes, for FIFO arbitration, that input `gi`'s head requests at
    /// `now` (from its first request on).
    #[inline]
    pub(crate) fn note_request(&mut self, gi: usize, now: u64) {
        if self.fifo_arbitration && self.in_tor[gi] == 0 {
            self.in_tor[gi] = now + 1;
        }
    }

    /// The cycle (plus one) from which input `gi`'s head has requested:
    /// FIFO arbitration's order.
    #[inline]
    pub(crate) fn requesting_since(&self, gi: usize) -> u64 {
        self.in_tor[gi]
    }

    /// Adds local input `e`'s request for output `o` of the router swept.
    #[inline]
    pub(crate) fn request(&mut self, o: usize, e: usize) {
        self.req_by_out[o] |= 1u128 << e;
    }

    /// The local inputs that requested output `o`, cleared.
    #[inline]
    pub(crate) fn take_requests(&mut self, o: usize) -> u128 {
        std::mem::take(&mut self.req_by_out[o])
    }

    /// Whether blocked requests sleep until they could succeed.
    #[inline]
    pub(crate) fn sleep_blocked(&self) -> bool {
        self.sleep_blocked
    }

    /// Whether blocked requests sleep (see `Network::set_sleep_blocked`).
    pub(crate) fn set_sleep_blocked(&mut self, on: bool) {
        self.sleep_blocked = on && self.sleep_blocked;
    }

    /// Takes local input `e` of router `r`, whose request cannot succeed
    /// before `wake`, out of `waiting` until then (at cycle `now`).
    #[inline]
    pub(crate) fn sleep_until(&mut self, r: usize, e: usize, wake: u64, now: u64) {
        self.in_wake[r * self.n_in + e] = wake;
        self.sleep(r, e, now);
    }

    /// Takes local input `e` of router `r`, whose request cannot succeed
    /// before its wake-up, out of `waiting` until then (at cycle `now`).
    #[inline]
    pub(crate) fn sleep(&mut self, r: usize, e: usize, now: u64) {
        let gi = r * self.n_in + e;
        let at = self.in_wake[gi].min(now + self.wake_wheel.horizon());
        self.wake_wheel.at(at).push(gi as u32);
        self.unmark_waiting(r, e);
    }

    /// Puts back into `waiting` the inputs that slept until cycle `now`
    /// (those still asleep go back to sleep when their router sweeps).
    #[inline]
    pub(crate) fn wake(&mut self, now: u64) {
        let mut woken = std::mem::take(self.wake_wheel.at(now));
        for &gi in &woken {
            self.mark_waiting(gi as usize);
        }
        woken.clear();
        *self.wake_wheel.at(now) = woken;
    }

    // ----- The SpiNNaker router's routing engine ------------------------

    /// The input holding router `r`'s SpiNNaker routing engine ([`NONE`]).
    #[inline]
    pub(crate) fn hol_holder(&self, r: usize) -> u32 {
        self.hol_cur[r]
    }

    /// The cycle router `r`'s engine was taken, and the input served last
    /// ([`NONE`]: none yet).
    #[inline]
    pub(crate) fn hol_taken(&self, r: usize) -> (u64, u32) {
        (self.hol_since[r], self.hol_last[r])
    }

    /// Local input `e` takes router `r`'s engine at cycle `now`.
    #[inline]
    pub(crate) fn hol_take(&mut self, r: usize, e: usize, now: u64) {
        self.hol_cur[r] = e as u32;
        self.hol_since[r] = now;
    }

    /// Router `r`'s engine is free; its holder was served last.
    #[inline]
    pub(crate) fn hol_free(&mut self, r: usize) {
        self.hol_last[r] = self.hol_cur[r];
        self.hol_cur[r] = NONE;
    }
}
