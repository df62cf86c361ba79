//! `fsin sweep`: one configuration run at every value of one varied key
//! (`--vary load=0.05:0.6:0.05`), in every series (`--series
//! topo=torus_8_8,mesh_8_8`: the designs compared), all points in
//! parallel (rayon, one run per thread; every run keeps its own seed, so
//! the results do not depend on the thread count). The table,
//! `sweep.csv` and `sweep.json` are built here, the SVG plots in
//! [`plot`] (latency vs accepted load and accepted vs offered load, the
//! classic throughput curves of the INSEE paper section 4, a curve per
//! series; or the measured figures against any other varied key).

use std::collections::HashMap;
use std::fmt::Write as _;

use rayon::prelude::*;
use serde::Serialize;

use crate::config::{Config, ConfigBuilder, ConfigError, FamilyParams, Origin};
use crate::figures::Figures;
use crate::run::{Report, RunError, RunOptions, StopFlag};
use crate::sim;
use crate::study::{self, Column};

pub mod plot;

/// The key varied and its values, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Vary {
    /// The key.
    pub key: String,
    /// Its values, as the points take them.
    pub values: Vec<String>,
}

/// Why a `--vary` text is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VaryError {
    /// No `=` after a key.
    #[error("`{0}`: expected KEY=START:END:STEP or KEY=V1,V2,...")]
    NoKey(String),
    /// A value with colons that is not three numbers.
    #[error(
        "`{0}`: START:END:STEP must be three numbers (a list of values needs a comma: V1,V2,...)"
    )]
    NotARange(String),
    /// A range that is not finite, has a step of 0 or less, or ends
    /// before it starts.
    #[error("`{0}`: needs finite numbers, STEP > 0 and END >= START")]
    BadRange(String),
    /// A range of more than 10,000 points.
    #[error("`{range}`: {points} points is too many (at most 10000)")]
    TooMany {
        /// The range as given.
        range: String,
        /// Its point count.
        points: usize,
    },
    /// A key without values.
    #[error("`{0}`: needs a key and at least one value")]
    Empty(String),
    /// A `--series` word that is neither `KEY=V1,V2,...` nor `KEY=VALUE`.
    #[error("`{0}`: a series is KEY=V1,V2,... (one series per value) or KEY=VALUE words (one series with those settings)")]
    SeriesWord(String),
    /// A `--series` that names the varied key.
    #[error("`{0}`: the varied key cannot also make series")]
    SeriesVaries(String),
    /// More than 10,000 points in all.
    #[error("{series} series of {values} points each is too many (at most 10000 points in all)")]
    TooManyPoints {
        /// Series.
        series: usize,
        /// Points of each.
        values: usize,
    },
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

/// One series of a sweep: settings of its own over the shared ones, e.g.
/// `topo=file:df.anynet routing=duato`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Series {
    /// `KEY=VALUE` words, in the order given; empty for the one series of
    /// a sweep without `--series`.
    pub settings: Vec<String>,
}

impl Series {
    /// Its settings as one text (the legend's and the CSV's `series`).
    pub fn label(&self) -> String {
        self.settings.join(" ")
    }
}

