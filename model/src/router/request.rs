//! Request modes (`rmode`): which output VC the head packet of an input
//! queue asks for this cycle (INSEE paper, sections 2.2.1 and 2.2.2).
//!
//! Each input posts at most one request per cycle; a packet that has
//! arrived asks for the consumption port. VC 0 is the escape VC of the
//! bubble router and VCs 0 and 1 the escape VCs of the Dally router; the
//! others are adaptive and only ever used along profitable (minimal)
//! directions. A request that fails its admission checks is not posted
//! (the packet retries next cycle); with `extract=1` a packet at an
//! injection queue that cannot even take its escape VC is dropped.

use rand::Rng;

use super::routing::{arrived, escape_direction};
use super::RequestPolicy;
use rand_pcg::Pcg64Mcg;

use crate::fabric::{wrap, Fabric, Slot, NONE};
use crate::spec::{Compat, NetworkSpec, RequestMode};
use crate::topology::Record;

/// `in_bet` value of the smart mode meaning "try the escape VC next".
const ESCAPE: u8 = u8::MAX;

/// Where a request comes from: an injection queue or a transit queue.
#[derive(Clone, Copy)]
struct Input {
    /// Local input index.
    e: usize,
    /// `(dimension, positive, vc)` of a transit input; `None` when injecting.
    transit: Option<(usize, bool, usize)>,
}

/// The router of the k-ary n-cubes: bubble, Dally or double VC management
/// with the request mode `rmode`. Blocked requests sleep until the first
/// cycle they could be granted (`RequestPolicy::retry_in`).
pub(crate) struct CubeRouter;

impl RequestPolicy for CubeRouter {
    /// Every request mode: the oblivious ones with the bound of
    /// `oblivious_retry_in`, the others with those of `adaptive_retry_in`
    /// and `held_adaptive_retry_in`.
    fn sleeps(_: &NetworkSpec) -> bool {
        true
    }

    /// Every mode returns `None` only when its last (escape) choice is
    /// blocked: that is when FSIN extracts a packet at injection.
    fn extracts(spec: &NetworkSpec) -> bool {
        spec.extract
    }

    /// The smart mode computes its bound on its way
    /// (`Fabric::req_bubble_smart`).
    #[inline]
    fn request(
        net: &Fabric,
        rng: &mut Pcg64Mcg,
        bet: &mut u8,
        r: usize,
        e: usize,
        slot: Slot,
    ) -> (Option<usize>, Option<u32>) {
        net.request_cube(rng, bet, r, e, slot.rr)
    }

    /// Oblivious modes: `oblivious_retry_in`. The smart mode: its
    /// `adaptive_retry_in` (without `held`) when the request found no output
    /// VC passing its checks; after a VC busy with another packet it may
    /// choose again next cycle (1), but for the escape VC with one adaptive
    /// VC, where it would make the same request with the same state until
    /// the bound of `adaptive_retry_in` without `escape`. The modes that
    /// prefer a passing adaptive VC, after one busy with another packet:
    /// `held_adaptive_retry_in`. Every other case: `adaptive_retry_in` with
    /// `held` (some VC the mode may take must pass its checks and be free).
    fn retry_in(net: &Fabric, r: usize, e: usize, slot: Slot, requested: Option<usize>) -> u32 {
        match (net.cfg.rmode, requested) {
            (RequestMode::Oblivious | RequestMode::Static, _) => {
                net.oblivious_retry_in(r, e, &slot.rr)
            }
            (RequestMode::Smart, Some(o))
                if net.shape.nchan == 2 && net.shape.vc_info[o].vc == 0 =>
            {
                net.adaptive_retry_in(r, e, &slot.rr, false, false)
                    .min(net.output_wait(r, o))
            }
            (RequestMode::Smart, Some(_)) => 1,
            (RequestMode::Smart, None) => net.adaptive_retry_in(r, e, &slot.rr, true, false),
            (RequestMode::Random | RequestMode::Shortest, Some(o))
                if net.shape.vc_info[o].vc >= 1 =>
            {
                net.held_adaptive_retry_in(r, e, &slot.rr, 1)
            }
            (RequestMode::Adaptive, Some(o))
                if net.cfg.compat != Compat::Insee && net.shape.vc_info[o].vc >= 2 =>
            {
                net.held_adaptive_retry_in(r, e, &slot.rr, 2)
            }
            _ => net.adaptive_retry_in(r, e, &slot.rr, true, true),
        }
    }

