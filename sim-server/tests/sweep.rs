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

/// Three designs in one command: an 8x8 torus, an 8x8 mesh and
/// a dragonfly file with Duato's routing on 4 VCs, each a series with
/// keys of its own. The CSV has the series' label and keys as columns,
/// each series has its own bisection bound (8/k and 4/k for the cubes, 4 B
/// / N from `fsin topology`'s bisection for the file) that no accepted
/// load exceeds, and the plots' legends name the three series and draw
/// the three bounds.
#[test]
fn one_command_compares_three_designs() {
    let dir = std::env::temp_dir().join(format!("fsin-series-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fsin = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_fsin"))
            .args(args)
            .output()
            .expect("fsin runs");
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    };
    let df = dir.join("df.edges");
    std::fs::write(&df, fsin(&["topology", "--write", "dragonfly_4_2_2"])).unwrap();
    let file = format!("topo=file:{}", df.display());
    let topo: serde_json::Value =
        serde_json::from_str(fsin(&["topology", &file, "--json"]).lines().last().unwrap()).unwrap();
    let df_bound =
        4.0 * topo["bisection_links"].as_f64().unwrap() / topo["nodes"].as_f64().unwrap();
    let df_series = format!("{file} routing=duato nchan=4");
    let out = dir.join("out");
    let json = fsin(&[
        "sweep",
        "-q",
        "--vary",
        "load=0.2:1:0.4",
        "--series",
        "topo=torus_8_8",
        "--series",
        "topo=mesh_8_8",
        "--series",
        &df_series,
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    let j: serde_json::Value = serde_json::from_str(json.lines().last().unwrap()).unwrap();
    let series = j["series"].as_array().unwrap();
    let bounds: Vec<f64> = series
        .iter()
        .map(|s| s["bisection_bound"].as_f64().unwrap())
        .collect();
    assert_eq!(&bounds[..2], &[1.0, 0.5]);
    assert!(
        (bounds[2] - df_bound).abs() < 1e-12,
        "{bounds:?} against {df_bound}"
    );
    assert!(
        j["bisection_bound"].is_null(),
        "the designs do not share one"
    );
    for p in j["points"].as_array().unwrap() {
        let i = series
            .iter()
            .position(|s| s["label"] == p["series"])
            .unwrap();
        let acc = p["report"]["accepted_load"].as_f64().unwrap();
        assert!(
            acc < bounds[i],
            "{}: {acc} above {}",
            p["series"],
            bounds[i]
        );
    }
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    assert!(
        csv.starts_with("series,topo,routing,nchan,load,offered,injected,accepted,accepted_ci95,latency_avg,latency_ci95,"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 1 + 3 * 3);
    let mesh_row = csv
        .lines()
        .find(|l| l.starts_with("topo=mesh_8_8,mesh_8_8,,,0.2,"))
        .unwrap();
    assert!(
        mesh_row.contains(",true,") || mesh_row.contains(",false,"),
        "{mesh_row}"
    );
    let df_row = csv.lines().last().unwrap();
    assert!(df_row.contains(",duato,4,1,"), "{df_row}");
    // The legends: a curve per series, a bound per series in the
    // throughput plot, and the mesh's points past saturation (0.47 of 1.0
    // accepted) marked in the latency plot.
    let texts = |file: &str| -> Vec<String> {
        let svg = std::fs::read_to_string(out.join(file)).unwrap();
        svg.split("</text>")
            .filter_map(|part| part.rsplit_once('>').map(|(_, t)| t.trim().to_string()))
            .collect()
    };
    let (latency, throughput) = (texts("latency.svg"), texts("throughput.svg"));
    let has = |texts: &[String], t: &str| texts.iter().any(|x| x == t);
    for label in ["topo=torus_8_8", "topo=mesh_8_8", df_series.as_str()] {
        assert!(
            has(&latency, label),
            "latency.svg lacks {label}: {latency:?}"
        );
        assert!(has(&throughput, label), "throughput.svg lacks {label}");
    }
    for b in [
        "bisection bound 1.000 (topo=torus_8_8)",
        "bisection bound 0.500 (topo=mesh_8_8)",
    ] {
        assert!(
            has(&throughput, b),
            "throughput.svg lacks {b}: {throughput:?}"
        );
    }
    let df_legend = format!("bisection bound {df_bound:.3} ({df_series})");
    assert!(
        has(&throughput, &df_legend),
        "throughput.svg lacks {df_legend}"
    );
    assert!(has(&latency, "past saturation (hollow, not joined)"));
    let _ = std::fs::remove_dir_all(dir);
}
