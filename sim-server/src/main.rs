//! `fsin`: the command-line front end (see `fsin --help`).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use fsin::config::{keys, ConfigBuilder, ConfigError, Origin};
use fsin::sim::{self, RunOptions};
use fsin::stats::report;

mod cosim_cli;
use cosim_cli::{DemoArgs, QemuArgs, ServeArgs, SweepArgs};

/// Exit code for bad input (configuration, arguments).
const EXIT_BAD_INPUT: u8 = 2;

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
        fsin bench                                speed and memory benchmark (use a release build)\n  \
        fsin demo --nodes 16 --workload all2all   co-simulation of 16 emulated nodes on a 4x4 torus\n  \
        fsin serve --nodes 4 --slice 20:1000      wait for 4 node simulators on 127.0.0.1:50051"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a network with synthetic traffic and print its statistics.
    Run(RunArgs),
    /// Measure simulated cycles per second and peak memory on 2D tori.
    Bench(BenchArgs),
    /// Co-simulation server: node simulators attach over gRPC (fsin.v1) and
    /// run in slice-based lock-step; their Ethernet frames cross the network.
    Serve(ServeArgs),
    /// Start a server and N fake-node processes on loopback, run a workload
    /// to completion (or --slices K), and print the co-simulation report.
    Demo(DemoArgs),
    /// Slice-ratio study (seed 003, Table 1): one workload at several slice
    /// lengths plus exact mode; simulated vs wall time, table and plot.
    CosimSweep(SweepArgs),
    /// Run emulated node(s) against a server (the `fake-node` binary).
    FakeNode(sync_client::fake_node::Args),
    /// Start a server and QEMU Linux guests (through nic-bridge) that ping
    /// each other across the simulated network; build the guest image
    /// first with scripts/install-qemu.sh.
    Qemu(QemuArgs),
    /// Run QEMU guests against a server (the `nic-bridge` binary).
    NicBridge(nic_bridge::qemu::Args),
    /// Show documentation: `fsin help config` lists every configuration key.
    Help {
        /// Topic: config.
        topic: Option<String>,
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
    /// Also write report.json and batches.csv into this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Settings that override the file, e.g. topo=torus_16_16 load=0.3.
    #[arg(value_name = "KEY=VALUE")]
    settings: Vec<String>,
}

#[derive(clap::Args)]
struct BenchArgs {
    /// Measured cycles per configuration.
    #[arg(long, default_value_t = 20_000)]
    cycles: u64,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Only the configurations whose name contains this text.
    #[arg(long)]
    filter: Option<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(a) => cmd_run(a),
        Command::Serve(a) => cosim_cli::serve(a),
        Command::Demo(a) => cosim_cli::demo(a),
        Command::CosimSweep(a) => cosim_cli::sweep(a),
        Command::FakeNode(a) => return sync_client::fake_node::main_with(&a),
        Command::Qemu(a) => cosim_cli::qemu(a),
        Command::NicBridge(a) => return nic_bridge::qemu::main_with(&a),
        Command::Bench(a) => match fsin::bench::child() {
            Ok(true) => Ok(()),
            Ok(false) => fsin::bench::run(a.cycles, a.json, a.filter.as_deref()),
            Err(e) => Err(e),
        },
        Command::Help { topic } => help(topic.as_deref()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if let Some(f) = e.downcast_ref::<cosim_cli::RunFailed>() {
                return ExitCode::from(f.code);
            }
            eprintln!("fsin: error: {e:#}");
            if e.downcast_ref::<ConfigError>().is_some() {
                ExitCode::from(EXIT_BAD_INPUT)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn help(topic: Option<&str>) -> anyhow::Result<()> {
    match topic {
        Some("config") => {
            print!("{}", keys::help_text());
            Ok(())
        }
        other => Err(ConfigError::BadValue {
            key: "help".into(),
            value: other.unwrap_or("").into(),
            origin: Origin::CommandLine,
            reason: "topics: config".into(),
        }
        .into()),
    }
}

fn cmd_run(a: RunArgs) -> anyhow::Result<()> {
    let mut b = ConfigBuilder::new();
    if let Some(path) = &a.config {
        b.load_file(path)?;
    }
    for s in &a.settings {
        b.set_text(s, Origin::CommandLine)?;
    }
    let cfg = b.build()?;
    let tty = std::io::stderr().is_terminal();
    let json = a.json;
    let opts = RunOptions {
        progress: tty,
        on_partial: (!json && cfg.pinterval > 0).then(|| {
            let mut header = true;
            Box::new(move |p: &fsin::sim::Partial| {
                eprintln!("{}", report::partial_line(p, header));
                header = false;
            }) as fsin::sim::PartialSink
        }),
    };
    let rep = sim::run(&cfg, opts);
    if let Some(dir) = &a.out {
        report::write_files(&rep, dir)?;
    }
    if json {
        println!("{}", serde_json::to_string(&rep)?);
    } else {
        print!("{}", report::text(&rep));
    }
    Ok(())
}
