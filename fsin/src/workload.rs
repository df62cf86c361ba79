//! Runs of application workloads: traces and kernels placed on the
//! network, replayed causally or at will, with background load on the
//! nodes that hold no task (traces paper; INSEE paper, section 3.2.4; INSEE's
//! `run_network_trc`). The run ends when the workload has finished, or as
//! soon as it can never finish (a deadlock, reported with the blocked
//! tasks), never by a cycle limit.

use std::time::Instant;

use fsin_trace::mpi::LiveFrames;
use fsin_trace::{Trace, TraceError};

use crate::config::Compat;
use crate::config::Config;
use crate::counters::NetworkCounters;
use crate::drive::{run_feed, Feed, FeedEnd, RunPhase};
use crate::engine::{Delivered, NewPacket};
use crate::network::Network;
use crate::run::{
    detail_for, finish_detail, AppSummary, Report, RunError, RunOptions, TimelineSpec,
    WorkloadError,
};
use crate::stats::detail::Detail;
use crate::timeline::{Layout, Row, Timeline};
use crate::traffic::bernoulli::Bernoulli;
use crate::traffic::insee_replay::InseeReplay;
use crate::traffic::pattern::Uniform;
use crate::traffic::placement;
use crate::traffic::replay::{BlockedTask, Job, Replay, ReplayParams, SliceSync, BACKGROUND};
use crate::traffic::{NodeState, Observer, TrafficSource};

/// The trace in file `f`, as [`fsin_trace::parse`] reads it; an MPI-level
/// trace of `fsin qemu --trace-level mpi` lowered to the frames its replay
/// sends ([`fsin_trace::mpi::lower`], with the `mpi_*` keys and the node
/// clock), unless `compat=insee` (INSEE's Dimemas reading: collectives
/// and `MPI_Irecv` postings dropped).
///
/// # Errors
/// The file cannot be read, or is not a trace (the line and field named).
fn load(f: &std::path::Path, cfg: &Config) -> Result<Trace, TraceError> {
    let file = f.display().to_string();
    let text = std::fs::read_to_string(f).map_err(|source| TraceError::Read {
        file: file.clone(),
        source,
    })?;
    let mpi = fsin_trace::mpi::read::is_mpi_trace(&text);
    if mpi && cfg.net.compat != Compat::Insee {
        let model = fsin_trace::mpi::lower::MpiModel {
            ns_per_node_cycle: 1e9 / cfg.cosim.node_clock_hz.max(1) as f64,
            ..cfg.traffic.app.mpi.clone()
        };
        let mut t = fsin_trace::mpi::read::parse(&text, &file)?.lower(&model)?;
        t.name = format!(
            "{file} (MPI level: collectives expanded; {})",
            cfg.traffic.app.mpi_profile
        );
        return Ok(t);
    }
    let mut t = fsin_trace::parse_str(&text, &file)?;
    if mpi {
        t.name =
            format!("{file} (INSEE's Dimemas reading: collectives and MPI_Irecv postings dropped)");
    }
    Ok(t)
}

/// Loads the traces of `cfg` (files, then the kernel) and places every
/// instance; returns the traces, the jobs and a description.
///
/// # Errors
/// [`WorkloadError`].
pub fn jobs(cfg: &Config) -> Result<(Vec<Trace>, Vec<Job>, String), WorkloadError> {
    let app = &cfg.traffic.app;
    let nodes: u32 = cfg.net.dims.iter().product();
    let mut traces = Vec::new();
    for f in &app.tracefiles {
        let t = load(f, cfg).map_err(WorkloadError::Trace)?;
        if t.frames && cfg.net.compat == Compat::Insee {
            return Err(WorkloadError::FramesUnderInsee(t.name));
        }
        traces.push(t);
    }
    if let Some(k) = app.kernel {
        let n = if app.kernel_tasks == 0 {
            nodes
        } else {
            app.kernel_tasks
        };
        traces.push(k.trace(n, app.kernel_bytes));
    }
    place(cfg, traces)
}

