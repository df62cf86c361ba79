//! The slice-ratio study (Simics paper, section 6, Table 1): one workload run at
//! several slice lengths with the same bandwidth ratio, plus the exact mode
//! as the accuracy reference. Coarser slices synchronise less often (faster
//! runs) but add false delay (longer simulated times).

use plotters::prelude::*;
use serde::Serialize;

use fsin::config::SyncMode;
use fsin::figures::Figures;
use fsin::study::{self, Column, PlotError};

use crate::report::CosimReport;

/// One point of the study.
#[derive(Debug, Clone, Serialize)]
pub struct SweepPoint {
    /// `lockstep`, `parallel` or `exact`.
    pub mode: SyncMode,
    /// Network cycles per slice.
    pub slice_net_cycles: u64,
    /// Node cycles per slice.
    pub slice_node_cycles: u64,
    /// Slices simulated.
    pub slices: u64,
    /// Application completion, node cycles.
    pub app_cycles: u64,
    /// Application completion, simulated seconds.
    pub app_s: f64,
    /// Mean frame latency, node cycles.
    pub frame_latency_avg: f64,
    /// Wall-clock seconds of the run.
    pub wall_s: f64,
    /// Every figure of the run's report (`sweep.json`; in `sweep.csv`,
    /// a column for each one the columns above leave out).
    pub run: Figures,
}

impl SweepPoint {
    /// The point of run `r`: its mode, slice, application time (node
    /// cycles, and seconds at the run's node clock), frame latency and
    /// wall time.
    pub fn of(r: &CosimReport) -> SweepPoint {
        let app_cycles = r.app_cycles.unwrap_or(0);
        let clock = r.node_cycles as f64 / r.simulated_s.max(f64::MIN_POSITIVE);
        SweepPoint {
            mode: r.mode,
            slice_net_cycles: r.slice_net_cycles,
            slice_node_cycles: r.slice_node_cycles,
            slices: r.slices,
            app_cycles,
            app_s: app_cycles as f64 / clock,
            frame_latency_avg: r.frame_latency_avg,
            wall_s: r.wall_s,
            run: Figures::of(r).unwrap_or_default(),
        }
    }
}

/// What one panel of the plot shows of a point.
type Metric = fn(&SweepPoint) -> f64;

/// The accuracy-versus-speed points (`tradeoff.svg`): every lock-step or
/// parallel run's application time against the exact run's (error, %) and
/// the exact run's wall time over its own (speed-up).
pub fn tradeoff(points: &[SweepPoint]) -> Vec<study::Tradeoff> {
    let Some(exact) = points.iter().find(|p| p.mode == SyncMode::Exact) else {
        return Vec::new();
    };
    points
        .iter()
        .filter(|p| p.mode != SyncMode::Exact && exact.app_s > 0.0)
        .map(|p| study::Tradeoff {
            label: format!("{}:{}", p.slice_net_cycles, p.slice_node_cycles),
            series: p.mode.to_string(),
            error_pct: (p.app_s - exact.app_s) / exact.app_s * 100.0,
            speedup: exact.wall_s / p.wall_s.max(1e-9),
        })
        .collect()
}

/// The table printed by `fsin cosim-sweep`.
pub fn table(points: &[SweepPoint]) -> String {
    let columns = [
        Column::new("mode", 9, |p: &SweepPoint| p.mode.to_string()).left(),
        Column::new("slice net:node", 14, |p| {
            format!("{}:{}", p.slice_net_cycles, p.slice_node_cycles)
        }),
        Column::new("slices", 8, |p| p.slices.to_string()),
        Column::new("app cycles", 14, |p| p.app_cycles.to_string()),
        Column::new("app ms", 12, |p| format!("{:.4}", p.app_s * 1e3)),
        Column::new("frame latency", 16, |p| {
            format!("{:.1}", p.frame_latency_avg)
        }),
        Column::new("wall s", 9, |p| format!("{:.3}", p.wall_s)),
    ];
    study::table(&columns, points)
}

