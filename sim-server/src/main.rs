//! `fsin`: the command-line front end (see `fsin --help`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

use fsin::config::{keys, ConfigBuilder, ConfigError, Origin};
use fsin::report;
use fsin::run::{RunError, RunOptions, Verdict};
use fsin::sim;
use fsin::traffic::kernels::{Kernel, KERNELS};

mod args;
mod bench_cli;
mod bounds;
mod cosim_cli;
mod doctor;
mod machine;
mod progress;
mod qemu_cli;
mod timeline_cli;
mod topology_cli;
use cosim_cli::{DemoArgs, ServeArgs, SweepArgs};
use progress::{ProgressArgs, Reporter, Status};
use qemu_cli::QemuArgs;

/// Exit code for bad input (configuration, arguments, trace syntax).
const EXIT_BAD_INPUT: u8 = 2;
/// Exit code for a workload that cannot finish (deadlocked trace).
const EXIT_CANNOT_FINISH: u8 = 3;

#[derive(Parser)]
#[command(
    name = "fsin",
    version,
    disable_help_subcommand = true,
    about = "Cycle-level interconnection-network simulator with FSIN (INSEE) semantics",
    long_about = "Cycle-level interconnection-network simulator with FSIN (INSEE) semantics.\n\n\
        Configuration uses INSEE's option names as KEY=VALUE (e.g. topo=torus_16_16 load=0.3 \
        vc=bubble rmode=oblivious); `fsin help config` lists every key with its default.",
    after_help = "Examples:\n  fsin run                                  8x8 torus, default settings\n  \
        fsin run topo=torus_16_16 load=0.1 --json\n  \
        fsin run --config fsin.conf rseed=3\n  \
        fsin run tracefile=app.trc placement=column link_bandwidth=1000   replay an MPI trace\n  \
        fsin run kernel=bu kernel_bytes=4096      butterfly kernel on every node, execution time\n  \
        fsin bench                                speed and memory benchmark (use a release build)\n  \
        fsin demo --nodes 16 --workload all2all   co-simulation of 16 emulated nodes on a 4x4 torus\n  \
        fsin serve --nodes 4 --slice 20:1000      wait for 4 node simulators on 127.0.0.1:50051\n  \
        fsin doctor --guests 16                   is this machine ready for 16 QEMU guests?\n  \
        fsin qemu --guests 2 topo=torus_2         two Linux guests ping each other through the network"
)]
struct Cli {
    /// Refuse (exit 2) any network whose memory estimate is above this
    /// many MiB; default: the memory the machine has available.
    #[arg(long, global = true, value_name = "MIB")]
    max_memory: Option<u64>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a network with synthetic traffic, an application kernel or
    /// a trace, and print its statistics; INSEE's methodology (warm-up,
    /// convergence, measured batches).
    #[command(after_help = "Examples:\n  \
        fsin run                                        8x8 torus, uniform traffic at load 0.05\n  \
        fsin run topo=torus_16_16 load=0.1 rmode=oblivious --json\n  \
        fsin run topo=fattree_4_3 routing=static load=0.3\n  \
        fsin run kernel=bu kernel_bytes=4096            butterfly kernel, execution time\n  \
        fsin run tracefile=app.trc placement=column     replay an MPI trace\n  \
        fsin run --config fsin.conf rseed=3 --out res/  settings from a file, report into res/")]
    Run(RunArgs),
    /// Run a configuration at every value of one key (in parallel), in
    /// one or more series (the designs compared), and write the table,
    /// CSV, JSON and plots: e.g. --vary load=0.05:0.6:0.05 gives latency
    /// vs accepted load and accepted vs offered load, a curve per series.
    #[command(after_help = "Examples:\n  \
        fsin sweep --vary load=0.05:0.6:0.05 --out sw/          latency and throughput curves in sw/\n  \
        fsin sweep --vary load=0.05:0.8:0.05 --series topo=torus_8_8,mesh_8_8 --out cmp/\n  \
        \x20                                                       two designs, one plot each kind\n  \
        fsin sweep --vary load=0.1:1:0.1 --series topo=torus_8_8 \\\n  \
        \x20   --series 'topo=file:df.anynet routing=duato nchan=4' --out cmp/\n  \
        \x20                                                       each series with keys of its own\n  \
        fsin sweep --vary load=0.1,0.3,0.5 topo=mesh_8_8 --json\n  \
        fsin sweep --vary rmode=oblivious,smart load=0.4       one point per request mode")]
    Sweep(LoadSweepArgs),
    /// Describe a topology: nodes, switches, links, diameter, average
    /// distance, bisection links and throughput bound (built, not taken
    /// from formulas).
    #[command(after_help = "Examples:\n  \
        fsin topology topo=torus_16_16\n  \
        fsin topology topo=thintree_8_4_4 --json\n  \
        fsin topology --write dragonfly_4_2_2 > df.edges       a generated graph, for topo=file:df.edges\n  \
        fsin topology topo=file:df.edges --out df              its bisection and df/topology.svg")]
    Topology(topology_cli::TopologyArgs),
    /// Measure simulated cycles per second and peak memory (tori, trees, SpiNNaker) against INSEE.
    #[command(after_help = "Examples:\n  \
        fsin bench                                       every case, 20,000 cycles each (use a release build)\n  \
        fsin bench --filter torus_16_16 --repeat 3\n  \
        fsin bench --insee \"$(scripts/build-insee.sh | tail -1)\" --filter torus_32_32   against INSEE in one sitting\n  \
        fsin bench --threads 2 --filter torus_32_32 --json")]
    Bench(BenchArgs),
    /// Co-simulation server: node simulators attach over gRPC (fsin.v1) and
    /// run in slice-based lock-step; their Ethernet frames cross the network.
    #[command(after_help = "Examples:\n  \
        fsin serve --nodes 4 --slice 20:1000              wait for 4 node simulators on 127.0.0.1:50051\n  \
        fsin serve --nodes 16 topo=torus_4_4 --mode parallel --pcap net.pcap\n  \
        fsin serve --nodes 8 --listen 0.0.0.0:50051 --token SECRET --out run/   nodes on other hosts")]
    Serve(ServeArgs),
    /// Start a server and N fake-node processes on loopback, run a workload
    /// to completion (or --slices K), and print the co-simulation report.
    #[command(after_help = "Examples:\n  \
        fsin demo                                         emulated nodes exchanging messages on a torus\n  \
        fsin demo --nodes 16 --workload all2all\n  \
        fsin demo --nodes 8 --slice 200:1000 --mode parallel --json\n  \
        fsin demo --nodes 8 --timeline demo.json --out d/    the rounds as a Perfetto timeline")]
    Demo(DemoArgs),
    /// Slice-ratio study (Simics paper, Table 1): one workload at several slice
    /// lengths plus exact mode; simulated vs wall time, table and plot.
    #[command(after_help = "Examples:\n  \
        fsin cosim-sweep                                  Table 1's slices on 8 fake nodes\n  \
        fsin cosim-sweep --nodes 16 --slices 20:1000,200:10000,2000:100000 --out t1/\n  \
        fsin cosim-sweep --workload uniform --messages 50 --json")]
    CosimSweep(SweepArgs),
    /// Run emulated node(s) against a server (the `fake-node` binary).
    FakeNode(fake_node::Args),
    /// Start a server and QEMU Linux guests (through nic-bridge) whose every
    /// frame crosses the simulated network: they ping each other, or run a
    /// command / MPI application (--run, --app), once or per value of a
    /// setting (--vary); build the guest images first with
    /// scripts/install-qemu.sh (`fsin doctor` checks the machine).
    #[command(after_help = "Examples:\n  \
        fsin qemu --guests 2                              two Linux guests ping each other across the network\n  \
        fsin qemu --guests 2 --run 'mpirun --hostfile /etc/fsin/hostfile -np 2 hostname' topo=torus_2\n  \
        fsin qemu --guests 2 --app netpipe --out np/ topo=torus_2          NetPIPE curve, np/netpipe.svg\n  \
        fsin qemu --guests 4 --app is --trace-level mpi --trace-out is.dim  an MPI-level trace\n  \
        fsin qemu --guests 64 topo=torus_64 --app is --checkpoint ck64/ --vary intransit_pr=0,1 --repeat 3 --out ipr/\n  \
        \x20                                                 the Simics paper's study, from a checkpoint")]
    Qemu(QemuArgs),
    /// Run QEMU guests against a server (the `nic-bridge` binary).
    NicBridge(qemu_adapter::qemu::Args),
    /// Write an application kernel (thin-trees paper, 4.3) as an FSIN .trc,
    /// Dimemas or alog trace,
    /// e.g. to edit it or to replay it with tracefile=; `fsin run
    /// kernel=NAME` replays it directly.
    #[command(after_help = "Examples:\n  \
        fsin kernel m3 --tasks 64 --bytes 1024 -o m3.trc  a kernel as an FSIN trace\n  \
        fsin kernel bu -n 64 --format dimemas -o bu.dim")]
    Kernel(KernelArgs),
    /// Check this machine for QEMU guests: QEMU 10.0 and the plugin, the
    /// guest images, /dev/shm, memory and cores for --guests N, loopback
    /// ports; one line per check with what to run to fix it. Exit code 0
    /// when everything is ready, 1 otherwise.
    #[command(after_help = "Examples:\n  \
        fsin doctor                                       ready for 2 guests?\n  \
        fsin doctor --guests 64 --memory-mb 512\n  \
        fsin doctor --json")]
    Doctor(doctor::DoctorArgs),
    /// One of the processes `fsin qemu` measures its futex floor with
    /// (internal).
    #[command(hide = true)]
    FloorChild {
        /// The shared file.
        path: PathBuf,
        /// Processes woken every round.
        n: u32,
    },
    /// Show documentation: `fsin help` lists the topics; `fsin help
    /// COMMAND` is that command's help, `fsin help config` lists every
    /// configuration key and `fsin help config KEY` explains one.
    #[command(after_help = "Examples:\n  \
        fsin help                                         the topics\n  \
        fsin help sweep                                   one command's help, as fsin sweep --help\n  \
        fsin help config                                  every key, in groups\n  \
        fsin help config load                             one key")]
    Help {
        /// Topic: a command (run, sweep, qemu, ...) or config.
        topic: Option<String>,
        /// With config: the key to explain (e.g. load).
        key: Option<String>,
    },
}

