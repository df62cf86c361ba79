//! A lowered MPI-level trace's completion calls that wait for several
//! messages ([`RecvGroup`]): the task takes their frames as they arrive,
//! as Open MPI's progress engine reads whichever connection has data.
//! The agent keeps a cursor per message (a run of the group); at each
//! receive it goes on with the run whose next frame came first, and,
//! when none has come, waits for the first frame of any run.

use fsin_trace::{Event, RecvGroup};

use super::Replay;

/// An agent's place in its task's groups.
#[derive(Debug, Clone, Default)]
pub(super) struct Progress {
    /// Index of the task's next group ([`fsin_trace::Trace::recv_groups`]).
    next_group: u32,
    /// Inside a group: each run's next event and its end (the event after
    /// its last); empty outside one.
    runs: Vec<(u32, u32)>,
    /// The run the agent takes now.
    current: usize,
    /// Inside a group: the event after its last.
    end: u32,
}

impl Progress {
    /// Enters `g`, whose first event is the agent's next.
    fn enter(&mut self, g: &RecvGroup) {
        self.next_group += 1;
        self.runs.clear();
        self.runs.extend(g.spans());
        self.current = 0;
        self.end = g.end;
    }

    /// Whether the agent is inside a group: its cursor may stand at any
    /// run's end, not the group's.
    pub(super) fn inside(&self) -> bool {
        !self.runs.is_empty()
    }
}

/// The (source, tag) of the receive a run `(at, end)` of `events` takes
/// next, if it has one left.
fn head(events: &[Event], (at, end): (u32, u32)) -> Option<(u32, u32)> {
    match events.get(at as usize) {
        Some(&Event::Recv { src, tag, .. }) if at < end => Some((src, tag)),
        _ => None,
    }
}

impl Replay {
    /// Before agent `a` runs the event at its cursor: enters a group that
    /// starts there; inside one, at a receive or a run's end, moves the
    /// cursor to the run whose next frame arrived first (the one it is on
    /// if none has), and past the group once every run is done.
    pub(super) fn progress(&mut self, a: u32) {
        let ai = a as usize;
        let ag = &mut self.agents[ai];
        let trace = &self.traces[ag.trace as usize];
        let Some(groups) = trace.recv_groups.get(ag.task as usize) else {
            return;
        };
        let events = &trace.tasks[ag.task as usize];
        let p = &mut ag.progress;
        if p.runs.is_empty() {
            match groups.get(p.next_group as usize) {
                Some(g) if g.runs.first() == Some(&ag.next) => p.enter(g),
                _ => return,
            }
        }
        let (_, end) = p.runs[p.current];
        let at_recv = matches!(events.get(ag.next as usize), Some(Event::Recv { .. }));
        if ag.next != end && !at_recv {
            return;
        }
        p.runs[p.current].0 = ag.next;
        // The earliest frame that a run's receive takes; the first such
        // run, as MPI matches a pair's messages in order.
        let first = self.pending[ai]
            .iter()
            .find_map(|e| (p.runs.iter()).position(|&r| head(events, r) == Some((e.src, e.tag))));
        let open = p.runs.iter().position(|&(at, end)| at < end);
        match first.or(if ag.next != end {
            Some(p.current)
        } else {
            open
        }) {
            Some(k) => {
                p.current = k;
                ag.next = p.runs[k].0;
            }
            None => {
                ag.next = p.end;
                p.runs.clear();
            }
        }
    }

    /// Whether agent `a`, waiting inside a group, takes a frame of `tag`
    /// from task `src` that its current receive does not: then its cursor
    /// moves to the run that does.
    pub(super) fn progress_takes(&mut self, a: u32, src: u32, tag: u32) -> bool {
        let ag = &mut self.agents[a as usize];
        let p = &mut ag.progress;
        if p.runs.is_empty() {
            return false;
        }
        let events = &self.traces[ag.trace as usize].tasks[ag.task as usize];
        let run = (p.runs.iter()).position(|&r| head(events, r) == Some((src, tag)));
        let Some(k) = run else {
            return false;
        };
        p.runs[p.current].0 = ag.next;
        p.current = k;
        ag.next = p.runs[k].0;
        true
    }
}
