//! Replay of traces and application kernels on the engine (traces paper,
//! sections 4.1-4.3; INSEE's event.c and data_generation.c).
//!
//! Every placed task is an *agent* on one node, with its trace's event
//! queue and a cursor. In cycle `t` an agent that is due runs events until
//! it has to wait:
//! - **send** of `B` bytes: `P = max(1, ceil(B / packet bytes))` packets
//!   are generated one per cycle, `t, t+1, ..., t+P-1`; while a packet of
//!   the node still waits for room in an injection buffer no new one is
//!   generated (TrGen's single pending packet). The next event runs in the
//!   cycle after the last packet was generated.
//! - **receive** (causal mode): done at once if the matching message has
//!   fully arrived (its last packet consumed in an earlier cycle);
//!   otherwise the agent waits and resumes in the cycle after that last
//!   packet is consumed. Messages match on (source task, tag), first
//!   arrived first (MPI's non-overtaking rule); arrivals that find no
//!   receive posted wait in the agent's pending list. In inject-at-will
//!   mode (traces paper, section 4.1) receives do not wait.
//! - **computation** of `c` units: `round(c * cycles_per_unit)` cycles
//!   (`round(c / cpu_speed)` for cycles, as Dimemas bursts are);
//!   the next event runs that many cycles later (traces paper, section 4.3).
//!
//! A **frame trace** ([`Trace::frames`], `fsin qemu --trace-out`) is
//! replayed as the co-simulation carried its frames: a send queues all
//! `P` packets of the frame at its NIC in cycle `t` and the agent goes on
//! at once (the NIC, not the task, waits for the network); a receive is
//! done `nic_latency` cycles after the frame's last packet is consumed
//! (when the frame reaches the NIC, as in co-simulation); computations are
//! node cycles (`round(c / cpu_speed)`). A task keeps its own node clock,
//! as its node did: an event at node cycle `n` happens in network cycle
//! `floor(n * NET / NODE)` (the slice ratio `slice`), and a receive that
//! waited for a frame arriving in network cycle `t` puts the clock at the
//! first node cycle of `t`, `ceil(t * NODE / NET)`, as co-simulation
//! stamps frames and deliveries (docs/model.md, "Traces out of live
//! runs").
//!
//! The run ends when every agent has run out of events and every message
//! has been delivered. If every unfinished agent waits on a receive and no
//! packet of the workload is left in the network, nothing can ever change:
//! that is a deadlock, reported with the blocked tasks.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

use fsin_timeline::{State, Timeline};
use fsin_trace::{is_kernel_frame, Event, TcpTimers, Trace, ARP_TAG, PROBE_TAG, TCP_ACK_TAG};
use serde::Serialize;

use fsin_model::engine::NewPacket;

use fsin_model::network::Network;

use crate::Observer;

mod calls;
mod connect;
mod contact;
mod nic;
mod params;
mod progress;
mod receive;
mod tcp;
use contact::{Connection, Contact, EventLoop};
pub use params::{ReplayParams, SliceSync, TraceMode};
use tcp::{Fire, Tcp};

/// Tag of packets that belong to no message (background traffic).
pub const BACKGROUND: u64 = u64::MAX;

/// One instance of a trace placed on the network.
#[derive(Debug, Clone)]
pub struct Job {
    /// Index of the trace in the replay's trace list.
    pub trace: usize,
    /// Node of every task of the trace.
    pub nodes: Vec<u32>,
}

