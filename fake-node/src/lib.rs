//! `fake-node`: the bundled stub node emulator, an adapter of its own on
//! top of the client library (`sync-client`).
//!
//! Each emulated node has its own node clock and an event-driven
//! application that sends real Ethernet/IPv4/UDP frames ([`crate::frame`])
//! stamped with the node cycle at which they leave the NIC, and receives
//! frames at the node cycle the server gives. Within a slice a node
//! processes its deliveries and its own scheduled sends in time order, so a
//! run is exact to the node cycle and deterministic. One process can run
//! several nodes as one client (`--node 0-7`), as a Simics instance runs
//! eight machines in round robin (Simics paper, section 5: two-level
//! synchronisation).
//!
//! Workloads:
//! - `idle`: nothing (measures the cost of synchronisation alone);
//! - `pingpong`: nodes 2i and 2i+1 exchange `--messages` ping/pong rounds,
//!   each side replying `--think` node cycles after a receipt;
//! - `all2all`: every node sends one message to every other node, one every
//!   `--think` cycles, destinations in the order me+1, me+2, ...;
//! - `uniform`: every node sends `--messages` messages to uniformly random
//!   other nodes with exponential gaps of mean `--think` cycles;
//! - `trace`: causal replay of an FSIN `.trc` trace (`--trace FILE`, traces
//!   paper): each node runs its events in order; a send leaves at the node's
//!   current cycle as ceil(bytes / 1439) UDP frames (at most 1514 bytes
//!   each); a receive blocks the node until every frame of the matching
//!   (source, tag) message has arrived, and messages that arrive before
//!   their receive is posted wait in a pending list; a CPU event advances
//!   the node's clock by its amount in `--cpu-units`.
//!
//! Every node reports when its workload completed, the messages it
//! received, their latency as the application saw it (send to receipt,
//! node cycles), and any that arrived damaged.

#![warn(missing_docs)]

mod args;
pub mod frame;

pub use args::*;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::process::ExitCode;
use std::time::Duration;

use fsin_proto::v1 as pb;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::Serialize;

use frame::AppMessage;
use fsin_trace::{self as trace, Event};
use sync_client::drive::{drive, Begin, DriveEnd, NodeSimulator, SliceEnd};
use sync_client::{ClientError, NodeLink};

/// What one node measured.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct NodeSummary {
    /// The node's id.
    pub node: u32,
    /// Node cycle at which its workload completed.
    pub done_cycle: Option<u64>,
    /// Application messages it sent.
    pub sent: u64,
    /// Application messages it received whole and intact.
    pub received: u64,
    /// Frames it received that were no workload message or were damaged
    /// (IPv4 header checksum, lengths or payload checksum wrong): counted
    /// and dropped.
    pub corrupt: u64,
    /// Mean send-to-receipt latency of received messages, node cycles.
    pub latency_avg: f64,
    /// Largest send-to-receipt latency of a received message, node
    /// cycles.
    pub latency_max: u64,
}

/// How a client's run ended.
#[derive(Debug, Clone, Serialize)]
pub struct FakeNodesOutcome {
    /// Each node of the client, in id order.
    pub nodes: Vec<NodeSummary>,
    /// Slices the client ran.
    pub slices: u64,
    /// The server's Shutdown reason (or the error that ended the stream).
    pub reason: String,
    /// Whether the run ended in error.
    pub error: bool,
}

const PING: u8 = 1;
const PONG: u8 = 2;
const DATA: u8 = 3;
/// Not a message: the CLEAR_STATS magic packet.
const CLEAR_STATS: u8 = 4;
/// One frame of a trace message; its sequence number carries the tag
/// (high 32 bits) and the message's frame count (low 32 bits).
const TRACE: u8 = 5;
/// Data bytes of a trace message per frame: a 1514-byte frame less the
/// headers and the application header and checksum.
const TRACE_CHUNK: u64 = (1514 - frame::HEADERS - frame::MIN_PAYLOAD) as u64;

/// Where one node is in its trace's events (the replay state).
#[derive(Default)]
struct TraceCursor {
    events: Vec<Event>,
    next: usize,
    /// The node's clock: cycle at which its next event starts.
    t: u64,
    /// Node cycles per CPU unit.
    scale: f64,
    /// Frames received so far of the message under way per (source, tag).
    partial: HashMap<(u32, u32), u64>,
    /// Arrival cycles of complete messages not yet received, per (source,
    /// tag), oldest first.
    arrived: HashMap<(u32, u32), VecDeque<u64>>,
}

