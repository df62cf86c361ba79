//! `fsin bench`: simulated cycles per wall-clock second and peak memory of
//! the engine with uniform traffic, in the configurations of the INSEE
//! reference figures and of the loaded networks of issue "Engine
//! throughput at load": 2D tori (`vc=bubble rmode=oblivious routing=dim
//! imode=dor`), a 16x16 torus with Dally's router and 3 VCs (`vc=dally
//! rmode=adaptive nchan=3`), a 4-ary 4-tree and an 8:4-ary 4-thin-tree
//! (adaptive routing), a 16x16 SpiNNaker torus (INSEE's router: `hol=0`,
//! bubble, smart requests), all with `plength=16_4 tql=4 iql=4` and 2 VCs
//! unless said otherwise. Each configuration runs in a child process so
//! that its peak resident memory (VmHWM) is its own.
//!
//! The co-simulation case ([`COSIM_CASE`]) runs the 1,024-node all-to-all
//! of docs/cosim.md and gives its wall time over the engine's alone on
//! the same cycles and packets.
//!
//! With `--insee BIN` (INSEE's own `fsin`, `scripts/build-insee.sh`), each
//! case runs INSEE on the same settings right before fsin-rs, `--repeat`
//! times over, so that every ratio is measured in one sitting; without it
//! the ratio divides by the reference figures in [`INSEE`].

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

use fsin::config::Config;
use fsin::sim;

/// INSEE's speed on this machine kind: (case, load, cycles per wall
/// second, peak MiB), measured with INSEE's own `fsin` (sources at commit
/// 2140aeca, `gcc -O3`) on the same configuration, 19 999 cycles per run,
/// on 2026-11-23 (the fastest of the three days measured; docs/validation.md,
/// "Speed and memory").
///
/// Trees and SpiNNaker: INSEE's `fsin` from the same sources, 19 999
/// cycles per run, on 2026-11-24 with the machine otherwise idle (its 16x16
/// torus ran at 3 809 / 3 831 cycles/s in that sitting, 0.66x / 0.73x the
/// 2026-11-23 figures above; docs/validation.md).
const INSEE: &[(&str, f64, f64, f64)] = &[
    ("torus_16_16", 0.1, 5780.0, 8.3),
    ("torus_16_16", 0.3, 5263.0, 8.5),
    ("torus_32_32", 0.1, 1196.0, 33.3),
    ("torus_32_32", 0.3, 646.0, 35.3),
    ("torus_64_64", 0.1, 134.0, 224.1),
    ("fattree_4_4", 0.1, 2985.0, 16.2),
    ("fattree_4_4", 0.3, 2491.0, 16.1),
    ("thintree_8_4_4", 0.1, 117.0, 327.1),
    ("thintree_8_4_4", 0.3, 65.0, 333.6),
    ("spinnaker_16_16", 0.1, 3590.0, 8.0),
    ("spinnaker_16_16", 0.3, 3824.0, 7.8),
];

/// The router settings of a case: the topology and what its name adds
/// after `+`.
fn router(case: &str) -> &'static [&'static str] {
    match case {
        c if c.ends_with("+dally3") => &["vc=dally", "rmode=adaptive", "nchan=3"],
        c if c.starts_with("torus") => {
            &["vc=bubble", "rmode=oblivious", "routing=dim", "imode=dor"]
        }
        c if c.starts_with("spinnaker") => &["hol=0", "rmode=smart"],
        _ => &["routing=adaptive"],
    }
}

/// The benchmark's cases: (name, offered load in phits/node/cycle). A name
/// is a topology, or a topology and a router variant after `+`.
const CASES: &[(&str, f64)] = &[
    ("torus_16_16", 0.1),
    ("torus_16_16", 0.3),
    ("torus_16_16", 0.5),
    ("torus_16_16", 1.0),
    ("torus_16_16+dally3", 0.5),
    ("torus_32_32", 0.1),
    ("torus_32_32", 0.3),
    ("torus_32_32", 0.5),
    ("torus_32_32", 1.0),
    ("torus_64_64", 0.1),
    ("torus_64_64", 0.3),
    ("fattree_4_4", 0.1),
    ("fattree_4_4", 0.3),
    ("fattree_4_4", 0.5),
    ("thintree_8_4_4", 0.1),
    ("thintree_8_4_4", 0.3),
    ("thintree_8_4_4", 0.5),
    ("spinnaker_16_16", 0.1),
    ("spinnaker_16_16", 0.3),
];

