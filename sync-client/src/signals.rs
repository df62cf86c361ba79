//! SIGINT, SIGTERM and SIGHUP as one request to stop (`timeout`, `kill`,
//! a closed terminal and Ctrl-C all end a run the same way): the programs
//! flush what they have simulated, stop their children and remove their
//! files instead of dying with the default action.

use std::future::Future;

use tokio::signal::unix::{signal, Signal, SignalKind};

/// Installs the handlers now and returns a future that resolves with the
/// signal's name (`"SIGINT"`, `"SIGTERM"` or `"SIGHUP"`) at the first of
/// them to arrive. Call it inside a Tokio runtime (it panics otherwise).
/// The handlers stay installed for the life of the process, so a later
/// signal no longer kills it either. A signal whose handler cannot be
/// installed is logged and left to its default action.
pub fn stop_requested() -> impl Future<Output = &'static str> {
    let mut int = listen(SignalKind::interrupt(), "SIGINT");
    let mut term = listen(SignalKind::terminate(), "SIGTERM");
    let mut hup = listen(SignalKind::hangup(), "SIGHUP");
    async move {
        tokio::select! {
            Some(()) = recv(&mut int) => "SIGINT",
            Some(()) = recv(&mut term) => "SIGTERM",
            Some(()) = recv(&mut hup) => "SIGHUP",
            else => std::future::pending().await,
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
