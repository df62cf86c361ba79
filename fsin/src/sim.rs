//! TrGen's run methodology on top of the engine (INSEE paper, section 3.2.1):
//! a warm-up phase without statistics, a convergence phase (windows of
//! `conv_period` cycles until three consecutive windows each change
//! accepted load and mean latency by less than `conv_thres` relative to the
//! previous window, or `max_conv_time` cycles pass), then `nsamples`
//! batches of `sample_size` cycles whose statistics make the report. The
//! fixed-length mode (`cycles=N`) instead measures N cycles from the start.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::Serialize;

use crate::config::{Compat, Config, Pattern, TopoKind};
use crate::drive::{drive, Feed, RunPhase, RunStatus};
use crate::engine::{Delivered, Network, NewPacket};
use crate::stats::detail::Detail;
use crate::stats::{Counters, Summary};
use crate::traffic::bernoulli::{insee_bimodal_load, Bernoulli};
use crate::traffic::pattern::{
    self, ByDistance, Distribute, HotRegion, HotSpot, Local, Permuted, Semi, Uniform,
};
use crate::traffic::{Observer, TrafficSource};

/// Consecutive converged windows that end the convergence phase.
const CONVERGED_WINDOWS: u32 = 3;

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
    pub nodes: usize,
    /// Offered load, phits/node/cycle (the `load` key).
    pub offered_load: f64,
    /// Whether the convergence phase converged (always true with `cycles=N`).
    pub converged: bool,
    /// Cycles spent in warm-up and convergence before measuring.
    pub unmeasured_cycles: u64,
    /// Statistics over the measured phase (all batches pooled).
    #[serde(flatten)]
    pub measured: Summary,
    /// Standard deviation of accepted load across batches.
    pub accepted_load_batch_std: f64,
    /// Standard deviation of mean latency across batches.
    pub latency_batch_std: f64,
    /// Per-batch statistics.
    pub batches: Vec<Summary>,
    /// Partial results every `pinterval` cycles (all phases), with the
    /// cycle at which each ends.
    pub partials: Vec<Partial>,
    /// The configuration as `key=value` pairs (enough to repeat the run).
    pub config: serde_json::Map<String, serde_json::Value>,
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
    pub app: Option<crate::workload::AppSummary>,
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
    /// statistics and batches: converged, nothing unmeasured, offered load
    /// `load`; callers override what differs.
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
            offered_load: cfg.load,
            converged: true,
            unmeasured_cycles: 0,
            measured,
            accepted_load_batch_std: batch_std(&batches, |b| b.accepted_load),
            latency_batch_std: batch_std(&batches, |b| b.latency_avg),
            batches,
            partials: Vec::new(),
            config: config_map(cfg),
            files: Vec::new(),
            shot_cycles: Vec::new(),
            app: None,
            network_deadlock: None,
            interrupted: None,
        }
    }
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
    #[serde(flatten)]
    pub summary: Summary,
}

/// Receiver of partial results.
pub type PartialSink = Box<dyn FnMut(&Partial)>;

/// Set (by a signal handler) to the number of the signal that asks a run
/// to stop early: SIGINT, SIGTERM or SIGHUP; 0 while it may go on.
pub type StopFlag = Arc<AtomicUsize>;

