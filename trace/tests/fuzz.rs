//! Fuzzing the trace readers: `.trc`, Dimemas and alog text,
//! arbitrary and shaped like each format, never panics the parser; what
//! parses is written back by [`Trace::write`] and read again to the same
//! events (the writer's contract), in every format that can carry them.

use fsin_trace::mpi::codes::*;
use fsin_trace::{parse_str, Event, Trace, TraceFormat};
use proptest::prelude::*;

/// Fields of every kind a reader meets: small and huge ids, negative and
/// fractional numbers, exponents, garbage.
fn field() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[0-9]{1,2}",
        1 => "[0-9]{6,24}",
        1 => "-[0-9]{1,3}",
        1 => "[0-9]{1,3}\\.[0-9]{1,3}",
        1 => "[0-9]e[0-9]{1,3}",
        1 => "[a-z()\"]{0,3}",
        1 => Just("NaN".to_string()),
        1 => Just("inf".to_string()),
    ]
}

/// A small number, as valid fields mostly are.
fn small() -> impl Strategy<Value = String> {
    (0u32..6).prop_map(|n| n.to_string())
}

/// Mostly a valid line (`valid`), sometimes one of junk fields after
/// `heads`: the readers see both good traces and every kind of bad line.
fn line(
    valid: impl Strategy<Value = String>,
    heads: Vec<&'static str>,
    sep: &'static str,
) -> impl Strategy<Value = String> {
    let junk = (
        prop::sample::select(heads),
        prop::collection::vec(field(), 0..9),
    )
        .prop_map(move |(h, f)| format!("{h}{sep}{}", f.join(sep)));
    prop_oneof![19 => valid, 1 => junk]
}

/// A `.trc` line: a send, receive or computation, or a comment or junk.
fn trc_line() -> impl Strategy<Value = String> {
    let event = prop_oneof![
        (
            prop::sample::select(vec!["s", "r"]),
            small(),
            small(),
            small(),
            small()
        )
            // A task sends to another: the peer is never the task itself.
            .prop_map(|(e, a, b, t, n)| {
                let peer = (a.parse::<u32>().unwrap() + 1 + b.parse::<u32>().unwrap() % 5) % 6;
                format!("{e} {a} {peer} {t} {n}")
            }),
        (small(), small()).prop_map(|(a, n)| format!("c {a} {n}")),
        Just("# a comment".to_string()),
    ];
    line(
        event,
        vec!["s", "r", "c", "#fsin frames", "#fsin mpi", "x", ""],
        " ",
    )
}

/// A Dimemas record: a burst, send or receive, or junk.
fn dimemas_line() -> impl Strategy<Value = String> {
    let record = prop_oneof![
        (small(), small()).prop_map(|(t, b)| format!("1:{t}:0:0.00{b}")),
        (
            prop::sample::select(vec!["2", "3"]),
            small(),
            small(),
            small(),
            small(),
            0u32..3
        )
            .prop_map(|(op, a, b, n, tag, ty)| format!("{op}:{a}:0:{b}:{n}:{tag}:0:{ty}")),
    ];
    line(record, vec!["1", "2", "3", "s", "d", "10", "9"], ":")
}

