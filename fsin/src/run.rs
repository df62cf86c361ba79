//! What every run of the methodology shares, whatever drives it
//! (synthetic traffic in [`crate::sim`], traces and kernels in
//! [`crate::workload`], sweeps in [`crate::sweep`]): the [`Report`], the
//! [`RunOptions`] that do not change results, the errors, and the `plevel`
//! outputs' collector.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use fsin_trace::TraceError;
use serde::Serialize;

use crate::config::Config;
use crate::drive::{RunPhase, RunStatus};
use crate::network::Network;
use crate::stats::detail::Detail;
use crate::stats::Summary;
use crate::traffic::placement::PlacementError;
use crate::traffic::replay::BlockedTask;

/// Result of a run: the measured-phase summary plus how it was obtained.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Cycles simulated in all phases (JSON `total_cycles`; the JSON
    /// `cycles` is the measured phase's, from [`Report::measured`]).
    #[serde(rename = "total_cycles")]
    pub cycles: u64,
    /// Wall-clock seconds.
    pub wall_s: f64,
    /// Simulated cycles per wall-clock second.
    pub cycles_per_s: f64,
    /// Nodes of the network.
    pub nodes: usize,
    /// Offered load, phits/node/cycle (the `load` key).
    pub offered_load: f64,
    /// How convergence was judged: JSON `converged` (true, false, or null
    /// when not checked) and `convergence` (its reason).
    #[serde(flatten)]
    pub convergence: Convergence,
    /// Cycles spent in warm-up and convergence before measuring.
    pub unmeasured_cycles: u64,
    /// Statistics over the measured phase (all batches pooled).
    #[serde(flatten)]
    pub measured: Summary,
    /// Standard deviation of accepted load across batches.
    pub accepted_load_batch_std: f64,
    /// Standard deviation of mean latency across batches.
    pub latency_batch_std: f64,
    /// Half-width of the 95% confidence interval of the mean latency, in
    /// cycles, from the batches' means (Student's t, n - 1 degrees of
    /// freedom; [`crate::stats::interval`]); null with fewer than two
    /// batches.
    pub latency_ci95: Option<f64>,
    /// Half-width of the 95% confidence interval of the accepted load,
    /// phits/node/cycle, from the batches' (as `latency_ci95`).
    pub accepted_load_ci95: Option<f64>,
    /// Per-batch statistics.
    pub batches: Vec<Summary>,
    /// Partial results every `pinterval` cycles (all phases), with the
    /// cycle at which each ends.
    pub partials: Vec<Partial>,
    /// The configuration as `key=value` pairs (enough to repeat the run).
    pub config: serde_json::Map<String, serde_json::Value>,
    /// The routing in use, in words ([`crate::config::Config::routing_in_use`]).
    pub routing: String,
    /// What the user should know about the settings, e.g. a file
    /// topology's routing that throws throughput away
    /// ([`crate::network_facts::routing_warning`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Files written for `plevel` (paths).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// Bursty traffic (`shotmode=1`): cycles each burst took, from its
    /// first packet to the consumption of its last.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shot_cycles: Vec<u64>,
    /// Application workloads (traces, kernels): execution time, messages,
    /// deadlock and blocked tasks.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub app: Option<AppSummary>,
    /// The network deadlocked (see [`crate::deadlock`]): the run stopped
    /// there, with the cycle of waiting channels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_deadlock: Option<crate::deadlock::NetworkDeadlock>,
    /// A signal stopped the run early (e.g. "SIGTERM"): the report covers
    /// the cycles simulated until then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<&'static str>,
}

