//! `fsin qemu`: a co-simulation server on loopback and `fsin nic-bridge`
//! running QEMU Linux guests, one merged report; with `--run CMD` or
//! `--app NAME` a parallel application on the guests, and with `--vary` the
//! application once per value of a setting (the Simics paper's slice study with
//! real software).

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use fsin::config::{keys, ConfigError, Origin, Setting, SyncMode};
use fsin_cosim::progress::CosimPhase;
use fsin_cosim::session::{self, SessionReport};
use qemu_adapter::apps::App;
use qemu_adapter::qemu::roi::{RegionCheckpoint, Roi};
use qemu_adapter::qemu::{mpi_in, BridgeProgress, QEMU_BINARY};
use serde_json::{json, Value};

use crate::cosim_cli::{
    config, cosim_facts, finish, init_logging, interrupted, options, runtime, write_study,
    CosimArgs, RunFailed,
};
use crate::progress::{Reporter, Status};

mod calibrate;
mod guests;
mod study;

use guests::{Guests, GuestsReport};

#[derive(clap::Args)]
pub struct QemuArgs {
    /// The guests (shared with `fsin nic-bridge`).
    #[command(flatten)]
    guest: qemu_adapter::qemu::GuestArgs,
    /// Once every guest is up and reaches every other, run this shell
    /// command on guest 0 and report its exit code, guest time and output
    /// (`app` in the report). The guests are node0..node{N-1} in
    /// /etc/hosts and /etc/fsin/hostfile is an MPI hostfile, so `mpirun
    /// --hostfile /etc/fsin/hostfile -np N APP` works. The run fails (exit
    /// 1) when the command does.
    #[arg(long, value_name = "CMD", conflicts_with = "app")]
    run: Option<String>,
    /// A named application instead of --run: hpcc (HPC Challenge on every
    /// guest, small input; its summary in app.results), netpipe (NetPIPE
    /// between node0 and node1; its latency/bandwidth curve in app.results,
    /// netpipe.svg with --out), is (an integer sort across every guest
    /// with NPB IS's all-to-all exchanges and reductions) or cg (conjugate
    /// gradient with NPB CG's irregular point-to-point exchanges and
    /// reductions); is and cg put their check and time in app.results.
    #[arg(long, value_enum, value_name = "NAME")]
    app: Option<App>,
    /// Problem size of --app: the HPL matrix order for hpcc (default 256),
    /// the largest message in bytes for netpipe (default 65536), the keys
    /// per guest for is (default 4096), the matrix rows per guest for cg
    /// (default 512).
    #[arg(long, value_name = "N", requires = "app")]
    app_size: Option<u32>,
    /// Run the command with Open MPI's connections between every pair of
    /// ranks opened inside `MPI_Init` (its `mpi_preconnect_mpi`): the
    /// first contacts (ARP, TCP's handshake, Open MPI's connection
    /// message) then come before the application's first MPI call, so
    /// that an MPI-level trace (which starts there) gives back the run it
    /// was taken from (docs/qemu.md, "How well an MPI-level trace gives
    /// back its own run"). `MPI_Init` takes longer.
    #[arg(long)]
    mpi_preconnect: bool,
    /// Measure the MPI layer's software costs on these guests and write
    /// them as a profile for MPI-level replays (`mpi_profile=PROFILE`;
    /// default file mpi-profile.conf): 2 guests run fsin-pingpong's round
    /// trips and streams of 8 bytes to 256 KiB, exchanges of 4 messages
    /// at once and a first contact, and the costs per size and side, a
    /// rank's wake-up and a connection's opening are fitted so that the
    /// replay gives them back (docs/qemu.md, "Calibrating the MPI
    /// layer"). Give the guest settings (--icount-shift, --cpus, --image,
    /// --slice) of the runs the profile is for. About 5 minutes on 2
    /// cores.
    #[arg(long, value_name = "PROFILE", num_args = 0..=1,
          default_missing_value = "mpi-profile.conf",
          conflicts_with_all = ["run", "app", "vary", "trace_out", "mpi_preconnect"])]
    calibrate: Option<PathBuf>,
    /// With --calibrate: fit the profile again from an earlier
    /// calibration's figures (the last line of its `--json` output, saved
    /// to FILE) instead of running the guests: the same live round trips,
    /// streams, exchanges, first contact and kernel receive, fitted with
    /// this binary's model in seconds. For a change of the model, so that
    /// a profile keeps the guests it was measured on (a new boot's figures
    /// differ by up to 20%). Give the guest settings of that calibration:
    /// the profile's comments name them.
    #[arg(long, value_name = "FILE", requires = "calibrate")]
    calibrate_from: Option<PathBuf>,
    /// This run measures one guest's speed alone for another `fsin qemu`
    /// ([`crate::machine::speed`]): no machine figures of its own.
    #[arg(long, hide = true)]
    speed_child: bool,
    /// Run the application once per value of one setting and write a table,
    /// study.csv, study.json and study.svg (guest-measured and wall time per
    /// value) under --out: `slice=20:1000,200:10000` (the --slice values,
    /// the Simics paper's Table 1) or any network key, `intransit_pr=0,1`.
    #[arg(long, value_name = "KEY=V1,V2,...")]
    vary: Option<String>,
    /// Boot once, run many: keep the booted cluster in DIR (QEMU's
    /// migration, one file per guest) and start each run from it instead
    /// of booting. A run boots and saves the cluster first when DIR holds
    /// none booted with this image, plugin, QEMU, guest count, memory,
    /// vCPUs and guest settings (the reason is printed); network keys and
    /// --slice may differ, as the boot runs in warm-up. --vary always
    /// boots once (in a temporary directory without --checkpoint).
    /// Lock-step with --run or --app.
    #[arg(long, value_name = "DIR")]
    checkpoint: Option<PathBuf>,
    /// Write the measured phase's communication as a trace: per guest, in
    /// guest-time order, an `s` event for every frame it sent and an `r`
    /// for every frame it received (paired by tag), and `c` events for the
    /// node cycles between them that did not wait on the network (idle
    /// time that a frame's arrival ended is a wait). `fsin run
    /// tracefile=FILE` replays it on any network with the keys its first
    /// lines give (docs/model.md, "Traces out of live runs"). Lock-step.
    #[arg(long, value_name = "FILE")]
    trace_out: Option<PathBuf>,
    /// Format of --trace-out: trc (a frame trace in node cycles) or
    /// dimemas (CPU bursts converted to network cycles), as `fsin kernel
    /// --format`.
    #[arg(long, default_value = "trc", value_parser = crate::args::trace_format, requires = "trace_out")]
    trace_format: fsin_trace::TraceFormat,
    /// What --trace-out takes: `frames` (the frame trace above), `mpi`
    /// (the MPI-level trace: every rank's MPI calls and the CPU bursts
    /// between them, in guest time, as Dimemas; the command's ranks run
    /// with the MPI image's tracing library and Open MPI's collective
    /// algorithms pinned; docs/qemu.md, "MPI-level traces"), or
    /// `frames,mpi`: the frame trace in FILE and the MPI trace beside it,
    /// FILE with the extension `.mpi.dim`.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "frames",
        requires = "trace_out"
    )]
    trace_level: Vec<TraceLevel>,
    /// With --vary: take the trace of the first value's run and replay it
    /// on every value's network beside the full-system run (the Simics
    /// paper's Fig. 4: trace-driven against full-system): `frames` (the
    /// default; `predicted_s`), `mpi` (the MPI-level trace;
    /// `predicted_mpi_s`; every run with Open MPI's collective algorithms
    /// pinned, as the traced one) or `both`.
    #[arg(long, requires = "vary", value_enum, num_args = 0..=1, default_missing_value = "frames")]
    predict: Option<Predict>,
    /// With --vary: run each value K times, run r with seed rseed + r (the
    /// network's random choices) and the guests' start shifted by up to 4
    /// ms of guest time from the seed (every guest's timers at another
    /// phase); means with 99% confidence intervals in study.csv. At most
    /// 100.
    #[arg(long, default_value_t = 1, value_name = "K", requires = "vary",
          value_parser = clap::value_parser!(u32).range(1..=100))]
    repeat: u32,
    /// With --vary: run every value once in each of these synchronisation
    /// modes (times --repeat), e.g. `lockstep,parallel`: the Simics
    /// paper's coupling (parallel: frames injected one slice late) beside
    /// fsin-rs's lock-step in one slice study, a row per mode and value in
    /// study.csv and a curve per mode in tradeoff.svg. Instead of --mode.
    #[arg(long, value_name = "MODE,...", requires = "vary", conflicts_with = "mode",
          value_delimiter = ',', value_parser = crate::cosim_cli::sync_mode)]
    modes: Vec<SyncMode>,
    /// With --vary and --out: keep the finished runs of an earlier study
    /// in --out even when another `fsin` binary made them (by default
    /// they run again); their settings, seed, image and guests must still
    /// match. The predictions are computed again, by this binary, either
    /// way.
    #[arg(long, requires = "vary")]
    reuse_runs: bool,
    #[command(flatten)]
    cosim: CosimArgs,
}

