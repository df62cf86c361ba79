//! `fsin sweep`: one configuration run at every value of one varied key
//! (`--vary load=0.05:0.6:0.05`), the points in parallel (rayon, one run
//! per thread; every run keeps its own seed, so the results do not depend
//! on the thread count). The table, `sweep.csv`, `sweep.json` and SVG plots
//! (latency vs accepted load and accepted vs offered load, the classic
//! throughput curves of the INSEE paper section 4; or the measured figures
//! against any other varied key) are built here.

use std::fmt::Write as _;

use plotters::prelude::*;
use rayon::prelude::*;
use serde::Serialize;

use crate::config::{ConfigBuilder, ConfigError, Origin};
use crate::figures::Figures;
use crate::run::{Report, RunError, RunOptions, StopFlag};
use crate::sim;
use crate::study::{self, Column, PlotError};

/// The key varied and its values, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Vary {
    pub key: String,
    pub values: Vec<String>,
}

/// Why a `--vary` text is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VaryError {
    #[error("`{0}`: expected KEY=START:END:STEP or KEY=V1,V2,...")]
    NoKey(String),
    #[error(
        "`{0}`: START:END:STEP must be three numbers (a list of values needs a comma: V1,V2,...)"
    )]
    NotARange(String),
    #[error("`{0}`: needs finite numbers, STEP > 0 and END >= START")]
    BadRange(String),
    #[error("`{range}`: {points} points is too many (at most 10000)")]
    TooMany { range: String, points: usize },
    #[error("`{0}`: needs a key and at least one value")]
    Empty(String),
}

/// Parses the `--vary` of `fsin sweep` and `fsin qemu`: `KEY=V1,V2,...`
/// (a list: any text with a comma, e.g. `slice=20:1000,200:10000`),
/// `KEY=START:END:STEP` (numbers from START to END inclusive) or
/// `KEY=VALUE`.
///
/// # Errors
/// [`VaryError`], naming the text that is wrong.
pub fn parse_vary(spec: &str) -> Result<Vary, VaryError> {
    let (key, range) = spec
        .split_once('=')
        .ok_or_else(|| VaryError::NoKey(spec.to_string()))?;
    let key = key.trim().to_string();
    let values: Vec<String> = if range.contains(':') && !range.contains(',') {
        let p: Vec<f64> = range
            .split(':')
            .map(|s| s.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|_| VaryError::NotARange(range.to_string()))?;
        let [start, end, step] = p[..] else {
            return Err(VaryError::NotARange(range.to_string()));
        };
        if !(start.is_finite() && end.is_finite() && step.is_finite()) || step <= 0.0 || end < start
        {
            return Err(VaryError::BadRange(range.to_string()));
        }
        let n = ((end - start) / step + 1e-9).floor() as usize + 1;
        if n > 10_000 {
            return Err(VaryError::TooMany {
                range: range.to_string(),
                points: n,
            });
        }
        (0..n).map(|i| number(start + i as f64 * step)).collect()
    } else {
        range
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    };
    if key.is_empty() || values.is_empty() {
        return Err(VaryError::Empty(spec.to_string()));
    }
    Ok(Vary { key, values })
}