/// The co-simulation case: 1,024 fake nodes in 16 processes, each node
/// sending a 128-byte frame to every other, the network's slices running
/// beside the nodes' (`--mode parallel`), replayed afterwards through the
/// engine alone (`--overhead`). Its name for `--filter`.
const COSIM_CASE: &str = "cosim_all2all_1024";
const COSIM_ARGS: &[&str] = &[
    "demo",
    "topo=torus_32_32",
    "--nodes-per-client",
    "64",
    "--workload",
    "all2all",
    "--mode",
    "parallel",
    "--overhead",
    "--json",
    "--quiet",
];

/// The co-simulation case's measurement: what its report says of time.
#[derive(Debug, Serialize, Deserialize)]
pub struct CosimBench {
    /// Wall seconds of the co-simulated run (attach excluded).
    pub wall_s: f64,
    /// Wall seconds of the engine alone on the same network cycles and
    /// packets.
    pub engine_alone_s: f64,
    /// `wall_s / engine_alone_s` (goal: at most 1.3).
    pub overhead: f64,
    pub net_cycles: u64,
    pub frames_delivered: u64,
}

fn one_thread() -> u32 {
    1
}

/// One benchmark measurement.
#[derive(Debug, Serialize, Deserialize)]
pub struct BenchResult {
    /// The case's name (topology, `+variant`).
    pub topo: String,
    /// Offered load, phits/node/cycle.
    pub load: f64,
    /// fsin-rs's engine threads (`threads`; results from before the key
    /// read as 1).
    #[serde(default = "one_thread")]
    pub threads: u32,
    pub cycles: u64,
    pub wall_s: f64,
    pub cycles_per_s: f64,
    pub peak_rss_mb: f64,
    /// Accepted load, phits/node/cycle.
    pub accepted_load: f64,
    /// INSEE's cycles per wall second: measured just before (`--insee`)
    /// or the reference figure.
    pub insee_cycles_per_s: Option<f64>,
    pub speedup_vs_insee: Option<f64>,
    /// INSEE's peak MiB (reference figures only).
    pub insee_peak_mb: Option<f64>,
    /// INSEE's accepted load in the measured run (`--insee`).
    #[serde(default)]
    pub insee_accepted_load: Option<f64>,
}

/// The settings of case `name` at `load`, in INSEE's keys (both simulators
/// read them), without the run length.
fn settings(name: &str, load: f64) -> Vec<String> {
    let topo = name.split('+').next().unwrap_or(name);
    let mut s = vec![format!("topo={topo}"), format!("load={load}")];
    s.extend(router(name).iter().map(|&x| x.to_string()));
    s.push("plength=16_4".into());
    s.extend(["tql=4", "iql=4"].iter().map(|&x| x.to_string()));
    if !s.iter().any(|x| x.starts_with("nchan=")) {
        s.push("nchan=2".into());
    }
    s
}

/// Runs one case in this process on `threads` threads and prints its
/// JSON (child side).
fn run_one(name: &str, load: f64, cycles: u64, threads: u32) -> anyhow::Result<()> {
    let mut s = settings(name, load);
    s.push(format!("cycles={cycles}"));
    s.push(format!("threads={threads}"));
    let cfg = Config::from_settings(&s)?;
    let rep = sim::run(&cfg, fsin::run::RunOptions::default())?;
    let insee = INSEE.iter().find(|c| c.0 == name && c.1 == load);
    let r = BenchResult {
        topo: name.into(),
        load,
        threads,
        cycles: rep.cycles,
        wall_s: rep.wall_s,
        cycles_per_s: rep.cycles_per_s,
        peak_rss_mb: peak_rss_mb(),
        accepted_load: rep.measured.accepted_load,
        insee_cycles_per_s: insee.map(|c| c.2),
        speedup_vs_insee: insee.map(|c| rep.cycles_per_s / c.2),
        insee_peak_mb: insee.map(|c| c.3),
        insee_accepted_load: None,
    };
    println!("{}", serde_json::to_string(&r)?);
    Ok(())
}

