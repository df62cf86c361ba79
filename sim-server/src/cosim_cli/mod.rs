//! The co-simulation commands: `fsin serve` (nodes from outside), `fsin
//! demo` (fake nodes, [`demo`]) and `fsin cosim-sweep` ([`sweep`]), each a
//! session of `fsin_cosim::session` with its adapter.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::ValueEnum;
use fsin::config::{Config, ConfigBuilder, ConfigError, Origin, Setting, SliceRatio, SyncMode};
use fsin_cosim::progress::{CosimPhase, CosimSnapshot, CosimStatus};
use fsin_cosim::report::{self, CosimReport};
use fsin_cosim::session::{self, Adapter, EndedEarly, SessionReport};
use fsin_cosim::{FaultPolicy, ServeOptions};

use crate::bounds::seconds;
use crate::progress::{self, ProgressArgs, Reporter, Status};

mod demo;
mod sweep;

pub use demo::{demo, DemoArgs};
pub use sweep::{sweep, SweepArgs};
pub(crate) use sweep::{write_study, write_tradeoff};

/// The run ended (report printed) but not cleanly: exit code 1, or 3 when
/// it deadlocked.
#[derive(Debug, thiserror::Error)]
#[error("the co-simulation run failed")]
pub struct RunFailed {
    /// The process exit code.
    pub code: u8,
}

/// `--on-fault`: what the server does when a node fails ([`FaultPolicy`]).
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum OnFault {
    /// End the run, flush statistics, exit 1.
    Stop,
    /// Go on without the node's client; frames to its nodes are dropped.
    Continue,
}

#[derive(Clone, clap::Args)]
pub struct CosimArgs {
    /// Configuration file: INSEE-style key=value lines, or TOML (*.toml).
    #[arg(long, short = 'c', value_name = "FILE")]
    config: Option<PathBuf>,
    /// Nodes that must attach (ids 0..N-1); default: every node of the topology.
    #[arg(long)]
    pub(crate) nodes: Option<usize>,
    /// Slice length as NET:NODE, network cycles : node cycles (sets
    /// fsin_cycle_relation and simics_cycle_relation; default 200:1000).
    #[arg(long, value_name = "NET:NODE", value_parser = slice_ratio)]
    pub(crate) slice: Option<SliceRatio>,
    /// Synchronisation: lockstep, parallel or exact (sets sync_mode).
    #[arg(long, value_name = "MODE", value_parser = sync_mode)]
    pub(crate) mode: Option<SyncMode>,
    /// Stop after K slices (default: when every node has finished).
    #[arg(long, value_name = "K")]
    slices: Option<u64>,
    /// Seconds to wait for every node to attach.
    #[arg(long, default_value_t = 30.0, value_name = "S")]
    attach_timeout: f64,
    /// Seconds a node may take for one slice before it counts as stalled.
    #[arg(long, default_value_t = 10.0, value_name = "S")]
    node_timeout: f64,
    /// On a node fault: stop the run (exit 1) or continue without the node.
    #[arg(long, value_enum, default_value = "stop")]
    on_fault: OnFault,
    /// Start in warm-up: frames skip the network and slices are longer until
    /// the measured phase starts (control request or CLEAR_STATS magic packet).
    #[arg(long)]
    warmup: bool,
    /// During warm-up, each slice is this many slices long.
    #[arg(long, default_value_t = 100, value_name = "N")]
    warmup_factor: u64,
    /// Capture every frame, with its simulated time, into this pcap file.
    #[arg(long, value_name = "FILE")]
    pub(crate) pcap: Option<PathBuf>,
    /// Keep Continue and SliceDone on the gRPC stream (no UDP fast path for
    /// quiet rounds).
    #[arg(long)]
    no_datagram_sync: bool,
    /// UDP port of the datagram fast path, on the --listen address
    /// (default: a free one); fix it when a firewall or a relay between
    /// hosts must know it (docs/cosim.md, "Several hosts").
    #[arg(long, value_name = "PORT", default_value_t = 0)]
    datagram_port: u16,
    /// Send the Continue of quiet rounds once to this UDP multicast group
    /// (e.g. 239.255.0.1:45000) instead of once per client; the loopback
    /// interface needs the MULTICAST flag (see docs/cosim.md).
    #[arg(long, value_name = "GROUP:PORT")]
    multicast_continue: Option<std::net::SocketAddrV4>,
    /// Do not offer the shared-memory slice barrier to clients on this host
    /// (they then use datagrams for quiet rounds).
    #[arg(long)]
    no_shared_memory: bool,
    /// Run every slice as a round of its own even when every client has
    /// promised to do nothing in it (SliceDone.idle_until); by default
    /// lockstep runs skip such slices in one round, with the same results.
    #[arg(long)]
    no_idle_skip: bool,
    /// After the run, replay the packets it handed to the network through
    /// the engine alone (same network, cycles and packets) and report that
    /// time (engine_alone_s) and the run's wall time over it (overhead):
    /// what co-simulation costs beyond the network model.
    #[arg(long)]
    overhead: bool,
    /// Shared secret every client must send (Attach.token) and every
    /// Control RPC must carry; clients read it from FSIN_TOKEN. The
    /// protocol has no encryption: give one whenever --listen is beyond
    /// loopback, on networks you trust.
    #[arg(
        long,
        env = "FSIN_TOKEN",
        hide_env_values = true,
        value_name = "SECRET"
    )]
    pub(crate) token: Option<String>,
    /// Print one JSON object (last line of stdout) instead of the text report.
    #[arg(long)]
    pub(crate) json: bool,
    /// Also write report.json and nodes.csv (with barrier waits) into this directory.
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) progress: ProgressArgs,
    #[command(flatten)]
    pub(crate) timeline: crate::timeline_cli::TimelineArgs,
    /// Network and co-simulation settings, e.g. topo=torus_4_4 nic_latency=20.
    #[arg(value_name = "KEY=VALUE")]
    pub(crate) settings: Vec<String>,
    /// Typed settings that a command adds after the user's KEY=VALUE ones
    /// and before --slice and --mode: a study's value, a sweep's latency.
    #[arg(skip)]
    pub(crate) changes: Vec<Setting>,
}

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Address to listen on (loopback by default).
    #[arg(long, default_value = "127.0.0.1:50051")]
    listen: SocketAddr,
    /// Also speak INSEE's original protocol to the nodes (UDP multicast sync
    /// on 225.0.0.37:12345, frames on TCP port 8082), so that INSEE Simics
    /// modules work unchanged; they count as one client of this server.
    #[arg(long)]
    legacy_exd: bool,
    #[command(flatten)]
    cosim: CosimArgs,
}

