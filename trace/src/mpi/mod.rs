//! MPI-level traces: what every rank of an MPI application did, call by
//! call, in guest time (the Simics paper's traces, "obtained
//! from actual parallel application executions").
//!
//! `fsin qemu --trace-level mpi` loads the PMPI library `mpi-trace/`
//! into the ranks; each rank's records reach the host as one stream
//! ([`records`], docs/contracts.md "MPI trace records"), and
//! [`MpiTrace::from_streams`] joins the ranks' streams into one trace:
//! per rank its calls (entered and left, nanoseconds of the rank's guest
//! time after its `MPI_Init` returned) and, between them, its CPU bursts;
//! the communicators, numbered once for the whole application.

pub mod algorithms;
pub mod codes;
pub mod collective;
pub mod costs;
pub mod expand;
pub mod lower;
pub mod read;
pub mod records;
pub mod write;

pub use collective::{Collective, CollectiveCall};
pub use records::{CallError, RankStream, RecordError};

/// The frames the traced run's guests sent into the network from the
/// first rank's `MPI_Init` exit to the last rank's `MPI_Finalize` entry,
/// as the trace's header records them (`; live frames N acks M;`), for a
/// replay to report beside its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LiveFrames {
    /// Frames sent, all kinds (MPI's data, TCP's acknowledgements and
    /// handshakes, ARP).
    pub frames: u64,
    /// Of them, TCP's pure acknowledgements (no payload, no SYN, FIN or
    /// RST).
    pub acks: u64,
}

impl LiveFrames {
    /// The words that open the header's part (`live frames`).
    const WORDS: &'static str = "live frames";

    /// The header's part: `live frames N acks M`.
    pub fn header(&self) -> String {
        format!("{} {} acks {}", Self::WORDS, self.frames, self.acks)
    }

    /// The figures in a header `name` that has the part; `None` without
    /// it, or with numbers that do not read (a header is not refused for
    /// it: the figures are for the report only).
    pub fn parse(name: &str) -> Option<LiveFrames> {
        let rest = &name[name.find(Self::WORDS)? + Self::WORDS.len()..];
        let mut w = rest.split([' ', ';']).filter(|w| !w.is_empty());
        let frames = w.next()?.parse().ok()?;
        (w.next()? == "acks").then_some(())?;
        let acks = w.next()?.parse().ok()?;
        Some(LiveFrames { frames, acks })
    }
}

/// Which completion call a [`MpiOp::Wait`] was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WaitKind {
    /// `MPI_Wait`: waits for one request.
    Wait,
    /// `MPI_Waitall`: waits for every request passed.
    Waitall,
    /// `MPI_Waitany`: waits for one of the requests passed.
    Waitany,
    /// `MPI_Waitsome`: waits for at least one of the requests passed, and
    /// completes all that are done.
    Waitsome,
    /// `MPI_Test`: completes one request if it is done, without waiting.
    Test,
    /// `MPI_Testall`: completes every request passed if all are done, else
    /// none.
    Testall,
    /// `MPI_Testany`: completes one of the requests passed if one is done.
    Testany,
}

impl WaitKind {
    /// Every completion call.
    pub const ALL: [WaitKind; 7] = [
        WaitKind::Wait,
        WaitKind::Waitall,
        WaitKind::Waitany,
        WaitKind::Waitsome,
        WaitKind::Test,
        WaitKind::Testall,
        WaitKind::Testany,
    ];

    /// The MPI function's name.
    pub fn mpi_name(self) -> &'static str {
        match self {
            WaitKind::Wait => "MPI_Wait",
            WaitKind::Waitall => "MPI_Waitall",
            WaitKind::Waitany => "MPI_Waitany",
            WaitKind::Waitsome => "MPI_Waitsome",
            WaitKind::Test => "MPI_Test",
            WaitKind::Testall => "MPI_Testall",
            WaitKind::Testany => "MPI_Testany",
        }
    }
}

/// A request that a completion call completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Done {
    /// The request's number (the rank's count of non-blocking calls, from
    /// 0), as its `Isend` or `Irecv` gave it.
    pub req: u32,
    /// A receive (else a send).
    pub recv: bool,
    /// The peer (world rank; the source a receive got), `None` if unknown.
    pub peer: Option<u32>,
    /// The tag (a receive's as received); `None` where it has none (a
    /// receive from `MPI_PROC_NULL` completes with `MPI_ANY_TAG`).
    pub tag: Option<u32>,
    /// Bytes sent, or received.
    pub bytes: u64,
}

