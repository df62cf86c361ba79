//! The plots of `fsin sweep` as SVG: a curve per series, each in a colour
//! of its own with its 95% intervals as error bars and its bisection bound
//! as a dashed line of its colour; the title names the settings every
//! point shares.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{Point, Sweep};
use crate::study::{self, PlotError};

/// One point of a curve: where, the half-width of its 95% interval on
/// the y axis, and whether it is past saturation.
#[derive(Debug, Clone, Copy)]
struct Mark {
    x: f64,
    y: f64,
    err: Option<f64>,
    saturated: bool,
}

/// One series' curve.
struct Curve {
    label: String,
    marks: Vec<Mark>,
    bound: Option<f64>,
}

/// What a chart shows.
struct Chart<'a> {
    title: &'a str,
    subtitle: String,
    x_desc: &'a str,
    y_desc: &'a str,
    /// Draw y = x (accepted vs offered load).
    diagonal: bool,
    /// Join past-saturation points into the curve (not in latency vs
    /// accepted load, where they fold back).
    join_saturated: bool,
}

impl Sweep {
    /// The plots as `(file name, SVG text)`: for `load`, `latency.svg`
    /// (mean latency vs accepted load, points past saturation hollow and
    /// left out of the line, which would fold back) and `throughput.svg`
    /// (accepted vs offered load, with the ideal diagonal and each
    /// series' bisection bound); for other numeric keys, `sweep.svg`
    /// (accepted load or, for workloads, execution time against the key).
    ///
    /// # Errors
    /// A message when drawing fails, or the varied key is not numeric
    /// (other than `load`: the curves need a numeric x axis).
    pub fn plots(&self) -> Result<Vec<(&'static str, String)>, PlotError> {
        let subtitle = self.subtitle();
        if self.vary == "load" {
            let latency = self.curves(|p| Mark {
                x: p.report.measured.accepted_load,
                y: p.report.measured.latency_avg,
                err: p.report.latency_ci95,
                saturated: p.saturated(),
            });
            let throughput = self.curves(|p| Mark {
                x: p.report.offered_load,
                y: p.report.measured.accepted_load,
                err: p.report.accepted_load_ci95,
                saturated: p.saturated(),
            });
            return Ok(vec![
                (
                    "latency.svg",
                    draw(
                        &Chart {
                            title: "latency vs accepted load",
                            subtitle: subtitle.clone(),
                            x_desc: "accepted load (phits/node/cycle)",
                            y_desc: "mean latency (cycles)",
                            diagonal: false,
                            join_saturated: false,
                        },
                        &without_bounds(latency),
                    )?,
                ),
                (
                    "throughput.svg",
                    draw(
                        &Chart {
                            title: "accepted vs offered load",
                            subtitle,
                            x_desc: "offered load (phits/node/cycle)",
                            y_desc: "accepted load (phits/node/cycle)",
                            diagonal: true,
                            join_saturated: true,
                        },
                        &throughput,
                    )?,
                ),
            ]);
        }
        let numeric = self.points.iter().all(|p| p.value.parse::<f64>().is_ok());
        if !numeric {
            return Err(PlotError(format!(
                "{} has non-numeric values: compare them as curves with --series {}=V1,V2,... and --vary load=...",
                self.vary, self.vary
            )));
        }
        let x = |p: &Point| p.value.parse::<f64>().unwrap_or(f64::NAN);
        let (title, y_desc, curves) = if self.app() {
            (
                format!("execution time vs {}", self.vary),
                "execution time (cycles)",
                self.curves(|p| Mark {
                    x: x(p),
                    y: p.report.app.as_ref().map_or(0.0, |a| a.exec_cycles as f64),
                    err: None,
                    saturated: false,
                }),
            )
        } else {
            (
                format!("accepted load vs {}", self.vary),
                "accepted load (phits/node/cycle)",
                self.curves(|p| Mark {
                    x: x(p),
                    y: p.report.measured.accepted_load,
                    err: p.report.accepted_load_ci95,
                    saturated: false,
                }),
            )
        };
        Ok(vec![(
            "sweep.svg",
            draw(
                &Chart {
                    title: &title,
                    subtitle,
                    x_desc: &self.vary,
                    y_desc,
                    diagonal: false,
                    join_saturated: true,
                },
                &without_bounds(curves),
            )?,
        )])
    }

    /// A curve per series, its points' marks from `mark`.
    fn curves(&self, mark: impl Fn(&Point) -> Mark) -> Vec<Curve> {
        self.series
            .iter()
            .map(|s| Curve {
                label: if s.label.is_empty() {
                    "fsin-rs".to_string()
                } else {
                    s.label.clone()
                },
                marks: (self.points.iter())
                    .filter(|p| p.series == s.label)
                    .map(&mark)
                    .collect(),
                bound: s.bisection_bound,
            })
            .collect()
    }

    /// The settings every point shares, for the title: the command line's,
    /// and the topology when neither the series nor the varied key set it.
    fn subtitle(&self) -> String {
        let mut words = self.fixed.clone();
        let sets_topo = self.vary == "topo"
            || self.fixed.iter().any(|w| w.starts_with("topo="))
            || self
                .series
                .iter()
                .any(|s| s.settings.iter().any(|w| w.starts_with("topo=")));
        if !sets_topo {
            if let Some(topo) = self
                .points
                .first()
                .and_then(|p| p.report.config.get("topo"))
            {
                words.insert(0, format!("topo={}", topo.as_str().unwrap_or_default()));
            }
        }
        let mut text = if words.is_empty() {
            "every other key at its default".to_string()
        } else {
            words.join(" ")
        };
        if text.chars().count() > 100 {
            text = text.chars().take(97).collect::<String>() + "...";
        }
        text
    }
}

