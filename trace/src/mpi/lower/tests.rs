use super::*;
use crate::mpi::costs::CostTable;
use crate::mpi::read::parse;
use crate::mpi::Collective;

const HEAD: &str =
    "#DIMEMAS:\"fsin-rs MPI trace; test\":1,00000000000000000000:2(1,1),1,0,0\nd:1:1:2:0:1\n";

/// The default model without software costs and without TCP's
/// acknowledgements.
fn free() -> MpiModel {
    MpiModel {
        message_ns: 0,
        byte_ps: 0,
        tcp_acks: false,
        ..MpiModel::default()
    }
}

fn lowered(body: &str, m: &MpiModel) -> Trace {
    parse(&format!("{HEAD}{body}"), "t.dim")
        .unwrap()
        .lower(m)
        .unwrap()
}

/// A connection model (`connect_ns`) marks the lowered trace with its
/// ARP requests' 60 bytes, as with its set-up (400 ns: 50 node
/// cycles of 8 ns); none without `arp`, without a connection model, or
/// for a run whose connections opened in `MPI_Init`.
#[test]
fn a_connection_model_broadcasts_arp_requests_of_60_bytes() {
    let body = "2:0:0:1:8:5:1:1\n3:1:0:0:8:5:1:0\n";
    let with = |arp, connect_ns| MpiModel {
        arp,
        connect_ns,
        ..free()
    };
    let t = lowered(body, &with(true, 400));
    assert_eq!((t.contact, t.arp), (50, ARP_REQUEST_BYTES));
    assert_eq!(ARP_REQUEST_BYTES, 60);
    assert_eq!(lowered(body, &with(false, 400)).arp, 0);
    assert_eq!(lowered(body, &with(true, 0)).arp, 0);
    let pre = HEAD.replace("; test", "; preconnected; test");
    let t = parse(&format!("{pre}{body}"), "p.dim")
        .unwrap()
        .lower(&with(true, 400))
        .unwrap();
    assert_eq!((t.contact, t.arp), (0, 0));
}

/// The poll of a rank's connections is the replay's to pay (on a wake,
/// per connection it holds then, [`crate::Trace::poll`]): the lowering
/// gives it `poll_ns` in node cycles (800 ns: 100 of 8 ns) and whether
/// every pair was connected from the start, and charges no receive for
/// it.
#[test]
fn the_poll_of_a_ranks_connections_is_left_to_the_replay() {
    let head = |flags: &str| {
        format!("#DIMEMAS:\"fsin-rs MPI trace; {flags}test\":1,00000000000000000000:3(1,1,1),1,0,0\nd:1:1:3:0:1:2\n")
    };
    let body = "2:0:0:1:8:5:1:1\n2:2:0:1:8:5:1:1\n3:1:0:0:8:5:1:0\n3:1:0:2:8:5:1:0\n";
    let m = MpiModel {
        poll_ns: 800,
        ..free()
    };
    let lowered = |flags: &str| {
        parse(&format!("{}{body}", head(flags)), "p.dim")
            .unwrap()
            .lower(&m)
            .unwrap()
    };
    let frame = |src| Event::Recv {
        src,
        tag: 0,
        bytes: 8 + 22 + 66,
    };
    let t = lowered("");
    assert_eq!((t.poll, t.connected), (100, false));
    assert_eq!(t.tasks[1], vec![frame(0), frame(2)]);
    let t = lowered("preconnected; ");
    assert_eq!((t.poll, t.connected), (100, true));
    assert_eq!(t.tasks[1], vec![frame(0), frame(2)]);
}

/// An eager message of 100 bytes: one frame of 100 + 22 + 66 bytes;
/// the sender's cost before it, the receiver's after it; 8 us of
/// computation is 1,000 node cycles of 8 ns.
#[test]
fn an_eager_message_is_one_frame_with_its_costs() {
    let m = MpiModel {
        message_ns: 800,
        byte_ps: 8000,
        ..MpiModel::default()
    };
    let t = lowered(
        "1:0:0:0.000008\n2:0:0:1:100:5:1:1\n3:1:0:0:100:5:1:0\n1:1:0:0.000008\n",
        &m,
    );
    assert!(t.frames);
    // 8 us, then the send's cost: 800 ns for the message, 8 ns for
    // each of the segment's 122 bytes (100 and the MPI header): 9,776
    // ns, 1,222 cycles; the call starts 1,000 cycles into them.
    assert_eq!(
        t.tasks[0],
        vec![
            Event::Cpu { amount: 1222 },
            Event::Send {
                dst: 1,
                tag: 0,
                bytes: 188
            }
        ]
    );
    // The receive, then its segment's and message's cost and 8 us; the
    // call ends 222 cycles into them.
    assert_eq!(
        t.tasks[1],
        vec![
            Event::Recv {
                src: 0,
                tag: 0,
                bytes: 188
            },
            Event::Cpu { amount: 1222 }
        ]
    );
    let call = |start, skip, end, tail, kind| LoweredCall {
        start,
        skip,
        end,
        tail,
        kind,
    };
    assert_eq!(t.calls[0], [call(0, 1000, 2, 0, CallKind::Send)]);
    assert_eq!(t.calls[1], [call(0, 0, 1, 222, CallKind::Recv)]);
}

