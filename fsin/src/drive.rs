//! The one loop that drives a network engine: synthetic runs
//! ([`crate::sim`]), bursts (shot mode), application workloads
//! ([`crate::workload`]) and the co-simulation coupler (crate `fsin-cosim`)
//! all step the engine through [`drive`], each with its own [`Feed`].
//!
//! Per cycle: the feed hands the network what is due; unless the feed has
//! finished, the engine steps one cycle, or, when nothing is in the network
//! and the feed did nothing, skips straight to the feed's next event
//! (stepping an empty network changes nothing but the clock); the packets
//! delivered go back to the feed. `plevel` outputs ([`Detail`]) see every
//! packet generated, delivered, cycle and idle stretch.

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::engine::{Delivered, Network};
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

/// How [`drive`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The network reached the cycle it was driven to.
    Reached,
    /// [`Feed::finished`] said so.
    Finished,
    /// The poll asked to stop (a signal, for instance).
    Stopped,
}

/// Cycles between two polls (a poll also follows every idle skip, which
/// may jump past them).
pub const POLL_CYCLES: u64 = 4096;

/// Steps `net`, fed by `feed`, up to cycle `until` (exclusive) or until the
/// feed finishes. `poll` runs every [`POLL_CYCLES`] cycles and after every
/// idle skip (progress bars, signals); it returns whether to go on.
pub fn drive<F: Feed + ?Sized>(
    net: &mut Network,
    feed: &mut F,
    mut detail: Option<&mut Detail>,
    until: u64,
    mut poll: impl FnMut(&Network, &F) -> bool,
) -> Ended {
    while net.now() < until {
        let now = net.now();
        let busy = feed.inject_due(now, net, detail.as_deref_mut());
        if feed.finished(net) {
            return Ended::Finished;
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
        if (now.is_multiple_of(POLL_CYCLES) || net.now() > now + 1) && !poll(net, feed) {
            return Ended::Stopped;
        }
    }
    Ended::Reached
}

/// The progress bar of a long drive, on stderr (drawn only on a terminal):
/// it appears once the drive has lasted a second.
pub struct Progress {
    bar: Option<ProgressBar>,
    started: Instant,
    template: &'static str,
}

impl Progress {
    /// A bar in indicatif's `template` (e.g. `{spinner} cycle {pos}`) for a
    /// drive that started at `started`.
    pub fn new(template: &'static str, started: Instant) -> Progress {
        Progress {
            bar: None,
            started,
            template,
        }
    }

    /// The bar, at cycle `now`; `None` during the first second.
    pub fn at(&mut self, now: u64) -> Option<&ProgressBar> {
        if self.bar.is_none() && self.started.elapsed() > Duration::from_secs(1) {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            b.set_style(ProgressStyle::with_template(self.template).expect("valid template"));
            self.bar = Some(b);
        }
        let bar = self.bar.as_ref()?;
        bar.set_position(now);
        Some(bar)
    }

    /// Shows `msg` on the bar, if it is up.
    pub fn message(&self, msg: &'static str) {
        if let Some(b) = &self.bar {
            b.set_message(msg);
        }
    }

    /// Clears the bar.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
