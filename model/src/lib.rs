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

pub mod deadlock;
pub mod engine;
pub mod router;
pub mod spec;
pub mod stats;
pub mod topology;
