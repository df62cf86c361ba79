//! `fsin run --timeline`: each format read back by a reader
//! written here from the format's documentation (Paraver's trace format:
//! the header, state records `1:cpu:appl:task:thread:begin:end:state` and
//! communication records `3:cpu:appl:task:thread:lsend:psend:cpu:appl:
//! task:thread:lrecv:precv:size:tag`; Chrome's trace-event format read by
//! serde_json, not by the writer), against a hand-computed ping-pong and
//! against the run's own report.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use common::Dir;

fn fsin(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fsin"))
        .args(args)
        .output()
        .expect("fsin runs")
}

/// `fsin run ARGS --json`'s report.
fn report(args: &[&str]) -> Value {
    let mut all = vec!["run", "--json"];
    all.extend_from_slice(args);
    let o = fsin(&all);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    serde_json::from_str(out.lines().last().unwrap()).unwrap()
}

/// What a timeline holds, whatever its format: per task (0-based) its
/// states as (begin, end, name), the messages as (from task, to task,
/// sent, received, bytes, tag), and the end time.
#[derive(Debug, Default)]
struct Read {
    end: u64,
    states: BTreeMap<u64, Vec<(u64, u64, String)>>,
    messages: Vec<(u64, u64, u64, u64, u64, u64)>,
    counters: usize,
}

/// Paraver's state names of the `.pcf` (its STATES section).
fn pcf_states(pcf: &str) -> BTreeMap<u64, String> {
    let mut names = BTreeMap::new();
    let mut inside = false;
    for line in pcf.lines() {
        if line.trim() == "STATES" {
            inside = true;
            continue;
        }
        if inside {
            if line.trim().is_empty() {
                break;
            }
            let (v, name) = line.split_once(char::is_whitespace).unwrap();
            names.insert(v.parse().unwrap(), name.trim().to_string());
        }
    }
    names
}

fn read_paraver(prv: &Path) -> Read {
    let text = std::fs::read_to_string(prv).unwrap();
    let names = pcf_states(&std::fs::read_to_string(prv.with_extension("pcf")).unwrap());
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    assert!(header.starts_with("#Paraver ("), "{header}");
    // #Paraver (date):ftime_ns:nodes(cpus):appls:tasks(threads:node,...)
    let after = &header[header.find("):").unwrap() + 2..];
    let ftime = after.split(':').next().unwrap();
    let mut r = Read {
        end: ftime.trim_end_matches("_ns").parse().unwrap(),
        ..Read::default()
    };
    let mut last = 0;
    for line in lines {
        let f: Vec<u64> = line.split(':').map(|x| x.parse().unwrap()).collect();
        assert!(f[5] >= last, "records in time order: {line}");
        last = f[5];
        match f[0] {
            1 => r
                .states
                .entry(f[3] - 1)
                .or_default()
                .push((f[5], f[6], names[&f[7]].clone())),
            2 => r.counters += (f.len() - 6) / 2,
            3 => r
                .messages
                .push((f[3] - 1, f[9] - 1, f[5], f[12], f[13], f[14])),
            other => panic!("record type {other}: {line}"),
        }
    }
    r
}

/// Perfetto's microseconds with three decimals back to ticks.
fn ticks(v: &Value) -> u64 {
    (v.as_f64().unwrap() * 1000.0).round() as u64
}