/// Places every instance of `traces` on the network of `cfg`; returns
/// the traces, the jobs and a description.
///
/// # Errors
/// [`WorkloadError`]: a task beyond its placement or the network.
fn place(
    cfg: &Config,
    traces: Vec<Trace>,
) -> Result<(Vec<Trace>, Vec<Job>, String), WorkloadError> {
    let app = &cfg.traffic.app;
    let nodes: u32 = cfg.net.dims.iter().product();
    let instances = app.placement.instances.max(1) as usize;
    let single = traces.len() == 1;
    let mut sizes = Vec::new();
    for t in &traces {
        let tasks = if single && app.placement.tasks > 0 {
            app.placement.tasks
        } else {
            t.task_count() as u32
        };
        // A task beyond its placement or beyond the network can never run.
        t.check_within(tasks.min(nodes))
            .map_err(WorkloadError::Beyond)?;
        if tasks > nodes {
            return Err(WorkloadError::Beyond(TraceError::Beyond {
                origin: t.name.clone(),
                task: tasks - 1,
                limit: nodes,
            }));
        }
        sizes.push(tasks);
    }
    let per_job: Vec<u32> = sizes
        .iter()
        .flat_map(|&s| std::iter::repeat_n(s, instances))
        .collect();
    let placed = placement::place(&app.placement, &per_job, &cfg.net.dims, cfg.net.rseed)?;
    let jobs = placed
        .into_iter()
        .enumerate()
        .map(|(j, nodes)| Job {
            trace: j / instances,
            nodes,
        })
        .collect();
    let names: Vec<String> = traces.iter().map(|t| t.name.clone()).collect();
    let desc = if instances > 1 {
        format!("{} x{instances}", names.join(" + "))
    } else {
        names.join(" + ")
    };
    Ok((traces, jobs, desc))
}

/// Uniform Bernoulli sources among the nodes of `ids` (the nodes without a
/// task), as INSEE's independent sources in a trace run.
struct Background {
    inner: Bernoulli<Uniform>,
    ids: Vec<u32>,
    buf: Vec<(u32, u32)>,
}

struct Mapped<'a> {
    net: &'a dyn NodeState,
    ids: &'a [u32],
}

impl NodeState for Mapped<'_> {
    fn blocked(&self, node: u32) -> bool {
        self.net.blocked(self.ids[node as usize])
    }
}

impl Background {
    fn generate(&mut self, now: u64, net: &mut Network, mut detail: Option<&mut Detail>) -> bool {
        self.buf.clear();
        let view = Mapped {
            net: &*net,
            ids: &self.ids,
        };
        self.inner.generate(now, &view, &mut self.buf);
        for &(s, d) in &self.buf {
            let (src, dst) = (self.ids[s as usize], self.ids[d as usize]);
            if let Some(det) = detail.as_deref_mut() {
                det.generated(net, src, dst);
            }
            net.inject(NewPacket {
                src,
                dst,
                tag: BACKGROUND,
            })
            .expect("background nodes exist");
        }
        !self.buf.is_empty()
    }
}

/// The replay of a run: the traces paper's (the default), or INSEE's code
/// (`compat=insee`). A run holds one, so the variants' sizes do not
/// matter.
#[allow(clippy::large_enum_variant)]
enum Replayer {
    Paper(Replay),
    Insee(InseeReplay),
}

/// `$body` with `$r` the replay in use.
macro_rules! each_replay {
    ($replayer:expr, $r:ident => $body:expr) => {
        match $replayer {
            Replayer::Paper($r) => $body,
            Replayer::Insee($r) => $body,
        }
    };
}

impl Replayer {
    fn finished(&self) -> bool {
        each_replay!(self, r => r.finished())
    }

    fn deadlocked(&self) -> bool {
        each_replay!(self, r => r.deadlocked())
    }

