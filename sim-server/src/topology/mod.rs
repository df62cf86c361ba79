//! Topologies, one family per file. The k-ary n-cube family (meshes, tori,
//! twisted tori, midimew) is in [`cube`].

pub mod cube;

pub use cube::{Cube, Record, MAX_DIMS};
