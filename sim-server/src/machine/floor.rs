//! This machine's futex floor of a lock-step round for N processes
//! ([`fsin_sync::floor`]): cached in `floor.json` by process count. The
//! measuring processes are this program again (`fsin floor-child`,
//! hidden).

use std::os::unix::process::CommandExt;
use std::path::PathBuf;

/// Rounds the measurement times (after 100 of warm-up): about 0.4 s for
/// 64 processes on 2 cores.
const ROUNDS: u32 = 2_000;

/// The floor for `processes` processes, rounds per second of the bare
/// futex barrier: from the cache, else measured (and kept on a quiet
/// machine). `None`, with a line on stderr, when it cannot be measured.
pub(crate) fn floor(processes: u32) -> Option<f64> {
    let key = processes.to_string();
    super::cached(
        "floor.json",
        "the futex floor",
        &key,
        super::WhenBusy::Measure,
        || {
            let exe = crate::args::own_exe()
                .inspect_err(|e| eprintln!("fsin: no futex floor: {e}"))
                .ok()?;
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
            measured
                .inspect_err(|e| eprintln!("fsin: no futex floor: {e}"))
                .ok()
        },
    )
}
