//! Warnings about what strangers send (garbage datagrams, unknown tokens),
//! rate-limited: a flood of them must neither fill the log nor slow the run.

use std::time::{Duration, Instant};

/// Warnings shown in full before the rest are only counted.
const SHOWN: u64 = 5;
/// How often the count of the warnings not shown is logged.
const SUMMARY_EVERY: Duration = Duration::from_secs(10);

/// One kind of warning: the first [`SHOWN`] are logged, then one summary
/// line every 10 s with the number not shown and the last of them, and a
/// last summary when it is dropped.
pub struct WarnLimit {
    what: &'static str,
    total: u64,
    unshown: u64,
    last: String,
    summary_at: Instant,
}

impl WarnLimit {
    /// A limit for warnings about `what` (e.g. "bad datagrams"), used in
    /// the summary lines.
    pub fn new(what: &'static str) -> WarnLimit {
        WarnLimit {
            what,
            total: 0,
            unshown: 0,
            last: String::new(),
            summary_at: Instant::now() + SUMMARY_EVERY,
        }
    }

    /// Logs `message` (built only when it is shown or kept as the last).
    pub fn warn(&mut self, message: impl FnOnce() -> String) {
        self.total += 1;
        if self.total <= SHOWN {
            tracing::warn!("{}", message());
            if self.total == SHOWN {
                tracing::warn!("further {} are counted, not shown one by one", self.what);
            }
            return;
        }
        self.unshown += 1;
        let now = Instant::now();
        if now >= self.summary_at {
            self.last = message();
            self.summary(now);
        }
    }

    fn summary(&mut self, now: Instant) {
        if self.unshown > 0 {
            tracing::warn!(
                "{} more {} ({} in all); the last: {}",
                self.unshown,
                self.what,
                self.total,
                self.last
            );
            self.unshown = 0;
        }
        self.summary_at = now + SUMMARY_EVERY;
    }
}

impl Drop for WarnLimit {
    fn drop(&mut self) {
        if self.unshown > 0 {
            tracing::warn!(
                "{} more {} not shown ({} in all)",
                self.unshown,
                self.what,
                self.total
            );
        }
    }
}