/// Each MPI call of a trace becomes a [`LoweredCall`] over the events
/// it lowered to, kind by kind: an `MPI_Isend` (its cost, 100 cycles,
/// and its frame), two `MPI_Irecv`s (no event: none), after 1 us (125
/// cycles) their completion call (the two records in a row, one call:
/// each frame in and its cost, the last cost the next event's 100
/// cycles) and a barrier (recursive doubling on 2 ranks: a send's cost
/// and frame, a receive, its cost the last event's 100 cycles).
#[test]
fn each_call_spans_the_events_it_lowered_to() {
    let m = MpiModel {
        message_ns: 800,
        ..free()
    };
    let t = lowered(
        concat!(
            "2:0:0:1:8:5:1:2\n3:0:0:1:8:6:1:1\n3:0:0:1:8:7:1:1\n1:0:0:0.000001\n",
            "3:0:0:1:8:6:1:2\n3:0:0:1:8:7:1:2\n10:0:0:0:1:0:0:0:0\n",
            "3:1:0:0:8:5:1:0\n2:1:0:0:8:6:1:1\n2:1:0:0:8:7:1:1\n10:1:0:0:1:0:0:0:0\n",
        ),
        &m,
    );
    let spans: Vec<_> = t.calls[0]
        .iter()
        .map(|c| (c.start, c.skip, c.end, c.tail, c.kind))
        .collect();
    assert_eq!(
        spans,
        [
            (0, 0, 2, 0, CallKind::Isend),
            (3, 0, 6, 100, CallKind::Wait),
            (7, 0, 10, 100, CallKind::Collective(Collective::Barrier))
        ]
    );
    assert_eq!(t.tasks[0].len(), 11);
    assert_eq!(t.tasks[0][2], Event::Cpu { amount: 125 });
}

/// A completion call's receives are one group taken as they arrive
/// ([`RecvGroup`]), one run per message with its costs: rank 0 posts
/// receives of 2,000 bytes (2 segments, 1,448 + 574 payload bytes)
/// from rank 1 and of 8 bytes from rank 2 and completes both in one
/// call, then receives 8 more bytes from rank 1 by a blocking receive
/// (no group). At 8 ns a byte and 800 ns a message, the first message's
/// run is its first segment, that segment's cost (1,448 cycles), its
/// second and the rest (574 + 100 cycles), 4 events; the second's, its
/// frame and cost. A completion of one message makes no group, nor do
/// messages to oneself count as runs.
#[test]
fn a_completion_calls_receives_are_taken_as_they_arrive() {
    let head = "#DIMEMAS:\"fsin-rs MPI trace; test\":1,00000000000000000000:3(1,1,1),1,0,0\nd:1:1:3:0:1:2\n";
    let m = MpiModel {
        message_ns: 800,
        byte_ps: 8000,
        tcp_acks: false,
        ..MpiModel::default()
    };
    let lower = |body: &str| {
        parse(&format!("{head}{body}"), "g.dim")
            .unwrap()
            .lower(&m)
            .unwrap()
    };
    let posts = "3:0:0:1:2000:5:1:1\n3:0:0:2:8:5:1:1\n";
    let t = lower(&format!(
        "{posts}3:0:0:1:2000:5:1:2\n3:0:0:2:8:5:1:2\n3:0:0:1:8:6:1:0\n"
    ));
    let cpu = |amount| Event::Cpu { amount };
    let recv = |src, tag, bytes| Event::Recv { src, tag, bytes };
    assert_eq!(
        t.tasks[0],
        vec![
            recv(1, 0, 1448 + 66),
            cpu(1448),
            recv(1, 0, 574 + 66),
            cpu(574 + 100),
            recv(2, 0, 30 + 66),
            cpu(30 + 100),
            recv(1, 1, 30 + 66),
            cpu(30 + 100),
        ]
    );
    assert_eq!(
        t.recv_groups,
        vec![vec![RecvGroup {
            runs: vec![0, 4],
            end: 6
        }]]
    );
    // One message per completion call, with a burst between: no group.
    let t = lower(&format!(
        "{posts}3:0:0:1:2000:5:1:2\n1:0:0:0.000008\n3:0:0:2:8:5:1:2\n"
    ));
    assert!(
        t.recv_groups.iter().all(Vec::is_empty),
        "{:?}",
        t.recv_groups
    );
    // A message to oneself between the two is no run of its own.
    let own = "3:0:0:1:2000:5:1:1\n3:0:0:0:8:5:1:1\n3:0:0:2:8:5:1:1\n2:0:0:0:8:5:1:2\n";
    let t = lower(&format!(
        "{own}3:0:0:1:2000:5:1:2\n3:0:0:0:8:5:1:2\n3:0:0:2:8:5:1:2\n"
    ));
    let g = &t.recv_groups[0];
    assert_eq!(g.len(), 1);
    assert_eq!(g[0].runs.len(), 2);
    assert!(g[0]
        .runs
        .iter()
        .all(|&r| matches!(t.tasks[0][r as usize], Event::Recv { .. })));
}