#[derive(Debug, Clone)]
struct Agent {
    trace: u32,
    task: u32,
    job: u32,
    node: u32,
    /// Index of the current event.
    next: u32,
    /// Packets of the current send still to generate (0: not sending).
    left: u32,
    /// Message of the current send.
    msg: u32,
    waiting: bool,
    /// Cycle the agent ran out of events.
    done_at: Option<u64>,
    /// Frame traces: the node cycle the agent has reached.
    node_time: u64,
    /// What it does since cycle `since` (for a timeline).
    state: State,
    since: u64,
    /// Lowered MPI-level traces with a connection model: its MPI
    /// library's event loop.
    event_loop: EventLoop,
    /// Lowered MPI-level traces that pay a poll per connection
    /// ([`Trace::poll`]): the connections its task holds, each from its
    /// first frame to or from the peer.
    connections: u32,
    /// Lowered MPI-level traces: its place in its task's groups of
    /// receives taken as they arrive ([`Trace::recv_groups`]).
    progress: progress::Progress,
    /// Lowered MPI-level traces that pay a poll: the node cycle its last
    /// run of its event loop polled its connections at (a frame in by
    /// then needs no other run).
    polled_at: u64,
    /// Lowered MPI-level traces with a NIC window ([`Trace::irq`]): its
    /// node's interrupts.
    nic: nic::Interrupts,
    /// Lowered MPI-level traces, for a timeline: its next MPI call
    /// ([`Trace::calls`]), the cycle the one it is in began, and the
    /// timeline's track its calls are drawn on (made at its first).
    call: u32,
    call_since: Option<u64>,
    call_track: Option<u32>,
}

/// Agent `a` enters `state` in cycle `t`: its state until then goes to
/// `timeline`, if one is recorded.
fn enter(timeline: &mut Option<Box<Timeline>>, ag: &mut Agent, a: u32, state: State, t: u64) {
    if let Some(tl) = timeline.as_mut() {
        if state != ag.state {
            tl.state(a, ag.since, t, ag.state);
            ag.state = state;
            ag.since = t;
        }
    }
}

/// What an agent does after one of its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Then {
    /// Runs its next event in the same cycle.
    Next,
    /// Waits: it is due again later, or a delivery wakes it.
    Wait,
}

#[derive(Debug, Clone, Copy)]
struct Msg {
    dst_agent: u32,
    src_node: u32,
    dst_node: u32,
    src_task: u32,
    tag: u32,
    packets: u32,
    arrived: u32,
    /// Cycles from the last packet's consumption to the message's arrival
    /// (`nic_latency` for a frame, else 1: the cycle after).
    after: u64,
    /// For a timeline: the sending agent, the cycle its send began, bytes.
    src_agent: u32,
    sent: u64,
    bytes: u64,
    /// With TCP's timers ([`Trace::tcp`]): the frames of the receiver's
    /// data to the sender that this frame acknowledges.
    acks: u32,
}

/// Every packet of frame `m` (message `id`) into the network at once, as
/// its NIC queues it; each also to `detail`, if given.
fn inject_frame<O: Observer + ?Sized>(
    net: &mut Network,
    mut detail: Option<&mut O>,
    m: &Msg,
    id: u32,
) {
    for _ in 0..m.packets {
        if let Some(d) = detail.as_deref_mut() {
            d.generated(net, m.src_node, m.dst_node);
        }
        net.inject(NewPacket {
            src: m.src_node,
            dst: m.dst_node,
            tag: u64::from(id),
        })
        .expect("placed tasks are on distinct, existing nodes");
    }
}

/// A task that has not finished, for reports.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct BlockedTask {
    /// Job (instance) index.
    pub job: u32,
    /// Task id within its trace.
    pub task: u32,
    /// Node it runs on.
    pub node: u32,
    /// What it waits for, with the event's origin.
    pub waiting_for: String,
    /// Messages that arrived but match no receive yet.
    pub pending: Vec<String>,
}

