//! The stream of one rank's records, as `mpi-trace/fsin-mpitrace.c`
//! writes it (docs/contracts.md, "MPI trace records"); all integers
//! little-endian:
//!
//! - header, 72 bytes: `FSINMPI1`, u32 rank, u32 world size, u32
//!   communicator count `C`, u32 record count `R`, u32 flags (bit 0: the
//!   rank stopped recording, out of room), u32 pid, u64 ns `MPI_Init`
//!   entered, u64 ns it returned, u64 ns `MPI_Finalize` entered, 16 bytes
//!   host name (NUL-padded);
//! - `C` communicators: u32 id (the rank's own numbering, 0 =
//!   `MPI_COMM_WORLD`), u32 size `n`, `n` u32 world ranks;
//! - `R` records of 56 bytes: u8 op, u8 flags, u16 0, u32 communicator
//!   id, u64 ns entered, u64 ns left, i32 peer, i32 tag, u64 bytes, u64
//!   bytes2, i32 root, u32 req.
//!
//! The stream comes from a guest: everything is checked, nothing is
//! trusted (sizes against the stream's length, ranks against the world,
//! communicators against the ones defined).

use super::codes::*;
use super::{Call, Collective, CollectiveCall, Done, MpiOp, WaitKind};

/// The header's length, bytes.
pub const HEADER_BYTES: usize = 72;
/// A record's length, bytes.
pub const RECORD_BYTES: usize = 56;
/// The largest world the reader takes (ranks index tables).
pub const MAX_RANKS: u32 = 1 << 20;

/// One record as the library wrote it (56 bytes; docs/contracts.md,
/// "MPI-level traces", gives each op's use of the fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LibraryRecord {
    /// The operation's code ([`super::codes`]: `OP_SEND` ... `OP_COMM_NEW`).
    pub op: u8,
    /// The op's flags (bit 0 of a Send: `MPI_Ssend`).
    pub flags: u8,
    /// The communicator's id in the rank's stream (0: `MPI_COMM_WORLD`).
    pub comm: u32,
    /// When the rank entered the call, ns of its `CLOCK_MONOTONIC`.
    pub enter_ns: u64,
    /// When it left the call, ns of its `CLOCK_MONOTONIC`.
    pub exit_ns: u64,
    /// The peer's rank in the world (-1: none, or any source).
    pub peer: i32,
    /// The message tag (Sendrecv: the send's).
    pub tag: i32,
    /// Bytes sent, or the op's first count (requests passed to a wait).
    pub bytes: u64,
    /// Bytes received, or the op's second count (requests completed).
    pub bytes2: u64,
    /// A collective's root, or a Sendrecv's source (-1: none).
    pub root: i32,
    /// The request's number in the rank's stream (a new communicator's id
    /// for op 64).
    pub req: u32,
}

/// One rank's stream, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankStream {
    /// The rank in `MPI_COMM_WORLD`.
    pub rank: u32,
    /// `MPI_COMM_WORLD`'s size.
    pub size: u32,
    /// The rank ran out of its 64 MiB of records and stopped recording.
    pub truncated: bool,
    /// The rank's process id in its guest.
    pub pid: u32,
    /// When the rank entered `MPI_Init`, ns of its `CLOCK_MONOTONIC`.
    pub init_enter_ns: u64,
    /// When its `MPI_Init` returned.
    pub init_exit_ns: u64,
    /// When it entered `MPI_Finalize`.
    pub finalize_enter_ns: u64,
    /// The guest's host name (`node3`).
    pub host: String,
    /// (the rank's id, members as world ranks).
    pub comms: Vec<(u32, Vec<u32>)>,
    /// The records, in the order the rank wrote them.
    pub records: Vec<LibraryRecord>,
}

/// A stream that is not one the library writes.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RecordError {
    /// The stream is shorter than the header: its length, bytes.
    #[error("{0} bytes: shorter than the 72-byte header")]
    Short(usize),
    /// The stream does not begin with `FSINMPI1`.
    #[error("the stream does not begin with FSINMPI1")]
    Magic,
    /// The header's rank is not below its world size, or the world is
    /// larger than [`MAX_RANKS`].
    #[error("rank {rank} of a world of {size}")]
    Rank {
        /// The rank the header gives.
        rank: u32,
        /// The world size the header gives, ranks.
        size: u32,
    },
    /// A communicator's entry runs past the stream's end.
    #[error("communicator {index} of {count} runs past the stream's end")]
    CommPastEnd {
        /// The communicator's place in the stream, from 0.
        index: u32,
        /// The communicators the header announces, a count.
        count: u32,
    },
    /// A communicator with more members than the world has ranks.
    #[error("communicator {id} has {size} members, more than the world's {world}")]
    CommSize {
        /// The communicator's id in the rank's stream.
        id: u32,
        /// Its members, a count.
        size: u32,
        /// The world's size, ranks.
        world: u32,
    },
    /// The records the header announces do not fill the rest of the
    /// stream exactly.
    #[error("{records} records of 56 bytes need {need} bytes after the communicators, the stream has {have}")]
    Records {
        /// The records the header announces, a count.
        records: u32,
        /// Bytes they take, 56 each.
        need: u64,
        /// Bytes the stream has after the communicators.
        have: u64,
    },
}

