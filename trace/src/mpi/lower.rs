//! An MPI-level trace as the messages and frames a replay puts on the
//! network: collectives expanded by the algorithms Open
//! MPI ran ([`super::expand`]), every MPI message cut into TCP
//! segments that travel as frames do, the MPI layer's eager and
//! rendezvous protocols, and a software cost per message and per byte.
//!
//! The result is a frame trace ([`Trace::frames`]): per rank, in order,
//! `Send`s that a NIC queues whole (the rank goes on), `Recv`s that wait
//! for a frame, and computations in node cycles, which the replay moves
//! through the network as co-simulation moved the live run's frames
//! (docs/model.md, "Replaying an MPI-level trace"):
//!
//! - A message of `B` bytes is `B + message_header` bytes cut into
//!   segments of at most `segment_bytes` (TCP's MSS), each a frame of its
//!   bytes plus `segment_header` (Ethernet, IPv4 and TCP headers).
//! - Up to `eager_limit` bytes, a send goes at once, and the sender goes
//!   on. Beyond it (Open MPI's rendezvous), the first `eager_limit` bytes
//!   go at once; the receiver answers them with an acknowledgement once
//!   it receives (its `MPI_Recv`, or the completion call of its
//!   `MPI_Irecv`: Open MPI progresses a message only inside MPI calls);
//!   the sender sends the rest when the acknowledgement is in, waiting
//!   for it in the call that completes the send (`MPI_Send` itself, or
//!   the completion call of an `MPI_Isend`).
//! - Each message costs `message_ns` of the sender's time before it goes
//!   and of the receiver's after it is in, and each segment `bytes *
//!   byte_ps / 1000` ns (its payload, message header included) of the
//!   sender's before it goes and of the receiver's after it is in: a
//!   long message's segments are written and read while the others
//!   travel. With a cost table (`costs`, a calibrated profile), a
//!   message of `B` bytes costs the sender the table's `c(0)` before its
//!   first segment and `c(B) - c(0)` spread over its segments by their
//!   payload, less its send tail `u(B)` ([`super::costs::CostTable::send_tail_ns`],
//!   paid after the last segment: taken from the spread part first, then
//!   from `c(0)`); the receiver the table's receive tail `t(B)` after its last
//!   segment (`c(0)` where the table gives none,
//!   [`super::costs::CostTable::recv_tail_ns`]) and `c(B) - t(B)` spread.
//! - A completion call that receives several messages (or several such
//!   calls in a row, and a linear collective's wait for its posted
//!   receives) takes their frames as they arrive: its messages form a
//!   [`RecvGroup`], one run each, which the replay takes in the order
//!   their frames come (Open MPI's progress engine reads whichever
//!   connection has data).
//! - A receive blocks until every frame of its message is in; an
//!   `MPI_Irecv` itself costs nothing (its completion call receives). A
//!   rank that waited for a frame pays `wake_ns` more when it comes (the
//!   replay does, [`Trace::wake`]): several messages in flight at once
//!   wake it once.
//! - With `tcp_acks`, a rank that reads a message (or a rendezvous
//!   message's part) which makes more than a segment's payload taken from
//!   its peer since its last frame to it sends the peer a TCP
//!   acknowledgement, a frame of `segment_header` bytes that the peer's
//!   kernel takes in (`rx_ns`) and no call receives.

use std::collections::{BTreeMap, HashMap};

use super::algorithms::Algorithms;
use super::costs::Side;
use super::expand::{steps, CallShape, Step};
use super::read::{MpiProgram, MpiStep};
use super::{CollectiveCall, MpiOp};
use crate::{Event, RecvGroup, TcpTimers, Trace, TraceError, TCP_ACK_TAG};

pub use calls::{CallKind, LoweredCall};

pub use model::MpiModel;

/// What a lowered message is, so that a pair's messages of one kind
/// match in order (MPI's non-overtaking rule per communicator and tag).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Data(u32, u32),
    Ack(u32, u32),
    Rest(u32, u32),
}

/// The collectives' tag, which no MPI tag reaches (tags are at most
/// 2^31 - 1).
const COLLECTIVE_TAG: u32 = u32::MAX;

/// The most frames and computations a lowered trace may hold (2^25,
/// about 800 MiB of events): a trace beyond is refused, not replayed out
/// of memory.
pub const MAX_LOWERED_EVENTS: usize = 1 << 25;