pub(crate) fn init_logging(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

/// Builds the configuration: the command's `defaults`, the file, the
/// KEY=VALUE settings, the command's typed changes, then --slice and
/// --mode.
pub(crate) fn config(a: &CosimArgs, defaults: &[Setting]) -> anyhow::Result<Config> {
    let mut b = ConfigBuilder::from_sources(defaults, a.config.as_deref(), &a.settings)?;
    let options = a.slice.map(Setting::Slice).into_iter();
    for s in a
        .changes
        .iter()
        .cloned()
        .chain(options)
        .chain(a.mode.map(Setting::SyncMode))
    {
        b.put(&s, Origin::CommandLine)?;
    }
    let cfg = b.build()?;
    fsin::limits::check_memory(&cfg)?;
    if cfg.traffic.app.active() {
        return Err(ConfigError::Combination {
            key: "tracefile".into(),
            reason: "traces and kernels run with `fsin run`; under co-simulation the nodes make the traffic (fake-node --workload trace FILE)".into(),
        }
        .into());
    }
    Ok(cfg)
}

/// What `NET:NODE` must be.
const SLICE_SYNTAX: &str =
    "expected NET:NODE, positive network cycles : node cycles, e.g. 200:1000";

/// `--slice NET:NODE` (clap's parser).
fn slice_ratio(text: &str) -> Result<SliceRatio, String> {
    SliceRatio::parse(text).ok_or_else(|| SLICE_SYNTAX.into())
}

/// `--mode MODE` (clap's parser).
pub(crate) fn sync_mode(text: &str) -> Result<SyncMode, String> {
    SyncMode::parse(text).ok_or_else(|| "expected lockstep, parallel or exact".into())
}

/// `NET:NODE` (network cycles : node cycles, both positive) of option `key`.
pub(crate) fn parse_slice(key: &str, text: &str) -> Result<SliceRatio, ConfigError> {
    SliceRatio::parse(text).ok_or_else(|| ConfigError::BadValue {
        key: key.into(),
        value: text.into(),
        origin: Origin::CommandLine,
        reason: SLICE_SYNTAX.into(),
    })
}

/// Creates the `--out` directory `dir` (and its parents) before anything
/// is simulated, so that a path that cannot be one (an existing file, no
/// permission, a full disk) is bad input, not a loss at the end of a run.
///
/// # Errors
/// [`ConfigError::BadValue`] naming `--out`, the path and the cause.
pub(crate) fn out_dir(dir: &std::path::Path) -> Result<(), ConfigError> {
    let bad = |reason: String| ConfigError::BadValue {
        key: "--out".into(),
        value: dir.display().to_string(),
        origin: Origin::CommandLine,
        reason,
    };
    if dir.exists() && !dir.is_dir() {
        return Err(bad("it exists and is not a directory".into()));
    }
    std::fs::create_dir_all(dir).map_err(|e| bad(format!("cannot create the directory: {e}")))?;
    let probe = dir.join(".fsin-write-test");
    std::fs::write(&probe, b"")
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|e| bad(format!("cannot write into the directory: {e}")))
}

