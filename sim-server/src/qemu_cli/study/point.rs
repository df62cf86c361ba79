//! A study's runs and their summary: one [`StudyPoint`] per run (saved
//! as `run-K/point.json`, written to `runs.csv`), one [`ValueSummary`] per
//! value and mode (`study.csv` and the table `fsin qemu --vary` prints).

use serde::{Deserialize, Serialize};

use fsin::figures::Figures;
use fsin::study::{self, Column};
use fsin_cosim::session::SessionReport;
use qemu_adapter::qemu::StudyFigures;
use serde_json::Value;

use super::super::guests::GuestsReport;

/// One run of the study.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StudyPoint {
    /// The varied setting (`slice` or a configuration key) and its value.
    pub key: String,
    pub value: String,
    /// The command's exit code (`None`: it did not end).
    pub exit_code: Option<i32>,
    /// How long the command ran, seconds of guest time; with `--roi
    /// mpi|marker`, its region (`region.guest_s`).
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
    /// The traced run's span from the first rank's `MPI_Init` exit to the
    /// last rank's `MPI_Finalize`, guest seconds (each rank's time plus
    /// its start skew; `--predict mpi`, the first run only).
    #[serde(default)]
    pub traced_mpi_s: Option<f64>,
    /// The network under the application: accepted load
    /// (phits/node/cycle), the busiest link over its busiest window,
    /// frames dropped at full NIC queues.
    #[serde(default)]
    pub accepted_load: f64,
    /// The accepted load of the busiest window of `util_window` slices.
    #[serde(default)]
    pub accepted_load_peak: f64,
    #[serde(default)]
    pub link_utilization_peak: f64,
    #[serde(default)]
    pub frames_dropped: u64,
    /// What the guests measured that the study averages per value (TCP's
    /// segments and retransmissions, ...), each under its own key.
    #[serde(flatten)]
    pub guests: StudyFigures,
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

