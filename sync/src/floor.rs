//! The floor of a lock-step round on this host: one process wakes N other
//! processes with one futex wake, each adds one to a shared counter and
//! sleeps again, and the last to arrive wakes the first. Nothing that
//! wakes every one of N processes every round can go faster; `fsin qemu`
//! reports its rounds per second beside this floor for as many processes
//! as it ran guests (docs/qemu.md, "Where the time went"), and the
//! `barrier_floor` example prints it.
//!
//! The measuring process starts the N others itself (`spawn`, e.g. this
//! program again with [`child`] as its job), on a file of three shared
//! lines; a child whose parent stops publishing rounds for
//! [`CHILD_PATIENCE`] leaves by itself.

use std::path::Path;
use std::process::Child;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use fsin_shm::{wake_all, Atomics, Lines, OwnedFile};

/// How long a child waits for the next round before it leaves.
pub const CHILD_PATIENCE: Duration = Duration::from_secs(10);

/// The round that tells the children to leave.
const LEAVE: u32 = u32::MAX;

#[repr(C, align(64))]
struct Word(AtomicU32);
// SAFETY: one atomic, 64-byte aligned.
unsafe impl Atomics for Word {}

/// The shared words, each on a line of its own: the published round
/// (futex), arrivals, the finished round (futex).
struct Words<'a> {
    round: &'a AtomicU32,
    count: &'a AtomicU32,
    done: &'a AtomicU32,
}

fn words(lines: &Lines) -> Words<'_> {
    Words {
        round: &lines.at::<Word>(0).0,
        count: &lines.at::<Word>(1).0,
        done: &lines.at::<Word>(2).0,
    }
}

/// Why the floor could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum FloorError {
    /// The shared file cannot be made.
    #[error("cannot make the shared file {path}: {source}")]
    File {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A process of the measurement cannot be started.
    #[error("cannot start process {index} of {count}: {source}")]
    Spawn {
        /// Which, from 0.
        index: u32,
        /// How many were to start.
        count: u32,
        /// Why.
        source: std::io::Error,
    },
    /// The processes stopped answering.
    #[error("the {count} processes did not answer round {round} within {CHILD_PATIENCE:?}")]
    Stalled {
        /// How many there are.
        count: u32,
        /// The round they did not answer.
        round: u32,
    },
}

/// Rounds per second of `n` processes woken together by one futex wake
/// and answering through one counter, over `rounds` rounds after 100 of
/// warm-up. `dir` holds the shared file while it runs; `spawn(path, n)`
/// starts one process that runs [`child`] on it. The children are
/// stopped and reaped before it returns, the file removed.
///
/// # Errors
/// [`FloorError`]: the file cannot be made, a process cannot start, or
/// the processes stop answering.
pub fn measure(
    dir: &Path,
    n: u32,
    rounds: u32,
    mut spawn: impl FnMut(&Path, u32) -> std::io::Result<Child>,
) -> Result<f64, FloorError> {
    let path = dir.join(format!("fsin-floor-{}.shm", std::process::id()));
    let lines = Lines::create(&path, 3).map_err(|source| FloorError::File {
        path: path.display().to_string(),
        source,
    })?;
    // Removed when this returns, or by the signal handler of a process
    // that ends at once.
    let file = OwnedFile::new(&path);
    let w = words(&lines);
    let mut children = Vec::new();
    let result = (|| {
        for index in 0..n {
            let c = spawn(&path, n).map_err(|source| FloorError::Spawn {
                index,
                count: n,
                source,
            })?;
            children.push(c);
        }
        let run = |r: u32| -> Result<(), FloorError> {
            w.count.store(0, Ordering::Relaxed);
            w.round.store(r, Ordering::Release);
            wake_all(w.round);
            let deadline = Instant::now() + CHILD_PATIENCE;
            loop {
                let done = w.done.load(Ordering::Acquire);
                if done == r {
                    return Ok(());
                }
                if Instant::now() > deadline {
                    return Err(FloorError::Stalled { count: n, round: r });
                }
                fsin_shm::wait(w.done, done, Duration::from_millis(100));
            }
        };
        for r in 1..=100 {
            run(r)?;
        }
        let t = Instant::now();
        for r in 101..=100 + rounds {
            run(r)?;
        }
        Ok(f64::from(rounds) / t.elapsed().as_secs_f64().max(1e-9))
    })();
    w.round.store(LEAVE, Ordering::Release);
    wake_all(w.round);
    for mut c in children {
        if c.wait().is_err() {
            let _ = c.kill();
        }
    }
    drop(file);
    result
}

/// A child of [`measure`]: on the shared file at `path`, of `n` children,
/// waits for each round, counts itself in, and the last of the `n` wakes
/// the measuring process; leaves at its sign or after
/// [`CHILD_PATIENCE`] without a round.
///
/// # Errors
/// The file cannot be opened.
pub fn child(path: &Path, n: u32) -> std::io::Result<()> {
    let lines = Lines::open(path)?;
    let w = words(&lines);
    let mut last = 0;
    let mut since = Instant::now();
    loop {
        let now = w.round.load(Ordering::Acquire);
        if now == last {
            if since.elapsed() > CHILD_PATIENCE {
                return Ok(());
            }
            fsin_shm::wait(w.round, last, Duration::from_secs(1));
            continue;
        }
        last = now;
        since = Instant::now();
        if last == LEAVE {
            return Ok(());
        }
        if w.count.fetch_add(1, Ordering::AcqRel) + 1 == n {
            w.done.store(last, Ordering::Release);
            wake_all(w.done);
        }
    }
}
