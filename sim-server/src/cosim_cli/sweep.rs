//! `fsin cosim-sweep`: `fsin demo`'s co-simulation once per slice length
//! and once in exact mode (the Simics paper's Table 1 with fake nodes).

use std::path::PathBuf;

use anyhow::Context;
use fake_node::Workload;
use fsin::config::{ConfigError, Origin, Setting, SliceRatio, SyncMode};
use fsin_cosim::sweep::{self, SweepPoint};

use super::{name, slice_ratio, DemoArgs, RunFailed};

#[derive(clap::Args)]
pub struct SweepArgs {
    /// Workload of the fake nodes (compute-bound ping-pong by default).
    #[arg(long, value_enum, default_value = "pingpong")]
    workload: Workload,
    /// Nodes (fake-node processes).
    #[arg(long, default_value_t = 8)]
    nodes: usize,
    /// Slice lengths to compare, NET:NODE each (same ratio = same bandwidth).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "20:1000,200:10000,2000:100000",
        value_parser = slice_ratio
    )]
    slices: Vec<SliceRatio>,
    /// Network cycles from a frame's last phit to its NIC, in every run; the
    /// exact-mode reference uses slices of this many network cycles.
    #[arg(long, default_value_t = 20)]
    nic_latency: u64,
    /// Ping-pong rounds, or messages per node for uniform.
    #[arg(long, default_value_t = 10)]
    messages: u64,
    /// Node cycles of computation between messages.
    #[arg(long, default_value_t = 20_000)]
    think: u64,
    /// Write sweep.csv, sweep.json and sweep.svg (the plot) into this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Write each run's timeline into --out in this format (`paraver`:
    /// `timeline-MODE-NET-NODE.prv` with its .pcf and .row; `perfetto`:
    /// `.json`): per node, its slices running and waiting at the barrier
    /// in wall-clock time, and every frame (as `fsin demo --timeline`).
    #[arg(long, value_name = "FORMAT", value_parser = ["paraver", "perfetto"], requires = "out")]
    timelines: Option<String>,
    /// Print one JSON object (last line of stdout) instead of the table.
    #[arg(long)]
    json: bool,
    /// Network settings for every run, e.g. topo=torus_4_4.
    #[arg(value_name = "KEY=VALUE")]
    settings: Vec<String>,
}

/// Writes a study's `NAME.csv`, `NAME.json` (the points) and `NAME.svg`
/// (the plot; a plot that cannot be drawn fails the command) into `dir`.
pub(crate) fn write_study<P: serde::Serialize>(
    dir: &std::path::Path,
    name: &str,
    csv: &str,
    points: &P,
    svg: Result<String, fsin::study::PlotError>,
) -> anyhow::Result<()> {
    let svg = svg.map_err(|e| anyhow::anyhow!("cannot draw {name}.svg: {e}"))?;
    fsin::study::write(dir, name, csv, points, &[(format!("{name}.svg"), svg)])?;
    Ok(())
}

/// Writes `tradeoff.svg` of `points` into `dir` (nothing without points:
/// a study without an exact reference).
pub(crate) fn write_tradeoff(
    dir: &std::path::Path,
    points: &[fsin::study::Tradeoff],
) -> anyhow::Result<()> {
    if points.is_empty() {
        return Ok(());
    }
    let svg = fsin::study::tradeoff_svg(points)
        .map_err(|e| anyhow::anyhow!("cannot draw tradeoff.svg: {e}"))?;
    std::fs::write(dir.join("tradeoff.svg"), svg)
        .with_context(|| format!("cannot write tradeoff.svg in {}", dir.display()))
}

/// `fsin cosim-sweep`: runs `fsin demo`'s co-simulation (in this process,
/// its typed report) once per slice length and once in exact mode, and
/// compares simulated and wall time.
pub fn sweep(a: SweepArgs) -> anyhow::Result<()> {
    let mut runs: Vec<(SyncMode, SliceRatio)> =
        a.slices.iter().map(|s| (SyncMode::Lockstep, *s)).collect();
    if let Some(&SliceRatio { net, node }) = a.slices.first() {
        let l = a.nic_latency.max(1);
        if !(node * l).is_multiple_of(net) {
            return Err(ConfigError::BadValue {
                key: "--nic-latency".into(),
                value: l.to_string(),
                origin: Origin::CommandLine,
                reason: format!(
                    "the exact reference slice ({l} network cycles) must be a whole number of node cycles at {net}:{node}"
                ),
            }
            .into());
        }
        let exact = SliceRatio {
            net: l,
            node: node * l / net,
        };
        runs.push((SyncMode::Exact, exact));
    }
    if let (Some(_), Some(dir)) = (&a.timelines, &a.out) {
        // The runs write their timelines there before the study's files.
        super::out_dir(dir)?;
    }
    let mut points = Vec::new();
    let mut interrupted = None;
    for (mode, slice) in &runs {
        let mut demo = DemoArgs::defaults();
        demo.workload = vec![name(a.workload)];
        demo.messages = a.messages;
        demo.think = a.think;
        demo.cosim.nodes = Some(a.nodes);
        demo.cosim.mode = Some(*mode);
        demo.cosim.slice = Some(*slice);
        demo.cosim.changes = vec![Setting::NicLatency(a.nic_latency)];
        demo.cosim.settings.clone_from(&a.settings);
        if let (Some(format), Some(dir)) = (&a.timelines, &a.out) {
            let ext = if format == "paraver" { "prv" } else { "json" };
            let file = format!("timeline-{mode}-{}-{}.{ext}", slice.net, slice.node);
            demo.cosim.timeline.timeline = Some(dir.join(file));
        }
        let r = super::demo::run_demo(&demo)?.run;
        if !r.ok && r.end_reason.starts_with("interrupted") {
            // The points before it are reported; this one is not finished.
            interrupted = Some(format!(
                "{} during the {mode} run at slice {slice}",
                r.end_reason
            ));
            break;
        }
        if !r.ok {
            anyhow::bail!("the {mode} run at slice {slice} failed: {}", r.end_reason);
        }
        points.push(SweepPoint::of(&r));
        if !a.json {
            eprintln!("{mode} {slice}: {} slices, {:.3} s", r.slices, r.wall_s);
        }
    }
    if let Some(dir) = &a.out {
        write_study(
            dir,
            "sweep",
            &sweep::csv(&points),
            &points,
            sweep::svg(&points),
        )?;
        write_tradeoff(dir, &sweep::tradeoff(&points))?;
    }
    if a.json {
        println!(
            "{}",
            serde_json::json!({ "points": points, "interrupted": interrupted })
        );
    } else {
        print!("{}", sweep::table(&points));
    }
    match interrupted {
        None => Ok(()),
        Some(why) => {
            eprintln!(
                "fsin: {why}: the {} points before it are reported",
                points.len()
            );
            Err(RunFailed { code: 1 }.into())
        }
    }
}