/// Which traces a study predicts from (`--predict`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Predict {
    /// The frame trace.
    Frames,
    /// The MPI-level trace.
    Mpi,
    /// Both, side by side.
    Both,
}

impl Predict {
    fn frames(self) -> bool {
        self != Predict::Mpi
    }

    fn mpi(self) -> bool {
        self != Predict::Frames
    }
}

/// The traces one run takes, and whether it pins Open MPI's collective
/// algorithms without tracing (the other runs of an MPI-level study).
#[derive(Debug, Clone, Default)]
struct Traces {
    frames: Option<PathBuf>,
    mpi: Option<PathBuf>,
    pin: bool,
}

/// What `fsin qemu --trace-out` writes (`--trace-level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum TraceLevel {
    /// The measured phase's Ethernet frames (a frame trace).
    Frames,
    /// The ranks' MPI calls (an MPI-level trace, Dimemas).
    Mpi,
}

impl QemuArgs {
    /// Where `trace` (--trace-out's file) puts each level asked for by
    /// --trace-level.
    fn trace_files(&self, trace: Option<&std::path::Path>) -> Traces {
        let Some(path) = trace else {
            return Traces::default();
        };
        let frames = self.trace_level.contains(&TraceLevel::Frames);
        let mpi = self.trace_level.contains(&TraceLevel::Mpi).then(|| {
            if frames {
                path.with_extension("mpi.dim")
            } else {
                path.to_path_buf()
            }
        });
        Traces {
            frames: frames.then(|| path.to_path_buf()),
            mpi,
            pin: false,
        }
    }