/// A record that does not make an MPI call (when a rank's records become calls): which
/// record (from 0), its op code, and what is wrong.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("record {record} (op {op}): {what}")]
pub struct CallError {
    /// The record's index in its stream, from 0.
    pub record: usize,
    /// Its op code.
    pub op: u8,
    /// What is wrong with it.
    pub what: String,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl LibraryRecord {
    /// The record's 56 bytes, as the library writes them (little-endian;
    /// bytes 2-3 zero).
    pub fn to_bytes(&self) -> [u8; RECORD_BYTES] {
        let mut b = [0u8; RECORD_BYTES];
        b[0] = self.op;
        b[1] = self.flags;
        b[4..8].copy_from_slice(&self.comm.to_le_bytes());
        b[8..16].copy_from_slice(&self.enter_ns.to_le_bytes());
        b[16..24].copy_from_slice(&self.exit_ns.to_le_bytes());
        b[24..28].copy_from_slice(&self.peer.to_le_bytes());
        b[28..32].copy_from_slice(&self.tag.to_le_bytes());
        b[32..40].copy_from_slice(&self.bytes.to_le_bytes());
        b[40..48].copy_from_slice(&self.bytes2.to_le_bytes());
        b[48..52].copy_from_slice(&self.root.to_le_bytes());
        b[52..56].copy_from_slice(&self.req.to_le_bytes());
        b
    }
}

impl RankStream {
    /// The stream's bytes as the library writes them (docs/contracts.md,
    /// "MPI trace records"): the 72-byte header, the communicators, the
    /// records; [`RankStream::parse`] reads them back to `self` (a host
    /// name is cut to 16 bytes).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = b"FSINMPI1".to_vec();
        let flags = u32::from(self.truncated);
        for v in [
            self.rank,
            self.size,
            self.comms.len() as u32,
            self.records.len() as u32,
            flags,
            self.pid,
        ] {
            b.extend(v.to_le_bytes());
        }
        for v in [
            self.init_enter_ns,
            self.init_exit_ns,
            self.finalize_enter_ns,
        ] {
            b.extend(v.to_le_bytes());
        }
        let mut host = self.host.clone().into_bytes();
        host.resize(16, 0);
        b.extend(host);
        for (id, members) in &self.comms {
            b.extend(id.to_le_bytes());
            b.extend((members.len() as u32).to_le_bytes());
            for m in members {
                b.extend(m.to_le_bytes());
            }
        }
        for r in &self.records {
            b.extend(r.to_bytes());
        }
        b
    }

