//! `compat=insee`: INSEE's code where it departs from the INSEE paper,
//! checked against INSEE's own behaviour (its sources in
//! `../shared/reference/insee`, and figures measured with them).

mod common;

use common::{replay, run};

/// `imode=dor` in INSEE (`select_input_port_dor_only`, no early exit) puts
/// a packet in the queue of the *last* dimension it must correct. On
/// torus_4_4, node 0 sends to 5 = (1, 1) and to 7 = (3, 1): by the first
/// hop the packets take X+ and X-, two queues, and leave together; by
/// INSEE's rule both take Y+, so the second waits for the 16 phits of the
/// first to leave that queue.
#[test]
fn insee_dor_queues_by_the_last_dimension() {
    let packets = [(0, 0, 5), (0, 0, 7)];
    let base = ["topo=torus_4_4", "imode=dor", "plength=16"];
    let gap = |settings: &[&str]| {
        let d = replay(settings, &packets, 200);
        assert_eq!(d.len(), 2, "{settings:?}");
        let t: Vec<u64> = d.iter().map(|p| p.t_inj).collect();
        t[0].abs_diff(t[1])
    };
    assert!(gap(&base) <= 1, "two queues: both leave at once");
    assert!(
        gap(&[&base[..], &["compat=insee"]].concat()) >= 16,
        "one queue: the second leaves after the first's 16 phits"
    );
}

/// INSEE stamps a packet when it enters its injection buffer. Six packets
/// sent at once with `iql=1` cannot all enter at once: by default all count
/// from cycle 0, with `compat=insee` each from its entry, the last only
/// once the first packet's 16 phits have left. The dynamics are the same.
#[test]
fn insee_latency_starts_at_the_injection_buffer() {
    let packets = [(0, 0, 1); 6];
    let base = ["topo=torus_4_4", "iql=1", "plength=16"];
    let ours = replay(&base, &packets, 200);
    let insee = replay(&[&base[..], &["compat=insee"]].concat(), &packets, 200);
    assert_eq!(ours.len(), 6);
    for (a, b) in ours.iter().zip(&insee) {
        assert_eq!((a.t_gen, a.t_inj, a.t_done), (0, b.t_inj, b.t_done));
        assert!(b.t_gen <= b.t_inj);
    }
    assert!(insee[5].t_gen >= insee[0].t_inj + 16, "{insee:?}");
}

/// INSEE's `request_port_dally_adaptive` calls `preliminary_check(.., B_FALSE)`
/// and never fills its table of profitable directions, so every request
/// falls back to `improved`: stock INSEE's adaptive output equals its
/// improved output exactly, and accepts 0.363 phits/node/cycle on a 16x16
/// torus with three VCs at load 0.5 (fsin-rs's adaptive router, which
/// INSEE's comment describes, accepts 0.447).
#[test]
fn insee_dally_adaptive_is_improved() {
    let base = [
        "topo=torus_16_16",
        "vc=dally",
        "nchan=3",
        "load=0.5",
        "cycles=10000",
    ];
    let with = |extra: &[&str]| run(&[&base[..], extra].concat()).measured;
    let adaptive = with(&["rmode=adaptive", "compat=insee"]);
    assert_eq!(adaptive, with(&["rmode=improved", "compat=insee"]));
    assert!((adaptive.accepted_load - 0.363).abs() < 0.363 * 0.03);
    let ours = with(&["rmode=adaptive"]).accepted_load;
    assert!(ours > 1.1 * adaptive.accepted_load, "{ours}");
}

