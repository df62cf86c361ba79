//! `fsin serve` and `fsin demo`: the co-simulation commands.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::ValueEnum;
use fake_node::{CpuUnits, Workload};
use fsin::config::{Config, ConfigBuilder, ConfigError, Origin, SliceRatio};
use fsin_cosim::progress::{CosimPhase, CosimSnapshot, CosimStatus};
use fsin_cosim::report::{self, CosimReport};
use fsin_cosim::{server, FaultPolicy, ServeOptions};

use crate::bounds::seconds;
use crate::progress::{self, ProgressArgs, Reporter, Status};

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
    #[arg(long, value_name = "NET:NODE")]
    pub(crate) slice: Option<String>,
    /// Synchronisation: lockstep, parallel or exact (sets sync_mode).
    #[arg(long, value_name = "MODE")]
    pub(crate) mode: Option<String>,
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
    /// Network and co-simulation settings, e.g. topo=torus_4_4 nic_latency=20.
    #[arg(value_name = "KEY=VALUE")]
    pub(crate) settings: Vec<String>,
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

#[derive(Clone, clap::Args)]
pub struct DemoArgs {
    /// Workload of the fake nodes: idle, pingpong, all2all, uniform, or
    /// `trace FILE` (causal replay of an FSIN .trc trace).
    #[arg(long, num_args = 1..=2, value_names = ["NAME", "FILE"], default_value = "all2all")]
    workload: Vec<String>,
    /// Unit of the CPU (`c`) events of a trace.
    #[arg(long, value_enum, default_value = "cycles")]
    cpu_units: CpuUnits,
    /// Nodes each fake-node process runs (an aggregator client for several
    /// nodes, the Simics paper's two-level synchronisation).
    #[arg(long, default_value_t = 1, value_name = "M")]
    nodes_per_client: usize,
    /// Frame size in bytes, headers included (75 to 9018).
    #[arg(long, default_value_t = 128, value_parser = fake_node::frame_bytes)]
    bytes: usize,
    /// Ping-pong rounds, or messages per node for uniform.
    #[arg(long, default_value_t = 10)]
    messages: u64,
    /// Node cycles of processing between messages.
    #[arg(long, default_value_t = 1000)]
    think: u64,
    /// Node 0 sends the CLEAR_STATS magic packet at this node cycle (ends
    /// the --warmup phase).
    #[arg(long, value_name = "CYCLE")]
    clear_stats_at: Option<u64>,
    #[command(flatten)]
    cosim: CosimArgs,
}

