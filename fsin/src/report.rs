//! Reports of a run: the human-readable text summary, partial-result
//! lines, and files (`report.json`, `batches.csv`) for `--out DIR`.

use std::fmt::Write as _;
use std::path::Path;

use crate::figures::Figures;
use crate::run::{Convergence, Partial, Report};
use crate::stats::Summary;

/// The text report printed by `fsin run`: it opens with the settings
/// that differ from the defaults (every setting with `verbose`; the JSON
/// report always has them all).
pub fn text(r: &Report, verbose: bool) -> String {
    let mut s = String::new();
    run_lines(r, verbose, &mut s);
    workload_lines(r, &mut s);
    load_lines(r, &mut s);
    // Every other figure of the report, by its name: a field added to the
    // report is printed without an edit here.
    if let Ok(figures) = Figures::of(r) {
        s.push_str(&figures.lines_except(SHOWN));
    }
    s
}

/// The text report's first lines: the settings, the run, its routing and
/// warnings.
fn run_lines(r: &Report, verbose: bool, s: &mut String) {
    let defaults = crate::run::config_map(&crate::config::Config::default());
    let cfg: Vec<String> = r
        .config
        .iter()
        .filter(|&(k, v)| verbose || defaults.get(k) != Some(v))
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    if cfg.is_empty() {
        let _ = writeln!(
            s,
            "fsin run (every key at its default: --verbose lists them)"
        );
    } else {
        let _ = writeln!(s, "fsin run {}", cfg.join(" "));
    }
    let _ = writeln!(
        s,
        "{} nodes, {} cycles simulated in {:.2} s ({:.0} cycles/s); {}",
        r.nodes,
        r.cycles,
        r.wall_s,
        r.cycles_per_s,
        if r.batches.len() > 1 || r.unmeasured_cycles > 0 {
            format!(
                "{} batches of {} cycles after {} unmeasured cycles, {}",
                r.batches.len(),
                r.batches.first().map_or(0, |b| b.cycles),
                r.unmeasured_cycles,
                convergence(r)
            )
        } else if r.app.is_some() {
            "application workload, run to its end".to_string()
        } else if !r.shot_cycles.is_empty() {
            "bursts (shotmode)".to_string()
        } else {
            "fixed-length run (cycles=N): no warm-up, convergence not checked".to_string()
        }
    );
    let _ = writeln!(s, "  routing           {}", r.routing);
    for w in &r.warnings {
        let _ = writeln!(s, "  WARNING: {w}");
    }
}

/// The text report's application workload (execution time, messages,
/// deadlock) and bursts.
fn workload_lines(r: &Report, s: &mut String) {
    if let Some(a) = &r.app {
        let _ = writeln!(s, "  workload          {} ({} tasks)", a.workload, a.tasks);
        let _ = writeln!(
            s,
            "  execution time    {} cycles{}",
            a.exec_cycles,
            a.predicted_s
                .map(|p| format!(" = {p:.6} s at link_bandwidth"))
                .unwrap_or_default()
        );
        let _ = writeln!(
            s,
            "  messages          {} sent, {} delivered",
            a.messages_sent, a.messages_delivered
        );
        if let (Some(acks), Some(frames)) = (a.acks_sent, a.frames_sent) {
            let live = match (a.live_frames, a.live_acks) {
                (Some(f), Some(k)) => format!("; the traced run sent {f} ({k})"),
                _ => String::new(),
            };
            let arp = match a.arp_requests {
                Some(r) if r > 0 => format!(", {r} ARP requests to every node of the job"),
                _ => String::new(),
            };
            let delayed = match a.delayed_acks {
                Some(d) if d > 0 => format!(" of which {d} delayed"),
                _ => String::new(),
            };
            let probes = match a.tcp_probes {
                Some(p) if p > 0 => format!(", {p} sent again as tail-loss probes"),
                _ => String::new(),
            };
            let _ = writeln!(
                s,
                "  frames            {frames} sent ({acks} TCP acknowledgements{delayed}{arp}{probes}){live}"
            );
        }
        if a.deadlock {
            let _ = writeln!(s, "  DEADLOCK: {} tasks can never finish:", a.blocked.len());
            for b in &a.blocked {
                let _ = writeln!(
                    s,
                    "    task {} (job {}, node {}): {}{}",
                    b.task,
                    b.job,
                    b.node,
                    b.waiting_for,
                    if b.pending.is_empty() {
                        String::new()
                    } else {
                        format!("; arrived unmatched: {}", b.pending.join(", "))
                    }
                );
            }
        }
    }
    if !r.shot_cycles.is_empty() {
        let n = r.shot_cycles.len();
        let sum: u64 = r.shot_cycles.iter().sum();
        let list: Vec<String> = r.shot_cycles.iter().take(20).map(u64::to_string).collect();
        let _ = writeln!(
            s,
            "  bursts            {n}, {:.1} cycles each on average: {}{}",
            sum as f64 / n as f64,
            list.join(" "),
            if n > 20 { " ..." } else { "" }
        );
    }
}