impl StudyPoint {
    /// The point of a run at `value` of `key` from its `report`, the
    /// command's guest time less `delay_s` (the start delay of a study's
    /// repeat, guest seconds); repeat 0, seed 0, no prediction, not the
    /// reference: set them after.
    pub fn of(
        key: &str,
        value: &str,
        report: &SessionReport<GuestsReport>,
        delay_s: f64,
    ) -> StudyPoint {
        let run = &report.run;
        let nodes = &report.nodes;
        let app = nodes.app();
        let ran = nodes.ran.as_ref();
        StudyPoint {
            key: key.to_string(),
            value: value.to_string(),
            exit_code: nodes.app_exit(),
            // With --roi mpi|marker, the region's time.
            guest_s: match nodes.region_guest_s() {
                Some(region) => Some(region),
                None => app.and_then(|a| a.outcome.guest_s).map(|g| g - delay_s),
            },
            app_wall_s: app.and_then(|a| a.outcome.wall_s),
            wall_s: run.wall_s,
            slices: run.slices,
            slice_net_cycles: run.slice_net_cycles,
            slice_node_cycles: run.slice_node_cycles,
            frames_delivered: run.frames_delivered,
            frame_latency_avg: run.frame_latency_avg,
            results: app.and_then(|a| a.results.clone()).unwrap_or(Value::Null),
            fault: nodes.guest_fault.clone(),
            repeat: 0,
            seed: 0,
            predicted_s: None,
            predicted_mpi_s: None,
            // The part of guest_s the MPI-level trace holds (the rest is
            // mpirun's launch and end): from the first rank's MPI_Init exit
            // to the last MPI_Finalize, as the replay's ranks start skewed.
            traced_mpi_s: (ran.and_then(|r| r.mpi_trace.as_ref())).and_then(|t| {
                (t.rank_s.iter().enumerate())
                    .map(|(r, s)| s + t.start_s.get(r).copied().unwrap_or(0.0))
                    .reduce(f64::max)
            }),
            accepted_load: run.network.accepted_load,
            accepted_load_peak: run.links.load_peak,
            link_utilization_peak: run.links.peak,
            frames_dropped: run.frames_dropped,
            guests: ran.map(|r| r.figures.study.clone()).unwrap_or_default(),
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
    /// The difference of this value's application guest seconds from the
    /// first value's (in the same mode), the mean of the paired
    /// differences of runs of one repeat (one seed), with the 99%
    /// half-width of those differences: narrower than the two values'
    /// own intervals when the runs of one seed vary together. None when
    /// no run of this value has a partner.
    pub diff_s: Option<f64>,
    pub diff_s_ci99: Option<f64>,
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
    /// The means of the guests' figures ([`StudyFigures`]), each under
    /// its own key.
    #[serde(flatten)]
    pub guests: Figures,
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
        // Each run against the first value's run of its repeat (seed).
        let base_value = values_first(points, mode);
        let paired: Vec<f64> = runs
            .iter()
            .filter_map(|p| {
                let base = points.iter().find(|b| {
                    !b.reference
                        && (b.value.as_str(), b.mode.as_str()) == base_value
                        && b.repeat == p.repeat
                })?;
                Some(p.guest_s? - base.guest_s?)
            })
            .collect();
        let (diff_s, diff_s_ci99) = prediction(paired);
        out.push(ValueSummary {
            key: runs[0].key.clone(),
            value: v.to_string(),
            mode: mode.to_string(),
            runs: runs.len(),
            diff_s,
            diff_s_ci99,
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
            guests: Figures::mean(
                &(runs.iter())
                    .map(|p| Figures::of(&p.guests).unwrap_or_default())
                    .collect::<Vec<_>>(),
            ),
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

/// The first value of `points` run in `mode` (the exact reference left
/// out): the base of the paired differences.
fn values_first<'a>(points: &'a [StudyPoint], mode: &str) -> (&'a str, &'a str) {
    points
        .iter()
        .find(|p| !p.reference && p.mode == mode)
        .map_or(("", ""), |p| (p.value.as_str(), p.mode.as_str()))
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
        Column::csv("diff_s", |r| blank(r.diff_s, 6)),
        Column::csv("diff_s_ci99", |r| blank(r.diff_s_ci99, 6)),
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
    ];
    let guests: Vec<Figures> = rows.iter().map(|r| r.guests.clone()).collect();
    Figures::append_csv(&study::csv(&columns, rows), &guests, &[])
}

/// The summary as the table `fsin qemu --vary` prints.
pub fn summary_table(rows: &[ValueSummary]) -> String {
    let key = rows.first().map_or("value", |r| r.key.as_str());
    let mut columns = vec![
        Column::new(key, 16, |r: &ValueSummary| r.value.clone()).left(),
        Column::new("mode", 9, |r: &ValueSummary| r.mode.clone()).left(),
        Column::new("runs", 5, |r| r.runs.to_string()),
        Column::new("app guest s", 12, |r| format!("{:.6}", r.guest_s)),
        Column::new("+-99%", 9, |r| format!("{:.6}", r.guest_s_ci99)),
        Column::new("rel", 6, |r| format!("{:.3}", r.guest_rel)),
        Column::new("paired diff s", 13, |r| opt(r.diff_s, 6)),
        Column::new("+-99%", 9, |r| opt(r.diff_s_ci99, 6)),
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
    ];
    // A column for each of the guests' figures, headed by its name.
    for (name, _) in rows.first().map_or(&[][..], |r| &r.guests.0) {
        let head = name.replace('_', " ");
        let name = name.clone();
        columns.push(Column::of(
            head.clone(),
            head.len().max(8),
            move |r: &ValueSummary| {
                let mean = r.guests.get(&name).and_then(Value::as_f64);
                mean.map_or("-".into(), |x| format!("{x:.1}"))
            },
        ));
    }
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
    ];
    let runs: Vec<Figures> = points.iter().map(|p| p.run.clone()).collect();
    Figures::append_csv(&study::csv(&columns, points), &runs, &[])
}

#[cfg(test)]
mod tests {
    use super::super::plots::{fig4_svg, netpipe_svg};
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
            guests: StudyFigures::default(),
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
        for (p, r) in ps.iter_mut().zip([10, 21, 0, 4, 99]) {
            p.guests.tcp_retransmissions = r;
            p.guests.tcp_segments = 100 * r;
        }
        let rows = summarise(&ps);
        assert_eq!(rows.len(), 2);
        let (a, b) = (&rows[0], &rows[1]);
        assert_eq!((a.runs, b.runs), (2, 2));
        assert!((a.guest_s - 1.1).abs() < 1e-12);
        // Standard error 0.1: half-width 6.3657.
        assert!((a.guest_s_ci99 - 6.3657).abs() < 1e-3, "{}", a.guest_s_ci99);
        assert_eq!(b.guest_s_ci99, 0.0);
        assert!((b.guest_rel - 1.5 / 1.1).abs() < 1e-12);
        // Paired by repeat: 1.5 - 1.0 and 1.5 - 1.2, mean 0.4, standard
        // error 0.1; the first value against itself: 0.
        assert!((b.diff_s.unwrap() - 0.4).abs() < 1e-12, "{:?}", b.diff_s);
        assert!((b.diff_s_ci99.unwrap() - 6.3657).abs() < 1e-3);
        assert_eq!((a.diff_s, a.diff_s_ci99), (Some(0.0), Some(0.0)));
        assert_eq!(b.predicted_rel, Some(1.0));
        assert!((a.error_pct.unwrap() - 10.0).abs() < 1e-9);
        assert!((b.error_pct.unwrap() - 50.0).abs() < 1e-9);
        assert!((a.speedup.unwrap() - 2.0).abs() < 1e-12);
        assert!((b.speedup.unwrap() - 4.0).abs() < 1e-12);
        let t = tradeoff(&rows);
        assert_eq!(t.len(), 2);
        // The guests' figures: a mean per value, the reference left out,
        // in study.csv and the table under their own names.
        assert_eq!(a.guests.get("tcp_retransmissions"), Some(&15.5.into()));
        assert_eq!(b.guests.get("tcp_segments"), Some(&200.0.into()));
        let c = summary_csv(&rows);
        assert_eq!(c.lines().count(), 3);
        let cell = |row: usize, name: &str| {
            let at = c.lines().next().unwrap().split(',').position(|h| h == name);
            let line = c.lines().nth(row).unwrap();
            line.split(',').nth(at.expect(name)).unwrap().to_string()
        };
        assert_eq!(cell(1, "tcp_retransmissions"), "15.5");
        assert_eq!(cell(1, "tcp_segments"), "1550.0");
        assert_eq!(cell(2, "tcp_segments"), "200.0");
        assert!(c
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("slice,20:1000,lockstep,2,1.100000,"));
        let t = summary_table(&rows);
        let head = t.lines().next().unwrap();
        let under = |row: usize, name: &str| {
            let end = head.find(name).expect(name) + name.len();
            let line = t.lines().nth(row).unwrap();
            line[..end].rsplit(' ').next().unwrap().to_string()
        };
        assert_eq!(under(1, "tcp retransmissions"), "15.5");
        assert_eq!(under(2, "tcp segments"), "200.0");
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
    }
}