    /// Every VC of every profitable direction.
    fn candidates(net: &Fabric, _r: usize, _e: usize, slot: Slot, f: &mut dyn FnMut(usize)) {
        for d in (0..net.shape.ndim).filter(|&d| slot.rr[d] != 0) {
            let port = d * net.shape.nways + usize::from(slot.rr[d] < 0);
            (0..net.shape.nchan).for_each(|vc| f(port * net.shape.nchan + vc));
        }
    }
}

impl Fabric {
    /// The output VC (local index; `n_tr` = consumption) that the head
    /// packet of input `e` of router `r`, with routing record `rr`,
    /// requests this cycle, with its retry bound should it be blocked if the
    /// mode computed it on the way (see `RequestPolicy::request`).
    fn request_cube(
        &self,
        rng: &mut Pcg64Mcg,
        in_bet: &mut u8,
        r: usize,
        e: usize,
        rr: Record,
    ) -> (Option<usize>, Option<u32>) {
        if arrived(&rr) {
            return (Some(self.shape.n_tr), None);
        }
        let input = Input {
            e,
            transit: (e < self.shape.n_tr).then(|| {
                let v = self.shape.vc_info[e];
                (usize::from(v.dim), v.positive, usize::from(v.vc))
            }),
        };
        let mut bound = None;
        let o = match self.cfg.rmode {
            RequestMode::Smart => {
                let (o, b) = self.req_bubble_smart(rng, in_bet, r, input, rr);
                bound = b;
                o
            }
            RequestMode::Oblivious | RequestMode::Static => {
                let (o, b) = self.req_bubble_oblivious(rng, r, input, rr);
                bound = b;
                o
            }
            RequestMode::Random | RequestMode::Shortest => {
                self.req_bubble_adaptive(rng, r, input, rr)
            }
            RequestMode::Trc | RequestMode::Basic | RequestMode::Improved => {
                self.req_dally(rng, r, input, rr)
            }
            // INSEE's code never fills the profitable-direction table of
            // this mode (`preliminary_check(.., B_FALSE)`), so every request
            // falls back to `improved`.
            RequestMode::Adaptive if self.cfg.compat == Compat::Insee => {
                self.req_dally(rng, r, input, rr)
            }
            RequestMode::Adaptive => self
                .pick_adaptive(rng, r, None, rr, 2, false)
                .or_else(|| self.req_dally(rng, r, input, rr)),
            RequestMode::DoubleOblivious | RequestMode::DoubleAdaptive => {
                self.req_double(rng, r, input, rr)
            }
        };
        (o, bound)
    }

    /// Output VC index of a dimension, direction and VC.
    #[inline]
    fn out_vc(&self, dim: usize, positive: bool, vc: usize) -> usize {
        (dim * self.shape.nways + usize::from(!positive)) * self.shape.nchan + vc
    }

    /// Escape request on VC `vc` along the escape route: VCT and bubble.
    fn escape(&self, r: usize, input: Input, rr: Record, vc: usize) -> Option<usize> {
        let (d, pos) = escape_direction(&rr, self.shape.ndim, self.cfg.routing, 0)?;
        self.escape_along(r, input, d, pos, vc)
    }

    /// Escape request on VC `vc` of dimension `d`, direction `pos` (the
    /// escape route's): VCT and bubble.
    #[inline]
    fn escape_along(
        &self,
        r: usize,
        input: Input,
        d: usize,
        pos: bool,
        vc: usize,
    ) -> Option<usize> {
        let o = self.out_vc(d, pos, vc);
        (self.vct_ok(r, o) && self.bubble_ok(r, input.e, o)).then_some(o)
    }

