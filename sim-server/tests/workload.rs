//! Traces and application kernels replayed on the engine, against
//! execution times computed by hand from the model (docs/model.md):
//! on an idle network a message of `P` packets of `L` phits generated from
//! cycle `t` over `h` hops has its last phit consumed in cycle
//! `t + h + P*L - 1` (the injection link carries one phit per cycle, so
//! packets follow each other without gaps), and the receive that waits for
//! it completes in the next cycle. Packets here are 16 phits of 4 bytes
//! (64 bytes).

mod common;

use std::process::{Command, Output};

use fsin::config::Config;
use fsin::run::{Report, RunOptions};
use fsin::sim;

use common::Dir;

fn run(settings: &[&str]) -> Report {
    let cfg = Config::from_settings(settings).expect("valid configuration");
    sim::run(&cfg, RunOptions::default()).expect("the workload starts")
}

fn exec(settings: &[&str]) -> u64 {
    let r = run(settings);
    let a = r.app.expect("an application run");
    assert!(!a.deadlock, "{settings:?} deadlocked: {:?}", a.blocked);
    assert_eq!(a.messages_sent, a.messages_delivered);
    a.exec_cycles
}

fn fsin(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fsin"))
        .args(args)
        .output()
        .expect("fsin runs")
}

#[test]
fn causal_replay_of_hand_built_traces_takes_the_hand_computed_cycles() {
    let d = Dir::new("wl-hand");
    let tf = |name: &str, text: &str| format!("tracefile={}", d.file(name, text));
    // Ping-pong on a ring of 4: 0 -> 1 generated in 0, consumed by 16
    // (1 hop + 16 phits - 1); 1 answers in 17, consumed by 33; 0 done in 34.
    let pp = tf("pp.trc", "s 0 1 0 64\nr 0 1 0 64\ns 1 0 0 64\nr 1 0 0 64\n");
    assert_eq!(exec(&[&pp, "topo=torus_4"]), 34);
    // The answer waits 100 cycles of computation: the request arrives at
    // 16 and waits in the pending list; the answer leaves in 100 and is
    // consumed by 116.
    let late = tf(
        "late.trc",
        "s 0 1 0 64\nc 1 100\nr 0 1 0 64\ns 1 0 0 64\nr 1 0 0 64\n",
    );
    assert_eq!(exec(&[&late, "topo=torus_4"]), 117);
    // 256 bytes = 4 packets back to back: last phit by 0 + 1 + 64 - 1.
    let long = tf("long.trc", "s 0 1 0 256\nr 0 1 0 256\n");
    assert_eq!(exec(&[&long, "topo=torus_4"]), 65);
    // Ring exchange: everyone sends right in cycle 0 (distinct links and
    // consumption ports), everyone's receive completes in 17.
    let ring: String = (0..4)
        .map(|i| format!("s {i} {} 0 64\nr {} {i} 0 64\n", (i + 1) % 4, (i + 3) % 4))
        .collect();
    let ring = tf("ring.trc", &ring);
    assert_eq!(exec(&[&ring, "topo=torus_4"]), 17);
    // Token ring: 0 -> 1 -> 2 -> 3 -> 0, each hop 17 cycles after the last.
    let token = tf(
        "token.trc",
        "s 0 1 0 64\nr 0 1 0 64\ns 1 2 0 64\nr 1 2 0 64\ns 2 3 0 64\nr 2 3 0 64\ns 3 0 0 64\nr 3 0 0 64\n",
    );
    assert_eq!(exec(&[&token, "topo=torus_4"]), 4 * 17);
    // All-to-all as three pairwise exchanges on a 2x2 mesh (partner
    // i xor r): rounds 1 and 2 are one hop (17 cycles each), round 3 two
    // hops along X then Y (18); every round uses distinct links.
    let mut a2a = String::new();
    for r in 1..4 {
        for i in 0..4 {
            a2a += &format!("s {i} {} {r} 64\nr {} {i} {r} 64\n", i ^ r, i ^ r);
        }
    }
    let a2a = tf("a2a.trc", &a2a);
    assert_eq!(
        exec(&[&a2a, "topo=mesh_2_2", "rmode=oblivious"]),
        17 + 17 + 18
    );
}