/// A record of an MPI-level trace (fsin-rs's Dimemas): a burst, send,
/// receive (blocking or posted), a posted receive and its wait, an
/// `MPI_Isend` and its completion, collective, communicator or fsin-rs
/// event, or junk.
fn mpi_line() -> impl Strategy<Value = String> {
    let size = || prop::sample::select(vec!["0", "8", "3000", "70000"]);
    let record = prop_oneof![
        (small(), small()).prop_map(|(t, b)| format!("1:{t}:0:0.00{b}")),
        (
            prop::sample::select(vec!["2", "3"]),
            small(),
            small(),
            size(),
            small(),
            0u32..2
        )
            .prop_map(|(op, a, b, n, tag, ty)| format!("{op}:{a}:0:{b}:{n}:{tag}:1:{ty}")),
        (small(), small(), size(), small()).prop_map(|(a, b, n, tag)| format!(
            "3:{a}:0:{b}:{n}:{tag}:1:1\n3:{a}:0:{b}:{n}:{tag}:1:2"
        )),
        (small(), small(), size(), small())
            .prop_map(|(a, b, n, tag)| format!("2:{a}:0:{b}:{n}:{tag}:1:2\n20:{a}:0:90000003:0")),
        (small(), 0u32..12, small(), small(), small())
            .prop_map(|(t, op, root, s, r)| format!("10:{t}:0:{op}:1:{root}:0:{s}:{r}")),
        (
            small(),
            prop::sample::select(vec!["90000001", "90000002", "90000004"]),
            small()
        )
            .prop_map(|(t, e, v)| format!("20:{t}:0:{e}:{v}")),
        Just("d:1:1:3:0:1:2".to_string()),
    ];
    line(record, vec!["1", "2", "3", "10", "20", "d", "s", "0"], ":")
}

/// An alog record: a send or receive, or junk.
fn alog_line() -> impl Strategy<Value = String> {
    let record = (
        prop::sample::select(vec!["-101", "-102"]),
        small(),
        small(),
        small(),
        small(),
    )
        .prop_map(|(op, a, b, tag, n)| format!("{op} {a} 0 {b} 0 1.0 {tag} {n}"));
    line(record, vec!["-101", "-102", "-1", "#", "7"], " ")
}

fn text(lines: impl Strategy<Value = String>, head: &'static str) -> impl Strategy<Value = String> {
    prop::collection::vec(lines, 1..12).prop_map(move |l| format!("{head}{}\n", l.join("\n")))
}

/// The event queues up to the last task that has any (a `.trc` has no
/// task count: trailing idle tasks are not written).
fn queues(tasks: Vec<Vec<Event>>) -> Vec<Vec<Event>> {
    let mut q = tasks;
    while q.last().is_some_and(Vec::is_empty) {
        q.pop();
    }
    q
}

/// The trace's events less its computation (alog carries none).
fn messages(t: &Trace) -> Vec<Vec<Event>> {
    queues(
        (t.tasks.iter())
            .map(|q| {
                q.iter()
                    .copied()
                    .filter(|e| !matches!(e, Event::Cpu { .. }))
                    .collect()
            })
            .collect(),
    )
}

/// `t`, parsed from some text, written in every format and read back.
fn round_trips(t: &Trace) {
    let again = parse_str(&t.write(TraceFormat::Trc), "again.trc").expect("written .trc parses");
    assert_eq!(
        queues(again.tasks),
        queues(t.tasks.clone()),
        "{}",
        t.write(TraceFormat::Trc)
    );
    assert_eq!(again.frames, t.frames);
    for format in [TraceFormat::Dimemas, TraceFormat::Alog] {
        let written = t.write(format);
        let again = parse_str(&written, "again").expect("written trace parses");
        assert_eq!(messages(&again), messages(t), "{written}");
    }
}

