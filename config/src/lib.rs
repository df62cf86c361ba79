//! The configuration layer of fsin-rs: INSEE's option names and value
//! syntax, turned into the typed specs of the layers below (the network
//! model's [`NetworkSpec`], the traffic of crate `fsin-traffic`, the run
//! methodology's keys read by crate `fsin`), and the memory [`limits`] a
//! run must fit in.
//!
//! A configuration is built from defaults, then an optional file
//! (`fsin.conf`-style `key=value` lines with `#` comments, or TOML with the
//! same keys), then `key=value` overrides from the command line, in that
//! order (as INSEE's `get_conf` does). Every key, its aliases, default and
//! valid values live in one table ([`keys::keys`]) that also generates
//! `fsin help config`. Unknown keys, bad values and combinations the engine
//! does not support are errors that name the key; nothing is ignored.

#![warn(missing_docs)]

pub mod bisection;
mod builder;
mod checks;
mod files;
pub mod keys;
pub mod limits;
pub mod topology_file;
pub mod topology_gen;

use std::fmt;
use std::path::{Path, PathBuf};

use thiserror::Error;

pub use fsin_model::spec::{
    Arbitration, Compat, Consumption, FamilyParams, InjectionMode, NetworkSpec, RequestMode,
    RoutingOrder, Skews, TopoKind, UpDownRoot,
};

pub use builder::ConfigBuilder;
pub use fsin_traffic::{SliceError, SlicePart, SliceRatio, MAX_SLICE_CYCLES};

/// The `plevel` bits fsin implements, whose outputs crate `fsin` writes
/// (`stats::detail`): 1 packets per pair, 2 link use, 4 distances, 8 queue
/// occupancy, 16 every delivered packet.
pub const PLEVEL_SUPPORTED: u32 = 1 | 2 | 4 | 8 | 16;

/// Largest configuration file read (1 MiB): `--config /dev/zero` or a
/// trace given by mistake is refused instead of read forever.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Where a `key=value` setting came from, for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The command line.
    CommandLine,
    /// A line of a configuration file.
    File {
        /// The file.
        path: String,
        /// The line, from 1.
        line: usize,
    },
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::CommandLine => write!(f, "command line"),
            Origin::File { path, line } => write!(f, "{path}:{line}"),
        }
    }
}

/// A configuration error: always names the key (or the file) at fault.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// The key is not an option of fsin.
    #[error("{origin}: unknown key `{key}`{hint}; `fsin help config` lists every key")]
    UnknownKey {
        /// The key as given.
        key: String,
        /// Where it was given.
        origin: Origin,
        /// A known key it may be a misspelling of (`, did you mean ...`),
        /// or empty.
        hint: String,
    },
    /// An INSEE option that this version of fsin does not implement yet.
    #[error("{origin}: key `{key}` is an INSEE option that fsin does not support yet ({reason})")]
    Unsupported {
        /// The key.
        key: String,
        /// Where it was given.
        origin: Origin,
        /// What is missing.
        reason: String,
    },
    /// The value does not parse or is out of range.
    #[error("{origin}: bad value `{value}` for key `{key}`: {reason}")]
    BadValue {
        /// The key.
        key: String,
        /// The value as given.
        value: String,
        /// Where it was given.
        origin: Origin,
        /// What the key takes.
        reason: String,
    },
    /// A setting without `=`.
    #[error("{origin}: `{text}` is not a key=value setting")]
    Syntax {
        /// The setting as given.
        text: String,
        /// Where it was given.
        origin: Origin,
    },
    /// Individually valid settings that cannot be combined.
    #[error("key `{key}`: {reason}")]
    Combination {
        /// A key of the combination.
        key: String,
        /// Why they do not combine.
        reason: String,
    },
    /// The configuration file cannot be read or parsed.
    #[error("configuration file {path}: {reason}")]
    File {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
}

/// Virtual-channel management (`vc`), INSEE paper sections 2.2.1-2.2.2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VcManagement {
    /// Bubble flow control: a single escape channel is enough.
    Bubble,
    /// Dally's scheme: two escape channels break each ring's cycle.
    Dally,
    /// Bubble flow control with one escape channel per dimension.
    Double,
}