/// Bytes of an ARP request's frame as the guests' e1000 sends it (28
/// bytes of ARP after Ethernet's 14, padded to Ethernet's 60-byte
/// minimum; [`MpiModel::arp`]).
pub const ARP_REQUEST_BYTES: u64 = 60;

/// The frames a rank hands its NIC at once with the interrupt window
/// ([`MpiModel::irq_window_ns`]): a buffer of at most 64 KiB, TCP's
/// segmentation offload's largest, in segments of 1,448 bytes (the
/// guests' `net_dev_xmit len=4184` for a 4,096-byte message: one buffer
/// for its 3 frames).
pub const OFFLOAD_FRAMES: usize = 45;

/// One rank's lowering: its events, and its computation not yet written.
struct Lowering<'a> {
    m: &'a MpiModel,
    trace: &'a mut Trace,
    tags: &'a mut HashMap<Kind, u32>,
    rank: u32,
    line: u32,
    /// Nanoseconds of computation not yet written as node cycles.
    ns: f64,
    /// Rendezvous sends of `MPI_Isend`s waiting for their acknowledgement:
    /// by request number (which grows in the rank's order of calls),
    /// (destination, data kind, rest bytes).
    isends: BTreeMap<u32, (u32, Kind, u64)>,
    /// The communicator of each `MPI_Irecv`, by its request's number.
    irecv_comm: HashMap<u32, u32>,
    /// A collective's started sends and posted receives, until its
    /// [`Step::WaitAll`]: rendezvous sends as (destination, data kind,
    /// rest bytes); receives as (source, bytes).
    started: Vec<(u32, Kind, u64)>,
    posted: Vec<(u32, u64)>,
    /// ns of the kernel's receive of the frames taken so far
    /// ([`MpiModel::rx_ns`]) not yet taken out of a receive's cost.
    rx_debt: f64,
    /// Per peer, payload bytes taken from it since the rank's last frame
    /// to it: what its kernel has not acknowledged
    /// ([`MpiModel::tcp_acks`]).
    unacked: HashMap<u32, u64>,
    /// The completion call being lowered whose messages the rank takes
    /// as their frames arrive: its runs so far ([`RecvGroup`]).
    group: Option<Vec<u32>>,
    /// The completion call the records so far belong to (its place in
    /// the rank's [`Trace::calls`]), while they follow each other.
    wait_call: Option<usize>,
}

