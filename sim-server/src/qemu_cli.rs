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
use fsin::config::{ConfigError, Origin};
use fsin_cosim::progress::CosimPhase;
use fsin_cosim::qemu_study::{self, StudyPoint};
use fsin_cosim::report::CosimReport;
use fsin_cosim::server;
use qemu_adapter::apps::App;
use qemu_adapter::qemu::{BridgeLine, BridgeProgress, QEMU_BINARY};
use serde_json::{json, Map, Value};
use tokio::io::AsyncBufReadExt;

use crate::cosim_cli::{
    config, cosim_facts, finish_with, init_logging, interrupted, name, options, runtime,
    write_study, CosimArgs, RunFailed,
};
use crate::progress::{Reporter, Status};

#[derive(clap::Args)]
pub struct QemuArgs {
    /// Linux guests (QEMU processes), one per node 0..N-1.
    #[arg(long, default_value_t = 2)]
    guests: u32,
    /// How guest time follows the network. Lock-step always boots in
    /// warm-up (--warmup): long slices until guest 0's magic packet.
    #[arg(long, value_enum, default_value = "lockstep")]
    timing: qemu_adapter::qemu::Mode,
    /// Guest image directory with vmlinuz and initramfs.cpio.gz (default:
    /// what scripts/install-qemu.sh builds in $FSIN_GUEST_DIR or
    /// ~/.cache/fsin-guest: the busybox image, or its mpi/ image with --run
    /// or --app).
    #[arg(long, value_name = "DIR")]
    image: Option<PathBuf>,
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
    /// Kill the command after this many seconds of guest time (exit code
    /// 124, `app.timed_out`).
    #[arg(long, default_value_t = 3600.0, value_name = "S")]
    app_timeout: f64,
    /// Run the application once per value of one setting and write a table,
    /// study.csv, study.json and study.svg (guest-measured and wall time per
    /// value) under --out: `slice=20:1000,200:10000` (the --slice values,
    /// the Simics paper's Table 1) or any network key, `intransit_pr=0,1`.
    #[arg(long, value_name = "KEY=V1,V2,...")]
    vary: Option<String>,
    /// vCPUs per guest, 1 to 8 (QEMU's -smp; in lock-step they take turns
    /// on one host thread and share the guest's clock).
    #[arg(long, default_value_t = 1, value_name = "N")]
    cpus: u32,
    /// Guest RAM in MiB (default 128; 512 with --run or --app). A guest
    /// takes host memory only for the RAM it touches.
    #[arg(long, value_name = "MB")]
    memory_mb: Option<u32>,
    /// Pings each guest sends to every other guest (default 5; 0 with --run
    /// or --app).
    #[arg(long)]
    pings: Option<u32>,
    /// Ping payload in bytes (the frame is 42 bytes longer).
    #[arg(long, default_value_t = 56)]
    ping_bytes: u32,
    /// After the pings, run the guests' benchmark with B-byte messages: UDP
    /// ping-pong between guests 0 and 1 and a TCP all-to-all (0: none).
    #[arg(long, default_value_t = 0, value_name = "B")]
    bench_bytes: u32,
    /// With --timing lockstep, guest time per instruction is 2^N ns; the
    /// node clock (node_clock) is then 10^9 / 2^N Hz.
    #[arg(long, default_value_t = 3, value_name = "N")]
    icount_shift: u32,
    /// Wall-clock length of a slice with --timing free, milliseconds.
    #[arg(long, default_value_t = 1)]
    tick_ms: u64,
    /// Write each guest's console to DIR/guest-N.log.
    #[arg(long, value_name = "DIR")]
    logs: Option<PathBuf>,
    /// Fault injection: guest I panics its kernel once its NIC is up.
    #[arg(long, value_name = "I")]
    crash_guest: Option<u32>,
    /// Make host directory DIR readable in every guest at /mnt/host (a
    /// read-only snapshot taken when the run starts), e.g. MPI programs
    /// built with mpicc on a Debian 12 host: `--share bin/ --run 'mpirun
    /// --hostfile /etc/fsin/hostfile -np 4 /mnt/host/prog'`. Needs the MPI
    /// image (or another with a shared root).
    #[arg(long, value_name = "DIR")]
    share: Option<PathBuf>,
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
    #[command(flatten)]
    cosim: CosimArgs,
}

