//! Link faults (`faults=N`): packets still reach every node where the
//! network stays connected, never over a failed link, with no deadlock at
//! saturation; a fault set that disconnects the network is refused with
//! the links and the nodes it cuts apart.

mod common;

use common::{cfg, deliver_all_pairs, keeps_delivering};
use fsin::config::Config;
use fsin::topology::{hops_from, Topology};

#[test]
fn every_pair_is_delivered_around_the_failed_links() {
    for settings in [
        &["topo=torus_6_6", "faults=5"][..],
        &["topo=torus_6_6", "faults=5", "routing=static"],
        &["topo=mesh_5_5", "faults=4"],
        &["topo=fattree_3_3", "faults=6"],
        &["topo=hypercube_5", "faults=12", "nchan=1"],
        &["topo=spinnaker_5_5", "faults=10"],
        &["topo=midimew_32", "faults=6"],
    ] {
        let c = cfg(settings);
        let topo = Topology::build(&c.net).expect("a valid network");
        assert_eq!(topo.failed_links().len(), c.net.faults as usize);
        let n = topo.nodes() as u32;
        let (net, got) = deliver_all_pairs(&c, 200_000);
        assert_eq!(
            got.len(),
            (n * (n - 1)) as usize,
            "{settings:?}: packets lost or stuck"
        );
        // Every route is a path of the faulty graph: no shorter than its
        // breadth-first distance over the surviving links.
        let dist: Vec<Vec<u32>> = (0..n).map(|s| hops_from(&topo, s)).collect();
        for d in &got {
            assert!(
                d.hops >= dist[d.src as usize][d.dst as usize],
                "{settings:?}"
            );
        }
        // A failed link carries nothing.
        for &(r, p, v, back) in topo.failed_links() {
            let ports = topo.ports();
            assert_eq!(net.link_packets()[r as usize * ports + p], 0);
            assert_eq!(net.link_packets()[v as usize * ports + back], 0);
        }
    }
}

#[test]
fn saturated_faulty_networks_keep_delivering() {
    for settings in [
        &["topo=torus_8_8", "faults=6"][..],
        &["topo=mesh_8_8", "faults=6", "nchan=1"],
        &["topo=thintree_4_2_3", "faults=4"],
    ] {
        keeps_delivering(settings);
    }
}

/// The error names the failed links and two nodes they cut apart; the
/// test checks both against the mesh itself: 10 distinct links between
/// neighbouring routers of the 4x4 mesh, without which a search from the
/// first node named never finds the second.
#[test]
fn a_disconnecting_fault_set_is_refused_with_its_links() {
    let e = Config::from_settings(&["topo=mesh_4_4", "faults=10"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("key `faults`"), "{e}");
    let between = |a: &str, b: &str| {
        let from = e.find(a).unwrap_or_else(|| panic!("no `{a}` in: {e}")) + a.len();
        let len = e[from..]
            .find(b)
            .unwrap_or_else(|| panic!("no `{b}` in: {e}"));
        e[from..from + len].to_string()
    };
    let mut failed = std::collections::BTreeSet::new();
    for link in between("(router-router: ", ")").split(", ") {
        let (a, b) = link
            .split_once('-')
            .unwrap_or_else(|| panic!("{link}: {e}"));
        let (a, b): (u32, u32) = (a.parse().unwrap(), b.parse().unwrap());
        let (row, col) = (a.min(b) / 4, a.min(b) % 4);
        let neighbours =
            a.abs_diff(b) == 4 || (a.abs_diff(b) == 1 && col < 3 && row == a.max(b) / 4);
        assert!(neighbours, "{link} is not a link of the 4x4 mesh: {e}");
        assert!(failed.insert((a.min(b), a.max(b))), "{link} twice: {e}");
    }
    assert_eq!(failed.len(), 10, "{e}");
    let from: u32 = between("leave node ", " unable").parse().unwrap();
    let to: u32 = between("unable to reach node ", ";").parse().unwrap();
    let mut seen = [false; 16];
    let mut todo = vec![from];
    seen[from as usize] = true;
    while let Some(n) = todo.pop() {
        let (row, col) = (n / 4, n % 4);
        let steps = [
            (col > 0).then(|| n - 1),
            (col < 3).then(|| n + 1),
            (row > 0).then(|| n - 4),
            (row < 3).then(|| n + 4),
        ];
        for m in steps.into_iter().flatten() {
            if !failed.contains(&(n.min(m), n.max(m))) && !seen[m as usize] {
                seen[m as usize] = true;
                todo.push(m);
            }
        }
    }
    assert!(
        !seen[to as usize],
        "node {to} is reachable from node {from}: {e}"
    );
    let e = Config::from_settings(&["topo=torus_4_4", "faults=33"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("32 that may fail"), "{e}");
}