proptest! {
    // A failing case is kept beside this file (fuzz.regressions), to be
    // committed: it then runs first, every time.
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_text_never_panics(s in "\\PC{0,400}") {
        let _ = parse_str(&s, "fuzz");
    }

    #[test]
    fn trc_lines(s in text(trc_line(), "")) {
        if let Ok(t) = parse_str(&s, "fuzz.trc") {
            round_trips(&t);
        }
    }

    #[test]
    fn dimemas_records(count in prop_oneof![3 => Just("6".to_string()), 1 => field()], s in text(dimemas_line(), "")) {
        let s = format!("#DIMEMAS:\"fuzz\":1,0:{count}(1:0)\n{s}");
        if let Ok(t) = parse_str(&s, "fuzz.dim") {
            round_trips(&t);
        }
    }

    /// An MPI-level trace read and lowered to frames never panics, and
    /// what it lowers to is a frame trace of its ranks.
    #[test]
    fn mpi_records(
        count in prop_oneof![3 => Just("6".to_string()), 1 => field()],
        algorithms in prop_oneof![
            Just(""),
            Just(" coll_tuned alltoall=1 alltoallv=1"),
            Just(" coll_tuned alltoall=2 alltoallv=2"),
            Just(" coll_tuned alltoall=3"),
            Just(" coll_tuned alltoall=fixed alltoallv=fixed barrier=3"),
            Just(" coll_tuned alltoall=9 scan=x ="),
        ],
        s in text(mpi_line(), "d:1:1:6:0:1:2:3:4:5\n"),
    ) {
        let s = format!("#DIMEMAS:\"fsin-rs MPI trace; fuzz{algorithms}\":1,0:{count}(1),1,0,0\n{s}");
        if let Ok(p) = fsin_trace::mpi::read::parse(&s, "fuzz.dim") {
            if let Ok(t) = p.lower(&fsin_trace::mpi::lower::MpiModel::default()) {
                prop_assert!(t.frames && t.mpi);
                prop_assert!(t.tasks.len() <= p.ranks.len());
            }
        }
    }

    #[test]
    fn alog_records(s in text(alog_line(), "-3 0 0 0 0 0\n")) {
        if let Ok(t) = parse_str(&s, "fuzz.alog") {
            round_trips(&t);
        }
    }
}

/// The shaped inputs are mostly traces that parse, with messages: the
/// round trips above are not vacuous. Of 200 of each on 2026-12-07:
/// `.trc` 122, Dimemas 126 and alog 172 parse with messages, 168
/// MPI-level traces are read and lowered, 129 of them to frames (63, 67
/// and 146 with messages and 47 MPI-level traces to frames before the
/// valid lines were all valid: no task sending to itself, no receive
/// type 3, a wait only after its receive was posted, an `MPI_Isend`'s
/// completion only after it, and a junk line one time in 20 instead of
/// 10).
#[test]
fn shaped_inputs_mostly_parse() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut with_messages = [0; 3];
    let mut lowered = 0;
    let mut with_frames = 0;
    for _ in 0..200 {
        let trc = text(trc_line(), "")
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let dim = text(dimemas_line(), "")
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let alog = text(alog_line(), "-3 0 0 0 0 0\n")
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let dim = format!("#DIMEMAS:\"fuzz\":1,0:6(1:0)\n{dim}");
        let mpi = text(mpi_line(), "d:1:1:6:0:1:2:3:4:5\n")
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let mpi = format!("#DIMEMAS:\"fsin-rs MPI trace; fuzz\":1,0:6(1),1,0,0\n{mpi}");
        if let Ok(t) = fsin_trace::mpi::read::parse(&mpi, "fuzz.dim")
            .and_then(|p| p.lower(&fsin_trace::mpi::lower::MpiModel::default()))
        {
            lowered += 1;
            with_frames += usize::from(t.sends() > 0);
        }
        for (k, t) in [trc, dim, alog].iter().enumerate() {
            if parse_str(t, "fuzz").is_ok_and(|t| !messages(&t).is_empty()) {
                with_messages[k] += 1;
            }
        }
    }
    assert!(
        with_messages.iter().all(|&n| (100..200).contains(&n)),
        "{with_messages:?} of 200 parse with messages"
    );
    assert!(
        (100..200).contains(&lowered),
        "{lowered} of 200 MPI-level traces read and lowered"
    );
    assert!(
        with_frames >= 100,
        "{with_frames} of 200 MPI-level traces lower to frames"
    );
}

/// Records of the MPI library's stream, 56 bytes each.
type Records = Vec<Vec<u8>>;

/// One record of the MPI library's stream (docs/contracts.md, "MPI trace
/// records"), its bytes from the reader's own writer
/// ([`fsin_trace::mpi::records::LibraryRecord::to_bytes`]).
#[allow(clippy::too_many_arguments)]
fn record(
    op: u8,
    flags: u8,
    comm: u32,
    t: u64,
    peer: i32,
    tag: i32,
    bytes: u64,
    bytes2: u64,
    root: i32,
    req: u32,
) -> Vec<u8> {
    fsin_trace::mpi::records::LibraryRecord {
        op,
        flags,
        comm,
        enter_ns: 5_000 + t * 1_000,
        exit_ns: 5_500 + t * 1_000,
        peer,
        tag,
        bytes,
        bytes2,
        root,
        req,
    }
    .to_bytes()
    .to_vec()
}

