//! The application study of `fsin qemu --vary` (Simics paper, section 6,
//! Table 1, with a real MPI application instead of synthetic nodes): one
//! command run on QEMU guests once per value of a setting, its run time as
//! the guests measured it (guest seconds) against the wall time the
//! co-simulation took. Coarser slices synchronise less often (less wall
//! time) but delay frames by up to a slice (more guest time). Also the
//! NetPIPE plot of `fsin qemu --app netpipe --out`.

use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use fsin::study::{self, Column, PlotError};

use fsin::figures::Figures;

use crate::session::SessionReport;

/// One run of the study.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StudyPoint {
    /// The varied setting (`slice` or a configuration key) and its value.
    pub key: String,
    pub value: String,
    /// The command's exit code (`None`: it did not end).
    pub exit_code: Option<i32>,
    /// How long the command ran, seconds of guest time.
    pub guest_s: Option<f64>,
    /// Wall seconds from the cluster being up to the command's end.
    pub app_wall_s: Option<f64>,
    /// Wall seconds of the whole run (boot included).
    pub wall_s: f64,
    pub slices: u64,
    pub slice_net_cycles: u64,
    pub slice_node_cycles: u64,
    /// Frames delivered in the measured phase and their mean latency (node
    /// cycles).
    pub frames_delivered: u64,
    pub frame_latency_avg: f64,
    /// The named application's results (`app.results`), else null.
    pub results: serde_json::Value,
    /// Why the run failed, when a guest did.
    pub fault: Option<String>,
    /// `--repeat`: which run of this value (0, 1, ...) and its seed (the
    /// network's `rseed`, and the guests' start: docs/qemu.md).
    #[serde(default)]
    pub repeat: u32,
    #[serde(default)]
    pub seed: u64,
    /// `--predict`: the trace-driven prediction of the application's time
    /// on this value's network (guest seconds: the replay of the first
    /// value's trace).
    #[serde(default)]
    pub predicted_s: Option<f64>,
    /// `--predict mpi`: the same from the first value's MPI-level trace:
    /// its replay plus the part of the traced run's `guest_s` that the
    /// trace does not hold (`guest_s - traced_mpi_s` of the first run:
    /// `mpirun`'s launch and end).
    #[serde(default)]
    pub predicted_mpi_s: Option<f64>,
    /// The traced run's longest rank from `MPI_Init` to `MPI_Finalize`,
    /// guest seconds (`--predict mpi`, the first run only).
    #[serde(default)]
    pub traced_mpi_s: Option<f64>,
    /// The network under the application: accepted load
    /// (phits/node/cycle), the busiest link over its busiest window,
    /// frames dropped at full NIC queues, TCP segments sent again.
    #[serde(default)]
    pub accepted_load: f64,
    /// The accepted load of the busiest window of `util_window` slices.
    #[serde(default)]
    pub accepted_load_peak: f64,
    #[serde(default)]
    pub link_utilization_peak: f64,
    #[serde(default)]
    pub frames_dropped: u64,
    #[serde(default)]
    pub tcp_retransmissions: u64,
    /// The exact-mode reference of a slice study (not a value of it).
    #[serde(default)]
    pub reference: bool,
    /// The synchronisation the run used (`lockstep`, `parallel`, `exact`;
    /// `--modes` runs every value in several).
    #[serde(default)]
    pub mode: String,
    /// Every figure of the run's report, the server's and the guests'
    /// (`study.json`; in `runs.csv`, a column for each one the columns
    /// above leave out).
    #[serde(default)]
    pub run: Figures,
}

/// What a finished run of a study left in its directory
/// (`run-K/point.json`): the point, and the identity of the run that made
/// it (settings, image, binary), which a resumed study compares with the
/// run it would make.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SavedPoint {
    pub identity: String,
    pub point: StudyPoint,
}

impl SavedPoint {
    /// The saved point in `text` (a `point.json`), if it holds one: a file
    /// cut short, edited or of another version gives `None`, and the
    /// study runs that point again.
    pub fn read(text: &str) -> Option<SavedPoint> {
        serde_json::from_str(text).ok()
    }
}

