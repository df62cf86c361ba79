//! The SpiNNaker topology and router (INSEE paper, sections 2.1.1 and 2.2.4):
//! minimal triangular routes, head-of-line blocking of the single routing
//! engine computed by hand, and discarding as the way out of its
//! deadlocks.

mod common;

use common::{cfg, replay, run};
use fsin::config::Config;

#[test]
fn zero_load_latency_on_the_triangular_torus() {
    // 4x4: (0,0) -> (2,2) takes two diagonal hops, -> (3,1) U- and V+.
    for (dst, hops) in [(10, 2), (7, 2), (5, 1), (15, 1)] {
        let d = replay(&["topo=spinnaker_4_4", "plength=16"], &[(0, 0, dst)], 100);
        assert_eq!(
            (d[0].hops, d[0].t_done - d[0].t_gen),
            (hops, u64::from(hops) + 15)
        );
    }
}

#[test]
fn one_routing_engine_blocks_every_input_behind_its_packet() {
    // Ring of 8, one VC, 16-phit packets, all generated in cycle 0: node 1
    // sends P0 to node 2 (it takes node 1's +X link in cycles 0-15); node 0
    // sends P1 to node 2, whose header reaches node 1 in cycle 1 and must
    // wait there for +X until cycle 16; node 2 sends P2 to node 0, whose
    // header reaches node 1 in cycle 1 too, on the other input, and wants
    // the idle -X link.
    let packets = [(0, 1, 2), (0, 0, 2), (0, 2, 0)];
    let base = ["topo=torus_8", "nchan=1", "rmode=oblivious", "plength=16"];
    let done = |hol: &str| {
        let mut s = base.to_vec();
        s.push(hol);
        let d = replay(&s, &packets, 200);
        assert_eq!(d.len(), 3, "{hol}");
        let mut t = [0; 3];
        for p in d {
            t[p.tag as usize] = p.t_done;
        }
        t
    };
    // Crossbar router: P2 passes at once (two hops: its last phit is
    // consumed in cycle 0 + 2 + 15); P1 leaves node 1 in cycle 16 and is
    // done in 16 + 1 + 15.
    assert_eq!(done("hol=0"), [16, 32, 17]);
    // SpiNNaker router: after serving P0's injection input, the engine
    // takes the inputs in turn from the first: P1's, which holds it until
    // +X frees in cycle 16; only in cycle 17 is P2 routed (done 17 + 1 +
    // 15).
    assert_eq!(done("hol=1"), [16, 32, 33]);
}

#[test]
fn discarding_breaks_the_head_of_line_deadlocks() {
    // One VC and dimension order on an 8x8 triangular torus at full load:
    // an engine held by a packet that waits for a queue only the engines
    // it waits on can drain. Without discards the network freezes: the
    // deadlock detector stops the run and names a cycle of waiting
    // channels. With them (the default timeout) it keeps delivering.
    let base = [
        "topo=spinnaker_8_8",
        "nchan=1",
        "rmode=oblivious",
        "load=1.0",
        "warm_up_period=3000",
        "conv_period=1000",
        "max_conv_time=3000",
        "nsamples=5",
        "sample_size=3000",
    ];
    let mut never = base.to_vec();
    never.push("hol_timeout=0");
    let r = run(&never);
    assert_eq!(r.measured.packets_dropped, 0);
    let dl = r.network_deadlock.expect("a deadlock without discards");
    assert!(dl.cycle < 3000 + 3000 + 5 * 3000, "stopped at {}", dl.cycle);
    assert_eq!(
        r.cycles,
        dl.cycle + 1,
        "the run stops where the deadlock is found"
    );
    let cycle = &dl.cycle_of_channels;
    assert!(cycle.len() >= 2, "{dl}");
    // Each channel waits for the next: the next is at the same router (the
    // engine's holder) or at a neighbour of it on the triangular torus.
    let topo = fsin::topology::Topology::build(&cfg(&never).net).expect("a valid network");
    for (i, w) in cycle.iter().enumerate() {
        let next = &cycle[(i + 1) % cycle.len()];
        let near = w.router == next.router
            || (0..topo.ports())
                .any(|p| topo.neighbour(w.router, p).map(|(v, _)| v) == Some(next.router));
        assert!(near, "{w:?} does not wait for {next:?}");
    }
    let r = run(&base);
    assert!(r.network_deadlock.is_none());
    assert!(r.measured.packets_dropped > 0);
    for b in &r.batches {
        assert!(
            b.packets_delivered > 100,
            "a batch delivered {}",
            b.packets_delivered
        );
    }
}

#[test]
fn spinnaker_defaults_and_refusals() {
    let c = cfg(&["topo=spinnaker_16_16"]);
    assert!(c.net.hol);
    assert_eq!((c.net.nodes(), c.net.ndim(), c.net.bsize), (256, 3, [0; 3]));
    // INSEE's three-size spelling names the same network.
    assert_eq!(cfg(&["topo=spinnaker_16_16_1"]).net.dims, c.net.dims);
    let r = run(&["topo=spinnaker_16_16", "load=0.2", "cycles=20000"]);
    assert!((r.measured.accepted_load - 0.2).abs() / 0.2 < 0.02);
    for (settings, key) in [
        (&["topo=spinnaker_8_8", "vc=dally"][..], "vc"),
        (&["topo=spinnaker_8_8", "amode=random"], "amode"),
        (&["topo=spinnaker_8_8", "bsize=1"], "bsize"),
        (&["topo=fattree_4_2", "hol=1"], "hol"),
    ] {
        let e = Config::from_settings(settings).unwrap_err().to_string();
        assert!(e.contains(&format!("key `{key}`")), "{settings:?}: {e}");
    }
}