/// The replay state of every task of every job.
pub struct Replay {
    traces: Vec<Trace>,
    params: ReplayParams,
    agents: Vec<Agent>,
    /// First agent of each job.
    job_base: Vec<u32>,
    msgs: Vec<Msg>,
    free_msgs: Vec<u32>,
    /// Early arrivals per agent.
    pending: Vec<Vec<receive::Early>>,
    /// Frames injected late (parallel co-simulation): (cycle, order,
    /// message), each the whole of its message's packets.
    delayed: BinaryHeap<Reverse<(u64, u64, u32)>>,
    delayed_count: u64,
    /// Agents due, by cycle.
    /// (cycle, node cycle: frame traces' order within a cycle, agent).
    due: BinaryHeap<Reverse<(u64, u64, u32)>>,
    /// Workload packets generated and not yet delivered.
    in_flight: u64,
    finished: usize,
    last_delivery: Option<u64>,
    /// Messages sent (a frame trace's frames; each copy of a broadcast
    /// ARP request one).
    pub messages_sent: u64,
    /// Of `messages_sent`, the TCP acknowledgements of lowered MPI-level
    /// traces ([`TCP_ACK_TAG`]).
    pub acks_sent: u64,
    /// The ARP requests that lowered MPI-level traces' agents broadcast
    /// ([`Trace::arp`]).
    pub arp_requests: u64,
    /// Their copies, among `messages_sent` (one per other agent of the
    /// job).
    arp_copies: u64,
    /// Of `messages_sent`, the tail-loss probes of lowered MPI-level
    /// traces' connections ([`Trace::tcp`], [`PROBE_TAG`]).
    pub tcp_probes: u64,
    /// Of `acks_sent`, the delayed acknowledgements ([`Trace::tcp`]).
    pub delayed_acks: u64,
    /// Messages fully delivered.
    pub messages_delivered: u64,
    /// The timeline being recorded, if one is (`--timeline`): row `k` is
    /// agent `k`.
    timeline: Option<Box<Timeline>>,
    /// In traces with a connection model ([`Trace::contact`],
    /// [`Trace::tick`]): each pair of agents (lower first) that has sent
    /// a frame, and its connection ([`Replay::connect`]).
    connections: HashMap<(u32, u32), Connection>,
    /// Each agent (first) that has set up another (second) as its peer,
    /// and the node cycle it has from ([`Trace::contact`]).
    peers: HashMap<(u32, u32), u64>,
    /// The TCP timers of every connection, in traces that have them
    /// ([`Trace::tcp`]).
    tcp: Tcp,
    /// Each agent (first) and a peer it holds a connection to (second),
    /// in traces that pay a poll per connection ([`Trace::poll`]).
    held: HashSet<(u32, u32)>,
}

impl Replay {
    /// A replay of `jobs` (instances of `traces`, each task already given a
    /// node); every agent is due in cycle 0.
    ///
    /// # Panics
    /// If a job names a trace that does not exist, or a trace names tasks
    /// beyond its job's node list (checked by the caller with
    /// [`Trace::check_within`]).
    pub fn new(traces: Vec<Trace>, jobs: &[Job], params: ReplayParams) -> Replay {
        let mut agents = Vec::new();
        let mut job_base = Vec::new();
        for (j, job) in jobs.iter().enumerate() {
            job_base.push(agents.len() as u32);
            let tasks = traces[job.trace].task_count();
            assert!(tasks <= job.nodes.len(), "job {j} lacks nodes");
            for (task, &node) in job.nodes.iter().enumerate() {
                agents.push(Agent {
                    trace: job.trace as u32,
                    task: task as u32,
                    job: j as u32,
                    node,
                    next: 0,
                    left: 0,
                    msg: 0,
                    waiting: false,
                    done_at: None,
                    node_time: 0,
                    state: State::Running,
                    since: 0,
                    event_loop: EventLoop::NEW,
                    connections: 0,
                    progress: progress::Progress::default(),
                    polled_at: 0,
                    nic: nic::Interrupts::default(),
                    call: 0,
                    call_since: None,
                    call_track: None,
                });
            }
        }
        let due = (0..agents.len() as u32)
            .map(|a| Reverse((0, 0, a)))
            .collect();
        Replay {
            pending: vec![Vec::new(); agents.len()],
            traces,
            params,
            agents,
            job_base,
            msgs: Vec::new(),
            free_msgs: Vec::new(),
            due,
            delayed: BinaryHeap::new(),
            delayed_count: 0,
            in_flight: 0,
            finished: 0,
            last_delivery: None,
            messages_sent: 0,
            acks_sent: 0,
            arp_requests: 0,
            arp_copies: 0,
            tcp_probes: 0,
            delayed_acks: 0,
            messages_delivered: 0,
            timeline: None,
            connections: HashMap::new(),
            peers: HashMap::new(),
            tcp: Tcp::default(),
            held: HashSet::new(),
        }
    }

    /// Records the replay into `timeline` from now on: each agent's states
    /// (row `k` is agent `k`, in job order) and every message delivered.
    pub fn record(&mut self, timeline: Timeline) {
        self.timeline = Some(Box::new(timeline));
    }