/// What the guests of one run measured of its application: the part of
/// a [`StudyPoint`] that the server's report does not hold.
#[derive(Debug, Clone, Default)]
pub struct AppFigures {
    /// The command's exit code (`None`: it did not end).
    pub exit_code: Option<i32>,
    /// How long the command ran, guest seconds.
    pub guest_s: Option<f64>,
    /// Wall seconds from the cluster being up to the command's end.
    pub wall_s: Option<f64>,
    /// The named application's results, else null.
    pub results: serde_json::Value,
    /// Why the run failed, when a guest did.
    pub fault: Option<String>,
    /// TCP segments the guests sent again in the measured phase.
    pub tcp_retransmissions: u64,
    /// With an MPI-level trace: the longest rank's time from `MPI_Init`
    /// to `MPI_Finalize`, guest seconds (the part of `guest_s` the trace
    /// holds; the rest is `mpirun`'s launch and end).
    pub traced_mpi_s: Option<f64>,
}

impl StudyPoint {
    /// The point of a run at `value` of `key`: the session's `report`
    /// and the guests' figures `app` (repeat 0, seed 0, no prediction, not
    /// the reference: set them after).
    pub fn of<R: Serialize>(
        key: &str,
        value: &str,
        report: &SessionReport<R>,
        app: AppFigures,
    ) -> StudyPoint {
        let run = &report.run;
        StudyPoint {
            key: key.to_string(),
            value: value.to_string(),
            exit_code: app.exit_code,
            guest_s: app.guest_s,
            app_wall_s: app.wall_s,
            wall_s: run.wall_s,
            slices: run.slices,
            slice_net_cycles: run.slice_net_cycles,
            slice_node_cycles: run.slice_node_cycles,
            frames_delivered: run.frames_delivered,
            frame_latency_avg: run.frame_latency_avg,
            results: app.results,
            fault: app.fault,
            repeat: 0,
            seed: 0,
            predicted_s: None,
            predicted_mpi_s: None,
            traced_mpi_s: app.traced_mpi_s,
            accepted_load: run.network.accepted_load,
            accepted_load_peak: run.links.load_peak,
            link_utilization_peak: run.links.peak,
            frames_dropped: run.frames_dropped,
            tcp_retransmissions: app.tcp_retransmissions,
            reference: false,
            mode: String::new(),
            run: Figures::of(report).unwrap_or_default(),
        }
    }
}

/// The runs of one value (in one synchronisation mode) of a study
/// together: means with 99% confidence intervals over its repeats, times
/// relative to the first value's, and, in a slice study, the error and
/// speed-up against the exact reference.
#[derive(Debug, Clone, Serialize)]
pub struct ValueSummary {
    pub key: String,
    pub value: String,
    /// The synchronisation of its runs (`lockstep`, `parallel`).
    pub mode: String,
    pub runs: usize,
    /// Application guest seconds (full system): mean and 99% half-width.
    pub guest_s: f64,
    pub guest_s_ci99: f64,
    /// The trace-driven prediction, guest seconds (`--predict`).
    pub predicted_s: Option<f64>,
    pub predicted_s_ci99: Option<f64>,
    /// The MPI-level prediction, guest seconds (`--predict mpi`).
    pub predicted_mpi_s: Option<f64>,
    pub predicted_mpi_s_ci99: Option<f64>,
    /// All relative to the first value's means (the paper's Fig. 4).
    pub guest_rel: f64,
    pub predicted_rel: Option<f64>,
    pub predicted_mpi_rel: Option<f64>,
    /// Application wall seconds, mean.
    pub app_wall_s: f64,
    pub accepted_load: f64,
    pub accepted_load_peak: f64,
    pub link_utilization_peak: f64,
    pub frames_dropped: f64,
    pub tcp_retransmissions: f64,
    /// Slice studies: guest time's error against the exact reference (%)
    /// and the reference's application wall time over this value's.
    pub error_pct: Option<f64>,
    pub speedup: Option<f64>,
}