#[derive(clap::Args)]
struct RunArgs {
    /// Configuration file: INSEE-style key=value lines, or TOML (*.toml).
    #[arg(long, short = 'c', value_name = "FILE")]
    config: Option<PathBuf>,
    /// Print one JSON object (last line of stdout) instead of the text report.
    #[arg(long)]
    json: bool,
    /// The text report opens with every setting, not only those that
    /// differ from the defaults.
    #[arg(long, short = 'v')]
    verbose: bool,
    /// Also write report.json and batches.csv into this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    #[command(flatten)]
    progress: ProgressArgs,
    #[command(flatten)]
    timeline: timeline_cli::TimelineArgs,
    /// Settings that override the file, e.g. topo=torus_16_16 load=0.3.
    #[arg(value_name = "KEY=VALUE")]
    settings: Vec<String>,
}

#[derive(clap::Args)]
struct LoadSweepArgs {
    /// Configuration file: INSEE-style key=value lines, or TOML (*.toml).
    #[arg(long, short = 'c', value_name = "FILE")]
    config: Option<PathBuf>,
    /// The key to vary: KEY=START:END:STEP (inclusive) or KEY=V1,V2,...
    #[arg(long, value_name = "KEY=RANGE")]
    vary: String,
    /// A series (a curve in the plots): KEY=V1,V2,... is a series per
    /// value; 'K1=V1 K2=V2 ...' is one series with those settings. Give it
    /// again for more: value lists multiply, settings add alternatives.
    #[arg(long, value_name = "SERIES")]
    series: Vec<String>,
    /// Write sweep.csv, sweep.json and SVG plots (latency.svg and
    /// throughput.svg when varying load, else sweep.svg) into DIR.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print one JSON object (last line of stdout) instead of the table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    progress: ProgressArgs,
    /// Settings shared by every point, e.g. topo=torus_8_8 cycles=20000.
    #[arg(value_name = "KEY=VALUE")]
    settings: Vec<String>,
}