impl DemoArgs {
    /// `fsin demo` with every option at its default (and the token from
    /// FSIN_TOKEN, as the command reads it).
    fn defaults() -> DemoArgs {
        use clap::{Args, FromArgMatches};
        let command = DemoArgs::augment_args(clap::Command::new("demo"));
        DemoArgs::from_arg_matches(&command.get_matches_from(["demo"]))
            .expect("every option of fsin demo has a default")
    }
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

/// Builds the configuration: `defaults`, the file, the KEY=VALUE settings,
/// then --slice and --mode.
pub(crate) fn config(a: &CosimArgs, defaults: &[&str]) -> anyhow::Result<Config> {
    let mut b = ConfigBuilder::from_sources(defaults, a.config.as_deref(), &a.settings)?;
    if let Some(slice) = &a.slice {
        let s = parse_slice("--slice", slice)?;
        b.set(
            "fsin_cycle_relation",
            &s.net.to_string(),
            Origin::CommandLine,
        )?;
        b.set(
            "simics_cycle_relation",
            &s.node.to_string(),
            Origin::CommandLine,
        )?;
    }
    if let Some(mode) = &a.mode {
        b.set("sync_mode", mode, Origin::CommandLine)?;
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

/// `NET:NODE` (network cycles : node cycles, both positive) of option `key`.
pub(crate) fn parse_slice(key: &str, text: &str) -> Result<SliceRatio, ConfigError> {
    SliceRatio::parse(text).ok_or_else(|| ConfigError::BadValue {
        key: key.into(),
        value: text.into(),
        origin: Origin::CommandLine,
        reason: "expected NET:NODE, positive network cycles : node cycles, e.g. 200:1000".into(),
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

fn finish(a: &CosimArgs, r: &CosimReport) -> anyhow::Result<()> {
    finish_with(a, r, &serde_json::Map::new(), "")
}

/// The JSON of report `r` with the keys of `extra` (an object) beside its
/// own.
///
/// # Errors
/// `extra` does not serialise.
pub(crate) fn report_json(
    r: &CosimReport,
    extra: &impl serde::Serialize,
) -> anyhow::Result<serde_json::Value> {
    let mut json = serde_json::to_value(r)?;
    if let (Some(m), serde_json::Value::Object(extra)) =
        (json.as_object_mut(), serde_json::to_value(extra)?)
    {
        m.extend(extra);
    }
    Ok(json)
}

/// Writes `--out`, prints the report (with `extra`'s keys merged into the
/// JSON, `extra_text` after the text), and fails if the run did.
pub(crate) fn finish_with(
    a: &CosimArgs,
    r: &CosimReport,
    extra: &impl serde::Serialize,
    extra_text: &str,
) -> anyhow::Result<()> {
    let json = report_json(r, extra)?;
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let path = dir.join("report.json");
        std::fs::write(&path, serde_json::to_string_pretty(&json)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
        let path = dir.join("nodes.csv");
        std::fs::write(&path, report::nodes_csv(r))
            .with_context(|| format!("cannot write {}", path.display()))?;
        if !r.links.links.is_empty() {
            fsin::stats::detail::write_links(dir, &r.links.links, &r.links.dims)
                .with_context(|| format!("cannot write links.csv in {}", dir.display()))?;
        }
    }
    if a.json {
        println!("{json}");
    } else {
        print!("{}{extra_text}", report::text(r));
    }
    match (r.ok, r.deadlock) {
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
                }
            }
            CosimPhase::WarmUp => "warm-up",
            CosimPhase::Measuring => "measuring",
            CosimPhase::Ended => "ending",
        };
        let (facts, done) = cosim_facts(&s, clock, slices, started.elapsed(), "simulated");
        Status { phase, facts, done }
    })?)
}

/// `fsin serve`.
pub fn serve(a: ServeArgs) -> anyhow::Result<()> {
    init_logging("info");
    let cfg = config(&a.cosim, &[])?;
    let opts = options(&a.cosim, cfg)?;
    let reporter = cosim_reporter("fsin serve", &a.cosim, &opts)?;
    let rt = runtime()?;
    let report = rt.block_on(async {
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
        if a.legacy_exd {
            let url = format!("http://{}", listener.local_addr()?);
            let nodes = opts.nodes;
            let iface = match a.listen.ip() {
                std::net::IpAddr::V4(v4) => v4,
                std::net::IpAddr::V6(_) => std::net::Ipv4Addr::UNSPECIFIED,
            };
            let resend = (opts.node_timeout / 4).max(Duration::from_millis(100));
            tokio::spawn(async move {
                match legacy_exd::run(&url, nodes, iface, resend).await {
                    Ok(reason) => tracing::info!("legacy exd nodes: {reason}"),
                    Err(e) => tracing::error!("legacy exd: {e}"),
                }
            });
        }
        anyhow::Ok(server::serve(opts, listener, interrupted()).await?)
    });
    reporter.finish();
    finish(&a.cosim, &report?)
}

/// `fsin demo`.
pub fn demo(a: DemoArgs) -> anyhow::Result<()> {
    init_logging("warn");
    let report = run_demo(&a);
    finish(&a.cosim, &report?)
}

/// Runs `fsin demo`'s co-simulation (a server and its fake-node processes
/// on loopback) and gives its report.
fn run_demo(a: &DemoArgs) -> anyhow::Result<CosimReport> {
    let cfg = config(&a.cosim, &["topo=torus_4_4"])?;
    let opts = options(&a.cosim, cfg)?;
    let (workload, trace) = demo_workload(&a.workload, opts.nodes)?;
    let exe = crate::own_exe()?;
    let reporter = cosim_reporter("fsin demo", &a.cosim, &opts)?;
    let rt = runtime()?;
    let report = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("cannot listen on loopback")?;
        let url = format!("http://{}", listener.local_addr()?);
        let nodes = opts.nodes;
        let server = tokio::spawn(server::serve(opts, listener, interrupted()));
        let per = a.nodes_per_client.max(1);
        let mut children: Vec<Child> = Vec::new();
        for first in (0..nodes).step_by(per) {
            let last = (first + per).min(nodes) - 1;
            let mut cmd = Command::new(&exe);
            cmd.args(["fake-node", "--server", &url]);
            if let (0, Some(at)) = (first, a.clear_stats_at) {
                cmd.args(["--clear-stats-at", &at.to_string()]);
            }
            if let Some(t) = &trace {
                cmd.arg("--trace").arg(t);
                cmd.args(["--cpu-units", &name(a.cpu_units)]);
            }
            if let Some(t) = &a.cosim.token {
                cmd.env(sync_client::TOKEN_ENV, t);
            }
            // A second signal ends fsin at once: the fake nodes go with it.
            sync_client::signals::die_with_parent(&mut cmd);
            let child = cmd
                .args(["--node", &format!("{first}-{last}")])
                .args(["--workload", &name(workload)])
                .args(["--bytes", &a.bytes.to_string()])
                .args(["--messages", &a.messages.to_string()])
                .args(["--think", &a.think.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .with_context(|| format!("cannot start fake-node {first}"))?;
            children.push(child);
        }
        let report = server.await.context("the server task failed");
        let started = children.len();
        let killed = reap(children, REAP_GRACE);
        if killed > 0 {
            tracing::warn!(
                "{killed} of {started} fake-node processes did not stop within {} s of the end and were killed",
                REAP_GRACE.as_secs()
            );
        }
        anyhow::Ok(report??)
    });
    reporter.finish();
    report
}

/// The command-line spelling of a value.
pub(crate) fn name<V: ValueEnum>(v: V) -> String {
    v.to_possible_value()
        .expect("no skipped values")
        .get_name()
        .to_string()
}

/// `--workload NAME [FILE]`: the workload, and the trace file for `trace`,
/// checked here (file, line and field in the error) for `nodes` nodes.
fn demo_workload(w: &[String], nodes: usize) -> anyhow::Result<(Workload, Option<PathBuf>)> {
    let bad = |value: String, reason: String| ConfigError::BadValue {
        key: "--workload".into(),
        value,
        origin: Origin::CommandLine,
        reason,
    };
    let workload = Workload::from_str(&w[0], true).map_err(|_| {
        bad(
            w[0].clone(),
            "expected idle, pingpong, all2all, uniform or trace FILE".into(),
        )
    })?;
    match (workload, w.get(1)) {
        (Workload::Trace, Some(file)) => {
            fsin_trace::parse(std::path::Path::new(file))
                .and_then(|t| t.check_within(nodes as u32))
                .map_err(|e| bad(file.clone(), e.to_string()))?;
            Ok((workload, Some(PathBuf::from(file))))
        }
        (Workload::Trace, None) => Err(bad(
            "trace".into(),
            "trace needs a file: --workload trace FILE".into(),
        )
        .into()),
        (_, Some(extra)) => Err(bad(
            extra.clone(),
            format!("only the trace workload takes a file, not {}", w[0]),
        )
        .into()),
        (_, None) => Ok((workload, None)),
    }
}

/// How long the fake nodes have to exit after the server ends (it tells
/// them to stop).
const REAP_GRACE: Duration = Duration::from_secs(5);

/// Waits up to `grace` for the fake nodes to exit, then kills the rest;
/// gives how many it killed.
fn reap(mut children: Vec<Child>, grace: Duration) -> usize {
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        children.retain_mut(|c| matches!(c.try_wait(), Ok(None)));
        if children.is_empty() {
            return 0;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let killed = children.len();
    for mut c in children {
        let _ = c.kill();
        let _ = c.wait();
    }
    killed
}

#[derive(clap::Args)]
pub struct SweepArgs {
    /// Workload of the fake nodes (compute-bound ping-pong by default).
    #[arg(long, value_enum, default_value = "pingpong")]
    workload: Workload,
    /// Nodes (fake-node processes).
    #[arg(long, default_value_t = 8)]
    nodes: usize,
    /// Slice lengths to compare, NET:NODE each (same ratio = same bandwidth).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "20:1000,200:10000,2000:100000"
    )]
    slices: Vec<String>,
    /// Network cycles from a frame's last phit to its NIC, in every run; the
    /// exact-mode reference uses slices of this many network cycles.
    #[arg(long, default_value_t = 20)]
    nic_latency: u64,
    /// Ping-pong rounds, or messages per node for uniform.
    #[arg(long, default_value_t = 10)]
    messages: u64,
    /// Node cycles of computation between messages.
    #[arg(long, default_value_t = 20_000)]
    think: u64,
    /// Write sweep.csv, sweep.json and sweep.svg (the plot) into this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print one JSON object (last line of stdout) instead of the table.
    #[arg(long)]
    json: bool,
    /// Network settings for every run, e.g. topo=torus_4_4.
    #[arg(value_name = "KEY=VALUE")]
    settings: Vec<String>,
}

