//! Engine behaviour against hand-computed values, closed forms, bounds and
//! INSEE's reference figures.

mod common;

use common::{cfg, run, single_packet, summary};
use fsin::config::{Config, ConfigError};
use fsin::engine::NewPacket;
use fsin::network::Network;
use fsin::run::Report;

#[test]
fn zero_load_latency_is_hops_plus_length_minus_one() {
    // Header: one link per cycle from the generation cycle; the last phit
    // is consumed plength - 1 cycles after the header (docs/model.md).
    for (settings, src, dst, hops) in [
        (vec!["topo=torus_8_8", "plength=16"], 0, 3 + 2 * 8, 5),
        (vec!["topo=torus_8_8", "plength=16"], 0, 7 + 7 * 8, 2), // two wraps
        (vec!["topo=torus_8_8", "plength=1"], 9, 10, 1),
        (vec!["topo=mesh_4_4", "plength=8"], 0, 15, 6),
        (vec!["topo=mesh_4_4_4", "plength=4"], 0, 63, 9),
        (vec!["topo=torus_5", "nways=1", "plength=16"], 3, 2, 4), // unidirectional ring
    ] {
        let plength: u64 = settings
            .iter()
            .find_map(|s| s.strip_prefix("plength="))
            .and_then(|v| v.parse().ok())
            .unwrap();
        for rmode in ["rmode=oblivious", "rmode=smart"] {
            let mut s = settings.clone();
            s.push(rmode);
            let (h, lat) = single_packet(&s, src, dst);
            assert_eq!(h, hops, "{s:?}");
            assert_eq!(lat, u64::from(hops) + plength - 1, "{s:?}");
        }
    }
}

#[test]
fn average_distance_matches_closed_form() {
    // Uniform destinations (never self). k x k torus, k even: mean ring
    // distance over all destinations is k/4; k x k mesh: (k^2 - 1) / (3k).
    let torus = |k: f64| 2.0 * (k / 4.0) * (k * k) / (k * k - 1.0);
    let mesh = |k: f64| 2.0 * ((k * k - 1.0) / (3.0 * k)) * (k * k) / (k * k - 1.0);
    for (topo, expect) in [("topo=torus_8_8", torus(8.0)), ("topo=mesh_6_6", mesh(6.0))] {
        let r = run(&[topo, "load=0.05", "cycles=60000"]);
        let got = r.measured.avg_distance;
        assert!(
            (got - expect).abs() / expect < 0.02,
            "{topo}: {got} vs {expect}"
        );
    }
}

#[test]
fn accepted_equals_offered_below_saturation() {
    for (topo, load) in [
        ("topo=torus_8_8", 0.1),
        ("topo=torus_8_8", 0.3),
        ("topo=mesh_8_8", 0.15),
        ("topo=torus_4_4_4", 0.3),
    ] {
        let l = format!("load={load}");
        let r = run(&[topo, &l, "cycles=40000"]);
        let acc = r.measured.accepted_load;
        assert!(
            (acc - load).abs() / load < 0.02,
            "{topo} load {load}: accepted {acc}"
        );
    }
}

#[test]
fn accepted_never_exceeds_bisection_bound() {
    // Bisection bound for uniform traffic: 8/k (k x k torus), 4/k (mesh).
    for (topo, k, per) in [("topo=torus_12_12", 12.0, 8.0), ("topo=mesh_8_8", 8.0, 4.0)] {
        let bound = per / k;
        let r = run(&[topo, "load=1.0", "cycles=8000", "rmode=oblivious"]);
        let acc = r.measured.accepted_load;
        assert!(acc > 0.2 * bound, "{topo}: accepted {acc} suspiciously low");
        assert!(acc <= bound, "{topo}: accepted {acc} above bound {bound}");
    }
}

#[test]
fn saturated_networks_keep_delivering() {
    // Deadlock-free configurations at load 1.0 for 100k cycles: every 10k
    // cycles some packets must be delivered.
    for rmode in [
        &["vc=bubble", "rmode=oblivious"][..],
        &["vc=bubble", "rmode=smart"],
        &["vc=bubble", "rmode=random"],
        &["vc=bubble", "rmode=shortest"],
        &["vc=dally", "rmode=trc"],
        &["vc=dally", "rmode=basic"],
        &["vc=dally", "rmode=improved"],
        &["vc=dally", "rmode=adaptive", "nchan=3"],
        &["vc=double", "rmode=doubleob"],
        &["vc=double", "rmode=doubleadap"],
    ] {
        let mut s = vec![
            "topo=torus_4_4",
            "load=1.0",
            "cycles=100000",
            "pinterval=10000",
        ];
        s.extend_from_slice(rmode);
        let r = run(&s);
        assert_eq!(r.partials.len(), 10);
        for p in &r.partials {
            assert!(
                p.summary.packets_delivered > 100,
                "{rmode:?} stalls before {}",
                p.at
            );
        }
    }
}