    fn next_due(&self, now: u64) -> Option<u64> {
        match self {
            Replayer::Paper(r) => r.next_due(),
            Replayer::Insee(r) => r.next_due(now),
        }
    }

    fn delivered(&mut self, packet: &Delivered) {
        each_replay!(self, r => r.delivered(packet))
    }

    fn exec_cycles(&self) -> u64 {
        each_replay!(self, r => r.exec_cycles())
    }

    fn tasks(&self) -> usize {
        each_replay!(self, r => r.tasks())
    }

    fn blocked(&self) -> Vec<BlockedTask> {
        each_replay!(self, r => r.blocked())
    }

    /// Messages sent and fully delivered.
    fn messages(&self) -> (u64, u64) {
        each_replay!(self, r => (r.messages_sent, r.messages_delivered))
    }
}

/// A replay, with background traffic, as a [`Feed`]; finished when every
/// task has, when the tasks can never finish, or when the network
/// deadlocked.
struct App {
    replay: Replayer,
    bg: Option<Background>,
    /// `--timeline`: the network's counters, per window.
    windows: Option<Windows>,
}

/// The network's counters of a timeline over windows of `every` cycles
/// ([`NetworkCounters`]), each window's values at its first cycle.
struct Windows {
    every: u64,
    /// The end of the current window (exclusive).
    end: u64,
    /// Phits delivered in the current window.
    phits: u64,
    plength: u64,
    counters: NetworkCounters,
    /// Packets of each link at the current window's start.
    base: Vec<u64>,
    values: Vec<f64>,
}

impl Windows {
    fn new(net: &Network, every: u64) -> Windows {
        Windows {
            every,
            end: net.now() + every,
            phits: 0,
            plength: u64::from(net.spec().plength),
            counters: NetworkCounters::new(net),
            base: net.link_packets(),
            values: Vec::new(),
        }
    }

    /// Writes the window that ends at `end` (after `cycles` cycles) to
    /// `tl`, and starts the next.
    fn close(&mut self, net: &Network, tl: &mut Timeline, cycles: u64) {
        let from = self.end - self.every;
        let now = net.link_packets();
        (self.counters).values(&self.base, &now, self.phits, cycles, &mut self.values);
        self.base = now;
        tl.counters(from, self.counters.names(), &self.values);
        self.phits = 0;
        self.end += self.every;
    }

    /// Closes every window that ended before cycle `now` (once the
    /// timeline is full, skips them).
    fn close_before(&mut self, now: u64, net: &Network, tl: &mut Timeline) {
        while now >= self.end {
            if tl.full() {
                self.end = (now / self.every + 1) * self.every;
                return;
            }
            self.close(net, tl, self.every);
        }
    }

    /// Closes the last window, cut at cycle `now`.
    fn close_last(&mut self, now: u64, net: &Network, tl: &mut Timeline) {
        self.close_before(now, net, tl);
        let cycles = now.saturating_sub(self.end - self.every);
        if cycles > 0 {
            self.close(net, tl, cycles);
        }
    }
}

impl Feed for App {
    fn inject_due(&mut self, now: u64, net: &mut Network, mut detail: Option<&mut Detail>) -> bool {
        let mut busy = match &mut self.replay {
            Replayer::Paper(r) => r.run_due(now, net, detail.as_deref_mut()),
            Replayer::Insee(r) => r.run_due(now, net, detail.as_deref_mut()),
        };
        if let Some(b) = self.bg.as_mut() {
            busy |= b.generate(now, net, detail);
        }
        if let (Some(w), Replayer::Paper(r)) = (self.windows.as_mut(), &mut self.replay) {
            if let Some(tl) = r.timeline() {
                w.close_before(now, net, tl);
            }
        }
        busy
    }

    fn finished(&self, net: &Network) -> bool {
        self.replay.finished() || self.replay.deadlocked() || net.deadlock().is_some()
    }