impl Report {
    /// A report of a run of `cfg` on `nodes` nodes that started at
    /// `started` and simulated `cycles` cycles, with the measured
    /// statistics and batches (and the intervals of their means):
    /// convergence not checked, nothing unmeasured, offered load `load`;
    /// callers override what differs.
    pub fn base(
        cfg: &Config,
        nodes: usize,
        started: Instant,
        cycles: u64,
        measured: Summary,
        batches: Vec<Summary>,
    ) -> Report {
        let wall_s = started.elapsed().as_secs_f64();
        Report {
            cycles,
            wall_s,
            cycles_per_s: cycles as f64 / wall_s.max(1e-9),
            nodes,
            offered_load: cfg.traffic.load,
            convergence: Convergence::NotChecked,
            unmeasured_cycles: 0,
            measured,
            accepted_load_batch_std: batch_std(&batches, |b| b.accepted_load),
            latency_batch_std: batch_std(&batches, |b| b.latency_avg),
            latency_ci95: batch_ci95(&batches, |b| b.latency_avg).map(|(_, h)| h),
            accepted_load_ci95: batch_ci95(&batches, |b| b.accepted_load).map(|(_, h)| h),
            batches,
            partials: Vec::new(),
            config: config_map(cfg),
            routing: cfg.routing_in_use(),
            warnings: crate::network_facts::routing_warning(cfg)
                .into_iter()
                .collect(),
            files: Vec::new(),
            shot_cycles: Vec::new(),
            app: None,
            network_deadlock: None,
            interrupted: None,
        }
    }

    /// Why the run can never finish, if it cannot (the command's exit 3):
    /// the network deadlocked (with its cycle of waiting channels), or
    /// every unfinished task of the workload waits for a message that is
    /// not in the network.
    pub fn cannot_finish(&self) -> Option<String> {
        if let Some(dl) = &self.network_deadlock {
            return Some(dl.to_string());
        }
        self.app.as_ref().filter(|a| a.deadlock).map(|_| {
            "the workload can never finish: every unfinished task waits for a message that is not in the network (deadlock)".to_string()
        })
    }
}

/// How a run's convergence was judged. In JSON two keys: `converged`
/// (true, false, or null when not checked) and `convergence` (the
/// variant's name in snake case).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Convergence {
    /// The convergence phase's windows settled and (`compat=none`) both
    /// 95% intervals are within `conv_thres` of their means.
    Converged,
    /// The windows did not settle before `max_conv_time` (past
    /// saturation, latency keeps growing): measured anyway.
    Unsettled,
    /// The windows settled, but after `max_samples` batches an interval
    /// is still wider than `conv_thres` of its mean.
    Wide,
    /// Not judged: a fixed-length run (`cycles=N`: no warm-up), bursts
    /// (`shotmode=1`), an application workload run to its end.
    NotChecked,
}

impl Convergence {
    /// Whether the run converged; `None` when it was not checked.
    pub fn converged(self) -> Option<bool> {
        match self {
            Convergence::Converged => Some(true),
            Convergence::Unsettled | Convergence::Wide => Some(false),
            Convergence::NotChecked => None,
        }
    }

    /// The JSON `convergence` value.
    pub fn name(self) -> &'static str {
        match self {
            Convergence::Converged => "converged",
            Convergence::Unsettled => "unsettled",
            Convergence::Wide => "wide",
            Convergence::NotChecked => "not_checked",
        }
    }
}

impl Serialize for Convergence {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("converged", &self.converged())?;
        m.serialize_entry("convergence", self.name())?;
        m.end()
    }
}

/// Mean and half-width of the 95% interval of the batches' figure `f`
/// (the method of batch means); `None` with fewer than two batches.
pub(crate) fn batch_ci95(batches: &[Summary], f: fn(&Summary) -> f64) -> Option<(f64, f64)> {
    let xs: Vec<f64> = batches.iter().map(f).collect();
    crate::stats::interval::mean_half_width(&xs, 0.95)
}

/// The configuration as a JSON map of `key=value` strings.
pub fn config_map(cfg: &Config) -> serde_json::Map<String, serde_json::Value> {
    cfg.settings()
        .into_iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::String(v)))
        .collect()
}

/// Statistics of one `pinterval` window.
#[derive(Debug, Clone, Serialize)]
pub struct Partial {
    /// Cycle at which the window ends.
    pub at: u64,
    /// The statistics up to then.
    #[serde(flatten)]
    pub summary: Summary,
}

/// Receiver of partial results.
pub type PartialSink = Box<dyn FnMut(&Partial)>;

