//! A replay's timeline of a lowered MPI-level trace's calls
//! ([`fsin_trace::Trace::calls`]): each rank's on a track of its own.

use fsin_timeline::{MpiCall, MpiFunction};
use fsin_trace::mpi::lower::CallKind;

use super::Replay;

/// The MPI function a lowered trace's call `kind` draws as.
fn function(kind: CallKind) -> MpiFunction {
    match kind {
        CallKind::Send => MpiFunction::Send,
        CallKind::Isend => MpiFunction::Isend,
        CallKind::Recv => MpiFunction::Recv,
        CallKind::Irecv => MpiFunction::Irecv,
        CallKind::Sendrecv => MpiFunction::Sendrecv,
        CallKind::Wait => MpiFunction::Wait,
        CallKind::Collective(c) => MpiFunction::from(c),
    }
}

impl Replay {
    /// Agent `a` is at its next event in cycle `now`: with a timeline, the
    /// MPI call of a lowered MPI-level trace that this event ends is
    /// drawn (from the cycle its first event began), and one it begins
    /// starts.
    pub(super) fn mark_call(&mut self, a: u32, now: u64) {
        let Some(tl) = self.timeline.as_mut() else {
            return;
        };
        let ag = &mut self.agents[a as usize];
        let trace = &self.traces[ag.trace as usize];
        let Some(calls) = trace.calls.get(ag.task as usize) else {
            return;
        };
        // A node cycle `cycles` into the agent's next event, as a tick.
        let into = |cycles: u64| {
            let n = self.params.cpu_cycles(trace, cycles).round() as u64;
            self.params.net_of(ag.node_time.saturating_add(n)).max(now)
        };
        if let (Some(since), Some(c)) = (ag.call_since, calls.get(ag.call as usize)) {
            // Inside a group of receives the cursor moves between the
            // messages' runs: the call ends once the group is done.
            if ag.next >= c.end && !ag.progress.inside() {
                let until = into(if ag.next == c.end { c.tail } else { 0 });
                // The calls on a track of the agent's row, under its
                // states.
                let track = match ag.call_track {
                    Some(t) => Some(t),
                    None => tl.track(a, "MPI calls"),
                };
                ag.call_track = track;
                if let Some(t) = track {
                    tl.call(t, since, until, &MpiCall::of(function(c.kind)));
                }
                ag.call += 1;
                ag.call_since = None;
            }
        }
        if let Some(c) = calls.get(ag.call as usize) {
            if ag.call_since.is_none() && ag.next >= c.start {
                // `skip` cycles into its first event (computation before
                // it).
                ag.call_since = Some(into(if ag.next == c.start { c.skip } else { 0 }));
            }
        }
    }
}
