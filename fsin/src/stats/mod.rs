//! Statistics: the counters and summaries of the model
//! (`fsin_model::stats`, re-exported here), the detailed `plevel` outputs
//! ([`detail`]), the confidence intervals of batch means ([`interval`])
//! and the text report ([`report`]).

pub mod detail;
pub mod interval;

pub use fsin_model::stats::*;