    fn next_due(&self, now: u64) -> Option<u64> {
        let bg_next = self.bg.as_ref().and_then(|b| b.inner.next_event(now + 1));
        match (self.replay.next_due(now), bg_next) {
            (Some(a), Some(b)) => Some(a.min(b)),
            // Neither finished nor deadlocked: some task is due.
            (a, b) => Some(a.or(b).expect("a task is due")),
        }
    }

    fn delivered(&mut self, packet: &Delivered) {
        if let Some(w) = self.windows.as_mut() {
            w.phits += w.plength;
        }
        self.replay.delivered(packet);
    }
}

/// Runs the application workload of `cfg` to its end.
///
/// # Errors
/// [`WorkloadError`] before anything is simulated; `plevel` outputs that
/// cannot be written.
pub fn run(cfg: &Config, opts: RunOptions) -> Result<Report, RunError> {
    let started = Instant::now();
    let (traces, jobs, desc) = jobs(cfg)?;
    run_jobs(cfg, opts, started, traces, jobs, desc)
}

/// Replays `trace` (one job, placed as `cfg` places it) on the network of
/// `cfg` to its end, as [`run`] replays a trace file: for traces made in
/// memory (`fsin qemu --calibrate`'s fit, [`crate::calibrate`]).
///
/// # Errors
/// As [`run`].
pub fn replay(cfg: &Config, trace: Trace) -> Result<Report, RunError> {
    let started = Instant::now();
    let (traces, jobs, desc) = place(cfg, vec![trace])?;
    run_jobs(cfg, RunOptions::default(), started, traces, jobs, desc)
}

/// The background traffic of a replay (`bg_load`, INSEE's TrGen): a
/// Bernoulli source of uniform traffic among the `nodes` that no job of
/// `jobs` holds; none without a load or with fewer than two free nodes.
fn background(cfg: &Config, jobs: &[Job], nodes: usize) -> Option<Background> {
    let mut placed = vec![false; nodes];
    for j in jobs {
        for &n in &j.nodes {
            placed[n as usize] = true;
        }
    }
    let free: Vec<u32> = (0..nodes as u32).filter(|&n| !placed[n as usize]).collect();
    (cfg.traffic.app.bg_load > 0.0 && free.len() >= 2).then(|| Background {
        inner: Bernoulli::new(
            free.len() as u32,
            cfg.traffic.app.bg_load,
            cfg.net.plength,
            Uniform {
                nodes: free.len() as u32,
            },
            cfg.net.rseed,
            0,
        ),
        ids: free,
        buf: Vec::new(),
    })
}

/// The timeline of `app`'s replay (`--timeline` `spec`), finished at the
/// network's last cycle with its last window of counters: what it wrote,
/// none without a timeline (or for INSEE's replay, which keeps none).
///
/// # Errors
/// The timeline's files cannot be written.
fn finish_timeline(
    app: &mut App,
    spec: Option<&TimelineSpec>,
    net: &Network,
) -> Result<Option<crate::timeline::Written>, RunError> {
    let end = net.now();
    let (Replayer::Paper(r), Some(spec)) = (&mut app.replay, spec) else {
        return Ok(None);
    };
    let Some(mut tl) = r.take_timeline(end) else {
        return Ok(None);
    };
    if let Some(w) = app.windows.as_mut() {
        w.close_last(end, net, &mut tl);
    }
    let written = tl.finish(end)?;
    if let Some(t) = written.cut_at {
        eprintln!(
            "fsin: the timeline {} reached its limit ({} MiB) at cycle {t}: \
             what came after is left out (--timeline-limit)",
            spec.target.path.display(),
            spec.target.limit >> 20
        );
    }
    Ok(Some(written))
}

/// What the traced runs of the MPI-level jobs among `jobs` sent
/// ([`Trace::mpi`], [`Trace::live`]), when there are some and every one
/// of them records it (`None` too for sums past `u64`, which only a
/// forged header gives).
fn live_frames(traces: &[Trace], jobs: &[Job]) -> Option<LiveFrames> {
    let mut mpi = (jobs.iter().map(|j| &traces[j.trace]))
        .filter(|t| t.mpi)
        .peekable();
    mpi.peek()?;
    mpi.try_fold(LiveFrames::default(), |sum, t| {
        let l = t.live?;
        Some(LiveFrames {
            frames: sum.frames.checked_add(l.frames)?,
            acks: sum.acks.checked_add(l.acks)?,
        })
    })
}