/// One emulated node.
struct Node {
    id: u32,
    n: u32,
    queue: BinaryHeap<Reverse<(u64, u64, u32, u8)>>,
    order: u64,
    rng: Pcg64Mcg,
    sent: u64,
    received: u64,
    corrupt: u64,
    lat_sum: u64,
    lat_max: u64,
    /// Ping-pong rounds done (initiator) or pongs sent (responder).
    rounds: u64,
    done: Option<u64>,
    reported: bool,
    /// Told the server it waits, and no frame has reached it since.
    waiting_told: bool,
    replay: TraceCursor,
}

impl Node {
    fn new(id: u32, n: u32, seed: u64) -> Node {
        Node {
            id,
            n,
            queue: BinaryHeap::new(),
            order: 0,
            rng: Pcg64Mcg::seed_from_u64(seed ^ (u64::from(id) << 32)),
            sent: 0,
            received: 0,
            corrupt: 0,
            lat_sum: 0,
            lat_max: 0,
            rounds: 0,
            done: None,
            reported: false,
            waiting_told: false,
            replay: TraceCursor::default(),
        }
    }

    fn schedule(&mut self, cycle: u64, dst: u32, kind: u8) {
        self.order += 1;
        self.queue.push(Reverse((cycle, self.order, dst, kind)));
    }

    fn gap(&mut self, mean: u64) -> u64 {
        let u: f64 = self.rng.gen_range(f64::EPSILON..1.0);
        (-(mean as f64) * u.ln()).round() as u64
    }

    fn random_peer(&mut self) -> u32 {
        (self.id + self.rng.gen_range(1..self.n)) % self.n
    }

    fn start(&mut self, a: &Args) {
        let (id, n) = (self.id, self.n);
        match a.workload {
            Workload::Idle => self.done = Some(0),
            Workload::Pingpong => {
                if id % 2 == 0 && id + 1 < n && a.messages > 0 {
                    self.schedule(a.think, id + 1, PING);
                } else if id % 2 == 0 || a.messages == 0 {
                    self.done = Some(0);
                }
            }
            Workload::All2all => {
                if n < 2 {
                    self.done = Some(0);
                }
                for i in 1..n {
                    self.schedule(a.think * u64::from(i), (id + i) % n, DATA);
                }
            }
            Workload::Trace => {
                if self.replay.events.is_empty() {
                    self.done = Some(0);
                }
            }
            Workload::Uniform => {
                if n < 2 || a.messages == 0 {
                    self.done = Some(0);
                } else {
                    let g = self.gap(a.think);
                    let dst = self.random_peer();
                    self.schedule(g, dst, DATA);
                }
            }
        }
    }

    /// All-to-all: sent to and received from every other node.
    fn exchanged_with_all(&self) -> bool {
        let others = u64::from(self.n - 1);
        self.received == others && self.sent == others
    }

    /// Application logic on a receipt at `cycle`.
    fn receive(&mut self, a: &Args, m: &AppMessage, cycle: u64) {
        match (a.workload, m.kind) {
            (Workload::Pingpong, PING) => self.schedule(cycle + a.think, m.src, PONG),
            (Workload::Pingpong, PONG) => {
                self.rounds += 1;
                if self.rounds == a.messages {
                    self.done = Some(cycle);
                } else {
                    self.schedule(cycle + a.think, m.src, PING);
                }
            }
            (Workload::All2all, _) if self.exchanged_with_all() => self.done = Some(cycle),
            _ => {}
        }
    }

    /// Bookkeeping after a send at `cycle`.
    fn after_send(&mut self, a: &Args, kind: u8, cycle: u64) {
        match (a.workload, kind) {
            (Workload::Pingpong, PONG) => {
                self.rounds += 1;
                if self.rounds == a.messages {
                    self.done = Some(cycle);
                }
            }
            (Workload::All2all, _) if self.exchanged_with_all() => self.done = Some(cycle),
            (Workload::Uniform, _) => {
                if self.sent == a.messages {
                    self.done = Some(cycle);
                } else {
                    let next = cycle + self.gap(a.think);
                    let dst = self.random_peer();
                    self.schedule(next, dst, DATA);
                }
            }
            _ => {}
        }
    }

