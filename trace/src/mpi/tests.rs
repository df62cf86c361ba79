//! The reader of the library's streams, the join of ranks and the Dimemas
//! writer, on streams built by hand as the library lays them out.

use super::*;
use crate::{parse_str, Event};
use codes::*;
use records::LibraryRecord;

/// A stream as `fsin-mpitrace.c` writes it.
struct Builder {
    rank: u32,
    size: u32,
    comms: Vec<(u32, Vec<u32>)>,
    recs: Vec<u8>,
    n: u32,
}

#[allow(clippy::too_many_arguments)]
fn rec(
    op: u8,
    flags: u8,
    comm: u32,
    t0: u64,
    t1: u64,
    peer: i32,
    tag: i32,
    bytes: u64,
    bytes2: u64,
    root: i32,
    req: u32,
) -> Vec<u8> {
    let r = LibraryRecord {
        op,
        flags,
        comm,
        enter_ns: t0,
        exit_ns: t1,
        peer,
        tag,
        bytes,
        bytes2,
        root,
        req,
    };
    r.to_bytes().to_vec()
}

impl Builder {
    fn new(rank: u32, size: u32) -> Builder {
        Builder {
            rank,
            size,
            comms: vec![(0, (0..size).collect())],
            recs: Vec::new(),
            n: 0,
        }
    }
    fn add(&mut self, r: Vec<u8>) -> &mut Builder {
        self.recs.extend(r);
        self.n += 1;
        self
    }
    fn bytes(&self) -> Vec<u8> {
        // Init entered at 1000 ns, left at 5000, Finalize entered at 105000.
        let mut b = RankStream {
            rank: self.rank,
            size: self.size,
            truncated: false,
            pid: 77,
            init_enter_ns: 1000,
            init_exit_ns: 5000,
            finalize_enter_ns: 105_000,
            host: format!("node{}", self.rank),
            comms: self.comms.clone(),
            records: Vec::new(),
        }
        .to_bytes();
        b[20..24].copy_from_slice(&self.n.to_le_bytes());
        b.extend(&self.recs);
        b
    }
}

/// Two ranks: rank 0 computes 10 us, sends 100 bytes (tag 7), then
/// Irecv from any source + Wait, then Allreduce of 8 bytes and an
/// Alltoallv; rank 1 receives, sends back with Isend + Wait, same
/// collectives.
fn ping() -> MpiTrace {
    let mut a = Builder::new(0, 2);
    a.add(rec(OP_SEND, 0, 0, 15_000, 16_000, 1, 7, 100, 0, -1, 0))
        .add(rec(OP_IRECV, 0, 0, 16_000, 16_100, -1, -1, 64, 0, -1, 0))
        .add(rec(
            OP_WAIT,
            0,
            u32::MAX,
            16_100,
            30_000,
            -1,
            -1,
            1,
            1,
            -1,
            0,
        ))
        .add(rec(
            OP_DONE, FLAG_RECV, 0, 16_100, 30_000, 1, 8, 40, 0, -1, 0,
        ))
        .add(rec(OP_ALLREDUCE, 0, 0, 31_000, 32_000, -1, -1, 8, 8, -1, 0))
        .add(rec(OP_ALLTOALLV, 0, 0, 33_000, 34_000, -1, -1, 0, 0, -1, 0))
        .add(rec(OP_VEC, 0, 0, 33_000, 34_000, 0, -1, 4, 4, -1, 0))
        .add(rec(OP_VEC, 0, 0, 33_000, 34_000, 1, -1, 12, 20, -1, 0));
    let mut b = Builder::new(1, 2);
    b.add(rec(OP_RECV, 0, 0, 6_000, 20_000, 0, 7, 100, 0, -1, 0))
        .add(rec(OP_ISEND, 0, 0, 21_000, 21_500, 0, 8, 40, 0, -1, 0))
        .add(rec(
            OP_WAIT,
            0,
            u32::MAX,
            21_500,
            22_000,
            -1,
            -1,
            1,
            1,
            -1,
            0,
        ))
        .add(rec(OP_DONE, 0, 0, 21_500, 22_000, 0, 8, 40, 0, -1, 0))
        .add(rec(OP_ALLREDUCE, 0, 0, 31_000, 32_000, -1, -1, 8, 8, -1, 0))
        .add(rec(OP_ALLTOALLV, 0, 0, 33_000, 34_000, -1, -1, 0, 0, -1, 0))
        .add(rec(OP_VEC, 0, 0, 33_000, 34_000, 0, -1, 20, 12, -1, 0))
        .add(rec(OP_VEC, 0, 0, 33_000, 34_000, 1, -1, 8, 8, -1, 0));
    let streams = [b.bytes(), a.bytes()]
        .iter()
        .map(|s| RankStream::parse(s).unwrap())
        .collect();
    MpiTrace::from_streams(streams).unwrap()
}

