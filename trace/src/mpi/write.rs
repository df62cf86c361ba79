//! The MPI level's writer (its reader is [`super::read`]): an MPI-level
//! trace written as Dimemas, in the records that BSC's prv2dim writes
//! from Extrae traces and Dimemas reads (Dimemas'
//! `file_data_access.c`), in their older send and receive form (no
//! partner thread), which INSEE's reader takes too:
//!
//! - header `#DIMEMAS:"NAME":1,OFFSET:TASKS(1,...,1),COMMS,0,0`, OFFSET
//!   the byte offset of the first `s:` line (20 digits);
//! - `d:1:COMM:SIZE:MEMBERS...`, one per communicator (the trace's
//!   communicator `c` is `c + 1`, so that `MPI_COMM_WORLD` is 1, as
//!   prv2dim numbers it);
//! - per rank, its records in order: `1:T:0:SECONDS` CPU bursts (`%.9f`,
//!   the time between leaving one MPI call and entering the next), sends
//!   `2:T:0:DST:BYTES:TAG:COMM:SYNC` (SYNC 1 for `MPI_Send`/`MPI_Ssend`,
//!   2 for `MPI_Isend`, 3 for `MPI_Issend`: bit 0 rendezvous, bit 1
//!   immediate), receives `3:T:0:SRC:BYTES:TAG:COMM:TYPE` (0 `MPI_Recv`, 1
//!   `MPI_Irecv`, 2 the completion call where an `Irecv` completed; an
//!   `MPI_Irecv` from any source is written with the source it got),
//!   `MPI_Sendrecv` as `Irecv`, `Send`, `Wait` (prv2dim's three), and
//!   collectives `10:T:0:OP:COMM:ROOT:0:SENT:RECEIVED` (OP Dimemas'
//!   global operation number; ROOT 1 on the root, else 0, but for
//!   `MPI_Reduce` the root's rank; SENT and RECEIVED this rank's bytes in
//!   all);
//! - before a `v` collective's record, fsin-rs's per-member counts as
//!   user events (`20:T:0:TYPE:VALUE`, which other tools pass over):
//!   [`SENT_EVENT`] with the bytes sent to each member, then
//!   [`RECEIVED_EVENT`] with the bytes received from each, in the
//!   communicator's order;
//! - before a rooted collective (Bcast, Reduce, Gather(v), Scatter(v)),
//!   [`ROOT_EVENT`] with the root's rank, which Dimemas' ROOT field
//!   gives only on the root itself;
//! - where a completion call completes an `MPI_Isend`, [`ISEND_DONE_EVENT`]
//!   with the send's number among the rank's `MPI_Isend`s (from 0), which
//!   prv2dim leaves out;
//! - a rank that left `MPI_Init` after the world's first one did (its
//!   [`Rank::start_ns`]) begins with [`START_EVENT`], the nanoseconds
//!   after, which the MPI-level reader takes as time before its first
//!   record;
//! - before a CPU burst during which the guest's kernel ran in the live
//!   run ([`Rank::burst_kernel_ns`]), [`BURST_KERNEL_EVENT`] with its
//!   time, ns;
//! - before a CPU burst around which the rank's node received or sent
//!   frames in the live run ([`Rank::burst_frames`]), those of
//!   [`BURST_RECEIVED_EVENT`], [`BURST_RECEIVED_BYTES_EVENT`],
//!   [`BURST_SENT_EVENT`] and [`CALL_SENT_EVENT`] that are not 0;
//! - `s:T:OFFSET` per rank, the byte offset of its first record.

use std::fmt::Write as _;

use std::collections::HashMap;

use super::{Collective, CollectiveCall, Done, MpiOp, MpiTrace, Rank};

/// User event type of a `v` collective's bytes sent to one member.
pub const SENT_EVENT: u64 = 90_000_001;
/// User event type of a `v` collective's bytes received from one member.
pub const RECEIVED_EVENT: u64 = 90_000_002;
/// User event type of an `MPI_Isend` completed here: its number among
/// the rank's `MPI_Isend`s.
pub const ISEND_DONE_EVENT: u64 = 90_000_003;
/// User event type of a rooted collective's root (a rank of the world).
pub const ROOT_EVENT: u64 = 90_000_004;
/// User event type of a rank's start: how long after the world's first
/// rank it left `MPI_Init`, ns of guest time.
pub const START_EVENT: u64 = 90_000_005;
/// User event type of the guest kernel's time during the rank's next CPU
/// burst in the live run, ns ([`Rank::burst_kernel_ns`]); written only
/// where it ran. The lowering takes the kernel's receive of the frames
/// that came during the burst out of it, at most this much
/// ([`BURST_RECEIVED_EVENT`]); `scripts/mpi-self-consistency.py` reports
/// each rank's share.
pub const BURST_KERNEL_EVENT: u64 = 90_000_006;
/// User event type of the frames handed to the rank's node during its
/// next CPU burst in the live run ([`super::BurstFrames::received`]).
/// This and the three after it are written only where not 0; the
/// lowering takes each of these frames' kernel receive (`mpi_rx_ns`) out
/// of the burst, which the replay charges again as its own frames
/// arrive; the MPI-level reader passes over the other three;
/// `scripts/mpi-self-consistency.py` reports them.
pub const BURST_RECEIVED_EVENT: u64 = 90_000_007;
/// User event type of those frames' bytes
/// ([`super::BurstFrames::received_bytes`]).
pub const BURST_RECEIVED_BYTES_EVENT: u64 = 90_000_008;
/// User event type of the frames the rank's node sent during its next
/// CPU burst ([`super::BurstFrames::sent`]).
pub const BURST_SENT_EVENT: u64 = 90_000_009;
/// User event type of the frames the rank's node sent during the call
/// before its next CPU burst ([`super::BurstFrames::sent_in_call`]).
pub const CALL_SENT_EVENT: u64 = 90_000_010;