/// Parses the `--series` of `fsin sweep` into the series to run, in
/// order. A spec of one `KEY=V1,V2,...` word (or `KEY=START:END:STEP`) is
/// a dimension: a series per value. Any other spec (`KEY=VALUE` words,
/// e.g. `'topo=file:df.anynet routing=duato'`) is one series of its own;
/// those specs together are one dimension, the alternatives. Several
/// dimensions make their product, the first given varying slowest. No
/// spec gives one series with no settings. No series may set `vary`'s
/// key, and the sweep may have at most 10,000 points.
///
/// # Errors
/// [`VaryError`], naming the spec or word that is wrong.
pub fn parse_series(specs: &[String], vary: &Vary) -> Result<Vec<Series>, VaryError> {
    let key = vary.key.as_str();
    let mut dims: Vec<Vec<Vec<String>>> = Vec::new();
    let mut alternatives: Option<usize> = None;
    for spec in specs {
        let words: Vec<&str> = spec.split_whitespace().collect();
        for w in &words {
            match w.split_once('=') {
                Some((k, v)) if !k.is_empty() && !v.is_empty() => {
                    if k == key {
                        return Err(VaryError::SeriesVaries(w.to_string()));
                    }
                }
                _ => return Err(VaryError::SeriesWord(w.to_string())),
            }
        }
        if let [word] = words[..] {
            // A list (a comma) must parse; a range of numbers may; any
            // other value (`topo=file:df.edges`) is a setting.
            let v = match parse_vary(word) {
                Ok(v) => v,
                Err(e) if word.contains(',') => return Err(e),
                Err(_) => Vary {
                    key: String::new(),
                    values: Vec::new(),
                },
            };
            if v.values.len() > 1 {
                dims.push(
                    v.values
                        .iter()
                        .map(|x| vec![format!("{}={x}", v.key)])
                        .collect(),
                );
                continue;
            }
        }
        if words.is_empty() {
            return Err(VaryError::SeriesWord(spec.clone()));
        }
        let i = *alternatives.get_or_insert_with(|| {
            dims.push(Vec::new());
            dims.len() - 1
        });
        dims[i].push(words.iter().map(ToString::to_string).collect());
    }
    let count: usize = dims.iter().map(Vec::len).product();
    if count.saturating_mul(vary.values.len()) > 10_000 {
        return Err(VaryError::TooManyPoints {
            series: count,
            values: vary.values.len(),
        });
    }
    let mut series = vec![Series {
        settings: Vec::new(),
    }];
    for dim in &dims {
        series = series
            .iter()
            .flat_map(|s| {
                dim.iter().map(move |words| Series {
                    settings: s.settings.iter().chain(words).cloned().collect(),
                })
            })
            .collect();
    }
    Ok(series)
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
    /// Its series' label (`--series`); absent without series.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub series: String,
    /// The varied key's value.
    pub value: String,
    /// Bisection bound of uniform traffic for its network,
    /// phits/node/cycle ([`crate::network_facts::throughput_bound`]).
    pub bisection_bound: Option<f64>,
    /// The point's run.
    pub report: Report,
}

impl Point {
    /// Whether the point is past saturation: its accepted load is below
    /// the offered load by more than its 95% interval (by more than 5% of
    /// the offered load when it has none, e.g. `cycles=N`).
    pub fn saturated(&self) -> bool {
        let r = &self.report;
        let tolerance = r.accepted_load_ci95.unwrap_or(0.05 * r.offered_load);
        r.offered_load - r.measured.accepted_load > tolerance
    }
}

/// A series of a finished sweep.
#[derive(Debug, Clone, Serialize)]
pub struct SeriesFacts {
    /// Its settings as one text (the legend's and the CSV's `series`).
    pub label: String,
    /// The settings it adds to the command line's.
    pub settings: Vec<String>,
    /// Bisection bound of uniform traffic, phits/node/cycle, when all its
    /// points share one.
    pub bisection_bound: Option<f64>,
}

