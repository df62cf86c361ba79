//! Why a run of QEMU guests fails.

use std::path::PathBuf;

/// Why a run of QEMU guests failed; the guests are stopped first.
#[derive(Debug, thiserror::Error)]
pub enum QemuError {
    /// An option's value out of its range (nothing started): the option,
    /// the value given, and the range.
    #[error("{option} {value}: {range}")]
    Range {
        option: &'static str,
        value: String,
        range: String,
    },
    /// An option that needs another setting, or an image that has it
    /// (nothing started).
    #[error("{option} needs {needs}")]
    Needs { option: &'static str, needs: String },
    /// `--run`'s command does not fit guest 0's command file
    /// ([`RUN_FILE_BYTES`](super::RUN_FILE_BYTES)), bytes.
    #[error("--run: a command of {bytes} bytes; at most {max} (put a longer one in a script under --share)")]
    CommandTooLong { bytes: usize, max: usize },
    /// A file of the guest image is missing.
    #[error("guest image incomplete: {} is missing (build it with scripts/install-qemu.sh; `fsin doctor` checks the machine)", .0.display())]
    ImageIncomplete(PathBuf),
    /// The fsin QEMU plugin is missing.
    #[error("the fsin QEMU plugin {} is missing: build it with scripts/install-qemu.sh (or `cargo build --release -p fsin-qemu-plugin`) or give --plugin; `fsin doctor` checks the machine", .0.display())]
    PluginMissing(PathBuf),
    /// A file that guests map as a memory device (the shared root,
    /// `--share`'s snapshot) cannot be: which, and why.
    #[error("{}: {why}", path.display())]
    MemoryFile { path: PathBuf, why: String },
    /// `--share`'s directory cannot be snapshot: which, and why.
    #[error("--share {}: {why}", dir.display())]
    Share { dir: PathBuf, why: String },
    /// The checkpoint directory's file system cannot hold the guests'
    /// files, MiB.
    #[error("--checkpoint {}: {guests} guests need up to {need_mib} MiB there, the file system has {free_mib} MiB free (free space, choose another directory or give less --memory-mb)", dir.display())]
    NoRoom {
        dir: PathBuf,
        guests: u32,
        need_mib: u64,
        free_mib: u64,
    },
    /// A host resource (socket, file, directory, process) that cannot be
    /// had: what was asked, and the system's reason.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A guest that ended, stalled, broke its NIC stream or never ran its
    /// command, with its last console lines.
    #[error("{0}")]
    Guest(String),
    /// The connection to the co-simulation server.
    #[error(transparent)]
    Server(#[from] sync_client::ClientError),
    /// SIGINT, SIGTERM or SIGHUP (named).
    #[error("interrupted by {0}; the guests were stopped")]
    Interrupted(&'static str),
}

impl QemuError {
    /// True for bad input, found before anything started (an option out of
    /// range, one that needs another, a command too long): exit code 2.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            QemuError::Range { .. } | QemuError::Needs { .. } | QemuError::CommandTooLong { .. }
        )
    }
}

/// `r`'s I/O error as [`QemuError::Io`], described by `what`.
pub(super) fn io<T>(r: std::io::Result<T>, what: impl FnOnce() -> String) -> Result<T, QemuError> {
    r.map_err(|source| QemuError::Io {
        what: what(),
        source,
    })
}

/// A region datagram that cannot be read ([`super::roi::read`]; the
/// layout: docs/contracts.md, "Region of interest").
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum RegionError {
    /// Fewer bytes than a region datagram's frame.
    #[error("a region datagram of {0} bytes")]
    Short(usize),
    /// A version other than 1.
    #[error("a region datagram of version {0}")]
    Version(u8),
    /// A world of 0 or more than [`super::roi::MAX_RANKS`] ranks, or a
    /// rank outside it.
    #[error("rank {rank} of a world of {size} (at most {})", super::roi::MAX_RANKS)]
    World { rank: u32, size: u32 },
    /// A `what` other than 0 (end), 1 or 2 (begin).
    #[error("a region datagram that says {0}")]
    What(u8),
}