/// A [`StopFlag`] set by SIGINT, SIGTERM and SIGHUP; a second signal ends
/// the process at once (exit 130), for a run that does not stop.
///
/// # Errors
/// A handler cannot be installed.
pub fn stop_on_signals() -> std::io::Result<StopFlag> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let flag = StopFlag::default();
    let seen = Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&seen))?;
        signal_hook::flag::register(sig, Arc::clone(&seen))?;
        signal_hook::flag::register_usize(sig, Arc::clone(&flag), sig as usize)?;
    }
    Ok(flag)
}

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
    Workload(#[from] crate::workload::WorkloadError),
    /// The `plevel` outputs cannot be written.
    #[error("plevel outputs: {0}")]
    Detail(#[from] std::io::Error),
    /// The network cannot be built (a specification the configuration
    /// layer would have refused).
    #[error(transparent)]
    Model(#[from] fsin_model::ModelError),
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
        Some(dir) if cfg.plevel != 0 => Detail::new(cfg.plevel, dir, net).map(Some),
        _ => Ok(None),
    }
}

/// The spatial pattern a configuration asks for, over `nodes` nodes.
pub fn pattern_for(cfg: &Config, nodes: usize) -> Box<dyn pattern::Pattern> {
    let n = nodes as u32;
    let nx = cfg.dims[0];
    match cfg.tpattern {
        // A trace run's own traffic comes from its tasks (crate::workload);
        // its independent sources are uniform, as here.
        Pattern::Uniform | Pattern::Trace => Box::new(Uniform { nodes: n }),
        Pattern::HotRegion => Box::new(HotRegion { nodes: n }),
        Pattern::HotSpot => Box::new(HotSpot { nodes: n }),
        Pattern::Semi => Box::new(Semi { nodes: n, nx }),
        Pattern::Distribute { random_start } => {
            let mut rng = Pcg64Mcg::seed_from_u64(cfg.rseed ^ 0x5d15_7e1b);
            Box::new(Distribute::new(n, random_start, &mut rng))
        }
        Pattern::Permutation(p) if cfg.compat == Compat::Insee => {
            Box::new(Permuted::insee(p, n, nx))
        }
        Pattern::Permutation(p) => Box::new(Permuted::new(p, n, nx)),
        Pattern::Local => Box::new(Local {
            dims: cfg.dims.clone(),
        }),
        Pattern::Distance { .. } => Box::new(ByDistance::new(
            &cfg.dims,
            cfg.topo == TopoKind::Torus,
            &cfg.distance_weights,
        )),
    }
}

/// The traffic source a configuration asks for.
pub fn traffic_for(cfg: &Config, nodes: usize) -> Box<dyn TrafficSource> {
    bernoulli(cfg, nodes as u32, pattern_for(cfg, nodes))
}

/// Bernoulli sources at the `n` nodes with `pattern`, at the configured
/// load and packet length.
fn bernoulli<P: pattern::Pattern + 'static>(
    cfg: &Config,
    n: u32,
    pattern: P,
) -> Box<dyn TrafficSource> {
    Box::new(
        Bernoulli::with_messages(
            n,
            if cfg.compat == Compat::Insee {
                insee_bimodal_load(cfg.load, cfg.longmessages, cfg.lng_msg_ratio)
            } else {
                cfg.load
            },
            cfg.plength,
            pattern,
            cfg.rseed,
            0,
            cfg.longmessages,
            cfg.lng_msg_ratio,
        )
        .with_trigger(n, cfg.trigger_rate, cfg.triggered.0, cfg.triggered.1),
    )
}

/// Every source blocked: global congestion control holds generation back
/// (INSEE's `data_generation` returns at once while congested).
struct Throttled;

impl crate::traffic::NodeState for Throttled {
    fn blocked(&self, _node: u32) -> bool {
        true
    }
}

/// Transit buffer capacity of the network in packets (INSEE's
/// `net_capacity`: routers x ports x VCs x queue length).
fn transit_capacity(net: &Network, cfg: &Config) -> u64 {
    let topo = net.topology();
    (topo.routers() * topo.ports()) as u64 * u64::from(cfg.nchan) * u64::from(cfg.tql)
}

/// A traffic source as a [`Feed`], with INSEE's global congestion control.
struct Synthetic {
    traffic: Box<dyn TrafficSource>,
    /// Whether the source reacts to deliveries (reactive traffic).
    feed: bool,
    /// Global congestion control: limit in packets in the network, and
    /// the count last measured, with the cycle of the next measurement
    /// and the measurement period.
    cc_limit: Option<u64>,
    cc_measured: u64,
    cc_next: u64,
    cc_period: u64,
    buf: Vec<(u32, u32)>,
}

