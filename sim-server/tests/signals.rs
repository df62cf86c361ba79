//! Signals on every long command (README, "Exit codes"): SIGINT,
//! SIGTERM and SIGHUP at a known phase of `fsin run`, `sweep`, `demo`,
//! `serve` and `cosim-sweep` print the report so far and write it to
//! `--out`, leave no child process (within 5 s) and no shared-memory file,
//! and exit 1; a second signal during the shutdown ends the command at once
//! (exit 130), still without orphans or files; signals that arrive
//! together (`timeout`'s) are one. `fsin qemu` (booting, running, saving
//! a checkpoint) is in tests/qemu.rs.

mod process;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use process::{read_json, Guard, Watched, FSIN, TAG_ENV};

const SIGNALS: [(i32, &str); 3] = [
    (libc::SIGINT, "SIGINT"),
    (libc::SIGTERM, "SIGTERM"),
    (libc::SIGHUP, "SIGHUP"),
];

/// A fresh `--out` directory for one case.
fn out_dir(case: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("fsin-signals-{}-{case}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// `fsin run`: the report marks the signal, with the cycles so far, on
/// stdout and in `--out`.
#[test]
fn each_signal_stops_fsin_run() {
    for (sig, name) in SIGNALS {
        let out = out_dir(&format!("run-{name}"));
        let o = out.to_str().unwrap();
        let mut w = Watched::start(&format!(
            "run --json --progress-s 0.2 --out {o} topo=torus_8_8 cycles=2000000000"
        ));
        w.wait_for("cycle ");
        w.signal(sig);
        let e = w.end(Duration::from_secs(20));
        e.assert_clean_stop(&format!("fsin run, {name}"));
        let r = e.json();
        assert_eq!(r["interrupted"], name, "{r}");
        let cycles = r["total_cycles"].as_u64().unwrap();
        assert!(cycles > 0 && cycles < 2_000_000_000, "{r}");
        let written = read_json(&out.join("report.json"));
        assert_eq!(written["interrupted"], name);
        assert_eq!(written["total_cycles"], r["total_cycles"]);
        let _ = std::fs::remove_dir_all(&out);
    }
}

/// `fsin sweep`: every point stops where it is; the points' reports mark
/// the signal, on stdout and in `--out`'s sweep.json.
#[test]
fn each_signal_stops_fsin_sweep() {
    for (sig, name) in SIGNALS {
        let out = out_dir(&format!("sweep-{name}"));
        let o = out.to_str().unwrap();
        let mut w = Watched::start(&format!("sweep --json --progress-s 0.2 --out {o} topo=torus_8_8 cycles=2000000000 --vary load=0.1,0.2"));
        w.wait_for("points done");
        w.signal(sig);
        let e = w.end(Duration::from_secs(20));
        e.assert_clean_stop(&format!("fsin sweep, {name}"));
        for r in [e.json(), read_json(&out.join("sweep.json"))] {
            let points = r["points"].as_array().unwrap();
            assert_eq!(points.len(), 2, "{r}");
            for p in points {
                assert_eq!(p["report"]["interrupted"], name, "{p}");
            }
        }
        let _ = std::fs::remove_dir_all(&out);
    }
}

/// The end reason a co-simulation report gives for `name`.
fn cosim_reason(name: &str) -> String {
    format!("interrupted by {name}")
}

/// `fsin demo` in its measured phase: the report says which signal, with
/// the frames delivered so far; its fake nodes are stopped, not orphaned.
#[test]
fn each_signal_stops_fsin_demo() {
    for (sig, name) in SIGNALS {
        let out = out_dir(&format!("demo-{name}"));
        let o = out.to_str().unwrap();
        let mut w = Watched::start(&format!("demo --nodes 4 --workload uniform --messages 100000000 --json --progress-s 0.2 --out {o} topo=torus_2_2"));
        w.wait_for("measuring");
        w.signal(sig);
        let e = w.end(Duration::from_secs(20));
        e.assert_clean_stop(&format!("fsin demo, {name}"));
        for r in [e.json(), read_json(&out.join("report.json"))] {
            assert_eq!(r["end_reason"], cosim_reason(name), "{r}");
            assert!(r["frames_delivered"].as_u64().unwrap() > 0, "{r}");
        }
        assert!(!e.log.contains("were killed"), "{}", e.log);
        let _ = std::fs::remove_dir_all(&out);
    }
}

/// `fsin serve` with two attached fake nodes (started here, with the same
/// tag): the server's report marks the signal, and the nodes, told to
/// stop, end too, saying why.
#[test]
fn each_signal_stops_fsin_serve() {
    for (sig, name) in SIGNALS {
        let out = out_dir(&format!("serve-{name}"));
        let o = out.to_str().unwrap();
        let mut w = Watched::start(&format!("serve --listen 127.0.0.1:0 --nodes 2 --slices 1000000000 --no-idle-skip --json --progress-s 0.2 --out {o} topo=torus_2"));
        let listening = w.wait_for("listening on ");
        let addr = listening
            .split("listening on ")
            .nth(1)
            .and_then(|r| r.split_once(';'))
            .map(|(a, _)| a.trim().to_string())
            .expect("an address");
        let url = format!("http://{addr}");
        let nodes: Vec<Guard> = (0..2)
            .map(|n| {
                Guard(
                    Command::new(FSIN)
                        .args(["fake-node", "--server", &url, "--node", &n.to_string()])
                        .args(["--workload", "idle"])
                        .env(TAG_ENV, &w.tag)
                        .stdin(Stdio::null())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped())
                        .spawn()
                        .expect("fake-node starts"),
                )
            })
            .collect();
        w.wait_for("measuring");
        w.signal(sig);
        let e = w.end(Duration::from_secs(20));
        e.assert_clean_stop(&format!("fsin serve, {name}"));
        for r in [e.json(), read_json(&out.join("report.json"))] {
            assert_eq!(r["end_reason"], cosim_reason(name), "{r}");
            assert!(r["slices"].as_u64().unwrap() > 0, "{r}");
        }
        // Told why the run ended, each node exits 1 (it did not finish).
        for node in nodes {
            let o = process::wait(node, Duration::from_secs(10));
            let log =
                String::from_utf8_lossy(&[&o.stdout[..], &o.stderr[..]].concat()).into_owned();
            assert_eq!(o.status.code(), Some(1), "{log}");
            assert!(log.contains(&cosim_reason(name)), "{log}");
        }
        let _ = std::fs::remove_dir_all(&out);
    }
}

/// `fsin cosim-sweep` in its first run: the sweep stops, says where, and
/// reports (stdout and `--out`) the points finished before it: none.
#[test]
fn each_signal_stops_fsin_cosim_sweep() {
    for (sig, name) in SIGNALS {
        let out = out_dir(&format!("cosim-sweep-{name}"));
        let o = out.to_str().unwrap();
        let mut w = Watched::start(&format!(
            "cosim-sweep --messages 100000 --slices 20:1000 --json --out {o}"
        ));
        w.wait_for("measuring");
        w.signal(sig);
        let e = w.end(Duration::from_secs(20));
        e.assert_clean_stop(&format!("fsin cosim-sweep, {name}"));
        let r = e.json();
        assert_eq!(
            r["interrupted"],
            format!(
                "{} during the lockstep run at slice 20:1000",
                cosim_reason(name)
            ),
            "{r}"
        );
        assert_eq!(r["points"], serde_json::json!([]), "{r}");
        let written = read_json(&out.join("sweep.json"));
        assert_eq!(written, serde_json::json!([]), "{written}");
        assert!(out.join("sweep.svg").is_file());
        let _ = std::fs::remove_dir_all(&out);
    }
}

/// A second signal while `fsin demo` shuts down (its fake nodes stopped
/// with SIGSTOP, so the shutdown waits for them) ends it at once with exit
/// 130, and its fake nodes die with it.
#[test]
fn a_second_signal_ends_the_shutdown_at_once_without_orphans() {
    let mut w = Watched::start("demo --nodes 2 --workload uniform --messages 100000000 --json --progress-s 0.2 topo=torus_2");
    w.wait_for("measuring");
    let e = process::second_signal(w, "fake-node", 2, Duration::from_secs(2));
    assert!(e.took < Duration::from_secs(1), "{:?}", e.took);
}

/// Signals that arrive together are one request to stop: `timeout(1)`,
/// itself signalled, sends SIGTERM to `fsin demo` and then to its whole
/// process group, so fsin gets it twice within microseconds. Twenty times,
/// right after the server's barrier file appears: the report on stdout and
/// in `--out`, exit 1, and no file left in /dev/shm.
#[test]
fn signals_that_arrive_together_are_one_request() {
    for attempt in 0..20 {
        let out = out_dir(&format!("together-{attempt}"));
        let tag = process::new_tag();
        let timeout = Guard(
            Command::new("timeout")
                .args(["60", FSIN, "demo", "--nodes", "8", "--think", "300000000"])
                .args(["--no-idle-skip", "--json", "--quiet", "--out"])
                .arg(&out)
                .env(TAG_ENV, &tag)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("timeout(1) starts"),
        );
        let tpid = timeout.0.id();
        let start = std::time::Instant::now();
        let fsin_pid = loop {
            let children = std::fs::read_to_string(format!("/proc/{tpid}/task/{tpid}/children"))
                .unwrap_or_default();
            let barrier = children
                .split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok())
                .find(|&p| !process::shm_files_of(p).is_empty());
            if let Some(p) = barrier {
                break p;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "attempt {attempt}: no barrier file within 30 s"
            );
            std::thread::sleep(Duration::from_millis(2));
        };
        // SAFETY: kill(2) on the timeout(1) this test started.
        assert_eq!(unsafe { libc::kill(tpid as i32, libc::SIGTERM) }, 0);
        let o = process::wait(timeout, Duration::from_secs(30));
        let log = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "attempt {attempt}: {log}");
        for r in [process::last_json(&o), read_json(&out.join("report.json"))] {
            assert_eq!(
                r["end_reason"],
                cosim_reason("SIGTERM"),
                "attempt {attempt}: {r}"
            );
        }
        assert_eq!(
            process::shm_files_of(fsin_pid),
            Vec::<PathBuf>::new(),
            "attempt {attempt}: /dev/shm files left"
        );
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !process::left_behind(&tag).is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "attempt {attempt}: processes left: {:?}",
                process::left_behind(&tag)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = std::fs::remove_dir_all(&out);
    }
}
