//! A co-simulation's timeline (`--timeline` on `fsin serve`, `fsin demo`
//! and `fsin cosim-sweep`): where the run's wall-clock time
//! went, per node and slice, and every frame from its sender to its
//! receiver.
//!
//! Ticks are wall-clock nanoseconds from the first Continue. Per node and
//! slice, the node is `Running` from the Continue that starts the slice to
//! its client's SliceDone, then `Synchronization` (waiting at the barrier,
//! and for the network's slice, the server's part of the round) until the
//! next Continue. A frame is drawn from the point of its sender's running
//! interval that its send stamp takes in the slice (node cycles mapped
//! linearly onto the interval) to the point its arrival stamp takes in the
//! receiver's: so each frame lands in the slices that carried it. The
//! network's counters ([`fsin::counters`]) come per window of the links'
//! watch (`util_window` slices of the measured phase), each at the point
//! its first node cycle takes in its round. The
//! times are the machine's own, so unlike the other timelines this one
//! differs from run to run.

use std::collections::VecDeque;
use std::time::Instant;

use fsin::timeline::{
    CounterWindow, Layout, Message, Row, State, Target, Timeline, TimelineError, Written,
};

use super::roster::Roster;
use crate::coupler::{OutFrame, Slice};

/// Slices kept to place the sends of frames still in flight; a frame
/// sent before them is drawn from the oldest one's start.
const HISTORY: usize = 256;

/// One slice as it ran: its node cycles and, per node, the wall ticks of
/// its running interval.
struct Ran {
    node_start: u64,
    node_cycles: u64,
    released: u64,
    /// Per node: the tick its client's SliceDone came.
    done: Vec<u64>,
}

impl Ran {
    /// The tick of node cycle `c` in node `n`'s running interval.
    fn tick(&self, n: usize, c: u64) -> u64 {
        let done = self.done.get(n).copied().unwrap_or(self.released);
        self.tick_until(done, c)
    }

    /// The tick of node cycle `c` in the round: from its Continue to the
    /// last SliceDone.
    fn round_tick(&self, c: u64) -> u64 {
        let last = self.done.iter().copied().max().unwrap_or(self.released);
        self.tick_until(last, c)
    }

    /// The tick of node cycle `c` in the interval from the Continue to
    /// tick `done`.
    fn tick_until(&self, done: u64, c: u64) -> u64 {
        let into = c.saturating_sub(self.node_start).min(self.node_cycles);
        let span = u128::from(done.saturating_sub(self.released));
        let at = span * u128::from(into) / u128::from(self.node_cycles.max(1));
        self.released + at as u64
    }
}

/// A frame delivered in the slice running: who sent it when, in node
/// cycles.
struct Arriving {
    src: u32,
    sent: u64,
    dst: u32,
    at: u64,
    bytes: u64,
}

/// The timeline of one co-simulation run.
pub(super) struct SliceTimeline {
    timeline: Timeline,
    /// Tick 0: the first Continue.
    origin: Option<Instant>,
    /// The slice running and the tick its Continue went out.
    running: Option<(Slice, u64)>,
    /// The frames delivered in it.
    arriving: Vec<Arriving>,
    /// Slices that ran, oldest first.
    history: VecDeque<Ran>,
    /// Per node: the tick since which it waits at the barrier.
    waiting: Vec<Option<u64>>,
    /// The tick of the last counters written.
    last_counter: Option<u64>,
}

impl SliceTimeline {
    /// The timeline of `nodes` nodes into `target`.
    ///
    /// # Errors
    /// The file cannot be created.
    pub(super) fn new(target: &Target, nodes: usize) -> Result<SliceTimeline, TimelineError> {
        let layout = Layout {
            rows: (0..nodes as u32)
                .map(|n| Row {
                    name: format!("node {n}"),
                    node: n,
                })
                .collect(),
            nodes: nodes as u32,
            tick: "wall-clock nanosecond".into(),
        };
        Ok(SliceTimeline {
            timeline: Timeline::create(target, layout)?,
            origin: None,
            running: None,
            arriving: Vec::new(),
            history: VecDeque::new(),
            waiting: vec![None; nodes],
            last_counter: None,
        })
    }

    fn tick(&mut self, at: Instant) -> u64 {
        let origin = *self.origin.get_or_insert(at);
        u64::try_from(at.saturating_duration_since(origin).as_nanos()).unwrap_or(u64::MAX)
    }

    /// Continue for `slice` went out now, with `deliveries`: the nodes
    /// that waited at the barrier run again.
    pub(super) fn released(&mut self, slice: &Slice, deliveries: &[OutFrame]) {
        let now = self.tick(Instant::now());
        self.end_waits(now);
        self.running = Some((*slice, now));
        self.arriving = deliveries
            .iter()
            .map(|f| Arriving {
                src: f.src,
                sent: f.sent,
                dst: f.node,
                at: f.node_cycle,
                bytes: f.data.len() as u64,
            })
            .collect();
    }

