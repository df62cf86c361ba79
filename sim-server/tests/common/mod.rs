//! Helpers shared by the engine's integration tests (each test file uses
//! some of them).
#![allow(dead_code)]

use fsin::config::Config;
use fsin::engine::{Delivered, NewPacket};
use fsin::network::Network;
use fsin::run::{Report, RunOptions};
use fsin::sim;

/// `fsin topology` of the network of `settings`.
pub fn summary(settings: &[&str]) -> fsin::topology::TopologySummary {
    let c = cfg(settings);
    fsin::topology::summary(&c.net, c.topology_name()).expect("a valid network")
}

/// Every ordered pair of distinct nodes of `c`'s network sends one packet
/// at cycle 0; the network steps until all are delivered or `cycles`
/// pass. The network after, and the deliveries in order.
pub fn deliver_all_pairs(c: &Config, cycles: u64) -> (Network, Vec<Delivered>) {
    let mut net = Network::new(&c.net).expect("a valid network");
    net.record_deliveries(true);
    let n = c.net.nodes() as u32;
    for src in 0..n {
        for dst in (0..n).filter(|&d| d != src) {
            net.inject(NewPacket { src, dst, tag: 0 }).unwrap();
        }
    }
    let total = (n * (n - 1)) as usize;
    let mut got = Vec::new();
    for _ in 0..cycles {
        net.step();
        got.extend(net.drain_delivered());
        if got.len() == total {
            break;
        }
    }
    (net, got)
}

/// A validated configuration from `key=value` settings.
pub fn cfg(settings: &[&str]) -> Config {
    Config::from_settings(settings).expect("valid configuration")
}

/// A synthetic run of `settings`.
pub fn run(settings: &[&str]) -> Report {
    sim::run(&cfg(settings), RunOptions::default()).expect("synthetic runs do not fail")
}

/// Injects `(cycle, src, dst)` packets (tag = index) into an empty network
/// and returns the deliveries of the first `cycles` cycles.
pub fn replay(settings: &[&str], packets: &[(u64, u32, u32)], cycles: u64) -> Vec<Delivered> {
    let mut net = Network::new(&cfg(settings).net).expect("a valid network");
    net.record_deliveries(true);
    let mut out = Vec::new();
    for now in 0..cycles {
        for (tag, &(at, src, dst)) in packets.iter().enumerate() {
            if at == now {
                net.inject(NewPacket {
                    src,
                    dst,
                    tag: tag as u64,
                })
                .unwrap();
            }
        }
        net.step();
        out.extend(net.drain_delivered());
    }
    out
}

/// One packet through an empty network: (links crossed, latency).
pub fn single_packet(settings: &[&str], src: u32, dst: u32) -> (u32, u64) {
    let d = replay(settings, &[(0, src, dst)], 1000);
    let p = d.first().expect("packet delivered");
    assert_eq!((p.src, p.dst), (src, dst));
    (p.hops, p.t_done - p.t_gen)
}

/// Runs `settings` at full load (warm-up, convergence, six batches) and
/// checks that the network never freezes: no deadlock reported and every
/// batch accepts more than half the mean. Returns the report.
pub fn keeps_delivering(settings: &[&str]) -> Report {
    let mut s = settings.to_vec();
    s.extend([
        "load=1.0",
        "warm_up_period=3000",
        "conv_period=1000",
        "max_conv_time=3000",
        "nsamples=6",
        "sample_size=2500",
    ]);
    let r = run(&s);
    assert!(r.network_deadlock.is_none(), "{settings:?}: deadlock");
    let mean = r.measured.accepted_load;
    assert!(mean > 0.05, "{settings:?}: {mean}");
    for (i, b) in r.batches.iter().enumerate() {
        assert!(
            b.accepted_load > 0.5 * mean,
            "{settings:?}: batch {i} accepted {} of a mean {mean}",
            b.accepted_load
        );
    }
    r
}

/// A scratch directory for one test's files, removed when dropped.
pub struct Dir(pub std::path::PathBuf);

impl Dir {
    /// `fsin-NAME-PID` in the system's temporary directory.
    pub fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("fsin-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    /// Writes `text` to the file `name` in it; its path.
    pub fn file(&self, name: &str, text: &str) -> String {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        self.path(name)
    }

    /// The path of `name` in it.
    pub fn path(&self, name: &str) -> String {
        self.0.join(name).to_str().unwrap().to_string()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
