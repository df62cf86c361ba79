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
//!   payload, less its send tail `u(B)` ([`CostTable::send_tail_ns`],
//!   paid after the last segment: taken from the spread part first, then
//!   from `c(0)`); the receiver the table's receive tail `t(B)` after its last
//!   segment (`c(0)` where the table gives none,
//!   [`CostTable::recv_tail_ns`]) and `c(B) - t(B)` spread.
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

use std::collections::HashMap;

use super::algorithms::Algorithms;
use super::costs::{CostTable, Side};
use super::expand::{steps, CallShape, Step};
use super::read::{MpiEvent, MpiProgram, RecvKind};
use super::CollectiveCall;
use crate::{Event, RecvGroup, TcpTimers, Trace, TraceError, TCP_ACK_TAG};

pub use calls::{CallKind, LoweredCall};

/// The MPI layer's model (the `mpi_*` keys; docs/model.md gives how each
/// default was measured on the guests).
#[derive(Debug, Clone, PartialEq)]
pub struct MpiModel {
    /// Largest message sent eagerly, bytes (Open MPI's
    /// `btl_tcp_eager_limit`, 65,536).
    pub eager_limit: u64,
    /// Most payload bytes per TCP segment (the MSS of a 1,500-byte MTU
    /// with TCP timestamps: 1,448).
    pub segment_bytes: u64,
    /// Header bytes of every segment's frame: Ethernet 14, IPv4 20, TCP
    /// with timestamps 32.
    pub segment_header: u64,
    /// Bytes the MPI layer adds to a message (22: Open MPI's ob1 match
    /// header, 14, and the TCP BTL's header, 8; the live frames of an
    /// eager message of `B` bytes are `B + 22` bytes of TCP payload).
    pub message_header: u64,
    /// Software cost of a message on each side, ns of guest time
    /// (149,000: fsin-pingpong's 8-byte round trips on 2 guests, 602.6 us,
    /// less the network's part, over 4).
    pub message_ns: u64,
    /// Software cost of a byte of a segment on each side, picoseconds of
    /// guest time (24,000: fsin-pingpong's 60,000-byte round trips within
    /// 1%; docs/model.md).
    pub byte_ps: u64,
    /// A calibrated cost per message size and side (`mpi_costs`, as
    /// `fsin qemu --calibrate` measures it); empty: `message_ns` and
    /// `byte_ps` apply.
    pub costs: CostTable,
    /// What a rank pays, ns of guest time, when it waited for a frame:
    /// its wake-up (the interrupt, the scheduler, the return from its
    /// poll), which a rank busy with the messages before does not pay
    /// ([`Trace::wake`]; 0 by default, a calibrated profile sets it).
    pub wake_ns: u64,
    /// The kernel's receive of a frame, ns of guest time (`mpi_rx_ns`:
    /// the NIC's interrupt and the IP and TCP input, which run when the
    /// frame arrives whatever the rank does): a rank busy then is held up
    /// that long, and one that waits for the frame takes it that much
    /// later ([`Trace::rx`]). Taken out of the receive's cost (its
    /// segments' first, then its once cost), so that a message costs its
    /// receiver as much in all; 0 (the default): the receiver pays its
    /// whole cost when it takes the message.
    pub rx_ns: u64,
    /// How long a guest's NIC holds its interrupts back after each one,
    /// ns of guest time (`mpi_irq_window_ns`; QEMU's e1000 raises the
    /// next interrupt no sooner than 500 x 256 ns = 128 us after one,
    /// `hw/net/e1000.c`): a frame a node sends or takes in (data,
    /// acknowledgements, ARP) raises one at once after the window, else
    /// at its end, and a frame in reaches the kernel at its interrupt
    /// ([`Trace::irq`]). 0 (the default): every frame at once.
    pub irq_window_ns: u64,
    /// A rank's set-up of a new peer, ns of guest time (Open MPI's modex
    /// lookup of the peer's addresses through the local daemon): its
    /// first send to the peer blocks that long, and the peer accepting
    /// the connection sets it up as long unless it has already; the
    /// pair's frames wait until both have ([`Trace::contact`]); 0 (the
    /// default): no connection model. Not
    /// for traces of runs whose connections opened in `MPI_Init`
    /// (`--mpi-preconnect`, [`MpiProgram::preconnected`]).
    pub connect_ns: u64,
    /// With `connect_ns`: ns of guest time between the event loop's runs
    /// in a rank that has no connection yet (10,000,000: Open MPI's
    /// `mpi_event_tick_rate` of 10,000 us; Open MPI 4.1's `opal_progress`
    /// runs libevent's loop at most once a tick until the TCP BTL holds an
    /// endpoint, then at every call), so that a first contact waits for
    /// the sender's loop (its connect completes) and then the peer's (it
    /// accepts) ([`Trace::tick`]).
    pub event_tick_ns: u64,
    /// With `connect_ns`: ns of guest time from a connect's start to its
    /// TCP handshake's end (`mpi_handshake_ns`, 200,000: a SYN and its
    /// SYN-ACK through both guests' kernels and the network),
    /// [`Trace::handshake`]. Only whether a rank waits before or after it
    /// matters (a rank that waits right after its connect finds it done
    /// only a tick later; one that first sets up other peers finds it at
    /// once), so it is not calibrated.
    pub handshake_ns: u64,
    /// TCP's acknowledgements as frames (`mpi_tcp_acks`, on by default):
    /// a guest's kernel acknowledges a connection's data when its rank
    /// reads it, once a read leaves more than a segment's payload
    /// (`segment_bytes`) taken since its last frame to the sender (Linux's
    /// `tcp_cleanup_rbuf`; any frame to the sender carries the
    /// acknowledgement instead). The lowering sends a
    /// `segment_header`-byte frame ([`crate::TCP_ACK_TAG`]) back when the
    /// rank has taken a message's last segment; the sender's kernel takes
    /// it in (`rx_ns`), and no call waits for it. On CG's 16 guests
    /// (two-segment messages) the rule gives 6,351 acknowledgements where
    /// the live run's steady iterations sent 6,303; a 64 KiB stream's
    /// receiver sends one a message live, as the rule does
    /// (docs/model.md). Off: only the frames that carry MPI's bytes.
    pub tcp_acks: bool,
    /// With `connect_ns`: the first connection of a pair of nodes that
    /// do not know each other's address begins with an ARP request that
    /// the connecting rank's kernel broadcasts
    /// ([`ARP_REQUEST_BYTES`], [`Trace::arp`]; `mpi_arp`, on by default),
    /// a copy to every other node, which each one's kernel takes in
    /// (`rx_ns`). Rank 0's node (where `mpirun` runs, which reached every
    /// node) knows every address. The live runs' captures show it: IS on
    /// 64 guests sent 1,958 requests while its ranks ran, one for each of
    /// 1,898 of the 1,953 pairs without rank 0, and their 63 copies each
    /// are most of the network's load while the first `MPI_Alltoallv`
    /// opens its connections. The reply (one frame) is left out.
    pub arp: bool,
    /// With `tcp_acks`: the tail-loss probe's least timeout, ns of guest
    /// time (`mpi_loss_probe_ns`, 8,000,000: Linux's `TCP_TIMEOUT_MIN`,
    /// 2 jiffies at the guests' 250 Hz): a sender with 2 or more frames
    /// unacknowledged sends its last one again when no acknowledgement
    /// came for twice its smoothed round trip plus this long, and the
    /// receiver answers with a D-SACK ([`crate::TcpTimers::probe`]).
    /// IS on 64 guests sent 1,977 such frames again while its ranks ran,
    /// 1,815 answered by a D-SACK (none was lost): two-segment messages
    /// to the busy ranks, whose reads came late. 0: no probes.
    pub loss_probe_ns: u64,
    /// With `tcp_acks`: how long a receiver's kernel holds an
    /// acknowledgement that no frame to the sender carried, ns of guest
    /// time (`mpi_delayed_ack_ns`, 40,000,000: Linux's `TCP_DELACK_MIN`;
    /// the live runs' acknowledgements of single segments come at most
    /// 44 ms after them), [`crate::TcpTimers::delack`]. 0: never.
    pub delayed_ack_ns: u64,
    /// What a run of a rank's event loop costs per TCP connection it
    /// holds beyond the first, ns of guest time (`mpi_poll_ns`, 5,700),
    /// [`crate::Trace::poll`]: Open MPI's progress engine runs libevent's
    /// loop, on its `poll` backend (Open MPI's default everywhere but
    /// macOS), which asks the kernel about every socket each run, and a
    /// rank finds a frame by such a run: a waiting rank a poll of all its
    /// connections after the frame comes, one whose frame is already in
    /// when it asks, unless a run since the frame came found it (one run
    /// takes every frame in by then). Measured on 16 guests (docs/model.md):
    /// an 8-byte round trip between two ranks that hold 15 connections
    /// each takes 160 us longer than between two that hold one. A
    /// calibration's 2 guests hold one, a run of 64 ranks up to 63. A
    /// connection counts from the pair's first frame (from the start in
    /// a preconnected run). 0: none.
    pub poll_ns: u64,
    /// Nanoseconds of guest time per node cycle (`1e9 / node_clock`).
    pub ns_per_node_cycle: f64,
}

