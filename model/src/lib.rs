//! The network model of fsin-rs, with FSIN's cycle semantics (INSEE
//! paper, section 2): what a network is ([`spec`]), its topology families
//! ([`topology`], one per file), the router policies ([`router`]: flow
//! control, routing, request, arbitration), the cycle-level engine
//! ([`engine`]: `step`, `inject`, `drain_delivered`), its deadlock detector
//! ([`deadlock`]) and the counters and summaries of a measurement window
//! ([`stats`]).
//!
//! It takes a typed [`spec::NetworkSpec`] and knows nothing of INSEE's key
//! names, files, traffic, async, gRPC, command lines or plots: those are
//! the layers above (`fsin`, the configuration and methodology; the
//! co-simulation server).

#![warn(missing_docs)]

pub mod channel_load;
mod crew;
pub mod deadlock;
pub mod engine;
mod fabric;
pub mod network;
pub mod router;
pub mod spec;
pub mod stats;
pub mod topology;

/// Why the model cannot build a network from a [`spec::NetworkSpec`] (the
/// configuration layer refuses such specs before they get here).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The failed links (`faults`) cannot be failed or routed around.
    #[error(transparent)]
    Faults(#[from] topology::FaultsError),
    /// A router would have more input queues than the engine indexes
    /// (ports x virtual channels + injection queues, at most 127).
    #[error(
        "a router would have {0} input queues; the engine takes at most 127 (ports x nchan + ninj)"
    )]
    TooManyQueues(usize),
    /// The threads of a network in several parts (`threads`) could not be
    /// started.
    #[error("cannot start the network's threads: {0}")]
    Threads(String),
}
