//! Checkpoints of a booted cluster: boot the guests once, save them with
//! QEMU's own migration (one file per guest), and start later runs from
//! those files instead of booting (docs/qemu.md, "Boot once, run
//! many").
//!
//! A checkpoint directory holds `guest-I.mig` for every guest and, written
//! last, [`MANIFEST_FILE`]: the [`Identity`] the guests were booted with,
//! the guest time at which they were saved, and their boot reports. A
//! directory without the manifest holds no checkpoint. The guests are saved
//! at a slice end at which the server had skipped idle slices: every guest
//! idle, no frame in flight or due, so a restored run starts with an empty
//! network at node cycle 0 and loses nothing.
//!
//! Guest memory that every guest maps from a shared read-only file (the
//! shared root, `--share`'s snapshot) is not saved (`x-ignore-shared`): a
//! restored guest maps the same file again, which the identity pins.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::console::GuestReport;

mod migration;
pub use migration::{restore_guest, save_guest, MigrationError};

/// The manifest's file name in a checkpoint directory.
pub const MANIFEST_FILE: &str = "checkpoint.json";

/// Version of the manifest's layout; another version is not a checkpoint
/// of this build.
pub const FORMAT: u32 = 1;

/// A file a guest is booted from: its path, size in bytes and modification
/// time (ns since the epoch), as `make` would judge it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp {
    /// The file's path (relative to the directory for [`FileStamp::tree`]).
    pub path: PathBuf,
    /// Its size, bytes.
    pub bytes: u64,
    /// Its modification time, ns since the Unix epoch (0 before it).
    pub modified_ns: u128,
}

impl FileStamp {
    /// The stamp of `path`.
    ///
    /// # Errors
    /// `path` cannot be read.
    pub fn of(path: &Path) -> std::io::Result<FileStamp> {
        let meta = std::fs::metadata(path)?;
        let modified_ns = meta
            .modified()?
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Ok(FileStamp {
            path: path.to_path_buf(),
            bytes: meta.len(),
            modified_ns,
        })
    }

    /// Stamps of every file under `dir`, in name order (paths relative to
    /// `dir`).
    ///
    /// # Errors
    /// A directory or file that cannot be read.
    pub fn tree(dir: &Path) -> std::io::Result<Vec<FileStamp>> {
        let mut out = Vec::new();
        let mut todo = vec![dir.to_path_buf()];
        while let Some(d) = todo.pop() {
            for e in std::fs::read_dir(&d)? {
                let p = e?.path();
                if p.is_dir() {
                    todo.push(p);
                } else {
                    let mut s = FileStamp::of(&p)?;
                    s.path = p.strip_prefix(dir).unwrap_or(&p).to_path_buf();
                    out.push(s);
                }
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }
}

/// Everything that shapes a booted guest: a checkpoint restores only into
/// a run whose identity is equal. Network keys and `--slice` are not part
/// of it: the boot runs in warm-up, where frames skip the network.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Identity {
    /// `qemu-system-x86_64 --version`, first line.
    pub qemu: String,
    /// The kernel, initramfs, shared root and plugin.
    pub files: Vec<FileStamp>,
    /// `--share`'s directory tree, if any.
    pub share: Option<Vec<FileStamp>>,
    /// Guests (QEMU processes), one per node (`--guests`).
    pub guests: u32,
    /// Node id of guest 0 (`--first-node`).
    pub first_node: u32,
    /// Guest RAM, MiB (`--memory-mb` or its default).
    pub memory_mb: u32,
    /// vCPUs per guest (`--cpus`).
    pub cpus: u32,
    /// Guest time per instruction is 2^N ns (`--icount-shift`).
    pub icount_shift: u32,
    /// Pings each guest sends to every other guest (`--pings` or its
    /// default).
    pub pings: u32,
    /// Ping payload, bytes (`--ping-bytes`).
    pub ping_bytes: u32,
    /// Message size of the guests' network benchmark, bytes (0: none;
    /// `--bench-bytes`).
    pub bench_bytes: u32,
    /// Guest seconds guest 0's command may run (`--app-timeout`).
    pub app_timeout: f64,
    /// Guest 0 sends the CLEAR_STATS magic packet before its pings
    /// (`--magic`).
    pub magic: bool,
    /// A checkpoint at the region's start (`--roi mpi|marker`): the
    /// command as guest 0 ran it, whose launch it holds; none for a booted
    /// cluster.
    #[serde(default)]
    pub region: Option<RegionIdentity>,
}

/// What a checkpoint at a region's start was launched with: the region's
/// kind as the MPI library's word (`roi=mpi`, `roi=marker`) and the
/// command file guest 0 ran (with the library's settings and Open MPI's
/// pins).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionIdentity {
    /// The region's kind as the MPI library's word: `roi=mpi` or
    /// `roi=marker`.
    pub roi: String,
    /// The command as guest 0 ran it, whose launch the checkpoint holds.
    pub command: String,
}