/// How the co-simulation server synchronises nodes and network
/// (`sync_mode`; docs/contracts.md, "Co-simulation"; Simics paper, section 4).
/// Written as the key's value: `lockstep`, `parallel`, `exact`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncMode {
    /// Nodes run slice k, then the network runs slice k with every frame
    /// injected at its stamp; frames that arrive during slice k reach the
    /// nodes at the start of slice k+1 (false delay below one slice).
    Lockstep,
    /// The network runs slice k+1 while the nodes run it too, with the
    /// frames of slice k injected one slice after their stamps; deliveries
    /// as in lock-step (the Simics paper's parallel scheme).
    Parallel,
    /// Lock-step with slices no longer than `nic_latency`: every frame
    /// reaches its node at its exact cycle, no false delay.
    Exact,
}

/// In what order a co-simulation hands a pair's frames to the destination
/// NIC (`frame_order`; docs/cosim.md, "Frames a switch would not expect").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameOrder {
    /// In the order the source sent them, as an Ethernet switch keeps the
    /// frames of one source and destination: a frame whose last packet
    /// arrives before an earlier frame's waits at the NIC for it.
    Pair,
    /// As the network delivers them: packets that take other routes or
    /// virtual channels (adaptive routing, `rmode=smart`) may carry a
    /// later frame past an earlier one, which TCP takes for a loss.
    Network,
}

/// Spatial traffic pattern (`tpattern`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatternKind {
    /// Every other node equally likely.
    Uniform,
    /// A quarter of the packets to the first eighth of the nodes.
    HotRegion,
    /// Node 0 favoured (2% of the draws).
    HotSpot,
    /// The lower half of the first dimension talks among itself.
    Semi,
    /// Every other node in turn, from the next one (`random_start`: from
    /// a random one, `rsdist`).
    Distribute {
        /// Whether each node starts from a random node (`rsdist`).
        random_start: bool,
    },
    /// A fixed permutation of the source id (INSEE paper, Table 2).
    Permutation(fsin_traffic::pattern::Permutation),
    /// TrGen's local traffic: mostly near neighbours per dimension.
    Local,
    /// Destinations by hop distance, from a file (`tracefile`, as in
    /// INSEE): `population` (a distance per line) or `histogram`
    /// (`distance weight` lines); see [`Config::distance_weights`].
    Distance {
        /// Whether the file gives `distance weight` lines (`histogram`)
        /// rather than a distance per line (`population`).
        histogram: bool,
    },
    /// An application workload: traces (`tracefile`) and/or a kernel
    /// (`kernel`), see [`AppConfig`].
    Trace,
}

/// Units of the amounts of trace computation events (`trace_cpu_units`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuUnits {
    /// Network cycles.
    Cycles,
    /// Milliseconds, converted with `link_bandwidth` (one cycle carries
    /// one phit across a link).
    Ms,
    /// Microseconds, converted as [`CpuUnits::Ms`].
    Us,
    /// Nanoseconds, converted as [`CpuUnits::Ms`].
    Ns,
}

/// Application workloads: traces and kernels, their placement and the
/// background load around them (traces paper; INSEE paper, section 3.2.4; thin-trees
/// paper, section 4.3).
#[derive(Debug, Clone, PartialEq)]
pub struct AppConfig {
    /// Trace files (`tracefile`), each replayed `placement` instances times.
    pub tracefiles: Vec<PathBuf>,
    /// Application kernel (`kernel`), replayed like a trace.
    pub kernel: Option<fsin_traffic::kernels::Kernel>,
    /// Kernel message size in bytes (`kernel_bytes`).
    pub kernel_bytes: u64,
    /// Kernel tasks (`kernel_tasks`; 0: one per node).
    pub kernel_tasks: u32,
    /// Task placement and instances (`placement`).
    pub placement: fsin_traffic::placement::Placement,
    /// Load of the nodes without a task, phits/node/cycle, uniform among
    /// themselves (`bg_load`).
    pub bg_load: f64,
    /// Units of computation events (`trace_cpu_units`).
    pub cpu_units: CpuUnits,
    /// Link bandwidth in Mb/s (`link_bandwidth`; 0: not given): converts
    /// time units to cycles and cycles to predicted seconds.
    pub link_bandwidth: f64,
    /// CPU speed relative to the traced machine (`cpu_speed`): computation
    /// events take `1 / cpu_speed` of their traced time (traces paper, 4.3).
    pub cpu_speed: f64,
    /// Causal replay or inject-at-will (`trace_mode`).
    pub trace_mode: fsin_traffic::replay::TraceMode,
    /// The MPI layer's model for MPI-level traces (the `mpi_*` keys; its
    /// `ns_per_node_cycle` is set from `node_clock` when a trace is
    /// lowered).
    pub mpi: fsin_trace::mpi::lower::MpiModel,
    /// The profile the MPI layer's model came from (`mpi_profile`): its
    /// settings are in `mpi`.
    pub mpi_profile: MpiProfile,
}