    /// `rmode=oblivious`: every VC is an escape VC with DOR. A packet keeps
    /// its VC along a dimension and draws a random VC when it enters one.
    /// A request that fails, or finds its VC busy, gives the bound of
    /// `oblivious_retry_in` too (blocked requests sleep), from the route it
    /// has just found.
    fn req_bubble_oblivious(
        &self,
        rng: &mut Pcg64Mcg,
        r: usize,
        input: Input,
        rr: Record,
    ) -> (Option<usize>, Option<u32>) {
        let Some((d, pos)) = escape_direction(&rr, self.shape.ndim, self.cfg.routing, 0) else {
            return (None, None);
        };
        let vc = match input.transit {
            Some((in_dim, _, in_vc)) if in_dim == d => in_vc,
            _ if self.shape.nchan == 1 => 0,
            _ => rng.gen_range(0..self.shape.nchan),
        };
        let o = self.escape_along(r, input, d, pos, vc);
        let blocked = o.is_none_or(|o| self.outputs.held(r, self.shape.n_tr, o));
        let bound = (blocked && self.queues.sleep_blocked())
            .then(|| self.oblivious_wait(r, input.e, d, pos));
        (o, bound)
    }

    /// Lower bound, in cycles, on when a blocked `rmode=oblivious` request
    /// of input `e` of router `r` (head packet routing record `rr`) could be granted: the
    /// minimum over the VCs the packet may draw of the phits still missing
    /// for virtual cut-through downstream, for the bubble (and the local
    /// bubble restriction of injection) in the local queue, and for the
    /// output VC to finish its current packet. A queue
    /// drains and a transfer advances by at most one phit per cycle, so no
    /// request of this packet can succeed sooner; skipping those cycles
    /// leaves the model unchanged (a VC drawn then would have failed).
    /// `u32::MAX` when no VC leads anywhere (mesh edge).
    fn oblivious_retry_in(&self, r: usize, e: usize, rr: &Record) -> u32 {
        let Some((d, pos)) = escape_direction(rr, self.shape.ndim, self.cfg.routing, 0) else {
            return 1;
        };
        self.oblivious_wait(r, e, d, pos)
    }

    /// [`Fabric::oblivious_retry_in`] of a packet whose escape route leaves
    /// along dimension `d`, direction `pos`.
    fn oblivious_wait(&self, r: usize, e: usize, d: usize, pos: bool) -> u32 {
        let in_dim = (e < self.shape.n_tr).then(|| usize::from(self.shape.vc_info[e].dim));
        let vcs = if in_dim == Some(d) {
            let vc = usize::from(self.shape.vc_info[e].vc);
            vc..vc + 1
        } else {
            0..self.shape.nchan
        };
        vcs.map(|vc| {
            let o = self.out_vc(d, pos, vc);
            self.output_wait(r, o)
                .max(self.ring_bubble_wait(r, e, o))
                .max(self.lbr_wait(r, e, o))
        })
        .min()
        .unwrap_or(1)
    }

    /// Lower bound, in cycles, on when a request of the bubble adaptive and
    /// smart, Dally and double modes that found no output VC passing its
    /// checks could find one (input `e` of router `r`, head packet routing
    /// record `rr`): the least, over the VCs the mode may take, of the
    /// phits still missing for the checks it applies there (virtual
    /// cut-through; the bubble and local bubble restriction on escape VCs
    /// of the bubble and double routers; the local bubble restriction on
    /// adaptive VCs of the bubble routers). Queues drain by at most one
    /// phit per cycle, so until then the request finds nothing each cycle,
    /// as it did now, and ends in the same state (the smart mode starts
    /// again from its first dimension); only random VC draws that could
    /// not have mattered are skipped, as for `oblivious_retry_in`.
    ///
    /// With `held`, a VC also waits for the packet it is sending
    /// ([`Fabric::output_wait`]): a request granted only once some VC both
    /// passes its checks and is free, which holds for every mode but the
    /// smart one (whose state moves on every cycle it is blocked).
    ///
    /// Without `escape`, only the adaptive VCs count: a smart request whose
    /// escape VC passes its checks but is busy with another packet finds
    /// the same each cycle, with the same state, until some adaptive VC
    /// could pass its checks or the escape VC could be free
    /// ([`Fabric::output_wait`]), the least of which is its bound.
    fn adaptive_retry_in(&self, r: usize, e: usize, rr: &Record, escape: bool, held: bool) -> u32 {
        let mut wait = if escape {
            self.escape_retry_in(r, e, rr, held)
        } else {
            u32::MAX
        };
        if wait <= 1
            || matches!(
                self.cfg.rmode,
                RequestMode::DoubleOblivious | RequestMode::DoubleAdaptive
            )
        {
            return wait;
        }
        // Adaptive VCs of every profitable direction: from VC 1 for the
        // bubble routers, from VC 2 for Dally's adaptive mode (the Dally
        // escape modes take none).
        let first_vc = match self.cfg.rmode {
            RequestMode::Trc | RequestMode::Basic | RequestMode::Improved => self.shape.nchan,
            RequestMode::Adaptive if self.cfg.compat == Compat::Insee => self.shape.nchan,
            RequestMode::Adaptive => 2,
            _ => 1,
        };
        for (d, &hops) in rr.iter().enumerate().take(self.shape.ndim) {
            if hops != 0 {
                for vc in first_vc..self.shape.nchan {
                    wait = wait.min(self.vc_wait(r, e, self.out_vc(d, hops > 0, vc), false, held));
                    // A bound of 1 or less cannot make the request sleep.
                    if wait <= 1 {
                        return wait;
                    }
                }
            }
        }
        wait
    }

