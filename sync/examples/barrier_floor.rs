//! The floor of a lock-step round on this host: one process wakes N other
//! processes with one futex wake, each adds one to a shared counter and
//! sleeps again, and the last to arrive wakes the first. Nothing that wakes
//! every one of N processes every round can go faster; docs/cosim.md
//! ("Speed of a round") and docs/qemu.md compare the co-simulation's rounds
//! with it.
//!
//! ```text
//! cargo run --release -p fsin-sync --example barrier_floor -- N [ROUNDS]
//! ```
//!
//! Prints `{"processes": N, "rounds": R, "rounds_per_s": ...}`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use fsin_shm::{wake_all, Atomics, Lines};

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

fn wait(word: &AtomicU32, value: u32) {
    while word.load(Ordering::Acquire) == value {
        fsin_shm::wait(word, value, Duration::from_secs(1));
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: barrier_floor N [ROUNDS]  (N processes woken every round)";
    if args.get(1).map(String::as_str) == Some("child") {
        let (path, n) = (&args[2], args[3].parse::<u32>().expect(usage));
        let lines = Lines::open(path.as_ref()).expect("cannot map the shared file");
        let w = words(&lines);
        let mut last = 0;
        loop {
            wait(w.round, last);
            last = w.round.load(Ordering::Acquire);
            if last == u32::MAX {
                return;
            }
            if w.count.fetch_add(1, Ordering::AcqRel) + 1 == n {
                w.done.store(last, Ordering::Release);
                wake_all(w.done);
            }
        }
    }
    let n: u32 = args.get(1).and_then(|a| a.parse().ok()).expect(usage);
    let rounds: u32 = args.get(2).map_or(20_000, |a| a.parse().expect(usage));
    let path = std::env::temp_dir().join(format!("fsin-floor-{}.shm", std::process::id()));
    let lines = Lines::create(&path, 3).expect("cannot create the shared file");
    let w = words(&lines);
    let exe = std::env::current_exe().expect("own path");
    let children: Vec<_> = (0..n)
        .map(|_| {
            std::process::Command::new(&exe)
                .args(["child", path.to_str().expect("path"), &n.to_string()])
                .spawn()
                .expect("cannot start a process")
        })
        .collect();
    let run = |r: u32| {
        w.count.store(0, Ordering::Relaxed);
        w.round.store(r, Ordering::Release);
        wake_all(w.round);
        loop {
            let done = w.done.load(Ordering::Acquire);
            if done == r {
                break;
            }
            wait(w.done, done);
        }
    };
    // Warm-up: every child has mapped the file and is waiting.
    for r in 1..=100 {
        run(r);
    }
    let t = Instant::now();
    for r in 101..=100 + rounds {
        run(r);
    }
    let s = t.elapsed().as_secs_f64();
    w.round.store(u32::MAX, Ordering::Release);
    wake_all(w.round);
    for mut c in children {
        let _ = c.wait();
    }
    let _ = std::fs::remove_file(&path);
    println!(
        "{{\"processes\": {n}, \"rounds\": {rounds}, \"rounds_per_s\": {:.0}}}",
        f64::from(rounds) / s
    );
}