impl Feed for Synthetic {
    /// Nothing once the network has deadlocked.
    fn inject_due(&mut self, now: u64, net: &mut Network, mut detail: Option<&mut Detail>) -> bool {
        if net.deadlock().is_some() {
            return false;
        }
        self.buf.clear();
        let mut throttled = false;
        if let Some(limit) = self.cc_limit {
            if now >= self.cc_next {
                self.cc_measured = net.in_flight();
                self.cc_next = (now / self.cc_period + 1) * self.cc_period;
            }
            throttled = self.cc_measured > limit;
        }
        if throttled {
            self.traffic.generate(now, &Throttled, &mut self.buf);
        } else {
            self.traffic.generate(now, &*net, &mut self.buf);
        }
        for &(src, dst) in &self.buf {
            if let Some(d) = detail.as_deref_mut() {
                d.generated(net, src, dst);
            }
            net.inject(NewPacket { src, dst, tag: 0 })
                .expect("traffic sources address existing nodes");
        }
        !self.buf.is_empty()
    }

    fn finished(&self, net: &Network) -> bool {
        net.deadlock().is_some()
    }

    fn next_due(&self, now: u64) -> Option<u64> {
        self.traffic.next_event(now + 1)
    }

    fn delivered(&mut self, packet: &Delivered) {
        if self.feed {
            self.traffic.delivered(packet);
        }
    }
}

/// Drives an engine and a traffic source; accumulates windows.
struct Driver<'a> {
    net: Network,
    source: Synthetic,
    detail: Option<Detail>,
    cfg: &'a Config,
    partial: Counters,
    next_partial: u64,
    partials: Vec<Partial>,
    opts: RunOptions,
}

impl Driver<'_> {
    /// Runs until cycle `target`; returns the counters of those cycles.
    fn run_until(&mut self, target: u64) -> Counters {
        let mut window = Counters::default();
        while self.net.now() < target && self.going() {
            let stop = if self.cfg.pinterval > 0 {
                target.min(self.next_partial)
            } else {
                target
            };
            let opts = &self.opts;
            drive(
                &mut self.net,
                &mut self.source,
                self.detail.as_mut(),
                stop,
                |net, _| {
                    opts.set_cycle(net.now());
                    opts.stopped().is_none()
                },
            );
            let chunk = std::mem::take(&mut self.net.counters);
            window.merge(&chunk);
            if self.cfg.pinterval > 0 {
                self.partial.merge(&chunk);
                if self.net.now() == self.next_partial {
                    let p = Partial {
                        at: self.net.now(),
                        summary: std::mem::take(&mut self.partial).summary(self.net.nodes()),
                    };
                    if let Some(f) = self.opts.on_partial.as_mut() {
                        f(&p);
                    }
                    self.partials.push(p);
                    self.next_partial += self.cfg.pinterval;
                }
            }
        }
        window
    }

    /// Neither deadlocked nor stopped by a signal.
    fn going(&self) -> bool {
        self.net.deadlock().is_none() && self.opts.stopped().is_none()
    }
}

/// Runs a configuration to completion: synthetic traffic with TrGen's
/// methodology, or an application workload (traces, kernels) to its end
/// ([`crate::workload::run`]).
///
/// # Errors
/// [`RunError`]: an application workload that cannot start, or `plevel`
/// outputs that cannot be written.
pub fn run(cfg: &Config, opts: RunOptions) -> Result<Report, RunError> {
    if cfg.app.active() {
        return crate::workload::run(cfg, opts);
    }
    if cfg.shotmode {
        return run_shots(cfg, &opts);
    }
    let net = Network::new(cfg)?;
    let traffic = traffic_for(cfg, net.nodes());
    run_with(cfg, net, traffic, opts)
}

