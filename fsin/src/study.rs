//! One writer for every study: `fsin sweep` ([`crate::sweep`]), `fsin
//! cosim-sweep` and `fsin qemu --vary` (crate `fsin-cosim`). A study is a
//! list of points, each shown as a row of an aligned text table and of a
//! CSV file (each with its own columns), written with the points as JSON
//! and the study's SVG plots into one directory.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// A column of a study's table or CSV: its header and each point's cell.
pub struct Column<P> {
    /// Its header.
    pub head: String,
    /// Width in the table, in characters (CSV ignores it).
    pub width: usize,
    /// Left-aligned in the table (otherwise right-aligned).
    pub left: bool,
    /// A point's cell.
    pub cell: Box<dyn Fn(&P) -> String>,
}

impl<P> Column<P> {
    /// A right-aligned column `width` characters wide.
    pub fn new(head: impl Into<String>, width: usize, cell: fn(&P) -> String) -> Column<P>
    where
        P: 'static,
    {
        Column::of(head, width, cell)
    }

    /// A right-aligned column `width` characters wide whose cells come
    /// from a closure that holds what it needs (e.g. the name of the
    /// figure it shows).
    pub fn of(
        head: impl Into<String>,
        width: usize,
        cell: impl Fn(&P) -> String + 'static,
    ) -> Column<P> {
        Column {
            head: head.into(),
            width,
            left: false,
            cell: Box::new(cell),
        }
    }

    /// The same column, left-aligned.
    pub fn left(self) -> Column<P> {
        Column { left: true, ..self }
    }

    /// A CSV column (no width).
    pub fn csv(head: impl Into<String>, cell: fn(&P) -> String) -> Column<P>
    where
        P: 'static,
    {
        Column::new(head, 0, cell)
    }
}

/// The aligned table of `points`: a header row, then a row per point,
/// cells separated by one space.
pub fn table<'a, P: 'a>(columns: &[Column<P>], points: impl IntoIterator<Item = &'a P>) -> String {
    let mut s = String::new();
    let mut row = |cells: Vec<String>| {
        for (i, (c, text)) in columns.iter().zip(cells).enumerate() {
            let sep = if i == 0 { "" } else { " " };
            let w = c.width;
            let _ = if c.left {
                write!(s, "{sep}{text:<w$}")
            } else {
                write!(s, "{sep}{text:>w$}")
            };
        }
        s.push('\n');
    };
    row(columns.iter().map(|c| c.head.clone()).collect());
    for p in points {
        row(columns.iter().map(|c| (c.cell)(p)).collect());
    }
    s
}

/// The CSV of `points`: a header row, then a row per point.
pub fn csv<P>(columns: &[Column<P>], points: &[P]) -> String {
    let line = |cells: Vec<String>| cells.join(",") + "\n";
    let mut s = line(columns.iter().map(|c| c.head.clone()).collect());
    for p in points {
        s += &line(columns.iter().map(|c| (c.cell)(p)).collect());
    }
    s
}

/// A plot that could not be drawn: plotters' error, or why the data
/// cannot be plotted, as text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PlotError(pub String);

impl PlotError {
    /// The error of a drawing step.
    pub fn of(e: impl std::fmt::Display) -> PlotError {
        PlotError(e.to_string())
    }
}

/// The axis `lo..hi` of a plot of `what`, if plotters can draw it: both
/// ends finite and `lo < hi`. A value near `f64::MAX` (a hand-edited
/// `point.json`) would make an axis infinite, and plotters' search for
/// its ticks would never end.
///
/// # Errors
/// The range is not finite or empty: the message names `what` and the
/// range.
pub fn axis(what: &str, lo: f64, hi: f64) -> Result<std::ops::Range<f64>, PlotError> {
    if lo.is_finite() && hi.is_finite() && lo < hi {
        Ok(lo..hi)
    } else {
        Err(PlotError(format!(
            "cannot draw {what}: its axis would run from {lo} to {hi}"
        )))
    }
}

/// The axis `lo..hi` of a plot of `what` on a log scale (the caller's
/// `.log_scale()`): as [`axis`], with
/// `lo > 0` and at most twelve decades (plotters marks every decade; a
/// speed-up of 1e-314 would ask it for hundreds of them).
///
/// # Errors
/// As [`axis`], or the range is not positive or spans more than twelve
/// decades.
pub fn log_axis(what: &str, lo: f64, hi: f64) -> Result<std::ops::Range<f64>, PlotError> {
    let range = axis(what, lo, hi)?;
    if lo > 0.0 && hi / lo <= 1e12 {
        Ok(range)
    } else {
        Err(PlotError(format!(
            "cannot draw {what}: its log-scale axis from {lo} to {hi} is not positive or spans more than twelve decades"
        )))
    }
}