/// The points as CSV.
pub fn csv(points: &[SweepPoint]) -> String {
    let columns = [
        Column::csv("mode", |p: &SweepPoint| p.mode.to_string()),
        Column::csv("slice_net_cycles", |p| p.slice_net_cycles.to_string()),
        Column::csv("slice_node_cycles", |p| p.slice_node_cycles.to_string()),
        Column::csv("slices", |p| p.slices.to_string()),
        Column::csv("app_cycles", |p| p.app_cycles.to_string()),
        Column::csv("app_s", |p| format!("{:.9}", p.app_s)),
        Column::csv("frame_latency_avg", |p| {
            format!("{:.3}", p.frame_latency_avg)
        }),
        Column::csv("wall_s", |p| format!("{:.6}", p.wall_s)),
    ];
    let runs: Vec<Figures> = points.iter().map(|p| p.run.clone()).collect();
    Figures::append_csv(&study::csv(&columns, points), &runs, &[])
}

/// Draws simulated application time and wall time against the slice
/// length (node cycles, log scale) as an SVG; the exact-mode reference is a
/// dashed line.
///
/// # Errors
/// A message when the drawing fails.
pub fn svg(points: &[SweepPoint]) -> Result<String, PlotError> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (960, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(PlotError::of)?;
        let (left, right) = root.split_horizontally(480);
        let lock: Vec<&SweepPoint> = points
            .iter()
            .filter(|p| p.mode != SyncMode::Exact)
            .collect();
        let exact = points.iter().find(|p| p.mode == SyncMode::Exact);
        let xs: Vec<f64> = points
            .iter()
            .map(|p| p.slice_node_cycles.max(1) as f64)
            .collect();
        // No points (a sweep interrupted in its first run): empty axes
        // over one decade, not a log scale from infinity to 0.
        let x_lo = xs.iter().copied().reduce(f64::min).unwrap_or(1.0) / 2.0;
        let x_hi = xs.iter().copied().reduce(f64::max).unwrap_or(5.0) * 2.0;
        let app_ms: Metric = |p| p.app_s * 1e3;
        let wall: Metric = |p| p.wall_s;
        for (area, title, y) in [
            (&left, "simulated application time (ms)", app_ms),
            (&right, "wall time (s)", wall),
        ] {
            let y_hi = points.iter().map(y).fold(0.0, f64::max) * 1.15 + 1e-9;
            let mut chart = ChartBuilder::on(area)
                .caption(title, ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(60)
                .build_cartesian_2d(
                    study::log_axis("the slice", x_lo, x_hi)?.log_scale(),
                    study::axis(title, 0.0, y_hi)?,
                )
                .map_err(PlotError::of)?;
            chart
                .configure_mesh()
                .x_desc("slice length (node cycles)")
                .draw()
                .map_err(PlotError::of)?;
            chart
                .draw_series(LineSeries::new(
                    lock.iter().map(|p| (p.slice_node_cycles as f64, y(p))),
                    BLUE.stroke_width(2),
                ))
                .map_err(PlotError::of)?
                .label("lock-step")
                .legend(|(x, yy)| PathElement::new(vec![(x, yy), (x + 18, yy)], BLUE));
            chart
                .draw_series(
                    lock.iter()
                        .map(|p| Circle::new((p.slice_node_cycles as f64, y(p)), 4, BLUE.filled())),
                )
                .map_err(PlotError::of)?;
            if let Some(e) = exact {
                chart
                    .draw_series(DashedLineSeries::new(
                        [(x_lo, y(e)), (x_hi, y(e))],
                        6,
                        4,
                        RED.stroke_width(2),
                    ))
                    .map_err(PlotError::of)?
                    .label("exact (reference)")
                    .legend(|(x, yy)| PathElement::new(vec![(x, yy), (x + 18, yy)], RED));
            }
            study::legend(&mut chart, SeriesLabelPosition::MiddleRight)?;
        }
        root.present().map_err(PlotError::of)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    /// A sweep with no points yet (interrupted in its first run) still
    /// draws its plot: empty axes, in bounded time.
    #[test]
    fn a_plot_of_no_points() {
        assert!(super::svg(&[]).unwrap().contains("<svg"));
    }
}
