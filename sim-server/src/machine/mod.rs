//! What this machine can do, for `fsin qemu`'s report ("Where the time
//! went" in docs/qemu.md): the futex floor of a lock-step round
//! ([`floor::floor`]) and one guest's speed alone ([`speed::guest_speed`]).
//! Each is measured once and kept in `$XDG_CACHE_HOME/fsin/FILE` (else
//! `~/.cache/fsin/FILE`) under the machine's cores and kernel, so that a
//! study measures it once.

pub(crate) mod floor;
pub(crate) mod speed;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A cache file: per machine (cores and kernel), figures by key.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Cache {
    machines: BTreeMap<String, BTreeMap<String, f64>>,
}

fn cache_path(file: &str) -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("fsin").join(file))
}

/// This machine's cores, as the cache and the bound of the guests' speed
/// count them.
pub(crate) fn cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// This machine as the cache knows it: its cores and kernel release.
fn machine() -> String {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{} cores, Linux {}", cores(), kernel.trim())
}

/// A figure as measured, and whether to keep it (false: the machine was
/// busy with other work meanwhile, so it may be low).
struct Measured {
    figure: f64,
    keep: bool,
}

/// The figure `key` of cache file `file` (`what` names it in messages):
/// kept from an earlier run on this machine, else `measure`d (and kept
/// when it says so). `None` when it cannot be measured (`measure` says why
/// on stderr); a cache that cannot be written is said on stderr and the
/// figure still returned.
fn cached(
    file: &str,
    what: &str,
    key: &str,
    measure: impl FnOnce() -> Option<Measured>,
) -> Option<f64> {
    let path = cache_path(file);
    let machine = machine();
    let mut cache: Cache = path
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    if let Some(&figure) = cache.machines.get(&machine).and_then(|m| m.get(key)) {
        return Some(figure);
    }
    let Measured { figure, keep } = measure()?;
    if !keep {
        eprintln!("fsin: other work kept this machine busy while it measured {what}: not kept");
        return Some(figure);
    }
    cache
        .machines
        .entry(machine)
        .or_default()
        .insert(key.to_string(), figure);
    if let Some(p) = &path {
        let kept = p
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| {
                std::fs::write(p, serde_json::to_string_pretty(&cache).unwrap_or_default())
            });
        if let Err(e) = kept {
            eprintln!("fsin: cannot keep {what} in {}: {e}", p.display());
        }
    }
    Some(figure)
}

/// CPU seconds this machine's cores have been busy since boot (user,
/// nice, system, interrupts, steal: /proc/stat's first line, at 100 ticks
/// a second); `None` where /proc/stat cannot be read.
fn busy_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let ticks: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .map(|t| t.parse().unwrap_or(0))
        .collect();
    let busy = [0, 1, 2, 5, 6, 7]
        .iter()
        .map(|&i| ticks.get(i).copied().unwrap_or(0));
    Some(busy.sum::<u64>() as f64 / 100.0)
}

/// The cores' busy time over `window`, in cores (0 idle, 1 a core busy);
/// 0 where /proc/stat cannot be read.
fn load(window: std::time::Duration) -> f64 {
    let before = busy_s();
    std::thread::sleep(window);
    before
        .zip(busy_s())
        .map_or(0.0, |(b, a)| (a - b) / window.as_secs_f64())
}

/// Whether the machine is quiet around a measurement: less than a
/// quarter of a core busy over half a second before it
/// ([`Quiet::start`]) and half a second after it ([`Quiet::held`]), so
/// that other work (a study, a build, other tests' guests) did not slow
/// what it measured.
struct Quiet {
    before: f64,
}

/// Busy cores (see [`load`]) below which the machine counts as quiet.
const QUIET_CORES: f64 = 0.25;

/// How long [`Quiet`] looks before and after a measurement.
const QUIET_WINDOW: std::time::Duration = std::time::Duration::from_millis(500);

impl Quiet {
    fn start() -> Quiet {
        Quiet {
            before: load(QUIET_WINDOW),
        }
    }

    /// Whether the machine was quiet before the measurement and is after.
    fn held(&self) -> bool {
        self.before < QUIET_CORES && load(QUIET_WINDOW) < QUIET_CORES
    }
}