/// A rank's stream as the library writes it: the header (world
/// communicator 0 with every rank), then `records`.
fn stream(rank: u32, size: u32, records: &[Vec<u8>]) -> Vec<u8> {
    let mut b = fsin_trace::mpi::RankStream {
        rank,
        size,
        truncated: false,
        pid: 77,
        init_enter_ns: 1_000,
        init_exit_ns: 5_000,
        finalize_enter_ns: 1_000_000,
        host: format!("node{rank}"),
        comms: vec![(0, (0..size).collect())],
        records: Vec::new(),
    }
    .to_bytes();
    b[20..24].copy_from_slice(&(records.len() as u32).to_le_bytes());
    for r in records {
        b.extend(r);
    }
    b
}

/// A call as the library records it, with peers and roots in a world of
/// `size`: the point-to-point calls, a wait with its completed request,
/// a probe, every collective (a v-collective with its per-peer counts), a
/// new communicator.
fn call(size: u32) -> impl Strategy<Value = Records> {
    let peer = 0..size as i32;
    (
        0u8..9,
        peer.clone(),
        peer,
        0i32..4,
        0u64..100_000,
        0usize..12,
    )
        .prop_map(move |(kind, peer, root, tag, bytes, coll)| match kind {
            0 => vec![record(OP_SEND, 0, 0, 0, peer, tag, bytes, 0, -1, 0)],
            1 => vec![
                record(OP_ISEND, 0, 0, 0, peer, tag, bytes, 0, -1, 7),
                record(OP_WAIT, 0, 0, 0, -1, 0, 1, 0, -1, 0),
                record(OP_DONE, 0, 0, 0, peer, tag, bytes, 0, -1, 7),
            ],
            2 => vec![record(OP_RECV, 0, 0, 0, peer, tag, bytes, 0, -1, 0)],
            3 => vec![
                record(OP_IRECV, 0, 0, 0, peer, tag, bytes, 0, -1, 8),
                record(OP_WAITALL, 0, 0, 0, -1, 0, 1, 0, -1, 0),
                record(OP_DONE, FLAG_RECV, 0, 0, peer, tag, bytes, 0, -1, 8),
            ],
            4 => vec![record(
                OP_SENDRECV,
                0,
                0,
                0,
                peer,
                tag,
                bytes,
                bytes,
                root,
                tag as u32,
            )],
            5 => vec![record(OP_PROBE, 0, 0, 0, peer, tag, 0, 0, -1, 0)],
            6 => vec![record(OP_COMM_NEW, 0, 0, 0, -1, 0, 0, 0, -1, NO_COMM)],
            _ => {
                let mut c = vec![record(
                    OP_BARRIER + coll as u8,
                    0,
                    0,
                    0,
                    -1,
                    0,
                    bytes,
                    bytes,
                    root,
                    0,
                )];
                // Alltoallv, Allgatherv, Gatherv and Scatterv (the odd
                // ones from the sixth) give their counts per peer.
                if coll >= 5 && coll % 2 == 1 {
                    c.extend(
                        (0..size).map(|_| record(OP_VEC, 0, 0, 0, -1, 0, bytes, bytes, -1, 0)),
                    );
                }
                c
            }
        })
}

