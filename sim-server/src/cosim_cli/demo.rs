//! `fsin demo`: a co-simulation server on loopback and fake-node processes
//! attached to it, run as one session whose adapter is [`FakeNodeProcesses`].

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::ValueEnum;
use fake_node::{NodeCpuUnits, Workload};
use fsin::config::{ConfigError, Origin, Setting};
use fsin_cosim::report::CosimReport;
use fsin_cosim::session::{self, Adapter, EndedEarly, SessionReport};

use super::{config, cosim_reporter, finish, init_logging, name, options, CosimArgs, NoKeys};

#[derive(Clone, clap::Args)]
pub struct DemoArgs {
    /// Workload of the fake nodes: idle, pingpong, all2all, uniform, or
    /// `trace FILE` (causal replay of an FSIN .trc trace).
    #[arg(long, num_args = 1..=2, value_names = ["NAME", "FILE"], default_value = "all2all")]
    pub(super) workload: Vec<String>,
    /// Unit of the CPU (`c`) events of a trace.
    #[arg(long, value_enum, default_value = "cycles")]
    cpu_units: NodeCpuUnits,
    /// Nodes each fake-node process runs (an aggregator client for several
    /// nodes, the Simics paper's two-level synchronisation).
    #[arg(long, default_value_t = 1, value_name = "M")]
    nodes_per_client: usize,
    /// Frame size in bytes, headers included (75 to 9018).
    #[arg(long, default_value_t = 128, value_parser = fake_node::frame_bytes)]
    bytes: usize,
    /// Ping-pong rounds, or messages per node for uniform.
    #[arg(long, default_value_t = 10)]
    pub(super) messages: u64,
    /// Node cycles of processing between messages.
    #[arg(long, default_value_t = 1000)]
    pub(super) think: u64,
    /// Node 0 sends the CLEAR_STATS magic packet at this node cycle (ends
    /// the --warmup phase).
    #[arg(long, value_name = "CYCLE")]
    clear_stats_at: Option<u64>,
    #[command(flatten)]
    pub(super) cosim: CosimArgs,
}

impl DemoArgs {
    /// `fsin demo` with every option at its default (and the token from
    /// FSIN_TOKEN, as the command reads it).
    pub(super) fn defaults() -> DemoArgs {
        use clap::{Args, FromArgMatches};
        let command = DemoArgs::augment_args(clap::Command::new("demo"));
        DemoArgs::from_arg_matches(&command.get_matches_from(["demo"]))
            .expect("every option of fsin demo has a default")
    }
}

/// The fake-node processes of `fsin demo`: one per `per` nodes, each
/// running `workload` (and `trace`'s events for the trace workload).
pub(crate) struct FakeNodeProcesses<'a> {
    args: &'a DemoArgs,
    workload: Workload,
    trace: Option<PathBuf>,
    nodes: usize,
    exe: PathBuf,
    children: Vec<Child>,
}

/// A fake-node process that could not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot start fake-node {first}: {source}")]
pub(crate) struct StartError {
    first: usize,
    source: std::io::Error,
}

impl Adapter for FakeNodeProcesses<'_> {
    type Report = NoKeys;
    type Error = StartError;

    fn start(&mut self, url: &str) -> Result<EndedEarly, StartError> {
        let a = self.args;
        let per = a.nodes_per_client.max(1);
        for first in (0..self.nodes).step_by(per) {
            let last = (first + per).min(self.nodes) - 1;
            let mut cmd = Command::new(&self.exe);
            cmd.args(["fake-node", "--server", url]);
            if let (0, Some(at)) = (first, a.clear_stats_at) {
                cmd.args(["--clear-stats-at", &at.to_string()]);
            }
            if let Some(t) = &self.trace {
                cmd.arg("--trace").arg(t);
                cmd.args(["--cpu-units", &name(a.cpu_units)]);
            }
            if let Some(t) = &a.cosim.token {
                cmd.env(sync_client::TOKEN_ENV, t);
            }
            // A second signal ends fsin at once: the fake nodes go with it.
            sync_client::signals::die_with_parent(&mut cmd);
            // Signals to fsin's process group (Ctrl-C, timeout(1)) are
            // fsin's to handle: it stops its fake nodes through the run.
            std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
            let child = cmd
                .args(["--node", &format!("{first}-{last}")])
                .args(["--workload", &name(self.workload)])
                .args(["--bytes", &a.bytes.to_string()])
                .args(["--messages", &a.messages.to_string()])
                .args(["--think", &a.think.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|source| StartError { first, source })?;
            self.children.push(child);
        }
        Ok(session::never())
    }

    async fn finish(mut self, _run: &CosimReport) -> Result<NoKeys, StartError> {
        let started = self.children.len();
        let killed = reap(std::mem::take(&mut self.children), REAP_GRACE);
        if killed > 0 {
            tracing::warn!(
                "{killed} of {started} fake-node processes did not stop within {} s of the end and were killed",
                REAP_GRACE.as_secs()
            );
        }
        Ok(NoKeys {})
    }
}

impl Drop for FakeNodeProcesses<'_> {
    /// A run that failed leaves no fake node behind.
    fn drop(&mut self) {
        reap(std::mem::take(&mut self.children), Duration::ZERO);
    }
}

/// `fsin demo`.
pub fn demo(a: DemoArgs) -> anyhow::Result<()> {
    init_logging("warn");
    let report = run_demo(&a)?;
    finish(&a.cosim, &report, "")
}

/// Runs `fsin demo`'s co-simulation (a server and its fake-node processes
/// on loopback) and gives its report.
pub(crate) fn run_demo(a: &DemoArgs) -> anyhow::Result<SessionReport<NoKeys>> {
    let cfg = config(&a.cosim, &[Setting::Torus(vec![4, 4])])?;
    let opts = options(&a.cosim, cfg)?;
    let (workload, trace) = demo_workload(&a.workload, opts.nodes)?;
    let nodes = FakeNodeProcesses {
        args: a,
        workload,
        trace,
        nodes: opts.nodes,
        exe: crate::args::own_exe()?,
        children: Vec::new(),
    };
    let reporter = cosim_reporter("fsin demo", &a.cosim, &opts)?;
    let report = super::runtime()?.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("cannot listen on loopback")?;
        anyhow::Ok(session::run(opts, listener, nodes, super::interrupted()).await?)
    });
    reporter.finish();
    report
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