#[test]
fn same_seed_same_result_other_seed_differs() {
    let strip = |r: Report| {
        let mut v = serde_json::to_value(r).unwrap();
        let o = v.as_object_mut().unwrap();
        o.remove("wall_s");
        o.remove("cycles_per_s");
        v
    };
    let a = strip(run(&[
        "topo=torus_6_6",
        "load=0.3",
        "rseed=5",
        "cycles=5000",
    ]));
    let b = strip(run(&[
        "topo=torus_6_6",
        "load=0.3",
        "rseed=5",
        "cycles=5000",
    ]));
    let c = strip(run(&[
        "topo=torus_6_6",
        "load=0.3",
        "rseed=6",
        "cycles=5000",
    ]));
    assert_eq!(a, b);
    assert_ne!(a["latency_avg"], c["latency_avg"]);
}

const REFERENCE: &[&str] = &[
    "vc=bubble",
    "rmode=oblivious",
    "routing=dim",
    "imode=dor",
    "plength=16_4",
    "tql=4",
    "iql=4",
];

#[test]
fn agrees_with_insee_reference_figures() {
    // INSEE's own simulator on the reference configuration (issue notes):
    // 8x8 torus at 0.05: distance 4.10, latency 20.3;
    // 16x16 torus at 0.1: distance 8.07, latency 30.6, accepted 0.101.
    for (topo, load, dist, lat, acc) in [
        ("topo=torus_8_8", "load=0.05", 4.10, 20.3, 0.05),
        ("topo=torus_16_16", "load=0.1", 8.07, 30.6, 0.101),
    ] {
        let mut s = REFERENCE.to_vec();
        s.extend([topo, load, "nsamples=20", "sample_size=2000"]);
        let m = run(&s).measured;
        assert!(
            (m.avg_distance - dist).abs() / dist < 0.02,
            "{topo}: distance {}",
            m.avg_distance
        );
        assert!(
            (m.latency_avg - lat).abs() / lat < 0.05,
            "{topo}: latency {}",
            m.latency_avg
        );
        assert!(
            (m.accepted_load - acc).abs() / acc < 0.02,
            "{topo}: accepted {}",
            m.accepted_load
        );
    }
}

/// Saturation against INSEE's own sweeps (issue 3 notes, same
/// configuration and TrGen settings: 5000 warm-up, 10 batches of 1000):
/// accepted load still tracks offered (2 %) at INSEE's saturation point
/// (8x8: 0.75, 16x16: 0.40), and the maximum accepted load far above it is
/// within 5 % of INSEE's (8x8: 0.773 at offered 1.0, 16x16: 0.415 at 0.55).
#[test]
fn saturation_agrees_with_insee_reference_sweeps() {
    let trgen = [
        "warm_up_period=5000",
        "max_conv_time=5000",
        "conv_period=1000",
        "conv_thres=0.05",
        "nsamples=10",
        "sample_size=1000",
        "rseed=17",
    ];
    for (topo, knee, top, max_acc) in [
        ("topo=torus_8_8", 0.75, 1.0, 0.773),
        ("topo=torus_16_16", 0.40, 0.55, 0.415),
    ] {
        let at = |load: f64| {
            let l = format!("load={load}");
            let mut s = REFERENCE.to_vec();
            s.extend(trgen);
            s.extend([topo, l.as_str()]);
            run(&s).measured.accepted_load
        };
        let acc = at(knee);
        assert!(
            (acc - knee).abs() / knee < 0.02,
            "{topo}: accepted {acc} at INSEE's saturation point {knee}"
        );
        let acc = at(top);
        assert!(
            (acc - max_acc).abs() / max_acc < 0.05,
            "{topo}: maximum accepted {acc}, INSEE {max_acc}"
        );
    }
}

#[test]
fn trgen_phases_run_warm_up_convergence_and_batches() {
    let r = run(&[
        "topo=torus_8_8",
        "load=0.2",
        "warm_up_period=3000",
        "conv_period=2000",
        "conv_thres=0.2",
        "nsamples=4",
        "sample_size=1500",
    ]);
    assert_eq!(r.convergence.converged(), Some(true));
    assert_eq!(r.batches.len(), 4);
    // Earliest convergence: warm-up + 4 windows (the first always fails).
    assert!(r.unmeasured_cycles >= 3000 + 4 * 2000);
    assert_eq!(r.cycles, r.unmeasured_cycles + 4 * 1500);
    assert_eq!(r.measured.cycles, 6000);
}