impl Default for MpiModel {
    fn default() -> MpiModel {
        MpiModel {
            eager_limit: 65_536,
            segment_bytes: 1448,
            segment_header: 66,
            message_header: 22,
            message_ns: 149_000,
            byte_ps: 24_000,
            costs: CostTable::default(),
            wake_ns: 0,
            rx_ns: 0,
            irq_window_ns: 0,
            connect_ns: 0,
            event_tick_ns: 10_000_000,
            handshake_ns: 200_000,
            tcp_acks: true,
            arp: true,
            loss_probe_ns: 8_000_000,
            delayed_ack_ns: 40_000_000,
            poll_ns: 5_700,
            ns_per_node_cycle: 8.0,
        }
    }
}

impl MpiModel {
    /// The software cost on `side` of a message of `bytes`: ns once (the
    /// sender's before its first segment, the receiver's after its last:
    /// the table's receive tail) and ns per payload byte of each of its
    /// segments (module doc); the sender's tail
    /// ([`CostTable::send_tail_ns`]) is neither.
    pub fn message_costs(&self, side: Side, bytes: u64) -> (f64, f64) {
        if self.costs.is_empty() {
            return (self.message_ns as f64, self.byte_ps as f64 / 1000.0);
        }
        let limit = self.eager_limit;
        let cost = self.costs.ns(side, bytes, limit);
        let (once, cost) = match side {
            Side::Send => {
                let before = cost - self.costs.send_tail_ns(bytes, limit);
                (self.costs.ns(side, 0, limit).min(before), before)
            }
            Side::Recv => (self.costs.recv_tail_ns(bytes, limit), cost),
        };
        let spread = (cost - once).max(0.0);
        (once, spread / (bytes + self.message_header).max(1) as f64)
    }
}

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
    /// by the rank's Isend number, (destination, data kind, rest bytes).
    isends: Vec<Option<(u32, Kind, u64)>>,
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
    /// `rate`.
    fn send_frames(&mut self, dst: u32, kind: Kind, bytes: u64, rate: f64) {
        if dst == self.rank {
            // A message to oneself is a copy in memory.
            return;
        }
        let tag = self.tag(kind);
        let frames: Vec<u64> = self.frames(bytes).collect();
        for f in frames {
            // Each segment is written after its bytes' cost, while the
            // ones before it travel.
            self.byte_cost(f, rate);
            self.flush();
            self.trace
                .push(self.rank, Event::Send { dst, tag, bytes: f }, self.line);
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

    /// A blocking receive.
    fn recv(&mut self, src: u32, key: (u32, u32), bytes: u64) {
        self.start_recv(src, key, bytes);
        self.finish_recv(src, key, bytes);
    }

    /// Open MPI's sendrecv (irecv, send, wait) with `to` and `from`.
    fn sendrecv(&mut self, to: u32, send_bytes: u64, from: u32, recv_bytes: u64, key: (u32, u32)) {
        let left = self.start_send(to, key, send_bytes);
        self.start_recv(from, key, recv_bytes);
        if let Some((data, rest)) = left {
            self.finish_send(to, data, rest);
        }
        self.finish_recv(from, key, recv_bytes);
    }

    /// One of the rank's events other than a collective (which
    /// [`Lowering::collective`] expands).
    fn event(&mut self, e: &MpiEvent) {
        match *e {
            MpiEvent::Cpu { ns } => self.ns += ns as f64,
            MpiEvent::Send {
                dst,
                bytes,
                tag,
                comm,
                immediate: false,
            } => self.send(dst, (comm, tag), bytes),
            MpiEvent::Send {
                dst,
                bytes,
                tag,
                comm,
                immediate: true,
            } => {
                let left = self.start_send(dst, (comm, tag), bytes);
                self.isends.push(left.map(|(data, rest)| (dst, data, rest)));
            }
            MpiEvent::IsendDone { isend } => {
                if let Some((dst, data, rest)) =
                    self.isends.get_mut(isend as usize).and_then(Option::take)
                {
                    self.finish_send(dst, data, rest);
                }
            }
            MpiEvent::Recv {
                kind: RecvKind::Post,
                ..
            } => {}
            MpiEvent::Recv {
                src,
                bytes,
                tag,
                comm,
                ..
            } => self.recv(src, (comm, tag), bytes),
            MpiEvent::Collective(_) => {}
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
                } => self.sendrecv(world(to), send_bytes, world(from), recv_bytes, key),
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
                isends: Vec::new(),
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
                if matches!(
                    e,
                    MpiEvent::Recv {
                        kind: RecvKind::Wait,
                        ..
                    }
                ) {
                    l.open_group();
                    l.begin_run();
                } else {
                    l.close_group();
                }
                l.lower_event(self, e)?;
            }
            l.close_group();
            // Rendezvous Isends never completed in the trace: at its end.
            for k in 0..l.isends.len() {
                if let Some((dst, data, rest)) = l.isends[k].take() {
                    l.finish_send(dst, data, rest);
                }
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
#[cfg(test)]
mod tests;
