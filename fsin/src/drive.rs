//! The one loop that drives a network engine: synthetic runs
//! ([`crate::sim`]), bursts (shot mode), application workloads
//! ([`crate::workload`]) and the co-simulation coupler (crate `fsin-cosim`)
//! all step the engine through [`run_feed`], each with its own [`Feed`].
//!
//! Per cycle: the feed hands the network what is due; unless the feed has
//! finished, the engine steps one cycle, or, when nothing is in the network
//! and the feed did nothing, skips straight to the feed's next event
//! (stepping an empty network changes nothing but the clock); the packets
//! delivered go back to the feed. `plevel` outputs ([`Detail`]) see every
//! packet generated, delivered, cycle and idle stretch.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use crate::engine::Delivered;

use crate::network::Network;
use crate::stats::detail::Detail;

/// What feeds an engine cycle by cycle: a traffic source, a trace replay,
/// or the frames of node simulators.
pub trait Feed {
    /// Hands `net` what is due at cycle `now` (`detail`, when given, sees
    /// each packet generated); returns whether anything happened that the
    /// network's state does not show (a packet generated, a task's state
    /// changed), which rules out skipping this cycle.
    fn inject_due(&mut self, now: u64, net: &mut Network, detail: Option<&mut Detail>) -> bool;

    /// Whether the drive ends before simulating the current cycle (asked
    /// after [`Feed::inject_due`]): the workload finished or can never
    /// finish, the network deadlocked. Default: never.
    fn finished(&self, _net: &Network) -> bool {
        false
    }

    /// The first cycle after `now` at which something may be due, asked
    /// when the network is idle; `None`: nothing before the end of the
    /// drive.
    fn next_due(&self, now: u64) -> Option<u64>;

    /// A packet `net` delivered (only when it records deliveries,
    /// [`Network::record_deliveries`]).
    fn delivered(&mut self, packet: &Delivered);
}

/// How [`run_feed`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedEnd {
    /// The network reached the cycle it was driven to.
    Reached,
    /// [`Feed::finished`] said so.
    Finished,
    /// The poll asked to stop (a signal, for instance).
    Stopped,
}

/// Cycles between two polls at most (a poll also follows every idle skip,
/// which may jump past them).
pub const POLL_CYCLES: u64 = 4096;

/// Node-cycles of work between two polls: 4 096 cycles of an 8x8 network,
/// 256 of a 32x32 one. A loaded 32x32 torus runs about 4 000 cycles a
/// second on this project's 2-core machines, so that a fixed 4 096 cycles
/// kept Ctrl-C waiting for up to a second there.
const POLL_WORK: u64 = 1 << 18;

/// Network cycles between two polls of a network of `nodes` nodes: about
/// [`POLL_WORK`] node-cycles, a power of two from 1 to [`POLL_CYCLES`].
pub fn poll_cycles(nodes: usize) -> u64 {
    let per = (POLL_WORK / nodes.max(1) as u64).max(1);
    (1u64 << per.ilog2()).min(POLL_CYCLES)
}

/// Steps `net`, fed by `feed`, up to cycle `until` (exclusive) or until the
/// feed finishes. `poll` runs every [`poll_cycles`] cycles and after every
/// idle skip (progress bars, signals); it returns whether to go on.
pub fn run_feed<F: Feed + ?Sized>(
    net: &mut Network,
    feed: &mut F,
    mut detail: Option<&mut Detail>,
    until: u64,
    mut poll: impl FnMut(&Network, &F) -> bool,
) -> FeedEnd {
    let every = poll_cycles(net.nodes());
    while net.now() < until {
        let now = net.now();
        let busy = feed.inject_due(now, net, detail.as_deref_mut());
        if feed.finished(net) {
            return FeedEnd::Finished;
        }
        if !busy && net.is_idle() {
            let next = feed.next_due(now).unwrap_or(until).min(until);
            net.skip_idle(next - now);
            if let Some(d) = detail.as_deref_mut() {
                d.idle(next - now);
            }
        } else {
            net.step();
            for d in net.drain_delivered() {
                feed.delivered(&d);
                if let Some(det) = detail.as_deref_mut() {
                    det.delivered(&d);
                }
            }
            if let Some(d) = detail.as_deref_mut() {
                d.cycle(net);
            }
        }
        // `every` is a power of two: the mask is the remainder.
        if (now & (every - 1) == 0 || net.now() > now + 1) && !poll(net, feed) {
            return FeedEnd::Stopped;
        }
    }
    FeedEnd::Reached
}