/// A cost table: the cost at 0 bytes once, the rest spread over the
/// segments by payload. 3,000 bytes cost the sender 2,311 ns, 800 at
/// 0 bytes: 1,511 ns over 3,022 payload bytes is 0.5 ns a byte, so the
/// segments of 1,448, 1,448 and 126 bytes cost 724, 724 and 63 ns,
/// the first after the 800; in 8-ns cycles 190 (4 ns left), 91 and 7
/// (7 left, rounded up at the end). The receiver's costs are 0.
#[test]
fn a_cost_table_pays_once_and_then_by_the_segments_payload() {
    let m = MpiModel {
        costs: CostTable::parse("0:800:0,3000:2311:0").unwrap(),
        ..MpiModel::default()
    };
    let t = lowered("2:0:0:1:3000:5:1:1\n3:1:0:0:3000:5:1:0\n", &m);
    let cpu: Vec<u64> = t.tasks[0]
        .iter()
        .filter_map(|e| match e {
            Event::Cpu { amount } => Some(*amount),
            _ => None,
        })
        .collect();
    assert_eq!(cpu, vec![190, 91, 7, 1]);
    assert!(t.tasks[1].iter().all(|e| !matches!(e, Event::Cpu { .. })));
    // The table replaces message_ns and byte_ps: the same model
    // without it pays them.
    let line = MpiModel {
        message_ns: 800,
        byte_ps: 500,
        ..MpiModel::default()
    };
    let t = lowered("2:0:0:1:3000:5:1:1\n3:1:0:0:3000:5:1:0\n", &line);
    assert!(
        matches!(t.tasks[0][0], Event::Cpu { amount: 190 }),
        "{:?}",
        t.tasks[0]
    );
}

/// 3,000 bytes + 22 are 1,448 + 1,448 + 126 bytes of segments; a
/// rendezvous message beyond the eager limit sends the eager part,
/// waits for the receiver's acknowledgement, then sends the rest.
#[test]
fn messages_are_cut_into_segments_and_large_ones_go_by_rendezvous() {
    let m = MpiModel {
        eager_limit: 2000,
        ..free()
    };
    let t = lowered("2:0:0:1:3000:5:1:1\n3:1:0:0:3000:5:1:0\n", &m);
    let sends: Vec<u64> = t.tasks[0]
        .iter()
        .filter_map(|e| match e {
            Event::Send { bytes, .. } => Some(*bytes),
            _ => None,
        })
        .collect();
    // Eager part: 2022 = 1448 + 574; rest: 1000 + 22 = 1022.
    assert_eq!(sends, vec![1448 + 66, 574 + 66, 1022 + 66]);
    assert!(
        matches!(
            t.tasks[0][2],
            Event::Recv {
                src: 1,
                bytes: 88,
                ..
            }
        ),
        "{:?}",
        t.tasks[0]
    );
    assert!(
        matches!(
            t.tasks[1][2],
            Event::Send {
                dst: 0,
                bytes: 88,
                ..
            }
        ),
        "{:?}",
        t.tasks[1]
    );
    let t = lowered("2:0:0:1:3000:5:1:1\n3:1:0:0:3000:5:1:0\n", &free());
    let sizes: Vec<u64> = t.tasks[0]
        .iter()
        .map(|e| match e {
            Event::Send { bytes, .. } => *bytes,
            _ => 0,
        })
        .collect();
    assert_eq!(sizes, vec![1448 + 66, 1448 + 66, 126 + 66]);
}