    /// Whether the request mode is one of the bubble routers' (the local
    /// bubble restriction applies to its adaptive VCs too).
    fn bubble_mode(&self) -> bool {
        !matches!(
            self.cfg.rmode,
            RequestMode::Trc | RequestMode::Basic | RequestMode::Improved | RequestMode::Adaptive
        )
    }

    /// The phits missing for input `e`'s checks of output VC `o` of router
    /// `r` (an escape VC's with `escape`), and with `held` the cycles
    /// before `o` is free ([`Fabric::adaptive_retry_in`]).
    #[inline]
    fn vc_wait(&self, r: usize, e: usize, o: usize, escape: bool, held: bool) -> u32 {
        let mut w = if held {
            self.output_wait(r, o)
        } else {
            self.vct_wait(r, o)
        };
        if self.bubble_mode() {
            w = w.max(self.lbr_wait(r, e, o));
            if escape {
                w = w.max(self.ring_bubble_wait(r, e, o));
            }
        }
        w
    }

    /// [`Fabric::adaptive_retry_in`] over the escape VCs alone: VC 0 of
    /// the bubble routers, VCs 0 and 1 of Dally's, every VC (each with its
    /// own dimension order) of the double router.
    fn escape_retry_in(&self, r: usize, e: usize, rr: &Record, held: bool) -> u32 {
        let routing = self.cfg.routing;
        let ndim = self.shape.ndim;
        let double = matches!(
            self.cfg.rmode,
            RequestMode::DoubleOblivious | RequestMode::DoubleAdaptive
        );
        let vcs = if double {
            self.shape.nchan
        } else if self.bubble_mode() {
            1
        } else {
            2
        };
        let mut wait = u32::MAX;
        for c in 0..vcs.min(self.shape.nchan) {
            let start = if double { c % ndim } else { 0 };
            if let Some((d, pos)) = escape_direction(rr, ndim, routing, start) {
                wait = wait.min(self.vc_wait(r, e, self.out_vc(d, pos, c), true, held));
                if wait <= 1 {
                    return wait;
                }
            }
        }
        wait
    }

    /// Lower bound, in cycles, on when a request of the modes that take a
    /// random (`rmode=random`, Dally's `adaptive`) or the roomiest
    /// (`shortest`) adaptive VC among those passing their checks, and the
    /// escape VC only when none does, could be granted, once it asked for
    /// an adaptive VC busy with another packet (input `e` of router `r`,
    /// head packet routing record `rr`, adaptive VCs from `first_vc`):
    /// - an adaptive VC passing its checks now is granted no sooner than it
    ///   is free ([`Fabric::output_wait`]);
    /// - one failing them, no sooner than it could pass them and be free;
    /// - the escape VC is not even asked for while an adaptive VC passes
    ///   its checks: no sooner than every one passing them now could fail
    ///   them (its downstream queue, and the local one under the local
    ///   bubble restriction, fill by at most one phit per cycle), and no
    ///   sooner than the escape VC's own bound.
    ///
    /// Until the least of these the request asks for a busy VC every
    /// cycle; the VCs it would draw meanwhile could not have mattered.
    fn held_adaptive_retry_in(&self, r: usize, e: usize, rr: &Record, first_vc: usize) -> u32 {
        let lbr = self.bubble_mode();
        let mut wait = u32::MAX;
        let mut open = 0;
        for (d, &hops) in rr.iter().enumerate().take(self.shape.ndim) {
            if hops == 0 {
                continue;
            }
            for vc in first_vc..self.shape.nchan {
                let o = self.out_vc(d, hops > 0, vc);
                if self.vct_ok(r, o) && (!lbr || self.lbr_ok(r, e, o)) {
                    wait = wait.min(self.busy_wait(r, o));
                    open = open.max(self.checks_hold(r, e, o, lbr));
                } else {
                    wait = wait.min(self.vc_wait(r, e, o, false, true));
                }
                if wait <= 1 {
                    return wait;
                }
            }
        }
        // The escape VC's term is at least `open`.
        if open >= wait {
            return wait;
        }
        wait.min(open.max(self.escape_retry_in(r, e, rr, true)))
    }

