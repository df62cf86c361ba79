//! One co-simulation run as one call: the server on a listening socket,
//! the node simulators that an [`Adapter`] starts for it (fake nodes, QEMU
//! guests, legacy INSEE clients, or nodes from outside that start
//! themselves), and one typed report of both ([`SessionReport`]).
//! `fsin demo`, `fsin serve`, `fsin qemu`, the sweeps and the studies all
//! run through [`run`] (docs/architecture.md, "A co-simulation session").

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::Serialize;
use tokio::net::TcpListener;

use crate::report::CosimReport;
use crate::server::{self, ServeError};
use crate::ServeOptions;

/// How long a run goes on after its node simulators ended on their own
/// ([`Adapter::start`]'s future): frames in flight still arrive, and the
/// server's own fault detection may name the cause first.
pub const EARLY_END_GRACE: Duration = Duration::from_secs(2);

/// A future that resolves, with the reason, when the node simulators have
/// ended before the run did.
pub type EndedEarly = Pin<Box<dyn Future<Output = String> + Send>>;

/// The node simulators of a session: started once the server listens,
/// finished once its run has ended.
pub trait Adapter {
    /// What the node simulators report beside the server's report; a
    /// struct, whose JSON keys go beside the server's
    /// ([`SessionReport::nodes`]).
    type Report: Serialize;
    /// What can go wrong starting or finishing them.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Starts the node simulators for the server at `url`
    /// (`http://IP:PORT`). The future it returns resolves when they end
    /// before the run does (the run then ends [`EARLY_END_GRACE`] later);
    /// node simulators that end only when the server tells them give
    /// [`never`].
    ///
    /// # Errors
    /// They cannot be started (the run then does not start either).
    fn start(&mut self, url: &str) -> Result<EndedEarly, Self::Error>;

    /// After the run (`run`: the server's report), waits a bounded time
    /// for the node simulators to end and gives their report. Dropping
    /// the adapter instead (a run that failed) stops them.
    ///
    /// # Errors
    /// They did not end in time, or their end cannot be read.
    fn finish(
        self,
        run: &CosimReport,
    ) -> impl Future<Output = Result<Self::Report, Self::Error>> + Send;
}

/// An [`Adapter::start`] future for node simulators that end only when
/// the server tells them.
pub fn never() -> EndedEarly {
    Box::pin(std::future::pending())
}

/// The report of a session: the server's, and the node simulators' own
/// part beside it (one JSON object: the keys of both).
#[derive(Debug, Clone, Serialize)]
pub struct SessionReport<R> {
    /// What the server measured.
    #[serde(flatten)]
    pub run: CosimReport,
    /// What the adapter's node simulators report.
    #[serde(flatten)]
    pub nodes: R,
}

impl<R: Serialize> SessionReport<R> {
    /// The report as one JSON object with its keys sorted, as `--json`
    /// prints it and `report.json` holds it.
    ///
    /// # Errors
    /// A part of the adapter's report does not serialise (a map with
    /// keys that are not strings).
    pub fn json(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::to_value(self)
    }
}

/// Why a session gave no report.
#[derive(Debug, thiserror::Error)]
pub enum SessionError<E: std::error::Error + 'static> {
    /// The listening socket has no address to give the node simulators.
    #[error("cannot read the listening address: {0}")]
    Address(#[source] std::io::Error),
    /// The server could not run.
    #[error(transparent)]
    Serve(#[from] ServeError),
    /// The node simulators could not start or finish.
    #[error(transparent)]
    Nodes(E),
}

/// Runs one co-simulation: the server of `options` on `listener`, the
/// node simulators of `adapter` attached to it, until the run ends
/// (every node finished, `--slices`, a fault, a deadlock, `interrupt`
/// resolving with a reason, or the node simulators ending on their own).
///
/// # Errors
/// [`SessionError`]: the server could not start (datagram socket, pcap
/// file), or the node simulators could not start or finish. A run that
/// ends badly is a report with `ok` false, not an error.
pub async fn run<A: Adapter>(
    options: ServeOptions,
    listener: TcpListener,
    mut adapter: A,
    interrupt: impl Future<Output = String> + Send + 'static,
) -> Result<SessionReport<A::Report>, SessionError<A::Error>> {
    let addr = listener.local_addr().map_err(SessionError::Address)?;
    let ended = adapter
        .start(&format!("http://{addr}"))
        .map_err(SessionError::Nodes)?;
    let interrupt = async move {
        tokio::select! {
            why = interrupt => why,
            why = async {
                let why = ended.await;
                tokio::time::sleep(EARLY_END_GRACE).await;
                why
            } => why,
        }
    };
    let run = server::serve(options, listener, interrupt).await?;
    let nodes = adapter.finish(&run).await.map_err(SessionError::Nodes)?;
    Ok(SessionReport { run, nodes })
}