/// Summarises `points` (every run, the exact reference marked) per value
/// and mode, in the order they first appear.
pub fn summarise(points: &[StudyPoint]) -> Vec<ValueSummary> {
    let reference = points.iter().find(|p| p.reference);
    let mut values: Vec<(&str, &str)> = Vec::new();
    for p in points.iter().filter(|p| !p.reference) {
        if !values.contains(&(p.value.as_str(), p.mode.as_str())) {
            values.push((&p.value, &p.mode));
        }
    }
    let mut out: Vec<ValueSummary> = Vec::new();
    for (v, mode) in values {
        let runs: Vec<&StudyPoint> = points
            .iter()
            .filter(|p| !p.reference && p.value == v && p.mode == mode)
            .collect();
        let of = |f: fn(&StudyPoint) -> Option<f64>| -> Vec<f64> {
            runs.iter().filter_map(|p| f(p)).collect()
        };
        let mean = |xs: Vec<f64>| xs.iter().sum::<f64>() / xs.len().max(1) as f64;
        let (guest_s, guest_s_ci99) = study::mean_ci99(&of(|p| p.guest_s));
        let prediction = |xs: Vec<f64>| {
            if xs.is_empty() {
                (None, None)
            } else {
                let (m, h) = study::mean_ci99(&xs);
                (Some(m), Some(h))
            }
        };
        let (predicted_s, predicted_s_ci99) = prediction(of(|p| p.predicted_s));
        let (predicted_mpi_s, predicted_mpi_s_ci99) = prediction(of(|p| p.predicted_mpi_s));
        let relative = |first: Option<Option<f64>>, mine: Option<f64>| match (first, mine) {
            (None, Some(_)) => Some(1.0),
            (Some(f), Some(p)) => f.map(|q| p / q),
            _ => None,
        };
        let app_wall_s = mean(of(|p| p.app_wall_s));
        let first = out.first();
        out.push(ValueSummary {
            key: runs[0].key.clone(),
            value: v.to_string(),
            mode: mode.to_string(),
            runs: runs.len(),
            guest_rel: first.map_or(1.0, |f| guest_s / f.guest_s),
            predicted_rel: relative(first.map(|f| f.predicted_s), predicted_s),
            predicted_mpi_rel: relative(first.map(|f| f.predicted_mpi_s), predicted_mpi_s),
            guest_s,
            guest_s_ci99,
            predicted_s,
            predicted_s_ci99,
            predicted_mpi_s,
            predicted_mpi_s_ci99,
            app_wall_s,
            accepted_load: mean(of(|p| Some(p.accepted_load))),
            accepted_load_peak: mean(of(|p| Some(p.accepted_load_peak))),
            link_utilization_peak: mean(of(|p| Some(p.link_utilization_peak))),
            frames_dropped: mean(of(|p| Some(p.frames_dropped as f64))),
            tcp_retransmissions: mean(of(|p| Some(p.tcp_retransmissions as f64))),
            error_pct: reference
                .and_then(|r| r.guest_s)
                .map(|r| (guest_s - r) / r * 100.0),
            speedup: reference
                .and_then(|r| r.app_wall_s)
                .map(|r| r / app_wall_s.max(1e-9)),
        });
    }
    out
}

/// The summary as CSV (`study.csv`): one row per value.
pub fn summary_csv(rows: &[ValueSummary]) -> String {
    let columns = [
        Column::csv("key", |r: &ValueSummary| r.key.clone()),
        Column::csv("value", |r| r.value.clone()),
        Column::csv("mode", |r| r.mode.clone()),
        Column::csv("runs", |r| r.runs.to_string()),
        Column::csv("guest_s", |r| format!("{:.6}", r.guest_s)),
        Column::csv("guest_s_ci99", |r| format!("{:.6}", r.guest_s_ci99)),
        Column::csv("guest_rel", |r| format!("{:.6}", r.guest_rel)),
        Column::csv("predicted_s", |r| blank(r.predicted_s, 6)),
        Column::csv("predicted_s_ci99", |r| blank(r.predicted_s_ci99, 6)),
        Column::csv("predicted_rel", |r| blank(r.predicted_rel, 6)),
        Column::csv("predicted_mpi_s", |r| blank(r.predicted_mpi_s, 6)),
        Column::csv("predicted_mpi_s_ci99", |r| blank(r.predicted_mpi_s_ci99, 6)),
        Column::csv("predicted_mpi_rel", |r| blank(r.predicted_mpi_rel, 6)),
        Column::csv("app_wall_s", |r| format!("{:.3}", r.app_wall_s)),
        Column::csv("error_pct", |r| blank(r.error_pct, 3)),
        Column::csv("speedup", |r| blank(r.speedup, 3)),
        Column::csv("accepted_load", |r| format!("{:.6}", r.accepted_load)),
        Column::csv("accepted_load_peak", |r| {
            format!("{:.6}", r.accepted_load_peak)
        }),
        Column::csv("link_utilization_peak", |r| {
            format!("{:.4}", r.link_utilization_peak)
        }),
        Column::csv("frames_dropped", |r| format!("{:.1}", r.frames_dropped)),
        Column::csv("tcp_retransmissions", |r| {
            format!("{:.1}", r.tcp_retransmissions)
        }),
    ];
    study::csv(&columns, rows)
}