#[derive(clap::Args)]
struct KernelArgs {
    /// Kernel: all2all, w2, w3, m2, m3, bu, bt, wf (see `fsin help config`,
    /// key kernel); or an MPI-level trace file (`fsin qemu --trace-level
    /// mpi`), written with its collectives expanded into the frames its
    /// replay sends (the mpi_* keys' defaults: the built-in profile, 8 ns node cycles; docs/model.md,
    /// "Replaying an MPI-level trace"): a frame trace.
    name: String,
    /// Tasks.
    #[arg(long, short = 'n', default_value_t = 64)]
    tasks: u32,
    /// Message size in bytes.
    #[arg(long, short = 'b', default_value_t = 40_960)]
    bytes: u64,
    /// Output file (default: standard output).
    #[arg(long, short = 'o', value_name = "FILE")]
    out: Option<PathBuf>,
    /// Trace format: trc (FSIN), dimemas or alog, all three read by
    /// tracefile= and by INSEE.
    #[arg(long, short = 'f', default_value = "trc", value_parser = args::trace_format)]
    format: fsin_trace::TraceFormat,
}

#[derive(clap::Args)]
struct BenchArgs {
    /// Measured cycles per configuration.
    #[arg(long, default_value_t = 20_000)]
    cycles: u64,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Only the cases whose `CASE@LOAD` contains this text (e.g.
    /// `torus_32_32`, `@0.5`, `dally3`; `cosim` for the co-simulated
    /// 1,024-node all-to-all and its overhead over the engine alone).
    #[arg(long)]
    filter: Option<String>,
    /// INSEE's own `fsin` (built by `scripts/build-insee.sh`): run on the
    /// same settings right before each fsin-rs run, so that the ratio is
    /// measured in one sitting (without it: INSEE's reference figures).
    #[arg(long, value_name = "BIN")]
    insee: Option<PathBuf>,
    /// Runs per case (with `--insee`: INSEE, fsin-rs, INSEE, ...).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    repeat: u32,
    /// Threads of fsin-rs's engine (the network key `threads`; INSEE has
    /// one): give it no more than the machine's free cores.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    threads: u32,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(mib) = cli.max_memory {
        fsin::limits::set_max_memory_mib(mib);
    }
    let result = match cli.command {
        Command::Run(a) => cmd_run(a),
        Command::Serve(a) => cosim_cli::serve(a),
        Command::Demo(a) => cosim_cli::demo(a),
        Command::CosimSweep(a) => cosim_cli::sweep(a),
        Command::FakeNode(a) => return fake_node::main_with(&a),
        Command::Qemu(a) => qemu_cli::qemu(a),
        Command::NicBridge(a) => return qemu_adapter::cli::main_with(&a),
        Command::Bench(a) => match bench_cli::child() {
            Ok(true) => Ok(()),
            Ok(false) => bench_cli::run(&bench_cli::BenchOptions {
                cycles: a.cycles,
                json: a.json,
                filter: a.filter.as_deref(),
                insee: a.insee,
                repeat: a.repeat,
                threads: a.threads,
            }),
            Err(e) => Err(e),
        },
        Command::Kernel(a) => kernel(&a),
        Command::Sweep(a) => cmd_sweep(&a),
        Command::Topology(a) => topology_cli::cmd_topology(&a),
        Command::Doctor(a) => match doctor::doctor(&a) {
            Ok(true) => Ok(()),
            Ok(false) => Err(cosim_cli::RunFailed { code: 1 }.into()),
            Err(e) => Err(e),
        },
        Command::FloorChild { path, n } => fsin_sync::floor::child(&path, n)
            .with_context(|| format!("cannot open {}", path.display())),
        Command::Help { topic, key } => help(topic.as_deref(), key.as_deref()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if let Some(f) = e.downcast_ref::<cosim_cli::RunFailed>() {
                return ExitCode::from(f.code);
            }
            eprintln!("fsin: error: {e:#}");
            match e.downcast_ref::<RunError>().map(RunError::verdict) {
                Some(Verdict::CannotFinish) => ExitCode::from(EXIT_CANNOT_FINISH),
                Some(Verdict::BadInput) => ExitCode::from(EXIT_BAD_INPUT),
                Some(Verdict::Failed) => ExitCode::FAILURE,
                None if e.downcast_ref::<ConfigError>().is_some()
                    || e.chain()
                        .any(|c| c.is::<fsin::traffic::placement::PlacementError>()) =>
                {
                    ExitCode::from(EXIT_BAD_INPUT)
                }
                None => ExitCode::FAILURE,
            }
        }
    }
}

