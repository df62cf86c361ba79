//! Reading a Dimemas trace at the MPI level: the records of
//! [`super::write`] with their MPI meaning kept (non-blocking sends and
//! receives, collectives, communicators), for a replay that expands
//! collectives and models the MPI layer ([`super::lower`]). INSEE's reading
//! ([`crate::dimemas`]) keeps only blocking point-to-point messages and
//! CPU bursts.

use super::algorithms::Algorithms;
use super::write::{
    BURST_KERNEL_EVENT, BURST_RECEIVED_EVENT, GLOBAL_OPS, ISEND_DONE_EVENT, RECEIVED_EVENT,
    ROOT_EVENT, SENT_EVENT, START_EVENT,
};
use super::{Collective, CollectiveCall, Done, LiveFrames, MpiOp};
use crate::dimemas::{task_count, Fields};
use crate::{TraceError, MAX_MESSAGE_BYTES};

/// One step of a rank in an MPI-level trace as read: a computation, or
/// an MPI call as the Dimemas records give it back ([`MpiOp`], the type
/// the library's records are decoded to and the writer writes).
///
/// The records keep less than the library recorded, so the calls come
/// back so: a `2` record is an `MPI_Send` (`sync` false: the file does not
/// tell) or, with its immediate bit, an `MPI_Isend` (its synchronous bit:
/// `MPI_Issend`); a `3` record an `MPI_Recv`, an `MPI_Irecv` (its source,
/// tag and size as the message came: never a wildcard) or the completion
/// of the earliest `MPI_Irecv` still open with the same source, tag and
/// communicator; an [`ISEND_DONE_EVENT`] the completion of that
/// `MPI_Isend`. A completion is an `MPI_Wait` of its one request (the
/// file tells neither which completion call it was nor which completions
/// were one call). Requests are numbered as the library numbers them (the
/// rank's count of non-blocking calls, from 0); communicators are the
/// file's ids (its `d:1:ID` lines: the library's index + 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MpiStep {
    /// Computation.
    Cpu {
        /// Its length, ns of guest time (a Dimemas CPU burst).
        ns: u64,
        /// The guest kernel's time inside it in the live run, ns (the
        /// trace's [`BURST_KERNEL_EVENT`] before it; 0 where it has none).
        kernel_ns: u64,
        /// The frames the rank's node received during it in the live run
        /// (the trace's [`BURST_RECEIVED_EVENT`]; 0 where it has none).
        frames_in: u64,
    },
    /// An MPI call.
    Call(MpiOp),
}

/// A rank's requests while its records are read: the next request's
/// number, its `MPI_Isend`s' requests in order, and the `MPI_Irecv`s not
/// yet completed (source, tag, communicator, request).
#[derive(Debug, Clone, Default)]
struct Requests {
    next: u32,
    isends: Vec<u32>,
    open: Vec<(u32, u32, u32, u32)>,
}

impl Requests {
    fn start(&mut self) -> u32 {
        let req = self.next;
        self.next = self.next.saturating_add(1);
        req
    }
}

/// The longest CPU burst, or rank's start, a trace may give, seconds.
const MAX_BURST_S: f64 = 1e6;

/// An MPI-level trace as read: per rank its events, and the
/// communicators by the file's numbers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MpiProgram {
    /// Where it comes from, for messages.
    pub name: String,
    /// Per world rank, its steps in the file's order.
    pub ranks: Vec<Vec<MpiStep>>,
    /// Line of each step (same shape as `ranks`).
    pub lines: Vec<Vec<u32>>,
    /// (the file's id, members as world ranks).
    pub comms: Vec<(u32, Vec<u32>)>,
    /// How the traced run chose its collectives' algorithms (the header's
    /// `coll_tuned` words).
    pub algorithms: Algorithms,
    /// The traced run opened every pair's connection inside `MPI_Init`
    /// (`fsin qemu --mpi-preconnect`; the header's [`PRECONNECTED`] part),
    /// so the trace holds no first contact.
    pub preconnected: bool,
    /// The frames the traced run sent while its ranks ran (the header's
    /// [`LiveFrames`] part), if it says.
    pub live: Option<LiveFrames>,
}

/// The part of an MPI trace's header name that says its run opened every
/// connection inside `MPI_Init` ([`MpiProgram::preconnected`]).
pub const PRECONNECTED: &str = "; preconnected;";

/// Whether a Dimemas `text` is an MPI trace of fsin-rs's (its header's
/// name says so), to be replayed at the MPI level.
pub fn is_mpi_trace(text: &str) -> bool {
    text.starts_with("#DIMEMAS:\"fsin-rs MPI trace")
}

impl MpiProgram {
    /// The members of communicator `comm` (the file's id).
    pub fn members(&self, comm: u32) -> Option<&[u32]> {
        self.comms
            .iter()
            .find(|(id, _)| *id == comm)
            .map(|(_, m)| m.as_slice())
    }
}

