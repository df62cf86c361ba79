//! Bounds on the numbers of the command line: every duration
//! is checked against [`sync_client::MAX_WAIT_S`] before it becomes a
//! [`Duration`], so that no option overflows a clock.

use std::time::Duration;

use fsin::config::{ConfigError, Origin};
use sync_client::MAX_WAIT_S;

/// Seconds given as option `key`: finite, positive (or zero when `zero`
/// may be given, e.g. "no limit") and at most [`MAX_WAIT_S`].
///
/// # Errors
/// [`ConfigError::BadValue`] naming `key`, the value and the range.
pub(crate) fn seconds(key: &str, v: f64, zero: bool) -> Result<Duration, ConfigError> {
    let low_ok = if zero { v >= 0.0 } else { v > 0.0 };
    if v.is_finite() && low_ok && v <= MAX_WAIT_S {
        return Ok(Duration::from_secs_f64(v));
    }
    Err(ConfigError::BadValue {
        key: key.into(),
        value: sync_client::seconds_shown(v),
        origin: Origin::CommandLine,
        reason: format!(
            "expected seconds, {} to {MAX_WAIT_S} (a week)",
            if zero { "0" } else { "more than 0" }
        ),
    })
}