/// `fsin help [TOPIC [KEY]]`: the topics; a command's help; every
/// configuration key, or one.
///
/// # Errors
/// An unknown topic or key (exit 2), naming the topics or keys there are.
fn help(topic: Option<&str>, key: Option<&str>) -> anyhow::Result<()> {
    let mut cli = <Cli as clap::CommandFactory>::command();
    let commands: Vec<String> = cli
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .filter(|n| n != "help")
        .collect();
    let bad = |key: &str, value: &str, reason: String| -> anyhow::Error {
        ConfigError::BadValue {
            key: key.into(),
            value: value.into(),
            origin: Origin::CommandLine,
            reason,
        }
        .into()
    };
    match (topic, key) {
        (None, _) => {
            println!("fsin help topics:\n  fsin help config        every configuration key (KEY=VALUE), its values and default\n  fsin help config KEY    one key, e.g. fsin help config load");
            // Each command with the first clause of what it does, wrapped.
            let opts = textwrap::Options::new(80)
                .subsequent_indent("                          ")
                .word_splitter(textwrap::WordSplitter::NoHyphenation);
            for c in cli.get_subcommands().filter(|c| c.get_name() != "help") {
                let about = c.get_about().map(|a| a.to_string()).unwrap_or_default();
                let first = about.split([':', ';']).next().unwrap_or_default();
                let first = first.split(". ").next().unwrap_or_default();
                let first = first.trim_end_matches(", e.g");
                let line = format!(
                    "  fsin help {:<13} {}",
                    c.get_name(),
                    first.trim_end_matches('.')
                );
                println!("{}", textwrap::fill(&line, &opts));
            }
            Ok(())
        }
        (Some("config"), None) => {
            print!("{}", keys::help_text());
            Ok(())
        }
        (Some("config"), Some(k)) => match keys::key_help(k) {
            Some(text) => {
                print!("{text}");
                Ok(())
            }
            None => Err(bad(
                "help config",
                k,
                "no such key; `fsin help config` lists them all".into(),
            )),
        },
        (Some(c), None) if commands.iter().any(|n| n == c) => {
            let sub = cli.find_subcommand_mut(c).expect("listed above");
            let mut sub = sub.clone().bin_name(format!("fsin {c}"));
            sub.print_long_help()?;
            Ok(())
        }
        (Some(other), _) => Err(bad(
            "help",
            other,
            format!("topics: config, {}", commands.join(", ")),
        )),
    }
}

