//! `fsin qemu --timeline`: what each guest did in the measured
//! phase of a lock-step run, in node cycles from its start, and every
//! frame from its send to its delivery, streamed into a Paraver or
//! Perfetto timeline (crate `fsin-timeline`) as nic-bridge carries them.
//!
//! A guest is `Running` except where it was idle until a frame woke it
//! (the plugins' `Woke`): that idle time is `Waiting a message`, the split
//! the frame trace makes between computation and waits. Frames are paired
//! with their sends as the frame trace pairs them ([`Pairing`]); each
//! copy of a broadcast is one message. With `--trace-level mpi`, each
//! rank is a track of its guest (`rank R`) with its MPI calls, drawn at
//! the end from its records ([`GuestTimeline::ranks`]).

use fsin_timeline::{
    Counted, CounterBoard, Layout, Message, MpiCall, MpiFunction, Row, State, Target, Timeline,
    TimelineError, Written,
};
use fsin_trace::mpi::{MpiOp, MpiTrace, WaitKind};

use super::mpi_in::RankClock;
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

    /// Draws each rank of `trace` on a track of its guest (`rank R`):
    /// its MPI calls from `MPI_Init` to `MPI_Finalize` as Extrae shows
    /// them, `Running` between, in node cycles of `2^shift` ns, its guest
    /// clock placed by `clocks` (by rank; docs/qemu.md says how close).
    /// Calls wholly outside the measured phase are left out, the others
    /// cut to it; a rank without a clock (a library that does not stamp
    /// its datagrams) is not drawn.
    pub(super) fn ranks(&mut self, trace: &MpiTrace, clocks: &[Option<RankClock>], shift: u32) {
        let Some(start) = self.start else {
            return;
        };
        let last = i128::from(self.end.saturating_sub(start));
        for (r, rank) in trace.ranks.iter().enumerate() {
            let Some(RankClock {
                guest,
                offset_ns: Some(offset),
                shipped_ns,
            }) = clocks.get(r).copied().flatten()
            else {
                continue;
            };
            // A guest clock's tick from the measured phase's start.
            let tick = |t: u64| ((i128::from(t) + offset) >> shift) - i128::from(start);
            let Some(track) = self.timeline.track(guest as u32, &format!("rank {r}")) else {
                continue;
            };
            let base = rank.init_exit_ns;
            let finalize = base.saturating_add(rank.live_ns);
            let calls =
                std::iter::once((base.saturating_sub(rank.init_ns), base, MpiFunction::Init))
                    .chain(rank.calls.iter().map(|c| {
                        (
                            base.saturating_add(c.enter_ns),
                            base.saturating_add(c.exit_ns),
                            function(&c.op),
                        )
                    }))
                    .chain(std::iter::once((
                        finalize,
                        shipped_ns.unwrap_or(finalize).max(finalize),
                        MpiFunction::Finalize,
                    )));
            let mut ran_from: Option<i128> = None;
            for (enter, exit, function) in calls {
                let (a, b) = (tick(enter), tick(exit));
                if let Some(from) = ran_from {
                    let (f, e) = (from.max(0), a.min(last));
                    if e > f {
                        (self.timeline).state(track, f as u64, e as u64, State::Running);
                    }
                }
                ran_from = Some(b);
                if b >= 0 && a <= last {
                    let (from, to) = (a.max(0) as u64, b.min(last) as u64);
                    self.timeline
                        .call(track, from, to.max(from), &MpiCall::of(function));
                }
            }
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

/// The function a recorded call `op` is drawn as.
fn function(op: &MpiOp) -> MpiFunction {
    match op {
        MpiOp::Send { sync: false, .. } => MpiFunction::Send,
        MpiOp::Send { sync: true, .. } => MpiFunction::Ssend,
        MpiOp::Isend { sync: false, .. } => MpiFunction::Isend,
        MpiOp::Isend { sync: true, .. } => MpiFunction::Issend,
        MpiOp::Recv { .. } => MpiFunction::Recv,
        MpiOp::Irecv { .. } => MpiFunction::Irecv,
        MpiOp::Sendrecv { .. } => MpiFunction::Sendrecv,
        MpiOp::Wait { kind, .. } => match kind {
            WaitKind::Wait => MpiFunction::Wait,
            WaitKind::Waitall => MpiFunction::Waitall,
            WaitKind::Waitany => MpiFunction::Waitany,
            WaitKind::Waitsome => MpiFunction::Waitsome,
            WaitKind::Test => MpiFunction::Test,
            WaitKind::Testall => MpiFunction::Testall,
            WaitKind::Testany => MpiFunction::Testany,
        },
        MpiOp::Probe => MpiFunction::Probe,
        MpiOp::Collective(call) => MpiFunction::from(call.op),
        MpiOp::CommNew { split: false, .. } => MpiFunction::CommDup,
        MpiOp::CommNew { split: true, .. } => MpiFunction::CommSplit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsin_timeline::TimelineFormat;
    use fsin_trace::mpi::{Call, Collective, CollectiveCall, Rank};

    /// Every kind of recorded call (both flavours of send, every
    /// completion call and collective, both communicator calls) is drawn
    /// as the function the trace names it (`MpiOp::mpi_name`, the
    /// Dimemas writer's table), each as a function of its own.
    #[test]
    fn every_recorded_call_has_a_timeline_call() {
        let p2p = |sync| {
            [
                MpiOp::Send {
                    dst: 0,
                    tag: 0,
                    bytes: 0,
                    comm: 0,
                    sync,
                },
                MpiOp::Isend {
                    dst: 0,
                    tag: 0,
                    bytes: 0,
                    comm: 0,
                    sync,
                    req: 0,
                },
            ]
        };
        let mut ops: Vec<MpiOp> = p2p(false).into_iter().chain(p2p(true)).collect();
        ops.push(MpiOp::Recv {
            src: 0,
            tag: 0,
            bytes: 0,
            comm: 0,
        });
        ops.push(MpiOp::Irecv {
            src: None,
            tag: None,
            bytes: 0,
            comm: 0,
            req: 0,
        });
        ops.push(MpiOp::Sendrecv {
            dst: 0,
            send_tag: 0,
            send_bytes: 0,
            src: 0,
            recv_tag: 0,
            recv_bytes: 0,
            comm: 0,
        });
        ops.push(MpiOp::Probe);
        ops.extend(WaitKind::ALL.map(|kind| MpiOp::Wait {
            kind,
            passed: 0,
            done: Vec::new(),
        }));
        ops.extend(Collective::ALL.map(|op| {
            MpiOp::Collective(CollectiveCall {
                op,
                comm: 0,
                root: None,
                sent: 0,
                received: 0,
                per_peer: Vec::new(),
            })
        }));
        ops.extend([false, true].map(|split| MpiOp::CommNew {
            parent: 0,
            comm: None,
            split,
        }));
        for op in &ops {
            assert_eq!(MpiCall::of(function(op)).name, op.mpi_name(), "{op:?}");
        }
        let names: std::collections::BTreeSet<_> = ops.iter().map(MpiOp::mpi_name).collect();
        assert_eq!(names.len(), 29, "{names:?}");
    }

    /// One rank on guest 1, its clock 976,000 ns behind the node time (8
    /// ns a cycle), the measured phase from cycle 1,000 to 11,000: its
    /// calls land on the ticks worked out by hand, `MPI_Init` cut at the
    /// phase's start, `Running` between the calls.
    #[test]
    fn a_ranks_calls_land_on_its_guests_node_cycles() {
        let dir = std::env::temp_dir().join(format!("fsin-tl-ranks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let target = Target {
            path: dir.join("t.prv"),
            format: TimelineFormat::Paraver,
            limit: u64::MAX,
            chart: None,
            span: None,
        };
        let mut t = GuestTimeline::new(&target, 2, 0, None).unwrap();
        t.start_at(1000);
        t.reached(11_000);
        let call = |enter_ns, exit_ns, op| Call {
            enter_ns,
            exit_ns,
            op,
        };
        let send = MpiOp::Send {
            dst: 0,
            tag: 1,
            bytes: 8,
            comm: 0,
            sync: false,
        };
        let barrier = MpiOp::Collective(CollectiveCall {
            op: Collective::Barrier,
            comm: 0,
            root: None,
            sent: 0,
            received: 0,
            per_peer: Vec::new(),
        });
        let trace = MpiTrace {
            ranks: vec![Rank {
                host: "node1".into(),
                live_ns: 40_000,
                init_ns: 500_000,
                init_exit_ns: 1_000_000,
                start_ns: 0,
                calls: vec![call(8_000, 16_000, send), call(24_000, 32_000, barrier)],
                burst_kernel_ns: Vec::new(),
                burst_frames: Vec::new(),
                truncated: false,
            }],
            comms: Vec::new(),
        };
        let clock = RankClock {
            guest: 1,
            offset_ns: Some(24_000 - 1_000_000),
            shipped_ns: Some(1_050_000),
        };
        t.ranks(&trace, &[Some(clock)], 3);
        let written = t.finish().unwrap();
        assert_eq!(written.calls, 4);
        let text = std::fs::read_to_string(&target.path).unwrap();
        let rank: Vec<&str> = text
            .lines()
            .filter(|l| l.split(':').nth(4) == Some("2"))
            .collect();
        let want: Vec<String> = [
            "1:0:2000:15",
            "2:0:50000003:31",
            "2:2000:50000003:0",
            "1:2000:3000:1",
            "1:3000:4000:4",
            "2:3000:50000001:1",
            "2:4000:50000001:0",
            "1:4000:5000:1",
            "1:5000:6000:5",
            "2:5000:50000002:8",
            "2:6000:50000002:0",
            "1:6000:7000:1",
            "1:7000:8250:15",
            "2:7000:50000003:32",
            "2:8250:50000003:0",
        ]
        .iter()
        .map(|r| {
            let (kind, rest) = r.split_once(':').unwrap();
            format!("{kind}:2:1:2:2:{rest}")
        })
        .collect();
        assert_eq!(rank, want);
        let row = std::fs::read_to_string(dir.join("t.row")).unwrap();
        assert!(row.ends_with("guest 0\nguest 1\nrank 0\n"), "{row}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