    /// The shell command guest 0 runs: --run, or the named application's.
    fn command(&self) -> Result<Option<String>, ConfigError> {
        let command = match (&self.run, self.app) {
            (Some(cmd), _) => Ok(Some(cmd.clone())),
            (None, Some(app)) => app
                .command(self.guest.guests, self.app_size)
                .map(Some)
                .map_err(|e| ConfigError::BadValue {
                    key: "--app".into(),
                    value: app.name().into(),
                    origin: Origin::CommandLine,
                    reason: e.to_string(),
                }),
            (None, None) => Ok(None),
        }?;
        Ok(match command {
            Some(c) if self.mpi_preconnect => Some(mpi_in::preconnected_command(&c)),
            c => c,
        })
    }
}

/// The progress line of `fsin qemu` (`name`: the command, and the value of
/// a study): the phase (starting, booting, cluster up, application,
/// ending), guests up, and the server's facts in guest time.
fn qemu_reporter(
    name: String,
    a: &QemuArgs,
    opts: &fsin_cosim::ServeOptions,
    milestones: Arc<Mutex<BridgeProgress>>,
    app: bool,
) -> anyhow::Result<Reporter> {
    let status = Arc::clone(&opts.status);
    let (guests, clock, slices) = (a.guest.guests, opts.config.cosim.node_clock_hz, opts.slices);
    let started = Instant::now();
    Ok(Reporter::start(name, &a.cosim.progress, move || {
        let s = status.snapshot();
        let m = *milestones.lock().unwrap_or_else(|e| e.into_inner());
        let phase = if s.phase == CosimPhase::Ended || m.app_ended {
            "ending"
        } else if s.phase == CosimPhase::Attaching {
            "starting"
        } else if m.guests_up < guests {
            "booting"
        } else if app && m.cluster_up {
            "application"
        } else {
            "cluster up"
        };
        let (facts, done) = cosim_facts(&s, clock, slices, started.elapsed(), "guest");
        Status {
            phase,
            facts: format!("{}/{guests} guests up, {facts}", m.guests_up),
            done,
            note: None,
        }
    })?)
}