/// A message a rank sends itself is a copy: no frame, and nothing to
/// wait for (a replay could not inject it).
#[test]
fn messages_to_oneself_are_no_frames() {
    let t = lowered(
        "2:0:0:0:8:1:1:1\n3:0:0:0:8:1:1:0\n2:0:0:0:90000:2:1:1\n3:0:0:0:90000:2:1:0\n",
        &free(),
    );
    assert!(
        t.tasks
            .iter()
            .flatten()
            .all(|e| matches!(e, Event::Cpu { .. })),
        "{:?}",
        t.tasks
    );
}

/// A linear Alltoall (pinned in the header) of 100,000-byte blocks on 2
/// ranks: both start their rendezvous sends before waiting, so each
/// rank sends its eager part, receives the other's, acknowledges it,
/// waits for its own acknowledgement, sends its rest and receives the
/// other's. Blocking sends in that order would deadlock nowhere
/// either, but would receive nothing before the own send's end.
#[test]
fn a_waitall_starts_every_send_before_it_waits() {
    let text = "#DIMEMAS:\"fsin-rs MPI trace; Open MPI coll_tuned alltoall=1\":1,0:2(1,1),1,0,0\n\
                d:1:1:2:0:1\n10:0:0:8:1:0:0:200000:200000\n10:1:0:8:1:0:0:200000:200000\n";
    let t = parse(text, "t.dim").unwrap().lower(&free()).unwrap();
    for (me, other) in [(0usize, 1u32), (1, 0)] {
        let mut runs: Vec<(bool, u32, u32)> = Vec::new();
        for e in &t.tasks[me] {
            let run = match *e {
                Event::Send { dst, tag, .. } => (true, dst, tag),
                Event::Recv { src, tag, .. } => (false, src, tag),
                _ => continue,
            };
            if runs.last() != Some(&run) {
                runs.push(run);
            }
        }
        // Tags are numbered as kinds first appear: data 0, ack 1,
        // rest 2.
        let want = vec![
            (true, other, 0),
            (false, other, 0),
            (true, other, 1),
            (false, other, 1),
            (true, other, 2),
            (false, other, 2),
        ];
        assert_eq!(runs, want, "rank {me}");
    }
}

/// TCP's acknowledgements, by hand: rank 1 reads 3,000 bytes + 22 as
/// segments of 1,448, 1,448 and 126 payload bytes and acknowledges
/// them after the last (3,022 > 1,448 unacknowledged); its 100-byte
/// answer would carry an acknowledgement; then two messages of 1,000 +
/// 22 bytes: the second makes 2,044 > 1,448 and is acknowledged. Rank
/// 0 reads one message of 122 bytes and sends none. Without
/// `tcp_acks`, no acknowledgement.
#[test]
fn a_rank_acknowledges_what_it_reads_beyond_a_segment() {
    let body = "2:0:0:1:3000:5:1:1\n3:0:0:1:100:6:1:0\n2:0:0:1:1000:7:1:1\n2:0:0:1:1000:7:1:1\n\
                3:1:0:0:3000:5:1:0\n2:1:0:0:100:6:1:1\n3:1:0:0:1000:7:1:0\n3:1:0:0:1000:7:1:0\n";
    let acks = MpiModel {
        tcp_acks: true,
        ..free()
    };
    let t = lowered(body, &acks);
    let ack = Event::Send {
        dst: 0,
        tag: TCP_ACK_TAG,
        bytes: 66,
    };
    let recv = |tag, bytes| Event::Recv { src: 0, tag, bytes };
    assert_eq!(
        t.tasks[1],
        vec![
            recv(0, 1514),
            recv(0, 1514),
            recv(0, 192),
            ack,
            Event::Send {
                dst: 0,
                tag: 1,
                bytes: 188
            },
            recv(2, 1088),
            recv(2, 1088),
            ack,
        ]
    );
    assert!(t.tasks[0]
        .iter()
        .all(|e| !matches!(e, Event::Send { tag, .. } if *tag == TCP_ACK_TAG)));
    let t = lowered(body, &free());
    assert_eq!(t.tasks[1].len(), 6, "{:?}", t.tasks[1]);
}

