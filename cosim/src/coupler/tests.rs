//! The coupler's unit tests on small networks: the slice clock, admission
//! under nic_queue_bytes, frames at zero load, unusual frames, the engine alone.

use super::*;
use fsin::config::SliceRatio;
use fsin::topology::RecordRouting;
use fsin_frames::mac_for_node;

fn coupler(settings: &[&str]) -> Coupler {
    let cfg = Config::from_settings(settings).unwrap();
    let n = cfg.net.dims.iter().product::<u32>();
    let mut t = MacTable::new(n as usize);
    for i in 0..n {
        t.insert(i, mac_for_node(i)).unwrap();
    }
    let mut c = Coupler::new(&cfg, t).expect("a valid network");
    c.start_measure();
    c
}

/// A slice's lengths: `net` network cycles, `node` node cycles.
fn ratio(net: u64, node: u64) -> SliceRatio {
    SliceRatio { net, node }
}

/// `frames` sent in slice 0, then slices of one cycle at ratio 1:1 until
/// none is pending: every frame delivered, in order of delivery.
fn one_cycle_slices(c: &mut Coupler, mut frames: Vec<InFrame>) -> Vec<OutFrame> {
    let mut slice = Slice {
        node_start: 0,
        node_cycles: 1,
        net_start: 0,
        net_cycles: 1,
    };
    c.run_slice(slice, &mut frames, 0);
    let mut got = Vec::new();
    while c.frames_pending() > 0 {
        slice = slice.next(ratio(1, 1)).unwrap();
        got.extend(c.take_deliveries(slice.node_start, slice.node_start + 1));
        c.run_slice(slice, &mut Vec::new(), 0);
    }
    got
}

fn frame(src: u32, dst: u32, bytes: usize, at: u64) -> InFrame {
    let mut data = mac_for_node(dst).to_vec();
    data.extend_from_slice(&mac_for_node(src));
    data.resize(bytes, 0xee);
    InFrame {
        node: src,
        node_cycle: at,
        seq: 0,
        data,
    }
}

/// The NIC queue rule by hand: 10 000 bytes of room per node, less what
/// the node has in the network; frames cut to 9 019 bytes; magic packets
/// take room but never enter the network.
#[test]
fn admission_bounds_what_each_node_queues() {
    let mut c = coupler(&["topo=torus_2_2", "nic_queue_bytes=10000"]);
    let mut a = c.admission();
    let f = |bytes| frame(0, 1, bytes, 0).data;
    assert!(matches!(a.admit(0, 0, 1, f(6000)), Admitted::Frame(_)));
    // 4 000 left: a 20 000-byte frame is cut to 9 019 and dropped.
    assert_eq!(a.admit(0, 0, 2, f(20_000)), Admitted::Dropped);
    assert!(matches!(a.admit(0, 0, 3, f(4000)), Admitted::Frame(_)));
    assert_eq!(a.admit(0, 0, 4, f(1)), Admitted::Dropped);
    // Another node has its own room; a cut frame keeps 9 019 bytes.
    let Admitted::Frame(long) = a.admit(1, 7, 1, f(20_000)) else {
        panic!("node 1 has room for 9 019 bytes");
    };
    assert_eq!((long.node, long.node_cycle, long.data.len()), (1, 7, 9019));
    let mut magic = vec![0u8; 60];
    magic[0..6].copy_from_slice(&[0x11, 0x22, 0x33, 0x44, 0x55, 0x66]);
    magic[12..14].copy_from_slice(&[0x08, 0x00]);
    magic[23] = 17;
    magic[30..34].copy_from_slice(&[1, 2, 3, 4]);
    magic[fsin_frames::MAGIC_PAYLOAD] = 9;
    assert_eq!(a.admit(2, 0, 1, magic.clone()), Admitted::Magic(Some(9)));
    magic[fsin_frames::MAGIC_PAYLOAD] = 1;
    assert_eq!(a.admit(2, 0, 2, magic), Admitted::ClearStats);
    assert!(c.settle(a));
    assert_eq!(c.stats().dropped, 2);
    assert_eq!(c.stats().per_node[0].frames_dropped, 2);

    // 6 000 bytes in the network leave node 0 4 000 bytes of room.
    c.run_slice(
        Slice {
            node_start: 0,
            node_cycles: 1,
            net_start: 0,
            net_cycles: 1,
        },
        &mut vec![frame(0, 3, 6000, 0)],
        0,
    );
    let mut a = c.admission();
    assert_eq!(a.admit(0, 1, 1, f(4001)), Admitted::Dropped);
    assert!(matches!(a.admit(0, 1, 2, f(4000)), Admitted::Frame(_)));
    assert!(!c.settle(a));
    assert_eq!(c.stats().dropped, 3);
}

