//! Trace replay as INSEE's code does it (`compat=insee`; INSEE's
//! `trace.c`, `data_generation.c`, `event.c`), so that its execution cycles
//! can be reproduced. [`crate::replay`] is the corrected replay of the
//! traces paper; docs/model.md lists what differs.
//!
//! INSEE's loop, iteration `h` (its clock starts at 1; fsin-rs's cycle
//! `now` is `h - 1`):
//! 1. the deadlock check: when every task with events has a receive at its
//!    head for more than 10,000 iterations in a row, the run aborts;
//! 2. the CPU-burst skip: when no packet is in the network, no task's head
//!    is a send and some head is a computation, the clock jumps by the
//!    smallest remaining computation, which every computing head advances;
//! 3. generation, node by node: a computing head ticks (and ends when its
//!    count is reached); then, unless the node still holds a packet that
//!    found no room, satisfied receives at the head are removed and a
//!    send at the head generates one packet;
//! 4. the network's cycle; the clock advances; the run ends when every
//!    event queue is empty, without draining the network.
//!
//! The printed clock, which [`InseeReplay::exec_cycles`] gives, is the
//! iteration that emptied the last queue, plus one. A receive matches a
//! message of its source node and tag with the same length in packets;
//! arrivals are counted by that key.

use std::collections::HashMap;

use fsin_model::engine::{Delivered, NewPacket};

use fsin_model::network::Network;
use fsin_trace::{Event, Trace};

use crate::replay::{BlockedTask, Job, ReplayParams, BACKGROUND};
use crate::Observer;

/// INSEE's `CHECK_TRC_DEADLOCK`: iterations every task may spend waiting on
/// a receive before the run is declared deadlocked.
const DEADLOCK_WAIT: u64 = 10_000;

/// One task of a job, with INSEE's count of the event at its head
/// (computation cycles ticked, packets generated).
struct Task {
    trace: usize,
    task: u32,
    job: u32,
    node: u32,
    next: usize,
    count: u64,
}

/// The replay state of every task, INSEE's way.
pub struct InseeReplay {
    traces: Vec<Trace>,
    params: ReplayParams,
    tasks: Vec<Task>,
    /// Node of each task of each job.
    nodes: Vec<Vec<u32>>,
    /// Packets arrived per (destination node, source node, tag, length in
    /// packets).
    arrived: HashMap<(u32, u32, u32, u32), u64>,
    /// Consecutive iterations, up to now, in which every task waited on a
    /// receive: the first of them.
    waiting_since: Option<u64>,
    /// Landing cycle of the last CPU-burst skip (no skip is checked there).
    landed: Option<u64>,
    /// The printed clock, once the run has ended.
    end: Option<u64>,
    deadlock: bool,
    /// Messages sent (all their packets generated).
    pub messages_sent: u64,
    /// Messages fully delivered.
    pub messages_delivered: u64,
}

impl InseeReplay {
    /// A replay of `jobs` (instances of `traces`, each task already given a
    /// node).
    ///
    /// # Panics
    /// As [`crate::replay::Replay::new`].
    pub fn new(traces: Vec<Trace>, jobs: &[Job], params: ReplayParams) -> InseeReplay {
        let mut tasks = Vec::new();
        for (j, job) in jobs.iter().enumerate() {
            assert!(traces[job.trace].task_count() <= job.nodes.len());
            for (t, &node) in job.nodes.iter().enumerate() {
                tasks.push(Task {
                    trace: job.trace,
                    task: t as u32,
                    job: j as u32,
                    node,
                    next: 0,
                    count: 0,
                });
            }
        }
        let mut r = InseeReplay {
            nodes: jobs.iter().map(|j| j.nodes.clone()).collect(),
            traces,
            params,
            tasks,
            arrived: HashMap::new(),
            waiting_since: None,
            landed: None,
            end: None,
            deadlock: false,
            messages_sent: 0,
            messages_delivered: 0,
        };
        for k in 0..r.tasks.len() {
            r.skip_empty_computations(k);
        }
        r
    }