/// The colour of the `i`th curve: ten that print and project apart
/// (Tableau's), then again.
fn colour(i: usize) -> RGBColor {
    const TEN: [(u8, u8, u8); 10] = [
        (31, 119, 180),
        (214, 39, 40),
        (44, 160, 44),
        (255, 127, 14),
        (148, 103, 189),
        (140, 86, 75),
        (227, 119, 194),
        (127, 127, 127),
        (188, 189, 34),
        (23, 190, 207),
    ];
    let (r, g, b) = TEN[i % TEN.len()];
    RGBColor(r, g, b)
}

/// The curves without their bounds (plots whose y axis is not a load).
fn without_bounds(curves: Vec<Curve>) -> Vec<Curve> {
    curves
        .into_iter()
        .map(|c| Curve { bound: None, ..c })
        .collect()
}

/// Draws `curves` on one chart.
/// `root` filled white with `chart`'s title and subtitle on top; the
/// area below them, for the chart.
fn titled<'a>(
    root: &DrawingArea<SVGBackend<'a>, Shift>,
    chart: &Chart<'_>,
) -> Result<DrawingArea<SVGBackend<'a>, Shift>, PlotError> {
    root.fill(&WHITE).map_err(PlotError::of)?;
    let (top, body) = root.split_vertically(46);
    top.draw(&Text::new(
        chart.title.to_string(),
        (14, 6),
        ("sans-serif", 20).into_font(),
    ))
    .map_err(PlotError::of)?;
    top.draw(&Text::new(
        chart.subtitle.clone(),
        (14, 28),
        ("sans-serif", 13).into_font().color(&BLACK.mix(0.7)),
    ))
    .map_err(PlotError::of)?;
    Ok(body)
}

fn draw(chart: &Chart<'_>, curves: &[Curve]) -> Result<String, PlotError> {
    let marks = || curves.iter().flat_map(|c| &c.marks);
    let x_hi = marks().map(|m| m.x).fold(0.0, f64::max) * 1.05 + 1e-9;
    let y_hi = marks()
        .map(|m| m.y + m.err.unwrap_or(0.0))
        .chain(curves.iter().filter_map(|c| c.bound))
        .fold(0.0, f64::max)
        * 1.1
        + 1e-9;
    let y_hi = if chart.diagonal { y_hi.max(x_hi) } else { y_hi };
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (720, 540)).into_drawing_area();
        let body = titled(&root, chart)?;
        let mut c = ChartBuilder::on(&body)
            .margin(14)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(
                study::axis(chart.x_desc, 0.0, x_hi)?,
                study::axis(chart.y_desc, 0.0, y_hi)?,
            )
            .map_err(PlotError::of)?;
        c.configure_mesh()
            .x_desc(chart.x_desc)
            .y_desc(chart.y_desc)
            .draw()
            .map_err(PlotError::of)?;
        if chart.diagonal {
            let top = x_hi.min(y_hi);
            c.draw_series(DashedLineSeries::new(
                [(0.0, 0.0), (top, top)],
                5,
                4,
                BLACK.mix(0.4).stroke_width(1),
            ))
            .map_err(PlotError::of)?
            .label("accepted = offered")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK.mix(0.4)));
        }
        let many = curves.len() > 1;
        for (i, curve) in curves.iter().enumerate() {
            let colour = colour(i);
            if let Some(b) = curve.bound {
                let label = if many {
                    format!("bisection bound {b:.3} ({})", curve.label)
                } else {
                    format!("bisection bound {b:.3}")
                };
                c.draw_series(DashedLineSeries::new(
                    [(0.0, b), (x_hi, b)],
                    8,
                    4,
                    colour.stroke_width(2),
                ))
                .map_err(PlotError::of)?
                .label(label)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2))
                });
            }
            let joined = curve
                .marks
                .iter()
                .filter(|m| chart.join_saturated || !m.saturated)
                .map(|m| (m.x, m.y));
            c.draw_series(LineSeries::new(joined, colour.stroke_width(2)))
                .map_err(PlotError::of)?
                .label(curve.label.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2))
                });
            c.draw_series(curve.marks.iter().filter_map(|m| {
                m.err.filter(|e| *e > 0.0).map(|e| {
                    ErrorBar::new_vertical(m.x, m.y - e, m.y, m.y + e, colour.stroke_width(1), 6)
                })
            }))
            .map_err(PlotError::of)?;
            c.draw_series(curve.marks.iter().map(|m| {
                let style = if m.saturated && !chart.join_saturated {
                    colour.stroke_width(2)
                } else {
                    colour.filled()
                };
                Circle::new((m.x, m.y), 3, style)
            }))
            .map_err(PlotError::of)?;
        }
        if !chart.join_saturated && curves.iter().any(|c| c.marks.iter().any(|m| m.saturated)) {
            c.draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
                .map_err(PlotError::of)?
                .label("past saturation (hollow, not joined)")
                .legend(|(x, y)| Circle::new((x + 9, y), 3, BLACK.stroke_width(2)));
        }
        study::legend(&mut c, SeriesLabelPosition::UpperLeft)?;
        root.present().map_err(PlotError::of)?;
    }
    Ok(out)
}
