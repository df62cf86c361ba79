//! Hostile and careless clients and users (docs/cosim.md, "Hostile and
//! careless clients"): each test reproduces one way a run used to break, and checks
//! what happens now. Servers listen on loopback; children die with their
//! guards; every wait is bounded.

mod process;
mod skip;

use skip::skip;

use std::process::Command;
use std::time::{Duration, Instant};

use fsin_proto::v1::control_request::Command as Ctl;
use fsin_proto::v1::{ControlRequest, Empty, SliceRatio};
use process::{
    control_when_running, failed_report, fsin, idle_nodes, last_json, ok_report, serve, serve_env,
    signalled, spawn, wait, Guard, FSIN,
};

/// `req` with command `cmd` and no token.
fn request(cmd: Ctl) -> ControlRequest {
    ControlRequest {
        command: Some(cmd),
        ..ControlRequest::default()
    }
}

/// Case 1: `set_slice` with 2^64 - 1 cycles crashed the server ("slices
/// must be contiguous"). Now the request gets an error reply naming the
/// field and the limit, and the run goes on at its ratio to the end.
#[test]
fn a_huge_set_slice_is_refused_and_the_run_goes_on() {
    let (server, url) = serve(&["--nodes", "2", "--slices", "2000", "--json", "topo=torus_2"]);
    let _nodes = idle_nodes(&url);
    let reply = control_when_running(
        &url,
        10,
        "",
        request(Ctl::SetSlice(SliceRatio {
            node_cycles: u64::MAX,
            net_cycles: 200,
        })),
    );
    assert!(!reply.ok);
    assert!(
        reply.error.contains("node_cycles") && reply.error.contains("4294967295"),
        "{}",
        reply.error
    );
    let r = ok_report(&wait(server, Duration::from_secs(60)));
    assert_eq!(r["slices"], 2000, "{r}");
    // 2000 slices of the default 1000 node cycles, 200 network cycles.
    assert_eq!(r["node_cycles"], 2_000_000u64, "{r}");
    assert_eq!(r["net_cycles"], 400_000u64, "{r}");
}

/// Case 1, with a token: an Attach or Control without it is refused.
#[test]
fn a_token_keeps_strangers_out() {
    let (server, url) = serve_env(
        &["--nodes", "2", "--slices", "2000", "--json", "topo=torus_2"],
        &[("FSIN_TOKEN", "s3cret")],
    );
    // Without the token: refused at once.
    let stranger = fsin(
        &["fake-node", "--server", &url, "--node", "0", "--json"],
        Duration::from_secs(20),
    );
    assert!(!stranger.status.success());
    let err = String::from_utf8_lossy(&stranger.stderr);
    assert!(err.contains("wrong or missing token"), "{err}");
    // With it: the run goes.
    let _nodes: Vec<Guard> = (0..2)
        .map(|n| {
            Guard(
                Command::new(FSIN)
                    .args(["fake-node", "--server", &url, "--node", &n.to_string()])
                    .env("FSIN_TOKEN", "s3cret")
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .unwrap(),
            )
        })
        .collect();
    // A shutdown without the token, once the run is under way.
    let reply = control_when_running(
        &url,
        10,
        "s3cret",
        request(Ctl::Shutdown("a stranger says so".into())),
    );
    assert!(!reply.ok);
    assert_eq!(reply.error, "wrong or missing token");
    let r = ok_report(&wait(server, Duration::from_secs(60)));
    assert_eq!(r["slices"], 2000, "{r}");
}

/// Barrier files of process `pid` in /dev/shm.
fn barrier_files(pid: u32) -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&format!("fsin-{pid}-")))
                .collect()
        })
        .unwrap_or_default()
}