    /// Cycles for which output VC `o` of router `r`, passing input `e`'s
    /// checks now, surely goes on passing them: the room left downstream
    /// (and, with the local bubble restriction `lbr`, in the local queue)
    /// plus one, as a queue fills by at most one phit per cycle; 1 where
    /// the congestion timeouts may switch the restriction at any cycle.
    fn checks_hold(&self, r: usize, e: usize, o: usize, lbr: bool) -> u32 {
        let down = self.down_occ(r * self.shape.n_tr + o) + self.shape.admit;
        let mut hold = self.shape.cap - down + 1;
        let restriction = self.cfg.bub_to_adap * self.shape.plen;
        if lbr && restriction > 0 && e >= self.shape.n_tr {
            if self.congestion.timeouts_on() {
                return 1;
            }
            let local = self.occ(r * self.shape.n_in + o) + restriction;
            hold = hold.min(self.shape.cap - local + 1);
        }
        hold
    }

    /// Lower bound, in cycles, on when output VC `o` of router `r` could
    /// take a packet: the phits missing downstream for virtual cut-through
    /// and those left of the packet it is sending (a queue drains and a
    /// transfer advances by at most one phit per cycle); `u32::MAX` where
    /// it leads nowhere.
    #[inline]
    pub(crate) fn output_wait(&self, r: usize, o: usize) -> u32 {
        self.vct_wait(r, o).max(self.busy_wait(r, o))
    }

    /// Cycles before output VC `o` of router `r` has sent the packet it
    /// holds (0 when free; a transfer advances by at most one phit per
    /// cycle).
    #[inline]
    fn busy_wait(&self, r: usize, o: usize) -> u32 {
        let go = r * self.shape.n_tr + o;
        let out = *self.outputs.out(go);
        if out.sip == NONE || out.dst == NONE {
            0
        } else {
            self.shape.plen - self.sent(go)
        }
    }

    /// Lower bound, in cycles, on when output VC `o` of router `r` passes
    /// virtual cut-through: the phits its downstream queue must drain
    /// first, at most one per cycle; `u32::MAX` where it leads nowhere.
    #[inline]
    pub(crate) fn vct_wait(&self, r: usize, o: usize) -> u32 {
        match self.outputs.out(r * self.shape.n_tr + o).dst {
            NONE => u32::MAX,
            _ => (self.down_occ(r * self.shape.n_tr + o) + self.shape.admit)
                .saturating_sub(self.shape.cap),
        }
    }

    /// Candidate adaptive VCs (index >= `first_vc`) along profitable
    /// directions that pass virtual cut-through (and, for the bubble
    /// routers, input `lbr_input`'s local bubble restriction); picks one at
    /// random, or the one with most room downstream when `most_room`. Not
    /// inlined: its candidate array would be zeroed on every request of
    /// every mode.
    #[inline(never)]
    fn pick_adaptive(
        &self,
        rng: &mut Pcg64Mcg,
        r: usize,
        lbr_input: Option<usize>,
        rr: Record,
        first_vc: usize,
        most_room: bool,
    ) -> Option<usize> {
        let mut cands = [0u16; 96];
        let mut n = 0;
        let mut best: Option<(u32, usize)> = None;
        for (d, &hops) in rr.iter().enumerate().take(self.shape.ndim) {
            if hops == 0 {
                continue;
            }
            for vc in first_vc..self.shape.nchan {
                let o = self.out_vc(d, hops > 0, vc);
                if !self.vct_ok(r, o) || lbr_input.is_some_and(|e| !self.lbr_ok(r, e, o)) {
                    continue;
                }
                if most_room {
                    let room = self.shape.cap - self.down_occ(r * self.shape.n_tr + o);
                    if best.is_none_or(|(b, _)| room > b) {
                        best = Some((room, o));
                    }
                }
                cands[n] = o as u16;
                n += 1;
            }
        }
        if most_room {
            return best.map(|(_, o)| o);
        }
        (n > 0).then(|| usize::from(cands[rng.gen_range(0..n)]))
    }