/// What one MPI call did. Peers and roots are ranks of `MPI_COMM_WORLD`;
/// `comm` is a communicator of [`MpiTrace::comms`]; bytes are bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MpiOp {
    /// `MPI_Send` (`sync`: `MPI_Ssend`).
    Send {
        /// The destination, a world rank.
        dst: u32,
        /// The message's tag.
        tag: u32,
        /// The message's size, bytes.
        bytes: u64,
        /// The communicator, an index of [`MpiTrace::comms`].
        comm: u32,
        /// `MPI_Ssend` (else `MPI_Send`).
        sync: bool,
    },
    /// `MPI_Isend` (`sync`: `MPI_Issend`), starting request `req`.
    Isend {
        /// The destination, a world rank.
        dst: u32,
        /// The message's tag.
        tag: u32,
        /// The message's size, bytes.
        bytes: u64,
        /// The communicator, an index of [`MpiTrace::comms`].
        comm: u32,
        /// `MPI_Issend` (else `MPI_Isend`).
        sync: bool,
        /// The number of the request it started (see [`Done::req`]).
        req: u32,
    },
    /// `MPI_Recv`, as received.
    Recv {
        /// The source the message came from, a world rank.
        src: u32,
        /// The message's tag, as received.
        tag: u32,
        /// Bytes received.
        bytes: u64,
        /// The communicator, an index of [`MpiTrace::comms`].
        comm: u32,
    },
    /// `MPI_Irecv` as posted (`None`: any source or any tag; `bytes` is
    /// the buffer's room), starting request `req`.
    Irecv {
        /// The source as posted, a world rank (`None`: `MPI_ANY_SOURCE`,
        /// or `MPI_PROC_NULL`).
        src: Option<u32>,
        /// The tag as posted (`None`: `MPI_ANY_TAG`).
        tag: Option<u32>,
        /// The receive buffer's room, bytes: the most the message can be.
        bytes: u64,
        /// The communicator, an index of [`MpiTrace::comms`].
        comm: u32,
        /// The number of the request it started (see [`Done::req`]).
        req: u32,
    },
    /// `MPI_Sendrecv`: the send, and the receive as received.
    Sendrecv {
        /// The send's destination, a world rank.
        dst: u32,
        /// The send's tag.
        send_tag: u32,
        /// Bytes sent.
        send_bytes: u64,
        /// The source the received message came from, a world rank.
        src: u32,
        /// The received message's tag.
        recv_tag: u32,
        /// Bytes received.
        recv_bytes: u64,
        /// The communicator of both, an index of [`MpiTrace::comms`].
        comm: u32,
    },
    /// A completion call and the requests it completed.
    Wait {
        /// Which completion call it was.
        kind: WaitKind,
        /// Requests passed to the call, a count as the library records it
        /// (Waitany, Testany: 1; Waitsome: those completed; a Testall that
        /// completed none: 0).
        passed: u32,
        /// The requests it completed, in the order the library recorded
        /// them.
        done: Vec<Done>,
    },
    /// `MPI_Probe` or `MPI_Iprobe`: time in MPI, nothing moved.
    Probe,
    /// A collective call.
    Collective(CollectiveCall),
    /// `MPI_Comm_dup` (`split` false) or `MPI_Comm_split` of `parent`,
    /// making `comm` (`None`: this rank got `MPI_COMM_NULL`).
    CommNew {
        /// The communicator duplicated or split, an index of
        /// [`MpiTrace::comms`].
        parent: u32,
        /// The communicator made, an index of [`MpiTrace::comms`] (`None`:
        /// this rank got `MPI_COMM_NULL`).
        comm: Option<u32>,
        /// `MPI_Comm_split` (else `MPI_Comm_dup`).
        split: bool,
    },
}

/// One call: when the rank entered and left it (nanoseconds of its guest
/// time after its `MPI_Init` returned), and what it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// When the rank entered the call, ns after its `MPI_Init` returned.
    pub enter_ns: u64,
    /// When it left the call, ns after its `MPI_Init` returned.
    pub exit_ns: u64,
    /// The call.
    pub op: MpiOp,
}