/// Writes a study's `NAME.csv`, `NAME.json` (the points) and `NAME.svg`
/// (the plot; a plot that cannot be drawn fails the command) into `dir`.
pub(crate) fn write_study<P: serde::Serialize>(
    dir: &std::path::Path,
    name: &str,
    csv: &str,
    points: &P,
    svg: Result<String, fsin::study::PlotError>,
) -> anyhow::Result<()> {
    let svg = svg.map_err(|e| anyhow::anyhow!("cannot draw {name}.svg: {e}"))?;
    fsin::study::write(dir, name, csv, points, &[(format!("{name}.svg"), svg)])?;
    Ok(())
}

/// Writes `tradeoff.svg` of `points` into `dir` (nothing without points:
/// a study without an exact reference).
pub(crate) fn write_tradeoff(
    dir: &std::path::Path,
    points: &[fsin::study::Tradeoff],
) -> anyhow::Result<()> {
    if points.is_empty() {
        return Ok(());
    }
    let svg = fsin::study::tradeoff_svg(points)
        .map_err(|e| anyhow::anyhow!("cannot draw tradeoff.svg: {e}"))?;
    std::fs::write(dir.join("tradeoff.svg"), svg)
        .with_context(|| format!("cannot write tradeoff.svg in {}", dir.display()))
}

