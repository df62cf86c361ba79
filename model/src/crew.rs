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

use crate::engine::Part;

/// How long an idle worker spins before it yields its core between
/// checks, and before it sleeps.
const BUSY: Duration = Duration::from_micros(50);
const SPIN: Duration = Duration::from_millis(2);

/// The job of the current round: a closure over parts, and the parts.
#[derive(Clone, Copy)]
struct Job {
    f: *const (dyn Fn(&mut Part) + Sync),
    parts: *mut Part,
}

/// What the calling thread and the workers share.
struct Shared {
    /// Rounds started (a worker runs round `k` once it sees `k`).
    round: AtomicU64,
    /// The current round's job, written before `round` is raised and read
    /// after it is seen.
    job: UnsafeCell<Option<Job>>,
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
// and `Part` is `Send`.
unsafe impl Sync for Shared {}
unsafe impl Send for Shared {}

/// The workers of a network in `n` parts (`n - 1` threads).
pub(crate) struct Crew {
    shared: Arc<Shared>,
    threads: Vec<(Thread, JoinHandle<()>)>,
}

impl Crew {
    /// Starts workers for parts `1..n`.
    ///
    /// # Errors
    /// The error of a thread that could not be started.
    pub(crate) fn new(n: usize) -> std::io::Result<Crew> {
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
    /// When `f` panicked on a worker.
    pub(crate) fn run(&self, parts: &mut [Part], f: &(dyn Fn(&mut Part) + Sync)) {
        let s = &*self.shared;
        debug_assert_eq!(parts.len(), self.threads.len() + 1);
        // SAFETY: no worker reads `job` now (see `Shared`).
        unsafe {
            *s.job.get() = Some(Job {
                // The closure outlives the round: this call waits for it.
                f: std::mem::transmute::<
                    *const (dyn Fn(&mut Part) + Sync + '_),
                    *const (dyn Fn(&mut Part) + Sync + 'static),
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
        f(&mut parts[0]);
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
        if s.panicked.load(Ordering::SeqCst) {
            panic!("a part's thread panicked");
        }
    }
}

impl Drop for Crew {
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
fn work(s: &Shared, i: usize) {
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
