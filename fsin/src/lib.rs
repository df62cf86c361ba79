//! fsin: a cycle-level interconnection-network simulator with FSIN
//! semantics (INSEE paper), above the network model of crate `fsin-model`.
//!
//! Layout: the model ([`engine`], [`topology`], [`router`], [`deadlock`],
//! [`spec`], the counters of [`stats`]) comes from `fsin-model`; this crate
//! adds [`config`] (INSEE options, turned into a [`spec::NetworkSpec`]),
//! [`traffic`] (TrGen sources), [`sim`] (TrGen's run methodology on top of
//! the engine), [`workload`] (runs of traces and application kernels),
//! [`sweep`] (one key varied over parallel runs, with plots), the detailed
//! outputs and text report of [`stats`] and [`limits`]. The co-simulation
//! server is the crate `fsin-cosim`; the `fsin` command, the crate
//! `sim-server`.

pub mod config;
pub mod drive;
pub mod limits;
pub mod sim;
pub mod stats;
pub mod sweep;
pub mod traffic;
pub mod workload;

pub use fsin_model::{deadlock, engine, router, spec, topology, ModelError};