/// The bridge that runs the guests of `a` (for the server that a session
/// gives it when it starts): `command` on guest 0, the magic packet when
/// the server warms up (`magic`), `checkpoint`'s directory.
fn bridge_of(
    a: &QemuArgs,
    command: Option<&str>,
    magic: bool,
    checkpoint: Option<&std::path::Path>,
) -> qemu_adapter::qemu::Args {
    let mut bridge =
        qemu_adapter::qemu::Args::new(String::new(), a.guest.clone(), command.map(String::from));
    bridge.magic = magic;
    bridge.checkpoint = checkpoint.map(std::path::Path::to_path_buf);
    bridge
}

/// Whether `dir` holds a checkpoint that the guests of `a` running
/// `command` with `traces` can start from (`region`: one at the region's
/// start); the reason when not.
fn checkpoint_ready(
    a: &QemuArgs,
    command: &str,
    dir: &std::path::Path,
    traces: &Traces,
    region: Option<RegionCheckpoint>,
) -> anyhow::Result<Result<(), String>> {
    // Lock-step runs always warm up: the magic packet starts the measure.
    let mut bridge = bridge_of(a, Some(command), true, Some(dir));
    bridge.region_checkpoint = region;
    bridge.pin_collectives = traces.pin;
    bridge.mpi_trace = traces.mpi.clone().map(|path| mpi_in::MpiTraceOut {
        path,
        replay: String::new(),
        preconnected: a.mpi_preconnect,
    });
    let id = qemu_adapter::qemu::identity(&bridge)?;
    Ok(match qemu_adapter::checkpoint::find(dir, &id) {
        qemu_adapter::checkpoint::Found::Ready(_) => Ok(()),
        qemu_adapter::checkpoint::Found::Missing(why) => Err(why),
    })
}

/// The directory, inside `--checkpoint`'s, of the checkpoint at the
/// region's start (`--roi mpi|marker`).
pub(crate) const REGION_DIR: &str = "region";

