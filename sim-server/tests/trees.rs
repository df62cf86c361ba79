//! Trees (k-ary n-trees, thin trees, slim trees) and hypercubes in the
//! engine: zero-load latency by hand, accepted = offered at low load,
//! the thin trees' Theta (thin-trees paper, sections 3.4 and 5.1) and their exact
//! top-level bound, fat trees near full load, and saturated runs that keep
//! delivering.

mod common;

use common::{keeps_delivering, run, single_packet};
use fsin::config::Config;

#[test]
fn zero_load_latency_counts_both_node_links() {
    // A tree route climbs to the lowest common level L and back: 2 (L + 1)
    // links, the two node links included (INSEE's nhops * 2); one cycle
    // per link, then plength - 1 cycles for the tail.
    for (topo, src, dst, links) in [
        ("topo=fattree_4_3", 0, 1, 2),
        ("topo=fattree_4_3", 0, 5, 4),
        ("topo=fattree_4_3", 0, 63, 6),
        ("topo=thintree_4_2_3", 17, 40, 6),
        ("topo=slimtree_4_2_3", 0, 17, 6),
        ("topo=slimtree_4_2_3", 3, 12, 4),
        ("topo=hypercube_4", 0, 15, 4),
        ("topo=hypercube_4", 5, 4, 1),
    ] {
        // INSEE's key for tree routing is `routing`; `rmode` is the same.
        for rmode in [
            "rmode=static",
            "rmode=adaptive",
            "routing=static",
            "routing=adaptive",
        ] {
            let (h, lat) = single_packet(&[topo, rmode, "plength=16"], src, dst);
            assert_eq!((h, lat), (links, u64::from(links) + 15), "{topo} {rmode}");
        }
    }
}

#[test]
fn accepted_equals_offered_at_low_load() {
    for (topo, load) in [
        ("topo=fattree_4_3", 0.2),
        ("topo=thintree_4_2_3", 0.1),
        ("topo=slimtree_4_2_3", 0.1),
        ("topo=fattree_2_5", 0.2),
        ("topo=hypercube_6", 0.3),
    ] {
        for rmode in ["rmode=static", "rmode=adaptive"] {
            let load_kv = format!("load={load}");
            let r = run(&[topo, rmode, &load_kv, "cycles=30000"]);
            let acc = r.measured.accepted_load;
            assert!(
                (acc - load).abs() / load < 0.02,
                "{topo} {rmode}: accepted {acc} for offered {load}"
            );
        }
    }
}

/// The uniform-traffic bound of a k:k'-ary n-thin-tree, derived from its
/// top level: the thin-trees paper's Theta = (k'/k)^(n-1) assumes every packet climbs
/// to the top, but the (N/k - 1) / (N - 1) of the destinations in a
/// node's own level-(n-2) block do not, so the links into the top level
/// carry a fraction (N - N/k) / (N - 1) of the load: load <= Theta k /
/// (k - 1) (N - 1) / N.
fn thin_tree_bound(k: f64, up: f64, n: i32) -> f64 {
    let nodes = k.powi(n);
    (up / k).powi(n - 1) * k / (k - 1.0) * (nodes - 1.0) / nodes
}

#[test]
fn thin_trees_reach_theta_and_stay_under_their_bound() {
    // The thin-trees paper, section 5.1: with a few VCs the thin trees reach their
    // ideal throughput Theta under uniform traffic; nothing can pass the
    // top-level bound.
    for (topo, k, up, n, vcs) in [
        ("topo=thintree_8_4_3", 8.0_f64, 4.0, 3, "nchan=4"),
        ("topo=thintree_4_2_3", 4.0, 2.0, 3, "nchan=4"),
    ] {
        let theta: f64 = (up / k).powi(n - 1);
        let bound = thin_tree_bound(k, up, n);
        for rmode in ["rmode=adaptive", "rmode=static"] {
            let r = run(&[topo, vcs, rmode, "load=0.6", "cycles=10000"]);
            let acc = r.measured.accepted_load;
            assert!(
                acc <= bound,
                "{topo} {rmode}: {acc} above the bound {bound}"
            );
            if rmode == "rmode=adaptive" {
                assert!(acc >= 0.95 * theta, "{topo}: {acc} short of Theta {theta}");
            }
        }
    }
    // 8:4-ary 2-thin-tree: Theta = 0.5.
    let r = run(&["topo=thintree_8_4_2", "load=0.9", "cycles=10000"]);
    assert!(r.measured.accepted_load <= thin_tree_bound(8.0, 4.0, 2));
}

#[test]
fn fat_trees_run_near_full_load() {
    // The 8-ary 2-tree (Theta = 1) with adaptive routing and 4 VCs takes
    // most of the full load; contention at the destinations keeps it
    // below 1 (thin-trees paper, section 5.1).
    let r = run(&["topo=fattree_8_2", "nchan=4", "load=1.0", "cycles=10000"]);
    let acc = r.measured.accepted_load;
    assert!(
        (0.85..1.0).contains(&acc),
        "8:8,2 tree accepts {acc} of 1.0"
    );
}

#[test]
fn saturated_trees_and_hypercubes_keep_delivering() {
    // Up/down routing in trees and e-cube routing (with adaptive VCs over
    // an e-cube escape VC) in hypercubes cannot deadlock: at load 1 every
    // batch after warm-up still delivers.
    for settings in [
        &["topo=fattree_4_3", "rmode=adaptive"][..],
        &["topo=fattree_4_3", "rmode=static", "nchan=1"],
        &["topo=thintree_4_2_3", "rmode=adaptive", "nchan=1"],
        &["topo=slimtree_4_2_3", "rmode=static"],
        &["topo=slimtree_6_3_3", "rmode=adaptive"],
        &["topo=hypercube_6", "rmode=static", "nchan=1"],
        &["topo=hypercube_6", "rmode=adaptive", "nchan=3"],
    ] {
        keeps_delivering(settings);
    }
}

#[test]
fn tree_options_that_do_not_apply_are_refused() {
    for (settings, key) in [
        (&["topo=fattree_4_2", "vc=dally"][..], "vc"),
        (&["topo=fattree_4_2", "rmode=smart"], "rmode"),
        (&["topo=thintree_4_2_2", "imode=dor"], "imode"),
        (&["topo=fattree_4_2", "cmode=multiple"], "cmode"),
        (&["topo=hypercube_4", "rmode=adaptive", "nchan=1"], "nchan"),
        (
            &["topo=fattree_4_2", "routing=static", "rmode=adaptive"],
            "routing",
        ),
        (&["topo=torus_4_4", "routing=static"], "routing"),
        (&["topo=torus_4_4", "rmode=static"], "routing"),
    ] {
        let e = Config::from_settings(settings).unwrap_err().to_string();
        assert!(e.contains(&format!("key `{key}`")), "{settings:?}: {e}");
    }
    for (topo, what) in [
        ("topo=thintree_4_5_2", "thintree_K_K'_N"),
        ("topo=slimtree_6_4_3", "slimtree_K_K'_N"),
        ("topo=fattree_4", "fattree_K_N"),
        ("topo=hypercube_21", "hypercube_N"),
        ("topo=fattree_32_5", "more than"),
    ] {
        let e = Config::from_settings(&[topo]).unwrap_err().to_string();
        assert!(e.contains(what), "{topo}: {e}");
    }
}