    /// `rmode=random|shortest`: a profitable adaptive VC if any passes
    /// virtual cut-through (random one, or the one with most room), else
    /// the escape VC 0.
    fn req_bubble_adaptive(
        &self,
        rng: &mut Pcg64Mcg,
        r: usize,
        input: Input,
        rr: Record,
    ) -> Option<usize> {
        let most_room = self.cfg.rmode == RequestMode::Shortest;
        self.pick_adaptive(rng, r, Some(input.e), rr, 1, most_room)
            .or_else(|| self.escape(r, input, rr, 0))
    }

    /// `rmode=smart`: try to continue in the current dimension on an
    /// adaptive VC, then the following dimensions, then the escape VC; the
    /// next cycle resumes after the dimension last requested, so a blocked
    /// packet keeps changing dimension (INSEE paper, section 2.2.2).
    ///
    /// Also gives the bound of `retry_in` should the request be blocked,
    /// computed on the way as [`Fabric::adaptive_retry_in`] does:
    /// - an adaptive VC busy with another packet: 1 (the next request may
    ///   choose another dimension);
    /// - the escape VC busy with another packet, with one adaptive VC
    ///   (`nchan=2`, so nothing is drawn that the skipped cycles would have
    ///   drawn): the least of the phits missing for the checks of the
    ///   adaptive VCs of every profitable direction and of the cycles
    ///   before the escape VC could be free;
    /// - nothing found (and blocked requests sleep): the least of the phits
    ///   missing for the checks of the escape VC and every adaptive VC.
    ///
    /// The dimensions tried give their waits as they are checked; only
    /// those before the smart state's offset are visited again.
    fn req_bubble_smart(
        &self,
        rng: &mut Pcg64Mcg,
        in_bet: &mut u8,
        r: usize,
        input: Input,
        rr: Record,
    ) -> (Option<usize>, Option<u32>) {
        let ndim = self.shape.ndim;
        let e = input.e;
        let dim = |k: usize| match input.transit {
            None => k,
            Some((in_dim, _, _)) => wrap(in_dim + k, ndim),
        };
        let first = *in_bet;
        let mut wait = u32::MAX;
        let mut bet = first;
        while (bet as usize) < ndim {
            let d = dim(bet as usize);
            bet += 1;
            if rr[d] == 0 {
                continue;
            }
            let pos = rr[d] > 0;
            let vc = match input.transit {
                Some((in_dim, in_pos, in_vc)) if in_vc > 0 && in_dim == d && in_pos == pos => in_vc,
                // One adaptive VC: nothing to draw.
                _ if self.shape.nchan == 2 => 1,
                _ => 1 + rng.gen_range(0..self.shape.nchan - 1),
            };
            let o = self.out_vc(d, pos, vc);
            let vct = self.vct_wait(r, o);
            if vct == 0 && self.lbr_ok(r, e, o) {
                *in_bet = if (bet as usize) < ndim { bet } else { ESCAPE };
                return (Some(o), Some(1));
            }
            // With one adaptive VC, `o` is the only one: its check is made.
            wait = wait.min(if self.shape.nchan == 2 {
                vct.max(self.lbr_wait(r, e, o))
            } else {
                self.adaptive_wait(r, e, d, pos)
            });
        }
        *in_bet = 0;
        // The adaptive VCs of the dimensions not tried, for the bound.
        let untried = |net: &Fabric| {
            (0..usize::from(first).min(ndim))
                .map(dim)
                .filter(|&d| rr[d] != 0)
                .map(|d| net.adaptive_wait(r, e, d, rr[d] > 0))
                .min()
                .unwrap_or(u32::MAX)
        };
        if let Some((d, pos)) = escape_direction(&rr, ndim, self.cfg.routing, 0) {
            let o = self.out_vc(d, pos, 0);
            let vct = self.vct_wait(r, o);
            let ring = self.ring_bubble_wait(r, e, o);
            if vct == 0 && ring == 0 && self.lbr_ok(r, e, o) {
                let busy = self.outputs.held(r, self.shape.n_tr, o);
                let bound = if busy && self.queues.sleep_blocked() && self.shape.nchan == 2 {
                    wait.min(untried(self)).min(self.output_wait(r, o))
                } else {
                    1
                };
                return (Some(o), Some(bound));
            }
            wait = wait.min(vct.max(ring).max(self.lbr_wait(r, e, o)));
        }
        if !self.queues.sleep_blocked() {
            return (None, None);
        }
        (None, Some(wait.min(untried(self))))
    }

