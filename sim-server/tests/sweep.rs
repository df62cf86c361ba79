//! `fsin sweep` as a user runs it: the throughput curve of an 8x8 torus
//! against the bisection bound (docs/contracts.md, "Validation references").

use std::process::Command;

#[test]
fn accepted_load_rises_then_flattens_below_the_bisection_bound() {
    let dir = std::env::temp_dir().join(format!("fsin-sweep-{}", std::process::id()));
    let o = Command::new(env!("CARGO_BIN_EXE_fsin"))
        .args([
            "sweep",
            "topo=torus_8_8",
            "cycles=4000",
            "--vary",
            "load=0.1:1.0:0.1",
            "--json",
            "--out",
        ])
        .arg(&dir)
        .output()
        .expect("fsin runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let j: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    // Bidirectional 8x8 torus: 8/k = 1 phit/node/cycle.
    let bound = j["bisection_bound"].as_f64().unwrap();
    assert!((bound - 1.0).abs() < 1e-12, "{bound}");
    let pts = j["points"].as_array().unwrap();
    assert_eq!(pts.len(), 10);
    let acc: Vec<f64> = pts
        .iter()
        .map(|p| p["report"]["accepted_load"].as_f64().unwrap())
        .collect();
    let off: Vec<f64> = pts
        .iter()
        .map(|p| p["report"]["offered_load"].as_f64().unwrap())
        .collect();
    // Below saturation the network delivers what is offered (within 3%,
    // a 4000-cycle window), and more offered means more accepted.
    for i in 0..4 {
        assert!((acc[i] - off[i]).abs() / off[i] < 0.03, "{acc:?}");
        assert!(acc[i + 1] > acc[i], "{acc:?}");
    }
    // Saturated: every point stays under the bound, the last ones far
    // below what is offered, and the curve is flat (the last three points
    // within 5% of each other).
    assert!(acc.iter().all(|&a| a < bound), "{acc:?}");
    assert!(acc[9] < 0.9 * off[9], "{acc:?}");
    let tail = &acc[7..];
    let (lo, hi) = tail
        .iter()
        .fold((f64::MAX, 0.0f64), |(l, h), &a| (l.min(a), h.max(a)));
    assert!((hi - lo) / hi < 0.05, "{acc:?}");
    // The files a user looks at.
    let csv = std::fs::read_to_string(dir.join("sweep.csv")).unwrap();
    assert!(csv.starts_with("load,offered,injected,accepted,"), "{csv}");
    assert_eq!(csv.lines().count(), 11);
    for plot in ["latency.svg", "throughput.svg"] {
        let svg = std::fs::read_to_string(dir.join(plot)).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.contains("polyline"),
            "{plot}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}
