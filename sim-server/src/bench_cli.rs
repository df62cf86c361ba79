//! `fsin bench`: simulated cycles per wall-clock second and peak memory of
//! the engine with uniform traffic, in the configurations of the INSEE
//! reference figures: 2D tori (`vc=bubble rmode=oblivious routing=dim
//! imode=dor`), a 4-ary 4-tree and an 8:4-ary 4-thin-tree (adaptive
//! routing), a 16x16 SpiNNaker torus (INSEE's router: `hol=0`, bubble,
//! smart requests), all with `plength=16_4 tql=4 iql=4 nchan=2`. Each
//! configuration runs in a child process so that its peak resident memory
//! (VmHWM) is its own.

use std::process::Command;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use fsin::config::Config;
use fsin::sim;

/// INSEE's speed on this machine kind: (topology, load, cycles per wall
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

const CASES: &[(&str, f64)] = &[
    ("torus_16_16", 0.1),
    ("torus_16_16", 0.3),
    ("torus_32_32", 0.1),
    ("torus_32_32", 0.3),
    ("torus_64_64", 0.1),
    ("torus_64_64", 0.3),
    ("fattree_4_4", 0.1),
    ("fattree_4_4", 0.3),
    ("thintree_8_4_4", 0.1),
    ("thintree_8_4_4", 0.3),
    ("spinnaker_16_16", 0.1),
    ("spinnaker_16_16", 0.3),
];

/// One benchmark measurement.
#[derive(Debug, Serialize, Deserialize)]
pub struct BenchResult {
    pub topo: String,
    pub load: f64,
    pub cycles: u64,
    pub wall_s: f64,
    pub cycles_per_s: f64,
    pub peak_rss_mb: f64,
    pub accepted_load: f64,
    pub insee_cycles_per_s: Option<f64>,
    pub speedup_vs_insee: Option<f64>,
    pub insee_peak_mb: Option<f64>,
}

fn settings(topo: &str, load: f64, cycles: u64) -> Vec<String> {
    let router: &[&str] = if topo.starts_with("torus") {
        &["vc=bubble", "rmode=oblivious", "routing=dim", "imode=dor"]
    } else if topo.starts_with("spinnaker") {
        &["hol=0", "rmode=smart"]
    } else {
        &["routing=adaptive"]
    };
    let mut s = vec![format!("topo={topo}"), format!("load={load}")];
    s.extend(router.iter().map(|&x| x.to_string()));
    s.extend(
        ["plength=16_4", "tql=4", "iql=4", "nchan=2"]
            .iter()
            .map(|&x| x.to_string()),
    );
    s.push(format!("cycles={cycles}"));
    s
}

/// Runs one case in this process and prints its JSON (child side).
pub fn run_one(topo: &str, load: f64, cycles: u64) -> anyhow::Result<()> {
    let cfg = Config::from_settings(&settings(topo, load, cycles))?;
    let rep = sim::run(&cfg, sim::RunOptions::default())?;
    let insee = INSEE.iter().find(|c| c.0 == topo && c.1 == load);
    let r = BenchResult {
        topo: topo.into(),
        load,
        cycles: rep.cycles,
        wall_s: rep.wall_s,
        cycles_per_s: rep.cycles_per_s,
        peak_rss_mb: peak_rss_mb(),
        accepted_load: rep.measured.accepted_load,
        insee_cycles_per_s: insee.map(|c| c.2),
        speedup_vs_insee: insee.map(|c| rep.cycles_per_s / c.2),
        insee_peak_mb: insee.map(|c| c.3),
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

/// Runs every case in a child process and prints a table (or JSON).
///
/// # Errors
/// If a child process cannot be started or its output is not a result.
pub fn run(cycles: u64, json: bool, filter: Option<&str>) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        eprintln!("fsin bench: warning: this is a debug build; use `cargo run --release -- bench`");
    }
    let exe = std::env::current_exe().context("locating the fsin executable")?;
    let mut results = Vec::new();
    for &(topo, load) in CASES {
        let name = format!("{topo}@{load}");
        if filter.is_some_and(|f| !name.contains(f)) {
            continue;
        }
        let out = Command::new(&exe)
            .env("FSIN_BENCH_CHILD", format!("{topo} {load} {cycles}"))
            .arg("bench")
            .output()
            .with_context(|| format!("running benchmark {name}"))?;
        let line = String::from_utf8_lossy(&out.stdout);
        let r: BenchResult = serde_json::from_str(line.trim())
            .with_context(|| format!("benchmark {name} printed {line:?}"))?;
        if !json {
            if results.is_empty() {
                println!(
                    "{:<16} {:>5} {:>9} {:>12} {:>9} {:>10} {:>9}",
                    "topology", "load", "cycles", "cycles/s", "peak MB", "vs INSEE", "accepted"
                );
            }
            println!(
                "{:<16} {:>5} {:>9} {:>12.0} {:>9.1} {:>10} {:>9.4}",
                r.topo,
                r.load,
                r.cycles,
                r.cycles_per_s,
                r.peak_rss_mb,
                r.speedup_vs_insee
                    .map_or("-".into(), |s| format!("{s:.1}x")),
                r.accepted_load
            );
        }
        results.push(r);
    }
    if json {
        println!(
            "{}",
            serde_json::to_string(&serde_json::json!({ "results": results }))?
        );
    }
    Ok(())
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
    let (Some(topo), Some(load), Some(cycles)) = (it.next(), it.next(), it.next()) else {
        anyhow::bail!("FSIN_BENCH_CHILD must be `TOPO LOAD CYCLES`");
    };
    run_one(topo, load.parse()?, cycles.parse()?)?;
    Ok(true)
}