/// An Allreduce of 8 bytes on 2 ranks: one exchange each way
/// (recursive doubling), as matching sends and receives.
#[test]
fn collectives_become_their_algorithms_messages() {
    let t = lowered("10:0:0:11:1:0:0:8:8\n10:1:0:11:1:0:0:8:8\n", &free());
    for (me, other) in [(0u32, 1u32), (1, 0)] {
        let evs = &t.tasks[me as usize];
        assert!(
            matches!(evs[0], Event::Send { dst, bytes: 96, .. } if dst == other),
            "{evs:?}"
        );
        assert!(
            matches!(evs[1], Event::Recv { src, bytes: 96, .. } if src == other),
            "{evs:?}"
        );
    }
    // A file's collective on a communicator it has not defined is
    // refused as it is read; a program made otherwise, as it lowers.
    let e = parse(&format!("{HEAD}10:0:0:11:7:0:0:8:8\n"), "t.dim").unwrap_err();
    assert!(
        e.to_string().contains("communicator 7 is not defined"),
        "{e}"
    );
    let mut p = parse(HEAD, "t.dim").unwrap();
    let call = CollectiveCall {
        op: super::super::Collective::Allreduce,
        comm: 7,
        root: None,
        sent: 8,
        received: 8,
        per_peer: Vec::new(),
    };
    p.ranks[0].push(MpiStep::Call(MpiOp::Collective(call)));
    p.lines[0].push(3);
    let e = p.lower(&MpiModel::default()).unwrap_err();
    assert!(
        e.to_string().contains("communicator 7 is not defined"),
        "{e}"
    );
}

/// With the NIC's interrupt window the guests' segmentation offload
/// comes with it: a 4,096-byte send (4,118 bytes with its header, 3
/// frames) at 1 ps a byte writes its 3 frames together after their
/// payloads' cost (4,118 ns: 514 node cycles of 8 ns), where without a
/// window each frame follows its own payload's cost (1,448, 1,448 and
/// 1,222 ns: 181, 181 and 152 node cycles); the 6 ns left over go with
/// the rank's last cycle either way.
#[test]
fn with_the_window_a_sends_frames_go_to_the_nic_together() {
    let body = "2:0:0:1:4096:5:1:1\n3:1:0:0:4096:5:1:0\n";
    let m = |irq_window_ns| MpiModel {
        byte_ps: 1000,
        irq_window_ns,
        ..free()
    };
    let shape = |t: &Trace| -> Vec<String> {
        (t.tasks[0].iter())
            .map(|e| match e {
                Event::Cpu { amount } => format!("cpu {amount}"),
                Event::Send { bytes, .. } => format!("send {bytes}"),
                other => format!("{other:?}"),
            })
            .collect()
    };
    let spread = lowered(body, &m(0));
    assert_eq!(
        shape(&spread),
        [
            "cpu 181",
            "send 1514",
            "cpu 181",
            "send 1514",
            "cpu 152",
            "send 1288",
            "cpu 1"
        ]
    );
    let together = lowered(body, &m(128_000));
    assert_eq!(together.irq, 16_000);
    assert_eq!(
        shape(&together),
        ["cpu 514", "send 1514", "send 1514", "send 1288", "cpu 1"]
    );
}

/// A live CPU burst less the kernel's receive of the frames that came
/// during it, which the replay charges again as its own frames arrive:
/// a burst of 100 us that held 30 us of kernel time and 2 frames, at 9 us
/// a frame, computes 82 us (10,250 node cycles of 8 ns); with 5 frames,
/// at most its kernel time comes out (70 us: 8,750); without the live
/// counts, or without a kernel receive, the burst stays whole (12,500);
/// the other rank's counts are not its own.
#[test]
fn a_burst_gives_back_the_kernels_receive_of_its_frames() {
    let burst = |kernel: &str, frames: &str| {
        format!("20:0:0:90000006:{kernel}\n20:0:0:90000007:{frames}\n1:0:0:0.0001\n")
    };
    let rx = MpiModel {
        rx_ns: 9_000,
        ..free()
    };
    let first_cpu = |body: &str, m: &MpiModel| {
        lowered(body, m).tasks[0].iter().find_map(|e| match e {
            Event::Cpu { amount } => Some(*amount),
            _ => None,
        })
    };
    assert_eq!(first_cpu(&burst("30000", "2"), &rx), Some(10_250));
    assert_eq!(first_cpu(&burst("30000", "5"), &rx), Some(8_750));
    assert_eq!(first_cpu("1:0:0:0.0001\n", &rx), Some(12_500));
    assert_eq!(first_cpu(&burst("30000", "2"), &free()), Some(12_500));
    let other = "20:1:0:90000006:30000\n20:1:0:90000007:2\n1:0:0:0.0001\n";
    assert_eq!(first_cpu(other, &rx), Some(12_500));
    // Counts beyond any burst take out at most the burst.
    let huge = burst("18446744073709551615", "18446744073709551615");
    assert_eq!(first_cpu(&huge, &rx), None);
}