fn cmd_sweep(a: &LoadSweepArgs) -> anyhow::Result<()> {
    let vary =
        fsin::sweep::parse_vary(&a.vary).map_err(|e| args::option_error("--vary", &a.vary, &e))?;
    let series =
        fsin::sweep::parse_series(&a.series, &vary).map_err(|e| ConfigError::BadValue {
            key: "--series".into(),
            value: a.series.join(" --series "),
            origin: Origin::CommandLine,
            reason: e.to_string(),
        })?;
    if let Some(dir) = &a.out {
        cosim_cli::out_dir(dir)?;
    }
    let points = (vary.values.len() * series.len()) as u64;
    let done = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let reporter = {
        let done = std::sync::Arc::clone(&done);
        Reporter::start("fsin sweep".into(), &a.progress, move || {
            let k = done.load(std::sync::atomic::Ordering::Relaxed);
            Status {
                phase: "running",
                facts: format!("{k}/{points} points done"),
                done: Some(k as f64 / points.max(1) as f64),
                note: None,
            }
        })?
    };
    let stop = sync_client::signals::stop_flag();
    let s = fsin::sweep::run(
        a.config.as_deref(),
        &a.settings,
        &vary,
        &series,
        &|| {
            done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        },
        Some(&stop),
    )
    .map_err(|e| match e {
        fsin::sweep::SweepError::Config(c) => anyhow::Error::from(c),
        fsin::sweep::SweepError::Run(r) => r.into(),
    })?;
    reporter.finish();
    if let Some(dir) = &a.out {
        let plots = s.plots().unwrap_or_else(|e| {
            eprintln!("fsin: no plot: {e}");
            Vec::new()
        });
        for path in fsin::study::write(dir, "sweep", &s.csv(), &s, &plots)? {
            eprintln!("plot: {}", path.display());
        }
    }
    if a.json {
        println!("{}", serde_json::to_string(&s)?);
    } else {
        print!("{}", s.table());
    }
    if let Some(sig) = s.points.iter().find_map(|p| p.report.interrupted) {
        eprintln!("fsin: interrupted by {sig}: the points report the cycles simulated so far");
        return Err(cosim_cli::RunFailed { code: 1 }.into());
    }
    Ok(())
}

