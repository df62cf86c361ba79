use super::*;
use fsin_trace::mpi::read::MpiStep;
use fsin_trace::mpi::records::LibraryRecord;

/// A magic frame carrying `payload` as its UDP payload.
fn frame(payload: &[u8]) -> Vec<u8> {
    let mut f = vec![
        0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0, 0, 0, 0, 0, 1, 0x08, 0x00,
    ];
    let mut ip = vec![
        0x45, 0, 0, 0, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 1, 2, 3, 4,
    ];
    let total = (20 + 8 + payload.len()) as u16;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    f.extend(ip);
    f.extend([0x13, 0xb1, 0x13, 0xb1]);
    f.extend(((8 + payload.len()) as u16).to_be_bytes());
    f.extend([0, 0]);
    f.extend(payload);
    while f.len() < 60 {
        f.push(0);
    }
    f
}

/// The datagrams of rank `rank`'s `stream`, `piece` bytes each: of
/// version 2 with the guest's clock `clock(k)` in datagram `k` where
/// `clock` is given, else of version 1.
fn datagrams(
    rank: u32,
    stream: &[u8],
    piece: usize,
    clock: Option<&dyn Fn(u64) -> u64>,
) -> Vec<Vec<u8>> {
    let n = stream.len().div_ceil(piece);
    (0..n)
        .map(|k| {
            let part = &stream[k * piece..((k + 1) * piece).min(stream.len())];
            let version = if clock.is_some() { 2 } else { 1 };
            let mut d = vec![b'M', version, u8::from(k + 1 == n), 0];
            d.extend(rank.to_le_bytes());
            d.extend((k as u32).to_le_bytes());
            d.extend((stream.len() as u32).to_le_bytes());
            if let Some(c) = clock {
                d.extend(c(k as u64).to_le_bytes());
            }
            d.extend(part);
            frame(&d)
        })
        .collect()
}

/// A rank's stream with no records: the header and the world.
fn empty_stream(rank: u32, size: u32) -> Vec<u8> {
    let mut b = b"FSINMPI1".to_vec();
    for v in [rank, size, 1, 0, 0, 9] {
        b.extend(v.to_le_bytes());
    }
    for v in [0u64, 1000, 5000] {
        b.extend(v.to_le_bytes());
    }
    b.extend([0u8; 16]);
    b.extend(0u32.to_le_bytes());
    b.extend(size.to_le_bytes());
    for r in 0..size {
        b.extend(r.to_le_bytes());
    }
    b
}

/// `c` given two ranks' streams (without records) and finished into
/// a trace file of its own (`name`): what it gave and the file's
/// text. With `clocked`, their datagrams place their clocks on the
/// network's: one sent at node time 10,000 ns stamped 100 on rank 0's
/// guest, at 12,000 stamped 100 on rank 1's; without, they come from
/// a version-1 library, which does not say.
fn finished(name: &str, mut c: Collector, clocked: bool) -> (Collected, String) {
    let stamp = |_| 100;
    let clock: Option<&dyn Fn(u64) -> u64> = clocked.then_some(&stamp);
    for (r, sent) in [(0u32, 10_000u64), (1, 12_000)] {
        for d in datagrams(r, &empty_stream(r, 2), 30, clock) {
            c.datagram(r as usize, sent, &d);
        }
    }
    finish_as(name, c)
}