impl Lowering<'_> {
    fn tag(&mut self, k: Kind) -> u32 {
        let n = self.tags.len() as u32;
        *self.tags.entry(k).or_insert(n)
    }

    /// Opens a group of receives that the rank takes as their frames
    /// arrive ([`RecvGroup`]), unless one is open.
    fn open_group(&mut self) {
        self.group.get_or_insert_with(Vec::new);
    }

    /// Drops the open group's last runs that begin with no receive of a
    /// frame (a message to oneself makes none): their events belong to
    /// the run before.
    fn trim_runs(&mut self) {
        let events = &self.trace.tasks[self.rank as usize];
        if let Some(runs) = self.group.as_mut() {
            while let Some(&at) = runs.last() {
                if matches!(events.get(at as usize), Some(Event::Recv { .. })) {
                    break;
                }
                runs.pop();
            }
        }
    }

    /// Starts a message's run in the open group (if one is open): the
    /// computation so far goes before it.
    fn begin_run(&mut self) {
        if self.group.is_none() {
            return;
        }
        self.flush();
        self.trim_runs();
        let at = self.trace.tasks[self.rank as usize].len() as u32;
        if let Some(runs) = self.group.as_mut() {
            runs.push(at);
        }
    }

    /// Closes the open group, after the computation so far: kept where
    /// two of its messages or more made frames.
    fn close_group(&mut self) {
        if self.group.is_none() {
            return;
        }
        // The last run's costs are its own.
        self.flush();
        self.trim_runs();
        let Some(runs) = self.group.take() else {
            return;
        };
        if runs.len() >= 2 {
            let r = self.rank as usize;
            let end = self.trace.tasks[r].len() as u32;
            self.trace.push_recv_group(r, RecvGroup { runs, end });
        }
    }

    /// Writes the computation so far.
    fn flush(&mut self) {
        let cycles = (self.ns / self.m.ns_per_node_cycle).floor();
        if cycles >= 1.0 {
            self.ns -= cycles * self.m.ns_per_node_cycle;
            self.trace.push(
                self.rank,
                Event::Cpu {
                    amount: cycles as u64,
                },
                self.line,
            );
        }
    }

    /// The software cost of a frame's payload (its bytes less the
    /// segment's header) at `rate` ns a byte.
    fn byte_cost(&mut self, frame: u64, rate: f64) {
        let payload = frame.saturating_sub(self.m.segment_header);
        self.ns += payload as f64 * rate;
    }

    /// The frames' sizes of a message of `bytes`.
    fn frames(&self, bytes: u64) -> impl Iterator<Item = u64> + '_ {
        let m = self.m;
        let total = bytes + m.message_header;
        let mss = m.segment_bytes.max(1);
        let n = total.div_ceil(mss).max(1);
        (0..n).map(move |k| (total - k * mss).min(mss) + m.segment_header)
    }

    /// The frames of `bytes` to `dst`, each after its payload's cost at
    /// `rate`; with the NIC's interrupt window
    /// ([`MpiModel::irq_window_ns`]), up to [`OFFLOAD_FRAMES`] of them at
    /// once after all their payloads' cost, as the guests' kernels hand
    /// their NIC a buffer of up to 64 KiB that it cuts into frames itself
    /// (TCP's segmentation offload).
    fn send_frames(&mut self, dst: u32, kind: Kind, bytes: u64, rate: f64) {
        if dst == self.rank {
            // A message to oneself is a copy in memory.
            return;
        }
        let tag = self.tag(kind);
        let frames: Vec<u64> = self.frames(bytes).collect();
        let together = if self.m.irq_window_ns > 0 {
            OFFLOAD_FRAMES
        } else {
            1
        };
        for buffer in frames.chunks(together) {
            // Each segment (or buffer) is written after its bytes' cost,
            // while the ones before it travel.
            for &f in buffer {
                self.byte_cost(f, rate);
            }
            self.flush();
            for &f in buffer {
                self.trace
                    .push(self.rank, Event::Send { dst, tag, bytes: f }, self.line);
            }
        }
        // Every frame to the peer acknowledges what came from it.
        self.unacked.remove(&dst);
    }

    /// The acknowledgement of `payload` bytes from `src` that the rank
    /// has just read (a message, or its eager part or rest), if its
    /// kernel sends one ([`MpiModel::tcp_acks`]).
    fn acknowledge(&mut self, src: u32, payload: u64) {
        if !self.m.tcp_acks {
            return;
        }
        let unacked = self.unacked.entry(src).or_default();
        *unacked += payload;
        if *unacked > self.m.segment_bytes {
            self.unacked.remove(&src);
            let ack = Event::Send {
                dst: src,
                tag: TCP_ACK_TAG,
                bytes: self.m.segment_header,
            };
            self.trace.push(self.rank, ack, self.line);
        }
    }

    /// The frames of `bytes` from `src`, each followed by its payload's
    /// cost at `rate`.
    fn recv_frames(&mut self, src: u32, kind: Kind, bytes: u64, rate: f64) {
        if src == self.rank {
            return;
        }
        let tag = self.tag(kind);
        let frames: Vec<u64> = self.frames(bytes).collect();
        let last = frames.len() - 1;
        for (k, f) in frames.into_iter().enumerate() {
            self.flush();
            self.trace
                .push(self.rank, Event::Recv { src, tag, bytes: f }, self.line);
            if k == last {
                // Read whole: one acknowledgement at most.
                self.acknowledge(src, bytes + self.m.message_header);
            }
            let payload = f.saturating_sub(self.m.segment_header) as f64 * rate;
            if matches!(kind, Kind::Ack(..)) {
                // A rendezvous acknowledgement has no receive cost to
                // take the kernel's part out of.
                self.ns += payload;
                continue;
            }
            let rx = self.m.rx_ns as f64 + self.rx_debt;
            self.ns += (payload - rx).max(0.0);
            self.rx_debt = (rx - payload).max(0.0);
        }
    }

    fn rendezvous(&self, bytes: u64) -> bool {
        bytes > self.m.eager_limit
    }

    /// The start of a send: all of an eager one, the first part of a
    /// rendezvous one; the rest's (kind, bytes) if one is left.
    fn start_send(&mut self, dst: u32, key: (u32, u32), bytes: u64) -> Option<(Kind, u64)> {
        let (once, rate) = self.m.message_costs(Side::Send, bytes);
        self.ns += once;
        let data = Kind::Data(key.0, key.1);
        if !self.rendezvous(bytes) {
            self.send_frames(dst, data, bytes, rate);
            self.ns += self.m.costs.send_tail_ns(bytes, self.m.eager_limit);
            return None;
        }
        self.send_frames(dst, data, self.m.eager_limit, rate);
        Some((data, bytes - self.m.eager_limit))
    }

    /// The end of a rendezvous send: its acknowledgement, then the rest.
    fn finish_send(&mut self, dst: u32, data: Kind, rest: u64) {
        let (Kind::Data(c, t) | Kind::Ack(c, t) | Kind::Rest(c, t)) = data;
        let bytes = rest + self.m.eager_limit;
        let (_, rate) = (self.m).message_costs(Side::Send, bytes);
        self.recv_frames(dst, Kind::Ack(c, t), 0, rate);
        self.send_frames(dst, Kind::Rest(c, t), rest, rate);
        self.ns += self.m.costs.send_tail_ns(bytes, self.m.eager_limit);
    }

    /// A blocking send.
    fn send(&mut self, dst: u32, key: (u32, u32), bytes: u64) {
        if let Some((data, rest)) = self.start_send(dst, key, bytes) {
            self.finish_send(dst, data, rest);
        }
    }

    /// The start of a receive: all of an eager message; the first part
    /// of a rendezvous one, answered by its acknowledgement.
    fn start_recv(&mut self, src: u32, key: (u32, u32), bytes: u64) {
        let (c, t) = key;
        let (_, rate) = self.m.message_costs(Side::Recv, bytes);
        if !self.rendezvous(bytes) {
            self.recv_frames(src, Kind::Data(c, t), bytes, rate);
        } else {
            self.recv_frames(src, Kind::Data(c, t), self.m.eager_limit, rate);
            self.send_frames(src, Kind::Ack(c, t), 0, rate);
        }
    }

    /// The end of a receive: a rendezvous message's rest, then the
    /// message's cost.
    fn finish_recv(&mut self, src: u32, key: (u32, u32), bytes: u64) {
        let (once, rate) = self.m.message_costs(Side::Recv, bytes);
        if self.rendezvous(bytes) {
            let rest = bytes - self.m.eager_limit;
            self.recv_frames(src, Kind::Rest(key.0, key.1), rest, rate);
        }
        self.ns += (once - self.rx_debt).max(0.0);
        self.rx_debt = 0.0;
    }

    /// A live CPU burst of `ns` as the replay computes it: less the guest
    /// kernel's receive of the `frames_in` frames its node took in during
    /// it ([`MpiModel::rx_ns`] each, at most the `kernel_ns` the live run
    /// spent in the kernel then, at most the burst), which the replay
    /// charges again as its own frames arrive wherever the rank is. A
    /// trace without the live counts, or a model without a kernel
    /// receive, keeps the burst whole.
    fn burst_less_its_frames(&self, ns: u64, kernel_ns: u64, frames_in: u64) -> f64 {
        let taken_in = frames_in as f64 * self.m.rx_ns as f64;
        ns as f64 - taken_in.min(kernel_ns as f64).min(ns as f64)
    }

    /// A blocking receive.
    fn recv(&mut self, src: u32, key: (u32, u32), bytes: u64) {
        self.start_recv(src, key, bytes);
        self.finish_recv(src, key, bytes);
    }

    /// Open MPI's sendrecv (irecv, send, wait): `send` to its peer and
    /// `recv` from its, each (peer, key, bytes).
    fn sendrecv(&mut self, send: (u32, (u32, u32), u64), recv: (u32, (u32, u32), u64)) {
        let (to, send_key, send_bytes) = send;
        let (from, recv_key, recv_bytes) = recv;
        let left = self.start_send(to, send_key, send_bytes);
        self.start_recv(from, recv_key, recv_bytes);
        if let Some((data, rest)) = left {
            self.finish_send(to, data, rest);
        }
        self.finish_recv(from, recv_key, recv_bytes);
    }

    /// One of the rank's steps other than a collective (which
    /// [`Lowering::collective`] expands).
    fn event(&mut self, e: &MpiStep) {
        let op = match *e {
            MpiStep::Cpu {
                ns,
                kernel_ns,
                frames_in,
            } => {
                self.ns += self.burst_less_its_frames(ns, kernel_ns, frames_in);
                return;
            }
            MpiStep::Call(ref op) => op,
        };
        match *op {
            MpiOp::Send {
                dst,
                tag,
                bytes,
                comm,
                ..
            } => self.send(dst, (comm, tag), bytes),
            MpiOp::Isend {
                dst,
                tag,
                bytes,
                comm,
                req,
                ..
            } => {
                if let Some((data, rest)) = self.start_send(dst, (comm, tag), bytes) {
                    self.isends.insert(req, (dst, data, rest));
                }
            }
            MpiOp::Recv {
                src,
                tag,
                bytes,
                comm,
            } => self.recv(src, (comm, tag), bytes),
            MpiOp::Irecv { comm, req, .. } => {
                self.irecv_comm.insert(req, comm);
            }
            MpiOp::Sendrecv {
                dst,
                send_tag,
                send_bytes,
                src,
                recv_tag,
                recv_bytes,
                comm,
            } => self.sendrecv(
                (dst, (comm, send_tag), send_bytes),
                (src, (comm, recv_tag), recv_bytes),
            ),
            MpiOp::Wait { ref done, .. } => {
                for d in done {
                    self.completed(d);
                }
            }
            MpiOp::Probe | MpiOp::Collective(_) | MpiOp::CommNew { .. } => {}
        }
    }

    /// A request a completion call completed: an `MPI_Isend`'s rendezvous
    /// rest goes; an `MPI_Irecv`'s message is received (one the rank
    /// never posted, or from `MPI_PROC_NULL`, moves nothing).
    fn completed(&mut self, d: &super::Done) {
        if !d.recv {
            if let Some((dst, data, rest)) = self.isends.remove(&d.req) {
                self.finish_send(dst, data, rest);
            }
            return;
        }
        if let (Some(src), Some(tag), Some(&comm)) = (d.peer, d.tag, self.irecv_comm.get(&d.req)) {
            self.recv(src, (comm, tag), d.bytes);
        }
    }

    /// A collective on communicator `comm` (its `members`, world ranks)
    /// as the messages of its algorithm ([`steps`]).
    fn collective(
        &mut self,
        shape: &CallShape,
        algorithms: &Algorithms,
        members: &[u32],
        comm: u32,
    ) {
        let key = (comm, COLLECTIVE_TAG);
        let world = |peer: u32| members[peer as usize];
        for step in steps(shape, algorithms) {
            match step {
                Step::Send { peer, bytes } => self.send(world(peer), key, bytes),
                Step::Recv { peer, bytes } => self.recv(world(peer), key, bytes),
                Step::SendRecv {
                    to,
                    send_bytes,
                    from,
                    recv_bytes,
                } => self.sendrecv((world(to), key, send_bytes), (world(from), key, recv_bytes)),
                Step::Isend { peer, bytes } => {
                    let dst = world(peer);
                    if let Some((data, rest)) = self.start_send(dst, key, bytes) {
                        self.started.push((dst, data, rest));
                    }
                }
                Step::Irecv { peer, bytes } => self.posted.push((world(peer), bytes)),
                Step::WaitAll => self.wait_all(key),
            }
        }
    }

    /// Open MPI's wait for all of a collective's started sends and posted
    /// receives. With no rendezvous send to finish, the receives as one
    /// group, each message whole, taken as their frames arrive
    /// ([`RecvGroup`]); else every receive's start in posting order,
    /// every rendezvous send's end, every receive's end.
    fn wait_all(&mut self, key: (u32, u32)) {
        let posted = std::mem::take(&mut self.posted);
        if self.started.is_empty() {
            self.open_group();
            for &(src, bytes) in &posted {
                self.begin_run();
                self.recv(src, key, bytes);
            }
            self.close_group();
            return;
        }
        for &(src, bytes) in &posted {
            self.start_recv(src, key, bytes);
        }
        for (dst, data, rest) in std::mem::take(&mut self.started) {
            self.finish_send(dst, data, rest);
        }
        for &(src, bytes) in &posted {
            self.finish_recv(src, key, bytes);
        }
    }
}