/// [`run`] once its traces are loaded and placed.
fn run_jobs(
    cfg: &Config,
    opts: RunOptions,
    started: Instant,
    traces: Vec<Trace>,
    jobs: Vec<Job>,
    desc: String,
) -> Result<Report, RunError> {
    let mut net = Network::new(&cfg.net)?;
    net.record_deliveries(true);
    let mut detail = detail_for(cfg, &opts, &net)?;
    let nodes = net.nodes();
    let bg = background(cfg, &jobs, nodes);
    let params = ReplayParams {
        packet_bytes: u64::from(cfg.net.plength) * u64::from(cfg.phit_bytes),
        cycles_per_unit: cfg.traffic.app.cycles_per_unit(cfg.phit_bytes),
        cpu_speed: cfg.traffic.app.cpu_speed,
        mode: cfg.traffic.app.trace_mode,
        slice: cfg.cosim.slice,
        nic_latency: cfg.cosim.nic_latency,
        sync: match cfg.cosim.sync_mode {
            crate::config::SyncMode::Exact => SliceSync::Exact,
            crate::config::SyncMode::Lockstep => SliceSync::Lockstep,
            crate::config::SyncMode::Parallel => SliceSync::Parallel,
        },
    };
    let frames = traces.iter().any(|t| t.frames);
    let mpi = traces.iter().any(|t| t.mpi);
    let live = live_frames(&traces, &jobs);
    let timeline = match &opts.timeline {
        Some(spec) => Some(timeline_of(cfg, spec, &traces, &jobs, nodes)?),
        None => None,
    };
    let mut app = App {
        replay: if cfg.net.compat == Compat::Insee {
            Replayer::Insee(InseeReplay::new(traces, &jobs, params))
        } else {
            Replayer::Paper(Replay::new(traces, &jobs, params))
        },
        bg,
        windows: None,
    };
    if let (Some(tl), Replayer::Paper(r)) = (timeline, &mut app.replay) {
        r.record(tl);
        app.windows = opts.timeline.as_ref().map(|s| Windows::new(&net, s.window));
    }
    opts.set_phase(RunPhase::Replaying, None);
    let ended = run_feed(&mut net, &mut app, detail.as_mut(), u64::MAX, |net, app| {
        opts.set_cycle(net.now());
        if let Some(status) = &opts.progress {
            let (sent, delivered) = app.replay.messages();
            status.set_messages(sent, delivered);
        }
        opts.stopped().is_none()
    });
    let timeline = finish_timeline(&mut app, opts.timeline.as_ref(), &net)?;
    let replay = app.replay;
    let deadlock = ended == FeedEnd::Finished && !replay.finished() && replay.deadlocked();
    let mut files = finish_detail(detail, &net)?;
    if let Some(w) = &timeline {
        files.extend(w.files.iter().map(|f| f.display().to_string()));
    }
    let summary = std::mem::take(&mut net.counters).summary(nodes);
    let base = Report::base(
        cfg,
        nodes,
        started,
        net.now(),
        summary.clone(),
        vec![summary],
    );
    let app = app_summary(cfg, &params, &replay, (frames, mpi), live, desc);
    Ok(Report {
        offered_load: cfg.traffic.app.bg_load,
        network_deadlock: net.deadlock().cloned(),
        interrupted: opts.stopped(),
        files,
        app: Some(AppSummary {
            deadlock,
            timeline,
            ..app
        }),
        ..base
    })
}

