//! Why a run ends, and why a client is faulted: the reasons the report and
//! the log give, as types.

use std::fmt;

/// Why the slice loop stops (the report's `end_reason` and `ok`).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum End {
    /// Not every node attached within `attach_timeout`.
    AttachTimeout {
        secs: f64,
        nodes: usize,
        /// Node ids still free, ascending.
        missing: Vec<usize>,
    },
    /// A signal or the caller's reason (`serve`'s `interrupt`), while
    /// nodes attached or while slices ran.
    Interrupted { why: String, attaching: bool },
    /// The event queue closed while nodes attached.
    StoppedAttaching,
    /// The configuration's network could not be built.
    Network(String),
    /// `--slices` slices ran.
    SliceLimit(u64),
    /// Every node finished its workload and no frame is in flight.
    AllFinished,
    /// The next slice would carry the node clock past 2^64 cycles.
    ClockOverflow { node_cycles: u64, from: u64 },
    /// No frame in flight and every node that has not finished waits for
    /// one: what the first few wait for, and how many more.
    Deadlock { waiting: Vec<String>, more: usize },
    /// No live client is left.
    EveryClientLeft,
    /// The event queue closed while slices ran.
    ServerStopped,
    /// A client's fault under `FaultPolicy::Stop`.
    Fault { client: String, cause: String },
    /// A control request stopped the measured phase.
    MeasureStopped,
    /// A control request shut the run down, with its reason.
    Shutdown(String),
    /// Not an end: the run goes on (a `GetStats` snapshot).
    Running,
}

impl End {
    /// Whether the run ended as asked (before counting faults).
    pub(super) fn ok(&self) -> bool {
        matches!(
            self,
            End::SliceLimit(_)
                | End::AllFinished
                | End::EveryClientLeft
                | End::MeasureStopped
                | End::Shutdown(_)
                | End::Running
        )
    }
}

impl fmt::Display for End {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            End::AttachTimeout {
                secs,
                nodes,
                missing,
            } => {
                let ids: Vec<String> = missing.iter().map(usize::to_string).collect();
                write!(
                    f,
                    "attach timeout after {secs:.0} s: {} of {nodes} nodes attached; missing node ids {}",
                    nodes - missing.len(),
                    ids.join(", ")
                )
            }
            End::Interrupted {
                why,
                attaching: true,
            } => write!(f, "{why} while waiting for nodes to attach"),
            End::Interrupted { why, .. } => f.write_str(why),
            End::StoppedAttaching => {
                f.write_str("the server stopped while waiting for nodes to attach")
            }
            End::Network(e) => write!(f, "cannot build the network: {e}"),
            End::SliceLimit(n) => write!(f, "ran the requested {n} slices"),
            End::AllFinished => f.write_str("every node finished its workload"),
            End::ClockOverflow { node_cycles, from } => write!(
                f,
                "the next slice ({node_cycles} node cycles from node cycle {from}) would pass the clocks' 2^64 cycles"
            ),
            End::Deadlock { waiting, more } => {
                write!(
                    f,
                    "deadlock: no frame in flight and every node that has not finished waits for one: {}",
                    waiting.join("; ")
                )?;
                if *more > 0 {
                    write!(f, "; and {more} more (per_node waiting_for)")?;
                }
                Ok(())
            }
            End::EveryClientLeft => f.write_str("every client has left"),
            End::ServerStopped => f.write_str("the server stopped"),
            End::Fault { client, cause } => write!(f, "{client}: {cause}"),
            End::MeasureStopped => f.write_str("the measured phase was stopped"),
            End::Shutdown(why) => write!(f, "shutdown requested: {why}"),
            End::Running => f.write_str("running"),
        }
    }
}

/// A message a live client must not send (a fault).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum Malformed {
    #[error("a second Attach")]
    SecondAttach,
    #[error("a frame after SliceDone({0})")]
    FrameAfterDone(u64),
    #[error("a frame from node {node} which this client does not own (it owns {owns:?})")]
    ForeignFrame { node: u32, owns: Vec<u32> },
    #[error("a frame stamped at node cycle {stamp} outside slice {slice} [{start}, {end})")]
    OutsideSlice {
        stamp: u64,
        slice: u64,
        start: u64,
        end: u64,
    },
    #[error("SliceDone({got}) while slice {slice} runs{}", if *.again { " (already done)" } else { "" })]
    WrongSliceDone { got: u64, slice: u64, again: bool },
    #[error("{what} for node {node} it does not own")]
    ForeignReport { what: &'static str, node: u32 },
}

/// Why a client is faulted (the report's `faults[].reason`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(super) enum Cause {
    /// Its stream held `OUTBOX` unread messages when a Continue was due.
    #[error("does not read its stream: {0} messages unread")]
    Unread(usize),
    /// No SliceDone within `node_timeout`.
    #[error("stalled: no SliceDone({slice}) within {secs:.1} s")]
    Stalled { slice: u64, secs: f64 },
    /// Its stream closed without Detach, or broke.
    #[error("disconnected without Detach")]
    Disconnected,
    #[error("disconnected: {0}")]
    Broken(String),
    #[error("malformed message: {why} (slice {slice})")]
    Malformed { why: Malformed, slice: u64 },
    /// It broke the protocol on a fast path (crate `fsin-sync`'s words).
    #[error("{0}")]
    FastPath(String),
}