    /// What the node waits for when it has nothing left to do until a
    /// frame reaches it: no event of its own is scheduled and its
    /// workload has not completed.
    fn waits_for(&self) -> Option<String> {
        if self.done.is_some() || !self.queue.is_empty() {
            return None;
        }
        let r = &self.replay;
        match r.events.get(r.next) {
            None => Some("a frame".into()),
            Some(Event::Recv { src, tag, .. }) if !self.trace_runnable() => Some(format!(
                "receive from node {src}, tag {tag}: trace event {} of {}",
                r.next + 1,
                r.events.len()
            )),
            Some(_) => None,
        }
    }

    /// Node cycle of this node's next action of its own (a send, a trace
    /// event, finishing); `u64::MAX` when it has none left, so that only a
    /// frame can make it act (`SliceDone.idle_until`).
    fn next_own_cycle(&self) -> u64 {
        let mut t = self.queue.peek().map_or(u64::MAX, |Reverse((c, ..))| *c);
        if self.trace_runnable() {
            t = t.min(self.replay.t);
        }
        if let Some(d) = self.done.filter(|_| !self.reported) {
            t = t.min(d);
        }
        t
    }

    /// Whether the next trace event can run now (not a receive whose
    /// message has not fully arrived).
    fn trace_runnable(&self) -> bool {
        let r = &self.replay;
        match r.events.get(r.next) {
            None => false,
            Some(Event::Recv { src, tag, .. }) => {
                r.arrived.get(&(*src, *tag)).is_some_and(|q| !q.is_empty())
            }
            Some(_) => true,
        }
    }

    /// One frame of a trace message reached the node at `cycle`.
    fn trace_frame(&mut self, m: &AppMessage, cycle: u64) {
        let key = (m.src, (m.seq >> 32) as u32);
        let frames = m.seq & 0xffff_ffff;
        let got = self.replay.partial.entry(key).or_insert(0);
        *got += 1;
        if *got == frames {
            *got = 0;
            self.replay.arrived.entry(key).or_default().push_back(cycle);
            self.received += 1;
            let lat = cycle.saturating_sub(m.sent);
            self.lat_sum += lat;
            self.lat_max = self.lat_max.max(lat);
        }
    }

    /// Trace replay over node cycles `[.., end)` (see the module docs).
    fn run_trace_slice(
        &mut self,
        macs: &[Vec<u8>],
        end: u64,
        arrivals: &[pb::Delivery],
        send: &mut dyn FnMut(u64, Vec<u8>) -> Result<(), ClientError>,
    ) -> Result<(), ClientError> {
        let mut next = 0;
        loop {
            let runnable = self.trace_runnable() && self.replay.t < end;
            if let Some(d) = arrivals.get(next) {
                if !runnable || d.node_cycle <= self.replay.t {
                    next += 1;
                    match frame::parse(&d.data) {
                        Some(m) if m.dst == self.id && m.kind == TRACE => {
                            self.trace_frame(&m, d.node_cycle);
                        }
                        _ => self.corrupt += 1,
                    }
                    continue;
                }
            }
            if !runnable {
                return Ok(());
            }
            let t = self.replay.t;
            match self.replay.events[self.replay.next] {
                Event::Cpu { amount } => {
                    self.replay.t += (amount as f64 * self.replay.scale).round() as u64;
                }
                Event::Send { dst, tag, bytes } => {
                    let frames = bytes.div_ceil(TRACE_CHUNK).max(1);
                    self.sent += 1;
                    for i in 0..frames {
                        let chunk = (bytes - i * TRACE_CHUNK).min(TRACE_CHUNK);
                        let m = AppMessage {
                            src: self.id,
                            dst,
                            seq: (u64::from(tag) << 32) | frames,
                            sent: t,
                            kind: TRACE,
                        };
                        let payload = frame::MIN_PAYLOAD + chunk as usize;
                        send(
                            t,
                            frame::build(&m, &macs[self.id as usize], &macs[dst as usize], payload),
                        )?;
                    }
                }
                Event::Recv { src, tag, .. } => {
                    let q = self.replay.arrived.get_mut(&(src, tag)).expect("runnable");
                    let at = q.pop_front().expect("runnable");
                    self.replay.t = t.max(at);
                }
            }
            self.replay.next += 1;
            if self.replay.next == self.replay.events.len() {
                self.done = Some(self.replay.t);
            }
        }
    }

