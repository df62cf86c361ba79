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

/// CPU seconds that this process's ended and waited-for children (and
/// theirs) have used.
fn children_cpu_s() -> f64 {
    // SAFETY: getrusage fills the struct it is given, nothing else.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut u);
        u
    };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    s(usage.ru_utime) + s(usage.ru_stime)
}

/// How busy the rest of the machine is while a measurement runs in child
/// processes: started before, [`Quiet::held`] after the children ended.
struct Quiet {
    busy: Option<f64>,
    children: f64,
    at: std::time::Instant,
}

impl Quiet {
    fn start() -> Quiet {
        Quiet {
            busy: busy_s(),
            children: children_cpu_s(),
            at: std::time::Instant::now(),
        }
    }

    /// Whether the cores' busy time that the measurement's children do
    /// not account for stayed below a quarter of a core on average (true
    /// where /proc/stat cannot be read).
    fn held(&self) -> bool {
        let (Some(before), Some(after)) = (self.busy, busy_s()) else {
            return true;
        };
        let others = (after - before) - (children_cpu_s() - self.children);
        others < 0.25 * self.at.elapsed().as_secs_f64()
    }
}