    /// Every live client finished the slice running (or the run ends
    /// there): each node ran until its client's SliceDone (now, for one
    /// that did not send it), and the frames delivered in the slice are
    /// drawn.
    pub(super) fn met(&mut self, roster: &Roster, k: u64) {
        let Some((slice, released)) = self.running.take() else {
            return;
        };
        let now = Instant::now();
        // The oldest slice's vector, reused once the history is full.
        let mut done = if self.history.len() == HISTORY {
            self.history.pop_front().map(|r| r.done).unwrap_or_default()
        } else {
            Vec::new()
        };
        done.clear();
        done.resize(self.waiting.len(), released);
        for c in roster.clients.values().filter(|c| c.live) {
            let at = if c.done == Some(k) { c.done_at } else { now };
            let t = self.tick(at).max(released);
            for &n in &c.nodes {
                if let (Some(d), Some(w)) =
                    (done.get_mut(n as usize), self.waiting.get_mut(n as usize))
                {
                    self.timeline.state(n, released, t, State::Running);
                    (*d, *w) = (t, Some(t));
                }
            }
        }
        self.history.push_back(Ran {
            node_start: slice.node_start,
            node_cycles: slice.node_cycles,
            released,
            done,
        });
        for f in std::mem::take(&mut self.arriving) {
            let received = self
                .ran_at(f.at)
                .map_or(released, |r| r.tick(f.dst as usize, f.at));
            let sent = self
                .ran_at(f.sent)
                .map_or(0, |r| r.tick(f.src as usize, f.sent));
            self.timeline.message(&Message {
                src: f.src,
                dst: f.dst,
                sent: sent.min(received),
                received,
                bytes: f.bytes,
                tag: f.sent,
            });
        }
    }

    /// The network's counters over `windows` (named `names`), each at the
    /// tick its first node cycle takes in the round that ran it.
    /// Windows inside slices skipped as idle (no round, so no width) would
    /// all fall on one tick: only the first of a tick is written.
    pub(super) fn counters(&mut self, names: &[String], windows: &[CounterWindow]) {
        for w in windows {
            let Some(t) = self.ran_at(w.from).map(|r| r.round_tick(w.from)) else {
                continue;
            };
            if self.last_counter.replace(t) == Some(t) {
                continue;
            }
            self.timeline.counters(t, names, &w.values);
        }
    }

    /// The slice that ran node cycle `c`, or the oldest kept.
    fn ran_at(&self, c: u64) -> Option<&Ran> {
        let i = self.history.partition_point(|r| r.node_start <= c);
        self.history.get(i.saturating_sub(1))
    }

    /// Ends the timeline now: the nodes waiting at the barrier waited
    /// until the end; the Gantt chart drawn if asked.
    ///
    /// # Errors
    /// A write failed, or the chart could not be drawn.
    pub(super) fn finish(mut self) -> Result<Written, TimelineError> {
        let end = self.tick(Instant::now());
        self.end_waits(end);
        self.timeline.finish(end)
    }

    /// The nodes waiting at the barrier waited until tick `now`.
    fn end_waits(&mut self, now: u64) {
        for (n, w) in self.waiting.iter_mut().enumerate() {
            if let Some(from) = w.take() {
                self.timeline
                    .state(n as u32, from, now, State::Synchronizing);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FaultPolicy;
    use fsin::timeline::TimelineFormat;

    /// 301 slices of 100 node cycles, no client (each round's interval
    /// spans no time, so each node cycle of a slice takes its Continue's
    /// tick); in the last, two frames arrive: one sent in slice 46, one
    /// in slice 0, older than the 256 slices kept (45 to 300), drawn from
    /// the oldest kept slice's Continue. Two counter windows a slice fall
    /// on one tick: the first only is written. The frames are told apart
    /// by their tag, their send's node cycle.
    #[test]
    fn old_sends_start_at_the_oldest_round_kept_and_a_ticks_windows_are_written_once() {
        let dir = std::env::temp_dir().join(format!("fsin-slice-tl-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let target = Target {
            path: dir.join("t.prv"),
            format: TimelineFormat::Paraver,
            limit: 1 << 20,
            chart: None,
            span: None,
        };
        let mut tl = SliceTimeline::new(&target, 2).unwrap();
        let roster = Roster::new(2, FaultPolicy::Stop);
        let names = ["accepted load".to_string()];
        let frame = |sent: u64| OutFrame {
            node: 1,
            node_cycle: 30_050,
            src: 0,
            sent,
            data: vec![0; 60],
        };
        for k in 0..=300u64 {
            let slice = Slice {
                node_start: k * 100,
                node_cycles: 100,
                net_start: k * 20,
                net_cycles: 20,
            };
            let arriving = if k == 300 {
                vec![frame(4_650), frame(50)]
            } else {
                Vec::new()
            };
            tl.released(&slice, &arriving);
            // Each Continue a tick of its own.
            std::thread::sleep(std::time::Duration::from_micros(20));
            tl.met(&roster, k);
            let window = |from: u64| CounterWindow {
                from,
                length: 50,
                values: vec![0.5],
            };
            tl.counters(&names, &[window(k * 100), window(k * 100 + 50)]);
        }
        tl.finish().unwrap();
        let text = std::fs::read_to_string(&target.path).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let records = |kind: &str| -> Vec<Vec<u64>> {
            (text.lines().skip(1))
                .filter(|l| l.starts_with(kind))
                .map(|l| l.split(':').map(|f| f.parse().unwrap()).collect())
                .collect()
        };
        // A counter per slice, at its Continue's tick: 301 distinct ticks.
        let continues: Vec<u64> = records("2:").iter().map(|r| r[5]).collect();
        assert_eq!(continues.len(), 301);
        assert!(continues.windows(2).all(|w| w[0] < w[1]));
        let flows = records("3:");
        let start = |tag: u64| flows.iter().find(|r| r[14] == tag).unwrap()[5];
        assert_eq!(flows.len(), 2);
        assert_eq!(start(4_650), continues[46]);
        assert_eq!(start(50), continues[45]);
    }
}