fn read_perfetto(json: &Path) -> Read {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let mut r = Read::default();
    let mut starts = BTreeMap::new();
    for e in v["traceEvents"].as_array().unwrap() {
        match e["ph"].as_str().unwrap() {
            "X" => {
                let (b, d) = (ticks(&e["ts"]), ticks(&e["dur"]));
                r.end = r.end.max(b + d);
                r.states
                    .entry(e["tid"].as_u64().unwrap() - 1)
                    .or_default()
                    .push((b, b + d, e["name"].as_str().unwrap().to_string()));
            }
            "s" => {
                starts.insert(e["id"].as_u64().unwrap(), e.clone());
            }
            "f" => {
                let s = &starts[&e["id"].as_u64().unwrap()];
                r.messages.push((
                    s["tid"].as_u64().unwrap() - 1,
                    e["tid"].as_u64().unwrap() - 1,
                    ticks(&s["ts"]),
                    ticks(&e["ts"]),
                    s["args"]["bytes"].as_u64().unwrap(),
                    s["args"]["tag"].as_u64().unwrap(),
                ));
            }
            "C" => r.counters += 1,
            "M" => {}
            other => panic!("event {other}: {e}"),
        }
    }
    for s in r.states.values_mut() {
        s.sort();
    }
    r.messages.sort();
    r
}

/// The late ping-pong of the workload tests on a ring of 4 (16-phit
/// packets of 64 bytes, one hop), by hand: task 0 sends in cycle 0 (its
/// packet generated in 0: "Blocking Send" for one cycle) and waits; the
/// packet is consumed by 16 and the message is in at 17. Task 1 computes
/// 100 cycles, finds the request there, answers in 100 (sending one
/// cycle) and is done at 101; the answer is consumed by 116, in at 117,
/// when task 0 is done. The same in both formats.
#[test]
fn a_ping_pong_timeline_is_the_hand_computed_one() {
    let d = Dir::new("tl-pp");
    let t = d.file(
        "late.trc",
        "s 0 1 0 64\nc 1 100\nr 0 1 0 64\ns 1 0 0 64\nr 1 0 0 64\n",
    );
    for (file, read) in [
        ("pp.prv", read_paraver as fn(&Path) -> Read),
        ("pp.json", read_perfetto),
    ] {
        let path = d.path(file);
        let out = d.path(&format!("out-{file}"));
        let r = report(&[
            &format!("tracefile={t}"),
            "topo=torus_4",
            "--timeline",
            &path,
            "--out",
            &out,
        ]);
        assert_eq!(r["exec_cycles"], 117);
        // timeline.svg: both rows named, task 0 mostly waiting (a red
        // bar), task 1 mostly running (blue).
        let svg = std::fs::read_to_string(Path::new(&out).join("timeline.svg")).unwrap();
        for want in ["task 0", "task 1", "fill=\"#FF0000\"", "fill=\"#0000FF\""] {
            assert!(svg.contains(want), "{want} in timeline.svg");
        }
        let tl = read(Path::new(&path));
        let st = |task: u64| -> Vec<(u64, u64, &str)> {
            tl.states[&task]
                .iter()
                .map(|(b, e, n)| (*b, *e, n.as_str()))
                .collect()
        };
        assert_eq!(
            st(0),
            [(0, 1, "Blocking Send"), (1, 117, "Waiting a message")],
            "{file}"
        );
        assert_eq!(
            st(1),
            [(0, 100, "Running"), (100, 101, "Blocking Send")],
            "{file}"
        );
        assert_eq!(
            tl.messages,
            [(0, 1, 0, 17, 64, 0), (1, 0, 100, 117, 64, 0)],
            "{file}"
        );
        if file.ends_with(".prv") {
            assert_eq!(tl.end, 117);
            let row = std::fs::read_to_string(d.0.join("pp.row")).unwrap();
            assert!(
                row.contains("LEVEL THREAD SIZE 3\ntask 0\ntask 1\nnetwork\n"),
                "{row}"
            );
        }
        // One window (1 000 cycles, the run's 117): the accepted load and
        // the ring's 8 links.
        assert_eq!(tl.counters, 9, "{file}");
        assert_eq!(r["timeline"]["messages"], 2);
    }
}

/// The keys of the MPI-level replays timed by hand: a network cycle a
/// node cycle at 125 MHz (8 ns), 800 ns (100 node cycles) of software a
/// message on each side, no profile, lock-step.
const BY_HAND: &[&str] = &[
    "fsin_cycle_relation=1",
    "node_cycle_relation=1",
    "node_clock=125000000",
    "mpi_profile=none",
    "mpi_message_ns=800",
    "mpi_byte_ps=0",
    "nic_latency=0",
    "sync_mode=lockstep",
];