/// The ranks waiting for the host's go in a checkpoint at a region's start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedRegion {
    /// The world's size.
    pub world: u32,
    /// The guests whose ranks wait for the go.
    pub waiting: Vec<usize>,
}

impl Identity {
    /// The first field in which `self` (this run) differs from `saved` (a
    /// checkpoint's), described for people; `None` when they are equal.
    /// For the files a guest is booted from, and `--share`'s tree, it names
    /// the first file that differs and how (another path, size or time).
    pub fn difference(&self, saved: &Identity) -> Option<String> {
        if let Some(why) = files_difference("files", &self.files, &saved.files) {
            return Some(why);
        }
        if let (Some(now), Some(then)) = (&self.share, &saved.share) {
            if let Some(why) = files_difference("share", now, then) {
                return Some(why);
            }
        }
        let (now, then) = (
            serde_json::to_value(self).unwrap_or_default(),
            serde_json::to_value(saved).unwrap_or_default(),
        );
        let (Some(now), Some(then)) = (now.as_object(), then.as_object()) else {
            return Some("unreadable identity".into());
        };
        now.iter().find_map(|(k, v)| {
            let old = then.get(k).cloned().unwrap_or_default();
            (*v != old).then(|| {
                let short = |v: &serde_json::Value| {
                    let t = v.to_string();
                    match t.char_indices().nth(120) {
                        Some((at, _)) => format!("{}...", &t[..at]),
                        None => t,
                    }
                };
                format!(
                    "{k} is {} here, {} in the checkpoint",
                    short(v),
                    short(&old)
                )
            })
        })
    }
}

/// The first file of `field` in which `now` (this run) differs from `then`
/// (a checkpoint's), for people; `None` when they are equal.
fn files_difference(field: &str, now: &[FileStamp], then: &[FileStamp]) -> Option<String> {
    let at = now.iter().zip(then).position(|(a, b)| a != b);
    let Some(i) = at else {
        return (now.len() != then.len()).then(|| {
            format!(
                "{field}: {} file(s) here, {} in the checkpoint",
                now.len(),
                then.len()
            )
        });
    };
    let (a, b) = (&now[i], &then[i]);
    Some(if a.path == b.path {
        format!(
            "{field}: {} is {} bytes modified at {} ns here, {} bytes modified at {} ns in the checkpoint",
            a.path.display(),
            a.bytes,
            a.modified_ns,
            b.bytes,
            b.modified_ns
        )
    } else {
        format!(
            "{field}: {} here, {} in the checkpoint",
            a.path.display(),
            b.path.display()
        )
    })
}

/// A checkpoint's manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The manifest's layout version ([`FORMAT`] for this build).
    pub format: u32,
    /// What the saved guests were booted (and launched) with.
    pub identity: Identity,
    /// Guest time at which the guests were saved, ns: the slice end they
    /// stopped at, node cycle 0 of every restored run.
    pub base_ns: u64,
    /// What each guest had reported when it was saved (guest 0 first).
    pub reports: Vec<GuestReport>,
    /// Wall seconds from the start of the guests to the save: the boot
    /// (for a checkpoint at a region's start, the restore and the launch).
    pub boot_wall_s: f64,
    /// Wall seconds the save of every guest took.
    pub save_wall_s: f64,
    /// Bytes of the guests' migration files.
    pub bytes: u64,
    /// For a checkpoint at a region's start: the ranks that wait for the
    /// go.
    #[serde(default)]
    pub region: Option<SavedRegion>,
}

/// What a directory holds for a run of identity `id`.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// A checkpoint of this identity.
    Ready(Box<Manifest>),
    /// No checkpoint, or one of another identity or format: why.
    Missing(String),
}

/// Guest `i`'s migration file in `dir`.
pub fn guest_file(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("guest-{i}.mig"))
}

/// Looks for a checkpoint of identity `id` in `dir`.
pub fn find(dir: &Path, id: &Identity) -> Found {
    let path = dir.join(MANIFEST_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Found::Missing(format!("{} holds no checkpoint", dir.display()))
        }
        Err(e) => return Found::Missing(format!("cannot read {}: {e}", path.display())),
    };
    let m: Manifest = match serde_json::from_str(&text) {
        Ok(m) => m,
        Err(e) => {
            return Found::Missing(format!(
                "{} is not a checkpoint of this fsin: {e}",
                path.display()
            ))
        }
    };
    if m.format != FORMAT {
        return Found::Missing(format!(
            "{} has format {}, this fsin writes {FORMAT}",
            path.display(),
            m.format
        ));
    }
    if let Some(why) = id.difference(&m.identity) {
        return Found::Missing(format!(
            "the checkpoint in {} differs: {why}",
            dir.display()
        ));
    }
    if m.reports.len() != id.guests as usize {
        return Found::Missing(format!("{} is incomplete", path.display()));
    }
    if let Some(i) = (0..m.reports.len()).find(|&i| !guest_file(dir, i).is_file()) {
        return Found::Missing(format!("{} is missing", guest_file(dir, i).display()));
    }
    Found::Ready(Box::new(m))
}