/// Set (by a signal handler) to the number of the signal that asks a run
/// to stop early: SIGINT, SIGTERM or SIGHUP; 0 while it may go on. The
/// `fsin` command's is `sync_client::signals::stop_flag()`, whose handlers
/// also end the process at once on a second signal (exit 130).
pub type StopFlag = Arc<AtomicUsize>;

/// Options of a run that do not change its results (unless it is stopped).
#[derive(Default)]
pub struct RunOptions {
    /// Polled while the run goes: once nonzero, the run stops where it is
    /// and reports what it has simulated, with [`Report::interrupted`].
    pub stop: Option<StopFlag>,
    /// Where the run publishes its phase and cycle as it goes, for a
    /// progress line drawn by another thread.
    pub progress: Option<Arc<RunStatus>>,
    /// Called with each partial result as it is produced.
    pub on_partial: Option<PartialSink>,
    /// Directory for the `plevel` outputs ([`crate::stats::detail`]).
    pub detail_dir: Option<std::path::PathBuf>,
    /// `--timeline`: the run's timeline, written as it goes.
    pub timeline: Option<TimelineSpec>,
}

/// Where and how a run writes its timeline (`--timeline`).
#[derive(Debug, Clone)]
pub struct TimelineSpec {
    /// The file, its format, size limit, span and chart.
    pub target: crate::timeline::Target,
    /// Cycles per window of the network's counters (`timeline_window`).
    pub window: u64,
}

impl RunOptions {
    /// Publishes that the run entered `phase`, which ends it at cycle
    /// `end` when that is known ([`RunOptions::progress`]).
    pub fn set_phase(&self, phase: RunPhase, end: Option<u64>) {
        if let Some(status) = &self.progress {
            status.set_phase(phase, end);
        }
    }

    /// Publishes that the network has simulated `cycle` cycles.
    pub fn set_cycle(&self, cycle: u64) {
        if let Some(status) = &self.progress {
            status.set_cycle(cycle);
        }
    }