impl QemuArgs {
    /// The shell command guest 0 runs: --run, or the named application's.
    fn command(&self) -> Result<Option<String>, ConfigError> {
        match (&self.run, self.app) {
            (Some(cmd), _) => Ok(Some(cmd.clone())),
            (None, Some(app)) => app
                .command(self.guests, self.app_size)
                .map(Some)
                .map_err(|e| ConfigError::BadValue {
                    key: "--app".into(),
                    value: app.name().into(),
                    origin: Origin::CommandLine,
                    reason: e.to_string(),
                }),
            (None, None) => Ok(None),
        }
    }
}

/// One run: the server's report and the guests' results merged into one
/// JSON object, the text lines that go after the report, and whether the
/// application ran and exited 0.
struct QemuRun {
    report: CosimReport,
    extra: Map<String, Value>,
    text: String,
    /// `Some(code)` when a command ran; `None` when there was none or it
    /// never ended.
    app_exit: Option<i32>,
    /// nic-bridge gave a result (else its messages say why).
    bridge_ok: bool,
    /// The run booted the guests and saved them (`--checkpoint`).
    saved: bool,
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
    let (guests, clock, slices) = (a.guests, opts.config.node_clock_hz, opts.slices);
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
        }
    })?)
}

/// The guest image a run boots: --image, else the default (the MPI image
/// for an application).
fn image_of(a: &QemuArgs, app_run: bool) -> PathBuf {
    a.image.clone().unwrap_or_else(|| {
        let d = qemu_adapter::qemu::default_image_dir();
        if app_run {
            d.join("mpi")
        } else {
            d
        }
    })
}

/// Guest RAM of a run, MiB: --memory-mb, else 512 for an application and
/// 128 otherwise.
fn memory_of(a: &QemuArgs, app_run: bool) -> u32 {
    a.memory_mb.unwrap_or(if app_run { 512 } else { 128 })
}

/// nic-bridge's arguments for the guests of `a` (all but the server's
/// address and the output format): `command` on guest 0, the magic packet
/// when the server warms up, `checkpoint`'s directory.
fn bridge_args(
    a: &QemuArgs,
    command: Option<&str>,
    magic: bool,
    checkpoint: Option<&std::path::Path>,
) -> Vec<std::ffi::OsString> {
    let app_run = command.is_some();
    let pings = a.pings.unwrap_or(if app_run { 0 } else { 5 });
    let mut args: Vec<std::ffi::OsString> = vec![
        "--icount-shift".into(),
        a.icount_shift.to_string().into(),
        "--guests".into(),
        a.guests.to_string().into(),
        "--timing".into(),
        name(a.timing).into(),
        "--image".into(),
        image_of(a, app_run).into(),
        "--pings".into(),
        pings.to_string().into(),
        "--ping-bytes".into(),
        a.ping_bytes.to_string().into(),
        "--bench-bytes".into(),
        a.bench_bytes.to_string().into(),
        "--memory-mb".into(),
        memory_of(a, app_run).to_string().into(),
        "--cpus".into(),
        a.cpus.to_string().into(),
        "--app-timeout".into(),
        a.app_timeout.to_string().into(),
        "--tick-ms".into(),
        a.tick_ms.to_string().into(),
    ];
    let mut path = |flag: &str, p: &std::path::Path| {
        args.push(flag.into());
        args.push(p.into());
    };
    if let Some(d) = &a.logs {
        path("--logs", d);
    }
    if let Some(d) = &a.share {
        path("--share", d);
    }
    if let Some(d) = checkpoint {
        path("--checkpoint", d);
    }
    if let Some(c) = command {
        args.push("--run".into());
        args.push(c.into());
    }
    if magic {
        args.push("--magic".into());
    }
    if let Some(i) = a.crash_guest {
        args.push("--crash-guest".into());
        args.push(i.to_string().into());
    }
    args
}