/// The collectives by Dimemas' global operation number (the index;
/// Dimemas' EventEncoding.h): the writer's and the reader's one table.
pub const GLOBAL_OPS: [Collective; 12] = [
    Collective::Barrier,
    Collective::Bcast,
    Collective::Gather,
    Collective::Gatherv,
    Collective::Scatter,
    Collective::Scatterv,
    Collective::Allgather,
    Collective::Allgatherv,
    Collective::Alltoall,
    Collective::Alltoallv,
    Collective::Reduce,
    Collective::Allreduce,
];

/// Dimemas' global operation number of `op` ([`GLOBAL_OPS`]).
pub fn global_op(op: Collective) -> u32 {
    GLOBAL_OPS
        .iter()
        .position(|&o| o == op)
        .expect("every collective has a number") as u32
}

/// A rank's requests (the library numbers them once per rank), looked up
/// by number while its calls are written.
struct Requests {
    /// An `MPI_Isend`'s number among the rank's `MPI_Isend`s.
    isend_number: HashMap<u32, usize>,
    /// An `MPI_Irecv`'s communicator.
    irecv_comm: HashMap<u32, u32>,
    /// A receive request as it completed.
    received: HashMap<u32, Done>,
}

impl Requests {
    fn of(rank: &Rank) -> Requests {
        let mut r = Requests {
            isend_number: HashMap::new(),
            irecv_comm: HashMap::new(),
            received: HashMap::new(),
        };
        for c in &rank.calls {
            match &c.op {
                MpiOp::Isend { req, .. } => {
                    let n = r.isend_number.len();
                    r.isend_number.insert(*req, n);
                }
                MpiOp::Irecv { req, comm, .. } => {
                    r.irecv_comm.insert(*req, *comm);
                }
                MpiOp::Wait { done, .. } => {
                    for d in done.iter().filter(|d| d.recv) {
                        r.received.entry(d.req).or_insert(*d);
                    }
                }
                _ => {}
            }
        }
        r
    }
}

impl MpiTrace {
    /// The trace as Dimemas text (module doc); `name` goes in the header's
    /// quotes (`"`, `:` and newlines become `_`).
    pub fn to_dimemas(&self, name: &str) -> String {
        let name: String = name
            .chars()
            .map(|c| {
                if matches!(c, ':' | '"' | '\n' | '\r') {
                    '_'
                } else {
                    c
                }
            })
            .collect();
        let n = self.ranks.len();
        let mut body = String::new();
        for (c, comm) in self.comms.iter().enumerate() {
            let _ = write!(body, "d:1:{}:{}", c + 1, comm.members.len());
            for m in &comm.members {
                let _ = write!(body, ":{m}");
            }
            body.push('\n');
        }
        let mut starts = Vec::with_capacity(n);
        for (t, rank) in self.ranks.iter().enumerate() {
            starts.push(body.len());
            let requests = Requests::of(rank);
            if rank.start_ns > 0 {
                let _ = writeln!(body, "20:{t}:0:{START_EVENT}:{}", rank.start_ns);
            }
            for (k, (call, burst)) in rank.calls.iter().zip(rank.bursts()).enumerate() {
                if let Some((from, to)) = burst {
                    let kernel = rank.burst_kernel_ns.get(k).copied().unwrap_or(0);
                    if kernel > 0 {
                        let _ = writeln!(body, "20:{t}:0:{BURST_KERNEL_EVENT}:{kernel}");
                    }
                    let frames = rank.burst_frames.get(k).copied().unwrap_or_default();
                    for (event, n) in [
                        (BURST_RECEIVED_EVENT, u64::from(frames.received)),
                        (BURST_RECEIVED_BYTES_EVENT, frames.received_bytes),
                        (BURST_SENT_EVENT, u64::from(frames.sent)),
                        (CALL_SENT_EVENT, u64::from(frames.sent_in_call)),
                    ] {
                        if n > 0 {
                            let _ = writeln!(body, "20:{t}:0:{event}:{n}");
                        }
                    }
                    let _ = writeln!(body, "1:{t}:0:{:.9}", (to - from) as f64 * 1e-9);
                }
                self.write_call(&mut body, t, &requests, &call.op);
            }
        }
        // The header, whose length the offsets count: its own offset field
        // has a fixed width.
        let threads = vec!["1"; n].join(",");
        let head_len = format!(
            "#DIMEMAS:\"{name}\":1,{:020}:{n}({threads}),{},0,0\n",
            0,
            self.comms.len()
        )
        .len();
        let s_at = head_len + body.len();
        let mut out = format!(
            "#DIMEMAS:\"{name}\":1,{s_at:020}:{n}({threads}),{},0,0\n",
            self.comms.len()
        );
        out.push_str(&body);
        for (t, at) in starts.iter().enumerate() {
            let _ = writeln!(out, "s:{t}:{}", head_len + at);
        }
        out
    }

