//! One slice loop for every node simulator, as SimBricks' adapters share
//! one library: a [`NodeSimulator`] runs a slice, sends its frames as they
//! leave and says what its nodes finished and when they next act; [`drive`]
//! waits for each Continue, runs the slice and ends it with SliceDone, until
//! the server shuts the run down, the stream breaks, a stop signal comes or
//! the simulator leaves.

use std::future::Future;
use std::time::Duration;

use fsin_proto::v1 as pb;

use crate::{ClientError, NodeLink, ServerEvent};

/// What a simulator does with a slice before its nodes run it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Begin {
    /// Run it ([`NodeSimulator::run_slice`]).
    Run,
    /// Leave the run instead (Detach, with this reason; no SliceDone).
    Leave(String),
}

/// How a slice ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SliceEnd {
    /// The workload reports of the nodes that completed in the slice.
    pub finished: Vec<pb::AppReport>,
    /// The promise that no node does anything on its own before this node
    /// cycle ([`NodeLink::idle_until`]); `None`: none made this slice.
    pub idle_until: Option<u64>,
}

/// A node simulator run in slices by [`drive`]: the fake nodes, the QEMU
/// guests, INSEE's legacy exd nodes. Its futures are `Send` when the
/// simulator's are (a spawned driver needs them to be); hence `async fn`.
#[allow(async_fn_in_trait)]
pub trait NodeSimulator {
    /// Its errors; a broken stream or a refused send is one of them.
    type Error: From<ClientError>;

    /// Called with each Continue before its slice runs: fault injection,
    /// deadlines, leaving. Default: run it.
    ///
    /// # Errors
    /// The simulator cannot go on.
    async fn begin(
        &mut self,
        _link: &mut NodeLink,
        _c: &pb::Continue,
    ) -> Result<Begin, Self::Error> {
        Ok(Begin::Run)
    }

    /// Runs slice `c` (node cycles `[c.start_cycle, c.start_cycle +
    /// c.node_cycles)`, with `c.frames` reaching its nodes): sends every
    /// frame its nodes send with [`NodeLink::send_frame`] as it leaves, and
    /// tells what nodes wait for with [`NodeLink::waiting`].
    ///
    /// # Errors
    /// The simulator cannot go on.
    async fn run_slice(
        &mut self,
        link: &mut NodeLink,
        c: &pb::Continue,
    ) -> Result<SliceEnd, Self::Error>;
}

/// Why [`drive`] returned.
#[derive(Debug)]
pub enum DriveEnd {
    /// The server ended the run for this client.
    Shutdown(pb::Shutdown),
    /// A stop signal came (its name): the client detached.
    Interrupted(&'static str),
    /// The simulator left (its reason): the client detached.
    Left(String),
    /// The stream broke or closed without Shutdown.
    Broken(ClientError),
}

/// Runs `sim` slice by slice on `link` until the run ends for it; `stop`
/// completes with the name of a signal that asks it to stop (then it
/// detaches). Gives why it ended and the slices it ended with SliceDone.
///
/// # Errors
/// The simulator's, or a Detach or SliceDone that cannot be sent.
pub async fn drive<S: NodeSimulator>(
    link: &mut NodeLink,
    sim: &mut S,
    stop: impl Future<Output = &'static str>,
) -> Result<(DriveEnd, u64), S::Error> {
    tokio::pin!(stop);
    let mut slices = 0;
    loop {
        let ev = tokio::select! {
            ev = link.next_event() => ev,
            sig = &mut stop => {
                link.detach(&format!("interrupted by {sig}"))?;
                // Let the stream carry the Detach before the runtime ends.
                tokio::time::sleep(Duration::from_millis(50)).await;
                return Ok((DriveEnd::Interrupted(sig), slices));
            }
        };
        let c = match ev {
            Ok(ServerEvent::Continue(c)) => c,
            Ok(ServerEvent::Shutdown(s)) => return Ok((DriveEnd::Shutdown(s), slices)),
            Ok(ServerEvent::Control(_)) => continue,
            Err(e) => return Ok((DriveEnd::Broken(e), slices)),
        };
        if let Begin::Leave(why) = sim.begin(link, &c).await? {
            link.detach(&why)?;
            return Ok((DriveEnd::Left(why), slices));
        }
        let end = sim.run_slice(link, &c).await?;
        if let Some(t) = end.idle_until {
            link.idle_until(t);
        }
        link.slice_done(c.slice, end.finished)?;
        slices += 1;
    }
}
