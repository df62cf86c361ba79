//! Statistics: counters over a measurement window and the figures FSIN
//! reports from them (INSEE paper, section 2.4.1): injected and accepted load
//! (phits/node/cycle), packets injected / delivered / dropped, network
//! occupancy, average distance, and latency from generation and from
//! injection (mean, standard deviation, maximum, in cycles).

use serde::Serialize;

/// Running count, sum, sum of squares, minimum and maximum of a sample of
/// cycles. The sums are integers, exact in any order, so that samples
/// merged from the parts of a network (`threads`) give the same figures
/// whatever the split.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Moments {
    /// Number of observations.
    pub n: u64,
    sum: u128,
    sum_sq: u128,
    /// Smallest observation (0 for an empty sample).
    pub min: u64,
    /// Largest observation.
    pub max: u64,
}

impl Moments {
    /// Adds one observation.
    #[inline]
    pub fn add(&mut self, x: u64) {
        if self.n == 0 || x < self.min {
            self.min = x;
        }
        self.n += 1;
        self.sum += u128::from(x);
        self.sum_sq += u128::from(x) * u128::from(x);
        self.max = self.max.max(x);
    }

    /// Merges another sample into this one.
    pub fn merge(&mut self, o: &Moments) {
        if o.n > 0 && (self.n == 0 || o.min < self.min) {
            self.min = o.min;
        }
        self.n += o.n;
        self.sum += o.sum;
        self.sum_sq += o.sum_sq;
        self.max = self.max.max(o.max);
    }

    /// Mean (0 for an empty sample).
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum as f64 / self.n as f64
        }
    }

    /// Population standard deviation (0 for an empty sample).
    pub fn std(&self) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        let m = self.mean();
        (self.sum_sq as f64 / self.n as f64 - m * m).max(0.0).sqrt()
    }
}

/// Raw counters of one measurement window. The engine adds to them; the
/// run driver resets them at window boundaries.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    /// Cycles covered by the window.
    pub cycles: u64,
    /// Packets created by the traffic sources.
    pub generated: u64,
    /// Packets that entered the network (left an injection queue).
    pub injected: u64,
    /// Packets whose last phit reached the destination node.
    pub delivered: u64,
    /// Packets dropped (full injection queue with `drop_packets`, or
    /// extracted with `extract`).
    pub dropped: u64,
    /// Phits of injected packets.
    pub phits_injected: u64,
    /// Phits of delivered packets.
    pub phits_delivered: u64,
    /// Latency from generation to delivery of the last phit, cycles.
    pub latency: Moments,
    /// Latency from injection to delivery of the last phit, cycles.
    pub inj_latency: Moments,
    /// Sum of router-to-router hops of delivered packets.
    pub hops: u64,
    /// Sum over cycles of the packets inside the network (in transit
    /// queues or on links), for the mean occupancy.
    pub occupancy: u64,
}

impl Counters {
    /// Figures of this window for a network of `nodes` nodes.
    pub fn summary(&self, nodes: usize) -> Summary {
        let nc = (nodes as f64) * (self.cycles.max(1) as f64);
        Summary {
            cycles: self.cycles,
            injected_load: self.phits_injected as f64 / nc,
            accepted_load: self.phits_delivered as f64 / nc,
            packets_generated: self.generated,
            packets_injected: self.injected,
            packets_delivered: self.delivered,
            packets_dropped: self.dropped,
            latency_avg: self.latency.mean(),
            latency_std: self.latency.std(),
            latency_max: self.latency.max,
            inj_latency_avg: self.inj_latency.mean(),
            inj_latency_std: self.inj_latency.std(),
            inj_latency_max: self.inj_latency.max,
            avg_distance: if self.delivered == 0 {
                0.0
            } else {
                self.hops as f64 / self.delivered as f64
            },
            occupancy: self.occupancy as f64 / self.cycles.max(1) as f64,
        }
    }

    /// Adds another window's counters to this one.
    pub fn merge(&mut self, o: &Counters) {
        self.cycles += o.cycles;
        self.generated += o.generated;
        self.injected += o.injected;
        self.delivered += o.delivered;
        self.dropped += o.dropped;
        self.phits_injected += o.phits_injected;
        self.phits_delivered += o.phits_delivered;
        self.latency.merge(&o.latency);
        self.inj_latency.merge(&o.inj_latency);
        self.hops += o.hops;
        self.occupancy += o.occupancy;
    }
}

/// Derived figures of a window (units in each field's name or doc).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Cycles in the window.
    pub cycles: u64,
    /// Phits/node/cycle that entered the network.
    pub injected_load: f64,
    /// Phits/node/cycle delivered to nodes.
    pub accepted_load: f64,
    /// Packets the sources generated.
    pub packets_generated: u64,
    /// Packets that entered the network.
    pub packets_injected: u64,
    /// Packets consumed at their destinations.
    pub packets_delivered: u64,
    /// Packets dropped (`drop_packets`, `extract`, the SpiNNaker
    /// router's `hol_timeout`).
    pub packets_dropped: u64,
    /// Mean cycles from generation to delivery.
    pub latency_avg: f64,
    /// Their standard deviation, cycles.
    pub latency_std: f64,
    /// Their largest, cycles.
    pub latency_max: u64,
    /// Mean cycles from injection to delivery.
    pub inj_latency_avg: f64,
    /// Their standard deviation, cycles.
    pub inj_latency_std: f64,
    /// Their largest, cycles.
    pub inj_latency_max: u64,
    /// Router-to-router hops per delivered packet.
    pub avg_distance: f64,
    /// Mean number of packets inside the network.
    pub occupancy: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_match_hand_computation() {
        let mut m = Moments::default();
        for x in [2, 4, 4, 4, 5, 5, 7, 9] {
            m.add(x);
        }
        assert_eq!(m.mean(), 5.0);
        assert_eq!(m.std(), 2.0);
        assert_eq!(m.max, 9);
        assert_eq!(m.min, 2);
    }

    #[test]
    fn loads_are_per_node_per_cycle() {
        let c = Counters {
            cycles: 100,
            phits_delivered: 400,
            phits_injected: 800,
            ..Counters::default()
        };
        let s = c.summary(4);
        assert_eq!(s.accepted_load, 1.0);
        assert_eq!(s.injected_load, 2.0);
    }
}