/// Runs the application once with the settings of `cosim`, from the
/// checkpoint in `dir` when given: booting and saving the cluster there
/// first (with the default slice and no capture, so that the checkpoint
/// does not depend on what a study varies) when it holds none for this
/// run. With `--roi mpi|marker`, the run starts from a second checkpoint,
/// in `dir`/region, taken at the region's start: the command is launched
/// from the booted cluster (again with the default slice, in warm-up) and
/// saved there first when it holds none for this command. Says on stderr
/// what it does.
fn run_from(
    a: &QemuArgs,
    cosim: &CosimArgs,
    command: Option<&str>,
    label: String,
    dir: Option<&std::path::Path>,
    traces: &Traces,
) -> anyhow::Result<SessionReport<GuestsReport>> {
    let (Some(dir), Some(cmd)) = (dir, command) else {
        return run_once(a, cosim, command, label, dir, traces, None);
    };
    // What a run that saves takes: the default slice, no capture,
    // timeline or output (the checkpoint must not depend on what a study
    // varies, and the measured run writes them).
    let mut saving = a.cosim.clone();
    saving.slice = None;
    saving.pcap = None;
    saving.timeline.timeline = None;
    saving.out = None;
    saving.json = false;
    if let Err(why) = checkpoint_ready(a, cmd, dir, &Traces::default(), None)? {
        eprintln!(
            "fsin qemu: {why}; booting the {} guests once and saving them there",
            a.guest.guests
        );
        let r = run_once(
            a,
            &saving,
            command,
            format!("{label}, boot"),
            Some(dir),
            &Traces::default(),
            None,
        )?;
        if let Some(stopped) = saved_or_stopped(r, dir, "the booted cluster")? {
            return Ok(stopped);
        }
    }
    if a.guest.roi_for(Some(cmd)) == Roi::Command {
        eprintln!(
            "fsin qemu: restoring the {} guests from the checkpoint in {}",
            a.guest.guests,
            dir.display()
        );
        return run_once(a, cosim, command, label, Some(dir), traces, None);
    }
    let region = dir.join(REGION_DIR);
    let restore = Some(RegionCheckpoint::Restore);
    if let Err(why) = checkpoint_ready(a, cmd, &region, traces, restore.clone())? {
        eprintln!(
            "fsin qemu: {why}; launching the command from the checkpoint in {} and saving the cluster at its region's start",
            dir.display()
        );
        // The command file of the launch is the run's: the same MPI
        // library settings and pins, no frame trace.
        let launch = Traces {
            frames: None,
            ..traces.clone()
        };
        let r = run_once(
            a,
            &saving,
            command,
            format!("{label}, launch"),
            Some(dir),
            &launch,
            Some(RegionCheckpoint::Save(region.clone())),
        )?;
        if r.nodes.region_never_began() {
            // The command ended in warm-up: its report is the run's.
            return Ok(r);
        }
        if let Some(stopped) = saved_or_stopped(r, &region, "the cluster at the region's start")? {
            return Ok(stopped);
        }
    }
    eprintln!(
        "fsin qemu: restoring the {} guests at the region's start from {}",
        a.guest.guests,
        region.display()
    );
    run_once(a, cosim, command, label, Some(&region), traces, restore)
}

/// After a run `r` that was to save `what` in `dir`: `None` when it did and
/// the next run may start; the report to end the command with when a
/// signal came (the checkpoint kept if it was saved).
///
/// # Errors
/// The run ended without saving, and not for a signal.
fn saved_or_stopped(
    mut r: SessionReport<GuestsReport>,
    dir: &std::path::Path,
    what: &str,
) -> anyhow::Result<Option<SessionReport<GuestsReport>>> {
    match (r.nodes.saved(), sync_client::signals::requested()) {
        (true, Some(name)) => {
            // The signal came while the guests were saved (or as the run
            // ended): the checkpoint is kept, and the next run does not
            // start.
            r.run.ok = false;
            r.run.end_reason = format!(
                "interrupted by {name} after {what} was saved in {}",
                dir.display()
            );
            Ok(Some(r))
        }
        (false, Some(_)) => {
            r.nodes.notes = format!("checkpoint: nothing saved in {}\n", dir.display());
            Ok(Some(r))
        }
        (false, None) => anyhow::bail!(
            "the run did not save {what} in {}: {}",
            dir.display(),
            r.nodes.text().trim()
        ),
        (true, None) => Ok(None),
    }
}

/// The configuration of a run of the guests of `a` with the settings of
/// `cosim`: a ring of the guests unless `topo` is given, and in lock-step
/// the node clock of the guests' instructions.
fn guests_config(a: &QemuArgs, cosim: &CosimArgs) -> anyhow::Result<fsin::config::Config> {
    let mut defaults = vec![Setting::Torus(vec![a.guest.guests.max(2)])];
    if a.guest.timing == qemu_adapter::qemu::Mode::Lockstep {
        let hz = qemu_adapter::qemu::lockstep_clock_hz(a.guest.icount_shift);
        defaults.push(Setting::NodeClockHz(hz));
    }
    config(cosim, &defaults)
}

