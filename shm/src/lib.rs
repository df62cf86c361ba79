//! Shared-memory files made of 64-byte lines that hold only atomics, and the
//! futex calls on them: the layer under the server's slice barrier
//! (`fsin_sync::shm`) and the QEMU slice board (`fsin_qemu_wire::board`).
//! Both lay their lines out as a [`Region`]: a header, a line one side
//! broadcasts, the [`Arrivals`], then a slot per participant; the side
//! that creates the file holds it as an [`OwnedFile`], removed however the
//! process ends.

#![warn(missing_docs)]

use std::fs::OpenOptions;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::AtomicU32;
use std::time::Duration;

use memmap2::MmapMut;
use rustix::thread::futex;

/// Bytes per line: one cache line, so that no two processes' fields share
/// one.
pub const LINE: usize = 64;

/// A type made only of atomics, at most [`LINE`] bytes and aligned to it:
/// any bit pattern is a valid value, and processes may share it.
///
/// # Safety
/// Implement it only for `#[repr(C, align(64))]` structs of atomics.
pub unsafe trait Atomics {}

/// A shared mapping of a file of lines.
pub struct Lines {
    map: MmapMut,
    lines: usize,
}

impl Lines {
    /// Creates the file `path` (mode 0600: only this user's processes may
    /// map it) with `lines` zeroed lines, and maps it. Its space is
    /// reserved before it is mapped, so that a full file system (a full
    /// tmpfs) is an error here and not a SIGBUS later.
    ///
    /// # Errors
    /// The file exists or cannot be created, reserved or mapped; nothing is
    /// left behind.
    pub fn create(path: &Path, lines: usize) -> io::Result<Lines> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)?;
        let made = (|| {
            let len = (lines * LINE) as u64;
            rustix::fs::fallocate(&file, rustix::fs::FallocateFlags::empty(), 0, len)?;
            Lines::map(&file)
        })();
        if made.is_err() {
            let _ = std::fs::remove_file(path);
        }
        made
    }

    /// Maps the existing file `path`: as many lines as it holds.
    ///
    /// # Errors
    /// The file cannot be opened or mapped.
    pub fn open(path: &Path) -> io::Result<Lines> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        Lines::map(&file)
    }

    fn map(file: &std::fs::File) -> io::Result<Lines> {
        // SAFETY: the file is only accessed through `at`, that is through
        // atomics, by processes that follow one layout; their concurrent
        // writes are the point, not undefined behaviour.
        let map = unsafe { MmapMut::map_mut(file)? };
        let lines = map.len() / LINE;
        Ok(Lines { map, lines })
    }

    /// Lines in the mapping.
    pub fn len(&self) -> usize {
        self.lines
    }

    /// Whether the mapping has no line.
    pub fn is_empty(&self) -> bool {
        self.lines == 0
    }

    /// The `T` at line `line`.
    ///
    /// # Panics
    /// `line` is past the mapping.
    pub fn at<T: Atomics>(&self, line: usize) -> &T {
        const { assert!(std::mem::size_of::<T>() <= LINE) };
        assert!(line < self.lines, "line {line} of {}", self.lines);
        // SAFETY: in bounds (above), 64-byte aligned (the mapping is
        // page-aligned), and T is made only of atomics, valid for any bit
        // pattern (`Atomics`).
        unsafe { &*self.map.as_ptr().add(line * LINE).cast::<T>() }
    }
}

/// Wakes every process waiting on `word`.
pub fn wake_all(word: &AtomicU32) {
    // The kernel reads the count as an i32: u32::MAX would be -1 and wake
    // one waiter only. Waking fails only for a bad address, which a live
    // mapping is not.
    let _ = futex::wake(word, futex::Flags::empty(), i32::MAX as u32);
}

/// Sleeps while `word` holds `value`, at most `timeout`: returns at once
/// when the word already changed, on a wake, on a signal, or at the
/// timeout (then true). The caller looks at the word again.
pub fn wait(word: &AtomicU32, value: u32, timeout: Duration) -> bool {
    let ts = futex::Timespec {
        tv_sec: timeout.as_secs() as i64,
        tv_nsec: i64::from(timeout.subsec_nanos()),
    };
    futex::wait(word, futex::Flags::empty(), value, Some(&ts)) == Err(rustix::io::Errno::TIMEDOUT)
}

mod owned;
mod region;
pub use owned::{remove_owned_files, OwnedFile};
pub use region::{Arrivals, Region, SLOTS_AT};

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[repr(C, align(64))]
    struct Word {
        w: AtomicU32,
    }
    // SAFETY: one atomic, 64-byte aligned.
    unsafe impl Atomics for Word {}

    #[test]
    fn two_mappings_of_one_file_share_their_lines_and_a_waiter_wakes() {
        let path = std::env::temp_dir().join(format!("fsin-shm-test-{}.shm", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let a = Lines::create(&path, 3).unwrap();
        assert!(Lines::create(&path, 3).is_err(), "create_new");
        let b = Lines::open(&path).unwrap();
        assert_eq!((a.len(), b.len()), (3, 3));
        a.at::<Word>(2).w.store(7, Ordering::Release);
        assert_eq!(b.at::<Word>(2).w.load(Ordering::Acquire), 7);
        assert!(wait(&b.at::<Word>(1).w, 0, Duration::from_millis(1)));
        assert!(
            !wait(&b.at::<Word>(1).w, 5, Duration::from_secs(5)),
            "the word differs: at once"
        );
        let t = std::thread::spawn(move || {
            let w = &b.at::<Word>(0).w;
            while w.load(Ordering::Acquire) == 0 {
                wait(w, 0, Duration::from_secs(10));
            }
        });
        std::thread::sleep(Duration::from_millis(20));
        a.at::<Word>(0).w.store(1, Ordering::Release);
        wake_all(&a.at::<Word>(0).w);
        t.join().unwrap();
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    #[should_panic(expected = "line 3 of 3")]
    fn a_line_past_the_file_panics() {
        let path =
            std::env::temp_dir().join(format!("fsin-shm-test-past-{}.shm", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let a = Lines::create(&path, 3).unwrap();
        std::fs::remove_file(&path).unwrap();
        a.at::<Word>(3);
    }
}