/// Peak resident set size of this process in MB (Linux; 0 elsewhere).
pub fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// INSEE's run of a case: cycles per wall second and accepted load.
struct InseeRun {
    cycles_per_s: f64,
    accepted_load: f64,
}

/// Runs INSEE's `fsin` (`bin`) on case `name` at `load` for `cycles - 1`
/// cycles (`warm_up_period=1000`, one sample of 1 000 cycles after
/// `max_conv_time = cycles - 2000` without convergence: the way the
/// reference figures were taken), in a directory of its own (INSEE reads
/// a `fsin.conf` in its working directory and leaves a monitor file there).
///
/// # Errors
/// `cycles` below 3 000, INSEE failing to start or exiting with an error,
/// or an output without its sample's row.
fn run_insee(bin: &Path, name: &str, load: f64, cycles: u64) -> anyhow::Result<InseeRun> {
    if cycles < 3000 {
        bail!("--insee needs --cycles of at least 3000 (INSEE warms up for 1000 and samples 1000)");
    }
    let dir = std::env::temp_dir().join(format!("fsin-bench-insee-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut args = settings(name, load);
    args.extend([
        "warm_up_period=1000".to_string(),
        format!("max_conv_time={}", cycles - 2000),
        "conv_thres=0".into(),
        "nsamples=1".into(),
        "sample_size=1000".into(),
    ]);
    let started = Instant::now();
    let out = Command::new(bin)
        .args(&args)
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .with_context(|| format!("running INSEE ({})", bin.display()));
    let wall = started.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(&dir);
    let out = out?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!(
            "INSEE ({}) {} on {name} at {load}",
            bin.display(),
            out.status
        );
    }
    // Its one sample's row: `0, BatchTime, AvDistance, InjLoad, AccLoad, ...`.
    let Some(row) = text.lines().find(|l| l.trim_start().starts_with("0,")) else {
        bail!(
            "INSEE printed no sample row on {name} at {load}: is {} INSEE's fsin?",
            bin.display()
        );
    };
    let accepted_load = row
        .split(',')
        .nth(4)
        .and_then(|x| x.trim().parse().ok())
        .unwrap_or(f64::NAN);
    Ok(InseeRun {
        cycles_per_s: (cycles - 1) as f64 / wall.max(1e-9),
        accepted_load,
    })
}

/// What `fsin bench` runs.
pub struct BenchOptions<'a> {
    /// Cycles per run.
    pub cycles: u64,
    /// One JSON object instead of a table.
    pub json: bool,
    /// Only the cases whose `NAME@LOAD` contains this text.
    pub filter: Option<&'a str>,
    /// INSEE's `fsin`, run before each fsin-rs run.
    pub insee: Option<PathBuf>,
    /// Runs per case (each INSEE's, then fsin-rs's).
    pub repeat: u32,
    /// fsin-rs's `threads`.
    pub threads: u32,
}

