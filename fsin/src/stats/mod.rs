//! Statistics: the counters and summaries of the model
//! (`fsin_model::stats`, re-exported here), the detailed `plevel` outputs
//! ([`detail`]) and the text report ([`report`]).

pub mod detail;
pub mod report;

pub use fsin_model::stats::*;