    /// Runs node cycles `[start, end)` with the frames `arrivals` (sorted
    /// by cycle) reaching the NIC; sends go out through `send`.
    fn run_slice(
        &mut self,
        a: &Args,
        macs: &[Vec<u8>],
        end: u64,
        arrivals: &[pb::Delivery],
        send: &mut dyn FnMut(u64, Vec<u8>) -> Result<(), ClientError>,
    ) -> Result<(), ClientError> {
        if a.workload == Workload::Trace {
            return self.run_trace_slice(macs, end, arrivals, send);
        }
        let mut next = 0;
        loop {
            let own = self
                .queue
                .peek()
                .map(|Reverse((c, ..))| *c)
                .filter(|&c| c < end);
            let arrival = arrivals.get(next).map(|d| d.node_cycle);
            match (own, arrival) {
                (None, None) => return Ok(()),
                (Some(c), Some(d)) if d <= c => {}
                (Some(c), _) => {
                    let Reverse((_, _, dst, kind)) = self.queue.pop().expect("peeked");
                    if kind == CLEAR_STATS {
                        send(c, frame::magic(self.id, &macs[self.id as usize], 1))?;
                        continue;
                    }
                    self.sent += 1;
                    let m = AppMessage {
                        src: self.id,
                        dst,
                        seq: self.sent,
                        sent: c,
                        kind,
                    };
                    let payload = a.bytes.saturating_sub(frame::HEADERS);
                    let f = frame::build(&m, &macs[self.id as usize], &macs[dst as usize], payload);
                    send(c, f)?;
                    self.after_send(a, kind, c);
                    continue;
                }
                (None, Some(_)) => {}
            }
            let d = &arrivals[next];
            next += 1;
            match frame::parse(&d.data) {
                // The source is payload, anyone's to forge: it becomes the
                // answer's destination, so it must name a node.
                Some(m) if m.dst == self.id && m.src < self.n => {
                    self.received += 1;
                    let lat = d.node_cycle.saturating_sub(m.sent);
                    self.lat_sum += lat;
                    self.lat_max = self.lat_max.max(lat);
                    self.receive(a, &m, d.node_cycle);
                }
                _ => self.corrupt += 1,
            }
        }
    }

    fn summary(&self) -> NodeSummary {
        NodeSummary {
            node: self.id,
            done_cycle: self.done,
            sent: self.sent,
            received: self.received,
            corrupt: self.corrupt,
            latency_avg: if self.received == 0 {
                0.0
            } else {
                self.lat_sum as f64 / self.received as f64
            },
            latency_max: self.lat_max,
        }
    }

    fn report(&self) -> pb::AppReport {
        let s = self.summary();
        pb::AppReport {
            node: self.id,
            done_cycle: s.done_cycle.unwrap_or(0),
            messages: s.received,
            latency_avg: s.latency_avg,
            latency_max: s.latency_max,
            corrupt: s.corrupt,
        }
    }
}