/// Runs every case in a child process and prints a table (or JSON).
///
/// # Errors
/// If a child process cannot be started or its output is not a result, or
/// INSEE cannot run (see `run_insee`).
pub fn run(opts: &BenchOptions) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        eprintln!("fsin bench: warning: this is a debug build; use `cargo run --release -- bench`");
    }
    let exe = crate::args::own_exe()?;
    // INSEE runs in a directory of its own: resolve a relative path first.
    let insee_bin = match &opts.insee {
        Some(bin) => Some(std::fs::canonicalize(bin).with_context(|| {
            format!(
                "--insee {}: no such file (build it with scripts/build-insee.sh)",
                bin.display()
            )
        })?),
        None => None,
    };
    let mut results = Vec::new();
    for &(topo, load) in CASES {
        let name = format!("{topo}@{load}");
        if opts.filter.is_some_and(|f| !name.contains(f)) {
            continue;
        }
        for _ in 0..opts.repeat.max(1) {
            let insee = match &insee_bin {
                Some(bin) => Some(run_insee(bin, topo, load, opts.cycles)?),
                None => None,
            };
            let out = Command::new(&exe)
                .env(
                    "FSIN_BENCH_CHILD",
                    format!("{topo} {load} {} {}", opts.cycles, opts.threads),
                )
                .arg("bench")
                .output()
                .with_context(|| format!("running benchmark {name}"))?;
            let line = String::from_utf8_lossy(&out.stdout);
            let mut r: BenchResult = serde_json::from_str(line.trim())
                .with_context(|| format!("benchmark {name} printed {line:?}"))?;
            if let Some(i) = insee {
                r.insee_cycles_per_s = Some(i.cycles_per_s);
                r.speedup_vs_insee = Some(r.cycles_per_s / i.cycles_per_s);
                r.insee_peak_mb = None;
                r.insee_accepted_load = Some(i.accepted_load);
            }
            if !opts.json {
                print_row(&r, results.is_empty());
            }
            results.push(r);
        }
    }
    let mut cosim = Vec::new();
    if opts.filter.is_none_or(|f| COSIM_CASE.contains(f)) {
        for _ in 0..opts.repeat.max(1) {
            let r = run_cosim(&exe)?;
            if !opts.json {
                if cosim.is_empty() {
                    println!(
                        "\n{:<20} {:>9} {:>10} {:>14} {:>9}",
                        "case", "wall s", "engine s", "net cycles", "overhead"
                    );
                }
                println!(
                    "{:<20} {:>9.2} {:>10.2} {:>14} {:>8.2}x",
                    COSIM_CASE, r.wall_s, r.engine_alone_s, r.net_cycles, r.overhead
                );
            }
            cosim.push(r);
        }
    }
    if opts.json {
        println!(
            "{}",
            serde_json::to_string(&serde_json::json!({ "results": results, "cosim": cosim }))?
        );
    }
    Ok(())
}

/// Runs the co-simulation case ([`COSIM_ARGS`]) and reads its report.
///
/// # Errors
/// The run cannot start, fails, or prints no report with the overhead.
fn run_cosim(exe: &Path) -> anyhow::Result<CosimBench> {
    let out = Command::new(exe)
        .args(COSIM_ARGS)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .with_context(|| format!("running {COSIM_CASE}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().unwrap_or_default();
    let r: CosimBench = serde_json::from_str(last).with_context(|| {
        format!(
            "{COSIM_CASE} ({}) printed no report with its overhead: {last:?}",
            out.status
        )
    })?;
    Ok(r)
}

/// One line of the table (and its heading first).
fn print_row(r: &BenchResult, heading: bool) {
    if heading {
        println!(
            "{:<20} {:>5} {:>7} {:>9} {:>12} {:>9} {:>12} {:>10} {:>9} {:>9}",
            "case",
            "load",
            "threads",
            "cycles",
            "cycles/s",
            "peak MB",
            "INSEE c/s",
            "vs INSEE",
            "accepted",
            "INSEE acc"
        );
    }
    let opt = |x: Option<f64>, f: &dyn Fn(f64) -> String| x.map_or("-".into(), f);
    println!(
        "{:<20} {:>5} {:>7} {:>9} {:>12.0} {:>9.1} {:>12} {:>10} {:>9.4} {:>9}",
        r.topo,
        r.load,
        r.threads,
        r.cycles,
        r.cycles_per_s,
        r.peak_rss_mb,
        opt(r.insee_cycles_per_s, &|c| format!("{c:.0}")),
        opt(r.speedup_vs_insee, &|s| format!("{s:.1}x")),
        r.accepted_load,
        opt(r.insee_accepted_load, &|a| format!("{a:.4}")),
    );
}

/// If this process is a benchmark child, runs its case and returns true.
///
/// # Errors
/// A malformed `FSIN_BENCH_CHILD` value or configuration.
pub fn child() -> anyhow::Result<bool> {
    let Ok(spec) = std::env::var("FSIN_BENCH_CHILD") else {
        return Ok(false);
    };
    let mut it = spec.split_whitespace();
    let (Some(name), Some(load), Some(cycles), Some(threads)) =
        (it.next(), it.next(), it.next(), it.next())
    else {
        bail!("FSIN_BENCH_CHILD must be `CASE LOAD CYCLES THREADS`");
    };
    run_one(name, load.parse()?, cycles.parse()?, threads.parse()?)?;
    Ok(true)
}
