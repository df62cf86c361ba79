//! Input queues (index `router * n_in + e`): their occupancy state, the
//! rings of packets they hold, and the requests of their head packets
//! (which inputs wait for an output, which sleep until when).

use super::{ring_slots, ActiveSet, InQueue, Record, Slot, Wheel, NONE, NOT_STARTED};

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