/// (task, time, value) of every MPI call event (Extrae's type 50000001)
/// on the tasks' call tracks (their second threads) of Paraver text
/// `prv`.
fn call_events(prv: &str) -> Vec<(u32, u64, u32)> {
    prv.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f[0] == "2" && f[4] == "2" && f[6] == "50000001").then(|| {
                (
                    f[3].parse().unwrap(),
                    f[5].parse().unwrap(),
                    f[7].parse().unwrap(),
                )
            })
        })
        .collect()
}

/// An MPI-level ping-pong's replay draws each rank's MPI calls on a
/// track of its own, as a live run's timeline draws them, at the cycles
/// the workload tests compute by hand (`an_mpi_ping_pong_takes_the_hand_computed_time_on_a_faster_network`:
/// 100 node cycles of software a message on each side, a frame in 33
/// cycles after it is queued, lock-step, one network cycle a node
/// cycle): rank 0's `MPI_Send` from 0 to 100 (its frame queued), its
/// `MPI_Recv` from 100 to 466 (rank 1 takes the request in at 133 and
/// pays until 233, sends until 333, the answer is in at 366 and paid for
/// until 466), its next `MPI_Send` to 566; rank 1's `MPI_Recv` from 0
/// to 233 and `MPI_Send` to 333. Extrae's values: `MPI_Send` 1,
/// `MPI_Recv` 2, the end 0. The tracks are the tasks' second threads.
#[test]
fn an_mpi_level_replay_draws_its_calls() {
    let d = Dir::new("tl-mpi-calls");
    let mut text = String::from(
        "#DIMEMAS:\"fsin-rs MPI trace; ping-pong\":1,00000000000000000000:2(1,1),1,0,0\nd:1:1:2:0:1\n",
    );
    text.push_str(&"2:0:0:1:8:1:1:1\n3:0:0:1:8:1:1:0\n".repeat(5));
    text.push_str(&"3:1:0:0:8:1:1:0\n2:1:0:0:8:1:1:1\n".repeat(5));
    let t = d.file("pp.dim", &text);
    let path = d.path("pp.prv");
    let tracefile = format!("tracefile={t}");
    let r = report(
        &[
            &[tracefile.as_str(), "topo=torus_2"],
            BY_HAND,
            &["--timeline", &path],
        ]
        .concat(),
    );
    assert_eq!(r["exec_cycles"], 2330, "{r}");
    let prv = std::fs::read_to_string(&path).unwrap();
    let calls = call_events(&prv);
    let of = |task| -> Vec<(u64, u32)> {
        calls
            .iter()
            .filter(|c| c.0 == task)
            .map(|c| (c.1, c.2))
            .take(6)
            .collect()
    };
    assert_eq!(
        of(1),
        [(0, 1), (100, 0), (100, 2), (466, 0), (466, 1), (566, 0)]
    );
    assert_eq!(
        of(2),
        [
            (0, 2),
            (233, 0),
            (233, 1),
            (333, 0),
            (333, 2),
            (566 + 33 + 100, 0)
        ]
    );
    // Ten calls a rank, each begun and ended.
    assert_eq!(calls.len(), 2 * 10 * 2, "{prv}");
}