/// Why a study's files could not be written.
#[derive(Debug, thiserror::Error)]
pub enum StudyError {
    /// A file or directory could not be created.
    #[error("cannot create {}: {source}", path.display())]
    Create {
        /// The file or directory.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// A file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// The study could not be serialized.
    #[error("cannot write the study as JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// Writes a study into `dir` (created if missing): `NAME.csv`, `NAME.json`
/// (`json`, pretty-printed) and each `(file name, SVG text)` of `plots`.
/// Gives the paths of the plots written.
///
/// # Errors
/// [`StudyError`], naming the file or directory.
pub fn write(
    dir: &Path,
    name: &str,
    csv: &str,
    json: &impl Serialize,
    plots: &[(impl AsRef<str>, String)],
) -> Result<Vec<PathBuf>, StudyError> {
    std::fs::create_dir_all(dir).map_err(|source| StudyError::Create {
        path: dir.to_path_buf(),
        source,
    })?;
    let json = serde_json::to_string_pretty(json)? + "\n";
    let put = |file: &str, text: &str| {
        let path = dir.join(file);
        std::fs::write(&path, text).map_err(|source| StudyError::Write {
            path: path.clone(),
            source,
        })?;
        Ok(path)
    };
    put(&format!("{name}.csv"), csv)?;
    put(&format!("{name}.json"), &json)?;
    plots
        .iter()
        .map(|(file, svg)| put(file.as_ref(), svg))
        .collect()
}

/// Draws the legend of `chart`'s labelled series at `position`, in the
/// style of every study plot (a white box with a black border).
///
/// # Errors
/// A message when the drawing fails.
pub fn legend<'a, DB, CT>(
    chart: &mut plotters::prelude::ChartContext<'a, DB, CT>,
    position: plotters::prelude::SeriesLabelPosition,
) -> Result<(), PlotError>
where
    DB: plotters::prelude::DrawingBackend + 'a,
    DB::ErrorType: 'static,
    CT: plotters::coord::CoordTranslate,
{
    use plotters::prelude::*;
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(PlotError::of)
}

/// Mean and half-width of the 99% confidence interval of `samples`
/// (Student's t with n - 1 degrees of freedom,
/// [`crate::stats::interval`]); NaN and 0 for no sample, the sample and 0
/// for one.
pub fn mean_ci99(samples: &[f64]) -> (f64, f64) {
    match samples {
        [] => (f64::NAN, 0.0),
        [x] => (*x, 0.0),
        _ => crate::stats::interval::mean_half_width(samples, 0.99).unwrap_or((f64::NAN, 0.0)),
    }
}

/// One point of an accuracy-versus-speed curve: a setting (`label`) of
/// one curve (`series`, e.g. the synchronisation mode), its result's error
/// against the exact reference (%, signed) and its speed-up (the
/// reference's wall time over its own).
#[derive(Debug, Clone, Serialize)]
pub struct Tradeoff {
    /// The point's label.
    pub label: String,
    /// Its curve.
    pub series: String,
    /// Its result's error against the exact reference, % (signed).
    pub error_pct: f64,
    /// The reference's wall time over its own.
    pub speedup: f64,
}

/// The accuracy-versus-speed curves (`tradeoff.svg`): speed-up against the
/// exact reference on the x axis (log scale), the error against it (%) on
/// the y axis, one labelled point per setting, the points of each series
/// in a colour of their own joined in the order of their speed-up, with a
/// legend. Used by `fsin cosim-sweep` and `fsin qemu --vary slice=`.
///
/// # Errors
/// A message when the drawing fails.
pub fn tradeoff_svg(points: &[Tradeoff]) -> Result<String, PlotError> {
    use plotters::prelude::*;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (640, 460)).into_drawing_area();
        root.fill(&WHITE).map_err(PlotError::of)?;
        let finite = points
            .iter()
            .filter(|p| p.speedup > 0.0 && p.error_pct.is_finite());
        let x_hi = finite.clone().map(|p| p.speedup).fold(1.0, f64::max) * 2.0;
        let x_lo = finite.clone().map(|p| p.speedup).fold(1.0, f64::min) / 2.0;
        let y_hi = finite
            .clone()
            .map(|p| p.error_pct.abs())
            .fold(0.0, f64::max)
            * 1.2
            + 0.1;
        let y_lo = finite.clone().map(|p| p.error_pct).fold(0.0, f64::min) * 1.2 - 0.1;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "accuracy against speed (reference: exact mode)",
                ("sans-serif", 18),
            )
            .margin(14)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(
                log_axis("the speed-up", x_lo, x_hi)?.log_scale(),
                axis("the error", y_lo, y_hi)?,
            )
            .map_err(PlotError::of)?;
        let y_label = error_label(y_hi - y_lo);
        chart
            .configure_mesh()
            .x_desc("speed-up over exact mode (wall time)")
            .y_desc("error of the result against exact mode (%)")
            .y_label_formatter(&y_label)
            .draw()
            .map_err(PlotError::of)?;
        let mut series: Vec<&str> = Vec::new();
        for p in finite.clone() {
            if !series.contains(&p.series.as_str()) {
                series.push(&p.series);
            }
        }
        const COLOURS: [RGBColor; 4] = [
            BLUE,
            RGBColor(230, 120, 20),
            RGBColor(40, 160, 60),
            RGBColor(160, 40, 160),
        ];
        for (k, name) in series.iter().enumerate() {
            let colour = COLOURS[k % COLOURS.len()];
            let mut curve: Vec<(f64, f64)> = finite
                .clone()
                .filter(|p| p.series == *name)
                .map(|p| (p.speedup, p.error_pct))
                .collect();
            curve.sort_by(|a, b| a.0.total_cmp(&b.0));
            chart
                .draw_series(LineSeries::new(curve.clone(), colour.mix(0.6)))
                .map_err(PlotError::of)?
                .label(name.to_string())
                .legend(move |(x, y)| Circle::new((x + 10, y), 5, colour.filled()));
            chart
                .draw_series(
                    curve
                        .into_iter()
                        .map(|xy| Circle::new(xy, 5, colour.filled())),
                )
                .map_err(PlotError::of)?;
        }
        if series.iter().any(|s| !s.is_empty()) {
            legend(&mut chart, SeriesLabelPosition::MiddleRight)?;
        }
        chart
            .draw_series(finite.map(|p| {
                Text::new(
                    p.label.clone(),
                    (p.speedup, p.error_pct),
                    ("sans-serif", 14).into_font(),
                )
            }))
            .map_err(PlotError::of)?;
        root.present().map_err(PlotError::of)?;
    }
    Ok(out)
}