/// Runs the guests once with the settings of `cosim` (from or into the
/// checkpoint directory `checkpoint`; `region`: saving the cluster at the
/// region's start, or restoring it there); `label` names the run in
/// progress lines.
fn run_once(
    a: &QemuArgs,
    cosim: &CosimArgs,
    command: Option<&str>,
    label: String,
    checkpoint: Option<&std::path::Path>,
    traces: &Traces,
    region: Option<RegionCheckpoint>,
) -> anyhow::Result<SessionReport<GuestsReport>> {
    let lockstep = a.guest.timing == qemu_adapter::qemu::Mode::Lockstep;
    let cfg = guests_config(a, cosim)?;
    let mut opts = options(cosim, cfg)?;
    // --timeline draws the guests (the bridge writes it), not the server's
    // rounds.
    opts.timeline = None;
    // Booting takes billions of instructions: never in short slices.
    opts.warmup |= lockstep;
    if checkpoint.is_some() {
        // Restored guests start in the first slice, which may take the
        // attach timeout: as long as the bridge waits for it.
        let restore = qemu_adapter::qemu::args::restore_timeout_s(
            qemu_adapter::qemu::args::SLICE_TIMEOUT_S,
            a.guest.guests,
        );
        opts.attach_timeout = opts.attach_timeout.max(Duration::from_secs(restore));
    }
    let magic = opts.warmup;
    // Restored at the region's start: measured from the first slice.
    opts.warmup &= region != Some(RegionCheckpoint::Restore);
    if cosim.nodes.is_none() {
        opts.nodes = opts.nodes.min(a.guest.guests as usize);
    }
    if opts.nodes != a.guest.guests as usize {
        anyhow::bail!(
            "--guests {} but --nodes {}: every node must be a guest",
            a.guest.guests,
            opts.nodes
        );
    }
    let app_run = command.is_some();
    let image = a.guest.image_dir(app_run);
    let memory = a.guest.memory_mib(app_run);
    crate::doctor::fit_guests(a.guest.guests, memory).map_err(|(detail, fix)| {
        ConfigError::BadValue {
            key: "--guests".into(),
            value: a.guest.guests.to_string(),
            origin: Origin::CommandLine,
            reason: format!("{detail}: {fix}"),
        }
    })?;
    ready_to_boot(&image)?;
    let trace_out =
        (traces.frames.as_deref()).map(|path| trace_target(a, path, cosim, &opts.config));
    let milestones = Arc::new(Mutex::new(BridgeProgress::default()));
    let reporter = qemu_reporter(label, a, &opts, Arc::clone(&milestones), app_run)?;
    let mut bridge = bridge_of(a, command, magic, checkpoint);
    bridge.token.clone_from(&cosim.token);
    bridge.trace_out = trace_out;
    bridge.timeline = cosim.timeline.target(cosim.out.as_deref())?;
    if bridge.timeline.is_some() {
        let board = fsin::timeline::CounterBoard::default();
        opts.counters = Some(board.clone());
        bridge.counters = Some(board);
    }
    bridge.pin_collectives = traces.pin;
    bridge.region_checkpoint = region;
    bridge.go_seed = Some(opts.config.net.rseed);
    bridge.mpi_trace = traces.mpi.clone().map(|path| mpi_in::MpiTraceOut {
        replay: format!(
            "fsin run tracefile={} {}",
            path.display(),
            replay_keys(cosim, &opts.config)
        ),
        path,
        preconnected: a.mpi_preconnect,
    });
    let guests = Guests::new(bridge, milestones, a.app);
    let report = runtime()?.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("cannot listen on loopback")?;
        anyhow::Ok(session::run(opts, listener, guests, interrupted()).await?)
    });
    reporter.finish();
    let mut report = report?;
    let measure = lockstep && !a.speed_child && sync_client::signals::requested().is_none();
    if let (true, Some(ran)) = (measure, report.nodes.ran.as_mut()) {
        machine_figures(&mut ran.wall, a.guest.guests, a.guest.icount_shift);
    }
    Ok(report)
}

