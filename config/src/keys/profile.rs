//! `mpi_profile`: a calibrated profile's `mpi_*` settings applied over
//! the MPI layer's costs without a profile (docs/model.md, "Replaying an
//! MPI-level trace").

use std::path::PathBuf;

use super::lookup;
use super::values::ValueError;
use crate::{Config, MpiProfile};

/// The largest profile read (`mpi_profile`, 64 KiB: a few dozen lines).
const MAX_PROFILE_BYTES: u64 = 64 << 10;

/// `mpi_profile=PATH`: applies the file's `mpi_*` settings (key=value
/// lines, `#` comments), in its order, over the costs without a profile
/// ([`without_profile`]: those set before are dropped); `default`: the
/// built-in profile; `none` or empty: the costs without a profile (the
/// straight line). Only the MPI layer's keys may appear, so that a
/// profile cannot change the network.
pub(super) fn set_mpi_profile(c: &mut Config, value: &str) -> Result<(), ValueError> {
    use crate::files::{read_bounded, ReadError};
    match value {
        "default" => {
            apply_built_in_profile(c);
            return Ok(());
        }
        "" | "none" => {
            without_profile(c);
            c.traffic.app.mpi_profile = MpiProfile::None;
            return Ok(());
        }
        _ => {}
    }
    let text = read_bounded(std::path::Path::new(value), MAX_PROFILE_BYTES).map_err(|e| {
        let reason = match e {
            ReadError::Io(e) => format!("cannot read it: {e}"),
            ReadError::TooLong => {
                format!("longer than {} KiB: not a profile", MAX_PROFILE_BYTES >> 10)
            }
        };
        ValueError::Profile {
            path: value.to_string(),
            line: 0,
            reason,
        }
    })?;
    apply_profile(c, &text, value)?;
    c.traffic.app.mpi_profile = MpiProfile::File(PathBuf::from(value));
    Ok(())
}

/// Sets the MPI layer's costs of `c`, the keys a calibrated profile
/// writes (`mpi_costs`, `mpi_message_ns`, `mpi_byte_ps`, `mpi_wake_ns`,
/// `mpi_rx_ns`, `mpi_arp_rx_ns`, `mpi_irq_window_ns`, `mpi_connect_ns`,
/// `mpi_event_tick_ns`, `mpi_tcp_acks`),
/// to the model's without a profile; its other keys (the eager limit,
/// segments and headers, the handshake) stay as they are.
fn without_profile(c: &mut Config) {
    let none = fsin_trace::mpi::lower::MpiModel::default();
    let m = &mut c.traffic.app.mpi;
    m.costs = none.costs;
    m.message_ns = none.message_ns;
    m.byte_ps = none.byte_ps;
    m.wake_ns = none.wake_ns;
    m.rx_ns = none.rx_ns;
    m.arp_rx_ns = none.arp_rx_ns;
    m.irq_window_ns = none.irq_window_ns;
    m.connect_ns = none.connect_ns;
    m.event_tick_ns = none.event_tick_ns;
    m.tcp_acks = none.tcp_acks;
}

/// Applies a profile's `text` to `c` in its order, over the costs
/// without a profile ([`without_profile`]); `path` names it in errors.
///
/// # Errors
/// [`ValueError::Profile`]: a line that is not `key=value`, a key that is
/// not the MPI layer's, or a value its key refuses (the line named).
fn apply_profile(c: &mut Config, text: &str, path: &str) -> Result<(), ValueError> {
    let bad = |line: usize, reason: String| ValueError::Profile {
        path: path.to_string(),
        line,
        reason,
    };
    without_profile(c);
    for (n, line) in crate::files::setting_lines(text) {
        let Some((key, v)) = line.split_once('=') else {
            return Err(bad(n, format!("`{line}` is not key=value")));
        };
        let spec = lookup(key.trim())
            .filter(|k| k.names[0].starts_with("mpi_") && k.names[0] != "mpi_profile")
            .ok_or_else(|| {
                bad(
                    n,
                    format!(
                        "`{}`: a profile sets only the MPI layer's keys (mpi_*, not mpi_profile)",
                        key.trim()
                    ),
                )
            })?;
        (spec.apply)(c, v.trim()).map_err(|e| bad(n, format!("{}: {e}", key.trim())))?;
    }
    Ok(())
}

/// Sets `c`'s MPI layer to the built-in profile
/// ([`crate::BUILT_IN_PROFILE`], over the model without a profile).
pub(crate) fn apply_built_in_profile(c: &mut Config) {
    apply_profile(c, crate::BUILT_IN_PROFILE, "the built-in profile")
        .unwrap_or_else(|e| unreachable!("the built-in profile applies (tested): {e}"));
    c.traffic.app.mpi_profile = MpiProfile::BuiltIn;
}