/// `fsin cosim-sweep`: runs `fsin demo`'s co-simulation (in this process,
/// its typed report) once per slice length and once in exact mode, and
/// compares simulated and wall time.
pub fn sweep(a: SweepArgs) -> anyhow::Result<()> {
    use fsin_cosim::sweep::{self, SweepPoint};
    let mut runs: Vec<(String, String)> = Vec::new();
    let mut first_ratio = None;
    for s in &a.slices {
        let slice = parse_slice("--slices", s)?;
        first_ratio.get_or_insert(slice);
        runs.push(("lockstep".into(), slice.to_string()));
    }
    if let Some(SliceRatio { net, node }) = first_ratio {
        let l = a.nic_latency.max(1);
        if !(node * l).is_multiple_of(net) {
            return Err(ConfigError::BadValue {
                key: "--nic-latency".into(),
                value: l.to_string(),
                origin: Origin::CommandLine,
                reason: format!(
                    "the exact reference slice ({l} network cycles) must be a whole number of node cycles at {net}:{node}"
                ),
            }
            .into());
        }
        runs.push(("exact".into(), format!("{l}:{}", node * l / net)));
    }
    let mut points = Vec::new();
    let mut interrupted = None;
    for (mode, slice) in &runs {
        let mut demo = DemoArgs::defaults();
        demo.workload = vec![name(a.workload)];
        demo.messages = a.messages;
        demo.think = a.think;
        demo.cosim.nodes = Some(a.nodes);
        demo.cosim.mode = Some(mode.clone());
        demo.cosim.slice = Some(slice.clone());
        demo.cosim.settings = vec![format!("nic_latency={}", a.nic_latency)];
        demo.cosim.settings.extend(a.settings.iter().cloned());
        let r = run_demo(&demo)?;
        if !r.ok && r.end_reason.starts_with("interrupted") {
            // The points before it are reported; this one is not finished.
            interrupted = Some(format!(
                "{} during the {mode} run at slice {slice}",
                r.end_reason
            ));
            break;
        }
        if !r.ok {
            anyhow::bail!("the {mode} run at slice {slice} failed: {}", r.end_reason);
        }
        let app_cycles = r.app_cycles.unwrap_or(0);
        let clock = r.node_cycles as f64 / r.simulated_s.max(f64::MIN_POSITIVE);
        points.push(SweepPoint {
            mode: r.mode,
            slice_net_cycles: r.slice_net_cycles,
            slice_node_cycles: r.slice_node_cycles,
            slices: r.slices,
            app_cycles,
            app_s: app_cycles as f64 / clock,
            frame_latency_avg: r.frame_latency_avg,
            wall_s: r.wall_s,
        });
        if !a.json {
            eprintln!("{mode} {slice}: {} slices, {:.3} s", r.slices, r.wall_s);
        }
    }
    if let Some(dir) = &a.out {
        write_study(
            dir,
            "sweep",
            &sweep::csv(&points),
            &points,
            sweep::svg(&points),
        )?;
        write_tradeoff(dir, &sweep::tradeoff(&points))?;
    }
    if a.json {
        println!(
            "{}",
            serde_json::json!({ "points": points, "interrupted": interrupted })
        );
    } else {
        print!("{}", sweep::table(&points));
    }
    match interrupted {
        None => Ok(()),
        Some(why) => {
            eprintln!(
                "fsin: {why}: the {} points before it are reported",
                points.len()
            );
            Err(RunFailed { code: 1 }.into())
        }
    }
}