/// The engine alone, fed the packets a run injected at their cycles,
/// simulates the same network: every counter equal (packets, phits,
/// latencies, hops, occupancy, cycles), 1 200 packets of 100 frames.
#[test]
fn engine_alone_replays_the_same_network() {
    let mut c = coupler(&["topo=torus_4_4", "plength=16_4"]);
    c.record_injections();
    let mut s = Slice {
        node_start: 0,
        node_cycles: 1000,
        net_start: 0,
        net_cycles: 200,
    };
    for k in 0..5u32 {
        let mut frames: Vec<InFrame> = (0..20)
            .map(|i| frame(i % 16, (i * 7 + k + 1) % 16, 700, u64::from(i) * 37))
            .filter(|f| mac_for_node(f.node) != f.data[0..6])
            .map(|mut f| {
                f.node_cycle += s.node_start;
                f
            })
            .collect();
        c.run_slice(s, &mut frames, 0);
        s = s.next(ratio(200, 1000)).unwrap();
    }
    for _ in 0..10 {
        c.run_slice(s, &mut Vec::new(), 0);
        s = s.next(ratio(200, 1000)).unwrap();
    }
    assert_eq!(c.frames_pending(), c.tm.due.len(), "all arrived");
    let (_, alone) = c.engine_alone().unwrap().expect("recorded");
    assert!(alone.delivered > 1000, "{} packets", alone.delivered);
    assert_eq!(alone, c.net.counters);
    assert!(coupler(&["topo=torus_4_4"])
        .engine_alone()
        .unwrap()
        .is_none());
}

#[test]
fn slice_maps_cycles_both_ways() {
    let s = Slice {
        node_start: 1000,
        node_cycles: 1000,
        net_start: 200,
        net_cycles: 200,
    };
    assert_eq!(s.net_of(1000), 200);
    assert_eq!(s.net_of(1004), 200);
    assert_eq!(s.net_of(1005), 201);
    assert_eq!(s.node_of(201), 1005);
    assert_eq!(s.node_of(450), 2250);
    assert_eq!(s.next(ratio(100, 500)).unwrap().node_start, 2000);
    assert_eq!(s.next(ratio(1, u64::MAX - 1999)), None);
}

/// One 64-byte frame (one packet of 16 phits of 4 bytes) from node 0
/// to node 2 of a 4x4 torus (2 hops): last phit consumed h + L - 1 =
/// 17 network cycles after injection, plus the NIC latency.
#[test]
fn zero_load_frame_arrives_at_its_exact_cycle() {
    let mut c = coupler(&["topo=torus_4_4", "plength=16_4", "nic_latency=20"]);
    let s0 = Slice {
        node_start: 0,
        node_cycles: 100,
        net_start: 0,
        net_cycles: 20,
    };
    // Sent at node cycle 15 = network cycle 3.
    c.run_slice(s0, &mut vec![frame(0, 2, 64, 15)], 0);
    let s1 = s0.next(ratio(20, 100)).unwrap();
    c.run_slice(s1, &mut Vec::new(), 0);
    let got = c.take_deliveries(200, 300);
    assert_eq!(got.len(), 1);
    // Network cycle 3 + 17 + 20 = 40 -> node cycle 200.
    assert_eq!(got[0].node_cycle, 200);
    assert_eq!(got[0].node, 2);
    assert_eq!(c.stats().latency_net.mean(), 17.0);
    assert_eq!(c.stats().latency_node.mean(), 185.0);
}

/// Node simulators sit where `placement` puts them: with
/// `shift_3` simulator i is network node (i + 3) mod 16, so a frame from
/// simulator 0 to simulator 2 enters the network at node 3 for node 5 (3
/// hops on the 4x4 torus, 2 between nodes 0 and 2) and still reaches
/// simulator 2, a hop's cycle later than the unplaced frame of
/// `zero_load_frame_arrives_at_its_exact_cycle`. A placement that leaves
/// nodes out is refused.
#[test]
fn node_simulators_sit_where_placement_puts_them() {
    let mut c = coupler(&[
        "topo=torus_4_4",
        "plength=16_4",
        "nic_latency=20",
        "placement=shift_3",
    ]);
    c.record_injections();
    let s0 = Slice {
        node_start: 0,
        node_cycles: 100,
        net_start: 0,
        net_cycles: 20,
    };
    c.run_slice(s0, &mut vec![frame(0, 2, 64, 15)], 0);
    c.run_slice(s0.next(ratio(20, 100)).unwrap(), &mut Vec::new(), 0);
    let log = c.tm.injections.as_ref().unwrap();
    assert!(!log.is_empty());
    assert!(log.iter().all(|i| (i.src, i.dst) == (3, 5)), "{log:?}");
    let got = c.take_deliveries(200, 300);
    assert_eq!((got.len(), got[0].node), (1, 2));
    assert_eq!(c.stats().latency_net.mean(), 18.0);
    let cfg = Config::from_settings(&["topo=torus_4_4", "placement=consecutive_8"]).unwrap();
    let e = Coupler::new(&cfg, MacTable::new(16))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("8 tasks given, 16 nodes"), "{e}");
}

