//! Files that a process made and must remove however it ends: on a normal
//! end their owner's drop removes them, and a process that ends at once
//! from a signal handler (a second SIGINT, SIGTERM or SIGHUP:
//! `sync_client::signals`) removes them there with [`remove_owned_files`],
//! which is async-signal-safe. The server's slice barrier and the QEMU
//! slice board are such files.

use std::ffi::{c_char, CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

/// How many owned files one process can have at once with a removal at an
/// immediate exit: a server's barrier, a QEMU run's board, and room for a
/// few in flight between runs. A file beyond them is still removed by its
/// drop.
const SLOTS: usize = 16;

/// The NUL-terminated paths of the live owned files; null for a free slot.
/// A path's bytes are never freed (a signal handler may be reading them on
/// another thread while its owner drops): tens of bytes per file a process
/// makes.
static LIVE: [AtomicPtr<c_char>; SLOTS] = [const { AtomicPtr::new(ptr::null_mut()) }; SLOTS];

/// A file this process made (a shared-memory barrier or board): removed
/// when the value drops, or by [`remove_owned_files`] if the process ends
/// at once.
#[derive(Debug)]
pub struct OwnedFile {
    path: PathBuf,
    /// Its slot in [`LIVE`], if one was free.
    slot: Option<usize>,
}

impl OwnedFile {
    /// Takes ownership of the existing file `path` (made by the caller).
    pub fn new(path: &Path) -> OwnedFile {
        let slot = CString::new(path.as_os_str().as_bytes())
            .ok()
            .and_then(|c| {
                let raw = c.into_raw();
                let slot = LIVE.iter().position(|s| {
                    s.compare_exchange(ptr::null_mut(), raw, Ordering::AcqRel, Ordering::Relaxed)
                        .is_ok()
                });
                if slot.is_none() {
                    // SAFETY: `raw` came from `into_raw` above and was
                    // published nowhere.
                    drop(unsafe { CString::from_raw(raw) });
                }
                slot
            });
        OwnedFile {
            path: path.to_path_buf(),
            slot,
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for OwnedFile {
    fn drop(&mut self) {
        if let Some(i) = self.slot {
            LIVE[i].store(ptr::null_mut(), Ordering::Release);
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Removes every live [`OwnedFile`] of this process, leaving their values
/// as they are: for a process about to end at once, from a signal handler
/// (only atomic loads and `unlink(2)`: async-signal-safe). Errors are
/// ignored (a file already gone stays gone).
pub fn remove_owned_files() {
    for s in &LIVE {
        let p = s.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: a non-null slot holds a NUL-terminated string from
            // `CString::into_raw` that is never freed.
            let _ = rustix::fs::unlink(unsafe { CStr::from_ptr(p) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn made(name: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("fsin-owned-{}-{name}", std::process::id()));
        std::fs::write(&p, b"x").unwrap();
        p
    }

    #[test]
    fn an_owned_file_goes_with_its_owner_or_at_an_immediate_exit() {
        let a = made("a");
        let b = made("b");
        let owned_a = OwnedFile::new(&a);
        let owned_b = OwnedFile::new(&b);
        drop(owned_a);
        assert!(!a.exists(), "dropped");
        assert!(b.exists());
        // A file made again at a's path after its owner dropped is not
        // owned any more.
        std::fs::write(&a, b"y").unwrap();
        remove_owned_files();
        assert!(!b.exists(), "removed at an immediate exit");
        assert!(a.exists(), "not owned");
        assert_eq!(owned_b.path(), b);
        drop(owned_b);
        std::fs::remove_file(&a).unwrap();
    }

    #[test]
    fn more_files_than_slots_are_still_removed_by_their_owners() {
        let paths: Vec<PathBuf> = (0..SLOTS + 3).map(|i| made(&format!("many-{i}"))).collect();
        let owned: Vec<OwnedFile> = paths.iter().map(|p| OwnedFile::new(p)).collect();
        drop(owned);
        assert!(paths.iter().all(|p| !p.exists()));
    }
}
