//! fsin: a cycle-level interconnection-network simulator with FSIN
//! semantics (INSEE paper, INSEE), built as a plain synchronous engine.
//!
//! Layout: [`config`] (INSEE options), [`topology`] (one family per file),
//! [`router`] (flow control, routing, arbitration policies), [`traffic`]
//! (TrGen sources), [`stats`] (counters, batches, reports), [`engine`] (the
//! network state machine: `step`, `inject`, `drain_delivered`), its
//! [`deadlock`] detector, and [`sim`]
//! (TrGen's run methodology on top of the engine), [`workload`] (runs of
//! traces and application kernels), [`sweep`] (one key varied over
//! parallel runs, with plots).

pub mod bench;
pub mod config;
pub mod cosim;
pub mod deadlock;
pub mod engine;
pub mod limits;
pub mod router;
pub mod sim;
pub mod stats;
pub mod sweep;
pub mod topology;
pub mod traffic;
pub mod workload;
