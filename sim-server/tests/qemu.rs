//! Real Linux guests as nodes: `fsin qemu` boots QEMU guests (the busybox
//! image of `scripts/install-qemu.sh`) whose only NIC link is nic-bridge,
//! and they ping each other across the simulated network.
//!
//! These tests need `qemu-system-x86_64` and the guest image. Where they
//! are missing the tests say so and pass, unless `FSIN_NO_SKIP=1` (set by
//! `.ci/run`, which installs them first) makes that a failure.

mod process;
mod skip;

use skip::skip;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const FSIN: &str = env!("CARGO_BIN_EXE_fsin");
/// How long two guests may take to boot while other tests share the 2
/// cores: 50 s has been seen in CI, against about 10 s alone.
const BOOT_LIMIT: Duration = Duration::from_secs(300);

/// Whether QEMU and the guest image are there; panics when they are
/// required and missing.
fn qemu_available() -> bool {
    let image = qemu_adapter::qemu::default_image_dir();
    let qemu = Command::new("qemu-system-x86_64")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let have_image = image.join("vmlinuz").is_file() && image.join("initramfs.cpio.gz").is_file();
    if qemu && have_image {
        // One guest's speed alone is measured once (then cached), while
        // no other test runs guests: `fsin doctor` measures it.
        static MEASURED: std::sync::Once = std::sync::Once::new();
        MEASURED.call_once(|| {
            fsin(&["doctor"], Duration::from_secs(300));
        });
        return true;
    }
    let why = format!(
        "qemu-system-x86_64 {}, guest image in {} {}: run scripts/install-qemu.sh",
        if qemu { "found" } else { "missing" },
        image.display(),
        if have_image { "found" } else { "missing" }
    );
    skip(&why);
    false
}

