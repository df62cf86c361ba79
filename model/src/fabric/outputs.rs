//! Output VCs and consumption: which input holds each output VC and the
//! transfer it has started, the round-robin memory of arbitration, and the
//! inputs consuming at their compute node.

use super::{OutVc, NONE, NOT_STARTED};

/// The output VCs of a part's routers (index `router * n_tr + o`) and
/// their consumption ports.
pub(crate) struct Outputs {
    /// State of each output VC, kept together: requests read it.
    out: Vec<OutVc>,
    /// Last input granted (round robin).
    out_ri: Vec<u32>,
    /// Single consumption: input holding the consumption port per router,
    /// and the one granted last.
    cons_sip: Vec<u32>,
    cons_ri: Vec<u32>,
    /// Consuming inputs (global input ids).
    consuming: Vec<u32>,
}

impl Outputs {
    /// Free output VCs of `routers` routers with `n_tr` each, leading
    /// nowhere yet, for a network of `nodes` compute nodes.
    pub(crate) fn new(routers: usize, n_tr: usize, nodes: usize) -> Outputs {
        let idle = OutVc {
            dst: NONE,
            sip: NONE,
            start: NOT_STARTED,
            down_base: 0,
            down_drain: NOT_STARTED,
        };
        Outputs {
            out: vec![idle; routers * n_tr],
            out_ri: vec![NONE; routers * n_tr],
            cons_sip: vec![NONE; routers],
            cons_ri: vec![NONE; routers],
            consuming: Vec::with_capacity(nodes),
        }
    }
    /// Output VC `go`.
    #[inline]
    pub(crate) fn out(&self, go: usize) -> &OutVc {
        &self.out[go]
    }

    /// Output VC `go`, to change.
    #[inline]
    pub(crate) fn out_mut(&mut self, go: usize) -> &mut OutVc {
        &mut self.out[go]
    }

    /// Whether output VC `o` of router `r` (of `n_tr`) is held by an
    /// input.
    #[inline]
    pub(crate) fn held(&self, r: usize, n_tr: usize, o: usize) -> bool {
        self.out[r * n_tr + o].sip != NONE
    }

    /// Local input `e` takes output VC `go` (and is its last grant).
    #[inline]
    pub(crate) fn grant(&mut self, go: usize, e: usize) {
        self.out[go].sip = e as u32;
        self.out_ri[go] = e as u32;
    }

    /// The local input granted output VC `go` last ([`NONE`]: none yet).
    #[inline]
    pub(crate) fn last_granted(&self, go: usize) -> u32 {
        self.out_ri[go]
    }

    // ----- Consumption -------------------------------------------------

    /// The local input holding router `r`'s consumption port under single
    /// consumption ([`NONE`]: free).
    #[inline]
    pub(crate) fn consumption_holder(&self, r: usize) -> u32 {
        self.cons_sip[r]
    }

    /// The local input granted router `r`'s consumption port last.
    pub(crate) fn cons_last(&self, r: usize) -> u32 {
        self.cons_ri[r]
    }

    /// Local input `e` takes router `r`'s consumption port.
    #[inline]
    pub(crate) fn grant_consumption(&mut self, r: usize, e: usize) {
        self.cons_sip[r] = e as u32;
        self.cons_ri[r] = e as u32;
    }

    /// Local input `e` of router `r` delivered its packet: the port is free
    /// if it held it.
    #[inline]
    pub(crate) fn end_consumption(&mut self, r: usize, e: usize) {
        if self.cons_sip[r] == e as u32 {
            self.cons_sip[r] = NONE;
        }
    }

    /// The inputs consuming at their compute node (global input ids).
    #[inline]
    pub(crate) fn consuming(&self) -> &[u32] {
        &self.consuming
    }

    /// Input `gi` starts consuming.
    #[inline]
    pub(crate) fn start_consuming(&mut self, gi: usize) {
        self.consuming.push(gi as u32);
    }

    /// The `i`-th consuming input stops (the last one takes its place).
    #[inline]
    pub(crate) fn stop_consuming_at(&mut self, i: usize) {
        self.consuming.swap_remove(i);
    }

    /// Keeps consuming only the inputs for which `keep` holds.
    #[inline]
    pub(crate) fn retain_consuming(&mut self, keep: impl FnMut(&u32) -> bool) {
        self.consuming.retain(keep);
    }
}