/// Case 2: SIGTERM killed `fsin demo` with nothing printed, no `--out`
/// and its barrier file left in /dev/shm. Now it ends the run as Ctrl-C
/// does: the JSON report on stdout and in `--out`, exit 1, file removed.
#[test]
fn sigterm_flushes_the_report_and_removes_the_barrier_file() {
    let dir = std::env::temp_dir().join(format!("fsin-sigterm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let child = spawn(
        &[
            "demo",
            "--nodes",
            "8",
            "--think",
            "30000000",
            // A run that lasts until the signal: without it, the 30,000,000
            // idle cycles between messages are skipped in a few rounds.
            "--no-idle-skip",
            "--json",
            "--out",
            dir.to_str().unwrap(),
            "topo=torus_4_2",
        ]
        .map(String::from),
    );
    let pid = child.0.id();
    let start = Instant::now();
    while barrier_files(pid).is_empty() {
        assert!(start.elapsed() < Duration::from_secs(20), "no barrier file");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill(2) on the pid of our own child.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGTERM) }, 0);
    let r = failed_report(&wait(child, Duration::from_secs(20)));
    assert_eq!(r["end_reason"], "interrupted by SIGTERM", "{r}");
    assert!(r["slices"].as_u64().unwrap() > 0, "{r}");
    assert!(dir.join("report.json").is_file());
    assert_eq!(barrier_files(pid), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Case 2 for `fsin serve`: SIGTERM ends a run of attached node
/// simulators as Ctrl-C does (report on stdout and in `--out`, exit 1),
/// and the nodes are told to stop: both fake nodes exit on their own
/// within seconds, saying why the run ended (exit 1: it did not finish).
#[test]
fn sigterm_stops_fsin_serve_and_its_nodes() {
    let dir = std::env::temp_dir().join(format!("fsin-serve-term-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = dir.to_str().unwrap();
    let args = ["--nodes", "2", "--slices", "1000000000", "--no-idle-skip"];
    let (server, url) = serve(&[&args[..], &["--json", "--out", out]].concat());
    let nodes = idle_nodes(&url);
    let reply = control_when_running(&url, 10, "", request(Ctl::GetStats(Empty {})));
    assert!(reply.ok, "{reply:?}");
    // SAFETY: kill(2) on the pid of our own child.
    assert_eq!(
        unsafe { libc::kill(server.0.id() as i32, libc::SIGTERM) },
        0
    );
    let r = failed_report(&wait(server, Duration::from_secs(20)));
    assert_eq!(r["end_reason"], "interrupted by SIGTERM", "{r}");
    assert!(r["slices"].as_u64().unwrap() >= 10, "{r}");
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(written["end_reason"], "interrupted by SIGTERM", "{written}");
    for node in nodes {
        let o = wait(node, Duration::from_secs(10));
        let log = String::from_utf8_lossy(&[&o.stdout[..], &o.stderr[..]].concat()).into_owned();
        assert_eq!(o.status.code(), Some(1), "{log}");
        assert!(log.contains("interrupted by SIGTERM"), "{log}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Case 2 for `fsin run`: SIGHUP and SIGINT (Ctrl-C) stop the engine
/// where it is, and the report of the cycles simulated so far is printed
/// (exit 1) and, with `--out`, written there too.
#[test]
fn signals_stop_fsin_run_with_a_partial_report() {
    let dir = std::env::temp_dir().join(format!("fsin-run-int-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = ["--out", dir.to_str().unwrap()];
    for (signal, name, extra) in [
        (libc::SIGHUP, "SIGHUP", &[][..]),
        (libc::SIGINT, "SIGINT", &out),
    ] {
        let run = [
            "run",
            "--json",
            "topo=torus_16_16",
            "load=0.1",
            "cycles=2000000000",
        ];
        let o = signalled(&[&run[..], extra].concat(), signal);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        let r = last_json(&o);
        assert_eq!(r["interrupted"], name, "{r}");
        let cycles = r["total_cycles"].as_u64().unwrap();
        assert!(cycles > 0 && cycles < 2_000_000_000, "{r}");
        assert!(r["packets_delivered"].as_u64().unwrap() > 0, "{r}");
        assert!(
            err.contains(&format!("interrupted by {name} at cycle")),
            "{err}"
        );
        if !extra.is_empty() {
            let written: serde_json::Value =
                serde_json::from_slice(&std::fs::read(dir.join("report.json")).unwrap()).unwrap();
            assert_eq!(written["interrupted"], name, "{written}");
            assert_eq!(written["total_cycles"], r["total_cycles"], "{written}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Case 2 for `fsin sweep`: every point stops where it is and the sweep's
/// table (here JSON) still comes out, with exit 1.
#[test]
fn sigterm_stops_a_sweep_with_every_point_reported() {
    let o = signalled(
        &[
            "sweep",
            "--json",
            "topo=torus_8_8",
            "cycles=2000000000",
            "--vary",
            "load=0.1,0.2",
        ],
        libc::SIGTERM,
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = last_json(&o);
    let points = r["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "{r}");
    for p in points {
        assert_eq!(p["report"]["interrupted"], "SIGTERM", "{p}");
        let cycles = p["report"]["total_cycles"].as_u64().unwrap();
        assert!(cycles > 0 && cycles < 2_000_000_000, "{p}");
    }
}

/// Case 3: with /dev/shm full, the barrier file could not be written
/// through its mapping (SIGBUS). Now its space is reserved first, and the
/// run falls back to datagrams with a warning. Runs in a mount namespace
/// with its own small /dev/shm (skipped without CAP_SYS_ADMIN).
#[test]
fn a_full_dev_shm_falls_back_to_datagrams() {
    let script = format!(
        "mount -t tmpfs -o size=8k tmpfs /dev/shm || exit 77; \
         dd if=/dev/zero of=/dev/shm/fill bs=4k count=2 2>/dev/null; \
         exec {FSIN} demo --nodes 4 --json topo=torus_2_2"
    );
    let child = Guard(
        Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c", &script])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("unshare (util-linux) runs"),
    );
    let o = wait(child, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&o.stderr);
    if o.status.code() == Some(77) || err.contains("Operation not permitted") {
        skip(&format!(
            "cannot make a mount namespace here (needs CAP_SYS_ADMIN): {err}"
        ));
        return;
    }
    let r = ok_report(&o);
    assert_eq!(r["frames_delivered"], 12, "{r}");
    assert!(err.contains("shared-memory barrier unavailable"), "{err}");
}

/// Case 5: sizes that overflowed (0 nodes and NaN loads, a panic, or
/// gigabytes before anything ran) are refused with exit 2 and a reason.
#[test]
fn oversized_networks_are_refused_before_anything_runs() {
    let limit = Duration::from_secs(20);
    for args in [
        &["run", "topo=torus_65536_65536"][..],
        &["topology", "topo=torus_65536_65536"],
        &["run", "topo=torus_3000_3000"],
        &["topology", "topo=spinnaker_65536_65536"],
    ] {
        let o = fsin(args, limit);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("at most 1048576"), "{args:?}: {err}");
    }
    // 4096 nodes need more than 1 MiB: the cap names the estimate.
    let o = fsin(&["--max-memory", "1", "run", "topo=torus_64_64"], limit);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("needs about") && err.contains("--max-memory"),
        "{err}"
    );
    // One client process for four billion nodes.
    let o = fsin(
        &[
            "fake-node",
            "--server",
            "http://127.0.0.1:9",
            "--node",
            "0-4294967295",
        ],
        limit,
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("at most 65536"), "{err}");
}

/// Resident memory of process `pid`, bytes.
fn rss(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
}

/// Case 6: one client sending 9000-byte frames into a congested 2-node
/// network grew the server without bound (by the 1.8 MB offered per
/// slice here: 270 MB over the run). Now a node's frames waiting for the
/// network are bounded by `nic_queue_bytes` (4 MiB) and the rest are
/// dropped and counted; the server stays under 100 MB.
#[test]
fn a_frame_flood_keeps_the_server_bounded() {
    const SLICES: u64 = 150;
    let slices = SLICES.to_string();
    let (server, url) = serve(&[
        "--nodes",
        "2",
        "--slices",
        &slices,
        "--json",
        "topo=torus_2",
    ]);
    let pid = server.0.id();
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let sampler = {
        let peak = peak.clone();
        std::thread::spawn(move || {
            while let Some(r) = rss(pid) {
                peak.fetch_max(r, std::sync::atomic::Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let sent = rt.block_on(async {
        let specs = (0..2)
            .map(|id| fsin_proto::v1::NodeSpec {
                node_id: Some(id),
                ..Default::default()
            })
            .collect();
        let mut link = sync_client::NodeLink::attach(&url, "flood", specs)
            .await
            .expect("attach");
        let dst = link.welcome.all_nodes[1].mac.clone();
        let src = link.welcome.all_nodes[0].mac.clone();
        let mut frame = vec![0u8; 9000];
        frame[..6].copy_from_slice(&dst);
        frame[6..12].copy_from_slice(&src);
        frame[12..14].copy_from_slice(&[0x88, 0xb5]);
        let mut sent = 0u64;
        loop {
            match link.next_event().await {
                Ok(sync_client::ServerEvent::Continue(c)) => {
                    for _ in 0..200 {
                        link.send_frame(0, c.start_cycle, frame.clone()).unwrap();
                        sent += 1;
                    }
                    link.slice_done(c.slice, Vec::new()).unwrap();
                }
                Ok(sync_client::ServerEvent::Control(_)) => {}
                Ok(sync_client::ServerEvent::Shutdown(_)) | Err(_) => break sent,
            }
        }
    });
    let r = ok_report(&wait(server, Duration::from_secs(120)));
    sampler.join().unwrap();
    assert!(sent >= 200 * (SLICES - 1), "{sent}");
    let dropped = r["frames_dropped"].as_u64().unwrap();
    assert!(dropped > sent / 2, "{r}");
    assert_eq!(r["per_node"][0]["frames_dropped"], dropped);
    let peak = peak.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!(
        "flood: {sent} frames offered, {dropped} dropped; server peak RSS {} MB",
        peak >> 20
    );
    assert!(peak < 100 << 20, "server peak RSS {} MB", peak >> 20);
}

/// Case 8: a paused server (SIGSTOP, then SIGCONT) blamed a client for
/// stalling. Now the stall check knows the server itself did not run.
#[test]
fn a_paused_server_blames_no_client() {
    let (server, url) = serve(&[
        "--nodes",
        "2",
        "--slices",
        "20000",
        "--node-timeout",
        "1",
        "--json",
        "topo=torus_2",
    ]);
    let _nodes = idle_nodes(&url);
    let reply = control_when_running(&url, 10, "", request(Ctl::GetStats(Empty {})));
    assert!(reply.ok);
    let pid = server.0.id() as i32;
    // SAFETY: kill(2) on the pid of our own child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
    std::thread::sleep(Duration::from_millis(2500));
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGCONT) }, 0);
    let r = ok_report(&wait(server, Duration::from_secs(120)));
    assert_eq!(r["slices"], 20000, "{r}");
    assert_eq!(r["faults"], serde_json::json!([]), "{r}");
}

/// Case 8: `--out` on an existing file simulated to the end, then failed.
/// Now it is bad input (exit 2) found before anything runs, naming the path.
#[test]
fn out_on_a_file_is_refused_before_simulating() {
    let file = std::env::temp_dir().join(format!("fsin-out-file-{}", std::process::id()));
    std::fs::write(&file, "not a directory").unwrap();
    let start = Instant::now();
    let o = fsin(
        &["run", "--out", file.to_str().unwrap(), "cycles=1000000000"],
        Duration::from_secs(20),
    );
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--out")
            && err.contains(file.to_str().unwrap())
            && err.contains("not a directory"),
        "{err}"
    );
    let _ = std::fs::remove_file(&file);
}

/// Case 8: configuration files are read with a size cap, TOML booleans are
/// not numbers, and frame sizes below the headers are refused.
#[test]
fn careless_inputs_are_refused_with_a_reason() {
    let limit = Duration::from_secs(20);
    let o = fsin(&["run", "--config", "/dev/zero"], limit);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a configuration file"));
    let toml = std::env::temp_dir().join(format!("fsin-bool-{}.toml", std::process::id()));
    std::fs::write(&toml, "load = true\n").unwrap();
    let o = fsin(&["run", "--config", toml.to_str().unwrap()], limit);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("load") && err.contains("true"), "{err}");
    let _ = std::fs::remove_file(&toml);
    let o = fsin(&["demo", "--bytes", "10"], limit);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("from 75"));
}