/// `c` finished into a trace file of its own (`name`): what it gave and
/// the file's text.
fn finish_as(name: &str, c: Collector) -> (Collected, String) {
    let dir = std::env::temp_dir().join(format!("fsin-mpi-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = MpiTraceOut {
        path: dir.join("t.dim"),
        replay: "fsin run".into(),
        preconnected: false,
    };
    let got = c.finish(&out).unwrap();
    let text = std::fs::read_to_string(&out.path).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (got, text)
}

/// Two ranks whose datagrams place their clocks on the network's
/// ([`finished`]): each guest's clock is 9,900 and 11,900 ns behind;
/// both left MPI_Init at 1,000 on their own clocks, so rank 1 left it
/// 2,000 ns after rank 0, and the trace starts it so.
#[test]
fn the_ranks_start_skew_comes_from_their_clocks() {
    let (got, text) = finished("skew", Collector::default(), true);
    let s = &got.outcome.start_s;
    assert!(
        s.len() == 2 && s[0] == 0.0 && (s[1] - 2e-6).abs() < 1e-15,
        "{s:?}"
    );
    assert_eq!(got.trace.ranks[1].start_ns, 2_000);
    assert!(text.contains("\n20:1:0:90000005:2000\n"), "{text}");
}

/// A TCP pure acknowledgement over IPv4 (no payload, ACK only).
fn tcp_ack() -> Vec<u8> {
    let mut f = vec![0u8; 54];
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[16..18].copy_from_slice(&40u16.to_be_bytes());
    f[23] = 6;
    f[46] = 5 << 4;
    f[47] = 0x10;
    f
}

/// The frames the guests sent while the ranks ran: the clocks of
/// [`finished`] put rank 0's `MPI_Init` exit (1,000 on its clock) at
/// node time 10,900 and rank 1's `MPI_Finalize` entry (5,000) at
/// 16,900; of frames at 10,899, 10,900, 16,900 (an acknowledgement)
/// and 16,901 the middle two count. The header carries them, and the
/// reader gives them back.
#[test]
fn the_frames_of_the_ranks_run_are_counted() {
    let mut c = Collector::default();
    let data = frame(&[0u8; 8]);
    c.sent(0, 10_899, &tcp_ack());
    c.sent(0, 10_900, &data);
    c.sent(0, 16_900, &tcp_ack());
    c.sent(0, 16_901, &data);
    let (got, text) = finished("live", c, true);
    assert_eq!((got.outcome.frames, got.outcome.acks), (Some(2), Some(1)));
    let p = fsin_trace::mpi::read::parse(&text, "t.dim").unwrap();
    assert_eq!(p.live, Some(LiveFrames { frames: 2, acks: 1 }));
    assert!(!p.preconnected);
    // Without the ranks' clocks nothing is said.
    let mut c = Collector::default();
    c.sent(0, 10_900, &data);
    let (got, _) = finished("live-unclocked", c, false);
    assert_eq!(got.outcome.frames, None);
}

#[test]
fn streams_come_together_from_their_datagrams_and_gaps_are_named() {
    let dir = std::env::temp_dir().join(format!("fsin-mpi-in-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = MpiTraceOut {
        path: dir.join("t.dim"),
        replay: "fsin run".into(),
        preconnected: true,
    };
    let mut c = Collector::default();
    for r in 0..2 {
        for d in datagrams(r, &empty_stream(r, 2), 30, None) {
            c.datagram(r as usize, 0, &d);
        }
    }
    let got = c.finish(&out).unwrap();
    assert_eq!(
        got.clocks[1].map(|c| (c.guest, c.offset_ns)),
        Some((1, None))
    );
    let t = got.outcome;
    // MPI_Init left at 1,000 ns, MPI_Finalize entered at 5,000.
    assert_eq!(t.ranks, 2);
    assert!(
        t.rank_s.iter().all(|s| (s - 4e-6).abs() < 1e-15),
        "{:?}",
        t.rank_s
    );
    // A preconnected run's header says so, and the reader sees it.
    let text = std::fs::read_to_string(&out.path).unwrap();
    assert!(
        text.starts_with("#DIMEMAS:\"fsin-rs MPI trace; preconnected; Open MPI"),
        "{text}"
    );
    assert!(
        fsin_trace::mpi::read::parse(&text, "t.dim")
            .unwrap()
            .preconnected
    );
    // Rank 1's second datagram lost: named, no trace.
    let mut c = Collector::default();
    for r in 0..2 {
        for (k, d) in datagrams(r, &empty_stream(r, 2), 30, None)
            .iter()
            .enumerate()
        {
            if (r, k) != (1, 1) {
                c.datagram(r as usize, 0, d);
            }
        }
    }
    let Err(e) = c.finish(&out) else {
        panic!("a stream with a gap is refused")
    };
    assert!(e.contains("guest 1 rank 1: datagram 2"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The bounds docs/contracts.md gives: a stream may claim 128 MiB, not a
/// byte more; the streams of a run hold at most 1 GiB together (the
/// collector's count set just below it: a 30-byte piece passes it); each
/// refusal names the bound. A rank whose library ran out of room for
/// records (its header's flag bit 0) is named in `truncated`.
#[test]
fn a_streams_and_a_runs_bounds_are_named_and_a_full_rank_is_marked() {
    let claiming = |len: u32| {
        let mut d = datagrams(0, &empty_stream(0, 2), 30, None).remove(0);
        // The stream's length, at 12 of the UDP payload.
        let at = MAGIC_PAYLOAD + 12;
        d[at..at + 4].copy_from_slice(&len.to_le_bytes());
        d
    };
    let mut c = Collector::default();
    c.datagram(0, 0, &claiming(128 << 20));
    assert!(c.problems.is_empty(), "{:?}", c.problems);
    let mut c = Collector::default();
    c.datagram(0, 0, &claiming((128 << 20) + 1));
    assert!(
        c.problems[0].contains("claiming 134217729") && c.problems[0].contains("at most 134217728"),
        "{:?}",
        c.problems
    );
    let mut c = Collector {
        total: (1 << 30) - 30,
        ..Collector::default()
    };
    let stream = empty_stream(0, 2);
    let pieces = datagrams(0, &stream, 30, None);
    c.datagram(0, 0, &pieces[0]);
    assert!(c.problems.is_empty(), "{:?}", c.problems);
    c.datagram(0, 0, &pieces[1]);
    assert_eq!(
        c.problems,
        ["guest 0: MPI trace records beyond 1073741824 bytes in all"]
    );
    // Rank 1's library ran out of room: the flags after the record count.
    let mut c = Collector::default();
    for r in 0..2u32 {
        let mut stream = empty_stream(r, 2);
        stream[24..28].copy_from_slice(&u32::from(r == 1).to_le_bytes());
        for d in datagrams(r, &stream, 30, None) {
            c.datagram(r as usize, 0, &d);
        }
    }
    let (got, _) = finish_as("full", c);
    assert_eq!(got.outcome.truncated, [1]);
}

/// A rank whose whole stream came and which then begins another (a
/// second `mpirun` in the same `--run`) is named as a second MPI program,
/// once, not as a datagram out of order; a stream that breaks off and
/// starts again is still named as out of order.
#[test]
fn a_second_mpi_program_is_named() {
    let stream = empty_stream(0, 2);
    let mut c = Collector::default();
    for _ in 0..2 {
        for d in datagrams(0, &stream, 30, None) {
            c.datagram(0, 0, &d);
        }
    }
    assert_eq!(c.problems.len(), 1, "{:?}", c.problems);
    assert!(
        c.problems[0].starts_with("guest 0 rank 0: a second MPI program began")
            && c.problems[0].contains("one mpirun"),
        "{:?}",
        c.problems
    );
    let mut c = Collector::default();
    let pieces = datagrams(0, &stream, 30, None);
    c.datagram(0, 0, &pieces[0]);
    c.datagram(0, 0, &pieces[0]);
    assert!(
        c.problems[0].contains("datagram 0 of a stream"),
        "{:?}",
        c.problems
    );
}

/// Version 2's clocks: the guest's clock as each datagram left, and
/// the node time its NIC sent it at, give the least difference (the
/// datagram that took the least time to the NIC) and the clock as
/// `MPI_Finalize` returned (the first datagram's).
#[test]
fn datagram_clocks_place_a_ranks_clock_on_the_node_clock() {
    let dir = std::env::temp_dir().join(format!("fsin-mpi-clock-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = MpiTraceOut {
        path: dir.join("t.dim"),
        replay: String::new(),
        preconnected: false,
    };
    let mut c = Collector::default();
    // Rank 1 on guest 3: its clock 7e9 + 1000 k in datagram k, sent at
    // node time 2e9 + 1000 k + 400, but + 150 for datagram 2.
    let clock = |k: u64| 7_000_000_000 + 1000 * k;
    let ds = datagrams(1, &empty_stream(1, 2), 20, Some(&clock));
    assert!(ds.len() >= 3);
    for (k, d) in ds.iter().enumerate() {
        let lag = if k == 2 { 150 } else { 400 };
        c.datagram(3, 2_000_000_000 + 1000 * k as u64 + lag, d);
    }
    for d in datagrams(0, &empty_stream(0, 2), 20, None) {
        c.datagram(0, 0, &d);
    }
    let got = c.finish(&out).unwrap();
    assert_eq!(
        got.clocks[1],
        Some(RankClock {
            guest: 3,
            offset_ns: Some(2_000_000_150 - 7_000_000_000),
            shipped_ns: Some(7_000_000_000),
        })
    );
    assert_eq!(got.clocks[0].and_then(|c| c.offset_ns), None);
    let _ = std::fs::remove_dir_all(&dir);
}

/// What is done to guest 0's datagrams before nic-bridge takes them.
#[derive(Debug, Clone)]
enum Damage {
    None,
    /// One lost.
    Drop(usize),
    /// Two arrive in each other's place.
    Swap(usize, usize),
    /// One arrives twice.
    Twice(usize),
    /// A byte of one set to a value.
    Byte(usize, usize, u8),
    /// One cut short.
    Cut(usize, usize),
}

fn damage() -> impl proptest::strategy::Strategy<Value = Damage> {
    use proptest::prelude::*;
    prop_oneof![
        3 => Just(Damage::None),
        1 => any::<usize>().prop_map(Damage::Drop),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Damage::Swap(a, b)),
        1 => any::<usize>().prop_map(Damage::Twice),
        2 => (any::<usize>(), any::<usize>(), any::<u8>()).prop_map(|(k, at, v)| Damage::Byte(k, at, v)),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(k, at)| Damage::Cut(k, at)),
    ]
}

/// Every rank's datagrams of a world of `size` ranks (rank r on guest
/// r), `piece` bytes of stream each, of version 2 with a clock when
/// `clocked`; guest 0's damaged by `d`. Then what nic-bridge makes of
/// them: `Ok(ranks)` of the trace, or its refusal.
fn take(
    size: u32,
    piece: usize,
    clocked: bool,
    d: &Damage,
    out: &MpiTraceOut,
) -> Result<usize, String> {
    let clock = |k: u64| 1_000 + 10 * k;
    let mut c = Collector::default();
    for r in 0..size {
        let mut ds = datagrams(
            r,
            &empty_stream(r, size),
            piece,
            clocked.then_some(&clock as &dyn Fn(u64) -> u64),
        );
        let n = ds.len();
        if r == 0 {
            match *d {
                Damage::None => {}
                Damage::Drop(k) => {
                    ds.remove(k % n);
                }
                Damage::Swap(a, b) => ds.swap(a % n, b % n),
                Damage::Twice(k) => {
                    let again = ds[k % n].clone();
                    ds.insert(k % n, again);
                }
                Damage::Byte(k, at, v) => {
                    let f = &mut ds[k % n];
                    let at = at % f.len();
                    f[at] = v;
                }
                Damage::Cut(k, at) => {
                    let f = &mut ds[k % n];
                    f.truncate(at % (f.len() + 1));
                }
            }
        }
        for (k, f) in ds.iter().enumerate() {
            c.datagram(r as usize, 100 * k as u64, f);
        }
    }
    c.finish(out).map(|got| got.outcome.ranks as usize)
}

fn fuzz_out() -> MpiTraceOut {
    let dir = std::env::temp_dir().join(format!("fsin-mpi-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    MpiTraceOut {
        path: dir.join("t.dim"),
        replay: String::new(),
        preconnected: false,
    }
}

proptest::proptest! {
    // Kept beside this file (mpi_in.regressions) when one fails; CI
    // runs it with 20,000 cases (its name has `fuzz`).
    #![proptest_config(proptest::prelude::ProptestConfig {
        failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::WithSource("regressions"))),
        ..Default::default()
    })]
    /// The datagrams of real streams, of either version and any piece
    /// size, lost, swapped, repeated, corrupted or cut: nic-bridge
    /// never panics, and takes every undamaged world whole.
    #[test]
    fn fuzz_shaped_datagrams(size in 1u32..4, piece in 8usize..120, clocked in proptest::prelude::any::<bool>(), d in damage()) {
        let got = take(size, piece, clocked, &d, &fuzz_out());
        if matches!(d, Damage::None) {
            proptest::prop_assert_eq!(got, Ok(size as usize));
        }
    }
}