/// The summary as the table `fsin qemu --vary` prints.
pub fn summary_table(rows: &[ValueSummary]) -> String {
    let key = rows.first().map_or("value", |r| r.key.as_str());
    let columns = [
        Column::new(key, 16, |r: &ValueSummary| r.value.clone()).left(),
        Column::new("mode", 9, |r: &ValueSummary| r.mode.clone()).left(),
        Column::new("runs", 5, |r| r.runs.to_string()),
        Column::new("app guest s", 12, |r| format!("{:.6}", r.guest_s)),
        Column::new("+-99%", 9, |r| format!("{:.6}", r.guest_s_ci99)),
        Column::new("rel", 6, |r| format!("{:.3}", r.guest_rel)),
        Column::new("predicted s", 12, |r| opt(r.predicted_s, 6)),
        Column::new("rel", 6, |r| opt(r.predicted_rel, 3)),
        Column::new("MPI pred. s", 12, |r| opt(r.predicted_mpi_s, 6)),
        Column::new("rel", 6, |r| opt(r.predicted_mpi_rel, 3)),
        Column::new("app wall s", 11, |r| format!("{:.1}", r.app_wall_s)),
        Column::new("error %", 8, |r| opt(r.error_pct, 2)),
        Column::new("speed-up", 9, |r| opt(r.speedup, 2)),
        Column::new("load", 9, |r| format!("{:.5}", r.accepted_load)),
        Column::new("peak load", 9, |r| format!("{:.5}", r.accepted_load_peak)),
        Column::new("peak link", 9, |r| {
            format!("{:.3}", r.link_utilization_peak)
        }),
        Column::new("drops", 7, |r| format!("{:.0}", r.frames_dropped)),
        Column::new("retrans", 8, |r| format!("{:.0}", r.tcp_retransmissions)),
    ];
    study::table(&columns, rows)
}

/// The accuracy-versus-speed points of a slice study (values with an
/// error and a speed-up against the exact reference), a curve per mode.
pub fn tradeoff(rows: &[ValueSummary]) -> Vec<study::Tradeoff> {
    rows.iter()
        .filter_map(|r| {
            Some(study::Tradeoff {
                label: r.value.clone(),
                series: r.mode.clone(),
                error_pct: r.error_pct?,
                speedup: r.speedup?,
            })
        })
        .collect()
}

/// A chart of `area` with one slot per value of `rows` along x (each
/// value's name at its top left) and 0 to `hi` along y.
fn per_value_chart<'a, DB: DrawingBackend + 'a>(
    area: &'a DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    rows: &[ValueSummary],
    hi: f64,
) -> Result<
    ChartContext<
        'a,
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    PlotError,
> {
    let key = rows.first().map_or("value", |r| r.key.as_str());
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 14))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..rows.len() as f64, study::axis(caption, 0.0, hi)?)
        .map_err(PlotError::of)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_desc(key)
        .x_labels(0)
        .draw()
        .map_err(PlotError::of)?;
    chart
        .draw_series(rows.iter().enumerate().map(|(i, r)| {
            Text::new(
                r.value.clone(),
                (i as f64 + 0.1, hi * 0.98),
                ("sans-serif", 13).into_font(),
            )
        }))
        .map_err(PlotError::of)?;
    Ok(chart)
}

