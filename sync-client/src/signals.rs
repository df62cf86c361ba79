//! SIGINT, SIGTERM and SIGHUP as one request to stop (`timeout`, `kill`,
//! a closed terminal and Ctrl-C all end a run the same way): the programs
//! flush what they have simulated, stop their children and remove their
//! files instead of dying with the default action. A second signal, for a
//! shutdown that takes too long, ends the process at once (exit 130),
//! removing its shared-memory files on the way out. Signals that arrive
//! together are one: `timeout(1)` sends its signal to its child and then
//! to its whole process group, so the child gets it twice within
//! microseconds; a second signal is one that comes more than
//! [`SAME_REQUEST`] after the first.

use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use tokio::signal::unix::{signal, Signal, SignalKind};

/// The exit code of a process that a second signal ended (128 + SIGINT,
/// the shell's code for Ctrl-C).
pub const EXIT_SECOND_SIGNAL: i32 = 130;

/// Signals this close to the first are the same request to stop, not a
/// second one: half a second, far longer than a process group's signals
/// take to arrive and far shorter than a person who presses Ctrl-C again.
pub const SAME_REQUEST: Duration = Duration::from_millis(500);

/// When the first of the three signals arrived: `CLOCK_MONOTONIC`
/// nanoseconds plus one; 0 before any.
static FIRST_AT: AtomicU64 = AtomicU64::new(0);

/// The first of the three signals to arrive (its number; 0: none yet),
/// once [`stop_requested`] has installed the handlers.
static REQUESTED: OnceLock<Arc<AtomicUsize>> = OnceLock::new();

/// Installs the handlers now and returns a future that resolves with the
/// signal's name (`"SIGINT"`, `"SIGTERM"` or `"SIGHUP"`) at the first of
/// them to arrive, or at once if one arrived since the handlers were first
/// installed (between two runs of one command, e.g. while a checkpoint was
/// saved). Call it inside a Tokio runtime (it panics otherwise). The
/// handlers stay installed for the life of the process: once any of the
/// three signals has arrived, the next one more than [`SAME_REQUEST`]
/// later ends the process at once with [`EXIT_SECOND_SIGNAL`], without
/// flushing anything; it removes the process's shared-memory files
/// ([`fsin_shm::remove_owned_files`]), and the children that must not
/// outlive it die with it (they are started with a parent-death signal).
/// A signal whose handler cannot be installed is logged and left to its
/// default action.
pub fn stop_requested() -> impl Future<Output = &'static str> {
    install();
    let mut int = listen(SignalKind::interrupt(), "SIGINT");
    let mut term = listen(SignalKind::terminate(), "SIGTERM");
    let mut hup = listen(SignalKind::hangup(), "SIGHUP");
    async move {
        if let Some(name) = requested() {
            return name;
        }
        tokio::select! {
            Some(()) = recv(&mut int) => "SIGINT",
            Some(()) = recv(&mut term) => "SIGTERM",
            Some(()) = recv(&mut hup) => "SIGHUP",
            else => std::future::pending().await,
        }
    }
}

/// The name of the first signal that arrived since [`stop_requested`]
/// first installed the handlers; `None` before that, or if none arrived.
pub fn requested() -> Option<&'static str> {
    match REQUESTED.get()?.load(Ordering::SeqCst) {
        0 => None,
        n if n == SIGINT as usize => Some("SIGINT"),
        n if n == SIGTERM as usize => Some("SIGTERM"),
        n if n == SIGHUP as usize => Some("SIGHUP"),
        _ => Some("a signal"),
    }
}

/// The flag a synchronous loop polls to stop (fsin's `run::StopFlag`): the
/// number of the first of SIGINT, SIGTERM and SIGHUP to arrive, 0 until
/// then. Installs the handlers now, as [`stop_requested`] does (a second
/// signal, more than [`SAME_REQUEST`] after the first, ends the process
/// with [`EXIT_SECOND_SIGNAL`]).
pub fn stop_flag() -> Arc<AtomicUsize> {
    Arc::clone(install())
}

/// Makes the child that `cmd` starts die (SIGKILL) when this process does,
/// so that a process a second signal ends at once leaves no QEMU or fake
/// node behind, nor does one killed outright.
pub fn die_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl(2) only, between fork and exec: async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
                .map_err(std::io::Error::from)
        });
    }
}

/// Registers, once per process and for each of the three signals:
/// [`on_signal`] (the exit at a second signal), and the record of the
/// first signal's number in [`REQUESTED`], which it returns.
fn install() -> &'static Arc<AtomicUsize> {
    REQUESTED.get_or_init(|| {
        let requested = Arc::new(AtomicUsize::new(0));
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            // SAFETY: `on_signal` is async-signal-safe (a clock read,
            // atomics, unlink(2) and _exit(2)).
            if let Err(e) = unsafe { signal_hook::low_level::register(sig, on_signal) } {
                tracing::warn!("a second signal {sig} will not end the process at once: {e}");
            }
            let first = Arc::clone(&requested);
            // SAFETY: one compare-exchange on an atomic.
            let kept = unsafe {
                signal_hook::low_level::register(sig, move || {
                    let _ =
                        first.compare_exchange(0, sig as usize, Ordering::SeqCst, Ordering::SeqCst);
                })
            };
            if let Err(e) = kept {
                tracing::warn!("signal {sig} will not be remembered between runs: {e}");
            }
        }
        requested
    })
}

/// The handler of the three signals, run in signal context: the first
/// signal is noted; one more than [`SAME_REQUEST`] after it removes the
/// process's shared-memory files and ends the process with
/// [`EXIT_SECOND_SIGNAL`].
fn on_signal() {
    let now = fsin_sync::shm::monotonic_ns().saturating_add(1);
    if let Err(first) = FIRST_AT.compare_exchange(0, now, Ordering::SeqCst, Ordering::SeqCst) {
        if now.saturating_sub(first) > SAME_REQUEST.as_nanos() as u64 {
            fsin_shm::remove_owned_files();
            signal_hook::low_level::exit(EXIT_SECOND_SIGNAL);
        }
    }
}

fn listen(kind: SignalKind, name: &str) -> Option<Signal> {
    signal(kind)
        .map_err(|e| tracing::warn!("cannot handle {name}: {e}"))
        .ok()
}

async fn recv(s: &mut Option<Signal>) -> Option<()> {
    match s {
        Some(s) => s.recv().await,
        None => std::future::pending().await,
    }
}