/// Runs an engine fed by `traffic` with TrGen's methodology.
///
/// # Errors
/// The `plevel` outputs cannot be written.
pub fn run_with(
    cfg: &Config,
    net: Network,
    traffic: Box<dyn TrafficSource>,
    opts: RunOptions,
) -> Result<Report, RunError> {
    let started = Instant::now();
    let nodes = net.nodes();
    let mut net = net;
    let feed = traffic.wants_deliveries();
    let detail = detail_for(cfg, &opts, &net)?;
    net.record_deliveries(feed || detail.as_ref().is_some_and(Detail::needs_deliveries));
    let cc_limit = (cfg.global_cc < 100.0)
        .then(|| (transit_capacity(&net, cfg) as f64 * cfg.global_cc / 100.0) as u64);
    let mut d = Driver {
        net,
        source: Synthetic {
            traffic,
            feed,
            cc_limit,
            cc_measured: 0,
            cc_next: 0,
            cc_period: cfg.cc_period(),
            buf: Vec::new(),
        },
        detail,
        cfg,
        partial: Counters::default(),
        next_partial: cfg.pinterval,
        partials: Vec::new(),
        opts,
    };
    let mut converged = true;
    let mut batches = Vec::new();
    let mut measured = Counters::default();
    let unmeasured;
    if cfg.cycles > 0 {
        unmeasured = 0;
        d.opts.set_phase(RunPhase::Measuring, Some(cfg.cycles));
        measured = d.run_until(cfg.cycles);
        batches.push(measured.summary(nodes));
    } else {
        d.opts.set_phase(RunPhase::WarmUp, None);
        d.run_until(cfg.warm_up_period);
        d.opts.set_phase(RunPhase::Convergence, None);
        converged = converge(&mut d);
        if cfg.compat == Compat::Insee && cfg.sample_size > 0 {
            // INSEE's "adjust for equal sample acquiring": batches start on
            // a multiple of the batch length (batch.c, `convergency`).
            let start = d.net.now().next_multiple_of(cfg.sample_size);
            d.run_until(start);
        }
        unmeasured = d.net.now();
        d.opts.set_phase(
            RunPhase::Sampling,
            Some(unmeasured + cfg.nsamples * cfg.sample_size),
        );
        for _ in 0..cfg.nsamples {
            if !d.going() {
                break;
            }
            let target = d.net.now() + cfg.sample_size;
            let w = d.run_until(target);
            batches.push(w.summary(nodes));
            measured.merge(&w);
        }
    }
    let files = finish_detail(d.detail.take(), &d.net)?;
    let mut summary = measured.summary(nodes);
    if cfg.compat == Compat::Insee && batches.len() > 1 {
        insee_average(&mut summary, &batches);
    }
    Ok(Report {
        network_deadlock: d.net.deadlock().cloned(),
        interrupted: d.opts.stopped(),
        converged,
        unmeasured_cycles: unmeasured,
        partials: std::mem::take(&mut d.partials),
        files,
        ..Report::base(cfg, nodes, started, d.net.now(), summary, batches)
    })
}