/// The shaped datagrams reach the streams' decoding: in at least half
/// of 400 cases nic-bridge makes a trace of them.
#[test]
fn fuzz_shaped_datagrams_mostly_make_a_trace() {
    use proptest::strategy::{Strategy, ValueTree};
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let out = fuzz_out();
    let strategy = (
        1u32..4,
        8usize..120,
        proptest::prelude::any::<bool>(),
        damage(),
    );
    let made = (0..400)
        .filter(|_| {
            let (size, piece, clocked, d) = strategy.new_tree(&mut runner).unwrap().current();
            take(size, piece, clocked, &d, &out).is_ok()
        })
        .count();
    assert!(made >= 200, "{made} of 400 made a trace");
}

/// A datagram's payload: any bytes, or one time in two a header of
/// either version for rank 0 to 2, sequence 0 and its last flag, then any
/// bytes, so that the stream's decoding is reached.
fn any_payload() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::prelude::*;
    let any_bytes = || prop::collection::vec(any::<u8>(), 0..80);
    prop_oneof![
        any_bytes(),
        (1u8..=2, any::<bool>(), 0u32..3, 0u32..200, any_bytes()).prop_map(
            |(version, last, rank, len, rest)| {
                let mut p = vec![b'M', version, u8::from(last), 0];
                p.extend(rank.to_le_bytes());
                p.extend(0u32.to_le_bytes());
                p.extend(len.to_le_bytes());
                if version == 2 {
                    p.extend(1_000u64.to_le_bytes());
                }
                p.extend(rest);
                p
            }
        ),
    ]
}