/// The paper's Fig. 4 (`study.svg`): each value's application time
/// relative to the first value's, full-system and (with `--predict`)
/// trace-driven side by side, with their 99% confidence intervals; and the
/// application's wall time per value.
///
/// # Errors
/// A message when the drawing fails.
pub fn fig4_svg(rows: &[ValueSummary]) -> Result<String, PlotError> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (960, 440)).into_drawing_area();
        root.fill(&WHITE).map_err(PlotError::of)?;
        let (left, right) = root.split_horizontally(560);
        let base = rows.first().map_or(1.0, |r| r.guest_s).max(1e-12);
        let first = |f: fn(&ValueSummary) -> Option<f64>| {
            rows.first().and_then(f).unwrap_or(1.0).max(1e-12)
        };
        let (pbase, mbase) = (first(|r| r.predicted_s), first(|r| r.predicted_mpi_s));
        // Per value: (relative time, its 99% half-width relative, colour)
        // of the full system, the frame-level and the MPI-level prediction.
        let orange = RGBColor(230, 120, 20);
        let green = RGBColor(40, 160, 60);
        let sides = |r: &ValueSummary| {
            [
                (Some(r.guest_rel), r.guest_s_ci99 / base, BLUE),
                (
                    r.predicted_rel,
                    r.predicted_s_ci99.unwrap_or(0.0) / pbase,
                    orange,
                ),
                (
                    r.predicted_mpi_rel,
                    r.predicted_mpi_s_ci99.unwrap_or(0.0) / mbase,
                    green,
                ),
            ]
        };
        let hi = rows
            .iter()
            .flat_map(|r| sides(r).map(|(v, ci, _)| v.unwrap_or(0.0) + ci))
            .fold(1.0, f64::max)
            * 1.15;
        let mut chart = per_value_chart(
            &left,
            "time relative to the first value (blue: full system; trace-driven: orange frames, green MPI)",
            rows,
            hi,
        )?;
        for (i, r) in rows.iter().enumerate() {
            let x = i as f64;
            let bars = sides(r)
                .into_iter()
                .enumerate()
                .map(|(k, (v, ci, colour))| {
                    let a = x + 0.08 + 0.28 * k as f64;
                    (a, a + 0.26, v, ci, colour)
                });
            for (a, b, v, ci, colour) in bars {
                // Inside the axis: plotters' pixel arithmetic overflows on
                // values far outside it (a negative time, a wide interval).
                let Some(v) = v.map(|v| v.clamp(0.0, hi)) else {
                    continue;
                };
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(a, 0.0), (b, v)],
                        colour.mix(0.7).filled(),
                    )))
                    .map_err(PlotError::of)?;
                if ci > 0.0 {
                    let m = (a + b) / 2.0;
                    chart
                        .draw_series(std::iter::once(PathElement::new(
                            vec![(m, (v - ci).max(0.0)), (m, (v + ci).min(hi))],
                            BLACK.stroke_width(2),
                        )))
                        .map_err(PlotError::of)?;
                }
            }
        }
        let w_hi = rows.iter().map(|r| r.app_wall_s).fold(0.0, f64::max) * 1.15 + 1e-9;
        let mut chart = per_value_chart(&right, "application wall time (s)", rows, w_hi)?;
        chart
            .draw_series(rows.iter().enumerate().map(|(i, r)| {
                Rectangle::new(
                    [
                        (i as f64 + 0.2, 0.0),
                        (i as f64 + 0.8, r.app_wall_s.max(0.0)),
                    ],
                    RED.mix(0.7).filled(),
                )
            }))
            .map_err(PlotError::of)?;
        root.present().map_err(PlotError::of)?;
    }
    Ok(out)
}

/// `v` with `digits` decimals, `-` when missing (the table's cells).
fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.digits$}"))
}

/// `v` with `digits` decimals, empty when missing (CSV cells).
fn blank(v: Option<f64>, digits: usize) -> String {
    v.map_or(String::new(), |x| format!("{x:.digits$}"))
}

