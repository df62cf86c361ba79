//! What `fake-node` is asked to run: its arguments ([`Args`]), the
//! workloads, and their checks.

use std::path::PathBuf;

use serde::Serialize;

use crate::frame;

/// Which application the nodes run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// Nothing: the cost of synchronisation alone.
    Idle,
    /// Nodes 2i and 2i+1 exchange `--messages` ping/pong rounds, each side
    /// replying `--think` node cycles after a receipt.
    Pingpong,
    /// Every node sends one message to every other, one every `--think`
    /// node cycles, to me+1, me+2, ... in turn.
    All2all,
    /// Every node sends `--messages` messages to uniformly random other
    /// nodes, exponential gaps of mean `--think` node cycles apart.
    Uniform,
    /// A causal replay of an FSIN `.trc` trace (`--trace FILE`; the
    /// crate's doc).
    Trace,
}

/// Unit of the amounts of a trace's CPU events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum NodeCpuUnits {
    /// Node cycles.
    Cycles,
    /// Nanoseconds of the node clock.
    Ns,
    /// Microseconds of the node clock.
    Us,
    /// Milliseconds of the node clock.
    Ms,
}

impl NodeCpuUnits {
    /// Node cycles per unit at a node clock of `clock_hz`.
    pub(crate) fn cycles_per_unit(self, clock_hz: u64) -> f64 {
        let hz = clock_hz as f64;
        match self {
            NodeCpuUnits::Cycles => 1.0,
            NodeCpuUnits::Ns => hz * 1e-9,
            NodeCpuUnits::Us => hz * 1e-6,
            NodeCpuUnits::Ms => hz * 1e-3,
        }
    }
}

/// A fault to inject, to test how the server copes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FaultKind {
    /// Exit abruptly (no Detach).
    Die,
    /// Stop answering (never finish the slice).
    Stall,
    /// Send a message that breaks the protocol (a frame for a node this
    /// client does not own).
    Garbage,
    /// Lose the datagrams of one round (its SliceDone, then the Continue
    /// answering it) and recover by repeating SliceDone: the run must not
    /// notice.
    LoseDatagrams,
}

/// Most nodes one client process may stand for (a bigger Attach would
/// pass gRPC's 4 MiB message limit anyway).
pub const MAX_NODES_PER_CLIENT: u32 = 65_536;

/// A command-line value of fake-node that is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgError {
    /// A `--bytes` that is not a number from `min` to `max` bytes.
    #[error("expected a frame size in bytes from {min} (headers) to {max}")]
    FrameBytes {
        /// The smallest frame: the headers and the message's header.
        min: usize,
        /// The largest: a jumbo frame.
        max: usize,
    },
    /// A `--node` that is neither `N` nor `A-B`.
    #[error("`{0}` is not a node id or a range A-B")]
    NotANodeRange(String),
    /// A `--node` range `A-B` with B below A.
    #[error("empty node range `{0}`")]
    EmptyRange(String),
    /// A `--node` range of more than [`MAX_NODES_PER_CLIENT`] nodes.
    #[error(
        "node range `{range}` has {nodes} nodes; one process runs at most {MAX_NODES_PER_CLIENT}"
    )]
    TooManyNodes {
        /// The range as given.
        range: String,
        /// Its node count.
        nodes: u64,
    },
}

/// Parses a `--bytes` frame size: 75 (Ethernet, IPv4 and UDP headers and
/// the message's header and checksum) to 9018 (a jumbo frame).
///
/// # Errors
/// [`ArgError::FrameBytes`]: not a number, or outside that range.
pub fn frame_bytes(text: &str) -> Result<usize, ArgError> {
    let min = frame::HEADERS + frame::MIN_PAYLOAD;
    let max = fsin_frames::MAX_FRAME_BYTES;
    match text.parse::<usize>() {
        Ok(b) if (min..=max).contains(&b) => Ok(b),
        _ => Err(ArgError::FrameBytes { min, max }),
    }
}

/// Node ids of one client: `N` or `A-B` (inclusive), at most
/// [`MAX_NODES_PER_CLIENT`] of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeRange {
    /// The first node id.
    pub first: u32,
    /// The last node id (inclusive).
    pub last: u32,
}

impl std::str::FromStr for NodeRange {
    type Err = ArgError;
    fn from_str(s: &str) -> Result<Self, ArgError> {
        let num = |t: &str| {
            t.trim()
                .parse::<u32>()
                .map_err(|_| ArgError::NotANodeRange(s.to_string()))
        };
        let (first, last) = match s.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => (num(s)?, num(s)?),
        };
        if last < first {
            return Err(ArgError::EmptyRange(s.to_string()));
        }
        if last - first >= MAX_NODES_PER_CLIENT {
            return Err(ArgError::TooManyNodes {
                range: s.to_string(),
                nodes: u64::from(last - first) + 1,
            });
        }
        Ok(NodeRange { first, last })
    }
}

/// Command-line arguments of `fake-node` (also `fsin fake-node`).
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// URL of the fsin server
    #[arg(long, default_value = "http://127.0.0.1:50051")]
    pub server: String,
    /// Node id, or a range A-B of nodes that this one client runs
    #[arg(long, default_value = "0")]
    pub node: NodeRange,
    /// Application the nodes run
    #[arg(long, value_enum, default_value = "idle")]
    pub workload: Workload,
    /// Frame size in bytes, Ethernet + IPv4 + UDP headers included: 75
    /// (headers and the message's own) to 9018
    #[arg(long, default_value_t = 128, value_parser = frame_bytes)]
    pub bytes: usize,
    /// Ping-pong rounds, or messages per node for `uniform`
    #[arg(long, default_value_t = 10)]
    pub messages: u64,
    /// Node cycles between a receipt and the reply (pingpong), between sends
    /// (all2all), or mean gap between sends (uniform)
    #[arg(long, default_value_t = 1000)]
    pub think: u64,
    /// Seed of the uniform workload's random destinations and gaps
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Trace to replay (`--workload trace`): FSIN .trc, Dimemas or alog
    /// (docs/contracts.md, "Trace format"); Dimemas bursts are taken as
    /// node cycles, whatever `--cpu-units`
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Unit of the trace's CPU (`c`) events
    #[arg(long, value_enum, default_value = "cycles")]
    pub cpu_units: NodeCpuUnits,
    /// Print the summary as one JSON object
    #[arg(long)]
    pub json: bool,
    /// Send INSEE's CLEAR_STATS "magic" packet (start of the measured
    /// phase) from the client's first node at this node cycle
    #[arg(long, value_name = "CYCLE")]
    pub clear_stats_at: Option<u64>,
    /// Inject a fault (testing the server's fault handling)
    #[arg(long, value_enum)]
    pub fault: Option<FaultKind>,
    /// Slice at which the fault happens
    #[arg(long, default_value_t = 2)]
    pub fault_slice: u64,
}

impl Args {
    /// Arguments for node(s) `node` of `server` running `workload`, with
    /// the defaults of the command line.
    pub fn new(server: &str, node: NodeRange, workload: Workload) -> Args {
        Args {
            server: server.to_string(),
            node,
            workload,
            bytes: 128,
            messages: 10,
            think: 1000,
            seed: 1,
            trace: None,
            cpu_units: NodeCpuUnits::Cycles,
            json: false,
            clear_stats_at: None,
            fault: None,
            fault_slice: 2,
        }
    }
}