    /// The timeline recorded ([`Replay::record`]), with the state of every
    /// agent that has not finished closed at cycle `end`.
    pub fn take_timeline(&mut self, end: u64) -> Option<Timeline> {
        let mut tl = self.timeline.take()?;
        for (a, ag) in self.agents.iter().enumerate() {
            if ag.done_at.is_none() {
                tl.state(a as u32, ag.since, end, ag.state);
            }
        }
        Some(*tl)
    }

    /// The timeline being recorded, if one is (for the network's counters).
    pub fn timeline(&mut self) -> Option<&mut Timeline> {
        self.timeline.as_deref_mut()
    }

    /// Runs every agent due in cycle `now`; returns whether a packet was
    /// handed to the network (each one also to `detail`, if given).
    pub fn run_due<O: Observer + ?Sized>(
        &mut self,
        now: u64,
        net: &mut Network,
        mut detail: Option<&mut O>,
    ) -> bool {
        let mut injected = false;
        while let Some(fire) = self.tcp.fire(now) {
            match fire {
                Fire::Probe { from, to, bytes } => {
                    if self.kernel_frame((from, to), PROBE_TAG, bytes, now) {
                        self.tcp_probes += 1;
                    }
                }
                Fire::Ack { from, to } => {
                    let bytes = self.traces[self.agents[from as usize].trace as usize]
                        .tcp
                        .ack;
                    if self.kernel_frame((from, to), TCP_ACK_TAG, bytes, now) {
                        self.delayed_acks += 1;
                    }
                }
            }
        }
        while let Some(&Reverse((t, _, id))) = self.delayed.peek() {
            if t > now {
                break;
            }
            self.delayed.pop();
            inject_frame(net, detail.as_deref_mut(), &self.msgs[id as usize], id);
            injected = true;
        }
        while let Some(&Reverse((t, node_time, a))) = self.due.peek() {
            if t > now {
                break;
            }
            self.due.pop();
            let ag = &self.agents[a as usize];
            if self.traces[ag.trace as usize].rx > 0 && ag.node_time != node_time {
                // The kernel's receive of a frame held the agent up: it
                // is due again later ([`Replay::delivered`]).
                continue;
            }
            injected |= self.run_agent(a, now, net, detail.as_deref_mut());
        }
        injected
    }

    /// Runs agent `a`'s events in cycle `now` until it has to wait;
    /// returns whether it handed a packet to the network.
    fn run_agent<O: Observer + ?Sized>(
        &mut self,
        a: u32,
        now: u64,
        net: &mut Network,
        mut detail: Option<&mut O>,
    ) -> bool {
        let mut injected = false;
        loop {
            if self.agents[a as usize].left > 0 {
                return self.generate(a, now, net, detail) || injected;
            }
            self.progress(a);
            self.mark_call(a, now);
            let ag = &mut self.agents[a as usize];
            let events = &self.traces[ag.trace as usize].tasks[ag.task as usize];
            let Some(&event) = events.get(ag.next as usize) else {
                ag.done_at = Some(now);
                enter(&mut self.timeline, ag, a, State::Idle, now);
                self.finished += 1;
                return injected;
            };
            let then = match event {
                Event::Cpu { amount } => self.compute(a, now, amount),
                Event::Send { dst, tag, bytes } => {
                    let (then, sent) =
                        self.send(a, now, net, detail.as_deref_mut(), (dst, tag, bytes));
                    injected |= sent;
                    then
                }
                Event::Recv { src, tag, .. } => self.recv(a, now, src, tag),
            };
            if then == Then::Wait {
                return injected;
            }
        }
    }

    /// Generates the next packet of agent `a`'s current send in cycle
    /// `now` (or waits for room at its source); returns whether it did.
    fn generate<O: Observer + ?Sized>(
        &mut self,
        a: u32,
        now: u64,
        net: &mut Network,
        detail: Option<&mut O>,
    ) -> bool {
        let ag = &mut self.agents[a as usize];
        if net.source_backlog(ag.node) > 0 {
            self.due.push(Reverse((now + 1, 0, a)));
            return false;
        }
        let m = self.msgs[ag.msg as usize];
        if let Some(d) = detail {
            d.generated(net, ag.node, m.dst_node);
        }
        net.inject(NewPacket {
            src: ag.node,
            dst: m.dst_node,
            tag: u64::from(ag.msg),
        })
        .expect("placed tasks are on distinct, existing nodes");
        self.in_flight += 1;
        ag.left -= 1;
        if ag.left == 0 {
            ag.next += 1;
        }
        self.due.push(Reverse((now + 1, 0, a)));
        true
    }

