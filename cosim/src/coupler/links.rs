//! The links' load over a co-simulation's measured phase, window by
//! window, and the network's counters kept for a timeline.

use fsin::counters::NetworkCounters;
use fsin::network::Network;
use fsin::timeline::CounterWindow;

use super::slice::Slice;

/// The links' load over the measured phase: packets per link since it
/// started, and the busiest link over windows of `window` network cycles.
#[derive(Debug, Default)]
pub(super) struct LinkWatch {
    /// Packets per link (router x ports + port) and network cycle at the
    /// start of the measured phase, and at the start of the current window
    /// (the one window base: the busiest link's peak and the timeline's
    /// counters both count from it).
    pub(super) base: Vec<u64>,
    pub(super) from: u64,
    pub(super) window_base: Vec<u64>,
    pub(super) window_from: u64,
    /// The node cycle the current window started at.
    pub(super) window_node_from: u64,
    /// Network cycles per window.
    pub(super) window: u64,
    /// Most phits per cycle any link carried in one window (at most 1),
    /// and the windows ended.
    pub(super) peak: f64,
    pub(super) windows: u64,
    /// Phits delivered before the current window, and the most phits per
    /// node and cycle the network delivered in one window.
    pub(super) window_phits: u64,
    pub(super) load_peak: f64,
    /// The network's counters of every window, kept for a timeline
    /// ([`Coupler::record_counters`]).
    pub(super) log: Option<CounterLog>,
}

/// The counters of the windows ended since they were last taken.
#[derive(Debug)]
pub(super) struct CounterLog {
    pub(super) counters: NetworkCounters,
    pub(super) windows: Vec<CounterWindow>,
}

impl LinkWatch {
    /// The network cycle at which the current window ends.
    pub(super) fn window_end(&self) -> u64 {
        self.window_from + self.window.max(1)
    }

    /// Ends the current window at `net`'s cycle, in `slice`: its busiest
    /// link's utilization and its accepted load may be the new peaks; its
    /// counters are kept if asked.
    pub(super) fn close(&mut self, net: &Network, plength: u32, slice: &Slice) {
        let now = net.now();
        let delivered = net.counters.phits_delivered;
        let phits = delivered - self.window_phits;
        let packets = net.link_packets();
        if let Some(log) = self.log.as_mut() {
            let mut values = Vec::with_capacity(log.counters.names().len());
            let cycles = now - self.window_from;
            (log.counters).values(&self.window_base, &packets, phits, cycles, &mut values);
            let from = self.window_node_from;
            log.windows.push(CounterWindow {
                from,
                length: slice.node_of(now).saturating_sub(from),
                values,
            });
        }
        self.window_node_from = slice.node_of(now);
        let cycles = (now - self.window_from).max(1) as f64;
        let most = (packets.iter())
            .zip(&self.window_base)
            .map(|(n, b)| n - b)
            .max()
            .unwrap_or(0);
        // A packet counts whole in the window its header crossed the link
        // in, so a window may hold up to one packet's phits beyond its end
        // (1 + plength / window cycles: 1.04 for 8-phit packets in a
        // 200-cycle window). A link carries at most one phit per cycle.
        self.peak = self
            .peak
            .max((most as f64 * f64::from(plength) / cycles).min(1.0));
        let load = phits as f64 / net.nodes() as f64 / cycles;
        self.load_peak = self.load_peak.max(load);
        self.window_phits = delivered;
        self.windows += 1;
        self.window_base = packets;
        self.window_from = now;
    }
}
