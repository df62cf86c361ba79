//! The threads a network split into parts runs on (`threads`): the calling
//! thread runs part 0 and one worker each of the others, twice a cycle
//! (the phases, then the mail). A cycle of a big network lasts some
//! hundreds of microseconds and a small one's a few, so the hand-over must
//! cost far less than a thread's wake-up from sleep (tens of
//! microseconds): workers spin on the job counter for [`BUSY`], then yield
//! their core between checks (it may be needed: more threads than cores,
//! node processes beside the network), and sleep only after [`SPIN`]
//! without work (the network is not being stepped: a co-simulation
//! waiting for its nodes, a run that ended).
//!
//! A job is a closure called once on every part, each part by one thread;
//! [`Crew::run`] returns once all have returned, so the closure and the
//! parts outlive every use a worker makes of them.

use std::cell::UnsafeCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

/// How long an idle worker spins before it yields its core between
/// checks, and before it sleeps.
const BUSY: Duration = Duration::from_micros(50);
const SPIN: Duration = Duration::from_millis(2);

/// The job of the current round: a closure over parts, and the parts.
struct Job<T> {
    f: *const (dyn Fn(&mut T) + Sync),
    parts: *mut T,
}

impl<T> Clone for Job<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Job<T> {}

/// What the calling thread and the workers share.
struct Shared<T> {
    /// Rounds started (a worker runs round `k` once it sees `k`).
    round: AtomicU64,
    /// The current round's job, written before `round` is raised and read
    /// after it is seen.
    job: UnsafeCell<Option<Job<T>>>,
    /// Workers that finished the current round.
    done: AtomicUsize,
    /// A worker's job panicked (the calling thread panics in turn).
    panicked: AtomicBool,
    /// Per worker: whether it sleeps (the calling thread then wakes it).
    asleep: Vec<AtomicBool>,
    quit: AtomicBool,
}

// SAFETY: `job` is written only by the calling thread between rounds,
// while no worker reads it (every worker has finished the previous round
// and waits for `round` to rise); its pointers are to a closure that is
// `Sync` and to parts each of which one thread alone touches in a round,
// and the parts are `Send`.
unsafe impl<T: Send> Sync for Shared<T> {}
unsafe impl<T: Send> Send for Shared<T> {}

/// The workers of a network in `n` parts of type `T` (`n - 1` threads).
pub(crate) struct Crew<T> {
    shared: Arc<Shared<T>>,
    threads: Vec<(Thread, JoinHandle<()>)>,
}