    /// Reads one rank's stream.
    ///
    /// # Errors
    /// [`RecordError`]: too short, wrong magic, a rank outside its world
    /// (or a world over [`MAX_RANKS`]), a communicator larger than the
    /// world or past the end, a record count that does not fill the rest
    /// exactly.
    pub fn parse(b: &[u8]) -> Result<RankStream, RecordError> {
        if b.len() < HEADER_BYTES {
            return Err(RecordError::Short(b.len()));
        }
        if &b[..8] != b"FSINMPI1" {
            return Err(RecordError::Magic);
        }
        let (rank, size) = (u32_at(b, 8), u32_at(b, 12));
        if rank >= size || size > MAX_RANKS {
            return Err(RecordError::Rank { rank, size });
        }
        let ncomms = u32_at(b, 16);
        let nrecords = u32_at(b, 20);
        let host: String = b[56..72]
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| if c.is_ascii_graphic() { c as char } else { '?' })
            .collect();
        let mut at = HEADER_BYTES;
        let mut comms = Vec::new();
        for index in 0..ncomms {
            if b.len() < at + 8 {
                return Err(RecordError::CommPastEnd {
                    index,
                    count: ncomms,
                });
            }
            let (id, n) = (u32_at(b, at), u32_at(b, at + 4));
            if n > size {
                return Err(RecordError::CommSize {
                    id,
                    size: n,
                    world: size,
                });
            }
            at += 8;
            let end = at + 4 * n as usize;
            if b.len() < end {
                return Err(RecordError::CommPastEnd {
                    index,
                    count: ncomms,
                });
            }
            comms.push((id, (0..n as usize).map(|k| u32_at(b, at + 4 * k)).collect()));
            at = end;
        }
        let need = u64::from(nrecords) * RECORD_BYTES as u64;
        let have = (b.len() - at) as u64;
        if need != have {
            return Err(RecordError::Records {
                records: nrecords,
                need,
                have,
            });
        }
        let records = b[at..]
            .chunks_exact(RECORD_BYTES)
            .map(|r| LibraryRecord {
                op: r[0],
                flags: r[1],
                comm: u32_at(r, 4),
                enter_ns: u64_at(r, 8),
                exit_ns: u64_at(r, 16),
                peer: u32_at(r, 24) as i32,
                tag: u32_at(r, 28) as i32,
                bytes: u64_at(r, 32),
                bytes2: u64_at(r, 40),
                root: u32_at(r, 48) as i32,
                req: u32_at(r, 52),
            })
            .collect();
        Ok(RankStream {
            rank,
            size,
            truncated: u32_at(b, 24) & 1 == 1,
            pid: u32_at(b, 28),
            init_enter_ns: u64_at(b, 32),
            init_exit_ns: u64_at(b, 40),
            finalize_enter_ns: u64_at(b, 48),
            host,
            comms,
            records,
        })
    }

    /// The rank's calls, communicators renumbered by `local` ((the rank's
    /// id, the trace's id) pairs), times from its `MPI_Init`'s return.
    ///
    /// # Errors
    /// [`CallError`], naming the record (from 0) and what is wrong: an
    /// unknown op, a communicator the rank did not define, a peer outside
    /// the world, a completion or per-peer record with no call before it.
    pub(crate) fn calls(&self, local: &[(u32, u32)]) -> Result<Vec<Call>, CallError> {
        let mut calls: Vec<Call> = Vec::new();
        for (k, r) in self.records.iter().enumerate() {
            let rd = Reading {
                k,
                r,
                local,
                size: self.size,
            };
            let Some(op) = rd.op(calls.last_mut().map(|c| &mut c.op))? else {
                continue;
            };
            let base = self.init_exit_ns;
            calls.push(Call {
                enter_ns: r.enter_ns.saturating_sub(base),
                exit_ns: r
                    .exit_ns
                    .saturating_sub(base)
                    .max(r.enter_ns.saturating_sub(base)),
                op,
            });
        }
        Ok(calls)
    }
}

/// One record being read into a call: its index in the stream, the
/// rank's communicators ((its id, the trace's id) pairs) and the world's
/// size.
struct Reading<'a> {
    k: usize,
    r: &'a LibraryRecord,
    local: &'a [(u32, u32)],
    size: u32,
}