    /// The event at the head of task `k`.
    fn head(&self, k: usize) -> Option<Event> {
        let t = &self.tasks[k];
        self.traces[t.trace]
            .tasks
            .get(t.task as usize)?
            .get(t.next)
            .copied()
    }

    /// Packets of a message of `bytes` bytes (INSEE: at least one).
    fn packets(&self, bytes: u64) -> u64 {
        bytes.max(1).div_ceil(self.params.packet_bytes)
    }

    /// Cycles of a computation of `amount` by task `k`, truncated as
    /// INSEE's integer conversion does.
    fn cycles(&self, k: usize, amount: u64) -> u64 {
        let trace = &self.traces[self.tasks[k].trace];
        self.params.cpu_cycles(trace, amount) as u64
    }

    /// Removes the head of task `k`, and computations of no cycle after it
    /// (INSEE drops them when it reads the trace).
    fn pop(&mut self, k: usize) {
        self.tasks[k].next += 1;
        self.tasks[k].count = 0;
        self.skip_empty_computations(k);
    }

    fn skip_empty_computations(&mut self, k: usize) {
        while let Some(Event::Cpu { amount }) = self.head(k) {
            if self.cycles(k, amount) > 0 {
                break;
            }
            self.tasks[k].next += 1;
        }
    }

    /// The node of task `task` of task `k`'s job.
    fn node_of(&self, k: usize, task: u32) -> u32 {
        self.nodes[self.tasks[k].job as usize][task as usize]
    }

    /// Runs iteration `now + 1` of INSEE's loop up to the network's cycle
    /// (deadlock check, CPU-burst skip, generation); returns whether the
    /// network must step this cycle (false: it may skip to
    /// [`InseeReplay::next_due`]).
    pub fn run_due<O: Observer + ?Sized>(
        &mut self,
        now: u64,
        net: &mut Network,
        mut detail: Option<&mut O>,
    ) -> bool {
        if self.end.is_some() {
            return false;
        }
        let n = self.tasks.len();
        // The landing cycle of a skip continues the iteration that skipped.
        let landing = self.landed == Some(now);
        let all_waiting = !landing
            && (0..n).any(|k| self.head(k).is_some())
            && (0..n)
                .filter_map(|k| self.head(k))
                .all(|e| matches!(e, Event::Recv { .. }));
        if all_waiting {
            let since = *self.waiting_since.get_or_insert(now);
            if now - since > DEADLOCK_WAIT {
                self.deadlock = true;
                self.end = Some(now + 2);
                return false;
            }
        } else if !landing {
            self.waiting_since = None;
        }
        if !landing
            && net.is_idle()
            && !(0..n).any(|k| matches!(self.head(k), Some(Event::Send { .. })))
        {
            let skip = (0..n)
                .filter_map(|k| match self.head(k) {
                    Some(Event::Cpu { amount }) => {
                        Some(self.cycles(k, amount) - self.tasks[k].count)
                    }
                    _ => None,
                })
                .min();
            if let Some(res) = skip {
                for k in 0..n {
                    if let Some(Event::Cpu { amount }) = self.head(k) {
                        self.tasks[k].count += res;
                        if self.tasks[k].count >= self.cycles(k, amount) {
                            self.pop(k);
                        }
                    }
                }
                self.landed = Some(now + res);
                if self.all_done() {
                    self.end = Some(now + res + 2);
                }
                return false;
            }
        }
        let mut busy = false;
        for k in 0..self.tasks.len() {
            busy |= self.generate(k, net, detail.as_deref_mut());
        }
        if self.all_done() {
            self.end = Some(now + 2);
        }
        busy
    }

