//! The application study of `fsin qemu --vary` (Simics paper, section 6,
//! Table 1, with a real MPI application instead of synthetic nodes): one
//! command run on QEMU guests once per value of a setting, its run time as
//! the guests measured it (guest seconds) against the wall time the
//! co-simulation took. Coarser slices synchronise less often (less wall
//! time) but delay frames by up to a slice (more guest time). Also the
//! NetPIPE plot of `fsin qemu --app netpipe --out`.

use plotters::prelude::*;
use serde::Serialize;

use fsin::study::{self, Column, PlotError};

/// One run of the study.
#[derive(Debug, Clone, Serialize)]
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
}

/// `v` with `digits` decimals, `-` when missing (the table's cells).
fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.digits$}"))
}

/// `v` with `digits` decimals, empty when missing (CSV cells).
fn blank(v: Option<f64>, digits: usize) -> String {
    v.map_or(String::new(), |x| format!("{x:.digits$}"))
}

/// The table `fsin qemu --vary` prints.
pub fn table(points: &[StudyPoint]) -> String {
    let key = points.first().map_or("value", |p| p.key.as_str());
    let columns = [
        Column::new(key, 16, |p: &StudyPoint| p.value.clone()).left(),
        Column::new("exit", 5, |p| {
            p.exit_code.map_or("-".into(), |c| c.to_string())
        }),
        Column::new("app guest s", 12, |p| opt(p.guest_s, 6)),
        Column::new("app wall s", 11, |p| opt(p.app_wall_s, 1)),
        Column::new("wall s", 9, |p| format!("{:.1}", p.wall_s)),
        Column::new("slices", 9, |p| p.slices.to_string()),
        Column::new("frames", 9, |p| p.frames_delivered.to_string()),
        Column::new("frame latency", 14, |p| {
            format!("{:.1}", p.frame_latency_avg)
        }),
    ];
    study::table(&columns, points)
}

/// The points as CSV (`study.csv`).
pub fn csv(points: &[StudyPoint]) -> String {
    let columns = [
        Column::csv("key", |p: &StudyPoint| p.key.clone()),
        Column::csv("value", |p| p.value.clone()),
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
    ];
    study::csv(&columns, points)
}

/// What one panel of the study plot shows of a point.
type Metric = fn(&StudyPoint) -> Option<f64>;

/// Draws the application's guest time and its wall time against the
/// values (one bar each, in the order given) as an SVG (`study.svg`).
///
/// # Errors
/// A message when the drawing fails.
pub fn svg(points: &[StudyPoint]) -> Result<String, PlotError> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (960, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(PlotError::of)?;
        let (left, right) = root.split_horizontally(480);
        let key = points.first().map_or("value", |p| p.key.as_str());
        let guest: Metric = |p| p.guest_s;
        let wall: Metric = |p| p.app_wall_s;
        let n = points.len();
        for (area, title, y, colour) in [
            (&left, "application run time (guest s)", guest, BLUE),
            (&right, "application wall time (s)", wall, RED),
        ] {
            let y_hi = points.iter().filter_map(y).fold(0.0, f64::max) * 1.15 + 1e-9;
            let mut chart = ChartBuilder::on(area)
                .caption(title, ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(60)
                .build_cartesian_2d((0..n).into_segmented(), 0.0..y_hi)
                .map_err(PlotError::of)?;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_desc(key)
                .x_label_formatter(&|x| match x {
                    SegmentValue::CenterOf(i) => {
                        points.get(*i).map_or(String::new(), |p| p.value.clone())
                    }
                    _ => String::new(),
                })
                .draw()
                .map_err(PlotError::of)?;
            chart
                .draw_series(points.iter().enumerate().filter_map(|(i, p)| {
                    let v = y(p)?;
                    let mut bar = Rectangle::new(
                        [
                            (SegmentValue::Exact(i), 0.0),
                            (SegmentValue::Exact(i + 1), v),
                        ],
                        colour.mix(0.7).filled(),
                    );
                    bar.set_margin(0, 0, 12, 12);
                    Some(bar)
                }))
                .map_err(PlotError::of)?;
        }
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
        let x_lo = points
            .iter()
            .map(|p| p.0)
            .fold(f64::INFINITY, f64::min)
            .max(1.0)
            / 1.5;
        let x_hi = points.iter().map(|p| p.0).fold(1.0, f64::max) * 1.5;
        let y_hi = points.iter().map(|p| p.1).fold(0.0, f64::max) * 1.15 + 1e-9;
        let mut chart = ChartBuilder::on(&root)
            .caption("NetPIPE over the simulated network", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d((x_lo..x_hi).log_scale(), 0.0..y_hi)
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
        }
    }

    #[test]
    fn table_csv_and_plots_list_every_value() {
        let ps = [point("20:1000", 1.25, 90.0), point("200:10000", 1.5, 40.0)];
        let t = table(&ps);
        assert!(t.starts_with("slice"));
        assert!(t.contains("20:1000") && t.contains("1.250000") && t.contains("40.0"));
        let c = csv(&ps);
        assert_eq!(c.lines().count(), 3);
        assert!(c
            .lines()
            .nth(2)
            .unwrap()
            .starts_with("slice,200:10000,0,1.500000,40.000,70.000,"));
        let s = svg(&ps).unwrap();
        assert!(s.contains("<svg") && s.contains("200:10000"));
        let n = netpipe_svg(&[(1.0, 0.2), (1024.0, 50.0)]).unwrap();
        assert!(n.contains("message size"));
    }
}
