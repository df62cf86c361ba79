//! Output VCs and consumption: which input holds each output VC and the
//! transfer it has started, the round-robin memory of arbitration, and the
//! inputs consuming at their compute node.

use super::{OutVc, NONE, NOT_STARTED};

/// The output VCs of a part's routers (index `router * n_tr + o`) and
/// their consumption ports.
pub(crate) struct Outputs {
    /// State of each output VC, kept together: requests read it.
    pub(crate) out: Vec<OutVc>,
    /// Last input granted (round robin).
    pub(crate) out_ri: Vec<u32>,
    /// Single consumption: input holding the consumption port per router,
    /// and the one granted last.
    pub(crate) cons_sip: Vec<u32>,
    pub(crate) cons_ri: Vec<u32>,
    /// Consuming inputs (global input ids).
    pub(crate) consuming: Vec<u32>,
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
    pub(crate) fn cons_last(&self, r: usize) -> u32 {
        self.cons_ri[r]
    }
}