    /// Agent `a`'s computation of `amount` units in cycle `now`.
    fn compute(&mut self, a: u32, now: u64, amount: u64) -> Then {
        let ag = &mut self.agents[a as usize];
        ag.next += 1;
        let trace = &self.traces[ag.trace as usize];
        let c = self.params.cpu_cycles(trace, amount).round() as u64;
        if trace.frames {
            // Its next event waits for the agents whose node clocks are
            // behind, even within this cycle, as co-simulation injects a
            // slice's frames in the order of their node cycles.
            ag.node_time = ag.node_time.saturating_add(c);
            let at = self.params.net_of(ag.node_time).max(now);
            if at > now {
                enter(&mut self.timeline, ag, a, State::Running, now);
            }
            self.due.push(Reverse((at, ag.node_time, a)));
            return Then::Wait;
        }
        if c > 0 {
            enter(&mut self.timeline, ag, a, State::Running, now);
            self.due.push(Reverse((now + c, 0, a)));
            return Then::Wait;
        }
        Then::Next
    }

    /// Agent `a`'s send of `(dst, tag, bytes)` in cycle `now`; also
    /// whether it handed a frame to the network.
    fn send<O: Observer + ?Sized>(
        &mut self,
        a: u32,
        now: u64,
        net: &mut Network,
        mut detail: Option<&mut O>,
        (dst, tag, bytes): (u32, u32, u64),
    ) -> (Then, bool) {
        let ai = a as usize;
        let ag = &self.agents[ai];
        let frames = self.traces[ag.trace as usize].frames;
        let dst_agent = self.job_base[ag.job as usize] + dst;
        let trace = ag.trace;
        self.hold(a, dst_agent);
        let mut injected = false;
        if self.connects(trace) {
            match self.connect(a, dst_agent) {
                Contact::SetUp(until) => {
                    // Blocked in the call while it sets the peer up.
                    let ag = &mut self.agents[ai];
                    ag.node_time = until;
                    enter(&mut self.timeline, ag, a, State::Waiting, now);
                    let at = self.params.net_of(until).max(now);
                    self.due.push(Reverse((at, until, a)));
                    return (Then::Wait, false);
                }
                Contact::Go { arp: true } => {
                    injected = self.broadcast_arp(a, now, net, detail.as_deref_mut());
                }
                Contact::Go { arp: false } => {}
            }
        }
        let id = self.new_msg(a, dst_agent, tag, bytes, now);
        let ag = &mut self.agents[ai];
        if tag == TCP_ACK_TAG && self.traces[ag.trace as usize].mpi {
            self.acks_sent += 1;
        }
        if frames {
            // The NIC queues the whole frame; the task goes on.
            ag.next += 1;
            injected |= self.queue_frame(a, id, now, net, detail);
            return (Then::Next, injected);
        }
        ag.msg = id;
        ag.left = self.msgs[id as usize].packets;
        enter(&mut self.timeline, ag, a, State::Sending, now);
        (Then::Next, injected)
    }

    /// Agent `a` holds a connection to agent `peer` from now on (its
    /// first frame to or from it), in a trace that pays a poll per
    /// connection ([`Trace::poll`]).
    pub(super) fn hold(&mut self, a: u32, peer: u32) {
        let ag = &self.agents[a as usize];
        let trace = &self.traces[ag.trace as usize];
        if trace.poll > 0 && !trace.connected && a != peer && self.held.insert((a, peer)) {
            self.agents[a as usize].connections += 1;
        }
    }

    /// Node cycles agent `a` pays, when it waited for a frame, for its
    /// event loop's poll of every connection it holds beyond the first
    /// ([`Trace::poll`]).
    pub(super) fn poll_cycles(&self, a: u32) -> u64 {
        let ag = &self.agents[a as usize];
        let trace = &self.traces[ag.trace as usize];
        let held = if trace.connected {
            trace.tasks.len().saturating_sub(1) as u64
        } else {
            u64::from(ag.connections)
        };
        trace.poll.saturating_mul(held.saturating_sub(1))
    }