/// The defaults converge below saturation: `fsin run` on the
/// default 8x8 torus at loads 0.05 to 0.4, each with both 95% intervals
/// within `conv_thres` (5%) of their means, which TrGen's test alone (three
/// windows of 1,000 cycles each within 5% of the last) cannot give at 0.05.
#[test]
fn the_defaults_converge_below_saturation() {
    for load in ["0.05", "0.1", "0.2", "0.4"] {
        let l = format!("load={load}");
        let r = run(&[l.as_str()]);
        assert_eq!(r.convergence.converged(), Some(true), "load {load}");
        let (lat, acc) = (r.latency_ci95.unwrap(), r.accepted_load_ci95.unwrap());
        assert!(
            lat > 0.0 && lat <= 0.05 * r.measured.latency_avg,
            "load {load}: latency +-{lat}"
        );
        assert!(
            acc > 0.0 && acc <= 0.05 * r.measured.accepted_load,
            "load {load}: accepted +-{acc}"
        );
    }
    // INSEE's criterion, kept by compat=insee, does not settle at 0.05.
    let r = run(&["load=0.05", "compat=insee", "topo=torus_8_8"]);
    assert_eq!(r.convergence.converged(), Some(false));
    assert_eq!(r.batches.len(), 10);
    // A fixed-length run judges nothing.
    let r = run(&["cycles=3000"]);
    assert_eq!((r.convergence.converged(), r.unmeasured_cycles), (None, 0));
}

/// The 95% intervals are honest: over 40 seeds of a 4x4 torus at 0.3,
/// the interval of each run covers the mean of all 40 runs in at least 85%
/// of them (a 95% interval should in about 95%; batch means that were
/// not independent would make them too narrow).
#[test]
fn the_intervals_cover_the_mean_of_many_seeds() {
    let runs: Vec<Report> = (1..=40)
        .map(|seed| {
            let s = format!("rseed={seed}");
            run(&["topo=torus_4_4", "load=0.3", s.as_str()])
        })
        .collect();
    type Figure = fn(&Report) -> (f64, f64);
    let figures: [(&str, Figure); 2] = [
        ("latency", |r| {
            (r.measured.latency_avg, r.latency_ci95.unwrap())
        }),
        ("accepted load", |r| {
            (r.measured.accepted_load, r.accepted_load_ci95.unwrap())
        }),
    ];
    for (name, f) in figures {
        let mean = runs.iter().map(|r| f(r).0).sum::<f64>() / runs.len() as f64;
        let covered = runs
            .iter()
            .filter(|r| {
                let (x, h) = f(r);
                (x - mean).abs() <= h
            })
            .count();
        assert!(
            covered >= 34,
            "{name}: {covered} of 40 intervals cover {mean}"
        );
    }
}

#[test]
fn in_transit_priority_lets_the_passing_packet_win() {
    // Ring of 4, one direction: packet A (0 -> 2) crosses into node 1 in
    // cycle 0 and asks for node 1's output in cycle 1, when packet B
    // (1 -> 2), generated then, asks for it too. Uncontended, A's last
    // phit is consumed by 0 + 2 + 16 - 1 = 17. With random arbitration B
    // wins about half the time and A waits for its 16 phits; with
    // intransit_pr=1, A always wins.
    let a_done = |extra: &[&str], seed: u64| {
        let rseed = format!("rseed={seed}");
        let mut settings = vec!["topo=torus_4", "nways=1", "amode=random", rseed.as_str()];
        settings.extend_from_slice(extra);
        let mut net = Network::new(&cfg(&settings).net).expect("a valid network");
        net.record_deliveries(true);
        net.inject(NewPacket {
            src: 0,
            dst: 2,
            tag: 1,
        })
        .unwrap();
        net.step();
        net.inject(NewPacket {
            src: 1,
            dst: 2,
            tag: 2,
        })
        .unwrap();
        for _ in 0..100 {
            net.step();
        }
        let d: Vec<_> = net.drain_delivered().collect();
        assert_eq!(d.len(), 2);
        d.iter().find(|p| p.tag == 1).unwrap().t_done
    };
    let plain: Vec<u64> = (0..40).map(|s| a_done(&["intransit_pr=0"], s)).collect();
    assert!(
        plain.contains(&17) && plain.iter().any(|&t| t > 17),
        "{plain:?}"
    );
    for s in 0..40 {
        assert_eq!(a_done(&["intransit_pr=1"], s), 17);
    }
    // With timeouts, priority applies only at congested routers: node 1
    // never is within 100 cycles of a 1000-cycle limit.
    let gated: Vec<u64> = (0..40)
        .map(|s| a_done(&["intransit_pr=1", "timeout_upper_limit=1000"], s))
        .collect();
    assert!(gated.iter().any(|&t| t > 17), "{gated:?}");
}