#[test]
fn streams_become_calls_from_the_init_s_return() {
    let t = ping();
    assert_eq!(t.ranks.len(), 2);
    assert_eq!(
        t.comms,
        vec![Communicator {
            members: vec![0, 1]
        }]
    );
    let r0 = &t.ranks[0];
    assert_eq!(
        (r0.host.as_str(), r0.live_ns, r0.init_ns),
        ("node0", 100_000, 4_000)
    );
    assert_eq!(
        r0.calls.len(),
        5,
        "the DONE and VEC records join their calls"
    );
    assert_eq!(
        r0.calls[0],
        Call {
            enter_ns: 10_000,
            exit_ns: 11_000,
            op: MpiOp::Send {
                dst: 1,
                tag: 7,
                bytes: 100,
                comm: 0,
                sync: false
            }
        }
    );
    assert_eq!(
        r0.calls[1].op,
        MpiOp::Irecv {
            src: None,
            tag: None,
            bytes: 64,
            comm: 0,
            req: 0
        }
    );
    match &r0.calls[2].op {
        MpiOp::Wait {
            kind: WaitKind::Wait,
            passed: 1,
            done,
        } => {
            assert_eq!(
                done,
                &vec![Done {
                    req: 0,
                    recv: true,
                    peer: Some(1),
                    tag: Some(8),
                    bytes: 40
                }]
            )
        }
        other => panic!("{other:?}"),
    }
    match &r0.calls[4].op {
        MpiOp::Collective(call) if call.op == Collective::Alltoallv => {
            assert_eq!(call.per_peer, vec![(4, 4), (12, 20)])
        }
        other => panic!("{other:?}"),
    }
    let counts = t.call_counts();
    assert_eq!(counts["MPI_Wait"], 2);
    assert_eq!(counts["MPI_Allreduce"], 2);
}

/// A halo exchange's boundary: `MPI_Sendrecv` with `MPI_PROC_NULL` on
/// one side is its other side alone (rank 0 only sends 24 bytes to rank
/// 1, which only receives them, tag 5 each way), and with both sides
/// nothing; a peer beyond the world is still refused.
#[test]
fn a_sendrecv_with_a_null_side_is_its_other_side() {
    let mut a = Builder::new(0, 2);
    a.add(rec(OP_SENDRECV, 0, 0, 10_000, 11_000, 1, 5, 24, 0, -1, 0))
        .add(rec(OP_SENDRECV, 0, 0, 12_000, 12_500, -1, 5, 0, 0, -1, 0));
    let mut b = Builder::new(1, 2);
    b.add(rec(OP_SENDRECV, 0, 0, 10_000, 11_500, -1, 5, 0, 24, 0, 5));
    let join = |a: &Builder, b: &Builder| {
        let streams = [a.bytes(), b.bytes()]
            .iter()
            .map(|s| RankStream::parse(s).unwrap())
            .collect();
        MpiTrace::from_streams(streams)
    };
    let t = join(&a, &b).unwrap();
    let ops: Vec<Vec<MpiOp>> = (t.ranks.iter())
        .map(|r| r.calls.iter().map(|c| c.op.clone()).collect())
        .collect();
    assert_eq!(
        ops,
        vec![
            vec![MpiOp::Send {
                dst: 1,
                tag: 5,
                bytes: 24,
                comm: 0,
                sync: false
            }],
            vec![MpiOp::Recv {
                src: 0,
                tag: 5,
                bytes: 24,
                comm: 0
            }]
        ]
    );
    let mut far = Builder::new(1, 2);
    far.add(rec(OP_SENDRECV, 0, 0, 10_000, 11_500, -1, 5, 0, 24, 2, 5));
    assert!(join(&a, &far).is_err());
}