/// Reads Dimemas `text` at the MPI level; `file` names it in errors.
///
/// # Errors
/// [`TraceError::Syntax`] naming the line: a header without a task count
/// or with collective algorithms the replay does not expand,
/// a record with too few fields or a field that is not a number, a task
/// outside the header's count, a communicator defined badly or not at
/// all, an unknown operation, send or receive type, or collective.
pub fn parse(text: &str, file: &str) -> Result<MpiProgram, TraceError> {
    let mut lines = text.lines().enumerate();
    let header = lines.next().map_or("", |(_, l)| l);
    let tasks = task_count(header, text.len(), file)?;
    let name = header.split('"').nth(1).unwrap_or_default();
    let algorithms = Algorithms::parse(name).map_err(|e| TraceError::Syntax {
        file: file.to_string(),
        line: 1,
        what: format!("the header's collective algorithms cannot be replayed: {e}"),
    })?;
    let mut p = MpiProgram {
        name: file.to_string(),
        ranks: vec![Vec::new(); tasks as usize],
        lines: vec![Vec::new(); tasks as usize],
        comms: Vec::new(),
        algorithms,
        preconnected: name.contains(PRECONNECTED),
        live: LiveFrames::parse(name),
    };
    let mut pending = vec![Pending::default(); tasks as usize];
    let mut bursts = vec![BurstLive::default(); tasks as usize];
    let mut requests = vec![Requests::default(); tasks as usize];
    for (i, raw) in lines {
        let line = i + 1;
        let r = Fields {
            f: raw.trim_end().split(':').collect(),
            file,
            line,
            tasks,
        };
        match r.f[0] {
            "" | "s" => continue,
            "d" => {
                if r.f.get(1).map(|s| s.trim()) == Some("1") {
                    p.comms.push(r.communicator()?);
                }
                continue;
            }
            _ => {}
        }
        let op = r.num(0, "operation")?;
        let t = r.task_in(1, "task")? as usize;
        let event = match op {
            1 => r.mpi_burst(std::mem::take(&mut bursts[t]))?,
            2 | 3 => MpiStep::Call(r.point_to_point(op == 2, &mut requests[t])?),
            10 => MpiStep::Call(r.collective(std::mem::take(&mut pending[t]), &p.comms)?),
            20 => {
                if let Some(event) = r.user_event(&mut pending[t], &mut bursts[t], &requests[t])? {
                    p.ranks[t].push(event);
                    p.lines[t].push(line as u32);
                }
                continue;
            }
            0 | 101..=107 | 301..=307 | 401..=404 | 501 => continue,
            other => return Err(r.err(format!("operation {other} is none of Dimemas'"))),
        };
        p.ranks[t].push(event);
        p.lines[t].push(line as u32);
    }
    Ok(p)
}

/// What a rank's `20` records said of its next collective: the `v`
/// calls' bytes sent to and received from each member, and the root.
/// What a rank's `20` records said of its next CPU burst in the live
/// run: the guest kernel's time in it, ns, and the frames its node
/// received during it.
#[derive(Debug, Clone, Copy, Default)]
struct BurstLive {
    kernel_ns: u64,
    frames_in: u64,
}

#[derive(Debug, Clone, Default)]
struct Pending {
    sent: Vec<u64>,
    received: Vec<u64>,
    root: Option<u32>,
}

