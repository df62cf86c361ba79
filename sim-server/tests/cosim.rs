//! Co-simulation end to end, as a user runs it: `fsin demo`, `fsin serve`
//! and `fsin fake-node` processes on loopback. Every child is killed when
//! its guard drops, and every wait is bounded.

mod process;
mod skip;

use skip::skip;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use process::{
    control_when_running, deterministic, failed_report, fsin, idle_nodes, last_json, ok_report,
    serve, signalled_leaving, spawn, wait, Guard, FSIN,
};
use serde_json::Value;

#[test]
fn all_to_all_16_nodes_on_a_4x4_torus() {
    let args = [
        "demo",
        "--nodes",
        "16",
        "--workload",
        "all2all",
        "--json",
        "topo=torus_4_4",
    ];
    let a = fsin(&args, Duration::from_secs(60));
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let r = last_json(&a);
    // Every node sends one frame to each of the 15 others.
    assert_eq!(r["frames_sent"], 240);
    assert_eq!(r["frames_delivered"], 240);
    assert_eq!(r["bytes_delivered"], r["bytes_sent"]);
    for n in r["per_node"].as_array().unwrap() {
        assert_eq!(n["app_messages"], 15, "{n}");
        assert_eq!(n["app_corrupt"], 0, "{n}");
    }
    // 128-byte frames are 2 packets of 16 4-byte phits: at least one hop,
    // so no frame crosses in fewer than 1 + 2*16 - 1 network cycles, nor
    // reaches its node sooner than that many cycles x 1000/200.
    assert!(r["frame_net_latency_min"].as_u64().unwrap() >= 32, "{r}");
    assert!(r["frame_latency_min"].as_u64().unwrap() >= 160, "{r}");
    assert_eq!(r["network"]["packets_delivered"], 480);
    // The fake nodes share the server's host: quiet rounds went through
    // the shared-memory barrier.
    let [shm, _, _] = continue_paths(&a);
    assert!(shm > 0, "{}", String::from_utf8_lossy(&a.stderr));
    // Same run with every Continue and SliceDone on the gRPC stream (no
    // fast path), and with datagrams instead of shared memory: the
    // transport must not change any result.
    let mut stream_only = args.to_vec();
    stream_only.push("--no-datagram-sync");
    let b = fsin(&stream_only, Duration::from_secs(60));
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    assert_eq!(deterministic(r.clone()), deterministic(last_json(&b)));
    assert!(matches!(continue_paths(&b), [0, 0, s] if s > 0));
    let mut datagrams = args.to_vec();
    datagrams.push("--no-shared-memory");
    let d = fsin(&datagrams, Duration::from_secs(60));
    assert!(d.status.success(), "{}", String::from_utf8_lossy(&d.stderr));
    assert_eq!(deterministic(r.clone()), deterministic(last_json(&d)));
    assert_eq!(continue_paths(&d)[0], 0);
    // And with one multicast Continue for all, inside a network namespace
    // whose loopback carries multicast.
    let mut multicast = datagrams.clone();
    multicast.extend(["--multicast-continue", "239.255.0.1:45000"]);
    match fsin_in_netns(&multicast, Duration::from_secs(60)) {
        Some(c) => {
            assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
            assert_eq!(deterministic(r), deterministic(last_json(&c)));
        }
        None => skip("the multicast run: cannot create a network namespace here"),
    }
}