impl MpiProgram {
    /// The frame trace that replays this program under `m` (module doc).
    ///
    /// # Errors
    /// [`TraceError::Syntax`] naming the line of a collective on a
    /// communicator the file does not define, or whose members leave out
    /// the rank or the root, or where the lowered trace passes
    /// [`MAX_LOWERED_EVENTS`].
    pub fn lower(&self, m: &MpiModel) -> Result<Trace, TraceError> {
        let mut trace = Trace::new(&self.name, self.ranks.len());
        trace.frames = true;
        trace.mpi = true;
        trace.live = self.live;
        // A guest time in node cycles.
        let cycles = |ns: u64| (ns as f64 / m.ns_per_node_cycle).round() as u64;
        trace.wake = cycles(m.wake_ns);
        trace.poll = cycles(m.poll_ns);
        trace.connected = self.preconnected;
        trace.rx = cycles(m.rx_ns);
        trace.irq = cycles(m.irq_window_ns);
        trace.arp_rx = cycles(m.arp_rx_ns);
        if m.tcp_acks && (m.loss_probe_ns > 0 || m.delayed_ack_ns > 0) {
            trace.tcp = TcpTimers {
                probe: cycles(m.loss_probe_ns),
                delack: cycles(m.delayed_ack_ns),
                ack: m.segment_header,
            };
        }
        if !self.preconnected && m.connect_ns > 0 {
            trace.contact = cycles(m.connect_ns);
            trace.tick = cycles(m.event_tick_ns);
            trace.handshake = cycles(m.handshake_ns);
            if m.arp {
                trace.arp = ARP_REQUEST_BYTES;
            }
        }
        let mut tags = HashMap::new();
        for (r, events) in self.ranks.iter().enumerate() {
            let before: usize = trace.tasks.iter().map(Vec::len).sum();
            let mut l = Lowering {
                m,
                trace: &mut trace,
                tags: &mut tags,
                rank: r as u32,
                line: 0,
                ns: 0.0,
                isends: BTreeMap::new(),
                irecv_comm: HashMap::new(),
                started: Vec::new(),
                posted: Vec::new(),
                rx_debt: 0.0,
                unacked: HashMap::new(),
                group: None,
                wait_call: None,
            };
            for (k, e) in events.iter().enumerate() {
                l.line = self.lines[r].get(k).copied().unwrap_or(0);
                if before + l.trace.tasks[r].len() > MAX_LOWERED_EVENTS {
                    return Err(TraceError::Syntax {
                        file: self.name.clone(),
                        line: l.line as usize,
                        what: format!(
                            "the trace lowers to more than {MAX_LOWERED_EVENTS} frames and computations"
                        ),
                    });
                }
                // A run of completion calls' receives is taken as its
                // frames arrive.
                if is_receive_wait(e) {
                    l.open_group();
                    l.begin_run();
                } else {
                    l.close_group();
                }
                l.lower_event(self, e)?;
            }
            l.close_group();
            // Rendezvous Isends never completed in the trace: at its end.
            while let Some((_, (dst, data, rest))) = l.isends.pop_first() {
                l.finish_send(dst, data, rest);
            }
            let ns = l.ns;
            l.ns = ns + l.m.ns_per_node_cycle / 2.0;
            l.flush();
        }
        Ok(trace)
    }