/// Where the MPI layer's model of MPI-level replays comes from
/// (`mpi_profile`): a profile is a file of `mpi_*` settings as `fsin qemu
/// --calibrate` writes it, applied where the key stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MpiProfile {
    /// The built-in profile ([`BUILT_IN_PROFILE`], `mpi_profile=default`):
    /// the calibration of the default guests, which [`Config::default`]
    /// applies before any key.
    BuiltIn,
    /// No profile (`mpi_profile=none` or empty): the straight line of
    /// `mpi_message_ns` and `mpi_byte_ps`, no wake-up, receive or set-up
    /// cost, unless keys set them.
    None,
    /// A profile file (`mpi_profile=PATH`).
    File(PathBuf),
}

impl fmt::Display for MpiProfile {
    /// What a report names: "the built-in MPI profile", "no MPI
    /// profile" or "MPI profile PATH".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MpiProfile::BuiltIn => f.write_str("the built-in MPI profile"),
            MpiProfile::None => f.write_str("no MPI profile"),
            MpiProfile::File(p) => write!(f, "MPI profile {}", p.display()),
        }
    }
}

/// The built-in MPI profile: `fsin qemu --calibrate` on the default
/// guests (2 guests, 125 million instructions a guest second, one vCPU,
/// the MPI image, lock-step at 200:1000 on `topo=torus_2`); its comments
/// give the command, each size's live and replayed figures and the fit
/// (docs/studies/calibrating-the-mpi-layer.md).
pub const BUILT_IN_PROFILE: &str = include_str!("../profiles/default-guests.conf");

impl Default for AppConfig {
    fn default() -> Self {
        AppConfig {
            tracefiles: Vec::new(),
            kernel: None,
            kernel_bytes: 40_960,
            kernel_tasks: 0,
            placement: fsin_traffic::placement::Placement::default(),
            bg_load: 0.0,
            cpu_units: CpuUnits::Cycles,
            link_bandwidth: 0.0,
            cpu_speed: 1.0,
            trace_mode: fsin_traffic::replay::TraceMode::Causal,
            mpi: fsin_trace::mpi::lower::MpiModel::default(),
            mpi_profile: MpiProfile::None,
        }
    }
}

impl AppConfig {
    /// Whether an application workload is configured.
    pub fn active(&self) -> bool {
        !self.tracefiles.is_empty() || self.kernel.is_some()
    }

    /// Network cycles per unit of a computation event, for packets of
    /// `phit_bytes`-byte phits (INSEE's trace.c conversion), divided by
    /// `cpu_speed`.
    pub fn cycles_per_unit(&self, phit_bytes: u32) -> f64 {
        // One cycle moves one phit: 8 * phit_bytes bits at link_bandwidth Mb/s.
        let cycles_per_us = self.link_bandwidth / (8.0 * f64::from(phit_bytes));
        let per_unit = match self.cpu_units {
            CpuUnits::Cycles => 1.0,
            CpuUnits::Ms => cycles_per_us * 1e3,
            CpuUnits::Us => cycles_per_us,
            CpuUnits::Ns => cycles_per_us * 1e-3,
        };
        per_unit / self.cpu_speed
    }

    /// Seconds per network cycle with `link_bandwidth` (None without it).
    pub fn seconds_per_cycle(&self, phit_bytes: u32) -> Option<f64> {
        (self.link_bandwidth > 0.0)
            .then(|| 8.0 * f64::from(phit_bytes) / (self.link_bandwidth * 1e6))
    }
}

/// A complete, validated simulation configuration, in the parts that
/// different layers read: the network ([`NetworkSpec`], which the engine
/// reads, and the two network keys it does not), the traffic that drives it
/// stand-alone ([`TrafficSpec`]), how a stand-alone run measures it
/// ([`Methodology`]), and how a co-simulation couples nodes to it
/// ([`CosimSpec`]).
///
/// Field names follow INSEE's options; units are network cycles, phits and
/// packets as documented on each key in [`keys::keys`].
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The network itself (topology, router, switching): what the engine
    /// reads.
    pub net: NetworkSpec,
    /// The VC management (`vc`) that set `net`'s VCs, request mode and
    /// bubble sizes.
    pub vc: VcManagement,
    /// Phit width in bytes: converts frames and trace messages to phits.
    pub phit_bytes: u32,
    /// Synthetic traffic and applications (traces, kernels).
    pub traffic: TrafficSpec,
    /// Warm-up, convergence, samples and outputs of a stand-alone run.
    pub method: Methodology,
    /// Slices, synchronisation and NICs of a co-simulation.
    pub cosim: CosimSpec,
}