/// Runs `fsin` with a deadline (kills it past `limit`).
fn fsin(args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(FSIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fsin starts");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("fsin {args:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

/// `fsin qemu --guests 2 ARGS --json topo=torus_2` (a 2-node network),
/// with its report.
fn qemu_run(args: &[&str]) -> (Output, Value) {
    let mut all = vec!["qemu", "--guests", "2"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", "topo=torus_2"]);
    let o = fsin(&all, Duration::from_secs(280));
    let r = last_json(&o);
    (o, r)
}

fn last_json(o: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&o.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| {
        panic!(
            "no JSON on the last line ({e}); stdout:\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

/// A 2-guest `--pings 3` report: 3 pings from each guest answered, every
/// measured frame (6 echo requests and 6 replies at least) delivered, and
/// none faster than an unloaded one-packet frame over `hops` links
/// (`hops + 16 - 1` network cycles).
fn answered_and_delivered(r: &Value, hops: u64) {
    assert_eq!(r["ping_sent"], 6, "3 pings from each guest to the other");
    assert_eq!(r["ping_received"], 6);
    let sent = r["frames_sent"].as_u64().unwrap();
    assert!(
        sent >= 12,
        "6 echo requests and 6 replies at least, got {sent}"
    );
    assert_eq!(
        r["frames_delivered"], sent,
        "every measured frame delivered"
    );
    let min = r["frame_net_latency_min"].as_u64().unwrap();
    assert!(
        min >= hops + 15,
        "a frame crossed {hops} links in {min} < {hops} + 16 - 1 cycles"
    );
}

/// Two guests of 2 vCPUs each on a 2-node network ping each other in
/// lock-step: they boot in warm-up (long slices, frames bypass the
/// network), guest 0's
/// CLEAR_STATS magic packet starts the measured phase, and then every ping
/// is answered, every frame crosses the network, none faster than an
/// unloaded one-packet frame (hops + plength - 1 = 1 + 16 - 1 network
/// cycles), and no round trip is shorter than a slice of guest time (a
/// frame reaches its destination at the start of the slice after the one
/// it was sent in, so the answer leaves a slice after the request at the
/// earliest): 10 000 node cycles x 8 ns = 80 us. The guests' benchmark (UDP
/// ping-pong, TCP all-to-all) reports its times too.
#[test]
fn two_guests_ping_each_other_in_lockstep() {
    if !qemu_available() {
        return;
    }
    let (o, r) = qemu_run(&[
        "--cpus",
        "2",
        "--pings",
        "3",
        "--timing",
        "lockstep",
        "--warmup",
        "--slice",
        "200:10000",
        "--bench-bytes",
        "512",
    ]);
    assert!(o.status.success(), "report: {r}");
    assert_eq!(r["guests"], 2);
    assert_eq!(r["mode"], "lockstep");
    answered_and_delivered(&r, 1);
    assert!(
        r["measured_from_slice"].as_u64().is_some_and(|s| s > 0),
        "magic packet seen: {r}"
    );
    let rtt = r["rtt_avg_us"].as_f64().expect("rtt");
    assert!(rtt >= 80.0, "round trip {rtt} us under a slice");
    let pingpong = r["pingpong_rtt_us"].as_f64().expect("benchmark ping-pong");
    assert!(
        pingpong >= 80.0,
        "UDP round trip {pingpong} us under a slice"
    );
    let a2a_us = r["a2a_us"].as_f64().expect("benchmark all-to-all");
    let a2a_cycles = r["a2a_cycles"].as_u64().expect("all-to-all in cycles");
    assert_eq!(
        a2a_cycles,
        (a2a_us * 1000.0) as u64 / 8,
        "8 ns per node cycle"
    );
    assert!(
        a2a_us >= 80.0,
        "a TCP exchange takes more than one round trip"
    );
    assert_eq!(r["network"]["avg_distance"], 1.0);
    for g in r["guest_reports"].as_array().unwrap() {
        assert!(g["done_s"].as_f64().is_some(), "guest finished: {g}");
    }
}

/// A lossy network (`frame_loss`): two guests exchange 200 kB
/// each way over TCP while the network loses 5% of the frames; the report
/// counts the lost frames, and TCP sends segments again (a retransmission
/// count above zero, which a counter stuck at 0 would fail), and the
/// exchange still completes.
#[test]
fn a_lossy_network_makes_tcp_retransmit() {
    if !qemu_available() {
        return;
    }
    let (o, r) = qemu_run(&["--bench-bytes", "200000", "frame_loss=0.05"]);
    assert!(o.status.success(), "report: {r}");
    let lost = r["frames_lost"].as_u64().unwrap();
    let delivered = r["frames_delivered"].as_u64().unwrap();
    assert!(
        lost > 0 && delivered > 100,
        "{lost} lost, {delivered} delivered"
    );
    // 5% of every frame sent, within a factor of 3.
    let share = lost as f64 / (lost + delivered) as f64;
    assert!((0.0167..0.15).contains(&share), "{share}: {r}");
    assert!(r["tcp_retransmissions"].as_u64().unwrap() > 0, "{r}");
    assert!(
        r["a2a_us"].as_f64().is_some(),
        "the exchange completed: {r}"
    );
}

/// Two guests on a network read from a file: an edge list of
/// three routers in a row with the guests' nodes at the ends, an
/// indirect network whose nodes are four links apart (node, router 0,
/// router 1, router 2, node). Every ping is answered, every measured
/// frame delivered, and none faster than an unloaded one-packet frame
/// over four links (4 + 16 - 1 cycles).
#[test]
fn two_guests_ping_each_other_across_a_file_network() {
    if !qemu_available() {
        return;
    }
    let file = std::env::temp_dir().join(format!("fsin-qemu-file-{}.edges", std::process::id()));
    std::fs::write(
        &file,
        "# a row of three routers\n0 1\n1 2\nnode 0 0\nnode 1 2\n",
    )
    .unwrap();
    let topo = format!("topo=file:{}", file.display());
    let o = fsin(
        &[
            "qemu",
            "--guests",
            "2",
            "--pings",
            "3",
            "--timing",
            "lockstep",
            "--warmup",
            "--slice",
            "200:10000",
            "--json",
            &topo,
        ],
        Duration::from_secs(280),
    );
    let r = last_json(&o);
    let _ = std::fs::remove_file(&file);
    assert!(o.status.success(), "report: {r}");
    answered_and_delivered(&r, 4);
    assert_eq!(r["network"]["avg_distance"], 4.0, "{}", r["network"]);
}

/// `--trace-out` at 2 guests with pings: the trace holds one `s` and one
/// `r` per frame the report counts as delivered in the measured phase,
/// every `r` names a send of its source with its tag and size, and `fsin
/// run` replays it to the end with the keys its second line gives.
#[test]
fn trace_out_pairs_every_delivered_frame() {
    if !qemu_available() {
        return;
    }
    let path = std::env::temp_dir().join(format!("fsin-trace-pings-{}.trc", std::process::id()));
    let (o, r) = qemu_run(&[
        "--pings",
        "3",
        "--slice",
        "200:10000",
        "--trace-out",
        path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "report: {r}");
    let delivered = r["frames_delivered"].as_u64().unwrap();
    assert!(delivered >= 12, "6 requests and 6 replies at least: {r}");
    let text = std::fs::read_to_string(&path).unwrap();
    let t = fsin_trace::parse_str(&text, "pings.trc").unwrap();
    assert!(t.frames);
    let mut sends = std::collections::HashSet::new();
    let mut recvs = Vec::new();
    for (task, events) in t.tasks.iter().enumerate() {
        for e in events {
            match *e {
                fsin_trace::Event::Send { dst, tag, bytes } => {
                    assert!(
                        sends.insert((task as u32, dst, tag, bytes)),
                        "tag {tag} twice"
                    );
                }
                fsin_trace::Event::Recv { src, tag, bytes } => {
                    recvs.push((src, task as u32, tag, bytes))
                }
                fsin_trace::Event::Cpu { .. } => {}
            }
        }
    }
    assert_eq!(sends.len() as u64, delivered);
    assert_eq!(recvs.len() as u64, delivered);
    for k in &recvs {
        assert!(sends.contains(k), "receive {k:?} pairs with no send");
    }
    assert_eq!(r["trace"]["frames"], delivered);
    assert_eq!(r["trace"]["unpaired"], 0);
    let replay = text
        .lines()
        .find_map(|l| l.strip_prefix("# replay: fsin "))
        .expect("the replay command");
    let o = fsin(
        &replay.split(' ').chain(["--json"]).collect::<Vec<_>>(),
        Duration::from_secs(60),
    );
    let rep = last_json(&o);
    assert!(o.status.success(), "{rep}");
    assert_eq!(rep["messages_delivered"], delivered);
    assert_eq!(rep["deadlock"], false);
    let _ = std::fs::remove_file(&path);
}

/// Lock-step is repeatable: two runs with the same settings give the same
/// pcap capture, byte for byte (every frame, its simulated time and
/// contents), and the same guest-measured results (boot times, ping round
/// trips, the benchmark's UDP ping-pong and TCP all-to-all), because guest
/// time follows instructions and jumps over idle time only to virtual
/// timers, and frames enter and leave the guests at exact guest times.
#[test]
fn lockstep_runs_are_repeatable_to_the_byte() {
    if !qemu_available() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("fsin-qemu-repeat-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let runs: Vec<(Vec<u8>, Value)> = (0..2)
        .map(|k| {
            let pcap = dir.join(format!("run{k}.pcap"));
            let pcap_arg = pcap.to_str().unwrap();
            let (o, r) = qemu_run(&[
                "--pings",
                "3",
                "--slice",
                "200:10000",
                "--bench-bytes",
                "512",
                "--pcap",
                pcap_arg,
            ]);
            assert!(o.status.success(), "report: {r}");
            (std::fs::read(&pcap).expect("pcap written"), r)
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    let (a, b) = (&runs[0], &runs[1]);
    // 24-byte header, then 16 bytes of record header per frame at least.
    assert!(a.0.len() > 24 + 12 * (16 + 98), "every ping in the capture");
    assert!(a.0 == b.0, "the two captures differ");
    for key in [
        "rtt_avg_us",
        "pingpong_rtt_us",
        "a2a_us",
        "guest_reports",
        "slices",
        "slices_skipped",
        "frames_sent",
        "network",
    ] {
        assert_eq!(a.1[key], b.1[key], "{key} differs between the two runs");
    }
}

/// Exact mode with guests: a frame leaves at the guest time of the
/// instruction that sent it and enters the other guest at the cycle the
/// network delivers it, so the slice length no longer matters. With
/// nic_latency = 200 network cycles (80 us of guest time at 1 network cycle
/// per 50 node cycles of 8 ns), the guests' ping round trip is the same,
/// within 5%, with slices of 20:1000 and 200:10000, at least the two NIC
/// latencies, and not larger than lock-step's at 20:1000. (Lock-step
/// with slices longer than the NIC latency makes round trips grow with the
/// slice, threefold from 20:1000 to 2000:100000 in docs/qemu.md. Exact
/// mode's moves by up to 2%: the boot runs in warm-up slices, 100 times
/// --slice, whose frames follow the slice, so the guests begin their pings
/// in slightly different states, and a 250 Hz timer tick that lands inside
/// a 600 us round trip adds tens of microseconds to that ping.)
#[test]
fn exact_mode_round_trips_do_not_depend_on_the_slice() {
    if !qemu_available() {
        return;
    }
    let rtt = |mode: &str, slice: &str| {
        let (o, r) = qemu_run(&[
            "--pings",
            "3",
            "--mode",
            mode,
            "--slice",
            slice,
            "nic_latency=200",
        ]);
        assert!(o.status.success(), "{mode} {slice}: {r}");
        assert_eq!(r["ping_received"], 6, "{mode} {slice}: {r}");
        r["rtt_avg_us"].as_f64().expect("rtt")
    };
    let fine = rtt("exact", "20:1000");
    let coarse = rtt("exact", "200:10000");
    let lockstep = rtt("lockstep", "20:1000");
    assert!(
        (fine - coarse).abs() <= 0.05 * fine,
        "exact mode: {fine} us at 20:1000, {coarse} us at 200:10000"
    );
    assert!(fine >= 160.0, "{fine} us under two NIC latencies of 80 us");
    assert!(
        fine <= lockstep,
        "exact {fine} us above lock-step's {lockstep} us"
    );
}

/// An idle guest costs almost nothing: while guest 0 sleeps 10 seconds of
/// guest time (and guest 1 waits), every vCPU is halted between timer
/// interrupts, QEMU jumps the guests' clocks to their next timer, the
/// guests promise nothing before it, and the server skips the slices in
/// between; the sleep takes a small part of 10 s of wall time.
#[test]
fn an_idle_guest_costs_almost_nothing() {
    if !qemu_available() {
        return;
    }
    let image = qemu_adapter::qemu::default_image_dir();
    let [ck, dir] = booted(2, Image::Busybox);
    let (o, r) = qemu_run(&[
        "--image",
        image.to_str().unwrap(),
        &ck,
        &dir,
        "--run",
        "sleep 10",
        "--slice",
        "200:10000",
    ]);
    assert!(o.status.success(), "report: {r}");
    restored(&r);
    let guest_s = r["app"]["guest_s"].as_f64().expect("guest seconds");
    let wall_s = r["app"]["wall_s"].as_f64().expect("wall seconds");
    assert!(guest_s >= 10.0, "slept {guest_s} guest s");
    assert!(
        wall_s < 0.5 * guest_s,
        "10 s of idle guests took {wall_s} s of wall time"
    );
    let skipped = r["slices_skipped"].as_u64().unwrap();
    let slices = r["slices"].as_u64().unwrap();
    assert!(skipped > slices / 2, "{skipped} of {slices} slices skipped");
}

/// The same in free-running mode (no plugin): every ping is answered and
/// every frame crosses the network.
#[test]
fn two_guests_ping_each_other_running_free() {
    if !qemu_available() {
        return;
    }
    let (o, r) = qemu_run(&["--timing", "free", "--pings", "3"]);
    assert!(o.status.success(), "report: {r}");
    assert_eq!(r["mode"], "free");
    assert_eq!(r["ping_received"], 6);
    assert_eq!(r["frames_delivered"], r["frames_sent"]);
    assert_eq!(
        r["frames_bypassed"], 0,
        "no warm-up: every frame crossed the network"
    );
}

/// `fsin qemu` with stderr redirected to a file, as in a batch job: the
/// file gets progress lines while the guests boot, before the run ends
/// (a booting line naming the guests up out of 2), the phases come in
/// their order (booting, cluster up, ending), and the report is still
/// stdout's last line.
#[test]
fn progress_lines_reach_a_log_file_while_guests_boot() {
    if !qemu_available() {
        return;
    }
    let log = std::env::temp_dir().join(format!("fsin-qemu-progress-{}.log", std::process::id()));
    let mut child = Command::new(FSIN)
        .args(["qemu", "--guests", "2", "--progress-s", "1"])
        .args(["--json", "topo=torus_2"])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .spawn()
        .expect("fsin starts");
    let start = Instant::now();
    let mut booting_while_running = None;
    while child.try_wait().expect("wait").is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(280),
            "fsin qemu still running after 280 s"
        );
        if booting_while_running.is_none() {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            booting_while_running = text
                .lines()
                .find(|l| l.starts_with("fsin qemu [") && l.contains("booting: "))
                .map(String::from);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let o = child.wait_with_output().expect("output");
    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::remove_file(&log).unwrap();
    let line =
        booting_while_running.unwrap_or_else(|| panic!("no booting line before the end:\n{text}"));
    assert!(line.contains("/2 guests up, slice "), "{line}");
    let r = last_json(&o);
    assert!(o.status.success(), "report: {r}\n{text}");
    let at = |phase: &str| {
        text.lines()
            .position(|l| l.starts_with("fsin qemu [") && l.contains(&format!("] {phase}: ")))
            .unwrap_or_else(|| panic!("no {phase} line:\n{text}"))
    };
    assert!(at("booting") < at("cluster up"), "{text}");
    assert!(at("cluster up") < at("ending"), "{text}");
    assert!(text.contains("] ending: 2/2 guests up"), "{text}");
}

/// A guest whose kernel panics ends the run: the report names it, the
/// statistics are flushed, and `fsin qemu` exits 1 instead of hanging.
#[test]
fn a_crashed_guest_is_named_and_ends_the_run() {
    if !qemu_available() {
        return;
    }
    let (o, r) = qemu_run(&["--timing", "free", "--crash-guest", "1"]);
    assert_eq!(o.status.code(), Some(1), "report: {r}");
    assert_eq!(r["ok"], false);
    let fault = r["guest_fault"].as_str().unwrap_or_default();
    assert!(fault.starts_with("guest 1 (node 1, 10.0.0.2"), "{fault}");
    assert!(fault.contains("ended before the run did"), "{fault}");
    assert!(
        r["slices"].as_u64().is_some_and(|s| s > 0),
        "statistics flushed: {r}"
    );
}

/// Whether the MPI image (scripts/install-qemu.sh builds it in mpi/) is
/// there too; panics when QEMU tests are required and it is missing.
fn mpi_image_available() -> bool {
    if !qemu_available() {
        return false;
    }
    let image = qemu_adapter::qemu::default_image_dir().join("mpi");
    if image.join("initramfs.cpio.gz").is_file() && image.join("root.erofs").is_file() {
        return true;
    }
    skip(&format!(
        "no MPI image in {}: run scripts/install-qemu.sh",
        image.display()
    ));
    false
}

/// README: `fsin doctor` exits 0 when everything is ready. Where
/// `scripts/install-qemu.sh` ran (as `.ci/run` does), every check passes:
/// one `ok` line per check, "ready" last, and the JSON says the same for
/// each of the checks the README lists.
#[test]
fn doctor_is_ready_where_qemu_is_installed() {
    if !mpi_image_available() {
        return;
    }
    let o = fsin(&["doctor"], Duration::from_secs(120));
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    let (last, checks) = text
        .trim_end()
        .lines()
        .collect::<Vec<_>>()
        .split_last()
        .map(|(l, c)| (*l, c.to_vec()))
        .unwrap();
    assert_eq!(last, "ready: every check passed", "{text}");
    assert!(checks.iter().all(|l| l.starts_with("ok ")), "{text}");
    let o = fsin(&["doctor", "--json"], Duration::from_secs(120));
    assert_eq!(o.status.code(), Some(0));
    let r = last_json(&o);
    assert_eq!(r["ready"], true, "{r}");
    let names: Vec<&str> = (r["checks"].as_array().unwrap().iter())
        .map(|c| {
            assert_eq!(c["ok"], true, "{c}");
            c["check"].as_str().unwrap()
        })
        .collect();
    let want = [
        "qemu",
        "plugin",
        "image",
        "mpi-image",
        "shm",
        "memory",
        "cores",
        "ports",
        "speed",
    ];
    assert_eq!(names, want, "{r}");
    assert_eq!(checks.len(), want.len(), "{text}");
    // One guest alone: a TCG guest runs between 10 M and 10 G
    // instructions a second; a guest second of 2 busy guests (2 x 125 M
    // instructions) over this machine's cores at that speed.
    let speed = r["checks"][8]["detail"].as_str().unwrap();
    let number = |after: &str| -> f64 {
        let rest = &speed[speed.find(after).unwrap() + after.len()..];
        rest.split(' ').next().unwrap().parse().unwrap()
    };
    let mips = number("one guest alone runs ");
    assert!((10.0..10_000.0).contains(&mips), "{speed}");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let at_least = number("takes at least ");
    assert!(
        (at_least - 2.0 * 125.0 / mips / cores).abs() < 0.01,
        "{speed}"
    );
}

/// `--timeline` at 2 guests with pings, with `--trace-out`
/// beside it: one flow per frame the report counts as delivered in the
/// measured phase, each from one guest to the other, sent before it was
/// delivered and within the run; each guest's states cover the measured
/// phase end to end; and the idle time that a frame ended, which the
/// timeline shows as waiting, is the frame trace's `wait_cycles` to the
/// cycle.
#[test]
fn a_guest_timeline_has_every_frame_and_the_traces_waits() {
    if !qemu_available() {
        return;
    }
    let dir = std::env::temp_dir();
    let id = std::process::id();
    let trace = dir.join(format!("fsin-tl-pings-{id}.trc"));
    let timeline = dir.join(format!("fsin-tl-pings-{id}.json"));
    let out = dir.join(format!("fsin-tl-pings-{id}"));
    let (o, r) = qemu_run(&[
        "--out",
        out.to_str().unwrap(),
        "--pings",
        "3",
        "--slice",
        "200:10000",
        "--trace-out",
        trace.to_str().unwrap(),
        "--timeline",
        timeline.to_str().unwrap(),
    ]);
    let _ = std::fs::remove_file(&trace);
    let text = std::fs::read_to_string(&timeline).unwrap_or_default();
    let _ = std::fs::remove_file(&timeline);
    let svg = std::fs::read_to_string(out.join("timeline.svg")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&out);
    assert!(o.status.success(), "report: {r}");
    // The guests' Gantt chart: both named, both running (blue).
    for want in ["guest 0", "guest 1", "fill=\"#0000FF\""] {
        assert!(svg.contains(want), "{want} in timeline.svg");
    }
    let v: Value = serde_json::from_str(&text).expect("the timeline is JSON");
    let ticks = |v: &Value| (v.as_f64().unwrap() * 1000.0).round() as u64;
    let mut states: std::collections::BTreeMap<u64, Vec<(u64, u64, String)>> =
        std::collections::BTreeMap::new();
    let mut sends = std::collections::BTreeMap::new();
    let mut flows = Vec::new();
    let mut counters = Vec::new();
    for e in v["traceEvents"].as_array().unwrap() {
        match e["ph"].as_str().unwrap() {
            "X" => states.entry(e["tid"].as_u64().unwrap()).or_default().push((
                ticks(&e["ts"]),
                ticks(&e["ts"]) + ticks(&e["dur"]),
                e["name"].as_str().unwrap().to_string(),
            )),
            "s" => {
                sends.insert(e["id"].as_u64().unwrap(), e.clone());
            }
            "f" => flows.push(e.clone()),
            "C" => counters.push((
                e["name"].as_str().unwrap().to_string(),
                ticks(&e["ts"]),
                e["args"]["value"].as_f64().unwrap(),
            )),
            _ => {}
        }
    }
    // The network's counters, which the server hands over per window of
    // its links' watch: the accepted load and the ring's links, each a
    // fraction of a phit per cycle, some load while the pings cross.
    let named = |n: &'static str| counters.iter().filter(move |c| c.0 == n);
    assert!(named("accepted load").any(|c| c.2 > 0.0), "{counters:?}");
    assert!(named("link 0 d0+").count() > 0, "{counters:?}");
    assert!(counters.iter().all(|c| (0.0..=1.0).contains(&c.2)));
    // One window every util_window (10) slices of 10 000 node cycles, from
    // the measured phase's start, each at its own first cycle.
    assert!(
        named("accepted load").all(|c| c.1 % 100_000 == 0),
        "{counters:?}"
    );
    let delivered = r["frames_delivered"].as_u64().unwrap();
    assert!(delivered >= 12, "6 requests and 6 replies at least: {r}");
    assert_eq!(flows.len() as u64, delivered);
    assert_eq!(r["timeline"]["messages"], delivered);
    let end = states.values().flatten().map(|s| s.1).max().unwrap();
    for f in &flows {
        let s = &sends[&f["id"].as_u64().unwrap()];
        assert_ne!(s["tid"], f["tid"], "a frame goes to the other guest");
        assert!(ticks(&s["ts"]) < ticks(&f["ts"]), "{s} {f}");
        assert!(ticks(&f["ts"]) <= end);
    }
    assert!(counters.iter().all(|c| c.1 <= end), "{counters:?}");
    assert_eq!(states.len(), 2);
    let mut waits = 0;
    for (guest, mut st) in states {
        st.sort();
        let mut at = 0;
        for (b, e, name) in &st {
            assert_eq!(*b, at, "guest {guest}: a gap or an overlap");
            at = *e;
            if name == "Waiting a message" {
                waits += e - b;
            }
        }
        assert_eq!(at, end, "guest {guest} to the end");
    }
    assert_eq!(waits, r["trace"]["wait_cycles"].as_u64().unwrap());
}

/// `fsin qemu ARGS --json` with its report.
fn qemu_json(args: &[&str], limit: Duration) -> (Output, Value) {
    let mut all = vec!["qemu"];
    all.extend_from_slice(args);
    all.push("--json");
    let o = fsin(&all, limit);
    let r = last_json(&o);
    (o, r)
}

/// The guest image of a shared boot: the busybox one or the MPI one.
#[derive(Clone, Copy, Debug)]
enum Image {
    Busybox,
    Mpi,
}

/// Booted once for the tests that run a command in lock-step on the same
/// guests: `--checkpoint` and the directory of a boot checkpoint
/// (docs/qemu.md, "Boot once, run many") of `guests` guests of `image`,
/// with the default guest settings, kept in cargo's scratch directory for
/// tests (a later `cargo test` restores it too when nothing the checkpoint
/// depends on changed; `fsin qemu` boots again otherwise). The first test
/// that asks boots and saves it (`--run true`), the others wait for that,
/// then every run restores the same saved state: a test's runs are as
/// from a fresh boot, without its cost. A run with `--roi command` (or
/// none) only reads the directory; one with `--roi mpi|marker` would save
/// its region in it, so those boot their own.
fn booted(guests: u32, image: Image) -> [String; 2] {
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};
    type Slots = BTreeMap<String, Arc<Mutex<bool>>>;
    static BOOTS: Mutex<Slots> = Mutex::new(BTreeMap::new());
    let key = format!("{image:?}-{guests}").to_lowercase();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("qemu-boot-{key}"));
    let dir = dir.to_str().unwrap().to_string();
    let slot = BOOTS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(key.clone())
        .or_default()
        .clone();
    // A test that failed while booting leaves it to the next one.
    let mut ready = slot.lock().unwrap_or_else(|e| e.into_inner());
    if !*ready {
        let (n, topo) = (guests.to_string(), format!("topo=torus_{guests}"));
        let busybox = qemu_adapter::qemu::default_image_dir();
        let mut args = vec!["--guests", &n, "--run", "true", "--checkpoint", &dir];
        if let Image::Busybox = image {
            args.extend(["--image", busybox.to_str().unwrap()]);
        }
        args.push(&topo);
        let (o, r) = qemu_json(&args, BOOT_LIMIT + Duration::from_secs(120));
        assert!(o.status.success(), "booting {key} for the tests: {r}");
        *ready = true;
    }
    ["--checkpoint".to_string(), dir]
}

/// A directory of its own for a test whose runs save in their checkpoint
/// (`--roi mpi|marker`: `DIR/region`), holding the boot of [`booted`]:
/// its files linked (copied where links cannot be made), which those
/// runs only read.
fn booted_into(dir: &std::path::Path, guests: u32, image: Image) {
    let [_, boot] = booted(guests, image);
    std::fs::create_dir_all(dir).unwrap();
    for entry in std::fs::read_dir(&boot).unwrap() {
        let from = entry.unwrap().path();
        if from.is_file() {
            let to = dir.join(from.file_name().unwrap());
            let _ = std::fs::remove_file(&to);
            if std::fs::hard_link(&from, &to).is_err() {
                std::fs::copy(&from, &to).unwrap();
            }
        }
    }
}

/// A run that `booted` guests started: restored, not booted and saved.
fn restored(r: &Value) {
    assert_eq!(r["checkpoint"]["saved"], false, "restored: {r}");
}

/// Sixteen guests of the MPI image in lock-step, all booted from the one
/// shared root (`root.erofs` mapped read-only into every guest, a tmpfs
/// overlay on top): `mpirun` on guest 0 starts one rank on every guest
/// through the hostfile (daemons launched by fsin-rsh across the simulated
/// network), and each prints its host name.
#[test]
fn sixteen_guests_boot_from_the_shared_root_and_run_mpi() {
    if !mpi_image_available() {
        return;
    }
    let (o, r) = qemu_json(
        &[
            "--guests",
            "16",
            "--slice",
            "200:10000",
            "--run",
            "grep ' / ' /proc/mounts; mpirun --hostfile /etc/fsin/hostfile -np 16 hostname",
            "--roi",
            "command",
            "--progress-s",
            "0",
            "topo=torus_4_4",
        ],
        Duration::from_secs(900),
    );
    assert!(o.status.success(), "report: {r}");
    let app = &r["app"];
    assert_eq!(app["exit_code"], 0, "{app}");
    let out = app["output"].as_str().unwrap();
    let root = out.lines().next().unwrap_or_default();
    assert!(
        root.starts_with("overlay / overlay ") && root.contains("lowerdir=/fsin-stage1/ro"),
        "the root is the overlay on the shared root: {out}"
    );
    // (Open MPI may also warn that setpgid lost a race with the launcher's
    // exec: harmless, and not a host name.)
    let mut names: Vec<&str> = out.lines().skip(1).filter(|l| !l.contains(' ')).collect();
    names.sort_unstable();
    let mut want: Vec<String> = (0..16).map(|i| format!("node{i}")).collect();
    want.sort_unstable();
    assert_eq!(names, want, "{out}");
    assert!(app["guest_s"].as_f64().is_some_and(|s| s > 0.0), "{app}");
    assert!(
        r["frames_delivered"].as_u64().is_some_and(|f| f > 0),
        "the launch crossed the network: {r}"
    );
}

/// NetPIPE (an MPI ping-pong) between two guests in lock-step at slice
/// 200:10000: it exits 0, every frame crosses the simulated network, and
/// no message is faster than the network allows. A round trip cannot be
/// shorter than one slice (a frame sent in slice k reaches its peer at the
/// start of slice k + 1, and the answer the start of k + 2 at the
/// earliest): 10 000 instructions x 8 ns = 80 us, so NetPIPE's one-way
/// time (half a round trip) is at least 40 us, far above the zero-load
/// latency of a one-hop frame (1 + 16 - 1 network cycles = 800
/// instructions = 6.4 us).
#[test]
fn netpipe_between_two_guests_in_lockstep() {
    if !mpi_image_available() {
        return;
    }
    let [ck, dir] = booted(2, Image::Mpi);
    let (o, r) = qemu_json(
        &[
            "--guests",
            "2",
            &ck,
            &dir,
            "--app",
            "netpipe",
            "--app-size",
            "16",
            "--slice",
            "200:10000",
            "topo=torus_2",
        ],
        Duration::from_secs(400),
    );
    assert!(o.status.success(), "report: {r}");
    restored(&r);
    let app = &r["app"];
    assert_eq!(app["exit_code"], 0, "{app}");
    assert_eq!(app["name"], "netpipe");
    let points = app["results"]["points"].as_array().expect("points");
    assert!(points.len() >= 5, "1 to 16 bytes: {points:?}");
    for p in points {
        let t = p["time_us"].as_f64().unwrap();
        assert!(
            t >= 40.0,
            "{} bytes one way in {t} us < half a slice",
            p["bytes"]
        );
    }
    let sent = r["frames_sent"].as_u64().unwrap();
    assert!(sent > 100, "NetPIPE's messages crossed the network: {sent}");
    assert_eq!(
        r["frames_delivered"], sent,
        "every measured frame delivered"
    );
    assert!(r["frame_net_latency_min"].as_u64().unwrap() >= 16);
    // Restored: measured from its first slice, the boot's warm-up saved.
    assert_eq!(r["measured_from_slice"].as_u64(), Some(0), "{r}");
}

/// A command that fails: its exit code and output are in the report, and
/// `fsin qemu` exits 1. A command that runs past --app-timeout is killed
/// (exit code 124, timed_out). Both on the busybox image, running free.
#[test]
fn a_failing_or_hanging_command_fails_the_run() {
    if !qemu_available() {
        return;
    }
    let image = qemu_adapter::qemu::default_image_dir();
    let image = image.to_str().unwrap();
    let (o, r) = qemu_run(&[
        "--timing",
        "free",
        "--image",
        image,
        "--run",
        "echo before; ls /nonexistent; exit 3",
    ]);
    assert_eq!(o.status.code(), Some(1), "report: {r}");
    let app = &r["app"];
    assert_eq!(app["exit_code"], 3, "{app}");
    assert_eq!(app["timed_out"], false);
    let out = app["output"].as_str().unwrap();
    assert!(out.starts_with("before\n"), "{out}");
    assert!(out.contains("/nonexistent"), "stderr too: {out}");

    let (o, r) = qemu_run(&[
        "--timing",
        "free",
        "--image",
        image,
        "--app-timeout",
        "2",
        "--run",
        "sleep 60",
    ]);
    assert_eq!(o.status.code(), Some(1), "report: {r}");
    assert_eq!(r["app"]["exit_code"], 124, "{r}");
    assert_eq!(r["app"]["timed_out"], true);
    let ran = r["app"]["guest_s"].as_f64().unwrap();
    assert!((2.0..10.0).contains(&ran), "killed after 2 s, not {ran}");
}

/// `--vary` runs the command once per value and writes the study: a row
/// per value in the table, study.csv and study.json, and the plot. In
/// lock-step the guests boot once, are saved, and every value starts from
/// that checkpoint: the study says so once, and each value's report says
/// it was restored from the guest time at which the boot saved them.
#[test]
fn vary_runs_the_command_once_per_value() {
    if !qemu_available() {
        return;
    }
    let out = std::env::temp_dir().join(format!("fsin-qemu-study-{}", std::process::id()));
    let image = qemu_adapter::qemu::default_image_dir();
    let (o, r) = qemu_run(&[
        "--image",
        image.to_str().unwrap(),
        "--run",
        "echo hello",
        "--vary",
        "intransit_pr=0,1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{r}");
    assert_eq!(r["vary"], "intransit_pr");
    let points = r["points"].as_array().unwrap();
    let values: Vec<&str> = points
        .iter()
        .map(|p| p["value"].as_str().unwrap())
        .collect();
    assert_eq!(values, ["0", "1"]);
    for p in points {
        assert_eq!(p["exit_code"], 0, "{p}");
        assert!(p["guest_s"].as_f64().is_some(), "{p}");
    }
    let csv = std::fs::read_to_string(out.join("study.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
    // study.json's points are the runs' own reports (run-K/report.json,
    // each written by its run): the same exit code, and the guest time of
    // the application (or of its region, never more).
    let study = process::read_json(&out.join("study.json"));
    let written = study["points"].as_array().unwrap();
    assert_eq!(written.len(), 2, "{study}");
    for (k, p) in written.iter().enumerate() {
        let text = std::fs::read_to_string(out.join(format!("run-{k}/report.json"))).unwrap();
        let run: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(p["value"], ["0", "1"][k], "{p}");
        assert_eq!(p["exit_code"], run["app"]["exit_code"], "run {k}: {p}");
        let (point, app) = (p["guest_s"].as_f64(), run["app"]["guest_s"].as_f64());
        assert!(
            matches!((point, app), (Some(a), Some(b)) if a > 0.0 && a <= b + 1e-9),
            "run {k}: {point:?} against the run's {app:?}"
        );
    }
    assert!(
        csv.lines()
            .nth(1)
            .unwrap()
            .starts_with("intransit_pr,0,lockstep,1,"),
        "{csv}"
    );
    assert!(std::fs::read_to_string(out.join("study.svg"))
        .unwrap()
        .contains("<svg"));
    assert!(out.join("run-1/report.json").is_file());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        stderr.matches("booting the 2 guests once").count(),
        1,
        "one boot for the study: {stderr}"
    );
    let saved_at: Vec<f64> = (0..2)
        .map(|k| {
            let text = std::fs::read_to_string(out.join(format!("run-{k}/report.json"))).unwrap();
            let report: Value = serde_json::from_str(&text).unwrap();
            let c = &report["checkpoint"];
            assert_eq!(c["saved"], false, "value {k} was restored: {c}");
            c["guest_s"].as_f64().unwrap()
        })
        .collect();
    assert!(
        saved_at[0] > 0.0 && saved_at[0] == saved_at[1],
        "{saved_at:?}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// A CSV file the study wrote: its text, the index of a column by its
/// head (panics if absent), and its rows of cells.
fn csv_table(path: &std::path::Path) -> (String, impl Fn(&str) -> usize, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text
        .lines()
        .map(|l| l.split(',').map(String::from).collect::<Vec<_>>());
    let head = lines.next().unwrap_or_default();
    let rows: Vec<Vec<String>> = lines.collect();
    let col = move |name: &str| head.iter().position(|h| h == name).unwrap();
    (text, col, rows)
}

/// The elements of an SVG that plotters wrote (one per line), of a kind
/// (`"<rect"`, `"<circle"`) and filled with `fill` (`"#0000FF"`), in
/// order: the height of each rectangle, the radius of each circle.
fn svg_marks(svg: &str, kind: &str, fill: &str) -> Vec<f64> {
    let size = if kind == "<rect" { "height" } else { "r" };
    svg.lines()
        .map(str::trim)
        .filter(|l| l.starts_with(kind) && l.contains(&format!("fill=\"{fill}\"")))
        .map(|l| {
            let from = l.find(&format!(" {size}=\"")).expect("a size") + size.len() + 3;
            let len = l[from..].find('"').expect("a closing quote");
            l[from..from + len].parse().expect("a number")
        })
        .collect()
}

/// `--modes lockstep,parallel`: each slice in both
/// modes and one exact reference; a row per slice and mode, a curve per
/// mode. By hand: parallel mode injects every frame one slice later than
/// lock-step and delivers it as lock-step does, so the last ping's
/// request and reply each arrive one slice later, and the command ends
/// two slices later (16 us at 200:1000, 32 us at 400:2000, of 8-ns node
/// cycles), give or take a slice.
#[test]
fn a_slice_study_in_two_modes_gives_a_curve_per_mode() {
    if !qemu_available() {
        return;
    }
    let out = std::env::temp_dir().join(format!("fsin-qemu-modes-{}", std::process::id()));
    let image = qemu_adapter::qemu::default_image_dir();
    let [ck, dir] = booted(2, Image::Busybox);
    let (o, r) = qemu_run(&[
        "--image",
        image.to_str().unwrap(),
        &ck,
        &dir,
        "--run",
        "ping -c 5 -i 0.01 10.0.0.2",
        "--vary",
        "slice=200:1000,400:2000",
        "--modes",
        "lockstep,parallel",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{r}");
    let points = r["points"].as_array().unwrap();
    let runs: Vec<(&str, &str, bool)> = points
        .iter()
        .map(|p| {
            (
                p["value"].as_str().unwrap(),
                p["mode"].as_str().unwrap(),
                p["reference"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        runs,
        [
            ("200:1000", "lockstep", false),
            ("200:1000", "parallel", false),
            ("400:2000", "lockstep", false),
            ("400:2000", "parallel", false),
            ("200:1000", "exact", true),
        ]
    );
    let guest = |k: usize| points[k]["guest_s"].as_f64().unwrap();
    for (k, slice_s) in [(0, 8e-6), (2, 16e-6)] {
        let later = guest(k + 1) - guest(k);
        assert!(
            later > slice_s && later < 3.0 * slice_s,
            "parallel mode {later} s later than lock-step at {} ({slice_s} s slices)",
            runs[k].0
        );
    }
    // The reference: exact mode at the finest slice.
    let reference = process::read_json(&out.join("run-4/report.json"));
    assert_eq!(
        (
            reference["sync_mode"].as_str(),
            reference["slice_net_cycles"].as_u64(),
            reference["slice_node_cycles"].as_u64()
        ),
        (Some("exact"), Some(200), Some(1000)),
        "{reference}"
    );
    // Each row's error and speed-up against it, from the runs themselves
    // (one run a row, in the order of the runs).
    let summary = r["summary"].as_array().unwrap();
    assert_eq!(summary.len(), 4);
    let wall = |k: usize| points[k]["app_wall_s"].as_f64().unwrap();
    for (k, row) in summary.iter().enumerate() {
        let error = (guest(k) - guest(4)) / guest(4) * 100.0;
        let speedup = wall(4) / wall(k);
        let (e, s) = (row["error_pct"].as_f64(), row["speedup"].as_f64());
        assert!(
            (e.unwrap() - error).abs() <= 1e-9 * error.abs().max(1.0)
                && (s.unwrap() - speedup).abs() <= 1e-9 * speedup,
            "row {k}: {row}, want error {error} %, speed-up {speedup}"
        );
    }
    let svg = std::fs::read_to_string(out.join("tradeoff.svg")).unwrap();
    let texts: Vec<&str> = svg.lines().map(str::trim).collect();
    for label in ["lockstep", "parallel"] {
        assert!(texts.contains(&label), "{label}: {texts:?}");
    }
    // A marker per slice on each mode's curve, and one in the legend.
    for colour in ["#0000FF", "#E67814"] {
        assert_eq!(
            svg_marks(&svg, "<circle", colour).len(),
            3,
            "{colour}: {svg}"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// Self-consistency of `--trace-out`: the trace of a 4-guest
/// exact-mode run of `--app is` (no false delay: every frame enters its
/// guest at its cycle), replayed by `fsin run` on the same network, gives
/// each guest's last event within 2% of the live run's node cycle.
#[test]
fn an_exact_run_replayed_gives_back_each_guests_last_event() {
    if !mpi_image_available() {
        return;
    }
    let path = std::env::temp_dir().join(format!("fsin-trace-is-{}.trc", std::process::id()));
    let [ck, dir] = booted(4, Image::Mpi);
    let (o, r) = qemu_json(
        &[
            "--guests",
            "4",
            &ck,
            &dir,
            "--app",
            "is",
            "--roi",
            "command",
            "--mode",
            "exact",
            "--slice",
            "200:10000",
            "--trace-out",
            path.to_str().unwrap(),
            "topo=torus_4",
            "nic_latency=200",
        ],
        Duration::from_secs(600),
    );
    assert!(o.status.success(), "report: {r}");
    restored(&r);
    assert_eq!(r["app"]["results"]["verified"].as_f64(), Some(1.0), "{r}");
    // MPI talks TCP: its segments are counted, and on a lossless 4-node
    // ring few are sent again.
    let segments = r["tcp_segments"].as_u64().unwrap();
    assert!(segments > 100, "{r}");
    assert!(
        r["tcp_retransmissions"].as_u64().unwrap() * 100 < segments,
        "{r}"
    );
    let live: Vec<f64> = r["trace"]["last_event_cycles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(live.len(), 4);
    let rep = last_json(&fsin(
        &[
            "run",
            &format!("tracefile={}", path.display()),
            "topo=torus_4",
            "fsin_cycle_relation=200",
            "node_cycle_relation=10000",
            "nic_latency=200",
            "--json",
        ],
        Duration::from_secs(120),
    ));
    assert_eq!(rep["deadlock"], false, "{rep}");
    // 50 node cycles per network cycle.
    let replayed: Vec<f64> = rep["task_done_cycles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap() * 50.0)
        .collect();
    for (g, (l, p)) in live.iter().zip(&replayed).enumerate() {
        assert!(*l > 1e6, "guest {g} traced {l} cycles");
        assert!(
            (p - l).abs() <= 0.02 * l,
            "guest {g}: live {l}, replayed {p}"
        );
    }
    let _ = std::fs::remove_file(&path);
}

/// `--predict` and `--repeat` (on values that change
/// the network): a 2-guest study of pings over `slice=200:10000,2000:10000`
/// (links 10 times faster) with 2 runs per value. The first run's trace
/// is replayed on each value's network: study.csv has the full-system and
/// the trace-driven columns, and they differ (the prediction replays the
/// frames only). Each value's runs take the same two seeds, which give
/// different guest times; on the faster links every ping ends sooner.
/// runs.csv has a row per run as it went, study.csv each value's 99%
/// interval (Student's t), and study.svg a bar per value and side.
#[test]
fn predict_and_repeat_give_both_sides_and_seeded_runs() {
    if !qemu_available() {
        return;
    }
    let out = std::env::temp_dir().join(format!("fsin-qemu-predict-{}", std::process::id()));
    // A checkpoint outside --out, so that nothing but the study makes it.
    let [ck, dir] = booted(2, Image::Busybox);
    let image = qemu_adapter::qemu::default_image_dir();
    let (o, r) = qemu_run(&[
        "--image",
        image.to_str().unwrap(),
        "--run",
        "ping -c 3 10.0.0.2",
        "--vary",
        "slice=200:10000,2000:10000",
        "--predict",
        "--repeat",
        "2",
        &ck,
        &dir,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{r}");
    let runs = r["points"].as_array().unwrap();
    assert_eq!(runs.len(), 4, "no reference: the slices differ in ratio");
    let guest = |k: usize| runs[k]["guest_s"].as_f64().unwrap();
    assert_eq!(
        (runs[0]["seed"].clone(), runs[1]["seed"].clone()),
        (runs[2]["seed"].clone(), runs[3]["seed"].clone())
    );
    assert_ne!(runs[0]["seed"], runs[1]["seed"]);
    assert_ne!(guest(0), guest(1), "different seeds");
    assert!(guest(2) < guest(0) && guest(3) < guest(1), "{r}");
    let (csv, col, values) = csv_table(&out.join("study.csv"));
    assert_eq!(values.len(), 2, "{csv}");
    let number = |row: &[String], name: &str| row[col(name)].parse::<f64>().unwrap();
    for (v, row) in values.iter().enumerate() {
        let (full, predicted) = (number(row, "guest_s"), number(row, "predicted_s"));
        assert!(full > 0.0 && predicted > 0.0 && full != predicted, "{csv}");
        // The 99% interval of two runs: t(0.995, 1) = 63.657 times their
        // standard error, |a - b| / 2.
        let want = 63.657 * (guest(2 * v) - guest(2 * v + 1)).abs() / 2.0;
        let half = number(row, "guest_s_ci99");
        assert!(
            (half - want).abs() <= 1e-6 + 1e-9 * want,
            "{half} {want}: {csv}"
        );
    }
    // runs.csv: a row per run, as the runs went.
    let (per_run, at, rows) = csv_table(&out.join("runs.csv"));
    assert_eq!(rows.len(), 4, "{per_run}");
    for (k, row) in rows.iter().enumerate() {
        assert_eq!(row[at("repeat")], (k % 2).to_string(), "{per_run}");
        assert_eq!(row[at("seed")], runs[k]["seed"].to_string(), "{per_run}");
        let g: f64 = row[at("guest_s")].parse().unwrap();
        assert!((g - guest(k)).abs() <= 1e-6, "{per_run}");
        assert!(!row[at("predicted_s")].is_empty(), "{per_run}");
    }
    // study.svg: per value a full-system bar (blue) and a frame-level
    // prediction (orange), none at the MPI level (green).
    let svg = std::fs::read_to_string(out.join("study.svg")).unwrap();
    assert!(svg.contains("trace-driven"));
    for (colour, bars) in [("#0000FF", 2), ("#E67814", 2), ("#28A03C", 0)] {
        assert_eq!(
            svg_marks(&svg, "<rect", colour).len(),
            bars,
            "{colour}: {svg}"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// SIGTERM during a guest run (as Slurm sends at a job's time limit)
/// ends it as Ctrl-C does: exit 1, the report of what ran on stdout and
/// in `--out`, and nothing left behind: no process it started outlives the
/// command, and its slice board and socket directory are gone.
#[test]
fn sigterm_stops_fsin_qemu_and_leaves_nothing_behind() {
    if !qemu_available() {
        return;
    }
    let out = std::env::temp_dir().join(format!("fsin-qemu-term-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let o = out.to_str().unwrap();
    let [ck, dir] = booted(2, Image::Mpi);
    let mut w = process::Watched::start_args(&[
        "qemu",
        "--guests",
        "2",
        &ck,
        &dir,
        "--run",
        "sleep 600",
        "--json",
        "--out",
        o,
        "topo=torus_2",
    ]);
    let pid = w.pid();
    w.wait_within("application:", BOOT_LIMIT);
    // The run's directory of plugin sockets (`fsin-nic-bridge-PID-K`),
    // beside any that processes with this PID left before.
    let ours = |pid: i32| {
        let prefix = format!("fsin-nic-bridge-{pid}-");
        std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with(&prefix))
            .collect::<std::collections::BTreeSet<_>>()
    };
    let during = ours(pid);
    assert!(
        !during.is_empty(),
        "no fsin-nic-bridge-{pid}-K while it runs"
    );
    w.signal(libc::SIGTERM);
    let e = w.end(Duration::from_secs(60));
    e.assert_clean_stop("fsin qemu, SIGTERM while the application runs");
    let r = e.json();
    let reason = r["end_reason"].as_str().unwrap_or_default();
    assert!(reason.contains("SIGTERM"), "{r}");
    let written = process::read_json(&out.join("report.json"));
    assert_eq!(written["end_reason"], r["end_reason"], "{written}");
    let after = ours(pid);
    assert!(
        after.is_subset(&during) && after.len() + 1 == during.len(),
        "run directories left behind: {after:?} (while it ran: {during:?})"
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// A second signal while `fsin qemu` shuts down (README, "Exit codes"):
/// with the guests' QEMUs stopped (SIGSTOP), the shutdown after SIGTERM
/// waits for them; SIGINT then ends the command at once with exit 130,
/// and its QEMUs die with it.
#[test]
fn a_second_signal_ends_fsin_qemu_at_once_with_its_qemus() {
    if !qemu_available() {
        return;
    }
    let [ck, dir] = booted(2, Image::Mpi);
    let mut w = process::Watched::start_args(&[
        "qemu",
        "--guests",
        "2",
        &ck,
        &dir,
        "--run",
        "sleep 600",
        "--json",
        "topo=torus_2",
    ]);
    w.wait_within("application:", BOOT_LIMIT);
    let e = process::second_signal(w, "qemu-system", 2, Duration::from_secs(10));
    assert!(e.took < Duration::from_secs(5), "{:?}", e.took);
}

/// Signals at the two phases of `fsin qemu --checkpoint` around the
/// measured run: SIGINT while the guests boot ends the command
/// with the boot's report (stdout and `--out`), nothing saved and nothing
/// left behind; SIGHUP while the booted guests are saved lets the save
/// finish, then ends the command before the run, with a report that says
/// so; and the checkpoint it kept is one a later run restores and runs.
#[test]
fn signals_while_booting_and_saving_stop_fsin_qemu() {
    if !qemu_available() {
        return;
    }
    let base = std::env::temp_dir().join(format!("fsin-qemu-phases-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let (ck, out) = (base.join("ck"), base.join("out"));
    let command = format!(
        "qemu --guests 2 --run true --json --checkpoint {} --out {} topo=torus_2",
        ck.display(),
        out.display()
    );
    for (phase, sig, name, reason) in [
        (
            "booting:",
            libc::SIGINT,
            "SIGINT",
            "interrupted by SIGINT".to_string(),
        ),
        (
            "saving the booted guests",
            libc::SIGHUP,
            "SIGHUP",
            format!(
                "interrupted by SIGHUP after the booted cluster was saved in {}",
                ck.display()
            ),
        ),
    ] {
        let mut w = process::Watched::start(&command);
        w.wait_within(phase, BOOT_LIMIT);
        w.signal(sig);
        let e = w.end(Duration::from_secs(60));
        e.assert_clean_stop(&format!("fsin qemu, {name} at {phase:?}"));
        for r in [e.json(), process::read_json(&out.join("report.json"))] {
            assert_eq!(r["end_reason"], reason, "{r}");
            assert_eq!(r["guest_fault"], Value::Null, "{r}");
        }
        let saved = ck.join("checkpoint.json").is_file();
        assert_eq!(
            saved,
            name == "SIGHUP",
            "{phase}: checkpoint saved: {saved}"
        );
    }
    let o = fsin(
        &command.split_whitespace().collect::<Vec<_>>(),
        Duration::from_secs(120),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = last_json(&o);
    assert_eq!(r["checkpoint"]["saved"], false, "{r}");
    assert_eq!(r["app"]["exit_code"], 0, "{r}");
    let _ = std::fs::remove_dir_all(&base);
}

/// A study survives an interruption: SIGINT during the second
/// of two values leaves DIR resumable; run again with the same --out, the
/// study runs the second value only, from the boot kept in DIR; run again
/// with a setting changed, both values run again.
#[test]
fn an_interrupted_study_resumes_where_it_stopped() {
    if !qemu_available() {
        return;
    }
    let out = std::env::temp_dir().join(format!("fsin-qemu-resume-{}", std::process::id()));
    let image = qemu_adapter::qemu::default_image_dir();
    let args = [
        "qemu",
        "--guests",
        "2",
        "--image",
        image.to_str().unwrap(),
        "--run",
        "sleep 5",
        "--vary",
        "intransit_pr=0,1",
        "--out",
        out.to_str().unwrap(),
        "--json",
        "topo=torus_2",
    ];
    let mut child = Command::new(FSIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut seen = String::new();
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            seen.push_str(&line);
            seen.push('\n');
            if line.contains("(intransit_pr=1, 2/2) [")
                && (line.contains("application") || line.contains("cluster up"))
            {
                break;
            }
        }
        seen
    });
    let start = Instant::now();
    while !reader.is_finished() {
        assert!(
            start.elapsed() < Duration::from_secs(240),
            "the second value never ran"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let seen = reader.join().unwrap();
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let status = child.wait().unwrap();
    assert!(!status.success(), "interrupted: {seen}");
    assert!(out.join("run-0/point.json").is_file());
    assert!(
        !out.join("run-1/point.json").exists(),
        "the cut-off run left no point"
    );
    let o = fsin(&args, Duration::from_secs(240));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(
        log.contains("intransit_pr=0 (1/2): done before, in run-0"),
        "{log}"
    );
    assert!(!log.contains("booting the 2 guests once"), "{log}");
    assert!(
        log.contains("restoring the 2 guests from the checkpoint in"),
        "{log}"
    );
    let r = last_json(&o);
    assert_eq!(r["points"].as_array().unwrap().len(), 2);
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run-1/report.json")).unwrap())
            .unwrap();
    assert_eq!(report["checkpoint"]["saved"], false, "restored: {report}");
    // A setting changed: every run it touches (here both) runs again, from
    // the kept boot.
    let mut changed = args.to_vec();
    changed.push("nic_latency=300");
    let o = fsin(&changed, Duration::from_secs(240));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(!log.contains("done before"), "{log}");
    assert_eq!(log.matches("restoring the 2 guests").count(), 2, "{log}");
    let _ = std::fs::remove_dir_all(&out);
}

/// A run with `--timeline PRV --out OUT` wrote both: the Paraver file and
/// its chart.
fn drew_timeline(prv: &std::path::Path, out: &std::path::Path) {
    let text = std::fs::read_to_string(prv).unwrap_or_default();
    assert!(
        text.starts_with("#Paraver"),
        "{}",
        &text[..text.len().min(200)]
    );
    assert!(out.join("timeline.svg").is_file());
}

/// Boot once, run many: the first `fsin qemu --checkpoint DIR` boots the
/// MPI guests, saves them in DIR (QEMU's migration, one file per guest)
/// and runs the command from the saved cluster; the second finds the
/// checkpoint and boots nothing. Both runs start from the same saved
/// guests, so they are the same to the byte: the same pcap capture and the
/// same application figures (`--app is`, the NPB IS-like sort, across the
/// simulated network: its own check says every key arrived in order). A
/// third run of another application (`--app cg`, NPB CG-like, whose
/// residual must fall below 1e-6) starts from the same checkpoint. A
/// checkpoint is for lock-step runs of a command only. The first run has
/// `--timeline` and an `--out` not made yet: the run that boots and saves
/// writes no timeline (it once failed drawing its chart into that
/// `--out`), the measured one does.
#[test]
fn runs_restored_from_one_checkpoint_are_identical() {
    if !mpi_image_available() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("fsin-qemu-ckpt-{}", std::process::id()));
    let ckpt = dir.join("cluster");
    let ckpt_arg = ckpt.to_str().unwrap();
    let (timeline, out) = (dir.join("run0.prv"), dir.join("out"));
    let runs: Vec<(Vec<u8>, Value, String)> = (0..2)
        .map(|k| {
            let pcap = dir.join(format!("run{k}.pcap"));
            let mut args = vec![
                "--checkpoint",
                ckpt_arg,
                "--app",
                "is",
                "--roi",
                "command",
                "--slice",
                "200:10000",
                "--pcap",
                pcap.to_str().unwrap(),
            ];
            if k == 0 {
                let drawn = ["--timeline", timeline.to_str().unwrap()];
                args.extend(drawn.into_iter().chain(["--out", out.to_str().unwrap()]));
            }
            let (o, r) = qemu_run(&args);
            assert!(o.status.success(), "run {k}: {r}");
            let stderr = String::from_utf8_lossy(&o.stderr).to_string();
            (std::fs::read(&pcap).expect("pcap written"), r, stderr)
        })
        .collect();
    let (a, b) = (&runs[0], &runs[1]);
    assert!(
        a.2.contains("holds no checkpoint"),
        "the first run boots: {}",
        a.2
    );
    assert!(!b.2.contains("booting"), "the second run restores: {}", b.2);
    for (k, (_, r, _)) in runs.iter().enumerate() {
        let c = &r["checkpoint"];
        assert_eq!(
            c["saved"], false,
            "run {k} started from the checkpoint: {c}"
        );
        assert!(c["wall_s"].as_f64().is_some_and(|s| s < 60.0), "{c}");
        let is = &r["app"]["results"];
        assert_eq!(is["verified"], 1.0, "{r}");
        assert_eq!(is["keys"], 2.0 * 4096.0, "{is}");
    }
    drew_timeline(&timeline, &out);
    assert!(a.0.len() > 24 + 10 * (16 + 60), "the launch in the capture");
    assert!(a.0 == b.0, "the two captures differ");
    for key in ["frames_sent", "frames_delivered", "slices", "network"] {
        assert_eq!(a.1[key], b.1[key], "{key} differs between the two runs");
    }
    for key in ["exit_code", "guest_s", "output"] {
        assert_eq!(a.1["app"][key], b.1["app"][key], "app.{key} differs");
    }
    let (o, r) = qemu_run(&[
        "--checkpoint",
        ckpt_arg,
        "--app",
        "cg",
        "--roi",
        "command",
        "--slice",
        "200:10000",
    ]);
    assert!(o.status.success(), "cg: {r}");
    assert_eq!(r["checkpoint"]["saved"], false, "{r}");
    let cg = &r["app"]["results"];
    assert_eq!(cg["verified"], 1.0, "{cg}");
    assert!(cg["residual"].as_f64().is_some_and(|x| x < 1e-6), "{cg}");
    assert_eq!(cg["rows"], 2.0 * 512.0, "{cg}");
    let o = fsin(
        &[
            "qemu",
            "--timing",
            "free",
            "--checkpoint",
            ckpt_arg,
            "--run",
            "true",
        ],
        Duration::from_secs(30),
    );
    assert_eq!(o.status.code(), Some(2), "a checkpoint is for lock-step");
    assert!(String::from_utf8_lossy(&o.stderr).contains("--checkpoint"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--share DIR`: every guest reads the host directory at /mnt/host (a
/// read-only snapshot), so a script placed there runs on guest 0 and, via
/// mpirun, on both guests; the guest cannot write to it.
#[test]
fn a_shared_host_directory_is_readable_in_every_guest() {
    if !mpi_image_available() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("fsin-share-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("sub/greeting"), "hello from the host\n").unwrap();
    std::fs::write(
        dir.join("where.sh"),
        "#!/bin/sh\necho \"$(hostname) read $(cat /mnt/host/sub/greeting)\"\n",
    )
    .unwrap();
    let (o, r) = qemu_json(
        &[
            "--guests",
            "2",
            "--share",
            dir.to_str().unwrap(),
            "--run",
            "touch /mnt/host/x 2>/dev/null || echo read-only; mpirun --hostfile /etc/fsin/hostfile -np 2 sh /mnt/host/where.sh",
            "--progress-s",
            "0",
            "topo=torus_2",
        ],
        Duration::from_secs(280),
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert!(o.status.success(), "report: {r}");
    let out = r["app"]["output"].as_str().unwrap_or_default();
    assert!(out.lines().any(|l| l == "read-only"), "{out}");
    for node in ["node0", "node1"] {
        assert!(
            out.lines()
                .any(|l| l == format!("{node} read hello from the host")),
            "{node}: {out}"
        );
    }
}

/// `scripts/install-qemu.sh --packages ray` builds the MPI image with
/// Debian's `ray` (an MPI genome assembler the MPI image does not ship) in
/// a directory of its own, printed on its last line; `mpirun` starts Ray on
/// both guests of that image. (Needs root for mmdebstrap, as CI has; the
/// image is cached for later runs.)
#[test]
fn install_qemu_adds_debian_packages_to_an_image_of_their_own() {
    if !mpi_image_available() {
        return;
    }
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } != 0 {
        skip("mmdebstrap needs root");
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/install-qemu.sh");
    let o = Command::new("bash")
        .args([script, "--packages", "ray"])
        .stderr(Stdio::inherit())
        .output()
        .expect("install-qemu.sh runs");
    assert!(o.status.success(), "install-qemu.sh --packages ray failed");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let image = stdout.lines().last().unwrap_or_default().to_string();
    let base = qemu_adapter::qemu::default_image_dir().join("mpi");
    assert_ne!(std::path::Path::new(&image), base, "a directory of its own");
    let requested = std::fs::read_to_string(format!("{image}/packages.requested")).unwrap();
    assert_eq!(requested.trim(), "ray");
    let (o, r) = qemu_json(
        &[
            "--guests",
            "2",
            "--image",
            &image,
            "--run",
            "mpirun --hostfile /etc/fsin/hostfile -np 2 Ray -version",
            "--progress-s",
            "0",
            "topo=torus_2",
        ],
        Duration::from_secs(280),
    );
    assert!(o.status.success(), "report: {r}");
    let out = r["app"]["output"].as_str().unwrap_or_default();
    assert!(out.contains("Ray version 2.3.1"), "{out}");
}

/// `--share` refuses, before any guest starts, what it cannot share: a
/// path that is not a directory, and an image without a shared root.
#[test]
fn share_refuses_a_file_and_an_image_without_a_shared_root() {
    if !mpi_image_available() {
        return;
    }
    let busybox = qemu_adapter::qemu::default_image_dir();
    let busybox = busybox.to_str().unwrap();
    for (args, why) in [
        (
            &["--share", "/etc/hostname"][..],
            "--share /etc/hostname: not a directory",
        ),
        (
            &["--image", busybox, "--share", "/etc"][..],
            "--share needs an image with a shared root",
        ),
    ] {
        let mut all = vec!["--guests", "2", "--run", "true"];
        all.extend_from_slice(args);
        all.push("topo=torus_2");
        let (o, r) = qemu_json(&all, Duration::from_secs(60));
        assert_eq!(o.status.code(), Some(1), "{args:?}: {r}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(why), "{args:?}: {err}");
    }
}

/// A guest whose root file system fills up (an /init that writes until
/// the disk is full, in 128 MiB of RAM) ends the run within seconds of its
/// console saying so, naming the guest and quoting the line, instead of
/// waiting for the 600 s boot timeout; `fsin qemu` exits 1.
#[test]
fn a_guest_whose_root_fills_up_is_named_within_seconds() {
    if !qemu_available() {
        return;
    }
    let dir = image_with_init(
        "full-root",
        b"#!/bin/busybox sh\n/bin/busybox mount -t devtmpfs dev /dev\n/bin/busybox dd if=/dev/zero of=/fill bs=1M\nwhile :; do /bin/busybox sleep 3600; done\n",
    );
    let start = Instant::now();
    let (o, r) = qemu_run(&[
        "--timing",
        "free",
        "--image",
        dir.to_str().unwrap(),
        "--memory-mb",
        "128",
        "--run",
        "true",
    ]);
    let wall = start.elapsed();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(o.status.code(), Some(1), "report: {r}");
    let fault = r["guest_fault"].as_str().unwrap_or_default();
    assert!(fault.starts_with("guest "), "{fault}");
    assert!(fault.contains("ran out of space"), "{fault}");
    assert!(
        fault.contains("No space left on device"),
        "quotes the console: {fault}"
    );
    assert!(
        wall < Duration::from_secs(60),
        "took {wall:?}: the boot timeout, not the console"
    );
}

/// The busybox image with a second archive that replaces its /init (the
/// kernel unpacks concatenated archives in order), in a new directory.
fn image_with_init(name: &str, init: &[u8]) -> std::path::PathBuf {
    let base = qemu_adapter::qemu::default_image_dir();
    let dir = std::env::temp_dir().join(format!("fsin-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(base.join("vmlinuz"), dir.join("vmlinuz")).unwrap();
    let mut initrd = std::fs::read(base.join("initramfs.cpio.gz")).unwrap();
    // The kernel looks for the next archive at a 4-byte boundary.
    initrd.resize(initrd.len().next_multiple_of(4), 0);
    initrd.extend(cpio_entry("init", 0o100755, init));
    initrd.extend(cpio_entry("TRAILER!!!", 0, b""));
    std::fs::write(dir.join("initramfs.cpio.gz"), initrd).unwrap();
    dir
}

/// One file of a newc cpio archive (the initramfs format), as bytes.
fn cpio_entry(name: &str, mode: u32, data: &[u8]) -> Vec<u8> {
    let pad4 = |v: &mut Vec<u8>| v.resize(v.len().next_multiple_of(4), 0);
    let mut v = format!(
        "070701{:08X}{mode:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}",
        1,
        0,
        0,
        1,
        0,
        data.len(),
        0,
        0,
        0,
        0,
        name.len() + 1,
        0
    )
    .into_bytes();
    v.extend_from_slice(name.as_bytes());
    v.push(0);
    pad4(&mut v);
    v.extend_from_slice(data);
    pad4(&mut v);
    v
}

/// An image whose /init never runs the command (the busybox image with a
/// second archive that replaces /init: the kernel unpacks concatenated
/// archives in order) ends the run with a message naming guest 0 and the
/// cause, and `fsin qemu` exits 1 instead of waiting.
#[test]
fn an_image_that_never_runs_the_command_is_named() {
    if !qemu_available() {
        return;
    }
    let dir = image_with_init(
        "bad-image",
        b"#!/bin/busybox sh\n/bin/busybox echo FSIN-DONE uptime=1\nwhile :; do /bin/busybox sleep 3600; done\n",
    );
    let (o, r) = qemu_run(&[
        "--timing",
        "free",
        "--image",
        dir.to_str().unwrap(),
        "--run",
        "echo never",
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(o.status.code(), Some(1), "report: {r}");
    let fault = r["guest_fault"].as_str().unwrap_or_default();
    assert!(fault.starts_with("guest 0 (node 0"), "{fault}");
    assert!(
        fault.contains("finished without running the command"),
        "{fault}"
    );
}

/// A misbehaving guest costs only itself. Guest 0 of three runs
/// `fsin-bench hostile eth0 50`, which sends through a raw packet socket 50
/// times each: a frame to a MAC address no node has, a frame with another
/// node's source address (node 99's) to guest 2, a broadcast of garbage
/// (an EtherType no one speaks), and a 20-byte frame to guest 1; then a
/// flood of 200 full-size frames to guest 2, faster than its link drains
/// (`--slice 200:10000`), into a NIC queue of six frames
/// (`nic_queue_bytes=9088`); then guest 1
/// pings guest 3 over the remote shell. The ping gets all its replies,
/// the report counts exactly guest 0's 50 frames of each kind against
/// guest 0 and nothing of the kind against the others (the runt reaches
/// the network padded to 60 bytes by the e1000, as Ethernet requires, so
/// nothing is short), the flood's drops are guest 0's alone, and two runs
/// give the same report and capture.
#[test]
fn a_misbehaving_guest_costs_only_itself() {
    if !mpi_image_available() {
        return;
    }
    // 50 rounds of bad frames, then a flood of 200 full-size frames that
    // guest 0's NIC queue (nic_queue_bytes: six of them) cannot hold.
    let cmd = "fsin-bench hostile eth0 50 200 && fsin-rsh node1 busybox ping -c 3 10.0.0.3";
    let dir = std::env::temp_dir().join(format!("fsin-qemu-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let [ck, boot] = booted(3, Image::Mpi);
    let (runs, pcaps): (Vec<Value>, Vec<Vec<u8>>) = (0..2)
        .map(|k| {
            let pcap = dir.join(format!("run{k}.pcap"));
            let args = [
                "--guests",
                "3",
                &ck,
                &boot,
                "--run",
                cmd,
                "--pcap",
                pcap.to_str().unwrap(),
                // 800 bytes of link per 10,000 node cycles: slower than the
                // flood.
                "--slice",
                "200:10000",
                "nic_queue_bytes=9088",
            ];
            let (o, r) = qemu_json(&args, Duration::from_secs(300));
            assert!(o.status.success(), "report: {r}");
            restored(&r);
            (r, std::fs::read(&pcap).expect("pcap written"))
        })
        .unzip();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(pcaps[0] == pcaps[1], "the two captures differ");
    let r = &runs[0];
    let out = r["app"]["output"].as_str().unwrap();
    assert!(out.starts_with("FSIN-HOSTILE frames=400\n"), "{out}");
    assert!(
        out.contains("3 packets transmitted, 3 packets received"),
        "{out}"
    );
    let conduct = |node: usize| r["per_node"][node]["conduct"].clone();
    // 50 of each bad frame; the broadcasts are the 50 garbage ones and,
    // where the boot's timing leaves guest 0 a peer to resolve again, an
    // ARP request for each such peer (at most its 2 peers).
    let c = conduct(0);
    let broadcast = c["broadcast"].as_u64().unwrap();
    assert!((50..=52).contains(&broadcast), "{r}");
    assert_eq!(
        c,
        serde_json::json!({"short": 0, "oversized": 0, "foreign_source": 50,
            "unknown_destination": 50, "broadcast": broadcast}),
        "{r}"
    );
    // The flood filled guest 0's queue only: at most 200 of its frames
    // dropped there, none of the others'.
    let dropped = |node: usize| r["per_node"][node]["frames_dropped"].as_u64().unwrap();
    assert!((1..=200).contains(&dropped(0)), "{r}");
    assert_eq!(r["frames_dropped"].as_u64().unwrap(), dropped(0), "{r}");
    for node in [1, 2] {
        assert_eq!(dropped(node), 0, "node {node}: {r}");
        let c = conduct(node);
        for key in [
            "short",
            "oversized",
            "foreign_source",
            "unknown_destination",
        ] {
            assert_eq!(c[key], 0, "node {node}: {c}");
        }
    }
    for key in [
        "per_node",
        "guest_reports",
        "slices",
        "frames_sent",
        "frames_delivered",
        "network",
        "app_cycles",
    ] {
        assert_eq!(
            runs[0][key], runs[1][key],
            "{key} differs between the two runs"
        );
    }
}

/// `--trace-level frames,mpi`: `fsin-calls` (examples/qemu/mpi/calls.c,
/// in the MPI image) on 4 guests makes a known number of each MPI call;
/// the trace that comes back counts exactly those, every rank ran on its
/// own guest, and each rank's records hold the peers, sizes and tags the
/// program used (the ring's sends to r + 1, its receives from r - 1, the
/// Alltoallv's per-peer counts). The Dimemas file reads back with `fsin
/// run` (as INSEE reads Dimemas: collectives and Irecv's posting dropped).
/// The run's `--timeline` (Paraver, read here from BSC's format
/// description) has each rank as a track of its guest with every one of
/// those calls as Extrae's events, and its clock placed on the node
/// cycles well enough that no rank leaves the barrier before the last one
/// entered it. The run measures from every rank's `MPI_Init` (`--roi
/// mpi`, booted: the ranks get their go live).
#[test]
fn mpi_trace_counts_every_call_of_a_known_program() {
    if !mpi_image_available() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("fsin-mpi-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Both levels: the frames in calls.trc, the MPI calls beside it.
    let frames_file = dir.join("calls.trc");
    let file = dir.join("calls.mpi.dim");
    let timeline = dir.join("calls.prv");
    let (o, r) = qemu_json(
        &[
            "--guests",
            "4",
            "--run",
            "mpirun --hostfile /etc/fsin/hostfile -np 4 fsin-calls",
            "--trace-out",
            frames_file.to_str().unwrap(),
            "--trace-level",
            "frames,mpi",
            "--timeline",
            timeline.to_str().unwrap(),
            "--roi",
            "mpi",
            "--slice",
            "200:10000",
            "--progress-s",
            "0",
            "topo=torus_4",
        ],
        BOOT_LIMIT + Duration::from_secs(600),
    );
    assert!(o.status.success(), "report: {r}");
    // Measured from every rank's MPI_Init, the launch in warm-up.
    let g = &r["region"];
    assert_eq!(
        (g["began"].as_bool(), g["ranks"].as_u64()),
        (Some(true), Some(4)),
        "{g}"
    );
    assert!(g["from_cycle"].as_u64() > Some(0), "{g}");
    let out = r["app"]["output"].as_str().unwrap();
    let tests: u64 = (out.lines())
        .filter_map(|l| l.split("tests=").nth(1))
        .map(|t| t.trim().parse::<u64>().unwrap())
        .sum();
    assert_eq!(out.matches("FSIN-CALLS").count(), 4, "{out}");
    let t = &r["mpi_trace"];
    assert_eq!(t["ranks"], 4, "{t}");
    assert_eq!(
        t["hosts"],
        serde_json::json!(["node0", "node1", "node2", "node3"])
    );
    // calls.c's header: 4 ranks; the split makes two halves of 2, each
    // with one Send/Recv pair.
    let want = [
        ("MPI_Send", 4 * 3 + 4 + 2),
        ("MPI_Recv", 4 * 3 + 2),
        ("MPI_Isend", 4 * (2 * 2 + 1)),
        ("MPI_Irecv", 4 * (2 * 2 + 1 + 1)),
        ("MPI_Waitall", 4 * 2),
        ("MPI_Wait", 4),
        ("MPI_Waitany", 4),
        ("MPI_Sendrecv", 4),
        ("MPI_Test", tests),
        ("MPI_Barrier", 4),
        ("MPI_Bcast", 4),
        ("MPI_Reduce", 4),
        ("MPI_Allreduce", 4 * 3),
        ("MPI_Alltoall", 4),
        ("MPI_Alltoallv", 4),
        ("MPI_Allgather", 4),
        ("MPI_Allgatherv", 4),
        ("MPI_Gather", 4),
        ("MPI_Gatherv", 4),
        ("MPI_Scatter", 4),
        ("MPI_Scatterv", 4),
        ("MPI_Comm_dup", 4),
        ("MPI_Comm_split", 4),
    ];
    let calls = t["calls"].as_object().unwrap();
    for (name, n) in want {
        assert_eq!(
            calls.get(name).and_then(Value::as_u64),
            Some(n),
            "{name}: {t}"
        );
    }
    assert_eq!(calls.len(), want.len(), "no other calls: {t}");
    assert!(
        t["rank_s"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s.as_f64().unwrap() > 0.0),
        "{t}"
    );
    // The frames of the ranks' run: at least the 12 Sends each rank
    // makes to the others, some of them TCP's acknowledgements, at most
    // all the guests sent; the header carries them for the replay.
    let (frames, acks) = (t["frames"].as_u64().unwrap(), t["acks"].as_u64().unwrap());
    let sent = r["frames_sent"].as_u64().unwrap();
    assert!(
        frames >= 12 && acks > 0 && acks < frames && frames <= sent,
        "{frames} frames, {acks} acknowledgements, {sent} sent in all"
    );
    // The frame trace: every frame of the measured phase, sent and
    // received (as many `r` as `s` events), the guests' sends included.
    let trc = std::fs::read_to_string(&frames_file).unwrap_or_default();
    let count = |kind: &str| trc.lines().filter(|l| l.starts_with(kind)).count() as u64;
    assert_eq!(
        r["trace"]["sends"].as_u64(),
        Some(count("s ")),
        "{}",
        r["trace"]
    );
    assert!(
        count("s ") >= frames && count("s ") == count("r "),
        "{}",
        r["trace"]
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with(&format!(
            "#DIMEMAS:\"fsin-rs MPI trace; live frames {frames} acks {acks}; Open MPI coll_tuned "
        )),
        "{text}"
    );
    // World is communicator 1, the dup 2, the halves 3 and 4.
    for d in [
        "d:1:1:4:0:1:2:3",
        "d:1:2:4:0:1:2:3",
        "d:1:3:2:0:2",
        "d:1:4:2:1:3",
    ] {
        assert!(text.lines().any(|l| l == d), "{d}: {text}");
    }
    let has = |line: String| assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
    for r in 0..4u32 {
        let (next, prev) = ((r + 1) % 4, (r + 3) % 4);
        for (tag, bytes) in [(1, 8), (2, 1000), (3, 5000)] {
            has(format!("2:{r}:0:{next}:{bytes}:{tag}:1:1"));
            has(format!("3:{r}:0:{prev}:{bytes}:{tag}:1:0"));
        }
        // The Irecv from any source, as completed: from r - 1.
        has(format!("3:{r}:0:{prev}:16:20:1:2"));
        // Sendrecv: Irecv, Send, Wait.
        has(format!("2:{r}:0:{next}:24:30:1:0"));
        // Alltoallv: 4 (r + 1) bytes to each of 4, 4 (q + 1) from q.
        has(format!("10:{r}:0:9:1:0:0:{}:40", 16 * (r + 1)));
        // Allreduce of one double on the world, the dup and the halves.
        has(format!("10:{r}:0:11:1:0:0:8:8"));
        has(format!("10:{r}:0:11:2:0:0:8:8"));
        has(format!("10:{r}:0:11:{}:0:0:8:8", 3 + r % 2));
    }
    // The split halves' send: rank 0 to rank 2, rank 1 to rank 3.
    has("2:0:0:2:32:50:3:1".into());
    has("2:1:0:3:32:50:4:1".into());
    // The kernel's time the plugin counted: in each burst, at most the
    // burst (its record follows), some in every rank's (their frames'
    // interrupts at least); per guest, some and at most the measured
    // phase's guest time.
    // The frames around each burst (their records follow the kernel's):
    // those received 60 to 1,518 bytes each, in all no more than the
    // guests sent; some sent during the calls (every rank's sends).
    let lines: Vec<&str> = text.lines().collect();
    let mut kernel = [0u64; 4];
    let (mut received, mut sent_in_calls) = (0u64, 0u64);
    let mut before = std::collections::HashMap::new();
    for (k, l) in lines.iter().enumerate() {
        let f: Vec<&str> = l.split(':').collect();
        if f.len() == 5 && f[0] == "20" && ("90000006".."90000011").contains(&f[3]) {
            let n: u64 = f[4].parse().unwrap();
            before.insert(f[3], n);
            let next = lines[k + 1];
            if next.starts_with("20:") {
                continue;
            }
            let burst: Vec<&str> = next.split(':').collect();
            assert_eq!(burst[..2], ["1", f[1]], "{l} then {next}");
            let burst_ns = burst[3].parse::<f64>().unwrap() * 1e9;
            let got = |event| before.get(event).copied().unwrap_or(0);
            let ns = got("90000006");
            assert!(ns as f64 <= burst_ns + 1.0, "{l} in {burst_ns} ns");
            kernel[f[1].parse::<usize>().unwrap()] += ns;
            let (frames, bytes) = (got("90000007"), got("90000008"));
            assert!(
                (60 * frames..=1518 * frames).contains(&bytes),
                "{frames} frames of {bytes} bytes before {next}"
            );
            received += frames;
            sent_in_calls += got("90000010");
            before.clear();
        }
    }
    assert!(kernel.iter().all(|&k| k > 0), "{kernel:?}");
    assert!(
        received <= sent && sent_in_calls > 0,
        "{received} frames received in bursts, {sent_in_calls} sent in calls, {sent} sent in all"
    );
    let region_s = r["wall"]["region_guest_s"].as_f64().unwrap();
    for g in r["guest_reports"].as_array().unwrap() {
        let k = g["kernel_s"].as_f64().unwrap_or(0.0);
        assert!(k > 0.0 && k <= region_s, "{g}: kernel {k} s of {region_s}");
    }
    ranks_in_the_timeline(&timeline, &want, &r);
    let o = fsin(
        &[
            "run",
            &format!("tracefile={}", file.display()),
            "topo=torus_4",
            "--json",
        ],
        Duration::from_secs(120),
    );
    let rr = last_json(&o);
    assert!(o.status.success(), "{rr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Checks the Paraver timeline `prv` of `mpi_trace_counts_every_call_of_a_known_program`:
/// the `.row` names four ranks after their guests, the `.pcf` names
/// Extrae's MPI values, every call in `want` is there as often as the
/// trace counts it (each an entry event and an end), the barrier's
/// entries and exits are in order across the ranks, and every blocking
/// `MPI_Send` (all eager, over TCP with Nagle off) holds a frame its guest
/// sent: the rank's clock is placed to within a call's length (measured
/// 2026-11-30: a frame leaves 495 to 7,205 cycles after a call's entry,
/// 166,000 to 180,000 in each rank's first, which opens its connection;
/// the barrier's last entry 400,298 cycles before its first exit).
fn ranks_in_the_timeline(prv: &std::path::Path, want: &[(&str, u64)], r: &Value) {
    let text = std::fs::read_to_string(prv).unwrap();
    let pcf = std::fs::read_to_string(prv.with_extension("pcf")).unwrap();
    let row = std::fs::read_to_string(prv.with_extension("row")).unwrap();
    let threads = row.split("LEVEL THREAD SIZE").nth(1).unwrap();
    for g in 0..4 {
        assert!(threads.contains(&format!("guest {g}\nrank {g}\n")), "{row}");
    }
    // The .pcf's values of each MPI event type.
    let mut names = std::collections::HashMap::new();
    let mut kind = None;
    for line in pcf.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["0", t, ..] if t.starts_with("5000000") => kind = Some(t.parse::<u64>().unwrap()),
            [v, name] if kind.is_some() && v.parse::<u64>().is_ok() => {
                names.insert((kind.unwrap(), v.parse::<u64>().unwrap()), name.to_string());
            }
            [] => kind = None,
            _ => {}
        }
    }
    // Event records 2:cpu:appl:task:thread:time:type:value, per thread.
    let mut counts = std::collections::BTreeMap::<String, u64>::new();
    let mut open = std::collections::HashMap::new();
    let mut barrier = Vec::new();
    let mut sends = Vec::new();
    let mut frames = std::collections::BTreeSet::new();
    let mut ends = 0;
    for line in text.lines().skip(1) {
        let f: Vec<u64> = line.split(':').map(|x| x.parse().unwrap()).collect();
        if f[0] == 3 {
            // A frame: 3:cpu:appl:task:thread:sent:... from its guest.
            frames.insert((f[3], f[5]));
        }
        if f[0] != 2 || !(50_000_001..=50_000_003).contains(&f[6]) {
            continue;
        }
        let who = (f[3], f[4]);
        assert_eq!(f[4], 2, "calls are on the ranks' threads: {line}");
        if f[7] == 0 {
            ends += 1;
            let (t0, name): (u64, String) = open.remove(&who).expect("an end after an entry");
            match name.as_str() {
                "MPI_Barrier" => barrier.push((t0, f[5])),
                "MPI_Send" => sends.push((f[3], t0, f[5])),
                _ => {}
            }
        } else {
            let name = names[&(f[6], f[7])].clone();
            *counts.entry(name.clone()).or_default() += 1;
            assert!(open.insert(who, (f[5], name)).is_none(), "{line}");
        }
    }
    for (name, n) in want {
        assert_eq!(counts.get(*name), Some(n), "{name}: {counts:?}");
    }
    assert_eq!(counts.get("MPI_Finalize"), Some(&4), "{counts:?}");
    let calls: u64 = counts.values().sum();
    assert_eq!(ends, calls);
    assert_eq!(r["timeline"]["calls"], calls, "{}", r["timeline"]);
    assert_eq!(barrier.len(), 4);
    let last_in = barrier.iter().map(|b| b.0).max().unwrap();
    let first_out = barrier.iter().map(|b| b.1).min().unwrap();
    eprintln!("barrier: last entry at {last_in}, first exit at {first_out}");
    assert!(last_in <= first_out, "{barrier:?}");
    assert_eq!(sends.len(), 18);
    for (task, enter, exit) in sends {
        let first = frames.range((task, enter)..).next().copied();
        assert!(
            first.is_some_and(|(t, at)| t == task && at <= exit),
            "guest task {task}: no frame sent in its MPI_Send from {enter} to {exit} (next: {first:?})"
        );
        eprintln!(
            "MPI_Send of task {task}: a frame {} cycles in",
            first.unwrap().1 - enter
        );
    }
}

/// Self-consistency of the MPI-level trace (its goal's bound): an
/// application on 4 guests traced at the MPI level and replayed with the
/// command the report gives, on the network it was taken from: every
/// rank's replayed time (its last event, node cycles at the node clock)
/// is within 3% of its live time from `MPI_Init` to `MPI_Finalize`, the
/// MPI model's goal. `fsin-is` (the Simics paper's Fig. 4 application)
/// with `--mpi-preconnect` (the export reaches the guest's command, and
/// the ranks' first contacts fall before the trace starts; measured with
/// the built-in profile: -0.56% to -0.30%), and `fsin-cg` without it,
/// whose first `MPI_Alltoall` opens every rank's connections in the
/// trace (-1.55% to -0.93%; docs/qemu.md, "How well an MPI-level trace
/// gives back its own run").
#[test]
fn an_mpi_level_replay_gives_back_each_ranks_time() {
    if !mpi_image_available() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("fsin-mpi-self-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let [ck, boot] = booted(4, Image::Mpi);
    for (app, preconnect) in [("is", true), ("cg", false)] {
        let file = dir.join(format!("{app}4.dim"));
        let mut args = vec![
            "--guests",
            "4",
            &ck,
            &boot,
            "--app",
            app,
            "--roi",
            "command",
            "--trace-out",
            file.to_str().unwrap(),
            "--trace-level",
            "mpi",
            "--progress-s",
            "0",
            "topo=torus_4",
        ];
        if preconnect {
            args.push("--mpi-preconnect");
        }
        let (o, r) = qemu_json(&args, BOOT_LIMIT + Duration::from_secs(600));
        assert!(o.status.success(), "{app}: report: {r}");
        restored(&r);
        let command = r["app"]["command"].as_str().unwrap_or_default();
        assert_eq!(
            command.contains("export OMPI_MCA_mpi_preconnect_mpi=1\n"),
            preconnect,
            "{command}"
        );
        let t = &r["mpi_trace"];
        let live: Vec<f64> = (t["rank_s"].as_array().unwrap().iter())
            .map(|s| s.as_f64().unwrap())
            .collect();
        let replay = t["replay"].as_str().unwrap();
        let mut args: Vec<&str> = replay.split(' ').skip(1).collect();
        args.push("--json");
        let o = fsin(&args, Duration::from_secs(120));
        let rr = last_json(&o);
        assert!(o.status.success(), "{rr}");
        let c = &rr["config"];
        let num = |k: &str| c[k].as_str().unwrap().parse::<f64>().unwrap();
        let node_s = num("simics_cycle_relation") / num("fsin_cycle_relation") / num("node_clock");
        let done = rr["task_done_cycles"].as_array().unwrap();
        assert_eq!(done.len(), 4, "{rr}");
        for (rank, (d, l)) in done.iter().zip(&live).enumerate() {
            let replayed = d.as_f64().unwrap() * node_s;
            let err = (replayed - l) / l;
            assert!(
                err.abs() <= 0.03,
                "{app}, rank {rank}: replayed {replayed:.6} s, live {l:.6} s ({:+.2}%)",
                100.0 * err
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `fsin qemu --calibrate`: two guests run fsin-pingpong, and
/// the profile it writes gives every size's live round trip back within
/// 15% in the replay and 8 of the 11 within 5%
/// (docs/studies/calibrating-the-mpi-layer.md's first table: 9 of its
/// 10 within 5%, 32,768 bytes 10.2% long), with a warm 8-byte round trip that lock-step at 200:1000 cannot make shorter than
/// two slices' 16 us nor longer than the cold one of docs/model.md's
/// first measurement (785 us), a first contact at least Open MPI's
/// event tick long and a connection that takes at least three warm round
/// trips to open beyond it, a kernel's receive of a frame within a
/// one-way message's time; `fsin run` takes the profile. From the shared
/// boot of two MPI guests (in a directory of its own, which the run that
/// launches the command saves its region in), with `--timeline` and
/// `--out`: the measured run writes both. A guest count other than 2 is
/// refused before anything boots.
#[test]
fn a_calibration_writes_a_profile_that_gives_the_round_trips_back() {
    let o = fsin(
        &["qemu", "--calibrate", "--guests", "4"],
        Duration::from_secs(30),
    );
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("between 2 guests"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    if !mpi_image_available() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("fsin-calibrate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let profile = dir.join("p.conf");
    let (ck, timeline, out) = (dir.join("ck"), dir.join("cal.prv"), dir.join("out"));
    booted_into(&ck, 2, Image::Mpi);
    let (o, r) = qemu_json(
        &[
            "--calibrate",
            profile.to_str().unwrap(),
            "--checkpoint",
            ck.to_str().unwrap(),
            "--timeline",
            timeline.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--progress-s",
            "0",
        ],
        BOOT_LIMIT + Duration::from_secs(900),
    );
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{log}");
    assert!(!log.contains("booting"), "restored, not booted: {log}");
    // The run that launches the command and saves its region writes no
    // timeline; the measured one does, with its chart in --out.
    assert!(ck.join("region").join("checkpoint.json").is_file());
    drew_timeline(&timeline, &out);
    let points = r["points"].as_array().unwrap();
    assert_eq!(points.len(), 11, "{r}");
    let errors: Vec<f64> = (points.iter())
        .map(|p| {
            let live = p["rtt_us"].as_f64().unwrap();
            (p["replay_rtt_us"].as_f64().unwrap() - live).abs() / live
        })
        .collect();
    assert!(errors.iter().all(|e| *e <= 0.15), "{errors:?}");
    assert!(
        errors.iter().filter(|e| **e <= 0.05).count() >= 8,
        "{errors:?}"
    );
    let warm = points[0]["rtt_us"].as_f64().unwrap();
    assert!((16.0..785.0).contains(&warm), "{warm}");
    // A first contact waits for the sender's event loop's next run, a
    // tick (10 ms) after the one that started its connect (Open MPI 4.1's
    // opal_progress), and opening a connection beyond that takes at least
    // three round trips (ARP's request and reply, TCP's handshake, Open
    // MPI's connection messages).
    let first = &r["contact"];
    let extra = first["first_us"].as_f64().unwrap() - first["us"].as_f64().unwrap();
    assert!(extra >= 10_000.0, "{r}");
    let connect = r["mpi_connect_ns"].as_f64().unwrap();
    assert!(connect >= 3.0 * warm * 1e3, "{r}");
    // The kernel's receive of a frame is part of a one-way message's
    // time (half the warm round trip) and no less than 250 instructions
    // (an interrupt, IP's and TCP's input) at 125 million a second.
    let rx = r["mpi_rx_ns"].as_f64().unwrap();
    assert!((2_000.0..warm * 1e3 / 2.0).contains(&rx), "{r}");
    // So is an ARP request's for another guest (an interrupt, ARP's
    // input, the request dropped).
    let arp = r["mpi_arp_rx_ns"].as_f64().unwrap();
    assert!((2_000.0..warm * 1e3 / 2.0).contains(&arp), "{r}");
    let text = std::fs::read_to_string(&profile).unwrap();
    for key in [
        "\nmpi_costs=8:",
        "\nmpi_wake_ns=",
        "\nmpi_connect_ns=",
        "\nmpi_event_tick_ns=10000000",
        "\nmpi_rx_ns=",
        "\nmpi_arp_rx_ns=",
        "\nmpi_tcp_acks=1",
    ] {
        assert!(text.contains(key), "{key} in {text}");
    }
    // The profile replays a trace.
    let trace = dir.join("pp.dim");
    std::fs::write(
        &trace,
        "#DIMEMAS:\"fsin-rs MPI trace; pp\":1,00000000000000000000:2(1,1),1,0,0\nd:1:1:2:0:1\n\
         2:0:0:1:8:1:1:1\n3:0:0:1:8:1:1:0\n3:1:0:0:8:1:1:0\n2:1:0:0:8:1:1:1\n",
    )
    .unwrap();
    let (t, p) = (
        format!("tracefile={}", trace.display()),
        format!("mpi_profile={}", profile.display()),
    );
    let o = fsin(
        &[
            "run",
            &t,
            &p,
            "topo=torus_2",
            "node_clock=125000000",
            "--json",
        ],
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--vary topo=...` from one boot checkpoint (the guests do not know the
/// topology) with `--predict both`: the guests restore for
/// every value, each value's report names its topology, and every value
/// gets a prediction from the first value's frame trace and one from its
/// MPI-level trace, side by side in study.csv and study.svg.
#[test]
fn a_topology_study_restores_one_checkpoint_and_predicts_at_both_levels() {
    if !mpi_image_available() {
        return;
    }
    let out = std::env::temp_dir().join(format!("fsin-qemu-topo-{}", std::process::id()));
    let [ck, dir] = booted(4, Image::Mpi);
    let mut child = Command::new(FSIN)
        .args([
            "qemu",
            "--guests",
            "4",
            &ck,
            &dir,
            "--app",
            "cg",
            "--app-size",
            "128",
            "--roi",
            "command",
            "--vary",
            "topo=torus_4,torus_2_2",
            "--predict",
            "both",
            // Slices of 80 us of guest time: the launch and CG's messages
            // cross them at a tenth of the rounds of the default's.
            "--slice",
            "200:10000",
            "--progress-s",
            "0",
            "--out",
            out.to_str().unwrap(),
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < BOOT_LIMIT + Duration::from_secs(900),
            "still running"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(
        err.matches("restoring the 4 guests from the checkpoint")
            .count(),
        2,
        "{err}"
    );
    for (k, topo) in ["torus_4", "torus_2_2"].iter().enumerate() {
        let report: Value = serde_json::from_str(
            &std::fs::read_to_string(out.join(format!("run-{k}/report.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(report["topology"], *topo, "run-{k}");
    }
    let csv = std::fs::read_to_string(out.join("study.csv")).unwrap();
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    for row in csv.lines().skip(1) {
        let f: Vec<&str> = row.split(',').collect();
        for c in ["guest_s", "predicted_s", "predicted_mpi_s"] {
            assert!(
                f[col(c)].parse::<f64>().is_ok_and(|s| s > 0.0),
                "{c}: {csv}"
            );
        }
    }
    assert!(out.join("trace.trc").is_file() && out.join("trace.mpi.dim").is_file());
    // Each prediction again, by hand: the first run's trace replayed with
    // the replay's settings its report gives, on the run's topology; the
    // MPI-level one plus what that trace leaves out of the first run's
    // guest time (mpirun's launch and end: guest_s - traced_mpi_s).
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    let head: Vec<&str> = runs.lines().next().unwrap().split(',').collect();
    let rows: Vec<Vec<&str>> = (runs.lines().skip(1))
        .map(|r| r.split(',').collect())
        .collect();
    let at = |k: usize, name: &str| -> f64 {
        let c = head.iter().position(|h| *h == name).unwrap();
        rows[k][c].parse().unwrap()
    };
    let untraced = at(0, "guest_s") - at(0, "traced_mpi_s");
    assert!(untraced > 0.0, "{runs}");
    let first: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run-0/report.json")).unwrap())
            .unwrap();
    let replay = first["mpi_trace"]["replay"].as_str().unwrap();
    for (k, topo) in ["torus_4", "torus_2_2"].iter().enumerate() {
        for (file, column, more) in [
            ("trace.trc", "predicted_s", 0.0),
            ("trace.mpi.dim", "predicted_mpi_s", untraced),
        ] {
            let mut args = vec!["run".to_string(), "--json".to_string()];
            args.extend(replay.split(' ').skip(2).map(|kv| match kv {
                _ if kv.starts_with("tracefile=") => {
                    format!("tracefile={}", out.join(file).display())
                }
                _ if kv.starts_with("topo=") => format!("topo={topo}"),
                _ => kv.to_string(),
            }));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = fsin(&args, Duration::from_secs(120));
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let r: Value =
                serde_json::from_str(String::from_utf8_lossy(&o.stdout).lines().last().unwrap())
                    .unwrap();
            let want = r["predicted_s"].as_f64().unwrap() + more;
            assert!(
                (at(k, column) - want).abs() < 3e-6,
                "run {k}'s {column}: {} in runs.csv, {want} by hand",
                at(k, column)
            );
        }
    }
    let svg = std::fs::read_to_string(out.join("study.svg")).unwrap();
    assert!(svg.contains("green MPI"), "{svg}");
    let _ = std::fs::remove_dir_all(&out);
}

/// Frames of a capture, each with its time.
type Captured = Vec<(Duration, Vec<u8>)>;

/// The frames of the capture `pcap`, each with its time.
fn captured(pcap: &std::path::Path) -> Captured {
    let bytes = std::fs::read(pcap).expect("pcap written");
    let mut reader = pcap_file::pcap::PcapReader::new(bytes.as_slice()).expect("a pcap");
    let mut frames = Vec::new();
    while let Some(p) = reader.next_packet() {
        let p = p.expect("a packet");
        frames.push((p.timestamp, p.data.into_owned()));
    }
    frames
}

/// The times of the TCP SYNs (without ACK) to `port` among `frames`:
/// connections opened to that port.
fn syns_to(frames: &[(Duration, Vec<u8>)], port: u16) -> Vec<Duration> {
    frames
        .iter()
        .filter(|(_, f)| f.len() >= 54 && f[12..14] == [0x08, 0x00] && f[23] == 6)
        .filter(|(_, f)| {
            let tcp = &f[14 + usize::from(f[14] & 0xf) * 4..];
            tcp.len() >= 14 && tcp[2..4] == port.to_be_bytes() && tcp[13] & 0x12 == 0x02
        })
        .map(|(t, _)| *t)
        .collect()
}

/// `--roi mpi`, the default for a command that runs `mpirun`, with
/// `--checkpoint` (docs/qemu.md, "The region of interest"): IS on 4 guests, measured from the command's start (the
/// boot checkpoint restored) and from every rank's `MPI_Init` (the command
/// launched once from the boot checkpoint and saved at the region's
/// start, then that checkpoint restored, twice). The launch opens a remote
/// shell (TCP port 5040, fsin-rsh) to each of the 3 other guests'
/// daemons: those SYNs are in the command's capture and in neither
/// region's, which begin at node cycle 0 and hold exactly the frames the
/// report counts as sent, fewer than the command's: the launch is out of
/// the statistics. The two restores give the same capture to the byte (the
/// ranks' go spread alike by the same seed) and the same figures. The
/// region holds IS's timed iterations (its own `time_s`) and leaves out
/// the launch, which takes more than half a guest second on 4 guests
/// (docs/qemu.md, "What a launch costs"). A command whose ranks never
/// call `MPI_Init` runs wholly in warm-up, and the report says the region
/// never began. `--roi marker` takes a shell command's own marks
/// (`fsin-roi-mark`): its region is the guest time between them; under
/// `--roi command` the marks get their go at once.
#[test]
fn the_region_of_interest_leaves_the_launch_out_of_the_measure() {
    if !mpi_image_available() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("fsin-qemu-roi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ckpt = dir.join("cluster");
    booted_into(&ckpt, 4, Image::Mpi);
    // roi "": no --roi, the default (mpi for a command that runs mpirun).
    let run = |roi: &str, what: &[&str], k: usize| {
        let pcap = dir.join(format!("{roi}-{k}.pcap"));
        let mut args = vec!["--guests", "4", "--checkpoint", ckpt.to_str().unwrap()];
        args.extend_from_slice(what);
        if !roi.is_empty() {
            args.extend_from_slice(&["--roi", roi]);
        }
        args.extend_from_slice(&["--slice", "200:10000", "--pcap"]);
        args.extend_from_slice(&[pcap.to_str().unwrap(), "topo=torus_4"]);
        let (o, r) = qemu_json(&args, Duration::from_secs(600));
        assert!(o.status.success(), "--roi {roi}: {r}");
        let stderr = String::from_utf8_lossy(&o.stderr).to_string();
        let frames = if pcap.exists() {
            captured(&pcap)
        } else {
            Vec::new()
        };
        (r, frames, stderr)
    };
    let (whole, whole_frames, _) = run("command", &["--app", "is"], 0);
    restored(&whole);
    assert!(whole.get("region").is_none(), "{whole}");
    assert!(
        syns_to(&whole_frames, 5040).len() >= 3,
        "the launch's remote shells"
    );
    let regions: Vec<_> = (1..=2).map(|k| run("", &["--app", "is"], k)).collect();
    assert!(
        regions[0]
            .2
            .contains("saving the cluster at its region's start"),
        "{}",
        regions[0].2
    );
    assert!(
        !regions[1].2.contains("launching"),
        "the second restores: {}",
        regions[1].2
    );
    for (r, frames, _) in &regions {
        assert_eq!(r["app"]["results"]["verified"], 1.0, "{r}");
        let g = &r["region"];
        assert_eq!(g["roi"], "mpi", "{g}");
        assert_eq!(g["began"], true, "{g}");
        assert_eq!(
            (g["ranks"].as_u64(), g["world"].as_u64()),
            (Some(4), Some(4)),
            "{g}"
        );
        assert_eq!(g["refused"], serde_json::json!([]), "{g}");
        assert_eq!(g["from_cycle"], 0, "{g}");
        assert_eq!(syns_to(frames, 5040), vec![], "the region has no launch");
        assert_eq!(Some(frames.len() as u64), r["frames_sent"].as_u64(), "{r}");
        assert!(
            r["frames_sent"].as_u64() < whole["frames_sent"].as_u64(),
            "region {} frames, command {}",
            r["frames_sent"],
            whole["frames_sent"]
        );
        let region_s = g["guest_s"].as_f64().unwrap();
        let iterations_s = r["app"]["results"]["time_s"].as_f64().unwrap();
        let command_s = r["app"]["guest_s"].as_f64().unwrap();
        assert!(
            region_s >= iterations_s,
            "{region_s} < IS's own {iterations_s}"
        );
        assert!(
            region_s + 0.5 < command_s,
            "{region_s} of {command_s}: the launch is in it"
        );
        assert!(g["launch_guest_s"].as_f64().unwrap() > 0.5, "{g}");
        // The measured part's guest time, and the bound of its wall time
        // by the guests' own speed: 4 guests x its instructions (125 M a
        // guest second) at one guest's speed alone, over the cores.
        let w = &r["wall"];
        let guest_s = w["region_guest_s"].as_f64().unwrap();
        let launch_s = g["launch_guest_s"].as_f64().unwrap();
        assert!((guest_s - (command_s - launch_s)).abs() < 1e-6, "{w}");
        let ips = w["guest_alone_ips"].as_f64().unwrap();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let bound = w["guests_bound_s"].as_f64().unwrap();
        assert!(
            (bound - 4.0 * guest_s * 125e6 / ips / cores).abs() < 1e-9 * bound,
            "{w}"
        );
    }
    let (a, b) = (&regions[0], &regions[1]);
    assert!(a.1 == b.1, "the two restores' captures differ");
    for key in ["frames_sent", "frames_delivered", "slices", "network"] {
        assert_eq!(a.0[key], b.0[key], "{key} differs between the two restores");
    }
    assert_eq!(a.0["app"]["results"], b.0["app"]["results"]);
    assert_eq!(a.0["region"]["guest_s"], b.0["region"]["guest_s"]);
    let mpirun = "mpirun --hostfile /etc/fsin/hostfile -np 4 hostname";
    let (never, _, _) = run("", &["--run", mpirun], 3);
    let g = &never["region"];
    assert_eq!(g["began"], false, "{g}");
    assert_eq!(g["ranks"], 0, "{g}");
    assert_eq!(never["app"]["exit_code"], 0, "{never}");
    // A shell command's own marks: the region is the half second of guest
    // time between them (sleep's, and the end mark's start).
    let marked = "sleep 0.3; fsin-roi-mark begin; sleep 0.5; fsin-roi-mark end; sleep 0.2";
    let (m, _, _) = run("marker", &["--run", marked], 4);
    let g = &m["region"];
    assert_eq!(
        (g["began"].as_bool(), g["world"].as_u64()),
        (Some(true), Some(1)),
        "{g}"
    );
    let region_s = g["guest_s"].as_f64().unwrap();
    assert!((0.5..0.6).contains(&region_s), "{g}");
    // Measured whole, a command's marks get their go at once.
    let (c, _, _) = run("command", &["--run", marked], 5);
    assert_eq!(c["app"]["exit_code"], 0, "{c}");
    let command_s = c["app"]["guest_s"].as_f64().unwrap();
    assert!((1.0..2.0).contains(&command_s), "{c}");
    let _ = std::fs::remove_dir_all(&dir);
}