/// A Dimemas and an alog trace replay to the execution cycles of the
/// equivalent `.trc`, by default and under `compat=insee`, where INSEE
/// (measured with its sources) prints the same clock for all three: 303
/// for the CPU-burst case (bursts of 0.01 s and 0.005 s are 200 and 100
/// cycles at INSEE's 1e6 / 50), 36 for the two sends of `imode=dor`.
#[test]
fn dimemas_and_alog_replay_as_the_equivalent_trc() {
    let dimemas = "#DIMEMAS:\"cpu\":1,0:3(1,1,1),0\n\
                   1:0:0:0.01\n2:1:0:2:1:0:0:0\n3:2:0:1:1:0:0:0\n1:2:0:0.005\n";
    let trc = "c 0 200\ns 1 2 0 1\nr 1 2 0 1\nc 2 100\n";
    assert_eq!(trace_cycles(dimemas, &[]), (200, 303));
    assert_eq!(trace_cycles(trc, &[]), (200, 303));
    let alog = "-101 0 0 5 0 0 0 1\n-101 0 0 7 0 0 0 1\n\
                -102 5 0 0 0 0 0 1\n-102 7 0 0 0 0 0 1\n";
    let trc = "s 0 5 0 1\ns 0 7 0 1\nr 0 5 0 1\nr 0 7 0 1\n";
    assert_eq!(trace_cycles(alog, &["imode=dor"]), (19, 36));
    assert_eq!(trace_cycles(trc, &["imode=dor"]), (19, 36));
    // trace_cpu_units does not apply to Dimemas bursts, cpu_speed does.
    let f = |extra: &[&str]| trace_cycles(dimemas, extra).0;
    assert_eq!(f(&["trace_cpu_units=us", "link_bandwidth=8000"]), 200);
    assert_eq!(f(&["cpu_speed=2"]), 100);
}

/// INSEE starts its batches on a multiple of the batch length once the
/// convergence phase ends (batch.c: "adjust for equal sample acquiring")
/// and prints the mean of the batches' mean latencies; by default the
/// batches follow convergence at once and the latency is that of every
/// packet of the batches pooled (the batch means weighted by packets).
#[test]
fn insee_batches_are_aligned_and_averaged() {
    let base = [
        "topo=torus_4_4",
        "load=0.3",
        "warm_up_period=1000",
        "conv_period=300",
        "max_conv_time=1500",
        "nsamples=4",
        "sample_size=700",
    ];
    let insee = run(&[&base[..], &["compat=insee"]].concat());
    let ours = run(&base);
    assert_eq!(
        insee.unmeasured_cycles % 700,
        0,
        "{}",
        insee.unmeasured_cycles
    );
    // Convergence cannot succeed before three windows follow a first
    // one, and ends on the 300-cycle grid from 1000.
    assert_eq!((ours.unmeasured_cycles - 1000) % 300, 0);
    assert_ne!(
        ours.unmeasured_cycles % 700,
        0,
        "{}",
        ours.unmeasured_cycles
    );
    let n = insee.batches.len() as f64;
    let mean: f64 = insee.batches.iter().map(|b| b.latency_avg).sum::<f64>() / n;
    assert!((insee.measured.latency_avg - mean).abs() < 1e-9);
    let packets: u64 = ours.batches.iter().map(|b| b.packets_delivered).sum();
    let pooled: f64 = ours
        .batches
        .iter()
        .map(|b| b.latency_avg * b.packets_delivered as f64)
        .sum::<f64>()
        / packets as f64;
    assert!((ours.measured.latency_avg - pooled).abs() < 1e-9);
    assert!(
        (ours.measured.latency_avg - ours.batches.iter().map(|b| b.latency_avg).sum::<f64>() / n)
            .abs()
            > 1e-9
    );
}

