//! Why a run of QEMU guests fails.

use std::path::PathBuf;

/// Why a run of QEMU guests failed; the guests are stopped first.
#[derive(Debug, thiserror::Error)]
pub enum QemuError {
    /// An option's value out of its range (nothing started): the option,
    /// the value given, and the range.
    #[error("{option} {value}: {range}")]
    Range {
        /// The option (`--guests`).
        option: &'static str,
        /// The value given.
        value: String,
        /// The values it takes, for people.
        range: String,
    },
    /// An option that needs another setting, or an image that has it
    /// (nothing started).
    #[error("{option} needs {needs}")]
    Needs {
        /// The option, or what was asked (`--checkpoint`).
        option: &'static str,
        /// What it needs, for people (or why a checkpoint it needs is
        /// missing).
        needs: String,
    },
    /// `--run`'s command does not fit guest 0's command file
    /// ([`RUN_FILE_BYTES`](super::RUN_FILE_BYTES)), bytes.
    #[error("--run: a command of {bytes} bytes; at most {max} (put a longer one in a script under --share)")]
    CommandTooLong {
        /// The command's length, bytes.
        bytes: usize,
        /// The longest command the file holds, bytes.
        max: usize,
    },
    /// A file of the guest image is missing.
    #[error("guest image incomplete: {} is missing (build it with scripts/install-qemu.sh; `fsin doctor` checks the machine)", .0.display())]
    ImageIncomplete(PathBuf),
    /// The fsin QEMU plugin is missing.
    #[error("the fsin QEMU plugin {} is missing: build it with scripts/install-qemu.sh (or `cargo build --release -p fsin-qemu-plugin`) or give --plugin; `fsin doctor` checks the machine", .0.display())]
    PluginMissing(PathBuf),
    /// A file that guests map as a memory device (the shared root,
    /// `--share`'s snapshot) cannot be: which, and why.
    #[error("{}: {why}", path.display())]
    MemoryFile {
        /// The file.
        path: PathBuf,
        /// Why, for people: unreadable, gone, or not a non-zero multiple
        /// of 2 MiB.
        why: String,
    },
    /// `--share`'s directory cannot be snapshot: which, and why.
    #[error("--share {}: {why}", dir.display())]
    Share {
        /// `--share`'s directory.
        dir: PathBuf,
        /// Why: not a directory, or mkfs.erofs's failure.
        why: String,
    },
    /// The checkpoint directory's file system cannot hold the guests'
    /// files, MiB.
    #[error("--checkpoint {}: {guests} guests need up to {need_mib} MiB there, the file system has {free_mib} MiB free (free space, choose another directory or give less --memory-mb)", dir.display())]
    NoRoom {
        /// The checkpoint directory.
        dir: PathBuf,
        /// Guests to save.
        guests: u32,
        /// Host disk their migration files may take, MiB: guests x the
        /// guest RAM, at most [`GUEST_BOOT_MIB`](super::GUEST_BOOT_MIB) +
        /// [`GUEST_WORK_MIB`](super::GUEST_WORK_MIB).
        need_mib: u64,
        /// Free space there for an unprivileged user, MiB.
        free_mib: u64,
    },
    /// A host resource (socket, file, directory, process) that cannot be
    /// had: what was asked, and the system's reason.
    #[error("{what}: {source}")]
    Io {
        /// What was asked, for people (`cannot write ...`).
        what: String,
        /// The system's reason.
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
    World {
        /// The rank the datagram names.
        rank: u32,
        /// The world's size it names.
        size: u32,
    },
    /// A `what` other than 0 (end), 1 or 2 (begin).
    #[error("a region datagram that says {0}")]
    What(u8),
}