    /// The signal that asked the run to stop, if one did.
    pub fn stopped(&self) -> Option<&'static str> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        match self.stop.as_ref()?.load(Ordering::Relaxed) {
            0 => None,
            n if n == SIGINT as usize => Some("SIGINT"),
            n if n == SIGTERM as usize => Some("SIGTERM"),
            n if n == SIGHUP as usize => Some("SIGHUP"),
            _ => Some("a signal"),
        }
    }
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The application workload cannot start (see its variants).
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    /// The `plevel` outputs cannot be written.
    #[error("plevel outputs: {0}")]
    Detail(#[from] std::io::Error),
    /// The network cannot be built (a specification the configuration
    /// layer would have refused).
    #[error(transparent)]
    Model(#[from] fsin_model::ModelError),
    /// No timeline of this run can be made (bad input): a run without
    /// tasks, INSEE's replay, or one over its size limit.
    #[error("--timeline: {0}")]
    TimelineRefused(String),
    /// The timeline cannot be written.
    #[error(transparent)]
    Timeline(#[from] crate::timeline::TimelineError),
}

/// What a [`RunError`] means for its caller, as the command's exit codes
/// say it (docs/contracts.md): the input was bad (exit 2), the workload
/// can never finish (exit 3), or the run failed (exit 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// A trace, placement or network specification that cannot be run.
    BadInput,
    /// A trace whose tasks can never all finish.
    CannotFinish,
    /// The run's outputs could not be written.
    Failed,
}

impl RunError {
    /// What this error means for the caller.
    pub fn verdict(&self) -> Verdict {
        match self {
            RunError::Workload(WorkloadError::Beyond(_)) => Verdict::CannotFinish,
            RunError::Workload(_) | RunError::Model(_) | RunError::TimelineRefused(_) => {
                Verdict::BadInput
            }
            RunError::Detail(_) => Verdict::Failed,
            RunError::Timeline(_) => Verdict::Failed,
        }
    }
}

/// Why an application workload cannot start.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// A trace file that cannot be read or parsed (bad input).
    #[error(transparent)]
    Trace(TraceError),
    /// A trace that names tasks beyond its placement: it can never finish.
    #[error("the workload can never finish: {0}")]
    Beyond(TraceError),
    /// The tasks cannot be placed (bad input).
    #[error("placement: {0}")]
    Placement(#[from] PlacementError),
    /// A frame trace (`fsin qemu --trace-out`) with `compat=insee`, whose
    /// replay has no NIC (bad input).
    #[error("{0} is a frame trace (fsin qemu --trace-out): INSEE's replay (compat=insee) cannot run it; leave compat unset")]
    FramesUnderInsee(String),
}

/// What an application run adds to the report (`exec_cycles` is
/// docs/contracts.md's key).
#[derive(Debug, Clone, Serialize)]
pub struct AppSummary {
    /// The jobs: trace files or the kernel, with their instances.
    pub workload: String,
    /// Tasks replayed (all jobs).
    pub tasks: usize,
    /// Cycles until every task had finished and every message arrived.
    pub exec_cycles: u64,
    /// `exec_cycles` in seconds with `link_bandwidth` (traces paper, 4.3);
    /// for a frame trace, guest seconds (node cycles at `node_clock`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_s: Option<f64>,
    /// The network cycle each task (in job order) ran out of events,
    /// `None` for a task that had not (empty under `compat=insee`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub task_done_cycles: Vec<Option<u64>>,
    /// Messages (frames, for a frame trace) the tasks sent, each copy of a
    /// broadcast ARP request one (`frames_sent` counts it once).
    pub messages_sent: u64,
    /// Messages (frames) delivered whole.
    pub messages_delivered: u64,
    /// An MPI-level replay: the TCP acknowledgements among the frames it
    /// sent (`mpi_tcp_acks`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acks_sent: Option<u64>,
    /// An MPI-level replay: the ARP requests its nodes broadcast when
    /// they opened connections (`mpi_arp`); `messages_sent` counts each
    /// copy, one per other node of the job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arp_requests: Option<u64>,
    /// An MPI-level replay with TCP's timers (`mpi_loss_probe_ns`): the
    /// frames its senders sent again as tail-loss probes (beside the
    /// traced run's `tcp_retransmissions`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp_probes: Option<u64>,
    /// An MPI-level replay with TCP's timers (`mpi_delayed_ack_ns`): of
    /// `acks_sent`, the delayed acknowledgements.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delayed_acks: Option<u64>,
    /// An MPI-level replay: the frames its nodes sent, a broadcast once
    /// (`messages_sent` less the ARP requests' copies, plus the requests):
    /// what `live_frames` counts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frames_sent: Option<u64>,
    /// An MPI-level replay of traces whose headers record it: the frames
    /// the traced runs' guests sent while their ranks ran (from the first
    /// rank's `MPI_Init` exit to the last one's `MPI_Finalize` entry),
    /// to set beside `frames_sent`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live_frames: Option<u64>,
    /// Of `live_frames`, TCP's pure acknowledgements (beside
    /// `acks_sent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live_acks: Option<u64>,
    /// Whether the run ended because the workload can never finish.
    pub deadlock: bool,
    /// Tasks that had not finished at the end (all of them wait on a
    /// receive in a deadlock).
    pub blocked: Vec<BlockedTask>,
    /// `--timeline`: what it holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<crate::timeline::Written>,
}

/// The detail collector of a run, if `plevel` asks for one.
///
/// # Errors
/// The output directory cannot be created.
pub fn detail_for(
    cfg: &Config,
    opts: &RunOptions,
    net: &Network,
) -> std::io::Result<Option<Detail>> {
    match &opts.detail_dir {
        Some(dir) if cfg.method.plevel != 0 => Detail::new(cfg.method.plevel, dir, net).map(Some),
        _ => Ok(None),
    }
}

/// Writes the `plevel` outputs of a finished run; returns their paths.
///
/// # Errors
/// Any I/O error.
pub fn finish_detail(detail: Option<Detail>, net: &Network) -> std::io::Result<Vec<String>> {
    Ok(match detail {
        Some(d) => d
            .finish(net)?
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        None => Vec::new(),
    })
}

/// Standard deviation across batches of one figure.
fn batch_std(batches: &[Summary], f: fn(&Summary) -> f64) -> f64 {
    let n = batches.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let m = batches.iter().map(f).sum::<f64>() / n;
    (batches.iter().map(|b| (f(b) - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
}