/// What this machine can do, beside a lock-step run's rounds and wall
/// time (`wall` in the report): the futex floor for as many processes as
/// guests and the bound of the guests' own speed (both measured once,
/// then cached: [`crate::machine`]). Not after a free run (its guest time
/// does not follow instructions) nor one a signal stopped.
fn machine_figures(w: &mut qemu_adapter::qemu::WallSplit, guests: u32, icount_shift: u32) {
    if w.region_rounds == 0 {
        return;
    }
    w.floor_rounds_per_s = crate::machine::floor::floor(guests);
    let Some(guest_s) = w.region_guest_s.filter(|s| *s > 0.0) else {
        return;
    };
    w.guest_alone_ips = crate::machine::speed::guest_speed(icount_shift);
    w.guests_bound_s = w.guest_alone_ips.map(|ips| {
        crate::machine::speed::bound_s(guests, guest_s, icount_shift, ips, crate::machine::cores())
    });
}

/// Where and how `--trace-out` writes, for a run of `cosim` with the
/// network of `cfg`: the replay keys (the run's settings, its slice ratio
/// and node clock) go on the trace's first lines.
fn trace_target(
    a: &QemuArgs,
    path: &std::path::Path,
    cosim: &CosimArgs,
    cfg: &fsin::config::Config,
) -> qemu_adapter::qemu::trace_out::TraceOut {
    let path = path.to_path_buf();
    let comment = format!(
        "# fsin qemu --trace-out: {} guests, the measured phase's frames; c in node cycles ({} ns)\n\
         # replay: fsin run tracefile={} {}\n",
        a.guest.guests,
        1u64 << a.guest.icount_shift,
        path.display(),
        replay_keys(cosim, cfg)
    );
    qemu_adapter::qemu::trace_out::TraceOut {
        path,
        format: a.trace_format,
        net_per_node: cfg.cosim.slice.net_per_node(),
        comment,
    }
}

/// The keys that replay a trace of a run of `cosim` with the network of
/// `cfg` as the run had it: the run's settings as given, and its network,
/// slice ratio, NIC latency, node clock and synchronisation (which an
/// MPI-level replay follows) from the typed config.
fn replay_keys(cosim: &CosimArgs, cfg: &fsin::config::Config) -> String {
    // The keys that set the replay's network and clocks, written from the
    // typed config with the key table's own syntax; the run's other
    // settings as given (a key under any of its names counts once).
    const TYPED: [&str; 6] = [
        "topo",
        "fsin_cycle_relation",
        "node_cycle_relation",
        "nic_latency",
        "node_clock",
        "sync_mode",
    ];
    let typed: Vec<_> = TYPED
        .iter()
        .filter_map(|n| keys::lookup(n).map(|k| (n, k)))
        .collect();
    let is_typed = |setting: &String| {
        let name = setting.split('=').next().unwrap_or_default();
        keys::lookup(name).is_some_and(|k| typed.iter().any(|(_, t)| std::ptr::eq(k, *t)))
    };
    let changes = (cosim.changes.iter())
        .flat_map(|c| c.key_values())
        .map(|(k, v)| format!("{k}={v}"));
    let mut settings: Vec<String> = (cosim.settings.iter().cloned())
        .chain(changes)
        .filter(|s| !is_typed(s))
        .collect();
    settings.extend(typed.iter().map(|(n, k)| format!("{n}={}", (k.show)(cfg))));
    settings.join(" ")
}

/// Refuses, before any server starts, a run that cannot boot: the guest
/// image `image` or QEMU missing; the message says what to run.
fn ready_to_boot(image: &std::path::Path) -> anyhow::Result<()> {
    qemu_adapter::qemu::check_image(image)?;
    let qemu = std::process::Command::new(QEMU_BINARY)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !qemu.is_ok_and(|s| s.success()) {
        anyhow::bail!(
            "{QEMU_BINARY} cannot be run (run scripts/install-qemu.sh; `fsin doctor` checks the machine)"
        );
    }
    Ok(())
}

