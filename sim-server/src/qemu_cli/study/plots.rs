//! The plots of a study and of NetPIPE: the paper's Fig. 4
//! (`study.svg`) and NetPIPE's throughput (`netpipe.svg`).

use plotters::prelude::*;

use fsin::study::{self, PlotError};

use super::point::ValueSummary;

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