/// A number printed without float noise (0.15, not 0.15000000000000002).
fn number(x: f64) -> String {
    let s = format!("{x:.9}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// One point of a sweep.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// The varied key's value.
    pub value: String,
    pub report: Report,
}

/// A finished sweep.
#[derive(Debug, Clone, Serialize)]
pub struct Sweep {
    pub vary: String,
    /// Bisection bound of uniform traffic for the topology, phits/node/cycle
    /// (k-ary n-cubes: 8/k torus, 4/k unidirectional torus or mesh, with k
    /// the largest dimension), if known.
    pub bisection_bound: Option<f64>,
    pub points: Vec<Point>,
}

/// Why a sweep failed.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// A point's configuration is bad (checked before any point runs).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A point's run failed.
    #[error(transparent)]
    Run(#[from] RunError),
}

/// Runs `base` (settings as `key=value`, over `file` if given) at every
/// value of `vary`, in parallel; `tick` is called after each point. Once
/// `stop` is set (a signal), every point stops where it is and reports
/// what it simulated ([`Report::interrupted`]).
///
/// # Errors
/// [`SweepError`]: the first configuration error (naming the key) or
/// failed workload; every point's configuration is checked before any is
/// run.
pub fn run(
    file: Option<&std::path::Path>,
    base: &[String],
    vary: &Vary,
    tick: &(dyn Fn() + Sync),
    stop: Option<&StopFlag>,
) -> Result<Sweep, SweepError> {
    let configs = vary
        .values
        .iter()
        .map(|v| {
            let mut b = ConfigBuilder::from_sources(&[], file, base)?;
            b.set(&vary.key, v, Origin::CommandLine)?;
            let cfg = b.build()?;
            crate::limits::check_memory(&cfg)?;
            Ok(cfg)
        })
        .collect::<Result<Vec<_>, ConfigError>>()?;
    let reports = configs
        .par_iter()
        .map(|cfg| {
            let opts = RunOptions {
                stop: stop.cloned(),
                ..RunOptions::default()
            };
            let r = sim::run(cfg, opts);
            tick();
            r
        })
        .collect::<Result<Vec<_>, _>>()?;
    let bisection_bound = crate::topology::throughput_bound(&configs[0].net);
    Ok(Sweep {
        vary: vary.key.clone(),
        bisection_bound,
        points: vary
            .values
            .iter()
            .cloned()
            .zip(reports)
            .map(|(value, report)| Point { value, report })
            .collect(),
    })
}

/// The report's figures (JSON keys) that `sweep.csv` does not append:
/// those [`figures`] shows under names of its own, and the wall-clock
/// ones (`wall_s`, `cycles_per_s`), so that the same configurations and
/// seeds give the same file, whatever the machine or the thread count.
const NOT_APPENDED: &[&str] = &[
    "wall_s",
    "cycles_per_s",
    "offered_load",
    "injected_load",
    "accepted_load",
    "latency_avg",
    "latency_max",
    "inj_latency_avg",
    "avg_distance",
    "converged",
    "exec_cycles",
];

/// Figures of the table and CSV after the varied key: name and value of a
/// point.
type Figure = (&'static str, fn(&Point) -> String);

fn figures(app: bool) -> Vec<Figure> {
    let mut c: Vec<Figure> = vec![
        ("offered", |p| format!("{:.4}", p.report.offered_load)),
        ("injected", |p| {
            format!("{:.4}", p.report.measured.injected_load)
        }),
        ("accepted", |p| {
            format!("{:.4}", p.report.measured.accepted_load)
        }),
        ("latency_avg", |p| {
            format!("{:.2}", p.report.measured.latency_avg)
        }),
        ("latency_max", |p| p.report.measured.latency_max.to_string()),
        ("inj_latency_avg", |p| {
            format!("{:.2}", p.report.measured.inj_latency_avg)
        }),
        ("avg_distance", |p| {
            format!("{:.3}", p.report.measured.avg_distance)
        }),
        ("converged", |p| {
            p.report
                .convergence
                .converged()
                .map_or("null".to_string(), |c| c.to_string())
        }),
    ];
    if app {
        c.push(("exec_cycles", |p| {
            p.report
                .app
                .as_ref()
                .map_or(String::new(), |a| a.exec_cycles.to_string())
        }));
    }
    c
}

impl Sweep {
    fn app(&self) -> bool {
        self.points.iter().any(|p| p.report.app.is_some())
    }

    /// The columns: the varied key's value (12 characters wide in the
    /// table), then the figures (15 each).
    fn columns(&self) -> Vec<Column<Point>> {
        let mut c = vec![Column::new(self.vary.clone(), 12, |p: &Point| {
            p.value.clone()
        })];
        c.extend(
            figures(self.app())
                .into_iter()
                .map(|(name, cell)| Column::new(name, 15, cell)),
        );
        c
    }

    /// The aligned text table, and the bisection bound under it.
    pub fn table(&self) -> String {
        let mut s = study::table(&self.columns(), &self.points);
        if let Some(b) = self.bisection_bound {
            let _ = writeln!(
                s,
                "bisection bound (uniform traffic): {b:.4} phits/node/cycle"
            );
        }
        s
    }

    /// CSV with a header row: the varied key, the table's columns, then
    /// a column for each other figure of the runs' reports (wall-clock
    /// figures left out).
    pub fn csv(&self) -> String {
        let runs: Vec<Figures> = (self.points.iter())
            .map(|p| Figures::of(&p.report).unwrap_or_default())
            .collect();
        Figures::append_csv(
            &study::csv(&self.columns(), &self.points),
            &runs,
            NOT_APPENDED,
        )
    }

    /// The plots as `(file name, SVG text)`: for `load`, `latency.svg`
    /// (mean latency vs accepted load) and `throughput.svg` (accepted vs
    /// offered load, with the ideal diagonal and the bisection bound);
    /// for other numeric keys, `sweep.svg` (accepted load, mean latency
    /// and, for workloads, execution time against the key).
    ///
    /// # Errors
    /// A message when drawing fails.
    pub fn plots(&self) -> Result<Vec<(&'static str, String)>, PlotError> {
        let xy = |f: fn(&Point) -> f64, g: fn(&Point) -> f64| -> Vec<(f64, f64)> {
            self.points.iter().map(|p| (f(p), g(p))).collect()
        };
        let accepted: fn(&Point) -> f64 = |p| p.report.measured.accepted_load;
        let latency: fn(&Point) -> f64 = |p| p.report.measured.latency_avg;
        let offered: fn(&Point) -> f64 = |p| p.report.offered_load;
        if self.vary == "load" {
            let mut bound = Vec::new();
            if let Some(b) = self.bisection_bound {
                bound.push(("bisection bound", b));
            }
            Ok(vec![
                (
                    "latency.svg",
                    chart(
                        "latency vs accepted load",
                        "accepted load (phits/node/cycle)",
                        "mean latency (cycles)",
                        &xy(accepted, latency),
                        false,
                        &[],
                    )?,
                ),
                (
                    "throughput.svg",
                    chart(
                        "accepted vs offered load",
                        "offered load (phits/node/cycle)",
                        "accepted load (phits/node/cycle)",
                        &xy(offered, accepted),
                        true,
                        &bound,
                    )?,
                ),
            ])
        } else {
            let x: Vec<f64> = self
                .points
                .iter()
                .map(|p| p.value.parse::<f64>())
                .collect::<Result<_, _>>()
                .map_err(|_| PlotError(format!("{} has non-numeric values: no plot", self.vary)))?;
            let with_x = |g: fn(&Point) -> f64| -> Vec<(f64, f64)> {
                x.iter()
                    .zip(&self.points)
                    .map(|(&a, p)| (a, g(p)))
                    .collect()
            };
            let (title, y, g): (&str, &str, fn(&Point) -> f64) = if self.app() {
                ("execution time", "cycles", |p| {
                    p.report.app.as_ref().map_or(0.0, |a| a.exec_cycles as f64)
                })
            } else {
                ("accepted load", "phits/node/cycle", accepted)
            };
            Ok(vec![(
                "sweep.svg",
                chart(
                    &format!("{title} vs {}", self.vary),
                    &self.vary,
                    y,
                    &with_x(g),
                    false,
                    &[],
                )?,
            )])
        }
    }
}

/// One line chart with points; `diagonal` adds y = x, `hlines` horizontal
/// reference lines.
fn chart(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    data: &[(f64, f64)],
    diagonal: bool,
    hlines: &[(&str, f64)],
) -> Result<String, PlotError> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (640, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(PlotError::of)?;
        let x_hi = data.iter().map(|p| p.0).fold(0.0, f64::max) * 1.05 + 1e-9;
        let y_hi = data
            .iter()
            .map(|p| p.1)
            .chain(hlines.iter().map(|h| h.1))
            .fold(0.0, f64::max)
            * 1.1
            + 1e-9;
        let y_hi = if diagonal { y_hi.max(x_hi) } else { y_hi };
        let mut c = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(14)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(
                study::axis(x_desc, 0.0, x_hi)?,
                study::axis(y_desc, 0.0, y_hi)?,
            )
            .map_err(PlotError::of)?;
        c.configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .draw()
            .map_err(PlotError::of)?;
        if diagonal {
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
        for &(name, y) in hlines {
            c.draw_series(DashedLineSeries::new(
                [(0.0, y), (x_hi, y)],
                8,
                4,
                RED.stroke_width(2),
            ))
            .map_err(PlotError::of)?
            .label(format!("{name} {y:.3}"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], RED));
        }
        c.draw_series(LineSeries::new(data.iter().copied(), BLUE.stroke_width(2)))
            .map_err(PlotError::of)?
            .label("fsin")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLUE));
        c.draw_series(data.iter().map(|&p| Circle::new(p, 3, BLUE.filled())))
            .map_err(PlotError::of)?;
        crate::study::legend(&mut c, SeriesLabelPosition::UpperLeft)?;
        root.present().map_err(PlotError::of)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_lists() {
        let v = parse_vary("load=0.05:0.3:0.05").unwrap();
        assert_eq!(v.key, "load");
        assert_eq!(v.values, ["0.05", "0.1", "0.15", "0.2", "0.25", "0.3"]);
        let v = parse_vary("kernel_bytes=64,640, 6400").unwrap();
        assert_eq!(v.values, ["64", "640", "6400"]);
        assert_eq!(
            parse_vary("tql=2:8:2").unwrap().values,
            ["2", "4", "6", "8"]
        );
        // fsin qemu's slices: a list as soon as there is a comma.
        let v = parse_vary("slice=20:1000,200:10000").unwrap();
        assert_eq!(
            (v.key.as_str(), &v.values[..]),
            (
                "slice",
                &["20:1000".to_string(), "200:10000".to_string()][..]
            )
        );
        assert_eq!(parse_vary("slice=20:1000,").unwrap().values, ["20:1000"]);
        assert_eq!(parse_vary("intransit_pr=1").unwrap().values, ["1"]);
        for bad in [
            "load",
            "load=0.5:0.1:0.1",
            "load=0.1:0.5",
            "load=0.1:0.5:0",
            "=1,2",
            "load=",
        ] {
            assert!(parse_vary(bad).is_err(), "{bad}");
        }
    }
}