/// One rank's part of a trace.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rank {
    /// The host the rank ran on (`node3`).
    pub host: String,
    /// Nanoseconds from its `MPI_Init` returning to its `MPI_Finalize`
    /// being entered: the live run's time of the rank.
    pub live_ns: u64,
    /// Nanoseconds its `MPI_Init` took.
    pub init_ns: u64,
    /// The rank's clock when its `MPI_Init` returned (`CLOCK_MONOTONIC`,
    /// ns): guests of one run share a clock to within their boot's spread.
    pub init_exit_ns: u64,
    /// How long after the world's first rank this one left `MPI_Init`,
    /// ns on the run's common (node) clock: the live ranks' start skew,
    /// which a replay starts each rank with. 0 for the first rank, and
    /// for every rank where no common clock is known.
    pub start_ns: u64,
    /// Its calls, in order.
    pub calls: Vec<Call>,
    /// Per call (by index in `calls`), the guest kernel's time during the
    /// CPU burst before it (from the previous call's exit, or its
    /// `MPI_Init`'s, to the call's entry), ns, in the live run: the
    /// interrupts (the frames that came, those the rank sent), page
    /// faults and the scheduler that the burst's length holds. Empty
    /// where not counted (no common clock, no count of the QEMU plugin).
    pub burst_kernel_ns: Vec<u64>,
    /// Per call (by index in `calls`), the frames of the rank's node
    /// around the CPU burst before it, in the live run
    /// ([`BurstFrames`]). Empty where not known (no common clock).
    pub burst_frames: Vec<BurstFrames>,
    /// The rank ran out of room for records (64 MiB) and stopped
    /// recording; the trace of it ends early.
    pub truncated: bool,
}

impl Rank {
    /// Per call of `calls`, the CPU burst before it, ns after `MPI_Init`
    /// returned: from the latest exit of the calls before it (0, the
    /// return of `MPI_Init`, for the first) to its entry; `None` where it
    /// was entered no later than that. The trace writes these bursts
    /// ([`MpiTrace::to_dimemas`]) and gives them their kernel time
    /// ([`Rank::burst_kernel_ns`]).
    pub fn bursts(&self) -> impl Iterator<Item = Option<(u64, u64)>> + '_ {
        let mut last = 0u64;
        self.calls.iter().map(move |c| {
            let burst = (c.enter_ns > last).then_some((last, c.enter_ns));
            last = last.max(c.exit_ns);
            burst
        })
    }
}

/// The frames of a rank's node around one of its CPU bursts in the live
/// run (every frame of the guest, whatever process it was for): what
/// the guest's kernel had to do during the burst, whose length holds it
/// ([`Rank::burst_kernel_ns`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BurstFrames {
    /// Frames handed to the node during the burst.
    pub received: u32,
    /// Their bytes (Ethernet frames, headers included).
    pub received_bytes: u64,
    /// Frames the node sent into the network during the burst.
    pub sent: u32,
    /// Frames the node sent during the call that the burst follows
    /// (whose completions its kernel may take during the burst); 0 for
    /// the first burst.
    pub sent_in_call: u32,
}

/// A communicator: its members as world ranks, in its own rank order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Communicator {
    /// World rank of each member, indexed by its rank in the
    /// communicator.
    pub members: Vec<u32>,
}

/// An MPI-level trace: every rank's calls, and the communicators they
/// name (0 is `MPI_COMM_WORLD`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MpiTrace {
    /// The ranks, indexed by world rank.
    pub ranks: Vec<Rank>,
    /// The communicators, indexed by the id the calls name them by (0:
    /// `MPI_COMM_WORLD`).
    pub comms: Vec<Communicator>,
}

/// Ranks' streams that do not make one trace.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JoinError {
    /// No stream at all.
    #[error("no rank sent its MPI trace records")]
    Empty,
    /// A rank's stream gives another world size than the first stream.
    #[error("rank {rank} says the world has {size} ranks, rank {first} said {first_size}")]
    Sizes {
        /// The rank whose stream disagrees, a world rank.
        rank: u32,
        /// The world size that stream gives, ranks.
        size: u32,
        /// The rank of the first stream, a world rank.
        first: u32,
        /// The world size the first stream gives, ranks.
        first_size: u32,
    },
    /// Two streams of the same rank (its world rank).
    #[error("rank {0} sent its records twice")]
    Twice(u32),
    /// Ranks with no stream: their world ranks, comma-separated, and the
    /// world's size, ranks.
    #[error("ranks {0} of the {1} sent no records (the application did not end with MPI_Finalize there?)")]
    Missing(String, u32),
    /// A rank's stream the trace cannot take: its rank beyond the world, a
    /// communicator member beyond it, or a record that makes no call
    /// ([`CallError`]).
    #[error("rank {rank}: {what}")]
    Bad {
        /// The stream's rank, a world rank.
        rank: u32,
        /// What is wrong.
        what: String,
    },
}