/// Runs the client's nodes until the server shuts the run down, or until
/// SIGINT, SIGTERM or SIGHUP (then it detaches and returns what it has,
/// with `error` set).
///
/// # Errors
/// [`ClientError`] when attaching fails; a stream that breaks later ends
/// the run with a [`FakeNodesOutcome`] whose `error` is set.
pub async fn run(a: &Args) -> Result<FakeNodesOutcome, ClientError> {
    let stop = sync_client::signals::stop_requested();
    let ids: Vec<u32> = (a.node.first..=a.node.last).collect();
    let specs = ids
        .iter()
        .map(|&id| pb::NodeSpec {
            node_id: Some(id),
            mac: Vec::new(),
            clock_hz: 0,
        })
        .collect();
    let name = if ids.len() == 1 {
        format!("fake-node {}", ids[0])
    } else {
        format!("fake-node {}-{}", a.node.first, a.node.last)
    };
    let mut link = NodeLink::attach(&a.server, &name, specs).await?;
    // Between slices a fake node only waits for the server.
    link.use_shared_memory();
    let macs: Vec<Vec<u8>> = link
        .welcome
        .all_nodes
        .iter()
        .map(|n| n.mac.clone())
        .collect();
    // The server's word, checked before it indexes anything: every node
    // of ours among its nodes, every address an Ethernet one.
    let n = u32::try_from(macs.len()).unwrap_or(u32::MAX);
    if let Some(id) = ids.iter().find(|&&id| id >= n) {
        return Err(ClientError::Protocol(format!(
            "the server's Welcome lists {n} nodes, not node {id}"
        )));
    }
    if let Some((i, mac)) = macs.iter().enumerate().find(|(_, m)| m.len() != 6) {
        return Err(ClientError::Protocol(format!(
            "the server's Welcome gives node {i} a MAC address of {} bytes, not 6",
            mac.len()
        )));
    }
    let mut nodes: Vec<Node> = ids.iter().map(|&id| Node::new(id, n, a.seed)).collect();
    if a.workload == Workload::Trace {
        let path = a
            .trace
            .as_ref()
            .ok_or_else(|| ClientError::Protocol("--workload trace needs --trace FILE".into()))?;
        let t = trace::parse(path)
            .and_then(|t| t.check_within(n).map(|()| t))
            .map_err(|e| ClientError::Protocol(e.to_string()))?;
        // Dimemas bursts come converted to cycles (INSEE's conversion),
        // taken here as node cycles.
        let scale = if t.cpu_in_cycles {
            1.0
        } else {
            a.cpu_units.cycles_per_unit(link.welcome.clock_hz)
        };
        let mut events = t.tasks;
        events.resize(n as usize, Vec::new());
        for node in &mut nodes {
            node.replay.events = std::mem::take(&mut events[node.id as usize]);
            node.replay.scale = scale;
        }
    }
    for node in &mut nodes {
        node.start(a);
    }
    if let Some(at) = a.clear_stats_at {
        nodes[0].schedule(at, u32::MAX, CLEAR_STATS);
    }
    let mut sim = ClientNodes { a, macs, nodes };
    let (ended, slices) = drive(&mut link, &mut sim, stop).await?;
    let (reason, error) = match ended {
        DriveEnd::Shutdown(s) => (s.reason, s.error),
        DriveEnd::Interrupted(sig) => (format!("interrupted by {sig}"), true),
        DriveEnd::Left(why) => (why, true),
        DriveEnd::Broken(e) => (e.to_string(), true),
    };
    Ok(FakeNodesOutcome {
        nodes: sim.nodes.iter().map(Node::summary).collect(),
        slices,
        reason,
        error,
    })
}

/// The nodes of one fake-node client, as a [`NodeSimulator`].
struct ClientNodes<'a> {
    a: &'a Args,
    /// Every node's MAC, by node id.
    macs: Vec<Vec<u8>>,
    nodes: Vec<Node>,
}

impl NodeSimulator for ClientNodes<'_> {
    type Error = ClientError;

    /// The injected fault of `--fault` at `--fault-slice`.
    async fn begin(&mut self, link: &mut NodeLink, c: &pb::Continue) -> Result<Begin, ClientError> {
        if let Some(fault) = self.a.fault.filter(|_| c.slice == self.a.fault_slice) {
            match fault {
                FaultKind::Die => std::process::exit(9),
                FaultKind::Stall => loop {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                },
                FaultKind::Garbage => {
                    link.send_frame(u32::MAX, c.start_cycle, vec![0xde, 0xad, 0xbe])?;
                }
                FaultKind::LoseDatagrams => link.simulate_datagram_loss(c.slice),
            }
        }
        Ok(Begin::Run)
    }

    async fn run_slice(
        &mut self,
        link: &mut NodeLink,
        c: &pb::Continue,
    ) -> Result<SliceEnd, ClientError> {
        let a = self.a;
        let end = c.start_cycle + c.node_cycles;
        let mut finished = Vec::new();
        for node in &mut self.nodes {
            let mine: Vec<pb::Delivery> = c
                .frames
                .iter()
                .filter(|d| d.node == node.id)
                .cloned()
                .collect();
            let id = node.id;
            let mut send = |cycle, data| link.send_frame(id, cycle, data);
            node.run_slice(a, &self.macs, end, &mine, &mut send)?;
            node.waiting_told &= mine.is_empty();
            if let Some(why) = node.waits_for().filter(|_| !node.waiting_told) {
                node.waiting_told = true;
                link.waiting(id, why);
            }
            if node.done.is_some_and(|d| d < end) && !node.reported {
                node.reported = true;
                finished.push(node.report());
            }
        }
        // Idle nodes are the synchronisation load of the round benchmarks
        // and tests: they promise nothing, so every slice stays a round.
        let idle_until = (a.workload != Workload::Idle).then(|| {
            let next = self.nodes.iter().map(Node::next_own_cycle).min();
            next.unwrap_or(u64::MAX)
        });
        Ok(SliceEnd {
            finished,
            idle_until,
        })
    }
}

