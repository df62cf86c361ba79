//! TrGen's run methodology on top of the engine (INSEE paper, section 3.2.1):
//! a warm-up phase without statistics, a convergence phase (windows of
//! `conv_period` cycles until three consecutive windows each change
//! accepted load and mean latency from the previous window by less than
//! `conv_thres` of their own (INSEE's batch.c), or `max_conv_time` cycles
//! pass), then `nsamples`
//! batches of `sample_size` cycles whose statistics make the report. The
//! fixed-length mode (`cycles=N`) instead measures N cycles from the start
//! and judges nothing.
//!
//! `compat=none` judges convergence on the noise as well (fsin-rs; docs/
//! model.md, "Warm-up, convergence and confidence intervals"): two
//! windows also agree when they differ by less than 1.96 standard errors
//! of their difference (a window of 200 packets cannot hold its accepted
//! load to 5%), and batches are added after `nsamples`, up to
//! `max_samples`, until the 95% intervals of mean latency and accepted
//! load (the method of batch means) are within `conv_thres` of their
//! means.

use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::config::{Compat, Config, PatternKind, TopoKind};
use crate::drive::{run_feed, Feed, RunPhase};
use crate::engine::{Delivered, NewPacket};
use crate::network::Network;
use crate::run::{
    batch_ci95, detail_for, finish_detail, Convergence, Partial, Report, RunError, RunOptions,
};
use crate::stats::detail::Detail;
use crate::stats::{interval, Counters, Summary};
use crate::traffic::bernoulli::{insee_bimodal_load, Bernoulli};
use crate::traffic::pattern::{
    self, ByDistance, Distribute, HotRegion, HotSpot, Local, Permuted, Semi, Uniform,
};
use crate::traffic::{Observer, TrafficSource};

/// The cycles a run of `cfg` simulates, least and most: `cycles=N`
/// exactly; TrGen's phases from warm-up, the shortest convergence (the
/// first window and three that agree) and `nsamples` batches, to warm-up,
/// `max_conv_time` and `max_samples` batches (`compat=none`). `None` for
/// bursts and workloads, which end when their traffic does.
pub fn expected_cycles(cfg: &Config) -> Option<(u64, u64)> {
    let m = &cfg.method;
    if cfg.traffic.shotmode || cfg.traffic.app.active() {
        return None;
    }
    if m.cycles > 0 {
        return Some((m.cycles, m.cycles));
    }
    let batches = if cfg.net.compat == Compat::Insee {
        m.nsamples
    } else {
        m.nsamples.max(m.max_samples)
    };
    let least = m.warm_up_period
        + (m.conv_period * u64::from(CONVERGED_WINDOWS + 1)).min(m.max_conv_time)
        + m.nsamples * m.sample_size;
    let most = m.warm_up_period + m.max_conv_time + batches * m.sample_size;
    Some((least, most.max(least)))
}

/// Consecutive converged windows that end the convergence phase.
const CONVERGED_WINDOWS: u32 = 3;