/// A finished sweep.
#[derive(Debug, Clone, Serialize)]
pub struct Sweep {
    /// The varied key.
    pub vary: String,
    /// The settings every point shares (the command line's), as given.
    pub fixed: Vec<String>,
    /// Bisection bound of uniform traffic, phits/node/cycle (k-ary
    /// n-cubes: 8/k torus, 4/k unidirectional torus or mesh, with k the
    /// largest dimension; file topologies 4 B / N from their bisection's
    /// B links), when every point shares one.
    pub bisection_bound: Option<f64>,
    /// Its series, in order (one unnamed series without `--series`).
    pub series: Vec<SeriesFacts>,
    /// Every point, series by series, each series' in the varied key's
    /// order.
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
/// value of `vary` in every one of `series` (their own settings over
/// `base`'s), all points in parallel; `tick` is called after each point.
/// Once `stop` is set (a signal), every point stops where it is and
/// reports what it simulated ([`Report::interrupted`]).
///
/// # Errors
/// [`SweepError`]: the first configuration error (naming the key) or
/// failed workload; every point's configuration is checked before any is
/// run.
pub fn run(
    file: Option<&std::path::Path>,
    base: &[String],
    vary: &Vary,
    series: &[Series],
    tick: &(dyn Fn() + Sync),
    stop: Option<&StopFlag>,
) -> Result<Sweep, SweepError> {
    let mut configs = Vec::new();
    for s in series {
        let mut settings = base.to_vec();
        settings.extend(s.settings.iter().cloned());
        for v in &vary.values {
            let mut b = ConfigBuilder::from_sources(&[], file, &settings)?;
            b.set(&vary.key, v, Origin::CommandLine)?;
            let cfg = b.build()?;
            crate::limits::check_memory(&cfg)?;
            configs.push((s.label(), v.clone(), cfg));
        }
    }
    let bounds = bounds(configs.iter().map(|c| &c.2));
    let reports = configs
        .par_iter()
        .map(|(_, _, cfg)| {
            let opts = RunOptions {
                stop: stop.cloned(),
                ..RunOptions::default()
            };
            let r = sim::run(cfg, opts);
            tick();
            r
        })
        .collect::<Result<Vec<_>, _>>()?;
    let points: Vec<Point> = configs
        .into_iter()
        .zip(bounds)
        .zip(reports)
        .map(|(((series, value, _), bisection_bound), report)| Point {
            series,
            value,
            bisection_bound,
            report,
        })
        .collect();
    let shared = |ps: Vec<&Point>| {
        let first = ps.first()?.bisection_bound;
        ps.iter()
            .all(|p| p.bisection_bound == first)
            .then_some(first)?
    };
    let series = series
        .iter()
        .map(|s| {
            let label = s.label();
            SeriesFacts {
                bisection_bound: shared(points.iter().filter(|p| p.series == label).collect()),
                label,
                settings: s.settings.clone(),
            }
        })
        .collect();
    Ok(Sweep {
        vary: vary.key.clone(),
        fixed: base.to_vec(),
        bisection_bound: shared(points.iter().collect()),
        series,
        points,
    })
}

/// Each configuration's throughput bound; a file topology's bisection is
/// searched once per file ([`crate::network_facts::throughput_bound`]).
fn bounds<'a>(configs: impl Iterator<Item = &'a Config>) -> Vec<Option<f64>> {
    let mut files: HashMap<String, Option<f64>> = HashMap::new();
    configs
        .map(|cfg| match &cfg.net.family {
            FamilyParams::File { .. } => *files
                .entry(cfg.topology_name())
                .or_insert_with(|| crate::network_facts::throughput_bound(cfg)),
            _ => crate::network_facts::throughput_bound(cfg),
        })
        .collect()
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
    "accepted_load_ci95",
    "latency_avg",
    "latency_ci95",
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
        ("accepted_ci95", |p| {
            p.report
                .accepted_load_ci95
                .map_or(String::new(), |h| format!("{h:.4}"))
        }),
        ("latency_avg", |p| {
            format!("{:.2}", p.report.measured.latency_avg)
        }),
        ("latency_ci95", |p| {
            p.report
                .latency_ci95
                .map_or(String::new(), |h| format!("{h:.2}"))
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

    /// Whether the sweep has series of its own (`--series`).
    pub fn has_series(&self) -> bool {
        self.series.iter().any(|s| !s.settings.is_empty())
    }

    /// The keys the series set, in order of first use.
    fn series_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = Vec::new();
        for s in &self.series {
            for w in &s.settings {
                if let Some((k, _)) = w.split_once('=') {
                    if !keys.iter().any(|x| x == k) {
                        keys.push(k.to_string());
                    }
                }
            }
        }
        keys
    }

    /// The columns: with `series`, the series' label and a column per key
    /// the series set (CSV only), then the varied key's value (12
    /// characters wide in the table), then the figures (15 each), and the
    /// point's bisection bound when the points do not share one.
    fn columns(&self, csv: bool) -> Vec<Column<Point>> {
        let mut c = Vec::new();
        if csv && self.has_series() {
            c.push(Column::new("series", 0, |p: &Point| p.series.clone()));
            for key in self.series_keys() {
                let k = key.clone();
                c.push(Column::of(key, 0, move |p: &Point| {
                    let prefix = format!("{k}=");
                    p.series
                        .split_whitespace()
                        .find_map(|w| w.strip_prefix(&prefix))
                        .unwrap_or_default()
                        .to_string()
                }));
            }
        }
        c.push(Column::new(self.vary.clone(), 12, |p: &Point| {
            p.value.clone()
        }));
        c.extend(
            figures(self.app())
                .into_iter()
                .map(|(name, cell)| Column::new(name, 15, cell)),
        );
        let unshared = self.series.iter().any(|s| {
            s.bisection_bound.is_none()
                && (self.points.iter()).any(|p| p.series == s.label && p.bisection_bound.is_some())
        });
        if unshared {
            c.push(Column::new("bisection_bound", 15, |p: &Point| {
                p.bisection_bound
                    .map_or(String::new(), |b| format!("{b:.4}"))
            }));
        }
        c
    }

    /// The aligned text table: a block per series (headed by its
    /// settings), with its bisection bound under it when its points share
    /// one.
    pub fn table(&self) -> String {
        let mut s = String::new();
        for series in &self.series {
            let points = (self.points.iter()).filter(|p| p.series == series.label);
            if self.has_series() {
                let _ = writeln!(s, "series: {}", series.label);
            }
            s.push_str(&study::table(&self.columns(false), points));
            if let Some(b) = series.bisection_bound {
                let _ = writeln!(
                    s,
                    "bisection bound (uniform traffic): {b:.4} phits/node/cycle"
                );
            }
            if self.has_series() {
                s.push('\n');
            }
        }
        s
    }

    /// CSV with a header row: the series' label and keys (with series),
    /// the varied key, the table's columns, then a column for each other
    /// figure of the runs' reports (wall-clock figures left out).
    pub fn csv(&self) -> String {
        let runs: Vec<Figures> = (self.points.iter())
            .map(|p| Figures::of(&p.report).unwrap_or_default())
            .collect();
        Figures::append_csv(
            &study::csv(&self.columns(true), &self.points),
            &runs,
            NOT_APPENDED,
        )
    }
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

    #[test]
    fn series_lists_multiply_and_settings_are_alternatives() {
        let load = parse_vary("load=0.1,0.2").unwrap();
        let labels = |specs: &[&str]| -> Vec<String> {
            let specs: Vec<String> = specs.iter().map(ToString::to_string).collect();
            parse_series(&specs, &load)
                .unwrap()
                .iter()
                .map(Series::label)
                .collect()
        };
        assert_eq!(labels(&[]), [""]);
        // One word with a colon but no list: a setting, not a range.
        assert_eq!(
            labels(&["topo=file:a.edges", "topo=file:b.edges"]),
            ["topo=file:a.edges", "topo=file:b.edges"]
        );
        assert_eq!(labels(&["nchan=2:4:2"]), ["nchan=2", "nchan=4"]);
        assert_eq!(
            labels(&["topo=torus_8_8,mesh_8_8", "nchan=2,4"]),
            [
                "topo=torus_8_8 nchan=2",
                "topo=torus_8_8 nchan=4",
                "topo=mesh_8_8 nchan=2",
                "topo=mesh_8_8 nchan=4"
            ]
        );
        assert_eq!(
            labels(&[
                "topo=torus_8_8",
                "topo=file:df.anynet  routing=duato",
                "rseed=1,2"
            ]),
            [
                "topo=torus_8_8 rseed=1",
                "topo=torus_8_8 rseed=2",
                "topo=file:df.anynet routing=duato rseed=1",
                "topo=file:df.anynet routing=duato rseed=2"
            ]
        );
        let specs = |v: &[&str]| v.iter().map(ToString::to_string).collect::<Vec<_>>();
        for (bad, says) in [
            (specs(&["load=0.3,0.4"]), "varied key"),
            (specs(&["topo"]), "KEY=V1,V2"),
            (specs(&["topo=torus_8_8 nchan"]), "`nchan`"),
            (specs(&["  "]), "KEY=V1,V2"),
            (specs(&["rseed=1:200:1", "nchan=1:60:1"]), "too many"),
        ] {
            let e = parse_series(&bad, &load).unwrap_err().to_string();
            assert!(e.contains(says), "{bad:?}: {e}");
        }
    }
}