/// Whether `dir` holds a checkpoint that the guests of `a` running
/// `command` can start from; the reason when not.
fn checkpoint_ready(
    a: &QemuArgs,
    command: &str,
    dir: &std::path::Path,
) -> anyhow::Result<Result<(), String>> {
    // Lock-step runs always warm up: the magic packet starts the measure.
    let args = bridge_args(a, Some(command), true, Some(dir));
    let bridge =
        qemu_adapter::qemu::Args::parse_from_args(args).context("nic-bridge's arguments")?;
    let id = qemu_adapter::qemu::identity(&bridge)?;
    Ok(match qemu_adapter::checkpoint::find(dir, &id) {
        qemu_adapter::checkpoint::Found::Ready(_) => Ok(()),
        qemu_adapter::checkpoint::Found::Missing(why) => Err(why),
    })
}

/// Runs the application once with the settings of `cosim`, from the
/// checkpoint in `dir` when given: booting and saving the cluster there
/// first (with the default slice and no capture, so that the checkpoint
/// does not depend on what a study varies) when it holds none for this
/// run.
fn run_from(
    a: &QemuArgs,
    cosim: &CosimArgs,
    command: Option<&str>,
    label: String,
    dir: Option<&std::path::Path>,
) -> anyhow::Result<QemuRun> {
    if let (Some(dir), Some(cmd)) = (dir, command) {
        if let Err(why) = checkpoint_ready(a, cmd, dir)? {
            eprintln!(
                "fsin qemu: {why}; booting the {} guests once and saving them there",
                a.guests
            );
            let mut boot = a.cosim.clone();
            boot.slice = None;
            boot.pcap = None;
            boot.out = None;
            boot.json = false;
            let r = run_once(a, &boot, command, format!("{label}, boot"), Some(dir))?;
            if !r.saved {
                anyhow::bail!(
                    "the boot did not save the cluster in {}: {}",
                    dir.display(),
                    r.text.trim()
                );
            }
        }
    }
    run_once(a, cosim, command, label, dir)
}

