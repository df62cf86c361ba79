//! Node-side library for coupling node simulators (QEMU guests, Simics
//! modules, the `fake-node` emulator) to the `fsin` co-simulation server.
//!
//! The client API (attach, send a frame with its node-cycle stamp, end a
//! slice, wait for `Continue`, poll delivered frames) arrives with the
//! co-simulation server issue. This crate already fixes the slice arithmetic
//! both sides share (seed 003, section 3: a slice of `node_cycles` node
//! cycles is matched to `net_cycles` network cycles).

pub use fsin_proto::PROTOCOL_VERSION;

/// Ratio between node-simulator cycles and network cycles in one slice
/// (INSEE `simics_cycle_relation` : `fsin_cycle_relation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SliceRatio {
    /// Network cycles simulated per slice (`fsin_cycle_relation`).
    pub net_cycles: u64,
    /// Node-simulator cycles per slice (`simics_cycle_relation`).
    pub node_cycles: u64,
}

impl SliceRatio {
    /// Link bandwidth seen by the nodes, in bits per second, for a node
    /// clock of `node_hz` Hz and phits of `phit_bytes` bytes: one phit per
    /// network cycle, `net_cycles` network cycles per `node_cycles` node
    /// cycles (seed 003, section 4: 200 MHz, 4-byte phits, 1000:200 gives
    /// 1280 Mb/s).
    pub fn link_bits_per_second(&self, node_hz: f64, phit_bytes: u32) -> f64 {
        node_hz * self.net_cycles as f64 / self.node_cycles as f64 * f64::from(phit_bytes) * 8.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_003_bandwidth_example() {
        let r = SliceRatio {
            net_cycles: 200,
            node_cycles: 1000,
        };
        assert_eq!(r.link_bits_per_second(200e6, 4), 1280e6);
    }
}
