//! The MPI calls of a lowered trace ([`Trace::calls`]): which events
//! each call lowered to, for a replay's timeline to draw.

use super::super::read::{MpiProgram, MpiStep};
use super::super::{Collective, MpiOp};
use super::Lowering;
#[cfg(doc)]
use crate::Trace;
use crate::TraceError;

/// Which MPI call a trace's record was, as a replay's timeline draws it
/// (the Dimemas records tell no more: a completion call is a `Wait`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    /// `MPI_Send`.
    Send,
    /// `MPI_Isend`.
    Isend,
    /// `MPI_Recv`.
    Recv,
    /// `MPI_Irecv`.
    Irecv,
    /// `MPI_Sendrecv`.
    Sendrecv,
    /// A completion call (`MPI_Wait` and its kin).
    Wait,
    /// A collective.
    Collective(Collective),
}

impl CallKind {
    /// The call an MPI-level step is; `None` for computation and for
    /// the calls that move nothing and cost nothing here (`MPI_Probe`,
    /// a communicator's making).
    fn of(e: &MpiStep) -> Option<CallKind> {
        let MpiStep::Call(op) = e else {
            return None;
        };
        Some(match op {
            MpiOp::Send { .. } => CallKind::Send,
            MpiOp::Isend { .. } => CallKind::Isend,
            MpiOp::Recv { .. } => CallKind::Recv,
            MpiOp::Irecv { .. } => CallKind::Irecv,
            MpiOp::Sendrecv { .. } => CallKind::Sendrecv,
            MpiOp::Wait { .. } => CallKind::Wait,
            MpiOp::Collective(c) => CallKind::Collective(c.op),
            MpiOp::Probe | MpiOp::CommNew { .. } => return None,
        })
    }
}

/// An MPI call of a lowered trace's task ([`Trace::calls`]): the task's
/// events `start..end` are what it lowered to (its frames, waits and
/// costs; none for a call that costs nothing, as `MPI_Irecv`), which a
/// replay starts `skip` cycles into the first and ends `tail` cycles
/// into the next (the lowering writes a call's costs before its first
/// frame and after its last in one event with the computation around
/// them, as its timing has them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoweredCall {
    /// Its first event's index in the task's events.
    pub start: u32,
    /// Node cycles of that event that come before the call: the
    /// computation before it, which the lowering writes in one event
    /// with the call's first costs.
    pub skip: u64,
    /// One past its last event's.
    pub end: u32,
    /// Node cycles of event `end` that are still the call's: its costs
    /// after its last frame, which the lowering writes in one event with
    /// what comes next.
    pub tail: u64,
    /// Which call it was.
    pub kind: CallKind,
}

impl Lowering<'_> {
    /// Lowers the rank's event `e` of program `p` and records the call
    /// it is, from the end of the computation before it to the end of
    /// its costs after its last frame
    /// ([`LoweredCall`]); a completion call's records in a row (one per
    /// request it completed) are one call.
    ///
    /// # Errors
    /// [`MpiProgram::shape`]'s, for a collective.
    pub(super) fn lower_event(&mut self, p: &MpiProgram, e: &MpiStep) -> Result<(), TraceError> {
        let kind = CallKind::of(e);
        // The computation not yet written goes with the call's first
        // costs, in one event (as the replay's timing has it): the call
        // starts that far into it.
        let skip = (self.ns / self.m.ns_per_node_cycle).floor() as u64;
        let r = self.rank as usize;
        let start = self.trace.tasks[r].len() as u32;
        if let MpiStep::Call(MpiOp::Collective(call)) = e {
            let (shape, members) = p.shape(self.rank, self.line, call)?;
            self.collective(&shape, &p.algorithms, members, call.comm);
        } else {
            self.event(e);
        }
        let Some(kind) = kind else {
            self.wait_call = None;
            return Ok(());
        };
        // Its costs after its last frame, not yet written, begin the
        // next event.
        let end = self.trace.tasks[r].len() as u32;
        let tail = (self.ns / self.m.ns_per_node_cycle).floor() as u64;
        let calls = self.trace.calls.get_mut(r);
        match (kind, self.wait_call, calls) {
            (CallKind::Wait, Some(i), Some(calls)) => (calls[i].end, calls[i].tail) = (end, tail),
            _ if end > start || tail > skip => {
                let call = LoweredCall {
                    start,
                    skip,
                    end,
                    tail,
                    kind,
                };
                self.trace.push_call(r, call);
                let at = self.trace.calls[r].len() - 1;
                self.wait_call = (kind == CallKind::Wait).then_some(at);
            }
            _ => self.wait_call = None,
        }
        Ok(())
    }
}
