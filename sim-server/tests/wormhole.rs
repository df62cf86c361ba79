//! Wormhole switching (SimuRed paper) against virtual cut-through:
//! zero-load latency, admission with one phit of room computed by hand,
//! deadlock-free configurations that keep delivering at saturation, and a
//! configuration that is not deadlock-free, stopped by the deadlock
//! detector with its cycle of waiting channels.

mod common;

use common::{cfg, keeps_delivering, replay, run};

#[test]
fn zero_load_latency_is_the_same_as_cut_through() {
    for (topo, src, dst, hops) in [
        ("topo=mesh_4_4", 0, 15, 6),
        ("topo=torus_8_8", 0, 3 + 2 * 8, 5),
        ("topo=fattree_4_3", 0, 63, 6),
        ("topo=hypercube_4", 0, 15, 4),
    ] {
        for sw in ["switching=vct", "switching=wormhole"] {
            let d = replay(&[topo, sw, "plength=16"], &[(0, src, dst)], 200);
            assert_eq!(d.len(), 1, "{topo} {sw}");
            assert_eq!(
                (d[0].hops, d[0].t_done),
                (hops, u64::from(hops) + 15),
                "{topo} {sw}"
            );
        }
    }
}

#[test]
fn a_packet_follows_into_a_queue_with_one_phit_of_room() {
    // A line of 8 (mesh_8_2, row 0), queues of one packet (tql=1), one VC.
    // Node 0 sends P0 and then P1 to node 2. P0's tail leaves node 0 in
    // cycle 15 and node 1 in cycle 16; it is consumed at node 2 in cycles
    // 2-17. P1's header is ready at node 0 in cycle 16, when node 1's
    // queue still holds P0's last phit.
    let base = [
        "topo=mesh_8_2",
        "nchan=1",
        "rmode=oblivious",
        "bsize=0",
        "tql=1",
        "plength=16",
    ];
    let done = |sw: &str| {
        let mut s = base.to_vec();
        s.push(sw);
        let d = replay(&s, &[(0, 0, 2), (0, 0, 2)], 200);
        assert_eq!(d.len(), 2, "{sw}");
        let mut t = [0; 2];
        for p in d {
            t[p.tag as usize] = p.t_done;
        }
        t
    };
    // Cut-through: P1 needs the whole queue at node 1, free in cycle 17;
    // there it needs node 2's, free in cycle 18; consumed from cycle 19 to
    // 34.
    assert_eq!(done("switching=vct"), [17, 34]);
    // Wormhole: one phit of room is enough. P1 leaves node 0 in cycle 16,
    // node 1 in cycle 17, and streams into node 2 right behind P0: its
    // phits are consumed in cycles 18-33.
    assert_eq!(done("switching=wormhole"), [17, 33]);
}

#[test]
fn deadlock_free_wormhole_networks_keep_delivering() {
    for settings in [
        &["topo=mesh_8_8", "nchan=1", "rmode=oblivious", "bsize=0"][..],
        &["topo=torus_8_8", "vc=dally", "rmode=trc"],
        &["topo=fattree_4_3"],
        &["topo=hypercube_6", "routing=static", "nchan=1"],
        &["topo=torus_6_6", "faults=3"],
    ] {
        let mut s = settings.to_vec();
        s.extend(["switching=wormhole", "tql=1"]);
        keeps_delivering(&s);
    }
}

#[test]
fn wormhole_on_a_ring_without_escape_channels_deadlocks_and_is_reported() {
    // One VC, dimension order, no bubble: the rings of a torus close a
    // cycle of channels, and under wormhole blocked packets hold them.
    let r = run(&[
        "topo=torus_8_8",
        "nchan=1",
        "rmode=oblivious",
        "bsize=0",
        "switching=wormhole",
        "tql=1",
        "load=1.0",
        "cycles=100000",
    ]);
    let dl = r.network_deadlock.expect("a deadlock");
    assert!(dl.cycle < 100_000);
    assert!(dl.cycle_of_channels.len() >= 2, "{dl}");
    // The cycle stays in one ring: every channel is on a link of the same
    // dimension, each the next router's input.
    let topo =
        fsin::topology::Topology::build(&cfg(&["topo=torus_8_8"]).net).expect("a valid network");
    let cycle = &dl.cycle_of_channels;
    for (i, w) in cycle.iter().enumerate() {
        let next = &cycle[(i + 1) % cycle.len()];
        let linked = (0..topo.ports())
            .any(|p| topo.neighbour(w.router, p).map(|(v, _)| v) == Some(next.router));
        assert!(linked, "{w:?} -> {next:?}");
    }
}
