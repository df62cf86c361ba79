//! INSEE's indirect cube (`icube_N_L_X[_Y[_Z]]`, alias `tricube`): counts
//! and distances by hand, zero-load latency, accepted = offered at low
//! load, and saturated runs that keep delivering (bubble escape rings).

mod common;

use common::{cfg, keeps_delivering, run, summary};
use fsin::engine::NewPacket;
use fsin::network::Network;

#[test]
fn counts_and_distances_by_hand() {
    // 4x4 torus of switches with 2 nodes each and one link per direction:
    // 32 nodes, 16 switches, 32 node links and 32 torus links. From node
    // 0: its switch-mate 2 links away; the 2 nodes of each other switch at
    // the torus distance plus 2 (the torus distances from a switch sum to
    // 32): (2 + 2 (32 + 2 * 15)) / 31.
    let s = summary(&["topo=icube_2_1_4_4"]);
    assert_eq!(
        (
            s.nodes,
            s.switches,
            s.links,
            s.router_links,
            s.ports,
            s.diameter
        ),
        (32, 16, 64, 32, 6, 6)
    );
    assert!(
        (s.avg_distance - 126.0 / 31.0).abs() < 1e-12,
        "{}",
        s.avg_distance
    );
    // tricube names the same family; 4x4x4 switches, 4 nodes, 2 lanes:
    // 256 node links and 2 x 192 torus links.
    let t = summary(&["topo=tricube_4_2_4_4_4"]);
    assert_eq!((t.nodes, t.switches, t.links, t.ports), (256, 64, 640, 16));
}

#[test]
fn zero_load_latency_counts_both_node_links() {
    for (src, dst, links) in [(0, 1, 2), (0, 2, 3), (0, 31, 4), (3, 20, 5)] {
        for routing in ["routing=static", "routing=adaptive"] {
            let mut net = Network::new(&cfg(&["topo=icube_2_1_4_4", routing, "plength=16"]).net)
                .expect("a valid network");
            net.record_deliveries(true);
            net.inject(NewPacket { src, dst, tag: 0 }).unwrap();
            let d = (0..200)
                .find_map(|_| {
                    net.step();
                    net.drain_delivered().next()
                })
                .expect("delivered");
            assert_eq!(
                (d.hops, d.t_done),
                (links, u64::from(links) + 15),
                "{src}->{dst} {routing}"
            );
        }
    }
}

#[test]
fn low_load_and_saturation() {
    for settings in [
        &["topo=icube_2_1_4_4", "routing=static", "nchan=1"][..],
        &["topo=icube_2_1_4_4", "routing=adaptive"],
        &["topo=icube_2_2_6_4", "routing=adaptive", "nchan=3"],
        &["topo=icube_4_2_8", "routing=static", "nchan=1"],
    ] {
        let mut low = settings.to_vec();
        low.extend(["load=0.1", "cycles=30000"]);
        let acc = run(&low).measured.accepted_load;
        assert!((acc - 0.1).abs() / 0.1 < 0.02, "{settings:?}: {acc}");
        keeps_delivering(settings);
    }
}