/// The coupler is a library: a frame from a node beyond the network,
/// or to a MAC its table gives a node beyond the network, is counted
/// (rejected, unknown MAC) and nothing enters the network.
#[test]
fn frames_naming_nodes_beyond_the_network_are_counted_not_sent() {
    let cfg = Config::from_settings(&["topo=torus_2_2"]).unwrap();
    let mut t = MacTable::new(6);
    for i in 0..6 {
        t.insert(i, mac_for_node(i)).unwrap();
    }
    let mut c = Coupler::new(&cfg, t).expect("a valid network");
    c.start_measure();
    let s0 = Slice {
        node_start: 0,
        node_cycles: 1000,
        net_start: 0,
        net_cycles: 200,
    };
    c.run_slice(s0, &mut vec![frame(4, 1, 100, 0), frame(0, 5, 100, 1)], 0);
    assert_eq!((c.stats().rejected, c.stats().unknown_mac), (1, 1));
    assert_eq!(c.stats().per_node[0].frames_sent, 1);
    assert!(c.take_deliveries(0, 2000).is_empty());
    assert_eq!(c.network_summary().packets_injected, 0);
}

#[test]
fn lockstep_clamps_to_the_next_slice_start() {
    let mut c = coupler(&["topo=torus_4_4", "plength=16_4"]);
    let s0 = Slice {
        node_start: 0,
        node_cycles: 1000,
        net_start: 0,
        net_cycles: 200,
    };
    c.run_slice(s0, &mut vec![frame(0, 1, 100, 0)], 0);
    let got = c.take_deliveries(1000, 2000);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].node_cycle, 1000);
    assert_eq!(got[0].data.len(), 100);
}

#[test]
fn broadcast_reaches_every_other_node_and_bad_frames_are_counted() {
    let mut c = coupler(&["topo=torus_4_4", "plength=16_4"]);
    let mut b = frame(3, 0, 60, 0);
    b.data[0..6].copy_from_slice(&[0xff; 6]);
    let mut unknown = frame(3, 0, 60, 1);
    unknown.data[0..6].copy_from_slice(&[0x02, 9, 9, 9, 9, 9]);
    let short = InFrame {
        data: vec![0; 10],
        ..frame(3, 0, 60, 2)
    };
    let s0 = Slice {
        node_start: 0,
        node_cycles: 1000,
        net_start: 0,
        net_cycles: 200,
    };
    c.run_slice(s0, &mut vec![b, unknown, short], 0);
    // 15 one-packet copies leave node 3 through one injection path each
    // of 16 phits: not all fit in one 200-cycle slice.
    assert!(c.frames_pending() > 0);
    c.run_slice(s0.next(ratio(200, 1000)).unwrap(), &mut Vec::new(), 0);
    let mut got: Vec<u32> = c
        .take_deliveries(2000, 3000)
        .iter()
        .map(|f| f.node)
        .collect();
    got.sort_unstable();
    assert_eq!(got, (0..16).filter(|&n| n != 3).collect::<Vec<_>>());
    assert_eq!(c.stats().unknown_mac, 1);
    assert_eq!(c.stats().rejected, 1);
    assert_eq!(c.frames_pending(), 0);
}