/// `fsin qemu`.
pub fn qemu(a: QemuArgs) -> anyhow::Result<()> {
    init_logging("warn");
    crate::bounds::seconds("--app-timeout", a.guest.app_timeout, true)?;
    if let Some(profile) = &a.calibrate {
        return calibrate::calibrate(&a, profile);
    }
    let command = a.command()?;
    // The bridge's own ranges (--guests, --cpus), before anything starts.
    if let Err(qemu_adapter::qemu::QemuError::Range {
        option,
        value,
        range,
    }) = bridge_of(&a, command.as_deref(), true, None).check()
    {
        return Err(ConfigError::BadValue {
            key: option.into(),
            value,
            origin: Origin::CommandLine,
            reason: range,
        }
        .into());
    }
    if let (Some(_), Some(_)) = (&a.vary, &a.cosim.timeline.timeline) {
        return Err(ConfigError::Combination {
            key: "--timeline".into(),
            reason: "draws one run; with --vary, each value's run would overwrite it".into(),
        }
        .into());
    }
    if let (Some(_), Some(_)) = (&a.vary, &a.trace_out) {
        return Err(ConfigError::Combination {
            key: "--trace-out".into(),
            reason: "writes the trace of one run; with --vary, each value's run would overwrite it"
                .into(),
        }
        .into());
    }
    if a.trace_level.contains(&TraceLevel::Mpi) && command.is_none() {
        return Err(ConfigError::Combination {
            key: "--trace-level mpi".into(),
            reason: "traces the ranks of an MPI application: give --run CMD or --app NAME".into(),
        }
        .into());
    }
    if let Some(vary) = &a.vary {
        let Some(command) = &command else {
            return Err(ConfigError::Combination {
                key: "--vary".into(),
                reason: "varies the run of an application: give --run CMD or --app NAME".into(),
            }
            .into());
        };
        return study::study(&a, vary, command);
    }
    if a.checkpoint.is_some()
        && (a.guest.timing != qemu_adapter::qemu::Mode::Lockstep || command.is_none())
    {
        return Err(ConfigError::Combination {
            key: "--checkpoint".into(),
            reason: "keeps a booted cluster for the runs of an application in lock-step: give --run CMD or --app NAME, without --timing free".into(),
        }
        .into());
    }
    let r = run_from(
        &a,
        &a.cosim,
        command.as_deref(),
        "fsin qemu".into(),
        a.checkpoint.as_deref(),
        &a.trace_files(a.trace_out.as_deref()),
    )?;
    let results = r.nodes.app().and_then(|app| app.results.as_ref());
    if let (Some(dir), Some(App::Netpipe), Some(results)) = (&a.cosim.out, a.app, results) {
        write_netpipe_plot(dir, results)?;
    }
    finish(&a.cosim, &r, &r.nodes.text())?;
    match (command, r.nodes.app_exit()) {
        (Some(_), Some(0)) | (None, _) => Ok(()),
        (Some(_), code) => {
            let what = match (code, &r.nodes.guest_fault) {
                (Some(c), _) => format!("the command exited with {c}"),
                (None, Some(_)) => "the run failed: see its guest fault above".into(),
                (None, None) => "the command did not end".into(),
            };
            eprintln!("fsin qemu: {what} (exit code 1)");
            Err(RunFailed { code: 1 }.into())
        }
    }
}

/// Writes `netpipe.svg` (throughput against message size) into `dir`.
fn write_netpipe_plot(dir: &std::path::Path, results: &Value) -> anyhow::Result<()> {
    let points: Vec<(f64, f64)> = results["points"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .filter_map(|p| Some((p["bytes"].as_f64()?, p["mbps"].as_f64()?)))
                .collect()
        })
        .unwrap_or_default();
    if points.is_empty() {
        return Ok(());
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let svg = study::plots::netpipe_svg(&points)
        .map_err(|e| anyhow::anyhow!("cannot draw netpipe.svg: {e}"))?;
    let path = dir.join("netpipe.svg");
    std::fs::write(&path, svg).with_context(|| format!("cannot write {}", path.display()))
}