/// Largest `--warmup-factor`: a warm-up slice then stays below 2^52 cycles.
const MAX_WARMUP_FACTOR: u64 = 1 << 20;

pub(crate) fn options(a: &CosimArgs, cfg: Config) -> anyhow::Result<ServeOptions> {
    if let Some(dir) = &a.out {
        out_dir(dir)?;
    }
    let mut o = ServeOptions::new(cfg);
    if let Some(n) = a.nodes {
        if n == 0 || n > o.nodes {
            return Err(ConfigError::BadValue {
                key: "--nodes".into(),
                value: n.to_string(),
                origin: Origin::CommandLine,
                reason: format!("the topology has {} nodes; give 1..={}", o.nodes, o.nodes),
            }
            .into());
        }
        o.nodes = n;
    }
    o.attach_timeout = seconds("--attach-timeout", a.attach_timeout, false)?;
    o.node_timeout = seconds("--node-timeout", a.node_timeout, false)?;
    o.slices = a.slices;
    o.on_fault = match a.on_fault {
        OnFault::Stop => FaultPolicy::Stop,
        OnFault::Continue => FaultPolicy::Continue,
    };
    o.warmup = a.warmup;
    if !(1..=MAX_WARMUP_FACTOR).contains(&a.warmup_factor) {
        return Err(ConfigError::BadValue {
            key: "--warmup-factor".into(),
            value: a.warmup_factor.to_string(),
            origin: Origin::CommandLine,
            reason: format!("expected 1..={MAX_WARMUP_FACTOR}"),
        }
        .into());
    }
    o.warmup_factor = a.warmup_factor;
    o.pcap = a.pcap.clone();
    o.datagram_sync = !a.no_datagram_sync;
    o.datagram_port = a.datagram_port;
    o.multicast = a.multicast_continue;
    o.shared_memory = !a.no_shared_memory;
    o.idle_skip = !a.no_idle_skip;
    o.measure_overhead = a.overhead;
    o.token = a.token.clone().filter(|t| !t.is_empty());
    o.timeline = a.timeline.target(a.out.as_deref())?;
    Ok(o)
}

/// One thread for the coordinator and the gRPC connections: the
/// coordinator is the serial part of every round, and wake-ups between
/// worker threads cost more than they save. Network slices of the parallel
/// mode run on the blocking pool.
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Writes `--out` (report.json, nodes.csv, links.csv), prints report `r`
/// (JSON, or the server's text and then the adapter's `nodes_text`), and
/// fails if the run did.
pub(crate) fn finish<R: serde::Serialize>(
    a: &CosimArgs,
    r: &SessionReport<R>,
    nodes_text: &str,
) -> anyhow::Result<()> {
    let json = r.json()?;
    let run = &r.run;
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let path = dir.join("report.json");
        std::fs::write(&path, serde_json::to_string_pretty(&json)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
        let path = dir.join("nodes.csv");
        std::fs::write(&path, report::nodes_csv(run))
            .with_context(|| format!("cannot write {}", path.display()))?;
        if !run.links.links.is_empty() {
            fsin::stats::detail::write_links(dir, &run.links.links, &run.links.dims)
                .with_context(|| format!("cannot write links.csv in {}", dir.display()))?;
        }
    }
    if a.json {
        println!("{json}");
    } else {
        print!("{}{nodes_text}", report::text(run));
    }
    match (run.ok, run.deadlock) {
        (true, _) => Ok(()),
        (false, false) => Err(RunFailed { code: 1 }.into()),
        (false, true) => Err(RunFailed { code: 3 }.into()),
    }
}

/// SIGINT, SIGTERM or SIGHUP, as the reason a run ends.
pub(crate) async fn interrupted() -> String {
    format!(
        "interrupted by {}",
        sync_client::signals::stop_requested().await
    )
}

/// The facts of a co-simulation run's progress line after it attached:
/// slices done (of `--slices`), node time (`time` names it: `simulated`,
/// `guest`) against `wall` time, frames delivered; and the fraction done
/// when `--slices` bounds the run.
pub(crate) fn cosim_facts(
    s: &CosimSnapshot,
    clock_hz: u64,
    slices: Option<u64>,
    wall: Duration,
    time: &str,
) -> (String, Option<f64>) {
    let node_s = s.node_cycles as f64 / clock_hz.max(1) as f64;
    let of = slices.map_or(String::new(), |k| format!(" of {}", progress::count(k)));
    let slowdown = if node_s > 0.0 {
        let x = wall.as_secs_f64() / node_s;
        if x >= 10.0 {
            format!(" (slowdown {}x)", progress::count(x as u64))
        } else {
            format!(" (slowdown {x:.2}x)")
        }
    } else {
        String::new()
    };
    let facts = format!(
        "slice {}{of}, {} {time} time in {} wall{slowdown}, {} frames delivered",
        progress::count(s.slices),
        progress::seconds(node_s),
        progress::duration(wall),
        progress::count(s.frames_delivered)
    );
    (facts, slices.map(|k| s.slices as f64 / k.max(1) as f64))
}

