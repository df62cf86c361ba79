//! `fsin qemu --timeline` (issue 59): what each guest did in the measured
//! phase of a lock-step run, in node cycles from its start, and every
//! frame from its send to its delivery, streamed into a Paraver or
//! Perfetto timeline (crate `fsin-timeline`) as nic-bridge carries them.
//!
//! A guest is `Running` except where it was idle until a frame woke it
//! (the plugins' `Woke`): that idle time is `Waiting a message`, the split
//! the frame trace makes between computation and waits. Frames are paired
//! with their sends as the frame trace pairs them ([`Pairing`]); each
//! copy of a broadcast is one message.

use fsin_timeline::{
    Counted, CounterBoard, Layout, Message, Row, State, Target, Timeline, TimelineError, Written,
};

use super::trace_out::{Paired, Pairing};

/// The guests' timeline of one run.
pub(super) struct GuestTimeline {
    timeline: Timeline,
    pairs: Pairing,
    /// Node cycle the measured phase starts at (tick 0), once known.
    start: Option<u64>,
    /// Per guest: the node cycle since which it runs.
    since: Vec<u64>,
    /// The last slice's end reached.
    end: u64,
    /// The network's counters, which the server hands over.
    counters: Option<CounterBoard>,
}

impl GuestTimeline {
    /// The timeline of `guests` guests on nodes `first_node`, ... into
    /// `out`.
    ///
    /// # Errors
    /// The file cannot be created (checked before any guest starts).
    pub(super) fn new(
        out: &Target,
        guests: usize,
        first_node: u32,
        counters: Option<CounterBoard>,
    ) -> Result<GuestTimeline, TimelineError> {
        let rows = (0..guests as u32)
            .map(|i| Row {
                name: format!("guest {i}"),
                node: first_node + i,
            })
            .collect();
        let layout = Layout {
            rows,
            nodes: first_node + guests as u32,
            tick: "node cycle".into(),
        };
        Ok(GuestTimeline {
            timeline: Timeline::create(out, layout)?,
            pairs: Pairing::new(guests),
            start: None,
            since: vec![0; guests],
            end: 0,
            counters,
        })
    }

    /// The measured phase starts at node cycle `cycle`.
    pub(super) fn start_at(&mut self, cycle: u64) {
        if self.start.is_none() {
            self.start = Some(cycle);
            self.since.fill(cycle);
            self.end = self.end.max(cycle);
        }
    }

    fn measured(&self, cycle: u64) -> Option<u64> {
        self.start.filter(|&s| cycle >= s)
    }

    /// Guest `i` sent `frame` in node cycle `cycle`.
    pub(super) fn sent(&mut self, i: usize, cycle: u64, frame: &[u8]) {
        let measured = self.measured(cycle).is_some();
        self.pairs.sent(i, cycle, frame, measured);
    }

    /// `frame` reached guest `dst` in node cycle `cycle`.
    pub(super) fn delivered(&mut self, dst: usize, cycle: u64, frame: &[u8]) {
        let (
            Some(Paired {
                src,
                sent_at,
                bytes,
                measured: true,
                seq,
            }),
            Some(start),
        ) = (self.pairs.delivered(dst, frame), self.start)
        else {
            return;
        };
        self.timeline.message(&Message {
            src,
            dst: dst as u32,
            sent: sent_at - start,
            received: cycle.saturating_sub(start),
            bytes,
            tag: seq,
        });
    }

    /// The frames delivered to guest `i` in node cycle `cycle` found it
    /// idle since node cycle `idle_from`: it ran until then, and waited.
    pub(super) fn woke(&mut self, i: usize, cycle: u64, idle_from: u64) {
        let Some(start) = self.measured(cycle) else {
            return;
        };
        let Some(since) = self.since.get_mut(i) else {
            return;
        };
        let from = idle_from.clamp(*since, cycle);
        self.timeline
            .state(i as u32, *since - start, from - start, State::Running);
        self.timeline
            .state(i as u32, from - start, cycle - start, State::Waiting);
        *since = cycle;
    }

    /// A slice ended at node cycle `cycle`: the network's counters of
    /// the windows that ended are drawn.
    pub(super) fn reached(&mut self, cycle: u64) {
        self.end = self.end.max(cycle);
        self.draw_counters();
    }

    /// Writes the counters of the windows the server has handed over, each
    /// at its first node cycle (those before the measured phase left out).
    fn draw_counters(&mut self) {
        let (Some(board), Some(start)) = (&self.counters, self.start) else {
            return;
        };
        // Taken under the lock, written after it: the server appends to
        // the board at every barrier.
        let (names, windows) = {
            let mut b = board.lock().unwrap_or_else(|e| e.into_inner());
            let Counted { names, windows } = &mut *b;
            (names.clone(), std::mem::take(windows))
        };
        for w in windows.iter().filter(|w| w.from >= start) {
            (self.timeline).counters(w.from - start, &names, &w.values);
        }
    }

    /// Ends the timeline at the last slice's end, and draws its chart if
    /// asked.
    ///
    /// # Errors
    /// A write failed, or the chart could not be drawn.
    pub(super) fn finish(mut self) -> Result<Written, TimelineError> {
        self.draw_counters();
        let start = self.start.unwrap_or(self.end);
        for (i, &since) in self.since.iter().enumerate() {
            if since < self.end {
                self.timeline.state(
                    i as u32,
                    since.saturating_sub(start),
                    self.end - start,
                    State::Running,
                );
            }
        }
        self.timeline.finish(self.end - start)
    }
}