impl Reading<'_> {
    /// The error of this record: `what` is wrong with it.
    fn at(&self, what: String) -> CallError {
        CallError {
            record: self.k,
            op: self.r.op,
            what,
        }
    }

    /// The trace's id of the rank's communicator `id`.
    fn comm(&self, id: u32) -> Result<u32, CallError> {
        (self.local.iter())
            .find(|(l, _)| *l == id)
            .map(|&(_, g)| g)
            .ok_or_else(|| self.at(format!("communicator {id} is not one the rank defined")))
    }

    /// `v` as a rank of the world (`what`: which field, for the error).
    fn rank(&self, v: i32, what: &str) -> Result<u32, CallError> {
        let size = self.size;
        u32::try_from(v)
            .ok()
            .filter(|&p| p < size)
            .ok_or_else(|| self.at(format!("{what} {v} is not a rank of the world's {size}")))
    }

    /// A message's tag `v` (MPI's tags are not negative; as a `u32`, at
    /// most 2^31 - 1, below the lowering's own tags).
    fn tag(&self, v: i32) -> Result<u32, CallError> {
        u32::try_from(v).map_err(|_| self.at(format!("tag {v} is negative")))
    }

    /// [`Self::rank`], or none for a negative `v` (any, or none).
    fn maybe_rank(&self, v: i32, what: &str) -> Result<Option<u32>, CallError> {
        if v < 0 {
            Ok(None)
        } else {
            self.rank(v, what).map(Some)
        }
    }

    /// The call this record makes, or none: a record that moved nothing,
    /// or one that completes `last` (the call before it: a completed
    /// request, a v-collective's counts per peer).
    fn op(&self, last: Option<&mut MpiOp>) -> Result<Option<MpiOp>, CallError> {
        let r = self.r;
        Ok(Some(match r.op {
            OP_SEND..=OP_RECV if r.peer < 0 => return Ok(None), // MPI_PROC_NULL: nothing moved
            OP_SENDRECV => return self.sendrecv(),
            OP_SEND | OP_ISEND | OP_RECV | OP_IRECV => self.point_to_point()?,
            OP_WAIT..=OP_WAITSOME => MpiOp::Wait {
                kind: match r.op {
                    OP_WAIT => WaitKind::Wait,
                    OP_WAITALL => WaitKind::Waitall,
                    OP_WAITANY => WaitKind::Waitany,
                    OP_TEST => WaitKind::Test,
                    OP_TESTALL => WaitKind::Testall,
                    OP_TESTANY => WaitKind::Testany,
                    _ => WaitKind::Waitsome,
                },
                passed: u32::try_from(r.bytes).unwrap_or(u32::MAX),
                done: Vec::new(),
            },
            OP_PROBE => MpiOp::Probe,
            OP_DONE => {
                let peer = self.maybe_rank(r.peer, "peer")?;
                let done = Done {
                    req: r.req,
                    recv: r.flags & FLAG_RECV != 0,
                    peer,
                    // A tag with its peer; none without (MPI_PROC_NULL).
                    tag: match peer {
                        Some(_) => Some(self.tag(r.tag)?),
                        None => u32::try_from(r.tag).ok(),
                    },
                    bytes: r.bytes,
                };
                match last {
                    Some(MpiOp::Wait { done: d, .. }) => d.push(done),
                    _ => {
                        return Err(
                            self.at("a completed request with no completion call before it".into())
                        )
                    }
                }
                return Ok(None);
            }
            OP_BARRIER..=OP_SCATTERV => MpiOp::Collective(CollectiveCall {
                op: Collective::ALL[usize::from(r.op - OP_BARRIER)],
                comm: self.comm(r.comm)?,
                root: self.maybe_rank(r.root, "root")?,
                sent: r.bytes,
                received: r.bytes2,
                per_peer: Vec::new(),
            }),
            OP_VEC => {
                match last {
                    Some(MpiOp::Collective(call)) if call.op.per_peer() => {
                        call.per_peer.push((r.bytes, r.bytes2))
                    }
                    _ => {
                        return Err(
                            self.at("per-peer counts with no v-collective before them".into())
                        )
                    }
                }
                return Ok(None);
            }
            OP_COMM_NEW => MpiOp::CommNew {
                parent: self.comm(r.comm)?,
                comm: if r.req == NO_COMM {
                    None
                } else {
                    Some(self.comm(r.req)?)
                },
                split: r.flags & FLAG_SYNC != 0,
            },
            other => return Err(self.at(format!("op {other} is none the library writes"))),
        }))
    }

    /// A Send, Isend, Recv or Irecv record's call.
    fn point_to_point(&self) -> Result<MpiOp, CallError> {
        let r = self.r;
        let sync = r.flags & FLAG_SYNC != 0;
        Ok(match r.op {
            OP_SEND => MpiOp::Send {
                dst: self.rank(r.peer, "destination")?,
                tag: self.tag(r.tag)?,
                bytes: r.bytes,
                comm: self.comm(r.comm)?,
                sync,
            },
            OP_ISEND => MpiOp::Isend {
                dst: self.rank(r.peer, "destination")?,
                tag: self.tag(r.tag)?,
                bytes: r.bytes,
                comm: self.comm(r.comm)?,
                sync,
                req: r.req,
            },
            OP_RECV => MpiOp::Recv {
                src: self.rank(r.peer, "source")?,
                tag: self.tag(r.tag)?,
                bytes: r.bytes,
                comm: self.comm(r.comm)?,
            },
            _ => MpiOp::Irecv {
                src: self.maybe_rank(r.peer, "source")?,
                tag: u32::try_from(r.tag).ok(),
                bytes: r.bytes,
                comm: self.comm(r.comm)?,
                req: r.req,
            },
        })
    }

    /// A Sendrecv record's call. With `MPI_PROC_NULL` on one side (a
    /// halo's boundary) it is its other side alone; with both, or one
    /// that failed, nothing moved.
    fn sendrecv(&self) -> Result<Option<MpiOp>, CallError> {
        let r = self.r;
        Ok(Some(match (r.peer < 0, r.root < 0) {
            (true, true) => return Ok(None),
            (false, true) => MpiOp::Send {
                dst: self.rank(r.peer, "destination")?,
                tag: self.tag(r.tag)?,
                bytes: r.bytes,
                comm: self.comm(r.comm)?,
                sync: false,
            },
            (true, false) => MpiOp::Recv {
                src: self.rank(r.root, "source")?,
                tag: self.tag(r.req as i32)?,
                bytes: r.bytes2,
                comm: self.comm(r.comm)?,
            },
            (false, false) => MpiOp::Sendrecv {
                dst: self.rank(r.peer, "destination")?,
                send_tag: self.tag(r.tag)?,
                send_bytes: r.bytes,
                src: self.rank(r.root, "source")?,
                recv_tag: self.tag(r.req as i32)?,
                recv_bytes: r.bytes2,
                comm: self.comm(r.comm)?,
            },
        }))
    }
}
