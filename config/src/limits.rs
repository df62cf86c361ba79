//! Memory a run may take: a configuration whose engine would not fit is
//! refused before anything is simulated (exit 2), instead of growing until
//! the machine swaps or the kernel kills the process.

use std::sync::OnceLock;

use fsin_model::network::Network;

use crate::{Config, ConfigError};

/// The user's cap (`fsin --max-memory MIB`), in bytes.
static MAX_MEMORY: OnceLock<u64> = OnceLock::new();

const MIB: u64 = 1 << 20;

/// Sets the process-wide memory cap, in MiB (`fsin --max-memory`); only
/// the first call counts.
pub fn set_max_memory_mib(mib: u64) {
    let _ = MAX_MEMORY.set(mib.saturating_mul(MIB));
}

/// Checks that the network of `cfg` fits: its estimate
/// ([`Network::memory_estimate`]) against the cap set with
/// [`set_max_memory_mib`], or else the memory the machine has available
/// (`MemAvailable` of /proc/meminfo; no check where it cannot be read).
/// Returns the estimate in bytes.
///
/// # Errors
/// [`ConfigError::Combination`] on `topo`, naming the estimate and the
/// limit.
pub fn check_memory(cfg: &Config) -> Result<u64, ConfigError> {
    let need = Network::memory_estimate(&cfg.net);
    let Some((limit, what)) = memory_limit() else {
        return Ok(need);
    };
    if need > limit {
        return Err(ConfigError::Combination {
            key: "topo".into(),
            reason: format!(
                "this network needs about {} MiB (estimate for {} nodes), more than {what}, {} MiB; \
                 make it smaller (topo, nchan, tql, iql) or raise --max-memory",
                need.div_ceil(MIB),
                cfg.net.nodes(),
                limit / MIB
            ),
        });
    }
    Ok(need)
}

/// The memory a run may take, in bytes, with what that limit is: the cap
/// set with [`set_max_memory_mib`], else the memory the machine has
/// available; `None` where neither is known.
pub fn memory_limit() -> Option<(u64, &'static str)> {
    match MAX_MEMORY.get() {
        Some(&cap) => Some((cap, "the --max-memory cap")),
        None => {
            available_bytes().map(|a| (a, "the memory this machine has available (MemAvailable)"))
        }
    }
}

/// `MemAvailable` of /proc/meminfo, in bytes.
pub fn available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