/// Runs the guests once with the settings of `cosim` (from or into the
/// checkpoint directory `checkpoint`); `label` names the run in progress
/// lines.
fn run_once(
    a: &QemuArgs,
    cosim: &CosimArgs,
    command: Option<&str>,
    label: String,
    checkpoint: Option<&std::path::Path>,
) -> anyhow::Result<QemuRun> {
    let lockstep = a.timing == qemu_adapter::qemu::Mode::Lockstep;
    let topo = format!("topo=torus_{}", a.guests.max(2));
    let clock = format!(
        "node_clock={}",
        qemu_adapter::qemu::lockstep_clock_hz(a.icount_shift)
    );
    let mut defaults = vec![topo.as_str()];
    if lockstep {
        defaults.push(&clock);
    }
    let cfg = config(cosim, &defaults)?;
    let mut opts = options(cosim, cfg)?;
    // Booting takes billions of instructions: never in short slices.
    opts.warmup |= lockstep;
    let magic = opts.warmup;
    if cosim.nodes.is_none() {
        opts.nodes = opts.nodes.min(a.guests as usize);
    }
    if opts.nodes != a.guests as usize {
        anyhow::bail!(
            "--guests {} but --nodes {}: every node must be a guest",
            a.guests,
            opts.nodes
        );
    }
    let app_run = command.is_some();
    let image = image_of(a, app_run);
    let memory = memory_of(a, app_run);
    crate::doctor::fit_guests(a.guests, memory).map_err(|(detail, fix)| ConfigError::BadValue {
        key: "--guests".into(),
        value: a.guests.to_string(),
        origin: Origin::CommandLine,
        reason: format!("{detail}: {fix}"),
    })?;
    ready_to_boot(&image)?;
    let exe = crate::own_exe()?;
    let milestones = Arc::new(Mutex::new(BridgeProgress::default()));
    let reporter = qemu_reporter(label, a, &opts, Arc::clone(&milestones), app_run)?;
    let rt = runtime()?;
    let ran = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("cannot listen on loopback")?;
        let url = format!("http://{}", listener.local_addr()?);
        let mut cmd = tokio::process::Command::new(&exe);
        cmd.args(["nic-bridge", "--server", &url, "--json", "--progress-lines"])
            .args(bridge_args(a, command, magic, checkpoint));
        if let Some(t) = &cosim.token {
            cmd.env(sync_client::TOKEN_ENV, t);
        }
        let mut bridge = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .context("cannot start fsin nic-bridge")?;
        let stdout = bridge
            .stdout
            .take()
            .context("no pipe from nic-bridge's stdout")?;
        // A bridge that exits before the run ends (e.g. refused to attach)
        // stops the server after a grace period instead of leaving it
        // waiting for the guests.
        let (gone_tx, gone_rx) = tokio::sync::oneshot::channel::<()>();
        let bridge = tokio::spawn(async move {
            // Its progress lines as they come; the last other line is
            // its result.
            let mut lines = tokio::io::BufReader::new(stdout).lines();
            let mut last = None;
            while let Ok(Some(line)) = lines.next_line().await {
                match BridgeLine::parse(&line) {
                    Ok(BridgeLine::Progress { progress }) => {
                        *milestones.lock().unwrap_or_else(|e| e.into_inner()) = progress;
                    }
                    parsed => last = parsed.ok(),
                }
            }
            let status = bridge.wait().await;
            let _ = gone_tx.send(());
            status.map(|_| last)
        });
        let interrupt = async move {
            tokio::select! {
                why = interrupted() => why,
                () = async {
                    let _ = gone_rx.await;
                    tokio::time::sleep(Duration::from_secs(2)).await;
                } => "nic-bridge exited before the run ended".to_string(),
            }
        };
        let report = server::serve(opts, listener, interrupt).await?;
        let bridge = tokio::time::timeout(Duration::from_secs(30), bridge)
            .await
            .context("nic-bridge did not exit within 30 s of the end of the run")?
            .context("the nic-bridge task failed")?
            .context("nic-bridge failed")?;
        anyhow::Ok((report, bridge))
    });
    reporter.finish();
    let (report, bridge) = ran?;
    let mut extra = Map::new();
    let mut text = String::new();
    let mut app_exit = None;
    let mut saved = false;
    match &bridge {
        Some(BridgeLine::Failed { reason, .. }) => {
            extra.insert("guest_fault".into(), reason.as_str().into());
            text = format!("guest fault: {reason}\n");
        }
        Some(BridgeLine::Ran(b)) if b.error => {
            extra.insert("guest_fault".into(), b.reason.as_str().into());
            text = format!("guest fault: {}\n", b.reason);
        }
        Some(BridgeLine::Ran(b)) => {
            extra.insert("sync_mode".into(), json!(report.mode));
            extra.insert("mode".into(), json!(b.mode));
            extra.insert("ping_sent".into(), b.ping_sent.into());
            extra.insert("ping_received".into(), b.ping_received.into());
            extra.insert("rtt_avg_us".into(), json!(b.rtt_avg_us));
            extra.insert("overrun_avg".into(), json!(b.overrun_avg));
            extra.insert("overrun_max".into(), b.overrun_max.into());
            extra.insert("pingpong_rtt_us".into(), json!(b.pingpong_rtt_us));
            extra.insert("a2a_us".into(), json!(b.a2a_us));
            extra.insert("a2a_cycles".into(), json!(b.a2a_cycles));
            extra.insert("guest_reports".into(), json!(b.guests));
            if let Some(c) = &b.checkpoint {
                extra.insert("checkpoint".into(), json!(c));
                saved = c.saved;
                text.push_str(&if c.saved {
                    format!(
                        "checkpoint: saved the booted guests in {} ({} MiB, {:.1} s)\n",
                        c.dir.display(),
                        c.bytes >> 20,
                        c.wall_s
                    )
                } else {
                    format!(
                        "checkpoint: restored the guests from {} in {:.1} s (saved at {:.3} guest s)\n",
                        c.dir.display(),
                        c.wall_s,
                        c.guest_s
                    )
                });
            }
            text = format!(
                "guests: {} pings sent, {} answered, mean RTT {} us (guest-measured)\n",
                b.ping_sent,
                b.ping_received,
                b.rtt_avg_us.map_or("-".into(), |r| format!("{r:.1}"))
            );
            if let Some(outcome) = &b.app {
                app_exit = outcome.exit_code;
                let mut app = match json!(outcome) {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
                if let Some(named) = a.app {
                    app.insert("name".into(), named.name().into());
                    app.insert("results".into(), named.results(&outcome.output));
                }
                text.push_str(&app_text(&app));
                extra.insert("app".into(), Value::Object(app));
            }
        }
        Some(BridgeLine::Progress { .. }) | None => {}
    }
    extra.insert("guests".into(), a.guests.into());
    Ok(QemuRun {
        report,
        extra,
        text,
        app_exit,
        bridge_ok: bridge.is_some(),
        saved,
    })
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

/// The text report's lines about the application.
fn app_text(app: &Map<String, Value>) -> String {
    let num = |k: &str| app.get(k).and_then(Value::as_f64);
    let what = match app.get("name").and_then(Value::as_str) {
        Some(named) => format!("--app {named}"),
        None => app
            .get("command")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    };
    let mut s = format!(
        "application: {}\n  exit code {}, {} guest s, {} wall s{}\n",
        what.lines().next().unwrap_or_default(),
        app.get("exit_code")
            .and_then(Value::as_i64)
            .map_or("- (did not end)".into(), |c| c.to_string()),
        num("guest_s").map_or("-".into(), |s| format!("{s:.6}")),
        num("wall_s").map_or("-".into(), |s| format!("{s:.1}")),
        if app.get("timed_out") == Some(&true.into()) {
            " (timed out: killed after --app-timeout)"
        } else {
            ""
        }
    );
    if let Some(out) = app.get("output").and_then(Value::as_str) {
        s.push_str("  output (last 8 KiB):\n");
        for l in out.lines() {
            s.push_str("  | ");
            s.push_str(l);
            s.push('\n');
        }
    }
    if let Some(Value::Object(r)) = app.get("results") {
        match r.get("points").and_then(Value::as_array) {
            Some(points) => s.push_str(&format!("  results: {} points", points.len())),
            None => s.push_str(&format!("  results: {} values", r.len())),
        }
        for k in [
            "latency_us",
            "max_mbps",
            "HPL_Tflops",
            "AvgPingPongLatency_usec",
        ] {
            if let Some(v) = r.get(k).filter(|v| !v.is_null()) {
                s.push_str(&format!(", {k} {v}"));
            }
        }
        s.push('\n');
    }
    s
}

/// `fsin qemu`.
pub fn qemu(a: QemuArgs) -> anyhow::Result<()> {
    init_logging("warn");
    if !(a.app_timeout.is_finite() && a.app_timeout >= 0.0) {
        return Err(ConfigError::BadValue {
            key: "--app-timeout".into(),
            value: a.app_timeout.to_string(),
            origin: Origin::CommandLine,
            reason: "expected seconds of guest time, 0 or more".into(),
        }
        .into());
    }
    let command = a.command()?;
    if let Some(vary) = &a.vary {
        let Some(command) = &command else {
            return Err(ConfigError::Combination {
                key: "--vary".into(),
                reason: "varies the run of an application: give --run CMD or --app NAME".into(),
            }
            .into());
        };
        return study(&a, vary, command);
    }
    if a.checkpoint.is_some()
        && (a.timing != qemu_adapter::qemu::Mode::Lockstep || command.is_none())
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
    )?;
    if let (Some(dir), Some(App::Netpipe), Some(Value::Object(app))) =
        (&a.cosim.out, a.app, r.extra.get("app"))
    {
        write_netpipe_plot(dir, &app["results"])?;
    }
    finish_with(&a.cosim, &r.report, r.extra, &r.text)?;
    if !r.bridge_ok {
        anyhow::bail!("nic-bridge gave no result (see its messages above)");
    }
    match (command, r.app_exit) {
        (Some(_), Some(0)) | (None, _) => Ok(()),
        (Some(_), code) => {
            eprintln!(
                "fsin qemu: the command {} (exit code 1)",
                code.map_or("did not end".into(), |c| format!("exited with {c}"))
            );
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
    let svg = qemu_study::netpipe_svg(&points)
        .map_err(|e| anyhow::anyhow!("cannot draw netpipe.svg: {e}"))?;
    let path = dir.join("netpipe.svg");
    std::fs::write(&path, svg).with_context(|| format!("cannot write {}", path.display()))
}

/// A study's checkpoint directory when no --checkpoint is given, removed
/// when the study ends.
struct TempCheckpoint(PathBuf);

impl TempCheckpoint {
    fn new() -> anyhow::Result<TempCheckpoint> {
        let d = std::env::temp_dir().join(format!("fsin-checkpoint-{}", std::process::id()));
        std::fs::create_dir_all(&d).with_context(|| format!("cannot create {}", d.display()))?;
        Ok(TempCheckpoint(d))
    }
}

impl Drop for TempCheckpoint {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `fsin qemu --vary`: the application once per value.
fn study(a: &QemuArgs, vary: &str, command: &str) -> anyhow::Result<()> {
    let fsin::sweep::Vary { key, values } =
        fsin::sweep::parse_vary(vary).map_err(|e| crate::vary_error(vary, &e))?;
    // Every value is checked before anything boots: a bad one names itself
    // instead of failing after the runs before it.
    let runs = values
        .iter()
        .map(|v| {
            let mut cosim = a.cosim.clone();
            cosim.out = None;
            cosim.json = false;
            if key == "slice" {
                cosim.slice = Some(v.clone());
            } else {
                cosim.settings.push(format!("{key}={v}"));
            }
            config(&cosim, &[]).map(|_| cosim)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    // Lock-step studies boot once: every value starts from one checkpoint.
    let temporary = match (&a.checkpoint, a.timing) {
        (None, qemu_adapter::qemu::Mode::Lockstep) => Some(TempCheckpoint::new()?),
        _ => None,
    };
    let checkpoint = a
        .checkpoint
        .as_deref()
        .or(temporary.as_ref().map(|t| t.0.as_path()));
    let mut points = Vec::new();
    for (k, (v, cosim)) in values.iter().zip(&runs).enumerate() {
        eprintln!("fsin qemu --vary: {key}={v} ({}/{})", k + 1, values.len());
        let label = format!("fsin qemu ({key}={v}, {}/{})", k + 1, values.len());
        let r = run_from(a, cosim, Some(command), label, checkpoint)?;
        let app = r.extra.get("app").cloned().unwrap_or_default();
        let num = |k: &str| app.get(k).and_then(Value::as_f64);
        points.push(StudyPoint {
            key: key.clone(),
            value: v.clone(),
            exit_code: r.app_exit,
            guest_s: num("guest_s"),
            app_wall_s: num("wall_s"),
            wall_s: r.report.wall_s,
            slices: r.report.slices,
            slice_net_cycles: r.report.slice_net_cycles,
            slice_node_cycles: r.report.slice_node_cycles,
            frames_delivered: r.report.frames_delivered,
            frame_latency_avg: r.report.frame_latency_avg,
            results: app.get("results").cloned().unwrap_or(Value::Null),
            fault: r.extra.get("guest_fault").cloned(),
        });
        if let Some(dir) = &a.cosim.out {
            let point_dir = dir.join(format!("run-{k}"));
            std::fs::create_dir_all(&point_dir)
                .with_context(|| format!("cannot create {}", point_dir.display()))?;
            let mut json = serde_json::to_value(&r.report)?;
            if let Some(m) = json.as_object_mut() {
                m.extend(r.extra);
            }
            std::fs::write(
                point_dir.join("report.json"),
                serde_json::to_string_pretty(&json)?,
            )?;
        }
        if r.report.end_reason.starts_with("interrupted by") {
            eprintln!(
                "fsin qemu --vary: {}; the study stops with {} of {} values",
                r.report.end_reason,
                k + 1,
                values.len()
            );
            break;
        }
    }
    if let Some(dir) = &a.cosim.out {
        write_study(
            dir,
            "study",
            &qemu_study::csv(&points),
            &points,
            qemu_study::svg(&points),
        )?;
    }
    if a.cosim.json {
        println!("{}", json!({ "vary": key, "points": points }));
    } else {
        print!("{}", qemu_study::table(&points));
    }
    if points.iter().any(|p| p.exit_code != Some(0)) {
        eprintln!("fsin qemu --vary: the command failed at some values (exit code 1)");
        return Err(RunFailed { code: 1 }.into());
    }
    Ok(())
}