    /// The least, over the adaptive VCs (1 and up) of dimension `d` and
    /// direction `pos` at router `r`, of the phits missing for input `e`'s
    /// checks there (virtual cut-through and the local bubble restriction).
    #[inline]
    fn adaptive_wait(&self, r: usize, e: usize, d: usize, pos: bool) -> u32 {
        (1..self.shape.nchan)
            .map(|vc| {
                let o = self.out_vc(d, pos, vc);
                self.vct_wait(r, o).max(self.lbr_wait(r, e, o))
            })
            .min()
            .unwrap_or(u32::MAX)
    }

    /// `vc=dally`: escape VCs 0 and 1 with dimension-order routing.
    /// - trc: VC 1 when entering a dimension, VC 0 from the router at
    ///   coordinate 0 of the ring onwards (the spiral of Fig. 4b);
    /// - basic: VC 0 for packets that will cross the wrap-around link of
    ///   the dimension, VC 1 for the others (Fig. 4c);
    /// - improved/adaptive: as basic, but packets that do not wrap may use
    ///   either VC (random first choice, the other if it has no room).
    fn req_dally(&self, rng: &mut Pcg64Mcg, r: usize, input: Input, rr: Record) -> Option<usize> {
        let (d, pos) = escape_direction(&rr, self.shape.ndim, self.cfg.routing, 0)?;
        let node = r as u32;
        let vc = match self.cfg.rmode {
            RequestMode::Trc => {
                let vc = match input.transit {
                    Some((in_dim, _, in_vc)) if in_dim == d => in_vc.min(1),
                    _ => 1,
                };
                if self.topo.cube().coords(node)[d] == 0 {
                    0
                } else {
                    vc
                }
            }
            RequestMode::Basic => usize::from(!self.topo.cube().will_wrap(node, d, rr[d])),
            _ => {
                if self.topo.cube().will_wrap(node, d, rr[d]) {
                    0
                } else {
                    let first = usize::from(rng.gen::<bool>());
                    if self.vct_ok(r, self.out_vc(d, pos, first)) {
                        first
                    } else {
                        1 - first
                    }
                }
            }
        };
        let o = self.out_vc(d, pos, vc);
        self.vct_ok(r, o).then_some(o)
    }

    /// `vc=double`: VC `c` routes in dimension order starting at dimension
    /// `c mod ndim`, with bubble flow control on every VC. A packet draws
    /// its VC at injection and keeps it (`doubleob`); `doubleadap` tries
    /// the following VCs (and their orders) when the first is blocked.
    fn req_double(&self, rng: &mut Pcg64Mcg, r: usize, input: Input, rr: Record) -> Option<usize> {
        let ndim = self.shape.ndim;
        let c0 = match input.transit {
            Some((_, _, in_vc)) => in_vc,
            None => rng.gen_range(0..self.shape.nchan),
        };
        let tries = if self.cfg.rmode == RequestMode::DoubleAdaptive {
            self.shape.nchan
        } else {
            1
        };
        (0..tries).find_map(|k| {
            let c = (c0 + k) % self.shape.nchan;
            let (d, pos) = escape_direction(&rr, ndim, self.cfg.routing, c % ndim)?;
            let o = self.out_vc(d, pos, c);
            (self.vct_ok(r, o) && self.bubble_ok(r, input.e, o)).then_some(o)
        })
    }
}