    /// Rank `r`'s collective `call` at `line` as its algorithm's
    /// expansion takes it, with the communicator's members.
    ///
    /// # Errors
    /// [`TraceError::Syntax`] naming the line: a communicator the file
    /// does not define, or a rank or root outside it.
    fn shape<'a>(
        &'a self,
        r: u32,
        line: u32,
        call: &'a CollectiveCall,
    ) -> Result<(CallShape<'a>, &'a [u32]), TraceError> {
        let comm = call.comm;
        let at = |what: String| TraceError::Syntax {
            file: self.name.clone(),
            line: line as usize,
            what,
        };
        let members = self.members(comm).ok_or_else(|| {
            at(format!(
                "communicator {comm} is not defined (no d:1:{comm}: line)"
            ))
        })?;
        let place = |w: u32, what: &str| {
            let i = members.iter().position(|&x| x == w);
            i.map(|i| i as u32)
                .ok_or_else(|| at(format!("{what} {w} is not a member of communicator {comm}")))
        };
        let me = place(r, "rank")?;
        let root = call.root.map(|w| place(w, "root")).transpose()?;
        let shape = CallShape {
            op: call.op,
            size: members.len() as u32,
            me,
            root,
            sent: call.sent,
            received: call.received,
            per_peer: &call.per_peer,
        };
        Ok((shape, members))
    }
}

mod calls;
mod model;
#[cfg(test)]
mod tests;

/// Whether `e` is a completion whose every request is a receive: a run
/// of them is taken as its frames arrive ([`RecvGroup`]).
fn is_receive_wait(e: &MpiStep) -> bool {
    matches!(e, MpiStep::Call(MpiOp::Wait { done, .. }) if !done.is_empty() && done.iter().all(|d| d.recv))
}