/// A completion call that takes two messages as they arrive is drawn
/// until the last one is paid for, whichever came first (3-node ring, as
/// the workload test `a_waitall_takes_its_messages_as_they_arrive`):
/// rank 1 posts receives from 0 and 2 and waits for both; rank 2's
/// message is in at cycle 133 (100 node cycles of software, 33 on the
/// way), rank 0's, sent after 40 us (5,000 node cycles), at 5,133, and
/// paid for until 5,233, where rank 1 ends: its one call spans 0 to
/// 5,233, not to the end of rank 2's message, the last run of its group.
#[test]
fn a_completion_call_is_drawn_until_its_last_message() {
    let d = Dir::new("tl-mpi-group");
    let text = "#DIMEMAS:\"fsin-rs MPI trace; any\":1,00000000000000000000:3(1,1,1),1,0,0\nd:1:1:3:0:1:2\n\
        1:0:0:0.000040\n2:0:0:1:8:5:1:1\n2:2:0:1:8:5:1:1\n\
        3:1:0:0:8:5:1:1\n3:1:0:2:8:5:1:1\n3:1:0:0:8:5:1:2\n3:1:0:2:8:5:1:2\n";
    let t = d.file("any.dim", text);
    let path = d.path("any.prv");
    let tracefile = format!("tracefile={t}");
    let no_acks = ["mpi_tcp_acks=0", "mpi_poll_ns=0", "--timeline", &path];
    let r = report(&[&[tracefile.as_str(), "topo=torus_3"], BY_HAND, &no_acks].concat());
    assert_eq!(r["task_done_cycles"][1], 5233, "{r}");
    let prv = std::fs::read_to_string(&path).unwrap();
    // (time, value) of the call events on rank 1's track (task 2).
    let calls: Vec<(u64, u32)> = (call_events(&prv).into_iter())
        .filter(|c| c.0 == 2)
        .map(|c| (c.1, c.2))
        .collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!((calls[0].0, calls[1]), (0, (5233, 0)), "{calls:?}");
}

/// A loaded kernel (an all-to-all of 2 500-byte messages on a 4x4 torus):
/// in both formats, one communication per message
/// the report counts delivered, and each task's states, end to end from
/// cycle 0 without a gap, sum to the cycle it finished.
#[test]
fn a_kernels_timeline_adds_up_to_its_report() {
    let d = Dir::new("tl-k");
    for file in ["k.prv", "k.json"] {
        let path = d.path(file);
        let r = report(&[
            "topo=torus_4_4",
            "kernel=all2all",
            "kernel_bytes=2500",
            "--timeline",
            &path,
            "--timeline-window",
            "200",
        ]);
        let tl = if file.ends_with(".prv") {
            read_paraver(Path::new(&path))
        } else {
            read_perfetto(Path::new(&path))
        };
        let delivered = r["messages_delivered"].as_u64().unwrap();
        assert_eq!(delivered, 16 * 15);
        assert_eq!(tl.messages.len() as u64, delivered, "{file}");
        let done = r["task_done_cycles"].as_array().unwrap();
        assert_eq!(tl.states.len(), 16);
        for (task, states) in &tl.states {
            let mut at = 0;
            for (b, e, _) in states {
                assert_eq!(*b, at, "{file}: task {task} has a gap or an overlap");
                at = *e;
            }
            assert_eq!(
                Some(at),
                done[*task as usize].as_u64(),
                "{file} task {task}"
            );
        }
        let exec = r["exec_cycles"].as_u64().unwrap();
        // A window every 200 cycles: the accepted load and each of the
        // torus's 64 links.
        assert_eq!(tl.counters as u64, exec.div_ceil(200) * 65, "{file}");
    }
}

/// One run twice gives the same timeline, byte for byte, in both formats
/// (docs/contracts.md: Paraver's header carries a fixed date, not the
/// day's): the kernel of the test above, files written apart.
#[test]
fn a_run_writes_the_same_timeline_twice() {
    let d = Dir::new("tl-twice");
    for ext in ["prv", "json"] {
        let write = |name: &str| {
            let path = d.path(&format!("{name}.{ext}"));
            let args = ["topo=torus_4_4", "kernel=all2all", "kernel_bytes=2500"];
            let r = report(&[&args[..], &["--timeline", &path]].concat());
            assert_eq!(r["messages_delivered"], 16 * 15);
            path
        };
        let (a, b) = (write("a"), write("b"));
        let bytes = |p: &str| std::fs::read(p).unwrap();
        assert!(bytes(&a) == bytes(&b), "{a} and {b} differ");
        if ext == "prv" {
            let text = String::from_utf8(bytes(&a)).unwrap();
            assert!(text.starts_with("#Paraver (01/01/70 at 00:00):"), "{a}");
            for beside in ["pcf", "row"] {
                let (pa, pb) = (
                    d.path(&format!("a.{beside}")),
                    d.path(&format!("b.{beside}")),
                );
                assert!(bytes(&pa) == bytes(&pb), "{pa} and {pb} differ");
            }
        }
    }
}

