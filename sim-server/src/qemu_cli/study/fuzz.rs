//! Fuzzing a study's saved runs: `run-K/point.json`,
//! arbitrary, cut short or with a number changed, never panics its reader;
//! and points with any values (the extremes JSON can hold) go through
//! everything a study writes from them (the summary, its CSV and table,
//! `runs.csv`, `study.svg`, `tradeoff.svg`) without a panic or overflow.

use super::plots::fig4_svg;
use super::point::{csv, summarise, summary_csv, summary_table, tradeoff, SavedPoint, StudyPoint};
use proptest::prelude::*;
use qemu_adapter::qemu::StudyFigures;

/// A run of a study as `fsin qemu --vary` saves it.
#[allow(
    clippy::needless_update,
    reason = "a figure added to StudyFigures takes its default here"
)]
fn point() -> StudyPoint {
    StudyPoint {
        key: "slice".into(),
        value: "200:10000".into(),
        exit_code: Some(0),
        guest_s: Some(8.75),
        app_wall_s: Some(612.5),
        wall_s: 640.0,
        slices: 43_750,
        slice_net_cycles: 200,
        slice_node_cycles: 10_000,
        frames_delivered: 277_898,
        frame_latency_avg: 2_815.5,
        results: serde_json::json!({"mops": 1.25}),
        fault: None,
        repeat: 1,
        seed: 18,
        predicted_s: Some(9.6),
        predicted_mpi_s: Some(8.2),
        traced_mpi_s: Some(5.1),
        accepted_load: 0.012,
        accepted_load_peak: 0.05,
        link_utilization_peak: 0.9,
        frames_dropped: 3,
        guests: StudyFigures {
            tcp_segments: 80_043,
            tcp_retransmissions: 1_926,
            ..StudyFigures::default()
        },
        reference: false,
        mode: "lockstep".into(),
        run: Default::default(),
    }
}

/// Every output a study makes of `points`: none may panic, and each has
/// a line per run or per value.
fn write_all(points: &[StudyPoint]) -> Result<(), TestCaseError> {
    let rows = summarise(points);
    prop_assert!(rows.len() <= points.len());
    prop_assert_eq!(csv(points).lines().count(), points.len() + 1);
    prop_assert_eq!(summary_csv(&rows).lines().count(), rows.len() + 1);
    prop_assert_eq!(summary_table(&rows).lines().count(), rows.len() + 1);
    let _ = fig4_svg(&rows);
    let _ = fsin::study::tradeoff_svg(&tradeoff(&rows));
    Ok(())
}

/// Numbers a saved point may hold: ordinary ones and the extremes.
fn real() -> impl Strategy<Value = f64> {
    prop_oneof![
        -1e6..1e6f64,
        Just(0.0),
        Just(-0.0),
        Just(f64::MAX),
        Just(-f64::MAX),
        Just(f64::MIN_POSITIVE),
        Just(1e-300),
        any::<f64>().prop_filter("JSON holds finite numbers", |x| x.is_finite()),
    ]
}

fn some_real() -> impl Strategy<Value = Option<f64>> {
    prop::option::of(real())
}

/// A point with every number drawn from [`real`] or any integer, of one
/// of three values, in one of three modes, maybe the reference.
#[allow(
    clippy::needless_update,
    reason = "a figure added to StudyFigures takes its default here"
)]
fn any_point() -> impl Strategy<Value = StudyPoint> {
    (
        (
            0usize..3,
            0usize..3,
            any::<bool>(),
            any::<u32>(),
            any::<u64>(),
        ),
        (some_real(), some_real(), real(), some_real(), some_real()),
        (real(), real(), real(), real()),
        (
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
        ),
    )
        .prop_map(
            |(
                (v, m, reference, repeat, seed),
                (guest_s, app_wall_s, wall_s, predicted_s, predicted_mpi_s),
                (frame_latency_avg, accepted_load, load_peak, link_peak),
                (slices, frames, dropped, retrans, net),
            )| StudyPoint {
                value: ["200:10000", "200:1000", "torus_8_8"][v].into(),
                mode: ["lockstep", "parallel", ""][m].into(),
                reference,
                repeat,
                seed,
                guest_s,
                app_wall_s,
                wall_s,
                predicted_s,
                predicted_mpi_s,
                frame_latency_avg,
                accepted_load,
                accepted_load_peak: load_peak,
                link_utilization_peak: link_peak,
                slices,
                frames_delivered: frames,
                frames_dropped: dropped,
                guests: StudyFigures {
                    tcp_segments: retrans,
                    tcp_retransmissions: retrans,
                    ..StudyFigures::default()
                },
                slice_net_cycles: net,
                ..point()
            },
        )
}

/// The point of [`point`] as `point.json` holds it.
fn saved() -> String {
    serde_json::to_string_pretty(&saved_value()).expect("a point serialises")
}

fn saved_value() -> serde_json::Value {
    serde_json::to_value(SavedPoint {
        identity: "slice=200:10000 repeat=1 seed=18".into(),
        point: point(),
    })
    .expect("a point serialises")
}

