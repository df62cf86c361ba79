use super::*;

#[test]
fn the_title_is_the_name_the_writer_put_in() {
    let mut t = Trace::new("kernel bu (4 tasks, 64 bytes)", 2);
    t.message(0, 1, 3, 64);
    t.push(1, Event::Cpu { amount: 9 }, 0);
    assert_eq!(
        title(&t.write(TraceFormat::Trc)).as_deref(),
        Some("kernel bu (4 tasks, 64 bytes)")
    );
    assert_eq!(
        title(&t.write(TraceFormat::Dimemas)).as_deref(),
        Some("kernel bu (4 tasks, 64 bytes)")
    );
    t.frames = true;
    assert_eq!(
        title(&t.write(TraceFormat::Trc)).as_deref(),
        Some("kernel bu (4 tasks, 64 bytes)")
    );
    assert_eq!(title("s 0 1 0 5\nr 0 1 0 5\n"), None);
}

#[test]
fn events_go_to_the_task_that_performs_them() {
    let t = "# ping\ns 0 1 7 100\nr 0 1 7 100 # posted by 1\nc 1 50\n\n";
    let e = parse_str(t, "t.trc").unwrap();
    assert_eq!(
        e.tasks[0],
        [Event::Send {
            dst: 1,
            tag: 7,
            bytes: 100
        }]
    );
    assert_eq!(
        e.tasks[1],
        [
            Event::Recv {
                src: 0,
                tag: 7,
                bytes: 100
            },
            Event::Cpu { amount: 50 }
        ]
    );
    assert_eq!(e.lines, [vec![2], vec![3, 4]]);
    // A task named only as a peer still counts.
    assert_eq!(parse_str("r 5 0 1 1\n", "t").unwrap().task_count(), 6);
    assert_eq!(e.origin(1, 1), "t.trc:4");
}

#[test]
fn errors_name_file_line_and_field() {
    let cases = [
        ("x 0 1\n", "t.trc:1: unknown event `x`"),
        ("c 0 1\ns 0 1 2\n", "t.trc:2: `s` takes 4 fields"),
        (
            "s 0 99999999 1 1\n",
            "t.trc:1: field dst = 99999999 is over",
        ),
        ("c 0 abc\n", "t.trc:1: field amount = `abc` is not a number"),
        (
            "c 0 1\nc 0 18446744073709551615\n",
            "t.trc:2: field amount = 18446744073709551615 is over 1099511627776",
        ),
        (
            "s 0 1 0 1000000000000000000\n",
            "t.trc:1: field bytes = 1000000000000000000 is over 4294967296",
        ),
        ("s 1 1 0 5\n", "t.trc:1: task 1 sends to itself"),
        (
            "r 0 1 4294967296 5\n",
            "t.trc:1: field tag = 4294967296 is over",
        ),
    ];
    expect_errors("t.trc", &cases);
}

#[test]
fn first_beyond_names_the_earliest_line() {
    let t = parse_str("s 0 1 0 1\nr 0 1 0 1\nc 1 5\nr 5 2 0 1\ns 7 0 0 1\n", "t").unwrap();
    assert_eq!(t.task_count(), 8);
    // Line 4: task 2 waits for task 5.
    assert_eq!(t.first_beyond(4), Some((2, 0, 5)));
    assert_eq!(t.first_beyond(6), Some((7, 0, 7)));
    assert_eq!(t.first_beyond(8), None);
    let e = t.check_within(6).unwrap_err().to_string();
    assert_eq!(e, "t:5: task 7 is beyond the 6 nodes the trace runs on");
}