/// A rank that left `MPI_Init` 2.5 ms after the first (its
/// `start_ns`) begins with the start event, which the MPI-level reader
/// takes as time before its first record and INSEE's reading passes
/// over; the first rank has none.
#[test]
fn a_ranks_start_skew_goes_through_the_dimemas_trace() {
    let mut t = ping();
    t.ranks[1].start_ns = 2_500_000;
    let text = t.to_dimemas("skew");
    assert!(text.contains("\n20:1:0:90000005:2500000\n"), "{text}");
    assert!(!text.contains("\n20:0:0:90000005:"), "{text}");
    let p = super::read::parse(&text, "skew.dim").unwrap();
    assert_eq!(
        p.ranks[1][0],
        super::read::MpiStep::Cpu {
            ns: 2_500_000,
            kernel_ns: 0,
            frames_in: 0
        }
    );
    let q = super::read::parse(&ping().to_dimemas("skew"), "skew.dim").unwrap();
    assert_eq!(p.ranks[0], q.ranks[0]);
    assert_eq!(p.ranks[1][1..], q.ranks[1][..]);
    let insee = parse_str(&text, "skew.dim").unwrap();
    let plain = parse_str(&ping().to_dimemas("skew"), "skew.dim").unwrap();
    assert_eq!(insee.tasks, plain.tasks);
    // A start beyond a burst's bound is refused, naming it.
    let far = text.replace(":90000005:2500000", ":90000005:1000000000000000");
    let e = super::read::parse(&far, "skew.dim")
        .unwrap_err()
        .to_string();
    assert!(e.contains("start of 1000000000000000 ns"), "{e}");
}

#[test]
fn the_dimemas_text_reads_back_as_insee_reads_it() {
    let t = ping();
    let text = t.to_dimemas("ping test");
    // The offsets point where they say.
    let s_at: usize = text
        .lines()
        .next()
        .unwrap()
        .split(':')
        .nth(2)
        .unwrap()
        .split(',')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert!(text[s_at..].starts_with("s:0:"), "{}", &text[s_at..]);
    for line in text[s_at..].lines() {
        let mut f = line.split(':');
        let (task, at): (&str, usize) = (f.nth(1).unwrap(), f.next().unwrap().parse().unwrap());
        assert!(
            text[at..].split(':').nth(1) == Some(task),
            "s:{task} points at {}",
            &text[at..at + 20]
        );
    }
    assert!(text.contains("d:1:1:2:0:1\n"), "{text}");
    assert!(
        text.contains("2:0:0:1:100:7:1:1\n"),
        "a blocking send: {text}"
    );
    assert!(
        text.contains("3:0:0:1:40:8:1:1\n"),
        "the Irecv with the source it got: {text}"
    );
    assert!(text.contains("3:0:0:1:40:8:1:2\n"), "its Wait: {text}");
    assert!(text.contains("10:0:0:11:1:0:0:8:8\n"), "Allreduce: {text}");
    assert!(
        text.contains("10:0:0:9:1:0:0:16:24\n"),
        "Alltoallv totals: {text}"
    );
    assert!(
        text.contains("20:0:0:90000001:12\n"),
        "per-peer counts: {text}"
    );
    assert!(
        text.contains("20:1:0:90000003:0\n"),
        "rank 1's first Isend completed: {text}"
    );
    // Rank 0's first burst: 10 us after its MPI_Init returned.
    assert!(text.contains("1:0:0:0.000010000\n"), "{text}");
    // INSEE's reading: bursts, sends, blocking receives (Irecv dropped,
    // Wait kept), collectives and events dropped.
    let back = parse_str(&text, "ping.dim").unwrap();
    assert_eq!(
        back.tasks[0]
            .iter()
            .filter(|e| matches!(e, Event::Send { .. }))
            .count(),
        1
    );
    assert_eq!(
        back.tasks[0]
            .iter()
            .filter(|e| matches!(
                e,
                Event::Recv {
                    src: 1,
                    tag: 8,
                    bytes: 40
                }
            ))
            .count(),
        1
    );
    assert_eq!(
        back.tasks[1]
            .iter()
            .filter(|e| matches!(
                e,
                Event::Recv {
                    src: 0,
                    tag: 7,
                    bytes: 100
                }
            ))
            .count(),
        1
    );
}

