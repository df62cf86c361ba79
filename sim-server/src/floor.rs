//! This machine's futex floor of a lock-step round for N processes
//! ([`fsin_sync::floor`]), for `fsin qemu`'s report: measured once per
//! process count and kept in `$XDG_CACHE_HOME/fsin/floor.json` (else
//! `~/.cache/fsin/floor.json`) under the machine's cores and kernel, so
//! that a study measures it once. The measuring processes are this
//! program again (`fsin floor-child`, hidden).

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Rounds the measurement times (after 100 of warm-up): about 0.4 s for
/// 64 processes on 2 cores.
const ROUNDS: u32 = 2_000;

/// The cache: per machine (cores and kernel), rounds per second by
/// process count.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Cache {
    machines: BTreeMap<String, BTreeMap<u32, f64>>,
}

fn cache_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("fsin").join("floor.json"))
}

/// This machine as the cache knows it: its cores and kernel release.
fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{cores} cores, Linux {}", kernel.trim())
}

/// The floor for `processes` processes, rounds per second of the bare
/// futex barrier: from the cache, else measured (and kept). `None`, with
/// a line on stderr, when it cannot be measured.
pub(crate) fn floor(processes: u32) -> Option<f64> {
    let path = cache_path();
    let machine = machine();
    let mut cache: Cache = path
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    if let Some(&rounds_per_s) = cache.machines.get(&machine).and_then(|m| m.get(&processes)) {
        return Some(rounds_per_s);
    }
    let exe = match crate::args::own_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("fsin: no futex floor: {e}");
            return None;
        }
    };
    let dir = if std::path::Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let measured = fsin_sync::floor::measure(&dir, processes, ROUNDS, |file, n| {
        std::process::Command::new(&exe)
            .arg("floor-child")
            .arg(file)
            .arg(n.to_string())
            .stdin(std::process::Stdio::null())
            .process_group(0)
            .spawn()
    });
    let rounds_per_s = match measured {
        Ok(r) => r,
        Err(e) => {
            eprintln!("fsin: no futex floor: {e}");
            return None;
        }
    };
    cache
        .machines
        .entry(machine)
        .or_default()
        .insert(processes, rounds_per_s);
    if let Some(p) = &path {
        let kept = p
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| {
                std::fs::write(p, serde_json::to_string_pretty(&cache).unwrap_or_default())
            });
        if let Err(e) = kept {
            eprintln!("fsin: cannot keep the futex floor in {}: {e}", p.display());
        }
    }
    Some(rounds_per_s)
}