/// The text report's loads, latencies, distance, occupancy and packets.
fn load_lines(r: &Report, s: &mut String) {
    let m = &r.measured;
    let _ = writeln!(
        s,
        "  offered load      {:.4} phits/node/cycle{}",
        r.offered_load,
        if r.app.is_some() { " (background)" } else { "" }
    );
    let _ = writeln!(
        s,
        "  injected load     {:.4} phits/node/cycle",
        m.injected_load
    );
    let _ = writeln!(
        s,
        "  accepted load     {:.4}{} phits/node/cycle (batch std {:.4})",
        m.accepted_load,
        plus_minus(r.accepted_load_ci95, 4),
        r.accepted_load_batch_std
    );
    let _ = writeln!(
        s,
        "  latency           avg {:.2}{}  std {:.2}  max {} cycles (from generation)",
        m.latency_avg,
        plus_minus(r.latency_ci95, 2),
        m.latency_std,
        m.latency_max
    );
    let _ = writeln!(
        s,
        "  network latency   avg {:.2}  std {:.2}  max {} cycles (from injection)",
        m.inj_latency_avg, m.inj_latency_std, m.inj_latency_max
    );
    let _ = writeln!(s, "  average distance  {:.3} hops", m.avg_distance);
    let _ = writeln!(
        s,
        "  occupancy         {:.1} packets in the network",
        m.occupancy
    );
    let _ = writeln!(
        s,
        "  packets           {} generated, {} injected, {} delivered, {} dropped",
        m.packets_generated, m.packets_injected, m.packets_delivered, m.packets_dropped
    );
}

/// The batches line's verdict on convergence, with the intervals' widths
/// relative to their means.
fn convergence(r: &Report) -> String {
    let rel = |h: Option<f64>, m: f64| match h {
        Some(h) if m != 0.0 => format!("{:.1}%", 100.0 * h / m.abs()),
        _ => "-".to_string(),
    };
    let widths = format!(
        "95% intervals: latency +-{}, accepted load +-{}",
        rel(r.latency_ci95, r.measured.latency_avg),
        rel(r.accepted_load_ci95, r.measured.accepted_load)
    );
    let thres = r
        .config
        .get("conv_thres")
        .and_then(|v| v.as_str())
        .unwrap_or("?");
    match r.convergence {
        Convergence::Converged => format!("converged ({widths})"),
        Convergence::Unsettled => format!(
            "NOT converged: the windows did not settle within max_conv_time (past saturation?); {widths}"
        ),
        Convergence::Wide => {
            format!("NOT converged: after max_samples batches the {widths}, wider than conv_thres={thres}")
        }
        Convergence::NotChecked => "convergence not checked".to_string(),
    }
}

/// ` +- H` with `digits` decimals when the interval is known (95%).
fn plus_minus(half: Option<f64>, digits: usize) -> String {
    half.map(|h| format!(" +- {h:.digits$}"))
        .unwrap_or_default()
}

/// The figures (JSON keys) that [`text`]'s own lines print, or leave out
/// on purpose: `cycles` (the measured cycles: the batches' line) and
/// `interrupted` (the command says it on stderr). A field added to the
/// report and not named here gets a line of its own.
const SHOWN: &[&str] = &[
    "total_cycles",
    "wall_s",
    "cycles_per_s",
    "nodes",
    "offered_load",
    "converged",
    "convergence",
    "routing",
    "latency_ci95",
    "accepted_load_ci95",
    "unmeasured_cycles",
    "cycles",
    "injected_load",
    "accepted_load",
    "packets_generated",
    "packets_injected",
    "packets_delivered",
    "packets_dropped",
    "latency_avg",
    "latency_std",
    "latency_max",
    "inj_latency_avg",
    "inj_latency_std",
    "inj_latency_max",
    "avg_distance",
    "occupancy",
    "accepted_load_batch_std",
    "workload",
    "tasks",
    "exec_cycles",
    "predicted_s",
    "messages_sent",
    "messages_delivered",
    "acks_sent",
    "arp_requests",
    "tcp_probes",
    "delayed_acks",
    "frames_sent",
    "live_frames",
    "live_acks",
    "deadlock",
    "interrupted",
];