#[test]
fn local_bubble_restriction_throttles_injection_at_saturation() {
    // One VC, oblivious bubble routing at load 1.0 (far beyond saturation):
    // without the restriction the rings fill up; requiring 3 free packets
    // (of 4) in the local queue before injecting keeps them emptier, so
    // fewer packets are inside and they cross faster.
    let base = [
        "topo=torus_8_8",
        "load=1.0",
        "cycles=20000",
        "nchan=1",
        "rmode=oblivious",
        "bsize=1",
    ];
    let free = run(&base);
    let lbr = run(&[&base[..], &["bub_to_adap=3"]].concat());
    assert!(
        lbr.measured.occupancy < 0.7 * free.measured.occupancy,
        "{} vs {}",
        lbr.measured.occupancy,
        free.measured.occupancy
    );
    assert!(lbr.measured.inj_latency_avg < 0.7 * free.measured.inj_latency_avg);
    // With timeouts the restriction applies only at congested routers:
    // none ever is with an unreachable limit (the run equals the free
    // one exactly); with a 20-cycle limit some are, part of the time.
    let never = run(&[
        &base[..],
        &["bub_to_adap=3", "timeout_upper_limit=1000000000"],
    ]
    .concat());
    assert_eq!(
        never.measured.packets_delivered,
        free.measured.packets_delivered
    );
    assert_eq!(never.measured.occupancy, free.measured.occupancy);
    let some = run(&[&base[..], &["bub_to_adap=3", "timeout_upper_limit=20"]].concat());
    assert!(
        lbr.measured.occupancy < some.measured.occupancy
            && some.measured.occupancy < free.measured.occupancy,
        "{} {} {}",
        lbr.measured.occupancy,
        some.measured.occupancy,
        free.measured.occupancy
    );
    // The restriction needs room in the queue and a bubble router.
    for bad in [
        &["bub_to_adap=4"][..],
        &["bub_to_adap=1", "vc=dally", "rmode=trc"],
    ] {
        let e = Config::from_settings(bad).unwrap_err().to_string();
        assert!(e.contains("bub_to_adap"), "{e}");
    }
}

#[test]
fn saturated_direct_networks_keep_delivering() {
    // Every deadlock-free router of the cube family at full load: no
    // deadlock is declared and every batch keeps delivering. With
    // one-phit packets a transfer starts and ends in the same cycle, and
    // so can a delivery.
    for settings in [
        &["topo=torus_8_8"][..],
        &["topo=torus_8_8", "plength=1"],
        &["topo=mesh_8_8", "rmode=oblivious", "plength=1"],
        &["topo=torus_8_8", "vc=dally", "rmode=adaptive", "nchan=3"],
        &[
            "topo=torus_4_4_4",
            "vc=double",
            "rmode=doubleadap",
            "nchan=3",
        ],
        &["topo=mesh_8_8", "rmode=oblivious"],
        &["topo=ttorus_8_4", "sk_xy=2"],
        &["topo=midimew_32"],
        &["topo=circulant_64_8"],
        &["topo=circpk_4_3", "rmode=oblivious"],
        &["topo=spinnaker_8_8", "hol=0"],
    ] {
        common::keeps_delivering(settings);
    }
}

/// INSEE accepts tori and meshes with a dimension of size 1 (`get_conf.c`
/// keeps it with `nodes_y = 1`): nothing crosses it, and INSEE's node ids
/// `x + y nx + z nx ny` are those of the network without it. So
/// `torus_64_1` runs as the ring `torus_64`, and `torus_4_1_4` has the
/// shape of a 4 x 4 torus (diameter 2 + 2, four ports).
#[test]
fn size_one_dimensions_are_absent() {
    let t = summary(&["topo=torus_4_1_4"]);
    assert_eq!((t.nodes, t.diameter, t.ports), (16, 4, 4));
    let m = summary(&["topo=mesh_1_8"]);
    assert_eq!((m.nodes, m.diameter, m.router_links), (8, 7, 7));
    // Below the ring's bisection bound of 8/64 phits/node/cycle.
    let settings = ["cycles=4000", "load=0.05"];
    let with = run(&[&["topo=torus_64_1"], &settings[..]].concat());
    let without = run(&[&["topo=torus_64"], &settings[..]].concat());
    assert!((with.measured.accepted_load - 0.05).abs() < 0.005);
    assert_eq!(with.measured, without.measured);
    let one = Config::from_settings(&["topo=torus_1_1"]).map(|_| ());
    assert!(
        matches!(&one, Err(ConfigError::Combination { key, reason })
            if key == "topo" && reason.contains("at least 2 nodes")),
        "{one:?}"
    );
}
