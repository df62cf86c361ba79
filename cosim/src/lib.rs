//! Co-simulation server (Simics paper): node simulators attach over gRPC
//! (`fsin.v1`, crate `fsin-proto`), run in slices, and every Ethernet frame
//! they send crosses the simulated network.
//!
//! - [`coupler`]: the synchronous part, network engine plus traffic manager
//!   run one slice at a time (deterministic, unit-tested without sockets).
//! - [`server`]: the tonic service and the coordinator that owns the
//!   coupler, waits at the barrier, fans `Continue` out to every client at
//!   once, and handles faults, control requests and warm-up. Quiet rounds
//!   take the fast paths of crate `fsin-sync` (datagrams, shared memory).
//! - [`progress`]: what a run has done so far, for a progress line.
//! - [`report`]: what a run measured, as text and JSON.
//! - [`session`]: one run as one call: the server, the node simulators an
//!   adapter starts for it, and one typed report of both.
//! - [`sweep`]: the slice-ratio study (Simics paper, Table 1), table and plot.

#![warn(missing_docs)]

pub mod coupler;
pub mod progress;
pub mod report;
pub mod server;
pub mod session;
pub mod sweep;

use std::net::SocketAddrV4;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use fsin::config::Config;

/// What to do when a node fails (disconnects, stalls, or sends a malformed
/// message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultPolicy {
    /// End the run, flush statistics, exit 1.
    Stop,
    /// Go on without the node's client; frames to its nodes are dropped.
    Continue,
}

/// Everything `fsin serve` needs besides the listening socket.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Network and co-simulation keys (`fsin_cycle_relation`, `sync_mode`,
    /// `nic_latency`, `node_clock`, ...).
    pub config: Config,
    /// Nodes that must attach before the first slice (ids `0..nodes`).
    pub nodes: usize,
    /// Stop after this many slices (otherwise when every node finished).
    pub slices: Option<u64>,
    /// How long to wait for all nodes to attach.
    pub attach_timeout: Duration,
    /// How long a node may take to finish a slice before it is declared
    /// stalled (the first slice, where nodes start: at least
    /// `attach_timeout`).
    pub node_timeout: Duration,
    /// What a node's fault does to the run.
    pub on_fault: FaultPolicy,
    /// Start in warm-up: frames skip the network and slices are
    /// `warmup_factor` times longer, until the measured phase starts (control
    /// request or the guest's CLEAR_STATS "magic" packet).
    pub warmup: bool,
    /// How many times longer warm-up slices are.
    pub warmup_factor: u64,
    /// Capture every frame into this pcap file.
    pub pcap: Option<PathBuf>,
    /// Offer the datagram fast path (`fsin.v1.DatagramSync`) to clients.
    pub datagram_sync: bool,
    /// UDP port of the datagram fast path (0: a free one), on the address
    /// the gRPC service listens on.
    pub datagram_port: u16,
    /// Send the datagram Continue once to this multicast group instead of
    /// once per client.
    pub multicast: Option<SocketAddrV4>,
    /// With the datagram fast path, also offer the shared-memory slice
    /// barrier (`fsin.v1.ShmBarrier`) to clients on this host.
    pub shared_memory: bool,
    /// Shared secret that `Attach.token` and `ControlRequest.token` (Control
    /// RPC) must carry; `None` accepts anyone who reaches the port.
    pub token: Option<String>,
    /// In lockstep mode, skip in one round the slices in which nothing can
    /// happen (every client promised `SliceDone.idle_until` beyond them,
    /// no frame in flight or due).
    pub idle_skip: bool,
    /// Where the run publishes its progress (phase, nodes attached,
    /// slices, node time, frames delivered) for a progress line; clone
    /// the `Arc` before serving to read it.
    pub status: Arc<progress::CosimStatus>,
    /// After the run, replay the packets it handed to the network through
    /// the engine alone and report the time that takes and the overhead
    /// (`CosimReport::engine_alone_s`, `overhead`). Keeps 16 bytes per
    /// packet injected.
    pub measure_overhead: bool,
    /// Write the run's timeline there (`--timeline`): per node, its
    /// slices running and waiting at the barrier, in wall-clock time, and
    /// every frame (`CosimReport::timeline` says what it holds).
    pub timeline: Option<fsin::timeline::Target>,
    /// Hand the network's counters of every window of the measured phase
    /// to this board (`fsin qemu --timeline`, whose guests' timeline
    /// draws them).
    pub counters: Option<fsin::timeline::CounterBoard>,
}

impl ServeOptions {
    /// Options with the defaults of `fsin serve` for `config`.
    pub fn new(config: Config) -> ServeOptions {
        let nodes = config.net.nodes();
        ServeOptions {
            config,
            nodes,
            slices: None,
            attach_timeout: Duration::from_secs(30),
            node_timeout: Duration::from_secs(10),
            on_fault: FaultPolicy::Stop,
            warmup: false,
            warmup_factor: 100,
            pcap: None,
            datagram_sync: true,
            datagram_port: 0,
            multicast: None,
            shared_memory: true,
            token: None,
            idle_skip: true,
            status: Arc::default(),
            measure_overhead: false,
            timeline: None,
            counters: None,
        }
    }
}