proptest::proptest! {
    // Kept beside this file when one fails; CI runs it with 20,000 cases
    // (its name has `fuzz_`).
    #![proptest_config(proptest::prelude::ProptestConfig {
        failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::WithSource("regressions"))),
        ..Default::default()
    })]
    /// Whatever frames a guest sends as 'M' datagrams, nic-bridge
    /// answers without panicking.
    #[test]
    fn fuzz_any_datagrams_are_taken_or_refused(
        payloads in proptest::collection::vec(any_payload(), 0..6),
        cut in 0usize..70,
    ) {
        let mut c = Collector::default();
        for p in &payloads {
            let mut f = frame(p);
            f.truncate(f.len().saturating_sub(cut % 8));
            c.datagram(0, 5, &f);
            c.datagram(1, u64::MAX, &f[..cut.min(f.len())]);
        }
        let out = MpiTraceOut { path: std::env::temp_dir().join("fsin-never-written/t.dim"), replay: String::new(), preconnected: false };
        let _ = c.finish(&out);
    }
}

/// Gives `c` the streams of [`finished`]'s clocks (9,900 ns behind the
/// network's for rank 0) where rank 0 leaves `MPI_Init` at 1,000 on its
/// clock and makes two barriers, [2,000, 2,500] and [4,000, 4,200]: its
/// bursts are [10,900, 11,900) and [12,400, 13,900) of node time, the
/// first barrier [11,900, 12,400].
fn two_barriers(c: &mut Collector) {
    let stamp = |_| 100;
    let clock: Option<&dyn Fn(u64) -> u64> = Some(&stamp);
    let barrier = |enter_ns, exit_ns| LibraryRecord {
        op: 32,
        flags: 0,
        comm: 0,
        enter_ns,
        exit_ns,
        peer: -1,
        tag: -1,
        bytes: 0,
        bytes2: 0,
        root: -1,
        req: 0,
    };
    let rank0 = RankStream {
        rank: 0,
        size: 2,
        truncated: false,
        pid: 9,
        init_enter_ns: 0,
        init_exit_ns: 1_000,
        finalize_enter_ns: 5_000,
        host: String::new(),
        comms: vec![(0, vec![0, 1])],
        records: vec![barrier(2_000, 2_500), barrier(4_000, 4_200)],
    };
    for (r, sent) in [(0u32, 10_000u64), (1, 12_000)] {
        let stream = match r {
            0 => rank0.to_bytes(),
            _ => empty_stream(r, 2),
        };
        for d in datagrams(r, &stream, 30, clock) {
            c.datagram(r as usize, sent, &d);
        }
    }
}