/// A misbehaving node's frames, counted against it by kind and handled
/// by the stated policy: short and oversized dropped, a forged source
/// carried, unknown and own destinations dropped (not flooded), a
/// broadcast flooded. The other node's counters stay at zero.
#[test]
fn a_nodes_unusual_frames_are_counted_against_it() {
    let mut c = coupler(&["topo=torus_2_2", "plength=16_4"]);
    let at = |k: u64, f: InFrame| InFrame { node_cycle: k, ..f };
    let mut forged = frame(0, 1, 100, 0);
    forged.data[6..12].copy_from_slice(&mac_for_node(2));
    let mut unknown = frame(0, 1, 100, 0);
    unknown.data[0..6].copy_from_slice(&[0x02, 9, 9, 9, 9, 9]);
    let mut broadcast = frame(0, 1, 100, 0);
    broadcast.data[0..6].copy_from_slice(&[0xff; 6]);
    let short = InFrame {
        data: vec![0; 13],
        ..frame(0, 1, 100, 0)
    };
    let oversized = frame(0, 1, fsin_frames::MAX_FRAME_BYTES + 1, 0);
    let mut frames = vec![
        at(0, forged),
        at(1, unknown),
        at(2, frame(0, 0, 100, 0)),
        at(3, broadcast),
        at(4, short),
        at(5, oversized),
        at(6, frame(1, 0, 100, 0)),
    ];
    let s0 = Slice {
        node_start: 0,
        node_cycles: 1000,
        net_start: 0,
        net_cycles: 200,
    };
    c.run_slice(s0, &mut frames, 0);
    c.run_slice(s0.next(ratio(200, 1000)).unwrap(), &mut Vec::new(), 0);
    let want = Conduct {
        short: 1,
        oversized: 1,
        foreign_source: 1,
        unknown_destination: 2,
        broadcast: 1,
    };
    assert_eq!(c.stats().per_node[0].conduct, want);
    assert_eq!(c.stats().per_node[1].conduct, Conduct::default());
    assert!(
        want.unusual()
            && !Conduct {
                broadcast: 5,
                ..Conduct::default()
            }
            .unusual()
    );
    // Delivered: the forged frame and node 1's to node 1 and node 0,
    // and the broadcast to nodes 1, 2 and 3.
    let mut got: Vec<u32> = (c.take_deliveries(0, 3000).iter())
        .map(|f| f.node)
        .collect();
    got.sort_unstable();
    assert_eq!(got, [0, 1, 1, 2, 3]);
}

/// All-to-all frames through a loaded 4x4 torus, one-cycle slices at
/// ratio 1:1 (a frame done in cycle t reaches its node at t + 1): no
/// frame is faster than its pair's zero-load latency h + P*L - 1, and
/// every frame arrives intact.
#[test]
fn no_frame_beats_zero_load_latency() {
    let settings = ["topo=torus_4_4", "plength=16_4"];
    let mut c = coupler(&settings);
    let cube = fsin::topology::Cube::new(&Config::from_settings(&settings).unwrap().net);
    let mut frames = Vec::new();
    for src in 0..16 {
        for dst in (0..16).filter(|&d| d != src) {
            let mut f = frame(src, dst, 130, 0);
            f.data[20] = dst as u8;
            frames.push(f);
        }
    }
    let got = one_cycle_slices(&mut c, frames);
    assert_eq!(got.len(), 240);
    let mut rng = rand::rngs::mock::StepRng::new(0, 1);
    for f in &got {
        let src = u32::from(f.data[11]);
        let rr = cube.record(src, f.node, &mut rng);
        let h: u64 = rr.iter().map(|x| u64::from(x.unsigned_abs())).sum();
        // 130 bytes = 3 packets of 64 bytes.
        let zero_load = h + 3 * 16 - 1;
        assert!(
            f.node_cycle > zero_load,
            "{src}->{}: {}",
            f.node,
            f.node_cycle
        );
        assert_eq!(f.data.len(), 130);
        assert_eq!(u32::from(f.data[20]), f.node);
    }
}

/// `frame_loss`: 2,000 frames between two nodes. With 0 none is lost;
/// with 1 all are, and none arrives; with 0.25 the count lost is within
/// 4 standard deviations of 500 (binomial, sd 19.4), the rest arrive,
/// and the same seed loses the same frames while another seed does not.
#[test]
fn a_lossy_network_loses_its_share_of_frames_by_seed() {
    let run = |settings: &[&str]| {
        let mut c = coupler(settings);
        let mut s = Slice {
            node_start: 0,
            node_cycles: 100_000,
            net_start: 0,
            net_cycles: 20_000,
        };
        let mut frames: Vec<InFrame> = (0..2000u64).map(|i| frame(0, 1, 64, i * 40)).collect();
        c.run_slice(s, &mut frames, 0);
        let mut arrived = c.take_deliveries(0, 100_000).len();
        for _ in 0..5 {
            s = s.next(ratio(20_000, 100_000)).unwrap();
            c.run_slice(s, &mut Vec::new(), 0);
            arrived += c
                .take_deliveries(s.node_start, s.node_start + 100_000)
                .len();
        }
        (c.stats().lost, arrived)
    };
    let base = ["topo=torus_2", "rseed=5"];
    assert_eq!(run(&base), (0, 2000));
    assert_eq!(run(&[&base[..], &["frame_loss=1"]].concat()), (2000, 0));
    let (lost, arrived) = run(&[&base[..], &["frame_loss=0.25"]].concat());
    assert!((lost as f64 - 500.0).abs() < 4.0 * 19.4, "{lost}");
    assert_eq!(lost as usize + arrived, 2000);
    assert_eq!(run(&[&base[..], &["frame_loss=0.25"]].concat()).0, lost);
    assert_ne!(run(&["topo=torus_2", "rseed=6", "frame_loss=0.25"]).0, lost);
}

