//! Why a run of QEMU guests fails.

/// Why a run of QEMU guests failed; the guests are stopped first.
#[derive(Debug, thiserror::Error)]
pub enum QemuError {
    /// Bad arguments, or a guest image or plugin that is missing (nothing
    /// started).
    #[error("{0}")]
    Setup(String),
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

/// `r`'s I/O error as [`QemuError::Io`], described by `what`.
pub(super) fn io<T>(r: std::io::Result<T>, what: impl FnOnce() -> String) -> Result<T, QemuError> {
    r.map_err(|source| QemuError::Io {
        what: what(),
        source,
    })
}