/// Rank 0's CPU bursts as the MPI-level reader takes them from `text`.
fn read_bursts(text: &str) -> Vec<fsin_trace::mpi::read::MpiStep> {
    let read = fsin_trace::mpi::read::parse(text, "t.dim").unwrap();
    read.ranks[0]
        .iter()
        .filter(|e| matches!(e, fsin_trace::mpi::read::MpiStep::Cpu { .. }))
        .cloned()
        .collect()
}

/// The kernel's time in each CPU burst, from the slices in which it ran:
/// rank 0's bursts of [`two_barriers`], [10,900, 11,900) and [12,400,
/// 13,900) of node time. Its guest's kernel ran 500 ns in the
/// slice [10,000, 11,000) (a tenth of it in the first burst), 1,000 in
/// [11,000, 12,000) (nine tenths), 200 in [12,000, 13,000) (six tenths
/// in the second) and 300 in [14,000, 15,000) (after it): 950 and 120
/// ns; guest 1's kernel is not rank 0's. The trace writes each before
/// its burst, and the MPI-level reader keeps it with the burst.
#[test]
fn the_kernels_time_in_each_burst_comes_from_its_slices() {
    let mut c = Collector::default();
    for (slice, ns) in [
        ((10_000, 11_000), 500),
        ((11_000, 12_000), 1_000),
        ((12_000, 13_000), 200),
        ((13_000, 14_000), 0),
        ((14_000, 15_000), 300),
    ] {
        c.kernel(0, slice, ns);
        c.kernel(1, slice, 7);
    }
    two_barriers(&mut c);
    let (got, text) = finish_as("kernel", c);
    assert_eq!(got.trace.ranks[0].burst_kernel_ns, [950, 120]);
    assert!(
        text.contains("\n20:0:0:90000006:950\n1:0:0:0.000001000\n")
            && text.contains("\n20:0:0:90000006:120\n1:0:0:0.000001500\n"),
        "{text}"
    );
    let cpu = |ns, kernel_ns| MpiStep::Cpu {
        ns,
        kernel_ns,
        frames_in: 0,
    };
    assert_eq!(read_bursts(&text), [cpu(1_000, 950), cpu(1_500, 120)]);
}