/// A workload whose timeline would pass `--timeline-limit` is refused up
/// front (exit 2, naming the estimate and the limit); a run that passes it
/// anyway (counters every cycle) keeps what fits and says from which
/// cycle it left the rest out.
#[test]
fn a_timeline_over_its_limit_is_refused_or_cut() {
    let d = Dir::new("tl-limit");
    let many: String = (0..20_000).map(|_| "c 0 1\n").collect();
    let t = d.file("many.trc", &(many + "s 0 1 0 64\nr 0 1 0 64\n"));
    let path = d.path("many.json");
    let o = fsin(&[
        "run",
        &format!("tracefile={t}"),
        "topo=torus_4",
        "--timeline",
        &path,
        "--timeline-limit",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("20002 events") && err.contains("limit of 1 MiB"),
        "{err}"
    );
    let t = d.file("long.trc", "c 0 100000\ns 0 1 0 64\nr 0 1 0 64\n");
    let o = fsin(&[
        "run",
        "--json",
        &format!("tracefile={t}"),
        "topo=torus_4",
        "--timeline",
        &path,
        "--timeline-window",
        "1",
        "--timeline-limit",
        "1",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: Value =
        serde_json::from_str(String::from_utf8_lossy(&o.stdout).lines().last().unwrap()).unwrap();
    let cut = r["timeline"]["cut_at"].as_u64().expect("cut");
    // 9 counters a cycle of about 60 bytes each: a mebibyte lasts about
    // 2 000 cycles.
    assert!((1_000..4_000).contains(&cut), "{cut}");
    assert!(r["timeline"]["bytes"].as_u64().unwrap() <= 1 << 20);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("at cycle {cut}")), "{err}");
    // What was kept is still a whole JSON document.
    read_perfetto(Path::new(&path));
    // A run without tasks has no timeline to draw.
    let o = fsin(&["run", "topo=torus_4", "cycles=100", "--timeline", &path]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("synthetic traffic has none"));
}

/// `timeline.svg` draws at most 64 rows (`MAX_ROWS`): a replay of 64
/// tasks, each computing 10 cycles, draws every one (above 32 rows every
/// second is named: `task 0` to `task 62`); one of 65 draws no chart,
/// and its timeline is written whole all the same.
#[test]
fn a_gantt_chart_draws_at_most_64_rows() {
    let d = Dir::new("tl-rows");
    for (tasks, topo, drawn) in [(64, "torus_8_8", true), (65, "torus_9_9", false)] {
        let body: String = (0..tasks).map(|k| format!("c {k} 10\n")).collect();
        let t = d.file(&format!("t{tasks}.trc"), &body);
        let path = d.path(&format!("t{tasks}.prv"));
        let out = d.path(&format!("out{tasks}"));
        let r = report(&[
            &format!("tracefile={t}"),
            &format!("topo={topo}"),
            "--timeline",
            &path,
            "--out",
            &out,
        ]);
        assert_eq!(r["tasks"], tasks, "{r}");
        let svg = Path::new(&out).join("timeline.svg");
        assert_eq!(svg.is_file(), drawn, "{tasks} tasks");
        if drawn {
            let text = std::fs::read_to_string(&svg).unwrap();
            for want in ["\ntask 0\n", "\ntask 62\n"] {
                assert!(text.contains(want), "{want} in timeline.svg");
            }
        }
        let rows = read_paraver(Path::new(&path)).states.len();
        assert_eq!(rows, tasks as usize, "every task's states in the timeline");
    }
}

/// `fsin demo --timeline` (docs/cosim.md, "A timeline of the rounds"): an
/// all-to-all of 16 fake nodes on a 4x4 torus, in both formats. Every
/// node's states tile the run from the first Continue without a gap,
/// alternating `Running` (its slice) and `Synchronization` (the barrier);
/// one flow per frame delivered (240, as the report counts them), each
/// from a point of its sender's running interval to one of its
/// receiver's, never arriving before it was sent.
#[test]
fn a_cosimulations_timeline_has_every_round_and_frame() {
    let d = Dir::new("tl-cosim");
    for file in ["c.prv", "c.json"] {
        let path = d.path(file);
        let out = d.path(&format!("out-{file}"));
        let r = demo_timeline(&path, &out, &[]);
        assert_eq!(r["frames_delivered"], 240);
        assert_eq!(r["timeline"]["messages"], 240, "{file}");
        let svg = std::fs::read_to_string(Path::new(&out).join("timeline.svg")).unwrap();
        assert!(
            svg.contains("node 15"),
            "{file}: every node in timeline.svg"
        );
        let tl = if file.ends_with(".prv") {
            read_paraver(Path::new(&path))
        } else {
            read_perfetto(Path::new(&path))
        };
        assert_eq!(tl.messages.len(), 240, "{file}");
        assert_eq!(tl.states.len(), 16, "{file}");
        let slices = r["slices"].as_u64().unwrap() - r["slices_skipped"].as_u64().unwrap();
        for (node, states) in &tl.states {
            let mut at = states[0].0;
            for (i, (b, e, name)) in states.iter().enumerate() {
                assert_eq!(*b, at, "{file}: node {node} has a gap or an overlap");
                let want = ["Running", "Synchronization"][i % 2];
                assert_eq!(name, want, "{file}: node {node}, state {i}");
                at = *e;
            }
            assert!(
                states.len() as u64 <= 2 * slices,
                "{file}: node {node} has more states than its rounds"
            );
        }
        let running = |node: u64, t: u64| {
            tl.states[&node]
                .iter()
                .any(|(b, e, name)| name == "Running" && *b <= t && t <= *e)
        };
        for &(src, dst, sent, received, bytes, _) in &tl.messages {
            assert!(
                sent <= received,
                "{file}: a frame arrives before it is sent"
            );
            assert!(
                running(src, sent),
                "{file}: frame {src}->{dst} sent at {sent}"
            );
            assert!(
                running(dst, received),
                "{file}: frame {src}->{dst} in at {received}"
            );
            assert!(bytes >= 60, "{file}: a frame of {bytes} bytes");
        }
    }
}

/// The network's counters add up to the report (issue 59's goal): an
/// all-to-all on a 4x4 torus with windows of 300 cycles (the last one cut
/// at the run's end). Each link's utilization, averaged over the windows
/// by their lengths, is its utilization over the run in `links.csv`
/// (`plevel=2`), and the accepted load's average is the report's
/// `accepted_load`: each window's value is its own phits over its own
/// cycles, so both sums must come back exactly (to the printed digits).
#[test]
fn a_timelines_counters_average_to_the_report() {
    let d = Dir::new("tl-counters");
    let path = d.path("k.json");
    let out = d.path("out");
    let r = report(&[
        "topo=torus_4_4",
        "kernel=all2all",
        "kernel_bytes=2500",
        "plevel=2",
        "--out",
        &out,
        "--timeline",
        &path,
        "--timeline-window",
        "300",
    ]);
    let end = r["exec_cycles"].as_u64().unwrap();
    assert!(end > 3 * 300, "several windows: {end} cycles");
    let series = counter_series(Path::new(&path));
    let average = |name: &str| -> f64 {
        let s = &series[name];
        assert_eq!(
            s.len() as u64,
            end.div_ceil(300),
            "{name}: one value a window"
        );
        let sum: f64 = s
            .iter()
            .map(|&(from, value)| value * ((from + 300).min(end) - from) as f64)
            .sum();
        sum / end as f64
    };
    let accepted = r["accepted_load"].as_f64().unwrap();
    assert!(
        (average("accepted load") - accepted).abs() < 1e-9,
        "accepted load {} against the report's {accepted}",
        average("accepted load")
    );
    assert_links(Path::new(&out), average);
}

/// A co-simulation's timeline carries the network's counters
/// ([`fsin::counters`]) per window of the links' watch: with
/// `util_window=1` every slice is a window of the same length, and the
/// run ends on a window's end, so each link's values average to its
/// utilization in `links.csv`, and the accepted load's to the report's.
#[test]
fn a_cosimulations_counters_average_to_its_links() {
    let d = Dir::new("tl-cosim-counters");
    let path = d.path("c.json");
    let out = d.path("out");
    let r = demo_timeline(&path, &out, &["util_window=1"]);
    let series = counter_series(Path::new(&path));
    let slices = r["slices"].as_u64().unwrap();
    let mean = |name: &str| -> f64 {
        let s = &series[name];
        assert_eq!(s.len() as u64, slices, "{name}: one value a slice");
        s.iter().map(|&(_, v)| v).sum::<f64>() / s.len() as f64
    };
    let accepted = r["network"]["accepted_load"].as_f64().unwrap();
    assert!(accepted > 0.0);
    assert!(
        (mean("accepted load") - accepted).abs() < 1e-9,
        "accepted load {} against the report's {accepted}",
        mean("accepted load")
    );
    assert_links(Path::new(&out), mean);
}

/// `fsin demo --json` of an all-to-all of 16 fake nodes on a 4x4 torus
/// with `--timeline PATH --out OUT` and `more` settings: its report.
fn demo_timeline(path: &str, out: &str, more: &[&str]) -> Value {
    let mut args = vec![
        "demo",
        "--nodes",
        "16",
        "--workload",
        "all2all",
        "--json",
        "--timeline",
        path,
        "--out",
        out,
        "topo=torus_4_4",
    ];
    args.extend_from_slice(more);
    let o = fsin(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_str(String::from_utf8_lossy(&o.stdout).lines().last().unwrap()).unwrap()
}

/// A Perfetto timeline's counters: per name, (its window's first tick,
/// value) in file order.
fn counter_series(path: &Path) -> BTreeMap<String, Vec<(u64, f64)>> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut series: BTreeMap<String, Vec<(u64, f64)>> = BTreeMap::new();
    for e in v["traceEvents"].as_array().unwrap() {
        if e["ph"] == "C" {
            series
                .entry(e["name"].as_str().unwrap().to_string())
                .or_default()
                .push((ticks(&e["ts"]), e["args"]["value"].as_f64().unwrap()));
        }
    }
    series
}

/// Every link of a 4x4 torus in `out`'s `links.csv` has the utilization
/// that `average` gives its counter (`link N dD+`).
fn assert_links(out: &Path, average: impl Fn(&str) -> f64) {
    let csv = std::fs::read_to_string(out.join("links.csv")).unwrap();
    let mut links = 0;
    for line in csv.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let sign = if f[3] == "true" { '+' } else { '-' };
        let name = format!("link {} d{}{sign}", f[0], f[2]);
        let want: f64 = f[5].parse().unwrap();
        let got = average(&name);
        assert!(
            (got - want).abs() < 1e-6,
            "{name}: {got} against links.csv's {want}"
        );
        links += 1;
    }
    assert_eq!(links, 64);
}