impl Default for Config {
    /// INSEE's defaults, and the built-in MPI profile ([`MpiProfile::BuiltIn`]).
    fn default() -> Self {
        let mut c = Config {
            net: NetworkSpec::default(),
            vc: VcManagement::Bubble,
            phit_bytes: 4,
            traffic: TrafficSpec::default(),
            method: Methodology::default(),
            cosim: CosimSpec::default(),
        };
        keys::apply_built_in_profile(&mut c);
        c
    }
}

/// The traffic of a stand-alone run (INSEE's TrGen options): a synthetic
/// pattern at an offered load, or applications; long messages, reactive
/// traffic, bursts and global congestion control shape it.
#[derive(Debug, Clone, PartialEq)]
pub struct TrafficSpec {
    /// The spatial pattern or the application workload (`tpattern`).
    pub tpattern: PatternKind,
    /// Offered load in phits/node/cycle.
    pub load: f64,
    /// Traces, kernels and their placement.
    pub app: AppConfig,
    /// Packets per long message (`longmessages`; 1: no long messages).
    pub longmessages: u32,
    /// Fraction of the packets that travel in long messages
    /// (`lng_msg_ratio`).
    pub lng_msg_ratio: f64,
    /// Probability that a consumed packet triggers packets at its
    /// destination (`trigger_rate`, reactive traffic).
    pub trigger_rate: f64,
    /// Range of the packets triggered (`triggered=MAX[_MIN]`).
    pub triggered: (u32, u32),
    /// Bursts (`shotmode`): every node sends `shotsize` packets as fast as
    /// it can, then waits until every packet of the burst has arrived;
    /// `nsamples` (alias `numshots`) bursts.
    pub shotmode: bool,
    /// Packets per node and burst (`shotsize`; 0: nodes - 1).
    pub shotsize: u32,
    /// Global congestion control threshold, percent of the transit buffer
    /// capacity (`global_cc`; 100: off).
    pub global_cc: f64,
    /// Measurement period of global congestion control, before INSEE's
    /// scaling (`update_period`; see [`Config::cc_period`]).
    pub update_period: u64,
    /// Relative frequency of each hop distance (index = distance) for
    /// `tpattern=population|histogram`, read from the file at build time.
    pub distance_weights: Vec<f64>,
}

impl Default for TrafficSpec {
    fn default() -> Self {
        TrafficSpec {
            tpattern: PatternKind::Uniform,
            load: 0.05,
            app: AppConfig::default(),
            longmessages: 1,
            lng_msg_ratio: 0.1,
            trigger_rate: 0.0,
            triggered: (1, 1),
            shotmode: false,
            shotsize: 1,
            global_cc: 100.0,
            update_period: 0,
            distance_weights: Vec::new(),
        }
    }
}

/// How a stand-alone run measures (INSEE's methodology, INSEE paper
/// section 2.5): a warm-up, then convergence, then samples, or a fixed
/// number of cycles; partial results and detailed outputs. Units: cycles.
#[derive(Debug, Clone, PartialEq)]
pub struct Methodology {
    /// Cycles run before convergence is looked for (`warm_up_period`).
    pub warm_up_period: u64,
    /// Cycles of each convergence window (`conv_period`).
    pub conv_period: u64,
    /// Relative tolerance of convergence: consecutive windows' change
    /// allowed beyond their noise, and (`compat=none`) the 95% intervals'
    /// half-widths over their means.
    pub conv_thres: f64,
    /// Most cycles the convergence phase runs (`max_conv_time`).
    pub max_conv_time: u64,
    /// Batches measured (at least; `compat=none` adds batches until the
    /// intervals meet `conv_thres`, up to `max_samples`).
    pub nsamples: u64,
    /// Most batches a run measures (`compat=none`).
    pub max_samples: u64,
    /// Cycles of each batch (`sample_size`).
    pub sample_size: u64,
    /// Fixed-length mode: run exactly this many cycles (0 = TrGen phases).
    pub cycles: u64,
    /// Partial-results interval in cycles (0 = none).
    pub pinterval: u64,
    /// Detailed outputs (`plevel` bits, [`PLEVEL_SUPPORTED`]; written by crate `fsin`).
    pub plevel: u32,
}

