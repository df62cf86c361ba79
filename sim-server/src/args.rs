//! What several commands share, below them all: argument parsers and
//! their errors (`--trace-format`, `--vary`, `--series`) and this
//! program's own path (to start more of itself).

use std::path::PathBuf;

use fsin::config::{ConfigError, Origin};

/// `--format NAME` of `fsin kernel` (and `--trace-format` of `fsin qemu`).
pub(crate) fn trace_format(name: &str) -> Result<fsin_trace::TraceFormat, String> {
    fsin_trace::TraceFormat::named(name)
        .ok_or_else(|| format!("expected trc, dimemas or alog, not `{name}`"))
}

/// This program, to start more of itself (nic-bridge, fake nodes, sweep
/// points, benchmark children). On Linux `/proc/self/exe`, which names the
/// running image even after a rebuild has replaced its file (a long
/// `--vary` study would otherwise fail to start its next point); elsewhere
/// the path it was started from.
///
/// # Errors
/// When neither can be found.
pub(crate) fn own_exe() -> anyhow::Result<PathBuf> {
    let proc_exe = std::path::Path::new("/proc/self/exe");
    if proc_exe.exists() {
        return Ok(proc_exe.to_path_buf());
    }
    anyhow::Context::context(std::env::current_exe(), "cannot find the fsin executable")
}

/// The text of option `option` (`--vary`, `--series`) refused, as the
/// configuration error it is.
pub(crate) fn option_error(option: &str, text: &str, e: &fsin::sweep::VaryError) -> ConfigError {
    ConfigError::BadValue {
        key: option.into(),
        value: text.into(),
        origin: Origin::CommandLine,
        reason: e.to_string(),
    }
}