/// INSEE's `AVG` figures (`compat=insee`): the latencies (mean and
/// standard deviation, from generation and from injection) and the mean
/// distance of `summary` become the means of the `batches`' figures,
/// instead of figures over every packet of the batches pooled (batches
/// deliver different numbers of packets, so the two differ slightly).
/// Loads and counts are the same either way; maxima stay the pooled ones.
fn insee_average(summary: &mut Summary, batches: &[Summary]) {
    let mean = |f: fn(&Summary) -> f64| batches.iter().map(f).sum::<f64>() / batches.len() as f64;
    summary.latency_avg = mean(|b| b.latency_avg);
    summary.latency_std = mean(|b| b.latency_std);
    summary.inj_latency_avg = mean(|b| b.inj_latency_avg);
    summary.inj_latency_std = mean(|b| b.inj_latency_std);
    summary.avg_distance = mean(|b| b.avg_distance);
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

/// Bursty traffic (INSEE paper, section 3.2.3; INSEE's shot mode): in each of
/// `nsamples` bursts every node generates `shotsize` packets, one per cycle
/// while its injection buffers take them (as fast as it can), to the
/// pattern's destinations (a node the pattern gives no destination sends
/// nothing); the burst ends when every packet has been consumed, and the
/// next starts in the following cycle. Each burst is one batch of the
/// report, and `shot_cycles` gives its length.
fn run_shots(cfg: &Config, opts: &RunOptions) -> Result<Report, RunError> {
    let started = Instant::now();
    let mut net = Network::new(cfg)?;
    let mut detail = detail_for(cfg, opts, &net)?;
    net.record_deliveries(detail.is_some());
    let nodes = net.nodes();
    let mut shot = Shot {
        pattern: pattern_for(cfg, nodes),
        trial: (cfg.compat == Compat::Insee)
            .then(|| (cfg.load / f64::from(cfg.plength)).clamp(0.0, 1.0)),
        rng: Pcg64Mcg::seed_from_u64(cfg.rseed ^ 0x5407_3e11),
        left: vec![0u32; nodes],
        active: Vec::with_capacity(nodes),
        generated: 0,
    };
    let mut batches = Vec::new();
    let mut shot_cycles = Vec::new();
    let mut all = Counters::default();
    opts.set_phase(RunPhase::Measuring, None);
    for _ in 0..cfg.nsamples {
        if opts.stopped().is_some() {
            break;
        }
        let start = net.now();
        shot.left.fill(cfg.shotsize);
        shot.active.clear();
        shot.active.extend(0..nodes as u32);
        shot.generated = 0;
        drive(&mut net, &mut shot, detail.as_mut(), u64::MAX, |net, _| {
            opts.set_cycle(net.now());
            true
        });
        let window = std::mem::take(&mut net.counters);
        shot_cycles.push(net.now() - start);
        batches.push(window.summary(nodes));
        all.merge(&window);
    }
    let files = finish_detail(detail, &net)?;
    Ok(Report {
        files,
        shot_cycles,
        interrupted: opts.stopped(),
        ..Report::base(cfg, nodes, started, net.now(), all.summary(nodes), batches)
    })
}

/// One burst of shot mode as a [`Feed`]: each node still `active` sends
/// its next packet whenever its injection buffers are empty, `left` more
/// in all; the burst is over when every packet generated was consumed.
/// With `trial` (`compat=insee`), a node with room sends only when a
/// Bernoulli trial of that probability (`load / plength`) succeeds, as
/// INSEE's `datagen_oneshot` does.
struct Shot {
    pattern: Box<dyn pattern::Pattern>,
    trial: Option<f64>,
    rng: Pcg64Mcg,
    left: Vec<u32>,
    active: Vec<u32>,
    generated: u64,
}

impl Feed for Shot {
    fn inject_due(
        &mut self,
        _now: u64,
        net: &mut Network,
        mut detail: Option<&mut Detail>,
    ) -> bool {
        let before = self.generated;
        let mut k = 0;
        while k < self.active.len() {
            let n = self.active[k];
            if net.source_backlog(n) == 0 && self.trial.is_none_or(|p| self.rng.gen_bool(p)) {
                match self.pattern.destination(n, &mut self.rng) {
                    Some(dst) => {
                        if let Some(d) = detail.as_deref_mut() {
                            d.generated(net, n, dst);
                        }
                        net.inject(NewPacket {
                            src: n,
                            dst,
                            tag: 0,
                        })
                        .expect("patterns address existing nodes");
                        self.generated += 1;
                        self.left[n as usize] -= 1;
                    }
                    None => self.left[n as usize] = 0,
                }
            }
            if self.left[n as usize] == 0 {
                self.active.swap_remove(k);
            } else {
                k += 1;
            }
        }
        self.generated > before
    }

    fn finished(&self, net: &Network) -> bool {
        self.active.is_empty() && net.counters.delivered == self.generated
    }

    /// A node still active is never idle, so this is not asked.
    fn next_due(&self, now: u64) -> Option<u64> {
        Some(now + 1)
    }

    fn delivered(&mut self, _packet: &Delivered) {}
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

/// The convergence phase; returns whether it converged in time.
fn converge(d: &mut Driver<'_>) -> bool {
    let cfg = d.cfg;
    let nodes = d.net.nodes();
    let deadline = d.net.now() + cfg.max_conv_time;
    let mut prev: Option<Summary> = None;
    let mut in_row = 0;
    while d.net.now() < deadline && d.going() {
        let target = (d.net.now() + cfg.conv_period).min(deadline);
        let cur = d.run_until(target).summary(nodes);
        let close = |a: f64, b: f64| a > 0.0 && ((a - b) / a).abs() < cfg.conv_thres;
        let ok = prev.as_ref().is_some_and(|p| {
            close(cur.accepted_load, p.accepted_load) && close(cur.latency_avg, p.latency_avg)
        });
        in_row = if ok { in_row + 1 } else { 0 };
        if in_row >= CONVERGED_WINDOWS {
            return true;
        }
        prev = Some(cur);
    }
    false
}