/// Keys a configuration leaves unset take INSEE's defaults under
/// `compat=insee`: a 4x4 torus, computations in nanoseconds at 10 Gb/s
/// (0.3125 cycles per ns with 4-byte phits). INSEE, given only the trace,
/// prints 119 for `c 0 320` (100 cycles) and one packet to a neighbour.
#[test]
fn insee_defaults_apply_to_unset_keys() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("compat-defaults");
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let file = dir.join("d.trc");
    std::fs::write(&file, "c 0 320\ns 0 1 0 1\nr 0 1 0 1\n").expect("trace written");
    let f = format!("tracefile={}", file.display());
    let insee = run(&[f.as_str(), "compat=insee"]);
    assert_eq!(insee.nodes, 16);
    assert_eq!(insee.app.expect("a trace run").exec_cycles, 119);
    // By default: an 8x8 torus and cycles.
    let ours = run(&[f.as_str()]);
    assert_eq!(ours.nodes, 64);
    assert_eq!(ours.app.expect("a trace run").exec_cycles, 320 + 17);
    // What is set stays set.
    let set = run(&[
        f.as_str(),
        "compat=insee",
        "topo=torus_8_8",
        "trace_cpu_units=cycles",
    ]);
    assert_eq!(
        (set.nodes, set.app.expect("a trace run").exec_cycles),
        (64, 339)
    );
}

/// Execution cycles of `trace` on torus_4_4 with `extra` settings, by
/// default and with `compat=insee`.
fn trace_cycles(trace: &str, extra: &[&str]) -> (u64, u64) {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("compat-traces");
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = dir.join(format!("t{n}.trc"));
    std::fs::write(&file, trace).expect("trace written");
    let f = format!("tracefile={}", file.display());
    let mut s = vec!["topo=torus_4_4", "trace_cpu_units=cycles", f.as_str()];
    s.extend(extra);
    let ours = run(&s).app.expect("a trace run").exec_cycles;
    s.push("compat=insee");
    let insee = run(&s).app.expect("a trace run").exec_cycles;
    let _ = std::fs::remove_file(&file);
    (ours, insee)
}

/// The minimal traces of INSEE's replay rules, each with INSEE's own
/// `Simulation clock` (measured with INSEE built from its sources) under
/// `compat=insee`, and the corrected figure by default (one packet between
/// neighbours: one hop plus 16 phits, 17 cycles).
#[test]
fn minimal_traces_give_insee_numbers() {
    let cases: &[(&str, &[&str], u64, u64)] = &[
        // INSEE's clock starts at 1 and prints one past the last cycle.
        ("s 0 1 0 1\nr 0 1 0 1\n", &[], 17, 19),
        // The run ends with the last event, not when the network drains.
        ("s 0 1 0 1\n", &[], 17, 2),
        // imode=dor: both packets in the Y+ queue.
        (
            "s 0 5 0 1\ns 0 7 0 1\nr 0 5 0 1\nr 0 7 0 1\n",
            &["imode=dor"],
            19,
            36,
        ),
        // The CPU-burst skip, and a satisfied receive it passes over.
        ("c 0 200\ns 1 2 0 1\nr 1 2 0 1\nc 2 100\n", &[], 200, 303),
        // A receive matches only a message of the same length in packets:
        // INSEE waits out its 10,000-iteration deadlock threshold.
        ("s 0 1 0 100\nr 0 1 0 1\n", &[], 33, 10_005),
        // Bytes are not compared: 10 and 64 bytes are one packet each.
        ("s 0 1 0 10\nr 0 1 0 64\n", &[], 17, 19),
    ];
    for &(trace, extra, ours, insee) in cases {
        assert_eq!(trace_cycles(trace, extra), (ours, insee), "{trace}");
    }
}

