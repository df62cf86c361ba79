//! The floor of a lock-step round on this host ([`fsin_sync::floor`]):
//! one process wakes N other processes with one futex wake, each adds one
//! to a shared counter and sleeps again, and the last to arrive wakes the
//! first. `fsin qemu` reports the same beside its own rounds.
//!
//! ```text
//! cargo run --release -p fsin-sync --example barrier_floor -- N [ROUNDS]
//! ```
//!
//! Prints `{"processes": N, "rounds": R, "rounds_per_s": ...}`.

use fsin_sync::floor;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: barrier_floor N [ROUNDS]  (N processes woken every round)";
    if args.get(1).map(String::as_str) == Some("child") {
        let n = args[3].parse::<u32>().expect(usage);
        floor::child(args[2].as_ref(), n).expect("cannot map the shared file");
        return;
    }
    let n: u32 = args.get(1).and_then(|a| a.parse().ok()).expect(usage);
    let rounds: u32 = args.get(2).map_or(20_000, |a| a.parse().expect(usage));
    let exe = std::env::current_exe().expect("own path");
    let rate = floor::measure(&std::env::temp_dir(), n, rounds, |path, n| {
        std::process::Command::new(&exe)
            .arg("child")
            .arg(path)
            .arg(n.to_string())
            .spawn()
    })
    .expect("cannot measure the floor");
    println!("{{\"processes\": {n}, \"rounds\": {rounds}, \"rounds_per_s\": {rate:.0}}}");
}
