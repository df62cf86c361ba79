//! Tests that cannot run on this machine (no QEMU or guest image, no
//! INSEE sources or C compiler, no CAP_SYS_ADMIN for namespaces) say why
//! and pass, unless `FSIN_NO_SKIP=1` (set by `.ci/run`) turns every such
//! skip into a failure: in CI, nothing passes by skipping. Each skip is
//! also appended to the file `FSIN_SKIP_LOG` names, the list `.ci/run`
//! prints at its end (cargo hides a passing test's output).

use std::io::Write;

/// The variable that turns skips into failures.
pub const NO_SKIP: &str = "FSIN_NO_SKIP";

/// The variable naming the file each skip is appended to, one line each.
pub const SKIP_LOG: &str = "FSIN_SKIP_LOG";

/// Says that a test (or part of one) is skipped, and why, and appends it
/// to the skip list; panics instead when `FSIN_NO_SKIP` is set.
pub fn skip(why: &str) {
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    if let Some(log) = std::env::var_os(SKIP_LOG) {
        let line = format!("{test}: {why}\n");
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = appended {
            eprintln!(
                "cannot append to the skip list {}: {e}",
                log.to_string_lossy()
            );
        }
    }
    assert!(
        std::env::var_os(NO_SKIP).is_none(),
        "{NO_SKIP} is set, but {test} cannot run here: {why}"
    );
    eprintln!("skipped: {why}");
}