/// What a finished `replay` of `desc` gives its report (the deadlock and
/// timeline left for the caller): its times (guest seconds from node
/// cycles for frame traces, `frames`), messages, and an MPI-level
/// replay's (`mpi`) frame counts beside the traced run's `live` ones.
fn app_summary(
    cfg: &Config,
    params: &ReplayParams,
    replay: &Replayer,
    (frames, mpi): (bool, bool),
    live: Option<LiveFrames>,
    desc: String,
) -> AppSummary {
    let exec = replay.exec_cycles();
    // An MPI-level replay's frame counts (INSEE's has none).
    let mpi_replay = match replay {
        Replayer::Paper(r) if mpi => Some(r),
        _ => None,
    };
    AppSummary {
        workload: desc,
        tasks: replay.tasks(),
        exec_cycles: exec,
        predicted_s: if frames {
            Some(params.node_of(exec) as f64 / cfg.cosim.node_clock_hz as f64)
        } else {
            cfg.traffic
                .app
                .seconds_per_cycle(cfg.phit_bytes)
                .map(|s| s * exec as f64)
        },
        task_done_cycles: match replay {
            Replayer::Paper(r) => r.done_cycles(),
            Replayer::Insee(_) => Vec::new(),
        },
        messages_sent: replay.messages().0,
        messages_delivered: replay.messages().1,
        acks_sent: mpi_replay.map(|r| r.acks_sent),
        arp_requests: mpi_replay.map(|r| r.arp_requests),
        tcp_probes: mpi_replay.map(|r| r.tcp_probes),
        delayed_acks: mpi_replay.map(|r| r.delayed_acks),
        frames_sent: mpi_replay.map(Replay::frames_sent),
        live_frames: live.map(|l| l.frames),
        live_acks: live.map(|l| l.acks),
        deadlock: false,
        blocked: replay.blocked(),
        timeline: None,
    }
}

/// Bytes of records a timeline holds per trace event, about: a state and
/// a message's share, in the larger of the two formats (Perfetto's).
const TIMELINE_BYTES_PER_EVENT: u64 = 160;

/// The timeline of `spec` for the replay of `jobs` on a network of
/// `nodes` nodes: a row per task, in job order, named by job and task.
///
/// # Errors
/// [`RunError::TimelineRefused`]: INSEE's replay (`compat=insee`) records
/// none, or the estimate of its size is over its limit;
/// [`RunError::Timeline`]: the file cannot be made.
fn timeline_of(
    cfg: &Config,
    spec: &TimelineSpec,
    traces: &[Trace],
    jobs: &[Job],
    nodes: usize,
) -> Result<Timeline, RunError> {
    if cfg.net.compat == Compat::Insee {
        return Err(RunError::TimelineRefused(
            "INSEE's replay (compat=insee) records no timeline; leave compat out".into(),
        ));
    }
    let events: u64 = (jobs.iter())
        .map(|j| {
            traces[j.trace]
                .tasks
                .iter()
                .map(|t| t.len() as u64)
                .sum::<u64>()
        })
        .sum();
    let estimate = events.saturating_mul(TIMELINE_BYTES_PER_EVENT);
    if estimate > spec.target.limit && spec.target.span.is_none() {
        return Err(RunError::TimelineRefused(format!(
            "the workload's {events} events would make a timeline of about {} MiB, over its \
             limit of {} MiB: raise --timeline-limit, keep a part of the run \
             (--timeline-from, --timeline-to), or replay fewer events",
            estimate >> 20,
            spec.target.limit >> 20
        )));
    }
    let many = jobs.len() > 1;
    let rows = jobs
        .iter()
        .enumerate()
        .flat_map(|(j, job)| {
            job.nodes.iter().enumerate().map(move |(t, &node)| Row {
                name: if many {
                    format!("job {j} task {t}")
                } else {
                    format!("task {t}")
                },
                node,
            })
        })
        .collect();
    let layout = Layout {
        rows,
        nodes: u32::try_from(nodes).unwrap_or(u32::MAX),
        tick: "network cycle".into(),
    };
    Ok(Timeline::create(&spec.target, layout)?)
}