#[test]
fn bad_streams_are_refused_with_the_reason() {
    let mut a = Builder::new(0, 2);
    a.add(rec(OP_SEND, 0, 0, 1, 2, 5, 7, 100, 0, -1, 0));
    let s = RankStream::parse(&a.bytes()).unwrap();
    let e = MpiTrace::from_streams(vec![s.clone()]).unwrap_err();
    assert_eq!(e, JoinError::Missing("1".into(), 2));
    let e = s.calls(&[(0, 0)]).unwrap_err();
    assert_eq!((e.record, e.op), (0, 1));
    assert!(e.to_string().contains("destination 5 is not a rank"), "{e}");
    let mut b = a.bytes();
    b.pop();
    assert!(matches!(
        RankStream::parse(&b),
        Err(RecordError::Records { .. })
    ));
    assert_eq!(RankStream::parse(&b[..10]), Err(RecordError::Short(10)));
    // The calls of rank 0's stream of the one record `r`.
    let calls_of = |r: Vec<u8>| {
        let mut one = Builder::new(0, 2);
        one.add(r);
        RankStream::parse(&one.bytes()).unwrap().calls(&[(0, 0)])
    };
    let e = calls_of(rec(OP_DONE, 0, 0, 1, 2, 1, 7, 100, 0, -1, 0)).unwrap_err();
    assert!(e.to_string().contains("no completion call"), "{e}");
    // MPI's tags are not negative: a send with one is refused, an
    // Irecv's negative tag is MPI_ANY_TAG.
    let e = calls_of(rec(OP_SEND, 0, 0, 1, 2, 1, -3, 100, 0, -1, 0)).unwrap_err();
    assert!(e.to_string().contains("tag -3 is negative"), "{e}");
    let calls = calls_of(rec(OP_IRECV, 0, 0, 1, 2, 1, -1, 100, 0, -1, 0)).unwrap();
    assert!(
        matches!(calls[0].op, MpiOp::Irecv { tag: None, .. }),
        "{calls:?}"
    );
}

/// Bytes after a stream's header: any, or one time in two whole 56-byte
/// records of any bytes, which the header's count then names, so that
/// the records' decoder is reached.
fn any_tail() -> impl proptest::strategy::Strategy<Value = (Vec<u8>, u32)> {
    use proptest::prelude::*;
    prop_oneof![
        (prop::collection::vec(any::<u8>(), 0..400), 0u32..8),
        (0usize..8).prop_flat_map(|k| {
            prop::collection::vec(any::<u8>(), k * 56..=k * 56).prop_map(move |t| (t, k as u32))
        }),
    ]
}

proptest::proptest! {
    // A failing case is kept beside this file (tests.regressions), to be
    // committed; CI runs it with 20,000 cases (its name has `fuzz_`).
    #![proptest_config(proptest::prelude::ProptestConfig {
        failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::WithSource("regressions"))),
        ..Default::default()
    })]
    /// Whatever a guest sends, the reader answers without panicking.
    #[test]
    fn fuzz_any_bytes_are_read_or_refused((tail, n) in any_tail()) {
        let mut b = Builder::new(0, 3).bytes();
        b[20..24].copy_from_slice(&n.to_le_bytes());
        b.extend(tail);
        if let Ok(s) = RankStream::parse(&b) {
            let _ = s.calls(&[(0, 0)]);
            let _ = MpiTrace::from_streams(vec![s]);
        }
    }
}

/// The header's part of the traced run's frames: written and read back
/// beside the other parts, and left out (not refused) where it is absent
/// or does not read.
#[test]
fn the_live_frames_part_reads_back() {
    let l = super::LiveFrames {
        frames: 25_927,
        acks: 6_596,
    };
    let name = format!(
        "fsin-rs MPI trace; preconnected; {}; Open MPI coll_tuned barrier=6",
        l.header()
    );
    assert_eq!(super::LiveFrames::parse(&name), Some(l));
    assert!(name.contains(super::read::PRECONNECTED));
    for bad in [
        "fsin-rs MPI trace; Open MPI coll_tuned",
        "fsin-rs MPI trace; live frames x acks 3;",
        "fsin-rs MPI trace; live frames 3 acks;",
        "fsin-rs MPI trace; live frames 3 ack 3;",
    ] {
        assert_eq!(super::LiveFrames::parse(bad), None, "{bad}");
    }
}