/// What is done to a valid stream before it is read.
#[derive(Debug, Clone)]
enum Damage {
    None,
    /// The stream cut after this many bytes (of the whole).
    Cut(usize),
    /// A record dropped (the header's count kept right).
    Drop(usize),
    /// Two records swapped.
    Swap(usize, usize),
    /// A byte of a record's body set to a value.
    Field(usize, usize, u8),
    /// A byte anywhere flipped.
    Flip(usize, u8),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        2 => Just(Damage::None),
        1 => any::<usize>().prop_map(Damage::Cut),
        2 => any::<usize>().prop_map(Damage::Drop),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Damage::Swap(a, b)),
        2 => (any::<usize>(), 0usize..56, any::<u8>()).prop_map(|(r, k, v)| Damage::Field(r, k, v)),
        1 => (any::<usize>(), 1u8..=255).prop_map(|(at, x)| Damage::Flip(at, x)),
    ]
}

/// Every rank's stream of a world of 1 to 4 ranks, each a few calls, and
/// the damage done to rank 0's.
fn world() -> impl Strategy<Value = (u32, Vec<Vec<Records>>, Damage)> {
    (1u32..5).prop_flat_map(|size| {
        (
            Just(size),
            prop::collection::vec(prop::collection::vec(call(size), 0..8), size as usize),
            damage(),
        )
    })
}

/// The world's streams, rank 0's damaged.
fn damaged(size: u32, calls: &[Vec<Records>], d: &Damage) -> Vec<Vec<u8>> {
    (0..size)
        .map(|rank| {
            let mut records: Records = calls[rank as usize].concat();
            if rank > 0 {
                return stream(rank, size, &records);
            }
            let n = records.len().max(1);
            match *d {
                Damage::Drop(k) if !records.is_empty() => {
                    records.remove(k % n);
                }
                Damage::Swap(a, b) if !records.is_empty() => records.swap(a % n, b % n),
                Damage::Field(k, at, v) if !records.is_empty() => records[k % n][at] = v,
                _ => {}
            }
            let mut s = stream(rank, size, &records);
            match *d {
                Damage::Cut(at) => s.truncate(at % (s.len() + 1)),
                Damage::Flip(at, x) => {
                    let at = at % s.len();
                    s[at] ^= x;
                }
                _ => {}
            }
            s
        })
        .collect()
}

/// Reads the streams as nic-bridge does: each parsed, then joined into
/// the trace (which decodes every record into its call); `Some(ranks)`
/// when every stream parsed, so that the join's decoding ran.
fn read(streams: &[Vec<u8>]) -> Option<Result<usize, String>> {
    let parsed: Vec<_> = streams
        .iter()
        .map(|s| fsin_trace::mpi::RankStream::parse(s))
        .collect::<Result<_, _>>()
        .ok()?;
    Some(
        fsin_trace::mpi::MpiTrace::from_streams(parsed)
            .map(|t| t.ranks.len())
            .map_err(|e| e.to_string()),
    )
}

proptest! {
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    /// Record streams built as the library writes them, then cut,
    /// dropped, reordered or corrupted, never panic the reader or the
    /// join; an undamaged world joins with every rank.
    #[test]
    fn mpi_record_streams((size, calls, d) in world()) {
        let streams = damaged(size, &calls, &d);
        let got = read(&streams);
        if matches!(d, Damage::None) {
            prop_assert_eq!(got, Some(Ok(size as usize)));
            // What the reader reads, its writer writes back byte for byte.
            for s in &streams {
                let read = fsin_trace::mpi::RankStream::parse(s).unwrap();
                prop_assert_eq!(&read.to_bytes(), s);
            }
        }
    }
}

/// The shaped record streams reach the decoding of records: in at least
/// half of the cases every stream parses and the join decodes their
/// calls (into a trace or a refusal naming the record).
#[test]
fn shaped_record_streams_mostly_reach_the_decoder() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut decoded, mut joined) = (0, 0);
    for _ in 0..400 {
        let (size, calls, d) = world().new_tree(&mut runner).unwrap().current();
        match read(&damaged(size, &calls, &d)) {
            Some(Ok(_)) => {
                decoded += 1;
                joined += 1;
            }
            Some(Err(_)) => decoded += 1,
            None => {}
        }
    }
    assert!(decoded >= 200, "{decoded} of 400 reached the decoder");
    assert!(joined >= 100, "{joined} of 400 joined into a trace");
}
