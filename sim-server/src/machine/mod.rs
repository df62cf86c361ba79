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

/// What a figure's measurement does on a busy machine (more than
/// [`QUIET_CORES`] busy in the [`QUIET_WINDOW`] before it): `Measure`
/// anyway (for this report only, cheap), or `Skip` it (a measurement that
/// takes seconds, which a busy machine would pay run after run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WhenBusy {
    Measure,
    Skip,
}

/// The figure `key` of cache file `file` (`what` names it in messages):
/// kept from an earlier run on this machine, else `measure`d, and kept
/// when the machine was quiet in the half second before and after (see
/// [`load`]). `None` when it cannot be measured (`measure` says why on
/// stderr) or is skipped on a busy machine; a cache that cannot be written
/// is said on stderr and the figure still returned.
fn cached(
    file: &str,
    what: &str,
    key: &str,
    when_busy: WhenBusy,
    measure: impl FnOnce() -> Option<f64>,
) -> Option<f64> {
    let path = cache_path(file);
    let machine = machine();
    let read = |p: &PathBuf| -> Cache {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    };
    let cache = path.as_ref().map(read).unwrap_or_default();
    if let Some(&figure) = cache.machines.get(&machine).and_then(|m| m.get(key)) {
        return Some(figure);
    }
    let quiet_before = load(QUIET_WINDOW) < QUIET_CORES;
    if !quiet_before && when_busy == WhenBusy::Skip {
        eprintln!("fsin: this machine is busy with other work: {what} not measured");
        return None;
    }
    let figure = measure()?;
    if !(quiet_before && load(QUIET_WINDOW) < QUIET_CORES) {
        eprintln!("fsin: other work kept this machine busy while it measured {what}: not kept");
        return Some(figure);
    }
    if let Some(p) = &path {
        // Read again: another fsin may have kept a figure meanwhile.
        let mut cache = read(p);
        cache
            .machines
            .entry(machine)
            .or_default()
            .insert(key.to_string(), figure);
        if let Err(e) = keep(p, &cache) {
            eprintln!("fsin: cannot keep {what} in {}: {e}", p.display());
        }
    }
    Some(figure)
}

/// Writes `cache` to `path` whole: to a file beside it, then renamed over
/// it, so that a reader never sees half of it.
fn keep(path: &std::path::Path, cache: &Cache) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text = serde_json::to_string_pretty(cache).map_err(std::io::Error::other)?;
    let part = path.with_extension(format!("json.{}", std::process::id()));
    std::fs::write(&part, text)?;
    std::fs::rename(&part, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&part);
    })
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

/// Busy cores (see [`load`]) below which the machine counts as quiet.
const QUIET_CORES: f64 = 0.25;

/// How long [`cached`] looks at the machine's load before and after a
/// measurement.
const QUIET_WINDOW: std::time::Duration = std::time::Duration::from_millis(500);