/// Reports the progress of a co-simulation run of `nodes` nodes
/// (`fsin serve`, `fsin demo`) from `status`.
fn cosim_reporter(name: &str, a: &CosimArgs, opts: &ServeOptions) -> anyhow::Result<Reporter> {
    let status: std::sync::Arc<CosimStatus> = std::sync::Arc::clone(&opts.status);
    let (nodes, clock, slices) = (opts.nodes, opts.config.cosim.node_clock_hz, opts.slices);
    let started = Instant::now();
    Ok(Reporter::start(name.into(), &a.progress, move || {
        let s = status.snapshot();
        let phase = match s.phase {
            CosimPhase::Attaching => {
                return Status {
                    phase: "attaching",
                    facts: format!("{}/{nodes} nodes attached", s.nodes_attached),
                    done: None,
                    note: None,
                }
            }
            CosimPhase::WarmUp => "warm-up",
            CosimPhase::Measuring => "measuring",
            CosimPhase::Ended => "ending",
        };
        let (facts, done) = cosim_facts(&s, clock, slices, started.elapsed(), "simulated");
        Status {
            phase,
            facts,
            done,
            note: None,
        }
    })?)
}

/// What node simulators whose report the server's covers add to it:
/// nothing (`fsin serve`, `fsin demo`).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub(crate) struct NoKeys {}

/// The node simulators of `fsin serve`: they come from outside and attach
/// by themselves; with `--legacy-exd`, INSEE's Simics modules too, through
/// a client of this server that speaks their protocol.
struct Outside {
    /// `--legacy-exd`: nodes, the interface of the multicast group, and
    /// how often a lost sync message is sent again.
    legacy: Option<(usize, std::net::Ipv4Addr, Duration)>,
}

impl Adapter for Outside {
    type Report = NoKeys;
    type Error = std::convert::Infallible;

    /// Called by the session on its runtime: the legacy client is a task
    /// of it.
    fn start(&mut self, url: &str) -> Result<EndedEarly, Self::Error> {
        if let Some((nodes, iface, resend)) = self.legacy {
            let url = url.to_string();
            tokio::spawn(async move {
                match legacy_exd::run(&url, nodes, iface, resend).await {
                    Ok(reason) => tracing::info!("legacy exd nodes: {reason}"),
                    Err(e) => tracing::error!("legacy exd: {e}"),
                }
            });
        }
        Ok(session::never())
    }

    async fn finish(self, _run: &CosimReport) -> Result<NoKeys, Self::Error> {
        Ok(NoKeys {})
    }
}

/// `fsin serve`.
pub fn serve(a: ServeArgs) -> anyhow::Result<()> {
    init_logging("info");
    let cfg = config(&a.cosim, &[])?;
    let opts = options(&a.cosim, cfg)?;
    let reporter = cosim_reporter("fsin serve", &a.cosim, &opts)?;
    let legacy = a.legacy_exd.then(|| {
        let iface = match a.listen.ip() {
            std::net::IpAddr::V4(v4) => v4,
            std::net::IpAddr::V6(_) => std::net::Ipv4Addr::UNSPECIFIED,
        };
        let resend = (opts.node_timeout / 4).max(Duration::from_millis(100));
        (opts.nodes, iface, resend)
    });
    let report = runtime()?.block_on(async {
        let listener = tokio::net::TcpListener::bind(a.listen)
            .await
            .with_context(|| format!("cannot listen on {}", a.listen))?;
        tracing::info!(
            "listening on {}; waiting for {} nodes",
            listener.local_addr()?,
            opts.nodes
        );
        if !a.listen.ip().is_loopback() {
            tracing::warn!(
                "listening beyond loopback ({}): the fsin.v1 protocol is not encrypted, and {}",
                a.listen,
                if opts.token.is_some() {
                    "only clients with the --token secret can attach or control the run"
                } else {
                    "anyone who reaches the port can attach nodes and control the run: give --token (or FSIN_TOKEN)"
                }
            );
        }
        anyhow::Ok(session::run(opts, listener, Outside { legacy }, interrupted()).await?)
    });
    reporter.finish();
    finish(&a.cosim, &report?, "")
}

/// The command-line spelling of a value.
pub(crate) fn name<V: ValueEnum>(v: V) -> String {
    v.to_possible_value()
        .expect("no skipped values")
        .get_name()
        .to_string()
}