/// The network's counters per window of the links' watch (`util_window`
/// slices, here 3 of 100 node cycles): each window stamped with its own
/// first node cycle and its length, though the slice that closes it
/// started later; one frame, sent in the first slice, loads only the first
/// window.
#[test]
fn counter_windows_span_their_slices() {
    let mut c = coupler(&[
        "topo=torus_2_2",
        "util_window=3",
        "fsin_cycle_relation=20",
        "simics_cycle_relation=100",
    ]);
    c.record_counters();
    let mut slice = Slice {
        node_start: 0,
        node_cycles: 100,
        net_start: 0,
        net_cycles: 20,
    };
    let mut frames = vec![frame(0, 1, 64, 10)];
    for _ in 0..7 {
        c.run_slice(slice, &mut frames, 0);
        slice = slice.next(ratio(20, 100)).unwrap();
    }
    let w = c.take_counter_windows();
    let spans: Vec<(u64, u64)> = w.iter().map(|w| (w.from, w.length)).collect();
    assert_eq!(spans, [(0, 300), (300, 300)]);
    assert_eq!(c.counter_names()[0], "accepted load");
    assert!(w.iter().all(|w| w.values.len() == c.counter_names().len()));
    assert!(w[0].values[0] > 0.0);
    assert_eq!(w[1].values[0], 0.0);
    assert!(c.take_counter_windows().is_empty(), "taken once");
}

/// Every node sends every other node 6 frames at once, 1,500 and 60 bytes
/// in turn, through a 16-node ring with adaptive routing (`rmode=smart`,
/// 2 VCs), one-cycle slices at ratio 1:1. As the network delivers them
/// (`frame_order=network`) some 60-byte frames overtake the 1,500-byte
/// frame before them. With `frame_order=pair` each pair's frames come in
/// the order sent, each at the latest arrival of the network's among the
/// frames up to it (the network runs alike: holding a frame at its NIC
/// changes no packet), and both count the same overtaking frames, at
/// least those that arrived a whole cycle ahead. Once all are due, no
/// sender has bytes left against its `nic_queue_bytes`.
#[test]
fn a_pairs_frames_reach_the_nic_in_the_order_sent() {
    let run = |order: &str| {
        let mut c = coupler(&[
            "topo=torus_16",
            "rmode=smart",
            &format!("frame_order={order}"),
        ]);
        let mut frames = Vec::new();
        for k in 0..6u8 {
            for src in 0..16 {
                for dst in (0..16).filter(|&d| d != src) {
                    let mut f = frame(src, dst, if k % 2 == 0 { 1500 } else { 60 }, 0);
                    f.data[20] = k;
                    frames.push(f);
                }
            }
        }
        let got = one_cycle_slices(&mut c, frames);
        assert_eq!(got.len(), 6 * 240);
        // Held frames counted against their senders until due, no longer.
        assert!(c.tm.backlog.iter().all(|&b| b == 0) && c.tm.held == 0);
        // (src, dst) -> the frames' (k, node cycle) in delivery order.
        let mut pairs: HashMap<(u32, u32), Vec<(u8, u64)>> = HashMap::new();
        for f in &got {
            let pair = pairs.entry((u32::from(f.data[11]), f.node)).or_default();
            pair.push((f.data[20], f.node_cycle));
        }
        (pairs, c.stats().reordered)
    };
    let (network, reordered) = run("network");
    let (pair, held) = run("pair");
    let mut ahead = 0;
    for (key, got) in &network {
        let at = |k: u8| got.iter().find(|f| f.0 == k).unwrap().1;
        let mut latest = 0;
        for k in 0..6 {
            if (0..k).any(|j| at(j) > at(k)) {
                ahead += 1;
            }
            latest = latest.max(at(k));
            assert_eq!(pair[key][k as usize], (k, latest), "{key:?}");
        }
    }
    assert!(
        ahead > 0,
        "no frame overtook another of its pair ({reordered} reordered)"
    );
    assert_eq!(held, reordered);
    assert!(reordered >= ahead, "{reordered} < {ahead}");
}