fn kernel(a: &KernelArgs) -> anyhow::Result<()> {
    let bad = |key: &str, value: String, reason: String| ConfigError::BadValue {
        key: key.into(),
        value,
        origin: Origin::CommandLine,
        reason,
    };
    let path = std::path::Path::new(&a.name);
    if Kernel::named(&a.name).is_none() && path.is_file() {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        if !fsin_trace::mpi::read::is_mpi_trace(&text) {
            return Err(bad(
                "kernel",
                a.name.clone(),
                "a file must be an MPI-level trace of fsin qemu --trace-level mpi".into(),
            )
            .into());
        }
        let lowered = fsin_trace::mpi::read::parse(&text, &a.name)?
            .lower(&fsin::config::Config::default().traffic.app.mpi)?;
        return write_out(a, &lowered.write(a.format));
    }
    let k = Kernel::named(&a.name).ok_or_else(|| {
        let names: Vec<&str> = KERNELS.iter().map(|(n, _)| *n).collect();
        bad(
            "kernel",
            a.name.clone(),
            format!(
                "valid values are {}, or an MPI-level trace file",
                names.join(", ")
            ),
        )
    })?;
    k.check(a.tasks)
        .map_err(|reason| bad("--tasks", a.tasks.to_string(), reason.to_string()))?;
    write_out(a, &k.trace(a.tasks, a.bytes).write(a.format))
}