/// Entry point of the `fake-node` binary and of `fsin fake-node`: runs,
/// prints the summary (text, or JSON with `--json`), and returns exit code
/// 0, or 1 if the run ended in error.
pub fn main_with(a: &Args) -> ExitCode {
    let result = match sync_client::block_on("fake-node", run(a)) {
        Ok(r) => r,
        Err(code) => return code,
    };
    match result {
        Ok(o) => sync_client::print_outcome(&o, a.json, o.error, |o| {
            for s in &o.nodes {
                eprintln!(
                    "fake-node {}: done at {}, sent {}, received {} ({} damaged), latency avg {:.1} max {} node cycles",
                    s.node,
                    s.done_cycle.map_or("-".into(), |c| c.to_string()),
                    s.sent,
                    s.received,
                    s.corrupt,
                    s.latency_avg,
                    s.latency_max
                );
            }
            eprintln!("fake-node: {} slices; {}", o.slices, o.reason);
        }),
        Err(e) => {
            eprintln!("fake-node {}: {e}", a.node.first);
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_ranges_parse() {
        assert_eq!("5".parse(), Ok(NodeRange { first: 5, last: 5 }));
        assert_eq!("0-7".parse(), Ok(NodeRange { first: 0, last: 7 }));
        assert!("7-0".parse::<NodeRange>().is_err());
        assert!("x".parse::<NodeRange>().is_err());
        assert!("0-4294967295".parse::<NodeRange>().is_err());
        assert!("0-65535".parse::<NodeRange>().is_ok());
        assert!("0-65536".parse::<NodeRange>().is_err());
    }

    /// Two nodes in one process, joined back to back (every frame arrives
    /// `delay` cycles after it is sent): the ping-pong completes at
    /// 2 * rounds * (delay + think), by hand.
    #[test]
    fn pingpong_timing_by_hand() {
        let a = Args {
            messages: 3,
            think: 10,
            ..Args::new("", NodeRange { first: 0, last: 1 }, Workload::Pingpong)
        };
        let macs = vec![vec![2, 0, 0, 0, 0, 0], vec![2, 0, 0, 0, 0, 1]];
        let mut nodes = [Node::new(0, 2, 1), Node::new(1, 2, 1)];
        for n in &mut nodes {
            n.start(&a);
        }
        let delay = 7;
        let mut in_flight: Vec<pb::Delivery> = Vec::new();
        for start in (0..1000).step_by(5) {
            let end = start + 5;
            let mut sent = Vec::new();
            for n in &mut nodes {
                let id = n.id;
                let mut arrivals: Vec<pb::Delivery> = in_flight
                    .iter()
                    .filter(|d| d.node == id && d.node_cycle < end)
                    .cloned()
                    .collect();
                arrivals.sort_by_key(|d| d.node_cycle);
                let mut send = |c, data| {
                    sent.push(pb::Delivery {
                        node: 1 - id,
                        node_cycle: c + delay,
                        data,
                    });
                    Ok(())
                };
                n.run_slice(&a, &macs, end, &arrivals, &mut send).unwrap();
            }
            in_flight.retain(|d| d.node_cycle >= end);
            in_flight.extend(sent);
        }
        assert_eq!(nodes[0].done, Some(2 * 3 * (7 + 10)));
        assert_eq!(nodes[0].summary().latency_avg, 7.0);
        assert_eq!(nodes[1].received, 3);
        assert_eq!(nodes[0].corrupt + nodes[1].corrupt, 0);
    }

    /// A PING whose payload names a source beyond the network (anyone can
    /// write one, with a valid checksum) is counted corrupt and not
    /// answered: answering it indexed the address table out of bounds.
    #[test]
    fn a_forged_source_is_counted_not_answered() {
        let a = Args::new("", NodeRange { first: 0, last: 1 }, Workload::Pingpong);
        let macs = vec![vec![2, 0, 0, 0, 0, 0], vec![2, 0, 0, 0, 0, 1]];
        let mut node = Node::new(1, 2, 1);
        let forged = AppMessage {
            src: 7,
            dst: 1,
            seq: 1,
            sent: 0,
            kind: PING,
        };
        let arrivals = [pb::Delivery {
            node: 1,
            node_cycle: 3,
            data: frame::build(&forged, &macs[0], &macs[1], 64),
        }];
        let mut sent = 0;
        let mut send = |_, _| {
            sent += 1;
            Ok(())
        };
        node.run_slice(&a, &macs, 10_000, &arrivals, &mut send)
            .unwrap();
        assert_eq!((node.corrupt, node.received, sent), (1, 0, 0));
    }
}