/// One line of partial results (with a header line first if `header`).
pub fn partial_line(p: &Partial, header: bool) -> String {
    let s = &p.summary;
    let line = format!(
        "{:>10} {:>8.4} {:>8.4} {:>9.2} {:>8} {:>7.3} {:>8.1}",
        p.at,
        s.injected_load,
        s.accepted_load,
        s.latency_avg,
        s.latency_max,
        s.avg_distance,
        s.occupancy
    );
    if header {
        format!(
            "{:>10} {:>8} {:>8} {:>9} {:>8} {:>7} {:>8}\n{line}",
            "cycle", "inj", "acc", "lat_avg", "lat_max", "dist", "occup"
        )
    } else {
        line
    }
}

/// Writes `report.json` and `batches.csv` (one row per batch) into `dir`.
///
/// # Errors
/// Any I/O error creating the directory or the files.
pub fn write_files(r: &Report, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let json = serde_json::to_string_pretty(r).map_err(std::io::Error::other)?;
    std::fs::write(dir.join("report.json"), json + "\n")?;
    std::fs::write(dir.join("batches.csv"), csv(&r.batches))
}

/// Rows of summaries as CSV with a header of field names.
pub fn csv(rows: &[Summary]) -> String {
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let v = serde_json::to_value(row).unwrap_or_default();
        let Some(obj) = v.as_object() else { continue };
        if i == 0 {
            out.push_str("batch,");
            out.push_str(&obj.keys().cloned().collect::<Vec<_>>().join(","));
            out.push('\n');
        }
        let vals: Vec<String> = obj.values().map(ToString::to_string).collect();
        let _ = writeln!(out, "{i},{}", vals.join(","));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::run::AppSummary;

    /// A report with every optional part present.
    fn full() -> Report {
        let cfg = Config::from_settings(&["topo=torus_4"]).unwrap();
        let mut r = Report::base(
            &cfg,
            4,
            std::time::Instant::now(),
            100,
            Summary::default(),
            vec![],
        );
        r.app = Some(AppSummary {
            workload: "trace t.trc".into(),
            tasks: 4,
            exec_cycles: 90,
            predicted_s: Some(1e-6),
            task_done_cycles: vec![],
            messages_sent: 5,
            messages_delivered: 5,
            acks_sent: Some(2),
            arp_requests: Some(1),
            tcp_probes: Some(1),
            delayed_acks: Some(1),
            frames_sent: Some(4),
            live_frames: Some(4),
            live_acks: Some(2),
            deadlock: false,
            blocked: vec![],
            timeline: None,
        });
        r.interrupted = Some("SIGINT");
        r.warnings = vec!["up*/down* paths bound uniform traffic at 0.2".into()];
        r
    }

    #[test]
    fn every_figure_of_the_report_is_in_its_text() {
        let r = full();
        // latency_batch_std, which its lines leave out, gets a line.
        let text = text(&r, false);
        assert!(text.contains("  latency batch std "), "{text}");
        // SHOWN names only figures the report has, and a figure it leaves
        // out is printed by its name.
        let figures = Figures::of(&r).unwrap();
        assert_eq!(
            figures.uncovered(SHOWN, &text),
            Vec::<String>::new(),
            "{text}"
        );
        assert!(text.contains("\n  WARNING: up*/down* paths"), "{text}");
        // A broadcast is one frame, its copies messages.
        assert!(
            text.contains("\n  messages          5 sent, 5 delivered\n  frames            4 sent (2 TCP acknowledgements of which 1 delayed, 1 ARP requests to every node of the job, 1 sent again as tail-loss probes); the traced run sent 4 (2)\n"),
            "{text}"
        );
        // The settings: those that differ from the defaults, or all.
        assert!(text.starts_with("fsin run topo=torus_4\n"), "{text}");
        let all = super::text(&r, true);
        let first = all.lines().next().unwrap();
        assert!(
            first.contains(" topo=torus_4 ") && first.contains(" load=0.05 "),
            "{first}"
        );
    }
}