/// Every run as CSV (`runs.csv`).
pub fn csv(points: &[StudyPoint]) -> String {
    let columns = [
        Column::csv("key", |p: &StudyPoint| p.key.clone()),
        Column::csv("value", |p| p.value.clone()),
        Column::csv("mode", |p| p.mode.clone()),
        Column::csv("exit_code", |p| {
            p.exit_code.map_or(String::new(), |c| c.to_string())
        }),
        Column::csv("guest_s", |p| blank(p.guest_s, 6)),
        Column::csv("app_wall_s", |p| blank(p.app_wall_s, 3)),
        Column::csv("wall_s", |p| format!("{:.3}", p.wall_s)),
        Column::csv("slices", |p| p.slices.to_string()),
        Column::csv("slice_net_cycles", |p| p.slice_net_cycles.to_string()),
        Column::csv("slice_node_cycles", |p| p.slice_node_cycles.to_string()),
        Column::csv("frames_delivered", |p| p.frames_delivered.to_string()),
        Column::csv("frame_latency_avg", |p| {
            format!("{:.3}", p.frame_latency_avg)
        }),
        Column::csv("repeat", |p| p.repeat.to_string()),
        Column::csv("seed", |p| p.seed.to_string()),
        Column::csv("reference", |p| p.reference.to_string()),
        Column::csv("predicted_s", |p| blank(p.predicted_s, 6)),
        Column::csv("predicted_mpi_s", |p| blank(p.predicted_mpi_s, 6)),
        Column::csv("traced_mpi_s", |p| blank(p.traced_mpi_s, 6)),
        Column::csv("accepted_load", |p| format!("{:.6}", p.accepted_load)),
        Column::csv("accepted_load_peak", |p| {
            format!("{:.6}", p.accepted_load_peak)
        }),
        Column::csv("link_utilization_peak", |p| {
            format!("{:.4}", p.link_utilization_peak)
        }),
        Column::csv("frames_dropped", |p| p.frames_dropped.to_string()),
        Column::csv("tcp_retransmissions", |p| p.tcp_retransmissions.to_string()),
    ];
    let runs: Vec<Figures> = points.iter().map(|p| p.run.clone()).collect();
    Figures::append_csv(&study::csv(&columns, points), &runs, &[])
}