impl MpiTrace {
    /// The trace of the ranks whose streams are `streams` (one per rank,
    /// any order).
    ///
    /// # Errors
    /// [`JoinError`]: no stream, ranks that disagree on the world's size,
    /// a rank twice or missing, a record that names a communicator the
    /// rank never defined or a member beyond the world.
    pub fn from_streams(streams: Vec<RankStream>) -> Result<MpiTrace, JoinError> {
        let first = streams.first().ok_or(JoinError::Empty)?;
        let (first_rank, size) = (first.rank, first.size);
        let mut by_rank: Vec<Option<RankStream>> = vec![None; size as usize];
        for s in streams {
            if s.size != size {
                return Err(JoinError::Sizes {
                    rank: s.rank,
                    size: s.size,
                    first: first_rank,
                    first_size: size,
                });
            }
            let r = s.rank;
            let slot = by_rank.get_mut(r as usize).ok_or_else(|| JoinError::Bad {
                rank: r,
                what: format!("rank beyond the world's {size}"),
            })?;
            if slot.replace(s).is_some() {
                return Err(JoinError::Twice(r));
            }
        }
        let missing: Vec<String> = by_rank
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_none())
            .map(|(r, _)| r.to_string())
            .collect();
        if !missing.is_empty() {
            return Err(JoinError::Missing(missing.join(", "), size));
        }
        // Communicators: a rank numbers its own in the order it made them;
        // the trace numbers each distinct one once. One is told from
        // another by its members and by how many communicators with those
        // members the rank made before it (all members make a
        // communicator in the same call, in the same order).
        let mut comms: Vec<Communicator> = Vec::new();
        let mut global: std::collections::HashMap<(Vec<u32>, u32), u32> = Default::default();
        let mut ranks = Vec::with_capacity(size as usize);
        for s in by_rank.into_iter().flatten() {
            let rank = s.rank;
            let bad = |what: String| JoinError::Bad { rank, what };
            let mut seen: std::collections::HashMap<&[u32], u32> = Default::default();
            let mut local = Vec::with_capacity(s.comms.len());
            for (id, members) in &s.comms {
                if let Some(m) = members.iter().find(|&&m| m >= size) {
                    return Err(bad(format!("communicator {id} names rank {m}")));
                }
                let nth = seen.entry(members.as_slice()).or_default();
                let key = (members.clone(), *nth);
                *nth += 1;
                let g = *global.entry(key).or_insert_with(|| {
                    comms.push(Communicator {
                        members: members.clone(),
                    });
                    comms.len() as u32 - 1
                });
                local.push((*id, g));
            }
            let calls = s.calls(&local).map_err(|e| bad(e.to_string()))?;
            ranks.push(Rank {
                host: s.host.clone(),
                live_ns: s.finalize_enter_ns.saturating_sub(s.init_exit_ns),
                init_ns: s.init_exit_ns.saturating_sub(s.init_enter_ns),
                init_exit_ns: s.init_exit_ns,
                start_ns: 0,
                calls,
                burst_kernel_ns: Vec::new(),
                burst_frames: Vec::new(),
                truncated: s.truncated,
            });
        }
        Ok(MpiTrace { ranks, comms })
    }

    /// Calls of every rank by MPI function name (`MPI_Send`, ...), in
    /// name order; completion calls count once each whatever they
    /// completed.
    pub fn call_counts(&self) -> std::collections::BTreeMap<&'static str, u64> {
        let mut m = std::collections::BTreeMap::new();
        for r in &self.ranks {
            for c in &r.calls {
                *m.entry(c.op.mpi_name()).or_default() += 1;
            }
        }
        m
    }
}

impl MpiOp {
    /// An `MPI_Wait` that completed `done`, its one request.
    pub fn wait_of(done: Done) -> MpiOp {
        MpiOp::Wait {
            kind: WaitKind::Wait,
            passed: 1,
            done: vec![done],
        }
    }

    /// The MPI function's name (`MPI_Isend`; `MPI_Probe` for both probes,
    /// `MPI_Comm_dup`/`MPI_Comm_split`).
    pub fn mpi_name(&self) -> &'static str {
        match self {
            MpiOp::Send { sync: false, .. } => "MPI_Send",
            MpiOp::Send { sync: true, .. } => "MPI_Ssend",
            MpiOp::Isend { sync: false, .. } => "MPI_Isend",
            MpiOp::Isend { sync: true, .. } => "MPI_Issend",
            MpiOp::Recv { .. } => "MPI_Recv",
            MpiOp::Irecv { .. } => "MPI_Irecv",
            MpiOp::Sendrecv { .. } => "MPI_Sendrecv",
            MpiOp::Wait { kind, .. } => kind.mpi_name(),
            MpiOp::Probe => "MPI_Probe",
            MpiOp::Collective(call) => call.op.mpi_name(),
            MpiOp::CommNew { split: false, .. } => "MPI_Comm_dup",
            MpiOp::CommNew { split: true, .. } => "MPI_Comm_split",
        }
    }
}

#[cfg(test)]
mod tests;