impl Default for Methodology {
    fn default() -> Self {
        Methodology {
            warm_up_period: 5000,
            conv_period: 1000,
            conv_thres: 0.05,
            max_conv_time: 25000,
            nsamples: 10,
            max_samples: 100,
            sample_size: 1000,
            cycles: 0,
            pinterval: 0,
            plevel: 0,
        }
    }
}

/// How a co-simulation couples node simulators to the network (Simics
/// paper, section 3): slices of network and node cycles, the
/// synchronisation, and the NICs.
#[derive(Debug, Clone, PartialEq)]
pub struct CosimSpec {
    /// The co-simulation slice: network cycles (`fsin_cycle_relation`)
    /// and node cycles (`simics_cycle_relation`).
    pub slice: SliceRatio,
    /// Co-simulation synchronisation (`sync_mode`).
    pub sync_mode: SyncMode,
    /// Network cycles from the consumption of a frame's last phit to its
    /// arrival at the destination NIC (`nic_latency`).
    pub nic_latency: u64,
    /// Bytes of frames a node may have waiting for the network (sent, not
    /// yet wholly delivered) in co-simulation (`nic_queue_bytes`); a frame
    /// beyond it is dropped and counted, as a full transmit queue drops it.
    pub nic_queue_bytes: u64,
    /// Whether a pair's frames reach the destination NIC in the order
    /// sent (`frame_order`).
    pub frame_order: FrameOrder,
    /// Probability that the network loses a frame of the measured phase
    /// (`frame_loss`, 0 to 1; each frame independently, drawn with the
    /// run's seed): a lossy link, for TCP's retransmissions.
    pub frame_loss: f64,
    /// Slices per window of the peak link utilization of a co-simulation
    /// report (`util_window`).
    pub util_window: u64,
    /// Node clock in Hz (`node_clock`), for seconds and bandwidth.
    pub node_clock_hz: u64,
}

impl CosimSpec {
    /// Why a slice of `net` network cycles cannot run in this
    /// co-simulation, if it cannot: exact mode needs slices no longer than
    /// `nic_latency`, its lookahead (Simics paper, section 5: a frame sent
    /// in a slice must not be due before the slice's end). The one rule the
    /// configuration (`fsin_cycle_relation`) and the server's `set_slice`
    /// both apply.
    pub fn slice_refused(&self, net: u64) -> Option<String> {
        (self.sync_mode == SyncMode::Exact && net > self.nic_latency).then(|| {
            format!(
                "exact mode needs slices no longer than the NIC link latency (the lookahead), \
                 but the slice has {net} network cycles > nic_latency={}; raise nic_latency or \
                 shorten the slice",
                self.nic_latency
            )
        })
    }
}

impl Default for CosimSpec {
    fn default() -> Self {
        CosimSpec {
            slice: SliceRatio {
                net: 200,
                node: 1000,
            },
            sync_mode: SyncMode::Lockstep,
            nic_latency: 0,
            nic_queue_bytes: 4 << 20,
            frame_order: FrameOrder::Pair,
            frame_loss: 0.0,
            util_window: 10,
            node_clock_hz: 200_000_000,
        }
    }
}

/// INSEE's defaults where they differ from fsin-rs's (get_conf.c,
/// `set_default_conf`): with `compat=insee` they apply to the keys a
/// configuration leaves unset, so that INSEE's configuration files mean
/// what they mean to INSEE. Key (canonical name) and value.
pub const INSEE_DEFAULTS: [(&str, &str); 3] = [
    ("topo", "torus_4_4"),
    ("trace_cpu_units", "ns"),
    ("link_bandwidth", "10000"),
];

/// A setting that a program gives as a typed value (a command's option, a
/// study's varied value, a default of its own) instead of `key=value`
/// text. [`ConfigBuilder::put`] applies it through the key table, with
/// the same checks and errors as its key's text, and it counts as set
/// (`compat=insee` defaults then leave it alone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Setting {
    /// `topo=torus_X_Y...`: a torus of these sizes (a ring with one).
    Torus(Vec<u32>),
    /// `fsin_cycle_relation` and `simics_cycle_relation` (`--slice`).
    Slice(SliceRatio),
    /// `sync_mode` (`--mode`).
    SyncMode(SyncMode),
    /// `nic_latency`, network cycles.
    NicLatency(u64),
    /// `node_clock`, Hz.
    NodeClockHz(u64),
    /// `rseed`.
    Rseed(u64),
    /// Any key of the table with its value as text, as a user wrote it
    /// (`fsin qemu --vary KEY=V1,V2`).
    Key {
        /// A name of the key (any alias).
        key: String,
        /// Its value, in the key's syntax.
        value: String,
    },
}