/// Dimemas' global operation numbers, one table for the writer and the
/// reader: each collective's number reads back as it, and a number past
/// the table is refused naming it and the range.
#[test]
fn global_operations_read_back_and_others_are_refused() {
    use super::write::{global_op, GLOBAL_OPS};
    let head =
        "#DIMEMAS:\"fsin-rs MPI trace; g\":1,00000000000000000000:2(1,1),1,0,0\nd:1:1:2:0:1\n";
    for op in Collective::ALL {
        let n = global_op(op);
        assert_eq!(GLOBAL_OPS[n as usize], op);
        let p = super::read::parse(&format!("{head}10:0:0:{n}:1:0:0:8:8\n"), "g.dim").unwrap();
        assert!(
            matches!(&p.ranks[0][..], [super::read::MpiStep::Call(super::MpiOp::Collective(c))] if c.op == op),
            "{op:?}: {:?}",
            p.ranks[0]
        );
    }
    let e = super::read::parse(&format!("{head}10:0:0:12:1:0:0:8:8\n"), "g.dim")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("global operation 12") && e.contains("0-11"),
        "{e}"
    );
}

/// The library's calls come back from the Dimemas text as the same type,
/// with what the records keep ([`read::MpiStep`]): an `MPI_Irecv` as its
/// message came, a completion as an `MPI_Wait` of its one request,
/// requests numbered as the library numbers them, the file's
/// communicator ids (the library's index + 1); `ping`'s calls by hand.
#[test]
fn the_library_s_calls_read_back_as_the_same_type() {
    let p = read::parse(&ping().to_dimemas("same"), "same.dim").unwrap();
    let calls = |r: usize| -> Vec<MpiOp> {
        p.ranks[r]
            .iter()
            .filter_map(|s| match s {
                read::MpiStep::Call(op) => Some(op.clone()),
                read::MpiStep::Cpu { .. } => None,
            })
            .collect()
    };
    let wait = MpiOp::wait_of;
    let r0 = calls(0);
    assert_eq!(
        r0[..3],
        [
            MpiOp::Send {
                dst: 1,
                tag: 7,
                bytes: 100,
                comm: 1,
                sync: false
            },
            MpiOp::Irecv {
                src: Some(1),
                tag: Some(8),
                bytes: 40,
                comm: 1,
                req: 0
            },
            wait(Done {
                req: 0,
                recv: true,
                peer: Some(1),
                tag: Some(8),
                bytes: 40
            }),
        ]
    );
    let r1 = calls(1);
    assert_eq!(
        r1[..3],
        [
            MpiOp::Recv {
                src: 0,
                tag: 7,
                bytes: 100,
                comm: 1
            },
            MpiOp::Isend {
                dst: 0,
                tag: 8,
                bytes: 40,
                comm: 1,
                sync: false,
                req: 0
            },
            wait(Done {
                req: 0,
                recv: false,
                peer: None,
                tag: None,
                bytes: 0
            }),
        ]
    );
    for r in [r0, r1] {
        assert!(
            matches!(&r[3..], [MpiOp::Collective(a), MpiOp::Collective(b)]
                if a.op == Collective::Allreduce && b.op == Collective::Alltoallv && a.comm == 1),
            "{r:?}"
        );
    }
}

/// Records that complete a request no call before them started are
/// refused, naming it: a wait for a receive never posted, the completion
/// of an `MPI_Isend` the rank did not make.
#[test]
fn completions_of_requests_never_started_are_refused() {
    let head =
        "#DIMEMAS:\"fsin-rs MPI trace; c\":1,00000000000000000000:2(1,1),1,0,0\nd:1:1:2:0:1\n";
    let e = read::parse(&format!("{head}3:0:0:1:8:5:1:2\n"), "c.dim").unwrap_err();
    assert!(
        e.to_string().starts_with("c.dim:3: ")
            && e.to_string()
                .contains("a wait (type 2) for a receive from task 1 with tag 5"),
        "{e}"
    );
    let e = read::parse(
        &format!("{head}2:0:0:1:8:5:1:2\n20:0:0:90000003:1\n"),
        "c.dim",
    )
    .unwrap_err();
    assert!(
        e.to_string().starts_with("c.dim:4: ")
            && e.to_string()
                .contains("MPI_Isend number 1 (from 0), of 1 before it"),
        "{e}"
    );
}