impl<T: Send + 'static> Crew<T> {
    /// Starts workers for parts `1..n`.
    ///
    /// # Errors
    /// The error of a thread that could not be started.
    pub(crate) fn new(n: usize) -> std::io::Result<Crew<T>> {
        let shared = Arc::new(Shared {
            round: AtomicU64::new(0),
            job: UnsafeCell::new(None),
            done: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
            asleep: (1..n).map(|_| AtomicBool::new(false)).collect(),
            quit: AtomicBool::new(false),
        });
        let mut threads = Vec::with_capacity(n - 1);
        for i in 1..n {
            let s = shared.clone();
            let h = thread::Builder::new()
                .name(format!("fsin-part-{i}"))
                .spawn(move || work(&s, i))?;
            threads.push((h.thread().clone(), h));
        }
        Ok(Crew { shared, threads })
    }

    /// Calls `f` on every part of `parts` (as many as the crew was built
    /// for): part 0 on the calling thread, the others on the workers;
    /// returns once all have returned.
    ///
    /// # Panics
    /// When `f` panicked on part 0 (with its panic, once the workers are
    /// done) or on a worker.
    pub(crate) fn run(&self, parts: &mut [T], f: &(dyn Fn(&mut T) + Sync)) {
        let s = &*self.shared;
        // The workers index `parts` through a raw pointer: check it.
        assert_eq!(parts.len(), self.threads.len() + 1, "one part per thread");
        // SAFETY: no worker reads `job` now (see `Shared`).
        unsafe {
            *s.job.get() = Some(Job {
                // The closure outlives the round: this call waits for it.
                f: std::mem::transmute::<
                    *const (dyn Fn(&mut T) + Sync + '_),
                    *const (dyn Fn(&mut T) + Sync + 'static),
                >(f),
                parts: parts.as_mut_ptr(),
            });
        }
        s.done.store(0, Ordering::SeqCst);
        s.round.fetch_add(1, Ordering::SeqCst);
        for (k, (t, _)) in self.threads.iter().enumerate() {
            if s.asleep[k].load(Ordering::SeqCst) {
                t.unpark();
            }
        }
        // The workers use `f` and `parts` until they are done: wait for
        // them even when part 0 panics.
        let mine = catch_unwind(AssertUnwindSafe(|| f(&mut parts[0])));
        let workers = self.threads.len();
        let mut spins = 0u32;
        while s.done.load(Ordering::Acquire) < workers {
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(64) {
                thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        if let Err(panic) = mine {
            std::panic::resume_unwind(panic);
        }
        if s.panicked.swap(false, Ordering::SeqCst) {
            panic!("a part's thread panicked");
        }
    }
}

impl<T> Drop for Crew<T> {
    fn drop(&mut self) {
        self.shared.quit.store(true, Ordering::SeqCst);
        self.shared.round.fetch_add(1, Ordering::SeqCst);
        for (t, h) in std::mem::take(&mut self.threads) {
            t.unpark();
            let _ = h.join();
        }
    }
}

/// Worker `i`: runs each round's job on part `i` until told to quit.
fn work<T>(s: &Shared<T>, i: usize) {
    let mut seen = 0;
    loop {
        let mut since: Option<Instant> = None;
        let mut spins = 0u32;
        let round = loop {
            let r = s.round.load(Ordering::Acquire);
            if r != seen {
                break r;
            }
            spins = spins.wrapping_add(1);
            if !spins.is_multiple_of(64) {
                std::hint::spin_loop();
                continue;
            }
            let waited = since.get_or_insert_with(Instant::now).elapsed();
            if waited < BUSY {
                continue;
            }
            if waited < SPIN {
                // Another thread may need this core (more threads than
                // cores, or node processes beside the network).
                thread::yield_now();
                continue;
            }
            let asleep = &s.asleep[i - 1];
            asleep.store(true, Ordering::SeqCst);
            if s.round.load(Ordering::SeqCst) == seen {
                thread::park();
            }
            asleep.store(false, Ordering::SeqCst);
        };
        seen = round;
        if s.quit.load(Ordering::SeqCst) {
            return;
        }
        // SAFETY: the round's job was written before `round` rose, and the
        // calling thread waits for this worker before it writes another;
        // part `i` is this worker's alone in the round.
        let ok = unsafe {
            let job = (*s.job.get()).expect("a job for the round");
            let part = &mut *job.parts.add(i);
            let f = &*job.f;
            catch_unwind(AssertUnwindSafe(|| f(part))).is_ok()
        };
        if !ok {
            s.panicked.store(true, Ordering::SeqCst);
        }
        s.done.fetch_add(1, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every part is visited once per round, by one thread, rounds in
    /// order; workers that fell asleep wake up for the next round.
    #[test]
    fn every_part_once_per_round() {
        let crew = Crew::new(3).unwrap();
        let mut parts = [0u64; 3];
        for round in 1..=2000u64 {
            crew.run(&mut parts, &|x: &mut u64| {
                *x = x.wrapping_mul(3).wrapping_add(1)
            });
            if round % 500 == 0 {
                thread::sleep(SPIN + Duration::from_millis(3));
            }
        }
        let expected = (0..2000).fold(0u64, |x, _| x.wrapping_mul(3).wrapping_add(1));
        assert_eq!(parts, [expected; 3]);
    }

    /// A worker's panic reaches the caller instead of hanging it, and the
    /// crew can still be dropped.
    #[test]
    fn a_panicking_part_panics_the_caller() {
        let crew = Crew::new(2).unwrap();
        let mut parts = [0u32, 1];
        let r = catch_unwind(AssertUnwindSafe(|| {
            crew.run(&mut parts, &|x: &mut u32| assert_eq!(*x, 0, "part {x}"))
        }));
        assert!(r.is_err());
        drop(crew);
    }
}