/// `--timeline-from 10 --timeline-to 110` on the hand-computed ping-pong
/// above: the states cut to ticks 10-110 (task 0 waits from 10 to 110;
/// task 1 runs from 10 to 100 and sends from 100 to 101), both messages
/// left out (the request was sent at 0, the answer is in at 117), the
/// Paraver trace ending at 110, and the report naming the span. A
/// workload whose whole timeline would pass the limit is not refused with
/// a span (its limit still cuts it).
#[test]
fn a_timelines_span_keeps_only_its_ticks() {
    let d = Dir::new("tl-span");
    let t = d.file(
        "late.trc",
        "s 0 1 0 64\nc 1 100\nr 0 1 0 64\ns 1 0 0 64\nr 1 0 0 64\n",
    );
    let path = d.path("pp.prv");
    let r = report(&[
        &format!("tracefile={t}"),
        "topo=torus_4",
        "--timeline",
        &path,
        "--timeline-from",
        "10",
        "--timeline-to",
        "110",
    ]);
    assert_eq!(r["timeline"]["span"], serde_json::json!([10, 110]));
    let tl = read_paraver(Path::new(&path));
    assert_eq!(tl.end, 110);
    let st = |task: u64| -> Vec<(u64, u64, &str)> {
        tl.states[&task]
            .iter()
            .map(|(b, e, n)| (*b, *e, n.as_str()))
            .collect()
    };
    assert_eq!(st(0), [(10, 110, "Waiting a message")]);
    assert_eq!(st(1), [(10, 100, "Running"), (100, 101, "Blocking Send")]);
    assert!(tl.messages.is_empty(), "{:?}", tl.messages);
    assert_eq!(r["timeline"]["messages"], 0);
    let many: String = (0..20_000).map(|_| "c 0 1\n").collect();
    let t = d.file("many.trc", &(many + "s 0 1 0 64\nr 0 1 0 64\n"));
    let o = fsin(&[
        "run",
        &format!("tracefile={t}"),
        "topo=torus_4",
        "--timeline",
        &d.path("many.json"),
        "--timeline-limit",
        "1",
        "--timeline-to",
        "100",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = fsin(&[
        "run",
        &format!("tracefile={t}"),
        "--timeline",
        &d.path("x.json"),
        "--timeline-from",
        "5",
        "--timeline-to",
        "5",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("an empty span"));
}

/// `--timeline-format` names the format whatever the file is called
/// (Paraver into `k.dat` with its `k.pcf` and `k.row`, Perfetto into
/// `k.trace`), and each holds the kernel's 16 tasks; a name that says no
/// format without it, and INSEE's replay (`compat=insee`), are refused
/// (exit 2, naming what to give).
#[test]
fn the_timeline_format_is_named_or_refused() {
    let d = Dir::new("tl-format");
    let kernel = ["topo=torus_4_4", "kernel=all2all", "kernel_bytes=2500"];
    for (file, format) in [("k.dat", "paraver"), ("k.trace", "perfetto")] {
        let path = d.path(file);
        let mut args = kernel.to_vec();
        args.extend(["--timeline", &path, "--timeline-format", format]);
        report(&args);
        let tl = if format == "paraver" {
            assert!(d.0.join("k.pcf").is_file() && d.0.join("k.row").is_file());
            read_paraver(Path::new(&path))
        } else {
            read_perfetto(Path::new(&path))
        };
        assert_eq!(tl.states.len(), 16, "{file}");
        assert_eq!(tl.messages.len(), 16 * 15, "{file}");
    }
    let odd = d.path("k.log");
    let mut args = vec!["run"];
    args.extend(kernel);
    args.extend(["--timeline", &odd]);
    let o = fsin(&args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--timeline-format paraver|perfetto"), "{err}");
    let json = d.path("k.json");
    let mut args = vec!["run", "compat=insee"];
    args.extend(kernel);
    args.extend(["--timeline", &json]);
    let o = fsin(&args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("compat=insee") && err.contains("no timeline"),
        "{err}"
    );
}
