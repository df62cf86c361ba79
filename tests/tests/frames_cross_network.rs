//! Cross-crate: a frame segmented by the bridge crosses the engine as
//! ceil(bytes / (plength * phit_bytes)) packets, all delivered in order of
//! injection to the destination node.

use fsin::config::Config;
use fsin::engine::{Network, NewPacket};

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
    for _ in 0..5000 {
        net.step();
        got.extend(net.drain_delivered().map(|d| d.tag));
        if got.len() == n as usize {
            break;
        }
    }
    got.sort_unstable();
    assert_eq!(got, (0..u64::from(n)).collect::<Vec<_>>());
    assert!(net.is_idle());
}