    /// A new message of `bytes` (a frame, in a frame trace) with `tag`
    /// from agent `a` to agent `dst_agent`, sent in cycle `now`: its id.
    fn new_msg(&mut self, a: u32, dst_agent: u32, tag: u32, bytes: u64, now: u64) -> u32 {
        let acks = match self.tcp_cycles(self.agents[a as usize].trace) {
            Some((least, _)) if tag != ARP_TAG => {
                let data = (!is_kernel_frame(tag)).then_some(bytes);
                self.tcp.sent(a, dst_agent, data, now, least)
            }
            _ => 0,
        };
        self.transmit(a, tag, now);
        let ag = &self.agents[a as usize];
        let frames = self.traces[ag.trace as usize].frames;
        let packets = bytes.div_ceil(self.params.packet_bytes).max(1);
        let msg = Msg {
            dst_agent,
            src_node: ag.node,
            dst_node: self.agents[dst_agent as usize].node,
            src_task: ag.task,
            tag,
            packets: u32::try_from(packets).unwrap_or(u32::MAX),
            arrived: 0,
            after: if frames { self.params.nic_latency } else { 1 },
            src_agent: a,
            sent: now,
            bytes,
            acks,
        };
        self.messages_sent += 1;
        match self.free_msgs.pop() {
            Some(id) => {
                self.msgs[id as usize] = msg;
                id
            }
            None => {
                self.msgs.push(msg);
                (self.msgs.len() - 1) as u32
            }
        }
    }

    /// Frame `id` of agent `a`, in a frame trace, to its NIC in cycle
    /// `now`: into the network at once, or a slice later for a lowered
    /// MPI-level trace in the parallel mode (the network runs a slice
    /// behind); returns whether it went in now.
    fn queue_frame<O: Observer + ?Sized>(
        &mut self,
        a: u32,
        id: u32,
        now: u64,
        net: &mut Network,
        detail: Option<&mut O>,
    ) -> bool {
        let ag = &self.agents[a as usize];
        let packets = u64::from(self.msgs[id as usize].packets);
        self.in_flight += packets;
        if self.traces[ag.trace as usize].mpi && self.params.sync == SliceSync::Parallel {
            let at = self.params.net_of(ag.node_time) + self.params.slice.net;
            self.inject_later(id, at.max(now));
            return false;
        }
        inject_frame(net, detail, &self.msgs[id as usize], id);
        true
    }

    /// Frame `id`, its packets already counted in flight, into the
    /// network in cycle `at` ([`Replay::run_due`] injects it).
    fn inject_later(&mut self, id: u32, at: u64) {
        self.delayed_count += 1;
        self.delayed.push(Reverse((at, self.delayed_count, id)));
    }

    /// The TCP timers of trace `trace`, network cycles: the probe's least
    /// timeout and the delayed acknowledgement's; `None` for a trace
    /// without them ([`Trace::tcp`]).
    fn tcp_cycles(&self, trace: u32) -> Option<(u64, u64)> {
        let t = &self.traces[trace as usize];
        (t.mpi && t.tcp != TcpTimers::default()).then(|| {
            (
                self.params.net_of(t.tcp.probe),
                self.params.net_of(t.tcp.delack),
            )
        })
    }

    /// A frame of `bytes` and `tag` that agent `from`'s kernel sends to
    /// `to` at its node's network cycle `at` (a TCP timer's or a D-SACK):
    /// into the network then, a slice later in the parallel mode; none to
    /// an agent that has finished. Returns whether it went.
    fn kernel_frame(&mut self, (from, to): (u32, u32), tag: u32, bytes: u64, at: u64) -> bool {
        if self.agents[to as usize].done_at.is_some() {
            return false;
        }
        let id = self.new_msg(from, to, tag, bytes, at);
        if tag == TCP_ACK_TAG {
            self.acks_sent += 1;
        }
        let at = match self.params.sync {
            SliceSync::Parallel => at + self.params.slice.net,
            _ => at,
        };
        self.in_flight += u64::from(self.msgs[id as usize].packets);
        self.inject_later(id, at);
        true
    }