/// The labels of an error axis that spans `span` percentage points: one
/// digit more than the span's order of magnitude needs, and a tick that
/// lands a rounding error off zero written as 0 (not -0.0).
fn error_label(span: f64) -> impl Fn(&f64) -> String {
    let digits = (1.0 - span.log10().floor()).clamp(0.0, 6.0) as usize;
    move |v: &f64| {
        let v = if v.abs() < span * 1e-9 { 0.0 } else { *v };
        format!("{v:.digits$}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_and_csv_by_hand() {
        let cols = [
            Column::new("key", 4, |p: &(u32, f64)| p.0.to_string()).left(),
            Column::new("x", 6, |p: &(u32, f64)| format!("{:.2}", p.1)),
        ];
        let points = [(1, 0.5), (22, 10.25)];
        assert_eq!(
            table(&cols, &points),
            "key       x\n1      0.50\n22    10.25\n"
        );
        assert_eq!(csv(&cols, &points), "key,x\n1,0.50\n22,10.25\n");
    }

    /// A span of 0.4 points has ticks of 0.05: two digits; of 12 points,
    /// ticks of 1 or 2: none. A tick 1e-17 below zero reads 0.
    #[test]
    fn error_axis_labels_by_hand() {
        let fine = error_label(0.4);
        assert_eq!(fine(&0.15), "0.15");
        assert_eq!(fine(&-1e-17), "0.00");
        assert_eq!(fine(&-0.05), "-0.05");
        assert_eq!(error_label(12.0)(&-4.0), "-4");
        let svg = tradeoff_svg(&[
            Tradeoff {
                label: "200:10000".into(),
                series: "lockstep".into(),
                error_pct: 0.152,
                speedup: 2.71,
            },
            Tradeoff {
                label: "20:1000".into(),
                series: "lockstep".into(),
                error_pct: -0.034,
                speedup: 1.04,
            },
        ])
        .unwrap();
        let labels: Vec<&str> = svg.lines().map(str::trim).collect();
        assert!(labels.contains(&"0.00"), "{svg}");
        let negative_zero =
            |l: &&str| l.starts_with("-0") && l.trim_matches(['-', '0', '.']).is_empty();
        assert!(!labels.iter().any(negative_zero), "{svg}");
    }

    /// By hand: 1, 2, 3 have mean 2 and standard error 1/sqrt(3); t(0.995,
    /// 2) = 9.925.
    #[test]
    fn confidence_intervals_by_hand() {
        let (m, h) = mean_ci99(&[1.0, 2.0, 3.0]);
        assert_eq!(m, 2.0);
        assert!((h - 9.925 / 3f64.sqrt()).abs() < 1e-3, "{h}");
        assert_eq!(mean_ci99(&[5.0]), (5.0, 0.0));
        let svg = tradeoff_svg(&[
            Tradeoff {
                label: "20:1000".into(),
                series: "lockstep".into(),
                error_pct: 0.5,
                speedup: 1.2,
            },
            Tradeoff {
                label: "200:10000".into(),
                series: "parallel".into(),
                error_pct: 3.0,
                speedup: 3.5,
            },
        ])
        .unwrap();
        assert!(svg.contains("200:10000") && svg.contains("<svg"));
        // A legend entry per series.
        let texts: Vec<&str> = svg.lines().map(str::trim).collect();
        assert!(
            texts.contains(&"lockstep") && texts.contains(&"parallel"),
            "{svg}"
        );
    }
}