    fn write_call(&self, s: &mut String, t: usize, requests: &Requests, op: &MpiOp) {
        match *op {
            MpiOp::Send {
                dst,
                tag,
                bytes,
                comm,
                ..
            } => {
                let _ = writeln!(s, "2:{t}:0:{dst}:{bytes}:{tag}:{}:1", comm + 1);
            }
            MpiOp::Isend {
                dst,
                tag,
                bytes,
                comm,
                sync,
                ..
            } => {
                let _ = writeln!(
                    s,
                    "2:{t}:0:{dst}:{bytes}:{tag}:{}:{}",
                    comm + 1,
                    if sync { 3 } else { 2 }
                );
            }
            MpiOp::Recv {
                src,
                tag,
                bytes,
                comm,
            } => {
                let _ = writeln!(s, "3:{t}:0:{src}:{bytes}:{tag}:{}:0", comm + 1);
            }
            MpiOp::Irecv { comm, req, .. } => {
                // As it completed: the source and tag it got (none: it
                // received from MPI_PROC_NULL, nothing moved).
                if let Some(d) = requests.received.get(&req) {
                    if let (Some(src), Some(tag)) = (d.peer, d.tag) {
                        let _ = writeln!(s, "3:{t}:0:{src}:{}:{tag}:{}:1", d.bytes, comm + 1);
                    }
                }
            }
            MpiOp::Sendrecv {
                dst,
                send_tag,
                send_bytes,
                src,
                recv_tag,
                recv_bytes,
                comm,
            } => {
                let c = comm + 1;
                let _ = writeln!(s, "3:{t}:0:{src}:{recv_bytes}:{recv_tag}:{c}:1");
                let _ = writeln!(s, "2:{t}:0:{dst}:{send_bytes}:{send_tag}:{c}:0");
                let _ = writeln!(s, "3:{t}:0:{src}:{recv_bytes}:{recv_tag}:{c}:2");
            }
            MpiOp::Wait { ref done, .. } => {
                for d in done.iter().filter(|d| !d.recv) {
                    if let Some(n) = requests.isend_number.get(&d.req) {
                        let _ = writeln!(s, "20:{t}:0:{ISEND_DONE_EVENT}:{n}");
                    }
                }
                for d in done.iter().filter(|d| d.recv) {
                    let (Some(src), Some(tag)) = (d.peer, d.tag) else {
                        continue;
                    };
                    let comm = requests.irecv_comm.get(&d.req).copied().unwrap_or(0);
                    let _ = writeln!(s, "3:{t}:0:{src}:{}:{tag}:{}:2", d.bytes, comm + 1);
                }
            }
            MpiOp::Collective(ref call) => self.write_collective(s, t, call),
            MpiOp::Probe | MpiOp::CommNew { .. } => {}
        }
    }

    /// A collective call's Dimemas record (10: global operation), after
    /// its per-peer byte counts (all-to-all-v) and root as user events:
    /// the call's operation, communicator and root, and the bytes it
    /// sends and receives in all ([`CollectiveCall::totals`]).
    fn write_collective(&self, s: &mut String, t: usize, call: &CollectiveCall) {
        let CollectiveCall {
            op,
            comm,
            root,
            ref per_peer,
            ..
        } = *call;
        let me = t as u32;
        let members = self.comms.get(comm as usize).map_or(0, |c| c.members.len());
        if op.per_peer() {
            for (kind, pick) in [(SENT_EVENT, 0), (RECEIVED_EVENT, 1)] {
                for p in per_peer {
                    let v = if pick == 0 { p.0 } else { p.1 };
                    let _ = writeln!(s, "20:{t}:0:{kind}:{v}");
                }
            }
        }
        if let (true, Some(r)) = (op.rooted(), root) {
            let _ = writeln!(s, "20:{t}:0:{ROOT_EVENT}:{r}");
        }
        let (total_sent, total_received) = call.totals(me, members);
        let root_field = match (op, root) {
            (Collective::Reduce, Some(r)) => r,
            (_, r) => u32::from(r == Some(me)),
        };
        let _ = writeln!(
            s,
            "10:{t}:0:{}:{}:{root_field}:0:{total_sent}:{total_received}",
            global_op(op),
            comm + 1
        );
    }
}