/// `point.json` with its `k`-th number (modulo their count, in document
/// order) written as the text `n`.
fn with_number(k: usize, n: &str) -> String {
    /// The numbers of `v`, depth first.
    fn numbers(v: &mut serde_json::Value) -> Vec<&mut serde_json::Value> {
        match v {
            serde_json::Value::Number(_) => vec![v],
            serde_json::Value::Array(a) => a.iter_mut().flat_map(numbers).collect(),
            serde_json::Value::Object(o) => o.values_mut().flat_map(numbers).collect(),
            _ => Vec::new(),
        }
    }
    const MARK: &str = "@number@";
    let mut v = saved_value();
    let mut all = numbers(&mut v);
    let count = all.len();
    *all[k % count] = serde_json::Value::String(MARK.into());
    serde_json::to_string_pretty(&v)
        .expect("a point serialises")
        .replace(&format!("\"{MARK}\""), n)
}

/// Replacements for a number of a saved point: half of them a number
/// that any of its fields may hold (a count under a million), the rest
/// of any size, sign or kind.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => (0u32..1_000_000).prop_map(|n| n.to_string()),
        1 => any::<u64>().prop_map(|n| n.to_string()),
        1 => any::<i64>().prop_map(|n| n.to_string()),
        1 => real().prop_map(|x| format!("{x:e}")),
        1 => Just("1e999".to_string()),
        1 => Just("-1".to_string()),
        1 => Just("null".to_string()),
        1 => Just("\"7\"".to_string()),
        1 => Just("18446744073709551616".to_string()),
    ]
}

proptest! {
    // A failing case is kept beside this file (fuzz.regressions), to be
    // committed: it then runs first, every time.
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_point_files_never_panic(text in "\\PC{0,300}") {
        if let Some(s) = SavedPoint::read(&text) {
            write_all(&[s.point])?;
        }
    }

    /// A saved point cut anywhere is not read.
    #[test]
    fn cut_point_files_are_not_read(at in 0usize..4000) {
        let text = saved();
        let cut = at.min(text.len() - 1);
        prop_assert!(SavedPoint::read(&text[..cut]).is_none());
    }

    /// Any number of a saved point replaced by another: read or not
    /// read; what is read goes through the study's outputs.
    #[test]
    fn changed_numbers_are_read_or_refused(k in 0usize..64, n in number()) {
        if let Some(s) = SavedPoint::read(&with_number(k, &n)) {
            write_all(&[s.point, point()])?;
        }
    }

    /// Points of any values through every output of a study.
    #[test]
    fn any_points_go_through_every_output(points in prop::collection::vec(any_point(), 0..7)) {
        write_all(&points)?;
    }
}

/// The changed points reach the study's outputs at least half the time
/// and not always: of 400 cases of [`changed_numbers_are_read_or_refused`],
/// how many are read (284 on 2026-12-07; 183 before [`number`] drew
/// half its numbers from those every field may hold).
#[test]
fn changed_points_are_often_read() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = (0usize..64, number());
    let read = (0..400)
        .filter(|_| {
            let (k, n) = strategy.new_tree(&mut runner).unwrap().current();
            SavedPoint::read(&with_number(k, &n)).is_some()
        })
        .count();
    assert!((200..400).contains(&read), "{read} of 400 read");
}

/// The saved point as written reads back as it was.
#[test]
fn a_saved_point_reads_back() {
    let s = SavedPoint::read(&saved()).expect("read");
    assert_eq!(s.identity, "slice=200:10000 repeat=1 seed=18");
    assert_eq!(s.point.guest_s, Some(8.75));
    assert_eq!(s.point.guests.tcp_retransmissions, 1_926);
    assert_eq!(s.point.repeat, 1);
}

/// A run whose wall time is near `f64::MAX` (a hand-edited `point.json`):
/// `study.svg` is refused with a message instead of an axis to infinity,
/// whose ticks plotters would search for ever.
#[test]
fn a_wall_time_near_the_largest_number_is_refused_not_drawn() {
    let huge = StudyPoint {
        value: "200:1000".into(),
        app_wall_s: Some(f64::MAX),
        ..point()
    };
    let rows = summarise(&[point(), huge]);
    let e = fig4_svg(&rows).expect_err("an infinite axis");
    assert!(e.0.contains("application wall time"), "{e}");
}

/// A speed-up of 1e-314 (a reference's wall time of almost nothing):
/// `tradeoff.svg` is refused, not drawn over hundreds of decades.
#[test]
fn a_speedup_of_hundreds_of_decades_is_refused_not_drawn() {
    let points = [fsin::study::Tradeoff {
        label: "200:10000".into(),
        series: "parallel".into(),
        error_pct: 5.5,
        speedup: 3e-314,
    }];
    let e = fsin::study::tradeoff_svg(&points).expect_err("hundreds of decades");
    assert!(e.0.contains("twelve decades"), "{e}");
}