/// The frames of rank 0's node around each of its CPU bursts
/// ([`two_barriers`]: [10,900, 11,900) and [12,400, 13,900) of node
/// time, the first barrier between): of the frames handed to guest 0 at
/// 10,899 (before), 10,900 (100 bytes), 11,899 (1,514 bytes), 11,900 (as
/// it enters the barrier) and 13,000 (60 bytes), two come in the first
/// burst (1,614 bytes) and one in the second (60); of those it sent at
/// 12,000 (in the barrier), 12,400 (as it leaves it) and 14,000 (after
/// the second burst), one goes in the second burst and one in the call
/// before it. Guest 1's frames are not rank 0's. The trace writes the
/// counts that are not 0 before their burst, and the MPI-level reader
/// keeps the frames received with their burst.
#[test]
fn the_frames_around_each_burst_are_counted() {
    let mut c = Collector::default();
    for (ns, bytes) in [
        (10_899, 70),
        (10_900, 100),
        (11_899, 1_514),
        (11_900, 80),
        (13_000, 60),
    ] {
        c.received(0, ns, bytes);
        c.received(1, ns, 9);
    }
    for ns in [12_000, 12_400, 14_000] {
        c.sent(0, ns, &tcp_ack());
        c.sent(1, 11_000, &tcp_ack());
    }
    two_barriers(&mut c);
    let (got, text) = finish_as("frames", c);
    let frames = |received, received_bytes, sent, sent_in_call| BurstFrames {
        received,
        received_bytes,
        sent,
        sent_in_call,
    };
    assert_eq!(
        got.trace.ranks[0].burst_frames,
        [frames(2, 1_614, 0, 0), frames(1, 60, 1, 1)]
    );
    assert!(
        text.contains("\n20:0:0:90000007:2\n20:0:0:90000008:1614\n1:0:0:0.000001000\n")
            && text.contains(
                "\n20:0:0:90000007:1\n20:0:0:90000008:60\n20:0:0:90000009:1\n20:0:0:90000010:1\n1:0:0:0.000001500\n"
            ),
        "{text}"
    );
    let cpu = |ns, frames_in| MpiStep::Cpu {
        ns,
        kernel_ns: 0,
        frames_in,
    };
    assert_eq!(read_bursts(&text), [cpu(1_000, 2), cpu(1_500, 1)]);
}