impl Setting {
    /// The keys and values this setting stands for, in the key table's
    /// syntax (what a configuration file or the command line would say).
    pub fn key_values(&self) -> Vec<(&str, String)> {
        match self {
            Setting::Torus(dims) => {
                let dims: Vec<String> = dims.iter().map(u32::to_string).collect();
                vec![("topo", format!("torus_{}", dims.join("_")))]
            }
            Setting::Slice(s) => vec![
                ("fsin_cycle_relation", s.net.to_string()),
                ("simics_cycle_relation", s.node.to_string()),
            ],
            Setting::SyncMode(m) => vec![("sync_mode", m.to_string())],
            Setting::NicLatency(l) => vec![("nic_latency", l.to_string())],
            Setting::NodeClockHz(hz) => vec![("node_clock", hz.to_string())],
            Setting::Rseed(seed) => vec![("rseed", seed.to_string())],
            Setting::Key { key, value } => vec![(key.as_str(), value.clone())],
        }
    }
}

impl Config {
    /// Cycles between measurements of global congestion control: 1 for
    /// `update_period=0`, else `update_period` times the sum of half ring
    /// sizes (tori) or of sizes minus one (meshes), levels (trees) or
    /// dimensions (hypercubes), as INSEE scales it.
    pub fn cc_period(&self) -> u64 {
        if self.traffic.update_period == 0 {
            return 1;
        }
        let scale: u64 = match (&self.net.family, self.net.topo) {
            (
                &FamilyParams::Tree { levels: n, .. } | &FamilyParams::Hypercube { dimensions: n },
                _,
            ) => u64::from(n),
            (FamilyParams::Icube { .. } | FamilyParams::File { .. }, _) => 1,
            (_, TopoKind::Mesh) => self.net.dims.iter().map(|&k| u64::from(k) - 1).sum(),
            _ => self.net.dims.iter().map(|&k| u64::from(k / 2)).sum(),
        };
        self.traffic.update_period * scale.max(1)
    }

    /// The topology as `topo=` writes it (e.g. `torus_8_8`, `fattree_4_3`).
    pub fn topology_name(&self) -> String {
        keys::lookup("topo").map_or_else(String::new, |k| (k.show)(self))
    }

    /// The routing a run of this configuration uses, in words, e.g.
    /// `Duato (minimal adaptive, VC 0 an up*/down* escape)` for a file
    /// topology by default, `dimension order, bubble flow control, rmode=smart`
    /// for a torus (what `routing`, `rmode` and `vc` chose; docs/model.md).
    pub fn routing_in_use(&self) -> String {
        let show = |key: &str| keys::lookup(key).map_or_else(String::new, |k| (k.show)(self));
        let adaptive = match self.net.rmode {
            RequestMode::Static => "static",
            _ => "adaptive",
        };
        if self.net.faults > 0 {
            return format!("up*/down* ({adaptive}) around the failed links");
        }
        match self.net.routing {
            RoutingOrder::Duato => "Duato (minimal adaptive, VC 0 an up*/down* escape)".to_string(),
            RoutingOrder::Shortest => format!("minimal paths ({adaptive}), hop k on VC k"),
            _ if self.net.topo == TopoKind::File => format!("up*/down* ({adaptive})"),
            _ if self.net.topo.is_cube() => format!(
                "{} order, {} flow control, rmode={}",
                if self.net.routing == RoutingOrder::Direction {
                    "direction"
                } else {
                    "dimension"
                },
                show("vc"),
                show("rmode")
            ),
            _ => adaptive.to_string(),
        }
    }

    /// Parses `key=value` settings over the defaults.
    ///
    /// # Errors
    /// Any [`ConfigError`].
    pub fn from_settings<S: AsRef<str>>(settings: &[S]) -> Result<Config, ConfigError> {
        ConfigBuilder::from_sources(&[], None, settings)?.build()
    }

    /// The configuration as INSEE-style `key=value` pairs, one per key of
    /// [`keys::keys`] (for reports that must allow repeating a run).
    pub fn settings(&self) -> Vec<(&'static str, String)> {
        keys::keys().map(|k| (k.names[0], (k.show)(self))).collect()
    }
}