#[test]
fn written_traces_read_back() {
    let mut t = Trace::new("k", 3);
    t.message(0, 2, 4, 100);
    t.push(1, Event::Cpu { amount: 9 }, 0);
    t.message(2, 1, 0, 1);
    let back = parse_str(&t.write(TraceFormat::Trc), "k").unwrap();
    assert_eq!(back.tasks, t.tasks);
    assert!(!back.frames);
    assert_eq!(t.sends(), 2);
    t.frames = true;
    let text = t.write(TraceFormat::Trc);
    assert!(text.ends_with("#fsin frames\n"), "{text}");
    assert!(parse_str(&text, "k").unwrap().frames);
    assert!(!parse_str(&text, "k").unwrap().mpi);
    t.mpi = true;
    let text = t.write(TraceFormat::Trc);
    assert!(text.ends_with("#fsin frames\n#fsin mpi\n"), "{text}");
    t.wake = 125;
    let text = t.write(TraceFormat::Trc);
    assert!(
        text.ends_with("#fsin frames\n#fsin mpi wake=125\n"),
        "{text}"
    );
    assert_eq!(parse_str(&text, "w").unwrap().wake, 125);
    t.contact = 7;
    t.tick = 9;
    t.handshake = 3;
    t.rx = 5;
    t.irq = 16_000;
    t.arp_rx = 4_000;
    t.arp = 60;
    t.poll = 17;
    t.connected = true;
    t.tcp = TcpTimers {
        probe: 11,
        delack: 13,
        ack: 66,
    };
    let text = t.write(TraceFormat::Trc);
    assert!(
        text.ends_with(
            "#fsin mpi wake=125 poll=17 contact=7 tick=9 handshake=3 rx=5 irq=16000 arp_rx=4000 arp=60 probe=11 delack=13 ack=66 connected=1\n"
        ),
        "{text}"
    );
    let back = parse_str(&text, "w").unwrap();
    assert_eq!(
        (
            back.wake,
            back.contact,
            back.tick,
            back.handshake,
            back.rx,
            back.arp
        ),
        (125, 7, 9, 3, 5, 60)
    );
    assert_eq!(back.tcp, t.tcp);
    assert_eq!(
        (back.poll, back.connected, back.irq, back.arp_rx),
        (17, true, 16_000, 4_000)
    );
    // A kernel's receive beyond the directive's bound is refused, named.
    let e = parse_str("#fsin frames\n#fsin mpi arp_rx=-1\n", "w").unwrap_err();
    assert!(e.to_string().contains("arp_rx=N"), "{e}");
    let e = parse_str("#fsin frames\n#fsin mpi wake=x\n", "w").unwrap_err();
    assert!(e.to_string().contains("wake=N"), "{e}");
    // An ARP request is one frame: a larger one is refused.
    let e = parse_str("#fsin frames\n#fsin mpi arp=1515\n", "w").unwrap_err();
    assert!(e.to_string().contains("at most 1514"), "{e}");
    let e = parse_str("#fsin frames\n#fsin mpi ack=1515\n", "w").unwrap_err();
    assert!(e.to_string().contains("ack=N"), "{e}");
    let e = parse_str("#fsin frames\n#fsin mpi connected=2\n", "w").unwrap_err();
    assert!(e.to_string().contains("connected=1"), "{e}");
    let back = parse_str(&text, "k").unwrap();
    assert!(back.frames && back.mpi);
    let e = parse_str("#fsin mpi\nc 0 1\n#fsin frames\n", "k").unwrap_err();
    assert!(e.to_string().starts_with("k:1: `#fsin mpi`"), "{e}");
    // Only the exact line makes a frame trace; other comments do not.
    assert!(!parse_str("# fsin frames\nc 0 1\n", "k").unwrap().frames);
}

/// A lowered trace's groups of receives taken as they arrive are
/// written as `#fsin group TASK END RUN...` lines and read back; lines
/// that do not fit the task's events are refused, naming the line.
#[test]
fn groups_of_receives_are_written_and_read_back() {
    let mut t = Trace::new("g", 3);
    t.frames = true;
    t.mpi = true;
    for src in [0, 2] {
        t.push(
            1,
            Event::Recv {
                src,
                tag: 0,
                bytes: 96,
            },
            0,
        );
        t.push(1, Event::Cpu { amount: 10 }, 0);
        t.push(
            src,
            Event::Send {
                dst: 1,
                tag: 0,
                bytes: 96,
            },
            0,
        );
    }
    t.recv_groups = vec![
        Vec::new(),
        vec![RecvGroup {
            runs: vec![0, 2],
            end: 4,
        }],
    ];
    let text = t.write(TraceFormat::Trc);
    assert!(text.ends_with("#fsin mpi\n#fsin group 1 4 0 2\n"), "{text}");
    assert_eq!(parse_str(&text, "g").unwrap().recv_groups, t.recv_groups);
    let events = "r 0 1 0 96\nc 1 10\nr 2 1 0 96\nc 1 10\n#fsin frames\n#fsin mpi\n";
    let cases = [
        (
            "#fsin group 1 4 0 1",
            "g:7: the group of task 1 at event 0 has its run at 1 begin with no receive",
        ),
        (
            "#fsin group 1 5 0 2",
            "g:7: the group of task 1 at event 0 ends at 5, past the task's 4 events",
        ),
        (
            "#fsin group 1 4 2 0",
            "g:7: the group of task 1 at event 2 has its run at 2 empty or out of order",
        ),
        (
            "#fsin group 1 4",
            "g:7: `#fsin group` takes TASK END RUN..., with one run at least",
        ),
        ("#fsin group 1 4 x", "g:7: `x` is not an event index"),
        (
            "#fsin group 0 1 0",
            "g:7: the group of task 0 at event 0 ends at 1, past the task's 0 events",
        ),
    ];
    for (line, want) in cases {
        let e = parse_str(&format!("{events}{line}\n"), "g").unwrap_err();
        assert_eq!(e.to_string(), want);
    }
    let twice = format!("{events}#fsin group 1 4 0 2\n#fsin group 1 4 2\n");
    let e = parse_str(&twice, "g").unwrap_err().to_string();
    assert!(
        e.starts_with("g:8: the group of task 1 at event 2 begins before"),
        "{e}"
    );
    let e = parse_str("#fsin frames\n#fsin group 0 1 0\n", "g").unwrap_err();
    assert!(
        e.to_string().contains("follows the `#fsin mpi` line"),
        "{e}"
    );
}