/// A frame trace (`#fsin frames`, what `fsin qemu --trace-out` writes)
/// replays as co-simulation carries frames, hand-computed on a ring of 4
/// (16-phit packets of 64 bytes, 1 hop): task 0 queues a 256-byte frame
/// (4 packets) at its NIC in cycle 0 and goes on at once; its 5 node
/// cycles of computation are 1 network cycle at 200:1000, so it queues a
/// 64-byte frame in cycle 1, behind the first, and is done. The link
/// carries the 80 phits back to back: the first frame's last phit is
/// consumed by 0 + 1 + 64 - 1 = 64 and reaches task 1's NIC nic_latency =
/// 10 cycles later (74), the second's by 80 (90). A TrGen trace would
/// hold task 0 until its packets were generated.
#[test]
fn a_frame_trace_replays_with_a_nic_at_the_slice_ratio() {
    let d = Dir::new("wl-frames");
    let text = "s 0 1 0 256\nc 0 5\ns 0 1 1 64\nr 0 1 0 256\nr 0 1 1 64\n#fsin frames\n";
    let t = format!("tracefile={}", d.file("f.trc", text));
    let keys = [
        t.as_str(),
        "topo=torus_4",
        "fsin_cycle_relation=200",
        "node_cycle_relation=1000",
        "nic_latency=10",
        "node_clock=200000000",
    ];
    let a = run(&keys).app.expect("an application run");
    assert_eq!(a.task_done_cycles, [Some(1), Some(90)]);
    assert_eq!(a.exec_cycles, 90);
    // 90 network cycles are 450 node cycles of 5 ns.
    let s = a.predicted_s.unwrap();
    assert!((s - 2.25e-6).abs() < 1e-12, "{s}");
    // Without the directive the same lines are a TrGen trace: the second
    // send waits for the first's packets, and receives end a cycle after.
    let plain = format!(
        "tracefile={}",
        d.file("p.trc", &text.replace("#fsin frames\n", ""))
    );
    let b = run(&[plain.as_str(), "topo=torus_4"]).app.unwrap();
    assert_ne!(b.task_done_cycles, a.task_done_cycles);
    let o = fsin(&["run", &t, "compat=insee"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("is a frame trace"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn computation_units_speed_and_predicted_time() {
    let d = Dir::new("wl-cpu");
    let t = format!(
        "tracefile={}",
        d.file("c.trc", "c 0 2\ns 0 1 0 64\nr 0 1 0 64\n")
    );
    // Cycles: 2 cycles of computation, then the 17-cycle message.
    assert_eq!(exec(&[&t, "topo=torus_4"]), 19);
    // 2 us at 1024 Mb/s with 32-bit phits: 32 cycles per us -> 64 cycles.
    let us = [
        &t,
        "topo=torus_4",
        "trace_cpu_units=us",
        "link_bandwidth=1024",
    ];
    let r = run(&us);
    let a = r.app.unwrap();
    assert_eq!(a.exec_cycles, 64 + 17);
    // A cycle lasts 32 bits / 1024 Mb/s = 31.25 ns.
    let p = a.predicted_s.unwrap();
    assert!((p - 81.0 * 31.25e-9).abs() < 1e-15, "{p}");
    // Twice as fast a CPU: 32 cycles of computation.
    let mut fast = us.to_vec();
    fast.push("cpu_speed=2");
    assert_eq!(exec(&fast), 32 + 17);
    // Time units need the bandwidth.
    let e = Config::from_settings(&[t.as_str(), "trace_cpu_units=ms"]).unwrap_err();
    assert!(e.to_string().contains("link_bandwidth"), "{e}");
}

#[test]
fn inject_at_will_ignores_receives() {
    let d = Dir::new("wl-atwill");
    // Causal: 34 (the ping-pong above). At will: 1 answers in cycle 0 as
    // well, on the opposite link: both consumed by 16.
    let pp = format!(
        "tracefile={}",
        d.file("pp.trc", "s 0 1 0 64\nr 0 1 0 64\ns 1 0 0 64\nr 1 0 0 64\n")
    );
    assert_eq!(exec(&[&pp, "topo=torus_4"]), 34);
    assert_eq!(exec(&[&pp, "topo=torus_4", "trace_mode=at_will"]), 17);
}

#[test]
fn placement_and_instances() {
    let d = Dir::new("wl-place");
    let pp = format!(
        "tracefile={}",
        d.file("pp.trc", "s 0 1 0 64\nr 0 1 0 64\ns 1 0 0 64\nr 1 0 0 64\n")
    );
    // Two instances side by side on a ring of 4 (nodes 0-1 and 2-3) use
    // distinct links: the same 34 cycles, twice the messages.
    let r = run(&[&pp, "topo=torus_4", "placement=consecutive_2_2"]);
    let a = r.app.unwrap();
    assert_eq!((a.exec_cycles, a.tasks, a.messages_sent), (34, 4, 4));
    // Column placement on 4x4: tasks 0 and 1 on nodes 0 and 4 (one Y hop).
    assert_eq!(exec(&[&pp, "topo=torus_4_4", "placement=column"]), 34);
    // Shift 2 on an 8-ring: 2 -> 3, still one hop.
    assert_eq!(exec(&[&pp, "topo=torus_8", "placement=shift_2"]), 34);
    // Diagonal on a 4x4 mesh: the walk gives nodes 0, 1, 2 to grid
    // positions (0,0), (1,0), (0,1); task 4 = (0,1) is on node 2 = (2,0),
    // two hops from task 0: one more cycle each way.
    let far = format!(
        "tracefile={}",
        d.file(
            "pp4.trc",
            "s 0 4 0 64\nr 0 4 0 64\ns 4 0 0 64\nr 4 0 0 64\n"
        )
    );
    assert_eq!(exec(&[&far, "topo=mesh_4_4", "placement=diagonal"]), 36);
    // Background load on the 14 free nodes of a 4x4 torus delays nothing
    // forever: the workload ends and background packets were delivered.
    let r = run(&[&pp, "topo=torus_4_4", "bg_load=0.3"]);
    let a = r.app.unwrap();
    assert!(!a.deadlock && a.exec_cycles >= 34);
    assert!(
        r.measured.packets_delivered > 2,
        "{}",
        r.measured.packets_delivered
    );
}

#[test]
fn a_trace_that_cannot_finish_ends_with_exit_3_and_the_blocked_tasks() {
    let d = Dir::new("wl-dead");
    // Task 1 waits for tag 9 from task 2, which never sends.
    let t = d.file("dl.trc", "s 0 1 0 64\nr 0 1 0 64\nr 2 1 9 64\n");
    let o = fsin(&["run", &format!("tracefile={t}"), "topo=torus_4", "--json"]);
    assert_eq!(o.status.code(), Some(3));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let j: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(j["deadlock"], true);
    // The first message was delivered by cycle 16; the run stopped at once.
    assert_eq!(j["exec_cycles"], 17);
    assert_eq!(j["blocked"].as_array().unwrap().len(), 1);
    assert_eq!(j["blocked"][0]["task"], 1);
    let w = j["blocked"][0]["waiting_for"].as_str().unwrap();
    assert!(w.contains("task 2 tag 9") && w.ends_with("dl.trc:3"), "{w}");
    // An early arrival that matches nothing is listed as pending.
    let t = d.file("pend.trc", "s 0 1 5 64\nr 0 1 6 64\n");
    let o = fsin(&["run", &format!("tracefile={t}"), "topo=torus_4"]);
    assert_eq!(o.status.code(), Some(3));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("arrived unmatched: message from task 0 tag 5"),
        "{out}"
    );
    // A task beyond the network: exit 3 before simulating, naming the line.
    let t = d.file("far.trc", "c 0 5\ns 0 7 1 10\n");
    let o = fsin(&["run", &format!("tracefile={t}"), "topo=torus_4"]);
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("far.trc:2: task 7 is beyond the 4 nodes"),
        "{err}"
    );
    // A malformed line is bad input: exit 2 naming file, line and field.
    let t = d.file("bad.trc", "s 0 1 0 64\nr 0 1 x 64\n");
    let o = fsin(&["run", &format!("tracefile={t}"), "topo=torus_4"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.trc:2: field tag = `x` is not a number"),
        "{err}"
    );
}

#[test]
fn kernels_send_their_closed_form_message_counts() {
    // 4x4 torus, 16 tasks (w3/m3: 8 tasks on a 2x2x2 virtual mesh).
    let k2 = 4;
    let k3 = 2;
    let cases: [(&str, &str, u64); 8] = [
        ("all2all", "0", 16 * 15),
        ("w2", "0", 4 * k2 * (k2 - 1)),
        ("m2", "0", 4 * k2 * (k2 - 1)),
        ("wf", "0", 2 * k2 * (k2 - 1) * 3),
        ("bu", "0", 16 * 4),
        ("bt", "0", 15),
        ("w3", "8", 6 * k3 * k3 * (k3 - 1)),
        ("m3", "8", 6 * k3 * k3 * (k3 - 1)),
    ];
    for (k, tasks, msgs) in cases {
        let r = run(&[
            "topo=torus_4_4",
            &format!("kernel={k}"),
            "kernel_bytes=2500",
            &format!("kernel_tasks={tasks}"),
        ]);
        let a = r.app.unwrap();
        assert!(!a.deadlock, "{k}");
        assert_eq!((a.messages_sent, a.messages_delivered), (msgs, msgs), "{k}");
        // Every message is ceil(2500 / 64) = 40 packets (waterfall: chunks
        // of 1024, 1024 and 452 bytes = 16 + 16 + 8 packets).
        assert_eq!(
            r.measured.packets_delivered,
            msgs * 40 / if k == "wf" { 3 } else { 1 },
            "{k}"
        );
    }
}

#[test]
fn kernel_completion_time_grows_with_message_size() {
    // Butterfly on a 4x4 torus: 4 stages, each waits for one message per
    // task. A message of P packets cannot be consumed faster than P*16
    // cycles, so 4 stages take at least 4 * P * 16 cycles; and doubling the
    // size must at least add that much more per stage.
    let mut times = Vec::new();
    for bytes in [64u64, 640, 6400, 12800] {
        let t = exec(&[
            "topo=torus_4_4",
            "kernel=bu",
            &format!("kernel_bytes={bytes}"),
        ]);
        let p = bytes.div_ceil(64);
        assert!(t >= 4 * p * 16, "{bytes} B: {t}");
        assert!(
            times.last().is_none_or(|&l| t > l),
            "{bytes} B: {t} after {times:?}"
        );
        times.push(t);
    }
    // Long messages: the time is dominated by the phits to move, so twice
    // the size takes twice the time (within 5%).
    let ratio = times[3] as f64 / times[2] as f64;
    assert!((1.9..=2.1).contains(&ratio), "{times:?}");
}

#[test]
fn a_written_kernel_replays_like_the_kernel() {
    let d = Dir::new("wl-kfile");
    let f = d.0.join("w2.trc");
    let f = f.to_str().unwrap();
    let o = fsin(&["kernel", "w2", "--tasks", "16", "--bytes", "1000", "-o", f]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let from_file = exec(&["topo=torus_4_4", &format!("tracefile={f}")]);
    let direct = exec(&["topo=torus_4_4", "kernel=w2", "kernel_bytes=1000"]);
    assert_eq!(from_file, direct);
    // The wave goes to the far corner and back: at least 2 * 6 mesh steps
    // of one 16-packet message each (1000 B = 16 packets of 64 B).
    assert!(from_file >= 12 * 16 * 16, "{from_file}");
    let o = fsin(&["kernel", "w2", "--tasks", "15"]);
    assert_eq!(o.status.code(), Some(2));
    // The same kernel written as Dimemas and as alog replays alike.
    for format in ["dimemas", "alog"] {
        let g = d.0.join(format!("w2.{format}"));
        let g = g.to_str().unwrap();
        let args = [
            "kernel", "w2", "-n", "16", "-b", "1000", "-f", format, "-o", g,
        ];
        let o = fsin(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let cycles = exec(&["topo=torus_4_4", &format!("tracefile={g}")]);
        assert_eq!(cycles, direct, "{format}");
    }
    let o = fsin(&["kernel", "w2", "--format", "xml"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn plevel_outputs_of_a_ping_pong_are_the_hand_computed_ones() {
    let d = Dir::new("wl-plevel");
    let t = d.file("pp.trc", "s 0 1 0 64\nr 0 1 0 64\ns 1 0 0 64\nr 1 0 0 64\n");
    let out = d.0.join("out");
    let o = fsin(&[
        "run",
        &format!("tracefile={t}"),
        "topo=torus_4_4",
        "plevel=31",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let read = |f: &str| std::fs::read_to_string(out.join(f)).unwrap();
    // One packet each way.
    assert_eq!(
        read("pairs.csv"),
        "src,dst,generated,delivered\n0,1,1,1\n1,0,1,1\n"
    );
    assert_eq!(
        read("distance.csv"),
        "distance,generated,delivered\n0,0,0\n1,2,2\n"
    );
    // Packet 0 -> 1 generated and injected in 0, consumed by 16; the
    // answer in 17, consumed by 33 (module docs).
    assert_eq!(
        read("packets.csv"),
        "src,dst,t_gen,t_inj,t_done,hops,latency\n0,1,0,0,16,1,16\n1,0,17,17,33,1,16\n"
    );
    // Links: node 0's X+ link and node 1's X- link carried one packet of
    // 16 phits in the 34 cycles; every other link none.
    let links = read("links.csv");
    let used: Vec<&str> = links
        .lines()
        .skip(1)
        .filter(|l| !l.contains(",0,0.000000"))
        .collect();
    assert_eq!(used, ["0,0,0,true,1,0.470588", "1,1,0,false,1,0.470588"]);
    assert_eq!(links.lines().count(), 1 + 16 * 4);
    // Every queue's histogram covers the 34 cycles.
    let queues = read("queues.csv");
    for row in queues.lines().skip(1) {
        let total: u64 = row
            .split(',')
            .skip(3)
            .map(|v| v.parse::<u64>().unwrap())
            .sum();
        assert_eq!(total, 34, "{row}");
    }
    assert!(read("utilization.svg").starts_with("<svg"));
    let j: serde_json::Value = serde_json::from_str(&read("plevel.json")).unwrap();
    assert_eq!(j["pairs"].as_array().unwrap().len(), 2);
}

/// A report as JSON, without what depends on the wall clock or names the
/// number of threads.
fn report_json(settings: &[&str], threads: u32) -> serde_json::Value {
    let mut all: Vec<String> = settings.iter().map(|s| s.to_string()).collect();
    all.push(format!("threads={threads}"));
    let cfg = Config::from_settings(&all).expect("valid configuration");
    let r = sim::run(&cfg, RunOptions::default()).expect("the run starts");
    let mut v = serde_json::to_value(&r).unwrap();
    let m = v.as_object_mut().unwrap();
    m.remove("wall_s");
    m.remove("cycles_per_s");
    m["config"].as_object_mut().unwrap().remove("threads");
    v
}

/// `fsin run` reports do not depend on `threads`: a causal trace replay
/// (an all-to-all of 32 tasks in 31 rounds of 2 KiB messages), a kernel,
/// and synthetic traffic past saturation on a 16x16 torus and a 4-ary
/// 3-tree, each in 1, 2 and 3 parts.
#[test]
fn reports_are_the_same_for_every_number_of_threads() {
    let d = Dir::new("wl-threads");
    let mut a2a = String::new();
    for r in 1..32 {
        for i in 0..32 {
            a2a += &format!("s {i} {} {r} 2048\nr {} {i} {r} 2048\n", i ^ r, i ^ r);
        }
    }
    let trace = format!("tracefile={}", d.file("a2a.trc", &a2a));
    for settings in [
        vec![trace.as_str(), "topo=torus_8_4"],
        vec!["topo=torus_8_8", "kernel=all2all", "kernel_bytes=512"],
        vec!["topo=torus_16_16", "load=0.8", "cycles=2000"],
        vec!["topo=fattree_4_3", "load=0.9", "cycles=2000"],
    ] {
        let one = report_json(&settings, 1);
        for threads in [2, 3] {
            assert_eq!(
                one,
                report_json(&settings, threads),
                "{settings:?} threads={threads}"
            );
        }
    }
}

/// The predicted time of an MPI-level trace's replay, node cycles, with
/// `keys` on the ping-pong's node clock and costs: a node cycle per
/// network cycle's `node_cycle_relation=1`, 8 ns each (125 MHz), 800 ns a
/// message on each side and nothing per byte.
/// [`mpi_node_cycles`] of `keys` on the 2-node ring of the hand-computed
/// MPI tests: exact co-simulation at 10 network cycles a node cycle, a
/// frame in 5 node cycles after its send (`nic_latency=18`).
fn exact_pair_node_cycles(keys: &[&str]) -> f64 {
    let mut all = vec![
        "topo=torus_2",
        "fsin_cycle_relation=10",
        "nic_latency=18",
        "sync_mode=exact",
    ];
    all.extend_from_slice(keys);
    mpi_node_cycles(&all)
}

fn mpi_node_cycles(keys: &[&str]) -> f64 {
    // The model without a profile (not the built-in one): the costs the
    // hand computations give.
    let mut all = vec!["mpi_profile=none"];
    all.extend_from_slice(keys);
    all.extend([
        "node_cycle_relation=1",
        "node_clock=125000000",
        "mpi_message_ns=800",
        "mpi_byte_ps=0",
    ]);
    let a = run(&all).app.expect("an application run");
    assert!(!a.deadlock, "{:?}", a.blocked);
    a.predicted_s.unwrap() / 8e-9
}

/// An MPI-level ping-pong: 5 rounds of an 8-byte `MPI_Send`
/// and `MPI_Recv` between 2 ranks on a 2-node ring. Each message is one
/// frame of 8 + 22 (MPI header) + 66 (Ethernet, IPv4, TCP) = 96 bytes,
/// 2 packets of 64 bytes: queued in network cycle t, its last phit is
/// consumed in cycle t + h + P L - 1 = t + 1 + 32 - 1 = t + 32, and it
/// reaches the NIC `nic_latency` (N) later. Exact co-simulation hands it
/// to its rank at node cycle ceil((t + 32 + N) NODE / NET); lock-step at
/// the start of the next slice, (floor((t + 32 + N) / NET) + 1) NODE.
/// With a software cost of 800 ns = 100 node cycles of 8 ns on each side,
/// one trip from a send at node cycle n (network cycle n NET / NODE) is,
/// with NODE = 1: lock-step, NET = 1, N = 0: 100 + 33 + 100; NET = 10 (a
/// network 10 times faster), N = 0: 100 + (floor(32 / 10) + 1) + 100 =
/// 204; N = 18: 100 + (floor(50 / 10) + 1) + 100 = 206; exact, NET = 10,
/// N = 18: 100 + ceil(50 / 10) + 100 = 205; parallel (the frame enters
/// the network one slice, 10 network cycles, after its cycle), NET = 10,
/// N = 0: 100 + (floor(42 / 10) + 1) + 100 = 205. Ten trips make the run.
/// A wake-up of 80 ns (`mpi_wake_ns`), 10 node cycles, adds 10 to every
/// trip: each message finds its receiver waiting (rank 0 receives right
/// after it sends, rank 1 at the start or right after it sends). A
/// connection's set-up of 400 ns (`mpi_connect_ns`), 50 node cycles,
/// blocks rank 0's first send from node cycle 100 to 150 (it sets rank 1
/// up as its peer; its frame enters the network at network cycle 1,500),
/// and its connect's TCP handshake takes 80 ns (`mpi_handshake_ns`), 10
/// node cycles; when every MPI call runs the event loop
/// (`mpi_event_tick_ns=0`) rank 0, waiting from 150, finds its connect
/// done at 160, rank 1 (waiting) accepts at once and sets rank 0 up until
/// node cycle 210 (network cycle 2,100): the first frame, in at network
/// cycle 1,550 exact or 1,532 in lock-step, is handed over at node cycle
/// 210 (not 105) or 211 (not 104): 105 or 107 more in all, as the pair's
/// later frames find it open and rank 1 has rank 0 set up. With an event
/// tick of 240 ns (30 node cycles), rank 0's first wait, at 150, runs its
/// loop before the handshake is done, so its connect completes at its
/// next run, 180; rank 1, waiting since 0, runs its loop at 30, 60, ...,
/// accepts at 180 and opens the pair at 230: handed over at node cycle
/// 230 exact or 231 in lock-step (125 or 127 more). None in a trace of a
/// preconnected run.
/// Under `compat=insee` the same file reads as INSEE reads Dimemas.
#[test]
fn an_mpi_ping_pong_takes_the_hand_computed_time_on_a_faster_network() {
    let d = Dir::new("wl-mpi-pp");
    let mut text =
        String::from("#DIMEMAS:\"fsin-rs MPI trace; ping-pong\":1,00000000000000000000:2(1,1),1,0,0\nd:1:1:2:0:1\n");
    for _ in 0..5 {
        text.push_str("2:0:0:1:8:1:1:1\n3:0:0:1:8:1:1:0\n");
    }
    for _ in 0..5 {
        text.push_str("3:1:0:0:8:1:1:0\n2:1:0:0:8:1:1:1\n");
    }
    let t = format!("tracefile={}", d.file("pp.dim", &text));
    let preconnected = format!(
        "tracefile={}",
        d.file(
            "pre.dim",
            &text.replace("MPI trace; ping-pong", "MPI trace; preconnected; ping-pong")
        )
    );
    for (t, sync, net, nic, wake, [connect, tick], node_cycles) in [
        (&t, "lockstep", 1, 0, 0, [0, 0], 2330u64),
        (&t, "lockstep", 10, 0, 0, [0, 0], 2040),
        (&t, "lockstep", 10, 18, 0, [0, 0], 2060),
        (&t, "exact", 10, 18, 0, [0, 0], 2050),
        (&t, "parallel", 10, 0, 0, [0, 0], 2050),
        (&t, "exact", 10, 18, 80, [0, 0], 2150),
        (&t, "lockstep", 10, 0, 80, [0, 0], 2140),
        (&t, "exact", 10, 18, 0, [400, 0], 2155),
        (&t, "lockstep", 10, 0, 0, [400, 0], 2147),
        (&t, "exact", 10, 18, 0, [400, 240], 2175),
        (&t, "lockstep", 10, 0, 0, [400, 240], 2167),
        (&preconnected, "exact", 10, 18, 0, [400, 240], 2050),
    ] {
        let (r, n, m, w, c, k) = (
            format!("fsin_cycle_relation={net}"),
            format!("nic_latency={nic}"),
            format!("sync_mode={sync}"),
            format!("mpi_wake_ns={wake}"),
            format!("mpi_connect_ns={connect}"),
            format!("mpi_event_tick_ns={tick}"),
        );
        let keys = [
            t.as_str(),
            "topo=torus_2",
            r.as_str(),
            n.as_str(),
            m.as_str(),
            w.as_str(),
            c.as_str(),
            k.as_str(),
            "mpi_handshake_ns=80",
        ];
        let got = mpi_node_cycles(&keys);
        assert!(
            (got - node_cycles as f64).abs() < 1e-3,
            "{t} {sync} NET={net} N={nic} wake={wake} ns connect={connect} ns tick={tick} ns: {got} node cycles, want {node_cycles}"
        );
    }
    // INSEE's reading: 5 blocking sends and receives per task, no NIC.
    let a = run(&[t.as_str(), "topo=torus_2", "compat=insee"])
        .app
        .unwrap();
    assert_eq!(a.messages_delivered, 10);
    assert!(
        a.workload
            .contains("collectives and MPI_Irecv postings dropped"),
        "{}",
        a.workload
    );
}

/// Two ranks whose first messages cross (`fsin-pingpong -c`, the
/// calibration's first contact): each sends 8 bytes to the other, then
/// receives, on the ping-pong's network and costs (100 node cycles a
/// side, the frame in 5 node cycles later: done at 205 without a
/// connection model). With a set-up of 50 node cycles and an event tick
/// of 30 and a handshake of 10, by hand: both enter their send at 100
/// and set the other up until 150 (their frames enter the network at
/// network cycle 1,500), then wait, running their loops (their first
/// waits) before the handshake is done; rank 0's connect completes at its
/// next run, 180, and rank 1, which has rank 0 set up already, accepts at
/// its own next run, 180: the pair opens at 180, one set-up and one tick
/// after the sends.
/// Each frame (in at network cycle 1,550 exact, 1,532 in lock-step) is
/// handed over at node cycle 180 exact or 181 in lock-step, and each rank
/// pays its receiving cost: 280 or 281 node cycles.
#[test]
fn crossing_first_messages_open_one_connection_in_a_set_up_and_a_tick() {
    let d = Dir::new("wl-mpi-cross");
    let text =
        "#DIMEMAS:\"fsin-rs MPI trace; cross\":1,00000000000000000000:2(1,1),1,0,0\nd:1:1:2:0:1\n\
                2:0:0:1:8:1:1:1\n3:0:0:1:8:1:1:0\n2:1:0:0:8:1:1:1\n3:1:0:0:8:1:1:0\n";
    let t = format!("tracefile={}", d.file("cross.dim", text));
    for (sync, nic, connect, node_cycles) in [
        ("exact", 18, 0, 205u64),
        ("exact", 18, 400, 280),
        ("lockstep", 0, 400, 281),
    ] {
        let (n, m, c) = (
            format!("nic_latency={nic}"),
            format!("sync_mode={sync}"),
            format!("mpi_connect_ns={connect}"),
        );
        let keys = [
            t.as_str(),
            "topo=torus_2",
            "fsin_cycle_relation=10",
            n.as_str(),
            m.as_str(),
            c.as_str(),
            "mpi_event_tick_ns=240",
            "mpi_handshake_ns=80",
        ];
        let got = mpi_node_cycles(&keys);
        assert!(
            (got - node_cycles as f64).abs() < 1e-3,
            "{sync} connect={connect} ns: {got} node cycles, want {node_cycles}"
        );
    }
}

/// A rank that sends again before it waits finds its connect done, as
/// Open MPI 4.1's event loop runs only when a rank waits (`MPI_Isend`
/// does not progress): rank 0 sends 8 bytes to rank 1 twice, then
/// receives 8 bytes back, on the ping-pong's network and costs
/// (`fsin_cycle_relation=10`, `nic_latency=18`, exact: a frame sent at
/// node cycle n is in at n + 5). Without a connection model: frames in at
/// 105 and 205, rank 1 done with them at 305, its answer (sent at 405)
/// in at 410, rank 0 done at 510. With a set-up of 50, a handshake of 10
/// and a tick of 300, by hand: rank 0 sets rank 1 up from 100 to 150, its
/// second send's cost takes it to 250, its first wait: its loop runs
/// there and finds the connect (done at 160) complete, so it sends the
/// connection's first message at 250; rank 1, waiting since 0 (its loop
/// ran there), accepts at its run at 300 and sets rank 0 up until 350:
/// the frames are handed over at 350 and 450, the answer sent at 650 is
/// in at 655, rank 0 done at 755. With every call running the loop (tick
/// 0): accepted at 250, open at 300, done at 705. With a handshake of
/// 200 instead, rank 0's wait at 250 comes before its connect is done:
/// its loop's next run, at 550, finds it; rank 1 accepts at 600 and
/// opens at 650: frames handed over at 650 and 750, the answer in at
/// 955, done at 1,055.
#[test]
fn a_rank_that_sends_again_before_it_waits_finds_its_connect_done() {
    let d = Dir::new("wl-mpi-two-sends");
    let text = "#DIMEMAS:\"fsin-rs MPI trace; two sends\":1,00000000000000000000:2(1,1),1,0,0\nd:1:1:2:0:1\n\
                2:0:0:1:8:1:1:1\n2:0:0:1:8:1:1:1\n3:0:0:1:8:1:1:0\n\
                3:1:0:0:8:1:1:0\n3:1:0:0:8:1:1:0\n2:1:0:0:8:1:1:1\n";
    let t = format!("tracefile={}", d.file("two.dim", text));
    for (connect, tick, handshake, node_cycles) in [
        (0, 2400, 80, 510u64),
        (400, 2400, 80, 755),
        (400, 0, 80, 705),
        (400, 2400, 1600, 1055),
    ] {
        let (c, k, h) = (
            format!("mpi_connect_ns={connect}"),
            format!("mpi_event_tick_ns={tick}"),
            format!("mpi_handshake_ns={handshake}"),
        );
        let keys = [t.as_str(), c.as_str(), k.as_str(), h.as_str()];
        let got = exact_pair_node_cycles(&keys);
        assert!(
            (got - node_cycles as f64).abs() < 1e-3,
            "connect={connect} ns tick={tick} ns handshake={handshake} ns: {got} node cycles, want {node_cycles}"
        );
    }
}

/// The kernel's receive of a frame (`mpi_rx_ns`) holds up a rank busy
/// when the frame arrives, and comes out of the receive's own cost: rank
/// 0 sends A, computes 50 node cycles, sends B, then waits for rank 1's
/// answer, which rank 1 sends after receiving A and before taking B
/// (costs of 100 node cycles a side; a frame sent at n is in at n + 5,
/// as above). Without it: A at 100 is in at 105, rank 1 takes it by 205
/// and sends the answer at 305 (in at 310), rank 0 takes it by 410;
/// rank 1 takes B (in at 255) by 405. With a receive of 20 node cycles
/// (160 ns): rank 1 takes A from 125 (the kernel first) to 205 (80 of
/// the 100 left), B arrives at 255 while it pays its send's cost and
/// holds it up to 325, the answer is in at 330, and rank 0 takes it from
/// 350 to 430; with 40: 345, in at 350, rank 0 done at 450.
#[test]
fn a_frame_that_arrives_while_its_rank_works_holds_it_up() {
    let d = Dir::new("wl-mpi-rx");
    let text =
        "#DIMEMAS:\"fsin-rs MPI trace; rx\":1,00000000000000000000:2(1,1),1,0,0\nd:1:1:2:0:1\n\
                2:0:0:1:8:1:1:1\n1:0:0:0.000000400\n2:0:0:1:8:2:1:1\n3:0:0:1:8:3:1:0\n\
                3:1:0:0:8:1:1:0\n2:1:0:0:8:3:1:1\n3:1:0:0:8:2:1:0\n";
    let t = format!("tracefile={}", d.file("rx.dim", text));
    for (rx, node_cycles) in [(0, 410u64), (160, 430), (320, 450)] {
        let r = format!("mpi_rx_ns={rx}");
        let keys = [t.as_str(), r.as_str()];
        let got = exact_pair_node_cycles(&keys);
        assert!(
            (got - node_cycles as f64).abs() < 1e-3,
            "rx={rx} ns: {got} node cycles, want {node_cycles}"
        );
    }
}

/// The NIC's interrupt window (`mpi_irq_window_ns`): both ranks send 8
/// bytes to each other at once, then receive (costs of 100 node cycles a
/// side; a frame sent at n is in at n + 5, as above). Without a window
/// each rank's frame leaves at 100, the other's is in at 105 and taken
/// by 205. With a window of 50 node cycles (400 ns) each rank's own
/// transmit raises an interrupt at 100, so the frame in at 105 waits for
/// the window's end, 150, and is taken by 250; a window of 2 node cycles
/// (16 ns) is over before the frame comes: 205.
#[test]
fn a_frame_inside_its_nics_window_waits_for_the_windows_end() {
    let d = Dir::new("wl-mpi-irq");
    let text =
        "#DIMEMAS:\"fsin-rs MPI trace; irq\":1,00000000000000000000:2(1,1),1,0,0\nd:1:1:2:0:1\n\
                2:0:0:1:8:1:1:1\n3:0:0:1:8:1:1:0\n2:1:0:0:8:1:1:1\n3:1:0:0:8:1:1:0\n";
    let t = format!("tracefile={}", d.file("irq.dim", text));
    for (window, node_cycles) in [(0, 205u64), (16, 205), (400, 250)] {
        let w = format!("mpi_irq_window_ns={window}");
        let keys = [t.as_str(), w.as_str()];
        let got = exact_pair_node_cycles(&keys);
        assert!(
            (got - node_cycles as f64).abs() < 1e-3,
            "window={window} ns: {got} node cycles, want {node_cycles}"
        );
    }
}

/// A TCP acknowledgement (`mpi_tcp_acks`) holds up its busy receiver as
/// any frame does (`mpi_rx_ns`), and no call waits for it: rank 0 sends
/// 1,448 bytes (with the MPI header 1,470: two segments, so rank 1
/// acknowledges when it takes the second) and computes 4 us; the
/// acknowledgement comes back while it computes. Rank 0 ends at 100
/// (the send's cost, 800 ns) + 500 node cycles, plus the kernel's
/// receive of the acknowledgement, 20 node cycles (160 ns): 620; without
/// acknowledgements 600; 1,400 bytes (1,422: one segment) are not
/// acknowledged: 600.
#[test]
fn a_tcp_acknowledgement_holds_up_its_busy_receiver() {
    let d = Dir::new("wl-mpi-ack");
    let head =
        "#DIMEMAS:\"fsin-rs MPI trace; ack\":1,00000000000000000000:2(1,1),1,0,0\nd:1:1:2:0:1\n";
    for (bytes, acks, node_cycles) in [(1448, 1, 620u64), (1448, 0, 600), (1400, 1, 600)] {
        let text = format!("{head}2:0:0:1:{bytes}:1:1:1\n1:0:0:0.000004\n3:1:0:0:{bytes}:1:1:0\n");
        let t = format!("tracefile={}", d.file(&format!("ack{bytes}.dim"), &text));
        let a = format!("mpi_tcp_acks={acks}");
        let keys = [t.as_str(), "mpi_rx_ns=160", a.as_str()];
        let got = exact_pair_node_cycles(&keys);
        assert!(
            (got - node_cycles as f64).abs() < 1e-3,
            "{bytes} bytes, mpi_tcp_acks={acks}: {got} node cycles, want {node_cycles}"
        );
    }
}

/// An MPI-level replay in the exact mode, 10 network cycles a node cycle
/// of 8 ns, the model without a profile at 800 ns a message, no cost a
/// byte, and 160 ns (20 node cycles) of a kernel's receive of a frame,
/// with `keys` (the trace, the network, the model's other keys).
fn exact_mpi_run(keys: &[&str]) -> fsin::run::AppSummary {
    let mut all = vec![
        "mpi_profile=none",
        "fsin_cycle_relation=10",
        "node_cycle_relation=1",
        "nic_latency=18",
        "sync_mode=exact",
        "node_clock=125000000",
        "mpi_message_ns=800",
        "mpi_byte_ps=0",
        "mpi_rx_ns=160",
    ];
    all.extend_from_slice(keys);
    run(&all).app.expect("an application run")
}

/// A first contact between two nodes that do not know each other's
/// address begins with an ARP request broadcast to every node
/// (`mpi_arp`), whose kernels take it in: on a 4-node ring, rank 1 sends
/// 8 bytes to rank 2 while ranks 0 and 3 compute 4 us (500 node cycles
/// of 8 ns). Rank 1 sets rank 2 up until node cycle 50 (`mpi_connect_ns`
/// 400 ns) and connects: its ARP request's copies (60 bytes, one packet)
/// reach ranks 0 and 3 within a few node cycles, while they compute, and
/// hold each up by its kernel's receive, 20 node cycles (`mpi_rx_ns`
/// 160 ns): both end at 520 instead of 500; with an ARP request's own
/// receive of 400 ns (`mpi_arp_rx_ns`, 50 node cycles) at 550. The replay sends 2 frames (the
/// message and the request) as 4 messages (the request's 3 copies). Rank
/// 0's node knows every address (mpirun ran there): the same exchange
/// from rank 0 to rank 2, with ranks 1 and 3 computing, sends none.
#[test]
fn a_first_contact_broadcasts_an_arp_request_to_every_node() {
    let d = Dir::new("wl-mpi-arp");
    let head =
        "#DIMEMAS:\"fsin-rs MPI trace; arp\":1,00000000000000000000:4(1,1,1,1),1,0,0\nd:1:1:4:0:1:2:3\n";
    let burst = "1:0:0:0.000004\n";
    let cases = [
        // (sender, idle ranks, mpi_arp, mpi_arp_rx_ns, ARP requests,
        // each idle rank's end)
        (1, [0, 3], 1, 0, 1u64, 520u64),
        (1, [0, 3], 1, 400, 1, 550),
        (1, [0, 3], 0, 400, 0, 500),
        (0, [1, 3], 1, 0, 0, 500),
    ];
    for (src, idle, arp, arp_rx, requests, end) in cases {
        let mut text = format!("{head}2:{src}:0:2:8:1:1:1\n3:2:0:{src}:8:1:1:0\n");
        for r in idle {
            text.push_str(&burst.replacen("1:0:", &format!("1:{r}:"), 1));
        }
        let t = format!(
            "tracefile={}",
            d.file(&format!("arp{src}{arp}{arp_rx}.dim"), &text)
        );
        let a = format!("mpi_arp={arp}");
        let rx = format!("mpi_arp_rx_ns={arp_rx}");
        let a = exact_mpi_run(&[
            &t,
            "topo=torus_4",
            "mpi_connect_ns=400",
            "mpi_event_tick_ns=0",
            "mpi_handshake_ns=80",
            &a,
            &rx,
        ]);
        assert!(!a.deadlock, "{:?}", a.blocked);
        let sent = requests;
        assert_eq!(a.arp_requests, Some(sent), "{src} mpi_arp={arp}");
        assert_eq!(a.frames_sent, Some(1 + sent), "{src} mpi_arp={arp}");
        assert_eq!(a.messages_sent, 1 + 3 * sent, "{src} mpi_arp={arp}");
        assert_eq!(a.messages_sent, a.messages_delivered);
        for r in idle {
            // Network cycles, 10 a node cycle.
            assert_eq!(
                a.task_done_cycles[r],
                Some(end * 10),
                "rank {r}, sender {src}, mpi_arp={arp}, mpi_arp_rx_ns={arp_rx}"
            );
        }
    }
}

/// TCP's timers in an MPI-level replay (`mpi_loss_probe_ns`,
/// `mpi_delayed_ack_ns`), on a 2-node ring, 8 ns node cycles, each
/// frame's kernel receive 20 node cycles (`mpi_rx_ns` 160) for a busy
/// rank. Rank 0 sends `B` bytes to rank 1 and computes 40 us; rank 1
/// computes `C` us and then receives.
/// - 1,448 bytes (1,470 with MPI's header: two segments), C = 20: rank
///   1 reads 20 us on, long after the least timeout of 4 us (no round
///   trip known yet), so rank 0's kernel sends the second segment again
///   (a tail-loss probe), and rank 1's answers with a D-SACK: each rank
///   is held up 20 node cycles more than without probes, by the other's
///   frame, and the replay sends 2 frames more (1 probe, and 2
///   acknowledgements in all: the read's and the D-SACK).
/// - The same with C = 0: rank 1 reads at once, its acknowledgement is
///   back within the timeout: no probe, the same ends.
/// - 100 bytes (one segment), C = 20, delayed acknowledgements of 4 us:
///   rank 1 holds the acknowledgement (it sends rank 0 nothing), so its
///   kernel sends one 4 us after the frame: rank 0 is held up 20 node
///   cycles, rank 1 not at all.
#[test]
fn late_reads_draw_tail_loss_probes_and_delayed_acknowledgements() {
    let d = Dir::new("wl-mpi-tcp");
    let head =
        "#DIMEMAS:\"fsin-rs MPI trace; tcp\":1,00000000000000000000:2(1,1),1,0,0\nd:1:1:2:0:1\n";
    let replay = |name: &str, bytes: u64, c_us: u64, keys: [&str; 2]| {
        let text = format!(
            "{head}2:0:0:1:{bytes}:1:1:1\n1:0:0:0.000040\n1:1:0:0.{c_us:06}\n3:1:0:0:{bytes}:1:1:0\n"
        );
        let t = format!("tracefile={}", d.file(&format!("{name}.dim"), &text));
        let a = exact_mpi_run(&[&t, "topo=torus_2", keys[0], keys[1]]);
        assert!(!a.deadlock, "{:?}", a.blocked);
        // Node cycles, 10 network cycles each.
        let ends: Vec<u64> = a.task_done_cycles.iter().map(|c| c.unwrap() / 10).collect();
        (
            ends,
            a.tcp_probes,
            a.delayed_acks,
            a.acks_sent,
            a.frames_sent,
        )
    };
    let off = ["mpi_loss_probe_ns=0", "mpi_delayed_ack_ns=0"];
    let probe = ["mpi_loss_probe_ns=4000", "mpi_delayed_ack_ns=0"];
    let delack = ["mpi_loss_probe_ns=0", "mpi_delayed_ack_ns=4000"];
    let (ends, ..) = replay("late0", 1448, 20, off);
    let with = replay("late1", 1448, 20, probe);
    assert_eq!(with.0, vec![ends[0] + 20, ends[1] + 20], "late read");
    assert_eq!(
        (with.1, with.2, with.3, with.4),
        (Some(1), Some(0), Some(2), Some(5)),
        "late read"
    );
    let (ends, ..) = replay("soon0", 1448, 0, off);
    let with = replay("soon1", 1448, 0, probe);
    assert_eq!(with.0, ends, "prompt read");
    assert_eq!(
        (with.1, with.3, with.4),
        (Some(0), Some(1), Some(3)),
        "prompt read"
    );
    let (ends, ..) = replay("one0", 100, 20, off);
    let with = replay("one1", 100, 20, delack);
    assert_eq!(with.0, vec![ends[0] + 20, ends[1]], "one segment");
    assert_eq!(
        (with.2, with.3, with.4),
        (Some(1), Some(1), Some(2)),
        "one segment"
    );
}

/// A rank finds a frame by a run of its event loop, which polls every
/// connection it holds beyond the first (`mpi_poll_ns`, 800 ns: 100 node
/// cycles of 8 ns): one that waited runs it when the frame comes, one
/// whose frame is already in runs it when it asks, unless a run since
/// the frame came found it. On a 3-node ring ranks 0 and 2 compute 10
/// and 20 us and send rank 1 8 bytes each:
/// - Rank 1 receives from 0, then from 2, waiting for both: lazily
///   connected, its first wait holds one connection (nothing to pay) and
///   its second two: it ends 100 node cycles later than without a poll.
/// - It computes 30 us between its receives: rank 2's frame, in since
///   20 us, came after its first run (at 10 us), so a run finds it: 100
///   later; preconnected (`connected=1`) both runs poll two connections:
///   200 later.
/// - Preconnected, it receives from 2 first: waiting for that frame (20
///   us), its run polls two connections and finds rank 0's frame (in
///   since 10 us) too: 100 later, and nothing for the second receive.
///
/// The senders, who never wait, end as they did.
#[test]
fn a_waiting_rank_polls_every_connection_it_holds() {
    let d = Dir::new("wl-mpi-poll");
    let senders = "1:0:0:0.000010\n2:0:0:1:8:5:1:1\n1:2:0:0.000020\n2:2:0:1:8:5:1:1\n";
    let replay = |name: &str, flags: &str, (first, between): (u32, &str), poll: &str| {
        let head = format!(
            "#DIMEMAS:\"fsin-rs MPI trace; {flags}poll\":1,00000000000000000000:3(1,1,1),1,0,0\nd:1:1:3:0:1:2\n"
        );
        let second = 2 - first;
        let body = format!("{senders}3:1:0:{first}:8:5:1:0\n{between}3:1:0:{second}:8:5:1:0\n");
        let t = format!(
            "tracefile={}",
            d.file(&format!("{name}.dim"), &format!("{head}{body}"))
        );
        let a = exact_mpi_run(&[&t, "topo=torus_3", poll]);
        assert!(!a.deadlock, "{:?}", a.blocked);
        // Node cycles, 10 network cycles each.
        a.task_done_cycles
            .iter()
            .map(|c| c.unwrap() / 10)
            .collect::<Vec<u64>>()
    };
    let busy = "1:1:0:0.000030\n";
    let cases = [
        ("waits", "", (0, ""), 100),
        ("busy", "", (0, busy), 100),
        ("busy-pre", "preconnected; ", (0, busy), 200),
        ("late-first-pre", "preconnected; ", (2, ""), 100),
    ];
    for (name, flags, between, more) in cases {
        let none = replay(&format!("{name}0"), flags, between, "mpi_poll_ns=0");
        let with = replay(&format!("{name}1"), flags, between, "mpi_poll_ns=800");
        assert_eq!(with, vec![none[0], none[1] + more, none[2]], "{name}");
    }
}

/// A completion call that waits for several messages takes them as
/// they arrive (Open MPI's progress engine reads whichever connection
/// has data), on a 3-node ring: rank 2 sends rank 1 8 bytes at once,
/// rank 0 after 40 us; rank 1 posts both receives, from 0 first, and
/// waits for both in one call. Each message costs its receiver 800 ns
/// (100 node cycles), so taking rank 2's while rank 0's is on its way
/// leaves one cost after rank 0's frame: rank 1 ends as it does with
/// blocking receives in arrival order (from 2, then from 0), and a
/// message's cost earlier than with blocking receives in posting order
/// (from 0, then from 2).
#[test]
fn a_waitall_takes_its_messages_as_they_arrive() {
    let d = Dir::new("wl-mpi-any");
    let head = "#DIMEMAS:\"fsin-rs MPI trace; any\":1,00000000000000000000:3(1,1,1),1,0,0\nd:1:1:3:0:1:2\n";
    let senders = "1:0:0:0.000040\n2:0:0:1:8:5:1:1\n2:2:0:1:8:5:1:1\n";
    let replay = |name: &str, rank1: &str| {
        let t = format!(
            "tracefile={}",
            d.file(&format!("{name}.dim"), &format!("{head}{senders}{rank1}"))
        );
        let a = exact_mpi_run(&[
            &t,
            "topo=torus_3",
            "mpi_poll_ns=0",
            "mpi_tcp_acks=0",
            "mpi_rx_ns=0",
        ]);
        assert!(!a.deadlock, "{:?}", a.blocked);
        // Node cycles, 10 network cycles each.
        a.task_done_cycles[1].unwrap() / 10
    };
    let waitall = replay(
        "waitall",
        "3:1:0:0:8:5:1:1\n3:1:0:2:8:5:1:1\n3:1:0:0:8:5:1:2\n3:1:0:2:8:5:1:2\n",
    );
    let arrival = replay("arrival", "3:1:0:2:8:5:1:0\n3:1:0:0:8:5:1:0\n");
    let posting = replay("posting", "3:1:0:0:8:5:1:0\n3:1:0:2:8:5:1:0\n");
    assert_eq!(waitall, arrival);
    assert_eq!(posting, arrival + 100);
}

/// MPI-level traces that no live run writes are read or refused, never a
/// panic: messages to oneself (a copy, no frame), a receive nobody sends
/// (the deadlock report names it), a collective on a communicator the
/// file does not define (exit 2 naming it), zero-byte and rendezvous
/// messages.
#[test]
fn odd_mpi_level_traces_replay_or_are_refused() {
    let d = Dir::new("wl-mpi-odd");
    let head =
        "#DIMEMAS:\"fsin-rs MPI trace; odd\":1,00000000000000000000:2(1,1),1,0,0\nd:1:1:2:0:1\n";
    let file =
        |name: &str, body: &str| format!("tracefile={}", d.file(name, &format!("{head}{body}")));
    let own = file(
        "own.dim",
        "2:0:0:0:8:1:1:1\n3:0:0:0:8:1:1:0\n2:1:0:1:90000:1:1:2\n20:1:0:90000003:0\n",
    );
    let a = run(&[own.as_str(), "topo=torus_2"]).app.unwrap();
    assert!(!a.deadlock && a.messages_sent == 0, "{:?}", a.blocked);
    let lost = file(
        "lost.dim",
        "3:1:0:0:0:9:1:0\n2:0:0:1:0:1:1:1\n3:1:0:0:0:1:1:0\n",
    );
    let a = run(&[lost.as_str(), "topo=torus_2"]).app.unwrap();
    assert!(a.deadlock, "a receive nobody sends: {a:?}");
    let big = file("big.dim", "2:0:0:1:200000:1:1:1\n3:1:0:0:200000:1:1:0\n");
    let a = run(&[big.as_str(), "topo=torus_2"]).app.unwrap();
    assert!(!a.deadlock && a.messages_delivered > 100, "{a:?}");
    let o = fsin(&["run", &file("comm.dim", "10:0:0:11:5:0:0:8:8\n")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("communicator 5 is not defined"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // A header naming a collective algorithm the replay cannot expand.
    let pinned = d.file(
        "pinned.dim",
        &head.replace("odd", "Open MPI coll_tuned barrier=4"),
    );
    let o = fsin(&["run", &format!("tracefile={pinned}")]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("pinned.dim") && err.contains("does not expand barrier algorithm 4"),
        "{err}"
    );
}

/// An MPI-level replay reports its frames beside the traced run's (the
/// header's `live frames N acks M`): rank 0 sends 3,000 bytes to rank 1,
/// 3,022 with MPI's header, 3 segments of at most 1,448; rank 1's read
/// leaves more than a segment's payload unacknowledged, so its kernel
/// sends 1 acknowledgement (docs/model.md): 4 frames, 1 of them an
/// acknowledgement. A header without the part gives no live figures.
#[test]
fn an_mpi_level_replay_reports_its_frames_beside_the_traced_runs() {
    let d = Dir::new("wl-mpi-live");
    let body = "d:1:1:2:0:1\n2:0:0:1:3000:1:1:1\n3:1:0:0:3000:1:1:0\n";
    let head = |name: &str| format!("#DIMEMAS:\"{name}\":1,00000000000000000000:2(1,1),1,0,0\n");
    let replay = |name: &str, file: &str| {
        let f = d.file(file, &format!("{}{body}", head(name)));
        let a = run(&[
            &format!("tracefile={f}"),
            "topo=torus_2",
            "mpi_profile=none",
        ])
        .app
        .expect("an application run");
        assert!(!a.deadlock, "{:?}", a.blocked);
        (a.messages_sent, a.acks_sent, a.live_frames, a.live_acks)
    };
    assert_eq!(
        replay("fsin-rs MPI trace; live frames 9 acks 2; t", "live.dim"),
        (4, Some(1), Some(9), Some(2))
    );
    assert_eq!(
        replay("fsin-rs MPI trace; t", "plain.dim"),
        (4, Some(1), None, None)
    );
}

/// `fsin kernel FILE` writes an MPI-level trace with its collectives
/// expanded: an `MPI_Allreduce` on 2 ranks is one exchange
/// (recursive doubling), so with one 8-byte send beside it the `.trc` is
/// a frame trace of 3 frames of 96 bytes (8 + 22 + 66); a file that is
/// not an MPI-level trace is refused naming it. The `.trc` replays as
/// the `.dim` does.
#[test]
fn fsin_kernel_writes_an_mpi_level_trace_with_its_collectives_expanded() {
    let d = Dir::new("wl-mpi-kernel");
    let text =
        "#DIMEMAS:\"fsin-rs MPI trace; k\":1,00000000000000000000:2(1,1),1,0,0\nd:1:1:2:0:1\n\
                10:0:0:11:1:0:0:8:8\n2:0:0:1:8:3:1:1\n10:1:0:11:1:0:0:8:8\n3:1:0:0:8:3:1:0\n";
    let file = d.file("k.dim", text);
    let out = d.0.join("k.trc");
    let o = fsin(&["kernel", &file, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let t = fsin_trace::parse(&out).unwrap();
    assert!(t.frames);
    assert_eq!(t.sends(), 3);
    assert!(t
        .tasks
        .iter()
        .flatten()
        .all(|e| !matches!(e, fsin_trace::Event::Send { bytes, .. } if *bytes != 96)));
    // The `.trc` keeps the lowering's mark (`#fsin mpi ...`), so it replays as
    // the `.dim` does at the node clock it was written for (8 ns): in
    // lock-step its frames reach their ranks at the next slice's start,
    // not at their own cycle as a frame trace's do.
    assert!(t.mpi);
    let replay = |tracefile: &str| {
        let tf = format!("tracefile={tracefile}");
        let keys = [
            tf.as_str(),
            "topo=torus_2",
            "fsin_cycle_relation=200",
            "node_cycle_relation=10000",
            "sync_mode=lockstep",
            "node_clock=125000000",
        ];
        run(&keys).app.expect("an application run").task_done_cycles
    };
    let trc = out.to_str().unwrap();
    assert_eq!(replay(trc), replay(&file));
    let marked = std::fs::read_to_string(trc).unwrap();
    let unmarked: String = (marked.lines())
        .filter(|l| !l.starts_with("#fsin mpi"))
        .map(|l| format!("{l}\n"))
        .collect();
    // One mark: the lowering's, with the built-in profile's costs.
    assert_eq!(marked.lines().count(), unmarked.lines().count() + 1);
    assert_ne!(replay(&d.file("unmarked.trc", &unmarked)), replay(&file));
    let plain = d.file("p.trc", "s 0 1 0 8\nr 0 1 0 8\n");
    let o = fsin(&["kernel", &plain]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("MPI-level trace"));
}