/// The spatial pattern a configuration asks for, over `nodes` nodes.
pub fn pattern_for(cfg: &Config, nodes: usize) -> Box<dyn pattern::Pattern> {
    let n = nodes as u32;
    let nx = cfg.net.dims[0];
    match cfg.traffic.tpattern {
        // A trace run's own traffic comes from its tasks (crate::workload);
        // its independent sources are uniform, as here.
        PatternKind::Uniform | PatternKind::Trace => Box::new(Uniform { nodes: n }),
        PatternKind::HotRegion => Box::new(HotRegion { nodes: n }),
        PatternKind::HotSpot => Box::new(HotSpot { nodes: n }),
        PatternKind::Semi => Box::new(Semi { nodes: n, nx }),
        PatternKind::Distribute { random_start } => {
            let mut rng = Pcg64Mcg::seed_from_u64(cfg.net.rseed ^ 0x5d15_7e1b);
            Box::new(Distribute::new(n, random_start, &mut rng))
        }
        PatternKind::Permutation(p) if cfg.net.compat == Compat::Insee => {
            Box::new(Permuted::insee(p, n, nx))
        }
        PatternKind::Permutation(p) => Box::new(Permuted::new(p, n, nx)),
        PatternKind::Local => Box::new(Local {
            dims: cfg.net.dims.clone(),
        }),
        PatternKind::Distance { .. } => Box::new(ByDistance::new(
            &cfg.net.dims,
            cfg.net.topo == TopoKind::Torus,
            &cfg.traffic.distance_weights,
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
            if cfg.net.compat == Compat::Insee {
                insee_bimodal_load(
                    cfg.traffic.load,
                    cfg.traffic.longmessages,
                    cfg.traffic.lng_msg_ratio,
                )
            } else {
                cfg.traffic.load
            },
            cfg.net.plength,
            pattern,
            cfg.net.rseed,
            0,
            cfg.traffic.longmessages,
            cfg.traffic.lng_msg_ratio,
        )
        .with_trigger(
            n,
            cfg.traffic.trigger_rate,
            cfg.traffic.triggered.0,
            cfg.traffic.triggered.1,
        ),
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
    (topo.routers() * topo.ports()) as u64 * u64::from(cfg.net.nchan) * u64::from(cfg.net.tql)
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
            let stop = if self.cfg.method.pinterval > 0 {
                target.min(self.next_partial)
            } else {
                target
            };
            let opts = &self.opts;
            run_feed(
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
            if self.cfg.method.pinterval > 0 {
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
                    self.next_partial += self.cfg.method.pinterval;
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
    if cfg.traffic.app.active() {
        return crate::workload::run(cfg, opts);
    }
    if opts.timeline.is_some() {
        return Err(RunError::TimelineRefused(
            "a timeline draws a workload's tasks: give a trace (tracefile=) or a kernel \
             (kernel=); synthetic traffic has none"
                .into(),
        ));
    }
    if cfg.traffic.shotmode {
        return run_shots(cfg, &opts);
    }
    let net = Network::new(&cfg.net)?;
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
    let cc_limit = (cfg.traffic.global_cc < 100.0)
        .then(|| (transit_capacity(&net, cfg) as f64 * cfg.traffic.global_cc / 100.0) as u64);
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
        next_partial: cfg.method.pinterval,
        partials: Vec::new(),
        opts,
    };
    let mut convergence = Convergence::NotChecked;
    let mut batches = Vec::new();
    let mut measured = Counters::default();
    let unmeasured;
    if cfg.method.cycles > 0 {
        unmeasured = 0;
        d.opts
            .set_phase(RunPhase::Measuring, Some(cfg.method.cycles));
        measured = d.run_until(cfg.method.cycles);
        batches.push(measured.summary(nodes));
    } else {
        let insee = cfg.net.compat == Compat::Insee;
        d.opts.set_phase(RunPhase::WarmUp, None);
        d.run_until(cfg.method.warm_up_period);
        d.opts.set_phase(RunPhase::Convergence, None);
        let settled = converge(&mut d);
        if insee && cfg.method.sample_size > 0 {
            // INSEE's "adjust for equal sample acquiring": batches start on
            // a multiple of the batch length (batch.c, `convergency`).
            let start = d.net.now().next_multiple_of(cfg.method.sample_size);
            d.run_until(start);
        }
        unmeasured = d.net.now();
        let most = if insee || !settled {
            cfg.method.nsamples
        } else {
            cfg.method.nsamples.max(cfg.method.max_samples)
        };
        d.opts.set_phase(
            RunPhase::Sampling,
            Some(unmeasured + cfg.method.nsamples * cfg.method.sample_size),
        );
        let precise = |batches: &[Summary]| insee || precise(batches, cfg.method.conv_thres);
        for taken in 0..most {
            if !d.going() || (taken >= cfg.method.nsamples && precise(&batches)) {
                break;
            }
            let target = d.net.now() + cfg.method.sample_size;
            let w = d.run_until(target);
            batches.push(w.summary(nodes));
            measured.merge(&w);
        }
        convergence = match (settled, precise(&batches)) {
            (false, _) => Convergence::Unsettled,
            (true, true) => Convergence::Converged,
            (true, false) => Convergence::Wide,
        };
    }
    let files = finish_detail(d.detail.take(), &d.net)?;
    let mut summary = measured.summary(nodes);
    if cfg.net.compat == Compat::Insee && batches.len() > 1 {
        insee_average(&mut summary, &batches);
    }
    Ok(Report {
        network_deadlock: d.net.deadlock().cloned(),
        interrupted: d.opts.stopped(),
        convergence,
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

/// Bursty traffic (INSEE paper, section 3.2.3; INSEE's shot mode): in each of
/// `nsamples` bursts every node generates `shotsize` packets, one per cycle
/// while its injection buffers take them (as fast as it can), to the
/// pattern's destinations (a node the pattern gives no destination sends
/// nothing); the burst ends when every packet has been consumed, and the
/// next starts in the following cycle. Each burst is one batch of the
/// report, and `shot_cycles` gives its length.
fn run_shots(cfg: &Config, opts: &RunOptions) -> Result<Report, RunError> {
    let started = Instant::now();
    let mut net = Network::new(&cfg.net)?;
    let mut detail = detail_for(cfg, opts, &net)?;
    net.record_deliveries(detail.is_some());
    let nodes = net.nodes();
    let mut shot = Shot {
        pattern: pattern_for(cfg, nodes),
        trial: (cfg.net.compat == Compat::Insee)
            .then(|| (cfg.traffic.load / f64::from(cfg.net.plength)).clamp(0.0, 1.0)),
        rng: Pcg64Mcg::seed_from_u64(cfg.net.rseed ^ 0x5407_3e11),
        left: vec![0u32; nodes],
        active: Vec::with_capacity(nodes),
        generated: 0,
    };
    let mut batches = Vec::new();
    let mut shot_cycles = Vec::new();
    let mut all = Counters::default();
    opts.set_phase(RunPhase::Measuring, None);
    for _ in 0..cfg.method.nsamples {
        if opts.stopped().is_some() {
            break;
        }
        let start = net.now();
        shot.left.fill(cfg.traffic.shotsize);
        shot.active.clear();
        shot.active.extend(0..nodes as u32);
        shot.generated = 0;
        run_feed(&mut net, &mut shot, detail.as_mut(), u64::MAX, |net, _| {
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

/// The convergence phase; returns whether its windows settled in time.
fn converge(d: &mut Driver<'_>) -> bool {
    let cfg = d.cfg;
    let nodes = d.net.nodes();
    let deadline = d.net.now() + cfg.method.max_conv_time;
    let noise = cfg.net.compat != Compat::Insee;
    let mut prev: Option<Summary> = None;
    let mut in_row = 0;
    while d.net.now() < deadline && d.going() {
        let target = (d.net.now() + cfg.method.conv_period).min(deadline);
        let cur = d.run_until(target).summary(nodes);
        let ok = prev
            .as_ref()
            .is_some_and(|p| windows_agree(&cur, p, cfg.method.conv_thres, noise));
        in_row = if ok { in_row + 1 } else { 0 };
        if in_row >= CONVERGED_WINDOWS {
            return true;
        }
        prev = Some(cur);
    }
    false
}

/// Whether window `a` agrees with the one before it, `b`: accepted load
/// and mean latency each change by less than `thres` of `a`'s (TrGen's
/// test, as INSEE's code makes it; a window with nothing accepted never
/// agrees), or, with `noise`
/// (`compat=none`), by less than 1.96 standard errors of the difference,
/// each window's from its own packets: latency std / sqrt(packets), and
/// accepted load / sqrt(packets) for the count of deliveries (Poisson).
fn windows_agree(a: &Summary, b: &Summary, thres: f64, noise: bool) -> bool {
    let se = |s: &Summary, x: f64| {
        if s.packets_delivered == 0 {
            0.0
        } else {
            x / (s.packets_delivered as f64).sqrt()
        }
    };
    let close = |x: f64, y: f64, sx: f64, sy: f64| {
        let diff = (x - y).abs();
        (x > 0.0 && diff < thres * x) || (noise && diff <= 1.96 * sx.hypot(sy))
    };
    close(
        a.accepted_load,
        b.accepted_load,
        se(a, a.accepted_load),
        se(b, b.accepted_load),
    ) && close(
        a.latency_avg,
        b.latency_avg,
        se(a, a.latency_std),
        se(b, b.latency_std),
    )
}

/// Whether the 95% intervals of the batches' mean latency and accepted
/// load are both within `thres` of their means (fewer than two batches
/// give no interval, and nothing to judge: precise).
fn precise(batches: &[Summary], thres: f64) -> bool {
    let ok = |f: fn(&Summary) -> f64| {
        batch_ci95(batches, f).is_none_or(|(m, h)| interval::within(m, h, thres))
    };
    ok(|b| b.accepted_load) && ok(|b| b.latency_avg)
}