/// INSEE's replay rules, pinned by 30 probe traces (A: clock and end, B:
/// packets per message, C: matching, D/G: the skip and satisfied receives,
/// E: computation cost, H: mixed), each with the corrected execution cycles
/// and INSEE's `Simulation clock` as measured with INSEE built from its
/// sources (torus_4_4, `trace_cpu_units=cycles`).
#[test]
fn probe_traces_give_insee_numbers() {
    let cases: &[(&str, &str, u64, u64)] = &[
        ("A1", "s 0 1 0 1\n", 17, 2),
        ("A2", "s 0 1 0 1\nr 0 1 0 1\n", 17, 19),
        ("H1", "s 0 1 0 640\n", 161, 20),
        ("A4", "c 0 200\n", 200, 202),
        ("H4", "c 0 100\nc 0 50\n", 150, 152),
        ("H3", "c 0 100\nc 1 50\n", 100, 102),
        ("A5", "c 0 200\ns 1 2 0 1\nr 1 2 0 1\nc 2 100\n", 200, 303),
        ("B4", "s 0 1 0 0\nr 0 1 0 0\n", 17, 19),
        ("B1", "s 0 1 0 128\nr 0 1 0 128\n", 33, 35),
        ("B3", "s 0 1 0 65\nr 0 1 0 65\n", 33, 35),
        ("B2", "s 0 1 0 192\nr 0 1 0 192\n", 49, 51),
        ("B6", "s 0 1 0 640\nr 0 1 0 640\n", 161, 163),
        (
            "B7",
            "s 0 1 0 640\ns 0 2 0 1\nr 0 1 0 640\nr 0 2 0 1\n",
            178,
            180,
        ),
        ("B5", "s 0 10 0 1\nr 0 10 0 1\n", 20, 22),
        ("H2", "s 0 1 0 1\nr 0 1 0 1\ns 1 0 0 1\nr 1 0 0 1\n", 34, 36),
        ("C1", "s 0 1 0 1\ns 0 1 0 1\nr 0 1 0 1\nr 0 1 0 1\n", 33, 35),
        ("C2", "s 0 1 1 1\ns 0 1 2 1\nr 0 1 2 1\nr 0 1 1 1\n", 33, 35),
        (
            "C3",
            "s 0 1 0 128\ns 0 1 0 1\nr 0 1 0 1\ns 1 2 0 1\nr 0 1 0 128\nr 1 2 0 1\n",
            50,
            68,
        ),
        ("C4", "s 0 1 0 10\nr 0 1 0 64\n", 17, 19),
        ("C5", "s 0 1 0 100\nr 0 1 0 1\n", 33, 10005),
        ("C6", "s 0 1 0 1\nc 1 50\nr 0 1 0 1\n", 50, 52),
        (
            "E1",
            "s 2 3 0 1\nr 2 3 0 1\nc 0 1\ns 0 1 0 1\nr 0 1 0 1\n",
            18,
            19,
        ),
        (
            "E2",
            "s 2 3 0 1\nr 2 3 0 1\nc 0 2\ns 0 1 0 1\nr 0 1 0 1\n",
            19,
            20,
        ),
        (
            "E10",
            "s 2 3 0 1\nr 2 3 0 1\nc 0 10\ns 0 1 0 1\nr 0 1 0 1\n",
            27,
            28,
        ),
        (
            "E16",
            "s 2 3 0 1\nr 2 3 0 1\nc 0 16\ns 0 1 0 1\nr 0 1 0 1\n",
            33,
            34,
        ),
        (
            "E18",
            "s 2 3 0 1\nr 2 3 0 1\nc 0 18\ns 0 1 0 1\nr 0 1 0 1\n",
            35,
            37,
        ),
        (
            "E30",
            "s 2 3 0 1\nr 2 3 0 1\nc 0 30\ns 0 1 0 1\nr 0 1 0 1\n",
            47,
            49,
        ),
        (
            "D2",
            "s 0 1 0 1\nc 0 100\nr 0 1 0 1\ns 1 2 0 1\nr 1 2 0 1\n",
            101,
            120,
        ),
        ("G1", "s 0 1 0 128\nc 0 100\nr 0 1 0 128\n", 102, 104),
        ("H5", "s 0 1 0 1\nr 0 1 0 1\nc 1 10\nc 1 10\n", 37, 40),
    ];
    for &(name, trace, ours, insee) in cases {
        assert_eq!(trace_cycles(trace, &[]), (ours, insee), "{name}: {trace}");
    }
}