/// Draws NetPIPE's throughput (Mbps) against the message size (bytes, log
/// scale) as an SVG (`netpipe.svg`); `points` are (bytes, Mbps).
///
/// # Errors
/// A message when the drawing fails.
pub fn netpipe_svg(points: &[(f64, f64)]) -> Result<String, PlotError> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (640, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(PlotError::of)?;
        // No points: one empty decade, not a log scale from infinity.
        let x_lo = points
            .iter()
            .map(|p| p.0)
            .reduce(f64::min)
            .unwrap_or(1.0)
            .max(1.0)
            / 1.5;
        let x_hi = points.iter().map(|p| p.0).fold(1.0, f64::max) * 1.5;
        let y_hi = points.iter().map(|p| p.1).fold(0.0, f64::max) * 1.15 + 1e-9;
        let mut chart = ChartBuilder::on(&root)
            .caption("NetPIPE over the simulated network", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(
                study::log_axis("the message size", x_lo, x_hi)?.log_scale(),
                study::axis("the throughput", 0.0, y_hi)?,
            )
            .map_err(PlotError::of)?;
        chart
            .configure_mesh()
            .x_desc("message size (bytes)")
            .y_desc("throughput (Mbps, guest time)")
            .draw()
            .map_err(PlotError::of)?;
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
                BLUE.stroke_width(2),
            ))
            .map_err(PlotError::of)?;
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 3, BLUE.filled())))
            .map_err(PlotError::of)?;
        root.present().map_err(PlotError::of)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(value: &str, guest_s: f64, wall: f64) -> StudyPoint {
        StudyPoint {
            key: "slice".into(),
            value: value.into(),
            exit_code: Some(0),
            guest_s: Some(guest_s),
            app_wall_s: Some(wall),
            wall_s: wall + 30.0,
            slices: 10,
            slice_net_cycles: 200,
            slice_node_cycles: 10_000,
            frames_delivered: 5,
            frame_latency_avg: 1.5,
            results: serde_json::Value::Null,
            fault: None,
            repeat: 0,
            seed: 0,
            predicted_s: None,
            predicted_mpi_s: None,
            traced_mpi_s: None,
            accepted_load: 0.01,
            accepted_load_peak: 0.05,
            link_utilization_peak: 0.1,
            frames_dropped: 0,
            tcp_retransmissions: 0,
            reference: false,
            mode: "lockstep".into(),
            run: Figures::default(),
        }
    }

    /// Two values, two repeats each, and an exact reference: means and
    /// 99% intervals by hand (t(0.995, 1) = 63.657 times the standard
    /// error), times relative to the first value, errors and speed-ups
    /// against the reference.
    #[test]
    fn summaries_by_hand() {
        let mut ps = vec![
            point("20:1000", 1.0, 90.0),
            point("20:1000", 1.2, 110.0),
            point("200:10000", 1.5, 40.0),
            point("200:10000", 1.5, 60.0),
            point("20:1000", 1.0, 200.0),
        ];
        ps[1].repeat = 1;
        ps[3].repeat = 1;
        ps[4].reference = true;
        for (p, s) in ps.iter_mut().zip([2.0, 2.2, 2.0, 2.2, 0.0]) {
            p.predicted_s = Some(s);
        }
        let rows = summarise(&ps);
        assert_eq!(rows.len(), 2);
        let (a, b) = (&rows[0], &rows[1]);
        assert_eq!((a.runs, b.runs), (2, 2));
        assert!((a.guest_s - 1.1).abs() < 1e-12);
        // Standard error 0.1: half-width 6.3657.
        assert!((a.guest_s_ci99 - 6.3657).abs() < 1e-9, "{}", a.guest_s_ci99);
        assert_eq!(b.guest_s_ci99, 0.0);
        assert!((b.guest_rel - 1.5 / 1.1).abs() < 1e-12);
        assert_eq!(b.predicted_rel, Some(1.0));
        assert!((a.error_pct.unwrap() - 10.0).abs() < 1e-9);
        assert!((b.error_pct.unwrap() - 50.0).abs() < 1e-9);
        assert!((a.speedup.unwrap() - 2.0).abs() < 1e-12);
        assert!((b.speedup.unwrap() - 4.0).abs() < 1e-12);
        let t = tradeoff(&rows);
        assert_eq!(t.len(), 2);
        let c = summary_csv(&rows);
        assert_eq!(c.lines().count(), 3);
        assert!(c
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("slice,20:1000,lockstep,2,1.100000,"));
        assert!(summary_table(&rows).contains("200:10000"));
        assert_eq!(csv(&ps).lines().count(), 6);
        let s = fig4_svg(&rows).unwrap();
        assert!(s.contains("<svg") && s.contains("200:10000"));
        let n = netpipe_svg(&[(1.0, 0.2), (1024.0, 50.0)]).unwrap();
        assert!(n.contains("message size"));
    }

    /// `--modes`: the same slice in two modes is two rows, each against
    /// the one exact reference, and two curves of the trade-off.
    #[test]
    fn a_value_in_two_modes_is_two_rows() {
        let mut ps = vec![
            point("200:10000", 1.0, 50.0),
            point("200:10000", 1.5, 40.0),
            point("20:1000", 1.0, 200.0),
        ];
        ps[1].mode = "parallel".into();
        ps[2].reference = true;
        ps[2].mode = "exact".into();
        let rows = summarise(&ps);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (rows[0].mode.as_str(), rows[1].mode.as_str()),
            ("lockstep", "parallel")
        );
        assert_eq!(rows[0].error_pct, Some(0.0));
        assert!((rows[1].error_pct.unwrap() - 50.0).abs() < 1e-9);
        assert!((rows[1].guest_rel - 1.5).abs() < 1e-12);
        let t = tradeoff(&rows);
        assert_eq!(
            t.iter()
                .map(|p| (p.series.as_str(), p.speedup))
                .collect::<Vec<_>>(),
            [("lockstep", 4.0), ("parallel", 5.0)]
        );
    }

    /// A study with no points yet (interrupted in its first run) still
    /// draws its plots: empty axes, in bounded time.
    #[test]
    fn plots_of_no_points() {
        assert!(netpipe_svg(&[]).unwrap().contains("<svg"));
        assert!(crate::sweep::svg(&[]).unwrap().contains("<svg"));
    }
}
