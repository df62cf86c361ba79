//! fsin: TrGen's run methodology over the fsin-rs layers below it (INSEE
//! paper; traces paper).
//!
//! The layers, each a crate, dependencies pointing down:
//! - `fsin-model`: the network model ([`engine`], [`topology`], [`router`],
//!   [`deadlock`], [`spec`], counters), built from typed specs;
//! - `fsin-traffic` ([`traffic`]): TrGen sources, patterns, kernels,
//!   placement and trace replay;
//! - `fsin-config` ([`config`]): INSEE's keys, files and `fsin help
//!   config`, turned into those typed specs, and the memory [`limits`];
//! - this crate: [`drive`] (the one loop that steps an engine, for every
//!   driver), [`counters`] (the network's counters of a timeline),
//!   [`run`] (what every run shares: report, options, errors),
//!   [`sim`] (warm-up, convergence, batches, shot mode), [`workload`]
//!   (traces and application kernels), [`sweep`] (one key
//!   varied over parallel runs, with plots), [`study`] (every study's
//!   table, CSV, JSON and plot files), [`figures`] (a report's scalar
//!   figures, which its text and CSV outputs follow), [`network_facts`]
//!   (a topology's summary and throughput bound, file topologies'
//!   bisections included), and the detailed
//!   outputs and text report of [`stats`].
//!
//! The co-simulation server is the crate `fsin-cosim`; the `fsin` command,
//! the crate `sim-server`.

#![warn(missing_docs)]

pub mod calibrate;
pub mod counters;
pub mod drive;
pub mod figures;
pub mod network_facts;
pub mod report;
pub mod run;
pub mod sim;
pub mod stats;
pub mod study;
pub mod sweep;
pub mod topology_svg;
pub mod workload;

pub use fsin_config::{self as config, limits};
pub use fsin_model::{deadlock, engine, network, router, spec, topology, ModelError};
pub use fsin_timeline as timeline;
pub use fsin_traffic as traffic;