/// The MPI level's reading of a record's fields.
impl Fields<'_> {
    /// A `d:1` record: a communicator's id and members.
    fn communicator(&self) -> Result<(u32, Vec<u32>), TraceError> {
        let id = self.at_most(2, "communicator", u64::from(u32::MAX))? as u32;
        let size = self.at_most(3, "size", self.tasks)? as usize;
        let members = (0..size)
            .map(|k| self.task_in(4 + k, "member"))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((id, members))
    }

    /// A `1` record: a CPU burst, ns, with what the `20` records before
    /// it said of it (`live`).
    fn mpi_burst(&self, live: BurstLive) -> Result<MpiStep, TraceError> {
        let seconds = self.burst_seconds(MAX_BURST_S, "a number of seconds in [0, 1e6)")?;
        Ok(MpiStep::Cpu {
            ns: (seconds * 1e9).round() as u64,
            kernel_ns: live.kernel_ns,
            frames_in: live.frames_in,
        })
    }

    /// A `2` (`send`) or `3` record, as [`MpiStep`] says; `requests`
    /// are the rank's.
    fn point_to_point(&self, send: bool, requests: &mut Requests) -> Result<MpiOp, TraceError> {
        let peer = self.task_in(3, if send { "dst" } else { "src" })?;
        let bytes = self.at_most(4, "bytes", MAX_MESSAGE_BYTES)?;
        // MPI's tags are at most 2^31 - 1: the lowering's own tags lie above.
        let tag = self.at_most(5, "tag", i32::MAX as u64)? as u32;
        let comm = self.at_most(6, "communicator", u64::from(u32::MAX))? as u32;
        let kind = self.at_most(7, "type", 3)?;
        if send {
            if kind & 2 == 0 {
                return Ok(MpiOp::Send {
                    dst: peer,
                    tag,
                    bytes,
                    comm,
                    sync: false,
                });
            }
            let req = requests.start();
            requests.isends.push(req);
            return Ok(MpiOp::Isend {
                dst: peer,
                tag,
                bytes,
                comm,
                sync: kind & 1 == 1,
                req,
            });
        }
        match kind {
            0 => Ok(MpiOp::Recv {
                src: peer,
                tag,
                bytes,
                comm,
            }),
            1 => {
                let req = requests.start();
                requests.open.push((peer, tag, comm, req));
                Ok(MpiOp::Irecv {
                    src: Some(peer),
                    tag: Some(tag),
                    bytes,
                    comm,
                    req,
                })
            }
            2 => {
                let Some(k) =
                    (requests.open.iter()).position(|&(s, t, c, _)| (s, t, c) == (peer, tag, comm))
                else {
                    return Err(self.err(format!(
                        "a wait (type 2) for a receive from task {peer} with tag {tag} on communicator {comm} that no MPI_Irecv (type 1) before it posted"
                    )));
                };
                let (_, _, _, req) = requests.open.remove(k);
                Ok(MpiOp::wait_of(Done {
                    req,
                    recv: true,
                    peer: Some(peer),
                    tag: Some(tag),
                    bytes,
                }))
            }
            _ => Err(self.err(format!(
                "receive type {kind} is not 0 (recv), 1 (irecv) or 2 (wait)"
            ))),
        }
    }

    /// A `10` record, with what the rank's `20` records said of it, on
    /// one of `comms` (the communicators defined so far): its totals
    /// back to bytes per block ([`CollectiveCall::from_totals`]).
    fn collective(&self, pending: Pending, comms: &[(u32, Vec<u32>)]) -> Result<MpiOp, TraceError> {
        let number = self.at_most(3, "global operation", 31)?;
        let Some(&op) = GLOBAL_OPS.get(number as usize) else {
            return Err(self.err(format!(
                "global operation {number} is not one fsin-rs replays (0-{}: Barrier to Allreduce)",
                GLOBAL_OPS.len() - 1
            )));
        };
        let comm = self.at_most(4, "communicator", u64::from(u32::MAX))? as u32;
        let Some((_, members)) = comms.iter().find(|(id, _)| *id == comm) else {
            return Err(self.err(format!(
                "communicator {comm} is not defined before its collective (no d:1:{comm}: line above)"
            )));
        };
        let root_field = self.at_most(5, "root", u64::from(u32::MAX))? as u32;
        let sent = self.at_most(7, "bytes sent", MAX_MESSAGE_BYTES)?;
        let received = self.at_most(8, "bytes received", MAX_MESSAGE_BYTES)?;
        let root = match op {
            Collective::Reduce => Some(root_field),
            _ if op.rooted() => pending.root,
            _ => None,
        };
        if root.is_some_and(|r| u64::from(r) >= self.tasks) {
            return Err(self.err(format!(
                "the root is not below the header's {} tasks",
                self.tasks
            )));
        }
        let per_peer = pending.sent.into_iter().zip(pending.received).collect();
        Ok(MpiOp::Collective(CollectiveCall::from_totals(
            op,
            comm,
            root,
            members.len(),
            (sent, received),
            per_peer,
        )))
    }

    /// A `20` record: what it says of the rank's next collective goes to
    /// `pending`, of its next CPU burst to `burst`; the rank's start and
    /// an `MPI_Isend`'s completion (of the rank's `requests`) are steps of
    /// their own.
    fn user_event(
        &self,
        pending: &mut Pending,
        burst: &mut BurstLive,
        requests: &Requests,
    ) -> Result<Option<MpiStep>, TraceError> {
        let kind = self.num(3, "event type")?;
        let value = self.num(4, "event value")?;
        Ok(match kind {
            SENT_EVENT => {
                pending.sent.push(value.min(MAX_MESSAGE_BYTES));
                None
            }
            RECEIVED_EVENT => {
                pending.received.push(value.min(MAX_MESSAGE_BYTES));
                None
            }
            ROOT_EVENT => {
                pending.root = u32::try_from(value).ok();
                None
            }
            BURST_KERNEL_EVENT => {
                burst.kernel_ns = value;
                None
            }
            BURST_RECEIVED_EVENT => {
                burst.frames_in = value;
                None
            }
            // The rank's start after the world's first: time before its
            // next record, as a computation is; bounded as a CPU burst is.
            START_EVENT => {
                if value >= (MAX_BURST_S * 1e9) as u64 {
                    return Err(
                        self.err(format!("a rank's start of {value} ns is not under 1e6 s"))
                    );
                }
                Some(MpiStep::Cpu {
                    ns: value,
                    kernel_ns: 0,
                    frames_in: 0,
                })
            }
            ISEND_DONE_EVENT => {
                let Some(&req) = usize::try_from(value)
                    .ok()
                    .and_then(|n| requests.isends.get(n))
                else {
                    return Err(self.err(format!(
                        "the completion of MPI_Isend number {value} (from 0), of {} before it",
                        requests.isends.len()
                    )));
                };
                Some(MpiStep::Call(MpiOp::wait_of(Done {
                    req,
                    recv: false,
                    peer: None,
                    tag: None,
                    bytes: 0,
                })))
            }
            _ => None,
        })
    }
}