    /// Agent `a`'s kernel broadcasts an ARP request in cycle `now`
    /// ([`Trace::arp`] bytes, [`ARP_TAG`]): a copy to every other agent of
    /// its job, as the co-simulation floods a broadcast; returns whether
    /// a copy went into the network now.
    fn broadcast_arp<O: Observer + ?Sized>(
        &mut self,
        a: u32,
        now: u64,
        net: &mut Network,
        mut detail: Option<&mut O>,
    ) -> bool {
        let ag = &self.agents[a as usize];
        let trace = &self.traces[ag.trace as usize];
        let (bytes, tasks) = (trace.arp, trace.task_count() as u32);
        let base = self.job_base[ag.job as usize];
        self.arp_requests += 1;
        let mut injected = false;
        for peer in (base..base + tasks).filter(|&p| p != a) {
            let id = self.new_msg(a, peer, ARP_TAG, bytes, now);
            injected |= self.queue_frame(a, id, now, net, detail.as_deref_mut());
        }
        self.arp_copies += u64::from(tasks.saturating_sub(1));
        injected
    }

    /// The next cycle at which an agent is due (`None`: none is).
    pub fn next_due(&self) -> Option<u64> {
        let agent = self.due.peek().map(|Reverse((t, _, _))| *t);
        let frame = self.delayed.peek().map(|Reverse((t, _, _))| *t);
        agent.into_iter().chain(frame).chain(self.tcp.next()).min()
    }

    /// Whether every task has run out of events and every message arrived.
    pub fn finished(&self) -> bool {
        self.finished == self.agents.len() && self.in_flight == 0
    }

    /// Whether the workload can never finish: no task is due, no packet of
    /// it is in the network, and some task has not finished (it waits for
    /// a message nobody will send).
    pub fn deadlocked(&self) -> bool {
        self.due.is_empty()
            && self.delayed.is_empty()
            && self.in_flight == 0
            && self.finished < self.agents.len()
    }

    /// Frames the agents' nodes sent, a broadcast once (`messages_sent`
    /// counts each copy): what a traced run's `live_frames` counts.
    pub fn frames_sent(&self) -> u64 {
        self.messages_sent - self.arp_copies + self.arp_requests
    }

    /// Execution time: the cycle from which every task has finished and
    /// every message has arrived (the cycle after the last delivery).
    pub fn exec_cycles(&self) -> u64 {
        let done = self
            .agents
            .iter()
            .filter_map(|a| a.done_at)
            .max()
            .unwrap_or(0);
        done.max(self.last_delivery.map_or(0, |t| t + 1))
    }

    /// The cycle each task (in job order) ran out of events, `None` for a
    /// task that has not.
    pub fn done_cycles(&self) -> Vec<Option<u64>> {
        self.agents.iter().map(|a| a.done_at).collect()
    }

    /// Number of tasks replayed.
    pub fn tasks(&self) -> usize {
        self.agents.len()
    }

    /// The tasks that have not finished, with what they wait for.
    pub fn blocked(&self) -> Vec<BlockedTask> {
        self.agents
            .iter()
            .enumerate()
            .filter(|(_, a)| a.done_at.is_none())
            .map(|(i, a)| {
                let trace = &self.traces[a.trace as usize];
                let origin = trace.origin(a.task, a.next as usize);
                let waiting_for = match trace.tasks[a.task as usize].get(a.next as usize) {
                    Some(Event::Recv { src, tag, bytes }) if a.waiting => {
                        format!("receive from task {src} tag {tag} ({bytes} bytes) at {origin}")
                    }
                    Some(Event::Send { dst, tag, .. }) => {
                        format!("sending to task {dst} tag {tag} at {origin}")
                    }
                    _ => format!("computing at {origin}"),
                };
                BlockedTask {
                    job: a.job,
                    task: a.task,
                    node: a.node,
                    waiting_for,
                    pending: self.pending[i]
                        .iter()
                        .map(|e| format!("message from task {} tag {}", e.src, e.tag))
                        .collect(),
                }
            })
            .collect()
    }
}
