//! Cross-crate: a frame segmented by the bridge crosses the engine as
//! ceil(bytes / (plength * phit_bytes)) packets, all delivered in order of
//! injection to the destination node, no sooner than the injection link
//! can carry their phits (one phit per cycle).

use fsin::config::Config;
use fsin::engine::NewPacket;
use fsin::network::Network;

#[test]
fn frame_packets_all_arrive() {
    let cfg = Config::from_settings(&["topo=torus_4_4", "plength=16_4"]).unwrap();
    let n = fsin_frames::packets_for_frame(1514, cfg.net.plength, cfg.phit_bytes).unwrap();
    assert_eq!(n, 24); // 1514 / 64 rounded up
    let mut net = Network::new(&cfg.net).expect("a valid network");
    net.record_deliveries(true);
    for k in 0..n {
        net.inject(NewPacket {
            src: 1,
            dst: 14,
            tag: u64::from(k),
        })
        .unwrap();
    }
    let mut got = Vec::new();
    let mut cycles = 0;
    while got.len() < n as usize && cycles < 5000 {
        net.step();
        cycles += 1;
        got.extend(net.drain_delivered().map(|d| d.tag));
    }
    assert_eq!(got, (0..u64::from(n)).collect::<Vec<_>>());
    // 24 packets of 16 phits leave node 1 back to back, one phit per
    // cycle, on a free path: the last phit is out at step 384 and needs 2
    // more hops (node 1 is (1, 0), node 14 is (2, 3)) to reach node 14.
    assert_eq!(cycles, 24 * 16 + 2, "steps until all were delivered");
    assert!(net.is_idle());
}
