//! The co-simulation protocol between node simulators and the `fsin` server.
//!
//! This crate is the one contract between processes (see `DESIGN.md`,
//! "Co-simulation"). The gRPC service `fsin.v1` (slice-based lock-step:
//! attach, frames, `SliceDone(k)`, `Continue(k+1)`, control) is defined in
//! the co-simulation server issue; until then this crate carries only the
//! protocol identity that both sides check at attach time.

/// Protobuf package of the current protocol version.
pub const PACKAGE: &str = "fsin.v1";

/// Protocol version number that a node announces when it attaches; the
/// server refuses any other value.
pub const PROTOCOL_VERSION: u32 = 1;

#[cfg(test)]
mod tests {
    #[test]
    fn package_names_the_version() {
        assert!(super::PACKAGE.ends_with(&format!("v{}", super::PROTOCOL_VERSION)));
    }
}