/// Makes `dir` ready for a new checkpoint: creates it and removes an old
/// manifest (so that a save cut short leaves no checkpoint behind).
///
/// # Errors
/// `dir` cannot be created, or its manifest removed.
pub fn prepare(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    match std::fs::remove_file(dir.join(MANIFEST_FILE)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Bytes free for an unprivileged user on the file system of `dir`.
///
/// # Errors
/// `dir` cannot be queried.
pub fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    let s = rustix::fs::statvfs(dir)?;
    Ok(s.f_bavail.saturating_mul(s.f_frsize))
}

/// Writes the manifest (last: it makes the directory a checkpoint).
///
/// # Errors
/// The file cannot be written.
pub fn write_manifest(dir: &Path, m: &Manifest) -> std::io::Result<()> {
    let tmp = dir.join(format!("{MANIFEST_FILE}.tmp"));
    std::fs::write(&tmp, serde_json::to_string_pretty(m).unwrap_or_default())?;
    std::fs::rename(tmp, dir.join(MANIFEST_FILE))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity() -> Identity {
        Identity {
            qemu: "QEMU emulator version 10.0.2".into(),
            files: vec![FileStamp {
                path: "/img/vmlinux".into(),
                bytes: 10,
                modified_ns: 7,
            }],
            share: None,
            guests: 4,
            first_node: 0,
            memory_mb: 512,
            cpus: 1,
            icount_shift: 3,
            pings: 0,
            ping_bytes: 56,
            bench_bytes: 0,
            app_timeout: 3600.0,
            magic: true,
            region: None,
        }
    }

    #[test]
    fn a_difference_names_the_first_field_that_differs() {
        let a = identity();
        assert_eq!(a.difference(&a.clone()), None);
        let mut b = a.clone();
        b.memory_mb = 256;
        assert_eq!(
            a.difference(&b).as_deref(),
            Some("memory_mb is 512 here, 256 in the checkpoint")
        );
        let mut c = a.clone();
        c.files[0].modified_ns = 8;
        assert_eq!(
            a.difference(&c).as_deref(),
            Some(
                "files: /img/vmlinux is 10 bytes modified at 7 ns here, 10 bytes modified at 8 ns in the checkpoint"
            )
        );
        let mut d = a.clone();
        d.files[0].path = "/elsewhere/k".into();
        assert_eq!(
            a.difference(&d).as_deref(),
            Some("files: /img/vmlinux here, /elsewhere/k in the checkpoint")
        );
        let mut e = a.clone();
        e.files.push(a.files[0].clone());
        assert_eq!(
            a.difference(&e).as_deref(),
            Some("files: 1 file(s) here, 2 in the checkpoint")
        );
    }

    #[test]
    fn only_a_complete_manifest_of_the_same_identity_is_a_checkpoint() {
        let dir = std::env::temp_dir().join(format!("fsin-ckpt-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        prepare(&dir).unwrap();
        let id = identity();
        assert!(matches!(find(&dir, &id), Found::Missing(w) if w.contains("holds no checkpoint")));
        let m = Manifest {
            format: FORMAT,
            identity: id.clone(),
            base_ns: 8_000,
            reports: vec![GuestReport::default(); 4],
            boot_wall_s: 1.0,
            save_wall_s: 1.0,
            bytes: 4,
            region: None,
        };
        write_manifest(&dir, &m).unwrap();
        // Three of the four guests' files: not a checkpoint.
        for i in 0..3 {
            std::fs::write(guest_file(&dir, i), b"x").unwrap();
        }
        assert!(
            matches!(find(&dir, &id), Found::Missing(w) if w.contains("guest-3.mig is missing"))
        );
        std::fs::write(guest_file(&dir, 3), b"x").unwrap();
        assert_eq!(find(&dir, &id), Found::Ready(Box::new(m.clone())));
        let mut other = id.clone();
        other.guests = 8;
        assert!(
            matches!(find(&dir, &other), Found::Missing(w) if w.contains("guests is 8 here, 4"))
        );
        // A new save removes the old manifest first.
        prepare(&dir).unwrap();
        assert!(matches!(find(&dir, &id), Found::Missing(_)));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