/// The phase of a run, as a progress line names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunPhase {
    /// Building the network, before the first cycle.
    Starting = 0,
    /// TrGen's warm-up (`warm_up_period` cycles).
    WarmUp = 1,
    /// Waiting for the accepted load to converge (INSEE's methodology).
    Convergence = 2,
    /// The measured batches (`nsamples` of `sample_size` cycles).
    Sampling = 3,
    /// A run of `cycles` measured cycles, or the bursts of shot mode.
    Measuring = 4,
    /// A trace or kernel replayed to its end.
    Replaying = 5,
}

impl RunPhase {
    const ALL: [RunPhase; 6] = [
        RunPhase::Starting,
        RunPhase::WarmUp,
        RunPhase::Convergence,
        RunPhase::Sampling,
        RunPhase::Measuring,
        RunPhase::Replaying,
    ];

    /// The phase's name in progress lines (`warm-up`, `sampling`, ...).
    pub fn name(self) -> &'static str {
        match self {
            RunPhase::Starting => "starting",
            RunPhase::WarmUp => "warm-up",
            RunPhase::Convergence => "convergence",
            RunPhase::Sampling => "sampling",
            RunPhase::Measuring => "measuring",
            RunPhase::Replaying => "replaying",
        }
    }
}

/// What a run has done so far, shared with whoever shows its progress
/// (the `fsin` binary's status line reads it from another thread): the
/// phase, the network cycle reached and, when the run ends with the phase,
/// the cycle it ends at. The run writes it with relaxed atomic stores at
/// every poll of [`run_feed`] (every [`poll_cycles`] cycles), so a reader may
/// see a phase with the previous phase's cycle for a moment.
#[derive(Debug, Default)]
pub struct RunStatus {
    phase: AtomicU8,
    cycle: AtomicU64,
    /// Cycle at which the run ends, plus one; 0: not known.
    end: AtomicU64,
    /// Trace replay: messages sent and delivered so far.
    sent: AtomicU64,
    delivered: AtomicU64,
}

/// A copy of a [`RunStatus`] at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunSnapshot {
    /// The phase the run is in.
    pub phase: RunPhase,
    /// Network cycles simulated so far.
    pub cycle: u64,
    /// The cycle the run ends at, when the current phase is its last and
    /// has a known length.
    pub end: Option<u64>,
    /// Trace replay: (messages sent, messages delivered) so far.
    pub messages: Option<(u64, u64)>,
}

impl RunStatus {
    /// Enters `phase`; `end`: the cycle the run ends at, if this phase is
    /// its last and has a known length.
    pub fn set_phase(&self, phase: RunPhase, end: Option<u64>) {
        self.end
            .store(end.map_or(0, |e| e.saturating_add(1)), Ordering::Relaxed);
        self.phase.store(phase as u8, Ordering::Relaxed);
    }

    /// The network has simulated `cycle` cycles.
    pub fn set_cycle(&self, cycle: u64) {
        self.cycle.store(cycle, Ordering::Relaxed);
    }

    /// A trace replay has sent and delivered these many messages.
    pub fn set_messages(&self, sent: u64, delivered: u64) {
        self.sent.store(sent, Ordering::Relaxed);
        self.delivered.store(delivered, Ordering::Relaxed);
    }

    /// The status now.
    pub fn snapshot(&self) -> RunSnapshot {
        let phase = RunPhase::ALL
            .get(usize::from(self.phase.load(Ordering::Relaxed)))
            .copied()
            .unwrap_or(RunPhase::Starting);
        let end = self.end.load(Ordering::Relaxed);
        RunSnapshot {
            phase,
            cycle: self.cycle.load(Ordering::Relaxed),
            end: end.checked_sub(1),
            messages: (phase == RunPhase::Replaying).then(|| {
                (
                    self.sent.load(Ordering::Relaxed),
                    self.delivered.load(Ordering::Relaxed),
                )
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::poll_cycles;

    /// By hand: 2^18 node-cycles over 64 nodes is 4 096 cycles, over 1 024
    /// nodes 256, over 1 000 nodes 262 (rounded down to 256); small
    /// networks keep the cap, huge ones poll every cycle.
    #[test]
    fn polls_come_after_about_the_same_work_on_any_network() {
        assert_eq!(poll_cycles(64), 4096);
        assert_eq!(poll_cycles(16), 4096);
        assert_eq!(poll_cycles(0), 4096);
        assert_eq!(poll_cycles(1024), 256);
        assert_eq!(poll_cycles(1000), 256);
        assert_eq!(poll_cycles(4096), 64);
        assert_eq!(poll_cycles(1 << 20), 1);
    }
}
