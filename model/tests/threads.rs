//! One network on several threads (`threads`): its parts must deliver
//! every packet at the same cycle, with the same record, as the network in
//! one part, and end with the same counters, on every topology family and
//! switching. CI also runs this file in a debug build, so that the
//! engine's assertions (queue capacities, the occupancy copies of the
//! output VCs, sleeping requests) check the parts and their mail.

use fsin_config::Config;
use fsin_model::engine::{Delivered, NewPacket};
use fsin_model::network::Network;
use fsin_model::stats::Counters;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg32;

/// Uniform traffic from a seeded generator of the test's own, `rate`
/// packets per node per cycle, for `cycles` cycles; every delivery and the
/// counters at the end.
fn run(settings: &[&str], threads: u32, rate: f64, cycles: u64) -> (Vec<Delivered>, Counters) {
    let mut all: Vec<String> = settings.iter().map(|s| s.to_string()).collect();
    all.push(format!("threads={threads}"));
    let cfg = Config::from_settings(&all).expect("valid settings");
    let mut net = Network::new(&cfg.net).expect("a valid network");
    let routers = net.topology().routers();
    let one_part = cfg.net.wormhole || (cfg.net.hol && cfg.net.hol_timeout > 0);
    let expected = if one_part {
        1
    } else {
        routers.min(threads as usize)
    };
    assert_eq!(net.parts(), expected, "{settings:?}");
    net.record_deliveries(true);
    let nodes = net.nodes() as u32;
    let mut traffic = Pcg32::seed_from_u64(11);
    let mut out = Vec::new();
    for _ in 0..cycles {
        for src in 0..nodes {
            if traffic.gen_bool(rate) && net.source_backlog(src) < 8 {
                let dst = (src + traffic.gen_range(1..nodes)) % nodes;
                net.inject(NewPacket {
                    src,
                    dst,
                    tag: u64::from(src) << 32 | net.now(),
                })
                .unwrap();
            }
        }
        net.step();
        out.extend(net.drain_delivered());
        assert!(net.deadlock().is_none(), "{settings:?}: deadlock");
    }
    (out, net.counters.clone())
}

/// Past saturation (rate 0.08 packets of 16 phits: 1.3 phits/node/cycle
/// offered) so that queues fill, requests block and sleep, and packets
/// cross between parts every cycle.
#[test]
fn every_split_delivers_the_same_packets_at_the_same_cycles() {
    for settings in [
        &["topo=torus_8_8"][..],
        &["topo=torus_8_8", "rmode=oblivious", "imode=dor"],
        &["topo=mesh_6_6", "rmode=shortest", "nchan=3"],
        &["topo=torus_8_8", "vc=dally", "rmode=adaptive", "nchan=3"],
        &["topo=fattree_4_3"],
        &["topo=thintree_4_2_3", "routing=static"],
        &["topo=spinnaker_8_8", "hol=1", "hol_timeout=0"],
        &["topo=spinnaker_8_8", "hol=1", "hol_timeout=40"],
        &["topo=torus_8_8", "extract=1", "cmode=single", "amode=age"],
        &["topo=mesh_6_6", "switching=wormhole", "bsize=0", "tql=1"],
    ] {
        let cycles = 1500;
        let (one, c1) = run(settings, 1, 0.08, cycles);
        assert!(one.len() > 1000, "{settings:?}: {} deliveries", one.len());
        for threads in [2, 3] {
            let (many, cn) = run(settings, threads, 0.08, cycles);
            assert_eq!(one.len(), many.len(), "{settings:?} threads={threads}");
            if let Some(i) = (0..one.len()).find(|&i| one[i] != many[i]) {
                panic!(
                    "{settings:?} threads={threads}: delivery {i} is {:?}, one part gave {:?}",
                    many[i], one[i]
                );
            }
            assert_eq!(c1, cn, "{settings:?} threads={threads}");
        }
    }
}

/// More threads than routers: a part per router at most, same deliveries.
#[test]
fn more_threads_than_routers_is_a_part_per_router() {
    let settings = &["topo=torus_2_2"];
    let (one, _) = run(settings, 1, 0.05, 400);
    let (many, _) = run(settings, 9, 0.05, 400);
    assert!(one.len() > 50, "{} deliveries", one.len());
    assert_eq!(one, many);
}