/// `text` to `fsin kernel`'s `-o FILE`, or to standard output.
fn write_out(a: &KernelArgs, text: &str) -> anyhow::Result<()> {
    match &a.out {
        Some(path) => std::fs::write(path, text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?,
        None => print!("{text}"),
    }
    Ok(())
}

fn cmd_run(a: RunArgs) -> anyhow::Result<()> {
    let cfg = ConfigBuilder::from_sources(&[], a.config.as_deref(), &a.settings)?.build()?;
    fsin::limits::check_memory(&cfg)?;
    if let Some(dir) = &a.out {
        cosim_cli::out_dir(dir)?;
    }
    if cfg.method.plevel != 0 && a.out.is_none() {
        return Err(ConfigError::Combination {
            key: "plevel".into(),
            reason: "the plevel outputs are files: give --out DIR".into(),
        }
        .into());
    }
    let json = a.json;
    let status = std::sync::Arc::new(fsin::drive::RunStatus::default());
    let reporter = run_reporter(
        &a.progress,
        std::sync::Arc::clone(&status),
        fsin::sim::expected_cycles(&cfg),
    )?;
    let opts = RunOptions {
        stop: Some(sync_client::signals::stop_flag()),
        progress: Some(status),
        detail_dir: a.out.clone(),
        timeline: a.timeline.spec(a.out.as_deref())?,
        on_partial: (!json && cfg.method.pinterval > 0).then(|| {
            let mut header = true;
            Box::new(move |p: &fsin::run::Partial| {
                eprintln!("{}", report::partial_line(p, header));
                header = false;
            }) as fsin::run::PartialSink
        }),
    };
    let rep = sim::run(&cfg, opts);
    reporter.finish();
    let rep = rep?;
    if let Some(dir) = &a.out {
        report::write_files(&rep, dir)?;
    }
    for f in &rep.files {
        eprintln!("wrote {f}");
    }
    if json {
        println!("{}", serde_json::to_string(&rep)?);
    } else {
        print!("{}", report::text(&rep, a.verbose));
    }
    if let Some(sig) = rep.interrupted {
        eprintln!(
            "fsin: interrupted by {sig} at cycle {}: the report covers the cycles simulated so far",
            rep.cycles
        );
        return Err(cosim_cli::RunFailed { code: 1 }.into());
    }
    if let Some(why) = rep.cannot_finish() {
        eprintln!("fsin: {why}");
        return Err(cosim_cli::RunFailed {
            code: EXIT_CANNOT_FINISH,
        }
        .into());
    }
    Ok(())
}

/// The progress line of `fsin run`: phase, cycle, pace and, for a trace,
/// the messages delivered.
fn run_reporter(
    args: &ProgressArgs,
    status: std::sync::Arc<fsin::drive::RunStatus>,
    cycles: Option<(u64, u64)>,
) -> anyhow::Result<Reporter> {
    let started = std::time::Instant::now();
    let mut pace_from: Option<(std::time::Instant, u64)> = None;
    let mut told = cycles.is_none();
    Ok(Reporter::start("fsin run".into(), args, move || {
        let s = status.snapshot();
        let pace = s.cycle as f64 / started.elapsed().as_secs_f64().max(1e-3);
        let mut facts = format!(
            "cycle {} ({} cycles/s)",
            progress::count(s.cycle),
            progress::count(pace as u64)
        );
        if let Some((sent, delivered)) = s.messages {
            facts.push_str(&format!(", {delivered} of {sent} messages delivered"));
        }
        // Once 2 s of cycles give a pace: how long the run will take, if
        // more than a minute.
        let mut note = None;
        if !told && s.cycle > 0 {
            let (t0, c0) = *pace_from.get_or_insert((std::time::Instant::now(), s.cycle));
            let dt = t0.elapsed().as_secs_f64();
            if dt >= 2.0 && s.cycle > c0 {
                told = true;
                let rate = (s.cycle - c0) as f64 / dt;
                note = cycles.and_then(|(least, most)| run_estimate(least, most, rate));
            }
        }
        Status {
            phase: s.phase.name(),
            facts,
            done: s.end.map(|e| s.cycle as f64 / e.max(1) as f64),
            note,
        }
    })?)
}

/// What to say before a long run: at `rate` cycles a second, a run of
/// `least` to `most` cycles; `None` when it takes under a minute.
fn run_estimate(least: u64, most: u64, rate: f64) -> Option<String> {
    let secs = |c: u64| std::time::Duration::from_secs_f64(c as f64 / rate.max(1e-9));
    let short = secs(least);
    if short.as_secs() < 60 {
        return None;
    }
    let mut text = format!(
        "at {} cycles/s this run takes about {} ({} cycles)",
        progress::count(rate as u64),
        progress::duration(short),
        progress::count(least)
    );
    if most > least {
        text.push_str(&format!(
            ", up to {} if convergence takes max_conv_time and max_samples batches",
            progress::duration(secs(most))
        ));
    }
    text.push_str("; Ctrl-C stops it with the report of what it simulated");
    Some(text)
}