    /// INSEE's `data_generation` for task `k`; whether anything happened.
    fn generate<O: Observer + ?Sized>(
        &mut self,
        k: usize,
        net: &mut Network,
        detail: Option<&mut O>,
    ) -> bool {
        let node = self.tasks[k].node;
        let mut changed = false;
        if let Some(Event::Cpu { amount }) = self.head(k) {
            self.tasks[k].count += 1;
            changed = true;
            if self.tasks[k].count >= self.cycles(k, amount) {
                self.pop(k);
            }
        }
        if net.source_backlog(node) > 0 {
            return true;
        }
        while let Some(Event::Recv { src, tag, bytes }) = self.head(k) {
            let p = self.packets(bytes);
            let key = (node, self.node_of(k, src), tag, p as u32);
            match self.arrived.get_mut(&key) {
                Some(n) if *n >= p => {
                    *n -= p;
                    self.messages_delivered += 1;
                    self.pop(k);
                    changed = true;
                }
                _ => break,
            }
        }
        if let Some(Event::Send { dst, tag, bytes }) = self.head(k) {
            let p = self.packets(bytes);
            let to = self.node_of(k, dst);
            if let Some(d) = detail {
                d.generated(net, node, to);
            }
            net.inject(NewPacket {
                src: node,
                dst: to,
                tag: (u64::from(tag) << 32) | (p.min(u64::from(u32::MAX))),
            })
            .expect("placed tasks are on distinct, existing nodes");
            self.tasks[k].count += 1;
            if self.tasks[k].count >= p {
                self.messages_sent += 1;
                self.pop(k);
            }
            return true;
        }
        changed
    }

    fn all_done(&self) -> bool {
        (0..self.tasks.len()).all(|k| self.head(k).is_none())
    }

    /// A packet of the workload arrived: counted under its message's key.
    pub fn delivered(&mut self, d: &Delivered) {
        if d.tag == BACKGROUND {
            return;
        }
        let (tag, p) = ((d.tag >> 32) as u32, d.tag as u32);
        *self.arrived.entry((d.dst, d.src, tag, p)).or_default() += 1;
    }

    /// Where a skip lands, or the cycle the deadlock wait ends, when
    /// nothing else is due before.
    pub fn next_due(&self, now: u64) -> Option<u64> {
        match (self.landed, self.waiting_since) {
            (Some(l), _) if l > now => Some(l),
            (_, Some(since)) => Some((since + DEADLOCK_WAIT + 1).max(now + 1)),
            _ => Some(now + 1),
        }
    }

    /// Whether the run has ended (every queue empty, or the deadlock wait
    /// over).
    pub fn finished(&self) -> bool {
        self.end.is_some() && !self.deadlock
    }

    /// Whether INSEE's deadlock wait ended the run.
    pub fn deadlocked(&self) -> bool {
        self.deadlock
    }

    /// INSEE's printed clock (`Simulation clock`).
    pub fn exec_cycles(&self) -> u64 {
        self.end.unwrap_or(0)
    }

    /// Number of tasks replayed.
    pub fn tasks(&self) -> usize {
        self.tasks.len()
    }

    /// The tasks with events left, with the event at their head.
    pub fn blocked(&self) -> Vec<BlockedTask> {
        (0..self.tasks.len())
            .filter_map(|k| {
                let e = self.head(k)?;
                let t = &self.tasks[k];
                let origin = self.traces[t.trace].origin(t.task, t.next);
                Some(BlockedTask {
                    job: t.job,
                    task: t.task,
                    node: t.node,
                    waiting_for: match e {
                        Event::Recv { src, tag, bytes } => {
                            format!("receive from task {src} tag {tag} ({bytes} bytes) at {origin}")
                        }
                        Event::Send { dst, tag, .. } => {
                            format!("sending to task {dst} tag {tag} at {origin}")
                        }
                        Event::Cpu { .. } => format!("computing at {origin}"),
                    },
                    pending: Vec::new(),
                })
            })
            .collect()
    }
}