/// The links' view of a co-simulation: all-to-all on a 4x4
/// torus sends each node's frames to the 15 others alike, so a packet
/// crosses 2 x 16 / 15 links on average (2 per dimension of 4 over the 16
/// destinations, itself included at 0); the per-link packets of
/// `links.csv` sum to the 480 delivered packets times that. The report's
/// mean utilization is that sum in phits over the 64 links and the
/// measured cycles, and no window is busier than a link can be.
#[test]
fn links_csv_counts_every_hop_of_a_cosimulation() {
    let out = std::env::temp_dir().join(format!("fsin-links-{}", std::process::id()));
    let o = fsin(
        &[
            "demo",
            "--nodes",
            "16",
            "--workload",
            "all2all",
            "--out",
            out.to_str().unwrap(),
            "--json",
            "topo=torus_4_4",
        ],
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = last_json(&o);
    assert_eq!(r["network"]["packets_delivered"], 480);
    let csv = std::fs::read_to_string(out.join("links.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 64, "4 links out of each of 16 nodes");
    let hops: u64 = rows.iter().map(|f| f[4].parse::<u64>().unwrap()).sum();
    assert_eq!(hops * 15, 480 * 32);
    let cycles = r["network"]["cycles"].as_f64().unwrap();
    let avg = r["link_utilization_avg"].as_f64().unwrap();
    let want = hops as f64 * 16.0 / 64.0 / cycles;
    assert!((avg - want).abs() < 1e-9, "{avg} against {want}");
    let (max, peak) = (
        r["link_utilization_max"].as_f64().unwrap(),
        r["link_utilization_peak"].as_f64().unwrap(),
    );
    assert!(avg <= max && max <= peak && peak <= 1.0, "{r}");
    // 480 packets of 16 phits over 16 nodes: some window carried at least
    // the whole phase's mean load.
    let load = r["network"]["accepted_load"].as_f64().unwrap();
    assert!((load - 480.0 * 16.0 / 16.0 / cycles).abs() < 1e-12, "{r}");
    assert!(r["accepted_load_peak"].as_f64().unwrap() >= load, "{r}");
    assert!(std::fs::read_to_string(out.join("utilization.svg"))
        .unwrap()
        .contains("<svg"));
    let _ = std::fs::remove_dir_all(&out);
}

/// A window shorter than a packet's worth of cycles: with `util_window=1`
/// and 20-cycle slices, a link that is busy through a window counts its
/// packets at their headers' cycles, two 16-phit packets in 20 cycles
/// (1.6 phits per cycle) before the cap. A link carries at most one phit
/// per cycle, and the all-to-all of 4 nodes keeps some link busy through
/// some window.
#[test]
fn no_window_is_busier_than_a_link_can_be() {
    let o = fsin(
        &[
            "demo",
            "--nodes",
            "4",
            "--workload",
            "all2all",
            "--slice",
            "20:1000",
            "--json",
            "topo=torus_4",
            "util_window=1",
        ],
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = last_json(&o);
    let peak = r["link_utilization_peak"].as_f64().unwrap();
    assert!(peak <= 1.0, "{peak}");
    assert!(peak >= r["link_utilization_max"].as_f64().unwrap(), "{r}");
}

/// How many Continues the server sent through shared memory, as datagrams
/// and on streams (its last log line about them).
fn continue_paths(o: &Output) -> [u64; 3] {
    let err = String::from_utf8_lossy(&o.stderr);
    let line = err
        .lines()
        .rfind(|l| l.contains("Continues sent:"))
        .unwrap_or_else(|| panic!("no Continue count in the log: {err}"));
    let n: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    n[n.len() - 3..].try_into().unwrap()
}

/// Runs `fsin ARGS` in a new network namespace whose loopback is up with
/// the MULTICAST flag; `None` where namespaces are not permitted (no
/// CAP_SYS_ADMIN).
fn fsin_in_netns(args: &[&str], limit: Duration) -> Option<Output> {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(FSIN);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: between fork and exec the closure only makes system calls
    // on memory it owns.
    unsafe {
        cmd.pre_exec(private_netns);
    }
    match cmd.spawn() {
        Ok(child) => Some(wait(Guard(child), limit)),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => None,
        Err(e) => panic!("cannot start fsin in a network namespace: {e}"),
    }
}

/// README: a server that listens beyond loopback warns that the protocol
/// is not encrypted and asks for `--token`; with a token, the warning says
/// that only its holders can attach; on loopback there is no warning. Run
/// in a network namespace of its own (its only interface is loopback), and
/// ended by the attach timeout.
#[test]
fn a_server_beyond_loopback_warns() {
    let serve = |listen: &str, token: Option<&str>| {
        let mut args = vec!["serve", "--listen", listen, "--nodes", "1"];
        args.extend(["--attach-timeout", "1"]);
        args.extend(token.map(|t| ["--token", t]).into_iter().flatten());
        let Some(o) = fsin_in_netns(&args, Duration::from_secs(30)) else {
            skip("cannot create a network namespace here (needs CAP_SYS_ADMIN)");
            return None;
        };
        assert_eq!(o.status.code(), Some(1), "no node attached: {o:?}");
        Some(String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let Some(open) = serve("0.0.0.0:0", None) else {
        return;
    };
    let warning = "listening beyond loopback (0.0.0.0:0): the fsin.v1 protocol is not encrypted";
    assert!(open.contains(warning), "{open}");
    assert!(open.contains("give --token (or FSIN_TOKEN)"), "{open}");
    let secret = serve("0.0.0.0:0", Some("s3cret")).unwrap();
    assert!(secret.contains(warning), "{secret}");
    assert!(
        secret.contains("only clients with the --token secret can attach"),
        "{secret}"
    );
    let lo = serve("127.0.0.1:0", None).unwrap();
    assert!(!lo.contains("beyond loopback"), "{lo}");
}

/// Exact mode: node 0 pings node 1 (one hop) 5 times, each side replying
/// 100 node cycles after a receipt. A 128-byte frame is one packet of 32
/// phits: h + L - 1 = 32 network cycles, plus nic_latency 20, at 50 node
/// cycles per network cycle = 2600 node cycles one way. Node 0 finishes at
/// 2 * rounds * (one way + think) = 27000, with no false delay at all.
#[test]
fn exact_mode_pingpong_round_trip_is_exact() {
    let o = fsin(
        &[
            "demo",
            "--nodes",
            "2",
            "--workload",
            "pingpong",
            "--mode",
            "exact",
            "--slice",
            "20:1000",
            "--messages",
            "5",
            "--think",
            "100",
            "--json",
            "nic_latency=20",
            "plength=32_4",
        ],
        Duration::from_secs(60),
    );
    let r = ok_report(&o);
    assert_eq!(r["app_cycles"], 2 * 5 * (2600 + 100));
    assert_eq!(r["frame_latency_min"], 2600);
    assert_eq!(r["frame_latency_max"], 2600);
    assert_eq!(r["frame_net_latency_avg"], 32.0);
}

#[test]
fn exact_mode_refuses_slices_longer_than_the_lookahead() {
    let o = fsin(
        &["demo", "--nodes", "2", "--mode", "exact", "nic_latency=10"],
        Duration::from_secs(20),
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("sync_mode") && err.contains("nic_latency=10"),
        "{err}"
    );
}

/// Four fake nodes, node 2 with `fault`: the server must end the run within
/// the timeout, exit 1, and name node 2 in the report.
fn faulty_run(fault: &str) -> Value {
    faulty_run_at(fault, 3, &[])
}

/// [`faulty_run`] with the fault at `slice` and more server `args`.
fn faulty_run_at(fault: &str, slice: u64, args: &[&str]) -> Value {
    let o = run_with_fault(fault, slice, "uniform", args);
    let r = failed_report(&o);
    let faults = r["faults"].as_array().unwrap();
    assert_eq!(faults.len(), 1, "{r}");
    assert_eq!(faults[0]["nodes"], serde_json::json!([2]));
    assert_eq!(faults[0]["client"], "fake-node 2");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("fake-node 2"), "the log names the node: {err}");
    faults[0].clone()
}

/// `fsin serve ARGS` with four `fsin fake-node` processes running
/// `workload` (10 slices at most, a node timeout of 2 s), node 2 with
/// `fault` at `slice`.
fn run_with_fault(fault: &str, slice: u64, workload: &str, args: &[&str]) -> Output {
    let mut server_args = vec![
        "--nodes",
        "4",
        "--node-timeout",
        "2",
        "--slices",
        "10",
        "--json",
        "topo=torus_2_2",
    ];
    server_args.extend(args);
    let (server, url) = serve(&server_args);
    let mut nodes = Vec::new();
    for n in 0..4 {
        let mut args: Vec<String> = ["fake-node", "--server", &url, "--node", &n.to_string()]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.extend([
            "--workload".into(),
            workload.into(),
            "--messages".into(),
            "1000".into(),
        ]);
        if n == 2 {
            args.extend([
                "--fault".into(),
                fault.into(),
                "--fault-slice".into(),
                slice.to_string(),
            ]);
        }
        nodes.push(spawn(&args));
    }
    wait(server, Duration::from_secs(30))
}

/// `fsin serve --timeline` (docs/cosim.md, "A timeline of the rounds"):
/// four `fsin fake-node` processes sending to each other, node 2 losing a
/// datagram at slice 3 (recovered). The timeline (Perfetto) has a flow for
/// every frame the report counts delivered, and states on each node's row.
#[test]
fn a_servers_timeline_has_every_frame() {
    let dir = std::env::temp_dir().join(format!("fsin-serve-tl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("serve.json");
    let o = run_with_fault(
        "lose-datagrams",
        3,
        "all2all",
        &["--no-shared-memory", "--timeline", path.to_str().unwrap()],
    );
    let r = ok_report(&o);
    assert_eq!(r["ok"], true, "{r}");
    let frames = r["frames_delivered"].as_u64().unwrap();
    assert!(frames > 0, "{r}");
    let ev = perfetto_events(&path);
    let flows = ev.iter().filter(|e| e["ph"] == "s").count() as u64;
    assert_eq!(flows, frames, "a flow per frame delivered");
    let rows: std::collections::BTreeSet<u64> = ev
        .iter()
        .filter(|e| e["ph"] == "X")
        .filter_map(|e| e["tid"].as_u64())
        .collect();
    assert_eq!(rows.len(), 4, "every node's row has states: {rows:?}");
    let _ = std::fs::remove_dir_all(dir);
}

/// The events of the Perfetto timeline at `path` (none if it is missing
/// or not a timeline: the test's count then names it).
fn perfetto_events(path: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let tl: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    tl["traceEvents"].as_array().cloned().unwrap_or_default()
}

/// A lost SliceDone datagram and a lost Continue datagram are recovered by
/// the client repeating SliceDone: the run goes on as if nothing happened.
#[test]
fn lost_datagrams_are_recovered() {
    let o = run_with_fault("lose-datagrams", 3, "idle", &["--no-shared-memory"]);
    let r = ok_report(&o);
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["slices"], 10, "{r}");
    assert_eq!(r["faults"].as_array().map(Vec::len), Some(0), "{r}");
}

#[test]
fn a_killed_node_ends_the_run_with_a_report() {
    let f = faulty_run("die");
    assert!(
        f["reason"].as_str().unwrap().contains("disconnected"),
        "{f}"
    );
}

#[test]
fn a_stalled_node_ends_the_run_within_the_timeout() {
    let f = faulty_run("stall");
    assert!(f["reason"].as_str().unwrap().contains("stalled"), "{f}");
    assert!(
        f["reason"].as_str().unwrap().contains("within 2.0 s"),
        "{f}"
    );
    assert_eq!(f["slice"], 3);
}

/// Nodes start in the first slice (a QEMU guest restored from its
/// checkpoint): it may take as long as attaching, when that is longer.
#[test]
fn the_first_slice_may_take_the_attach_timeout() {
    let f = faulty_run_at("stall", 0, &["--attach-timeout", "4"]);
    assert!(
        f["reason"].as_str().unwrap().contains("within 4.0 s"),
        "{f}"
    );
    assert_eq!(f["slice"], 0);
}

#[test]
fn a_garbage_message_ends_the_run_with_a_report() {
    let f = faulty_run("garbage");
    assert!(f["reason"].as_str().unwrap().contains("malformed"), "{f}");
}

#[test]
fn missing_nodes_are_named_after_the_attach_timeout() {
    let (server, _) = serve(&[
        "--nodes",
        "3",
        "--attach-timeout",
        "2",
        "--json",
        "topo=torus_2_2",
    ]);
    let o = wait(server, Duration::from_secs(20));
    assert_eq!(o.status.code(), Some(1));
    let r = last_json(&o);
    let why = r["end_reason"].as_str().unwrap();
    assert!(why.contains("missing node ids 0, 1, 2"), "{why}");
}

/// Warm-up: node 0 sends CLEAR_STATS at cycle 0 of a 10-slice warm-up
/// slice, so the all-to-all sends of cycles 1000..9000 (9 per node) skip
/// the network and the other 6 per node are measured; every frame is in
/// the pcap capture, stamped with its send time (cycles / 200 MHz).
#[test]
fn warm_up_ends_with_the_magic_packet_and_pcap_captures_every_frame() {
    let dir = std::env::temp_dir().join(format!("fsin-cosim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("run.pcap");
    let o = fsin(
        &[
            "demo",
            "--nodes",
            "16",
            "--warmup",
            "--warmup-factor",
            "10",
            "--clear-stats-at",
            "0",
            "--pcap",
            pcap.to_str().unwrap(),
            "--json",
        ],
        Duration::from_secs(60),
    );
    let r = ok_report(&o);
    assert_eq!(r["measured_from_slice"], 1);
    assert_eq!(r["frames_bypassed"], 16 * 9);
    assert_eq!(r["frames_sent"], 16 * 6);
    assert_eq!(r["frames_delivered"], 16 * 6);
    let bytes = std::fs::read(&pcap).unwrap();
    let mut reader = pcap_file::pcap::PcapReader::new(bytes.as_slice()).unwrap();
    let mut stamps = Vec::new();
    while let Some(p) = reader.next_packet() {
        let p = p.unwrap();
        assert_eq!(p.data.len(), 128);
        stamps.push(p.timestamp);
    }
    assert_eq!(stamps.len(), 240);
    // The first sends leave at node cycle 1000 = 5 us at 200 MHz.
    assert_eq!(stamps[0], Duration::from_micros(5));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The slice-ratio study on the exact-mode ping-pong above (3 rounds, 100
/// node cycles of processing): with slices no longer than nic_latency the
/// lock-step run is as exact as the exact mode, 2 * 3 * 2700 = 16200. With
/// 10000-cycle slices every frame is delivered at the next slice boundary:
/// node 0 sends at 100, node 1 gets it at 10000 and answers at 10100, node 0
/// gets the answer at 20000, so each round takes 20000 and the run 60000.
/// With `--timelines perfetto`, each run writes its timeline into --out.
#[test]
fn cosim_sweep_shows_the_false_delay_of_long_slices() {
    let dir = std::env::temp_dir().join(format!("fsin-sweep-{}", std::process::id()));
    let o = fsin(
        &[
            "cosim-sweep",
            "--nodes",
            "2",
            "--messages",
            "3",
            "--think",
            "100",
            "--slices",
            "20:1000,200:10000",
            "--json",
            "--out",
            dir.to_str().unwrap(),
            "--timelines",
            "perfetto",
            "nic_latency=20",
            "plength=32_4",
        ],
        Duration::from_secs(60),
    );
    let r = ok_report(&o);
    let p = r["points"].as_array().unwrap();
    let cycles: Vec<(&str, u64)> = p
        .iter()
        .map(|p| {
            (
                p["mode"].as_str().unwrap(),
                p["app_cycles"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        cycles,
        [("lockstep", 16200), ("lockstep", 60000), ("exact", 16200)]
    );
    let svg = std::fs::read_to_string(dir.join("sweep.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("exact (reference)"));
    // The accuracy-versus-speed curve: one labelled point per lock-step
    // run, on the one curve the legend names.
    let tradeoff = std::fs::read_to_string(dir.join("tradeoff.svg")).unwrap();
    let texts: Vec<&str> = tradeoff.lines().map(str::trim).collect();
    for label in ["20:1000", "200:10000", "lockstep"] {
        assert_eq!(
            texts.iter().filter(|t| **t == label).count(),
            1,
            "{label}: {tradeoff}"
        );
    }
    let csv = std::fs::read_to_string(dir.join("sweep.csv")).unwrap();
    assert_eq!(csv.lines().count(), 4, "{csv}");
    // --timelines: a timeline per run, named by its mode and slice, each
    // with the ping-pong's 6 frames (3 rounds, each way) as flows.
    for run in ["lockstep-20-1000", "lockstep-200-10000", "exact-20-1000"] {
        let path = dir.join(format!("timeline-{run}.json"));
        let ev = perfetto_events(&path);
        let flows = ev.iter().filter(|e| e["ph"] == "s").count();
        assert_eq!(flows, 6, "{}", path.display());
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Causal trace replay in exact mode, hand-computed with the one-way time
/// of the ping-pong test above (a 53-byte message is one 128-byte frame,
/// one packet: 2600 node cycles one way). Node 0 computes 100 and sends
/// tag 7 (arrives 2700); node 1, blocked on it, computes 100 and sends tag
/// 8 at 2800 (arrives 5400), computes 1000 and sends tag 9 at 3800 (arrives
/// 6400, before node 0 posts its receive: it waits in the pending list).
/// Node 0 receives tag 8 at 5400, computes 2000 (7400), receives tag 9
/// at once, computes 50: done at 7450; node 1 at 3800.
#[test]
fn trace_replay_is_causal_and_exact() {
    let dir = std::env::temp_dir().join(format!("fsin-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("pingpong.trc");
    std::fs::write(
        &trace,
        "c 0 100\ns 0 1 7 53\nr 1 0 8 53\nc 0 2000\nr 1 0 9 53\nc 0 50\n\
         r 0 1 7 53\nc 1 100\ns 1 0 8 53\nc 1 1000\ns 1 0 9 53\n",
    )
    .unwrap();
    let run = |file: &std::path::Path| {
        let exact = [
            "--mode",
            "exact",
            "--slice",
            "20:1000",
            "--json",
            "nic_latency=20",
            "plength=32_4",
        ];
        ok_report(&demo_trace(file, &exact))
    };
    let r = run(&trace);
    assert_eq!(r["app_cycles"], 7450, "{r}");
    assert_eq!(r["per_node"][0]["app_done_cycle"], 7450);
    assert_eq!(r["per_node"][1]["app_done_cycle"], 3800);
    assert_eq!(r["per_node"][0]["app_messages"], 2);
    // 3000 bytes need ceil(3000 / 1439) = 3 frames of at most 1514 bytes.
    let big = dir.join("big.trc");
    std::fs::write(&big, "s 0 1 1 3000\nr 0 1 1 3000\n").unwrap();
    let r = run(&big);
    assert_eq!(
        (r["frames_sent"].as_u64(), r["frames_delivered"].as_u64()),
        (Some(3), Some(3))
    );
    assert_eq!(r["per_node"][1]["app_messages"], 1);
    assert_eq!(r["per_node"][1]["app_corrupt"], 0);
    // A node id beyond the network: exit 2 naming file and line.
    let bad = dir.join("bad.trc");
    std::fs::write(&bad, "c 0 5\ns 0 7 1 10\n").unwrap();
    let o = demo_trace(&bad, &[]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.trc:2: task 7 is beyond the 2 nodes"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// `fsin demo --nodes 2 --workload trace FILE ARGS` (one minute at most).
fn demo_trace(file: &std::path::Path, args: &[&str]) -> Output {
    let file = file.to_str().unwrap();
    let mut all = vec!["demo", "--nodes", "2", "--workload", "trace", file];
    all.extend(args);
    fsin(&all, Duration::from_secs(60))
}

/// A trace whose receive is never matched: node 1 waits for tag 9, which
/// node 0 never sends. Once node 0 has finished and node 1's message of
/// tag 7 has arrived, nothing is in flight and node 1 waits: the run ends
/// as a deadlock (exit 3) naming the node and its pending receive, within
/// a few slices instead of running forever.
#[test]
fn a_trace_that_deadlocks_ends_with_a_report() {
    let dir = std::env::temp_dir().join(format!("fsin-deadlock-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("unmatched.trc");
    std::fs::write(&trace, "s 0 1 7 100\nr 0 1 7 100\nr 0 1 9 100\n").unwrap();
    let o = demo_trace(&trace, &["--json"]);
    let _ = std::fs::remove_dir_all(dir);
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = last_json(&o);
    assert_eq!(r["deadlock"], true, "{r}");
    assert_eq!(r["ok"], false);
    assert!(r["per_node"][0]["app_done_cycle"].is_u64(), "{r}");
    assert_eq!(r["per_node"][0]["waiting_for"], Value::Null);
    assert_eq!(
        r["per_node"][1]["waiting_for"],
        "receive from node 0, tag 9: trace event 2 of 2"
    );
    assert_eq!(r["per_node"][1]["app_messages"], 0);
    assert!(
        r["end_reason"]
            .as_str()
            .unwrap()
            .contains("node 1 waits for receive from node 0, tag 9"),
        "{r}"
    );
    // Found within a few slices of the last delivery, not at a limit.
    assert!(r["slices"].as_u64().unwrap() < 10, "{r}");
}

/// Ctrl-C (SIGINT) during a run: the report of what was simulated is
/// still printed, the run counts as failed (exit 1), and the fake nodes
/// are told to stop: they exit on their own (none had to be killed), and
/// none outlives the command.
#[test]
fn ctrl_c_flushes_the_report() {
    let args = [
        "demo",
        "--nodes",
        "4",
        "--workload",
        "uniform",
        "--messages",
        "100000000",
        "--json",
        "topo=torus_2_2",
    ];
    let (out, left) = signalled_leaving(&args, libc::SIGINT);
    let r = failed_report(&out);
    assert!(
        r["end_reason"].as_str().unwrap().contains("interrupted"),
        "{r}"
    );
    assert!(r["slices"].as_u64().unwrap() > 0, "{r}");
    assert!(r["frames_delivered"].as_u64().unwrap() > 0, "{r}");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(!log.contains("were killed"), "{log}");
    assert_eq!(left, Vec::<String>::new());
}

/// Parallel mode (the network simulates slice k while the nodes run k+1):
/// every frame still arrives intact, and two runs give identical reports.
#[test]
fn parallel_mode_is_deterministic() {
    let args = [
        "demo",
        "--nodes",
        "16",
        "--workload",
        "all2all",
        "--mode",
        "parallel",
        "--json",
        "topo=torus_4_4",
    ];
    let a = ok_report(&fsin(&args, Duration::from_secs(60)));
    assert_eq!(a["frames_delivered"], 240, "{a}");
    for n in a["per_node"].as_array().unwrap() {
        assert_eq!(
            (n["app_messages"].as_u64(), n["app_corrupt"].as_u64()),
            (Some(15), Some(0)),
            "{n}"
        );
    }
    // Again, measuring the overhead: the same run, then its packets
    // replayed through the engine alone, which takes a share of the run's
    // wall time (the nodes' rounds are most of it here).
    let mut overhead = args.to_vec();
    overhead.push("--overhead");
    let b = ok_report(&fsin(&overhead, Duration::from_secs(60)));
    assert!(
        a["overhead"].is_null() && a["engine_alone_s"].is_null(),
        "{a}"
    );
    let (alone, wall) = (b["engine_alone_s"].as_f64(), b["wall_s"].as_f64());
    let (Some(alone), Some(wall)) = (alone, wall) else {
        panic!("no engine_alone_s: {b}");
    };
    assert!(alone > 0.0 && alone < wall, "{b}");
    // serde_json reads floats back to within a unit in the last place.
    let overhead = b["overhead"].as_f64().unwrap_or(f64::NAN);
    assert!((overhead - wall / alone).abs() <= 1e-12 * overhead, "{b}");
    assert_eq!(deterministic(a), deterministic(b));
}

/// The slice ratio changed at run time through the Control RPC applies from
/// the next slice on, to both clocks at once: with `a` slices at 1000:200
/// (node:network cycles) and the rest at 3000:500, the report's node and
/// network cycles must both be explained by the same `a`.
#[test]
fn slice_ratio_changes_at_run_time() {
    use fsin_proto::v1::control_request::Command as Ctl;
    use fsin_proto::v1::{ControlRequest, SliceRatio};

    const SLICES: u64 = 20_000;
    let slices = SLICES.to_string();
    let (server, url) = serve(&[
        "--nodes",
        "2",
        "--slices",
        &slices,
        "--slice",
        "200:1000",
        "--json",
        "topo=torus_2",
    ]);
    let _nodes = idle_nodes(&url);
    // Once the run is under way, change the ratio.
    let reply = control_when_running(
        &url,
        100,
        "",
        ControlRequest {
            command: Some(Ctl::SetSlice(SliceRatio {
                node_cycles: 3000,
                net_cycles: 500,
            })),
            ..ControlRequest::default()
        },
    );
    assert!(reply.ok, "{}", reply.error);
    let r = ok_report(&wait(server, Duration::from_secs(60)));
    assert_eq!(r["slices"], SLICES);
    let node = r["node_cycles"].as_u64().unwrap();
    let net = r["net_cycles"].as_u64().unwrap();
    // node = a*1000 + (S-a)*3000 and net = a*200 + (S-a)*500.
    let a_node = (SLICES * 3000 - node) / 2000;
    let a_net = (SLICES * 500 - net) / 300;
    assert_eq!(a_node * 1000 + (SLICES - a_node) * 3000, node, "{r}");
    assert_eq!(a_net * 200 + (SLICES - a_net) * 500, net, "{r}");
    assert_eq!(a_node, a_net, "both clocks switch at the same slice");
    assert!(
        (100..SLICES).contains(&a_node),
        "switched at slice {a_node}"
    );
}

/// The region-of-interest wire from C (docs/contracts.md, "Region of
/// interest"): `fsin-roi-mark` (mpi-trace/fsin-roi-mark.c over
/// fsin_roi.h, built here with the host's C compiler) sends the datagram
/// that nic-bridge reads (`qemu_adapter::qemu::roi::read`: rank 1 of a
/// world of 2, begin then end) to FSIN_MPITRACE_TO, and a begin returns
/// only once a go reaches port 5042; bad arguments exit 2.
#[test]
fn the_region_marks_of_c_programs_are_what_the_bridge_reads() {
    use qemu_adapter::qemu::roi::{read, Said};
    let exe = build_c(
        "fsin-roi-mark",
        &["mpi-trace/fsin-roi-mark.c"],
        &["mpi-trace"],
    );
    let host = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    host.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let to = format!("127.0.0.1:{}", host.local_addr().unwrap().port());
    let mark = |args: &[&str]| {
        Command::new(&exe)
            .args(args)
            .env("FSIN_MPITRACE_TO", &to)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("fsin-roi-mark starts")
    };
    // The datagram as the bridge sees it: behind 42 bytes of headers.
    let said = || {
        let mut d = [0u8; 64];
        let n = host.recv(&mut d).expect("a region datagram");
        assert_eq!(n, 24, "{:?}", &d[..n]);
        let mut frame = vec![0u8; 42];
        frame.extend_from_slice(&d[..n]);
        read(&frame).expect("a region datagram the bridge reads")
    };
    let mut begin = mark(&["begin", "1", "2"]);
    assert_eq!(said(), Said::Begin { rank: 1, size: 2 });
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        begin.try_wait().unwrap().is_none(),
        "returned before the go"
    );
    let go = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    go.send_to(b"G\x01", "127.0.0.1:5042").unwrap();
    let o = wait(Guard(begin), Duration::from_secs(10));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let end = mark(&["end", "1", "2"]);
    assert_eq!(said(), Said::End { rank: 1, size: 2 });
    assert!(wait(Guard(end), Duration::from_secs(10)).status.success());
    for bad in [
        &["begin", "2", "2"][..],
        &["begin", "-1", "2"],
        &["start"],
        &[],
    ] {
        let o = wait(Guard(mark(bad)), Duration::from_secs(10));
        assert_eq!(o.status.code(), Some(2), "{bad:?}");
    }
}

/// Compiles the C program `name` from `sources` (paths relative to the
/// workspace) against the C ABI's header and the static library cargo
/// built for this test, with the C compiler the `cc` crate finds (`CC`,
/// `CFLAGS` respected); `includes` are more header directories.
fn build_c(name: &str, sources: &[&str], includes: &[&str]) -> std::path::PathBuf {
    let target = std::path::Path::new(FSIN).parent().expect("target dir");
    // Built as a dependency of this package it stays in deps/ (cargo
    // copies it up only for `cargo build -p sync-client`).
    let lib = target.join("deps/libsync_client.a");
    assert!(lib.exists(), "{} was not built", lib.display());
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = target.join(format!("c-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let triple = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    let compiler = cc::Build::new()
        .cargo_metadata(false)
        .target(&triple)
        .host(&triple)
        .opt_level(1)
        .out_dir(&out)
        .get_compiler();
    let exe = out.join(name);
    let mut cmd = compiler.to_command();
    cmd.args(sources.iter().map(|s| root.join(s)));
    for dir in includes.iter().chain(&["sync-client/include"]) {
        cmd.arg("-I").arg(root.join(dir));
    }
    cmd.args(["-Wall", "-Wextra", "-Werror", "-std=gnu11", "-o"])
        .arg(&exe)
        .arg(&lib)
        // What the Rust standard library needs from the C library
        // (`rustc --print native-static-libs`).
        .args([
            "-lgcc_s",
            "-lutil",
            "-lrt",
            "-lpthread",
            "-lm",
            "-ldl",
            "-lc",
        ]);
    let o = cmd.output().expect("the C compiler runs");
    assert!(
        o.status.success(),
        "{name} does not build: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    exe
}

/// Runs the C program `exe URL` against `fsin serve ARGS` and returns its
/// stdout (it must succeed) and the server's report.
fn run_c(exe: &std::path::Path, server_args: &[&str]) -> (String, Value) {
    let (server, url) = serve(server_args);
    let client = Command::new(exe)
        .arg(&url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the C program starts");
    let c = wait(Guard(client), Duration::from_secs(60));
    let _ = std::fs::remove_dir_all(exe.parent().unwrap());
    let out = String::from_utf8_lossy(&c.stdout).into_owned();
    assert!(
        c.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&c.stderr)
    );
    (out, ok_report(&wait(server, Duration::from_secs(30))))
}

/// The C ABI as a Simics module uses it: a C program linked with the
/// static library runs two clients through `fsin serve`. Node 0's frame
/// reaches node 1 intact, slices advance until the server's slice limit,
/// and wrong calls return their error codes (checked inside the program).
#[test]
fn a_c_program_runs_two_clients_through_the_server() {
    let exe = build_c("two_clients", &["sync-client/tests/c/two_clients.c"], &[]);
    let (out, r) = run_c(
        &exe,
        &["--nodes", "2", "--slices", "12", "--json", "topo=torus_2"],
    );
    assert!(out.contains("all checks passed"), "{out}");
    assert!(out.contains("node 1: ok, 1 frame(s) received"), "{out}");
    assert_eq!(r["slices"], 12, "{r}");
    assert_eq!(r["frames_sent"], 1, "{r}");
    assert_eq!(r["frames_delivered"], 1, "{r}");
    assert_eq!(r["per_node"][0]["client"], "C client 0", "{r}");
}

/// The Simics module example (`examples/simics/`) built against the
/// stand-in Simics headers and run on the fake Simics clock: two machines,
/// machine 0's NIC sends a frame at cycle 1500 (slice 1 of 1000 cycles),
/// machine 1's NIC gets it at the start of slice 2 (lock-step), both stop
/// when the server ends the run.
#[test]
fn the_simics_module_example_runs_on_a_fake_simics_clock() {
    let exe = build_c(
        "test_module",
        &[
            "examples/simics/fsin-eth-link/fsin_eth_link.c",
            "examples/simics/standin/fake_simics.c",
            "examples/simics/standin/test_module.c",
        ],
        &["examples/simics/standin"],
    );
    let args = [
        "--nodes",
        "2",
        "--slices",
        "10",
        "--slice",
        "200:1000",
        "--json",
        "topo=torus_2",
    ];
    let (out, r) = run_c(&exe, &args);
    assert!(out.contains("module checks passed"), "{out}");
    assert!(out.contains("the last at cycle 2000;"), "{out}");
    assert!(
        out.contains("machines stopped at cycles 10000 and 10000"),
        "{out}"
    );
    assert_eq!(r["frames_delivered"], 1, "{r}");
    assert_eq!(r["per_node"][1]["client"], "link1", "{r}");
}

/// Moves the calling thread (and what it starts later) into a new network
/// namespace whose loopback is up with the MULTICAST flag. Only system
/// calls on memory it owns, so it may run between fork and exec.
/// PermissionDenied where namespaces are not permitted (no CAP_SYS_ADMIN).
fn private_netns() -> std::io::Result<()> {
    // SAFETY: plain system calls on memory this function owns.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNET) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (d, s) in ifr.ifr_name.iter_mut().zip(b"lo\0") {
            *d = *s as libc::c_char;
        }
        ifr.ifr_ifru.ifru_flags =
            (libc::IFF_UP | libc::IFF_LOOPBACK | libc::IFF_RUNNING | libc::IFF_MULTICAST)
                as libc::c_short;
        let r = libc::ioctl(fd, libc::SIOCSIFFLAGS, &ifr);
        libc::close(fd);
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A node as an INSEE Simics module drives it: the legacy sync messages
/// on the multicast group and its frame connection.
struct LegacyNode {
    mac: [u8; 6],
    sync: std::net::UdpSocket,
    frames: std::net::TcpStream,
    /// The last CONTINUE taken (a repeat of it is skipped).
    last: Option<(u64, u64)>,
}

const LEGACY_GROUP: std::net::Ipv4Addr = std::net::Ipv4Addr::new(225, 0, 0, 37);

fn legacy_sync_socket() -> std::net::UdpSocket {
    let lo = std::net::Ipv4Addr::LOCALHOST;
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None).unwrap();
    s.set_reuse_address(true).unwrap();
    s.bind(&std::net::SocketAddr::from((LEGACY_GROUP, 12345)).into())
        .unwrap();
    s.join_multicast_v4(&LEGACY_GROUP, &lo).unwrap();
    s.set_multicast_if_v4(&lo).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.into()
}

impl LegacyNode {
    /// CONNECT (answered by OK with its MAC) and the frame connection
    /// (its MAC, answered by OK\0).
    fn connect(id: u8) -> LegacyNode {
        use std::io::{Read, Write};
        let mac = [0x00, 0x16, 0x3e, 0x00, 0x00, id];
        let sync = legacy_sync_socket();
        let mut msg = b"CONNECT:".to_vec();
        msg.extend(1u64.to_le_bytes());
        msg.push(b':');
        msg.extend(mac);
        sync.send_to(&msg, (LEGACY_GROUP, 12345)).unwrap();
        let mut want = b"OK:".to_vec();
        want.extend(mac);
        let mut buf = [0u8; 64];
        loop {
            let n = sync.recv(&mut buf).expect("OK for CONNECT within 5 s");
            if buf[..n] == want[..] {
                break;
            }
        }
        let mut frames = std::net::TcpStream::connect(("127.0.0.1", 8082)).unwrap();
        frames.write_all(&mac).unwrap();
        let mut ok = [0u8; 3];
        frames.read_exact(&mut ok).unwrap();
        assert_eq!(&ok, b"OK\0");
        frames.set_nonblocking(true).unwrap();
        LegacyNode {
            mac,
            sync,
            frames,
            last: None,
        }
    }

    /// Waits for the next CONTINUE: (first node cycle, node cycles), or
    /// None once the server has stopped sending them. A repeat of the last
    /// one (the server resends it when a TS is late) is skipped.
    fn next_continue(&mut self) -> Option<(u64, u64)> {
        let mut buf = [0u8; 64];
        loop {
            let n = self.sync.recv(&mut buf).ok()?;
            if n == 25 && buf.starts_with(b"CONTINUE:") {
                let u = |r: std::ops::Range<usize>| u64::from_le_bytes(buf[r].try_into().unwrap());
                let c = (u(9..17), u(17..25));
                if self.last != Some(c) {
                    self.last = Some(c);
                    return Some(c);
                }
            }
        }
    }

    fn timestamp(&self, time: u64) {
        let mut msg = b"TS:".to_vec();
        msg.extend(self.mac);
        msg.push(b':');
        msg.extend(time.to_le_bytes());
        self.sync.send_to(&msg, (LEGACY_GROUP, 12345)).unwrap();
    }

    fn send(&mut self, frame: &[u8]) {
        use std::io::Write;
        let mut msg = (frame.len() as u16).to_le_bytes().to_vec();
        msg.extend(frame);
        self.frames.set_nonblocking(false).unwrap();
        self.frames.write_all(&msg).unwrap();
        self.frames.set_nonblocking(true).unwrap();
    }

    /// Every frame delivered so far (`when` must be 0); None once the
    /// server closed the connection.
    fn received(&mut self, pending: &mut Vec<u8>) -> Option<Vec<Vec<u8>>> {
        use std::io::Read;
        let mut buf = [0u8; 16384];
        loop {
            match self.frames.read(&mut buf) {
                Ok(0) => return None,
                Ok(n) => pending.extend(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => return None,
            }
        }
        let mut out = Vec::new();
        while pending.len() >= 10 {
            assert_eq!(pending[..8], [0; 8], "when = 0 slices of extra delay");
            let len = usize::from(u16::from_le_bytes([pending[8], pending[9]]));
            if pending.len() < 10 + len {
                break;
            }
            out.push(pending[10..10 + len].to_vec());
            pending.drain(..10 + len);
        }
        Some(out)
    }
}

/// Opens a frame connection with `mac` (a node's, already connected) and
/// returns whether the server answered OK.
fn steal_frames(mac: [u8; 6]) -> bool {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", 8082)).unwrap();
    s.write_all(&mac).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut b = [0u8; 3];
    s.read(&mut b).unwrap_or(0) != 0
}

/// An IPv4 UDP frame from `src` to `dst` with `payload`.
fn udp_frame(dst: [u8; 6], src: [u8; 6], ip_dst: [u8; 4], payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 42];
    f[..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&src);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[23] = 17;
    f[26..30].copy_from_slice(&[10, 0, 0, src[5] + 1]);
    f[30..34].copy_from_slice(&ip_dst);
    f[34..36].copy_from_slice(&33434u16.to_be_bytes());
    f[36..38].copy_from_slice(&7u16.to_be_bytes());
    f.extend(payload);
    f
}

/// `fsin serve --legacy-exd` with two nodes speaking INSEE's protocol,
/// written here from the facts of docs/contracts.md, inside a network namespace this
/// test makes (multicast on loopback). Node 0's frame reaches node 1
/// (`when` 0); node 0's CLEAR_STATS magic packet comes back with its
/// addresses swapped; a garbage datagram, a frame connection with a MAC
/// outside the network and node 1's oversized frame are refused (the
/// connection closed) while the run goes on to its slice limit. Hostile
/// and lossy cases: a frame connection that never sends its MAC holds
/// nothing up; a second connection with node 0's MAC is refused and node 0
/// keeps its frames; node 1 misses the CONTINUE of one slice and gets it
/// again, well inside the node timeout.
#[test]
fn legacy_exd_nodes_run_unchanged() {
    let t = std::thread::spawn(|| {
        match private_netns() {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                skip("cannot create a network namespace here (needs CAP_SYS_ADMIN)");
                return None;
            }
            Err(e) => panic!("cannot set up a network namespace: {e}"),
        }
        let server = spawn(
            &[
                "serve",
                "--legacy-exd",
                "--nodes",
                "2",
                "--slices",
                "12",
                "--json",
                "topo=torus_2",
            ]
            .map(String::from),
        );
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", 8082)).is_err() {
            assert!(start.elapsed() < Duration::from_secs(20), "no frame port");
            std::thread::sleep(Duration::from_millis(20));
        }
        // Never sends its MAC: closed after 5 s, meanwhile the nodes attach.
        let _idle = std::net::TcpStream::connect(("127.0.0.1", 8082)).unwrap();
        // Refused: a MAC whose node id (last byte) is outside the network,
        // and a sync message of the wrong length.
        let mut rogue = std::net::TcpStream::connect(("127.0.0.1", 8082)).unwrap();
        {
            use std::io::{Read, Write};
            rogue.write_all(&[0, 0x16, 0x3e, 0, 0, 9]).unwrap();
            rogue
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            let mut b = [0u8; 3];
            assert_eq!(rogue.read(&mut b).unwrap_or(0), 0, "closed without OK");
        }
        legacy_sync_socket()
            .send_to(b"TS:garbage", (LEGACY_GROUP, 12345))
            .unwrap();
        let nodes: Vec<_> = (0..2u8)
            .map(|id| {
                std::thread::spawn(move || {
                    let mut n = LegacyNode::connect(id);
                    let peer = [0x00, 0x16, 0x3e, 0x00, 0x00, 1 - id];
                    let magic_mac = [0x11, 0x22, 0x33, 0x44, 0x55, 0x66];
                    let mut got = Vec::new();
                    let mut pending = Vec::new();
                    let mut slices = 0;
                    let mut open = true;
                    // Node 0: whether a second connection with its MAC got
                    // OK. Node 1: whether it has "lost" a CONTINUE.
                    let mut stolen = None;
                    let mut lost = false;
                    while let Some((start, len)) = n.next_continue() {
                        if (id, slices, lost) == (1, 4, false) {
                            // Take it as lost: no TS, wait for it again.
                            lost = true;
                            n.last = None;
                            continue;
                        }
                        slices += 1;
                        if (id, slices) == (0, 2) {
                            stolen = Some(steal_frames(n.mac));
                        }
                        if open {
                            match n.received(&mut pending) {
                                Some(f) => got.extend(f),
                                None => open = false,
                            }
                        }
                        match (id, slices) {
                            (0, 2) => n.send(&udp_frame(peer, n.mac, [10, 0, 0, 2], &[42; 100])),
                            (0, 3) => n.send(&udp_frame(magic_mac, n.mac, [1, 2, 3, 4], &[1; 18])),
                            (1, 6) => n.send(&vec![0u8; 9100]),
                            _ => {}
                        }
                        n.timestamp(start + len);
                    }
                    (slices, got, open, stolen, lost)
                })
            })
            .collect();
        let results: Vec<_> = nodes.into_iter().map(|h| h.join().unwrap()).collect();
        Some((wait(server, Duration::from_secs(60)), results))
    });
    let Some((o, results)) = t.join().unwrap() else {
        return;
    };
    let r = ok_report(&o);
    assert_eq!(r["slices"], 12, "{r}");
    assert_eq!(r["ok"], true, "{r}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("node id 9 (its last byte) is outside the 2 nodes"),
        "{err}"
    );
    assert!(err.contains("malformed sync message"), "{err}");
    assert!(
        err.contains("node 1 frame connection: a frame of 9100 bytes"),
        "{err}"
    );
    let (slices0, got0, open0, stolen0, _) = &results[0];
    let (slices1, got1, open1, _, lost1) = &results[1];
    assert_eq!(*stolen0, Some(false), "the second connection got no OK");
    assert!(*lost1, "node 1 lost one CONTINUE");
    assert!(err.contains("sent no MAC within"), "{err}");
    assert!(err.contains("which has one; refused"), "{err}");
    assert!(err.contains("CONTINUE sent again"), "{err}");
    assert_eq!((*slices0, *slices1), (12, 12));
    assert!(
        *open0 && !*open1,
        "node 1's connection closed after its oversized frame"
    );
    // Node 1 received node 0's frame intact.
    assert_eq!(got1.len(), 1);
    assert_eq!(got1[0][42..], [42; 100]);
    assert_eq!(got1[0][6..12], [0x00, 0x16, 0x3e, 0x00, 0x00, 0]);
    // Node 0 received its magic packet back, addresses swapped.
    assert_eq!(got0.len(), 1, "{err}");
    assert_eq!(got0[0][6..12], [0x11, 0x22, 0x33, 0x44, 0x55, 0x66]);
    assert_eq!(got0[0][26..30], [1, 2, 3, 4]);
    assert_eq!(got0[0][42], 1);
}

/// Idle skipping (`SliceDone.idle_until`): fake nodes that think for
/// 100,000 node cycles between ping-pong messages leave 99 of every 101
/// slices with nothing to do; the server runs them without a round each,
/// and the report is the same as with one round per slice. In lockstep a
/// frame sent during a slice reaches its node at the next slice's start,
/// so with think times that are whole slices each message takes exactly
/// one slice (1000 node cycles) and a node that pings 5 times finishes at
/// 2 * 5 * (100,000 + 1000) node cycles. In parallel mode the network runs
/// a slice's frames during the next slice, and delivers them at the start
/// of the one after: two slices a message, 2 * 5 * (100,000 + 2000).
#[test]
fn idle_slices_are_skipped_with_the_same_results() {
    for (mode, message_cycles) in [("lockstep", 1000), ("parallel", 2000)] {
        let args = |skip: bool| {
            let mut a = vec![
                "demo",
                "--workload",
                "pingpong",
                "--think",
                "100000",
                "--messages",
                "5",
                "--mode",
                mode,
                "--json",
                "topo=torus_4_4",
            ];
            if !skip {
                a.push("--no-idle-skip");
            }
            a
        };
        let skipping = fsin(&args(true), Duration::from_secs(60));
        assert!(
            skipping.status.success(),
            "{mode}: {}",
            String::from_utf8_lossy(&skipping.stderr)
        );
        let stepping = fsin(&args(false), Duration::from_secs(60));
        assert!(
            stepping.status.success(),
            "{mode}: {}",
            String::from_utf8_lossy(&stepping.stderr)
        );
        let (mut a, mut b) = (
            deterministic(last_json(&skipping)),
            deterministic(last_json(&stepping)),
        );
        let slices = a["slices"].as_u64().unwrap();
        let skipped = a["slices_skipped"].as_u64().unwrap();
        assert!(
            skipped * 100 >= slices * 95,
            "{mode}: {skipped} of {slices} slices skipped"
        );
        assert_eq!(b["slices_skipped"], 0, "{mode}");
        for r in [&mut a, &mut b] {
            r.as_object_mut().unwrap().remove("slices_skipped");
        }
        assert_eq!(a, b, "{mode}");
        let done: Vec<u64> = a["per_node"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["app_done_cycle"].as_u64().unwrap())
            .collect();
        let expected = 2 * 5 * (100_000 + message_cycles);
        assert!(done.contains(&expected), "{mode}: {done:?}");
        assert_eq!(a["frame_latency_avg"], message_cycles as f64, "{mode}");
    }
}

/// Nodes whose first ping is 10^7 node cycles away promise nothing before
/// it: with `--slices 50` the server runs the first slice, skips 48, and
/// runs the last as a round, so the run still simulates exactly 50 slices.
#[test]
fn idle_skipping_keeps_the_requested_slice_count() {
    let o = fsin(
        &[
            "demo",
            "--workload",
            "pingpong",
            "--think",
            "10000000",
            "--slices",
            "50",
            "--json",
            "topo=torus_2_2",
        ],
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = last_json(&o);
    assert_eq!(r["slices"], 50);
    assert_eq!(r["slices_skipped"], 48);
    assert_eq!(r["node_cycles"], 50 * 1000);
}
