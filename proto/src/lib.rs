//! The co-simulation protocol between node simulators and the `fsin` server.
//!
//! This crate is the one contract between processes (see docs/contracts.md,
//! "Co-simulation"): `fsin/v1/sync.proto`, compiled at build time by a
//! pure-Rust protobuf compiler (no system `protoc`), gives the prost
//! messages and the tonic client ([`v1::co_sim_client::CoSimClient`]) and
//! server ([`v1::co_sim_server`]). The `.proto` file documents every field.

/// Protobuf package of the current protocol version.
pub const PACKAGE: &str = "fsin.v1";

/// Protocol version number that a node announces when it attaches; the
/// server refuses any other value.
pub const PROTOCOL_VERSION: u32 = 1;

/// Generated messages and services of package `fsin.v1`.
#[allow(clippy::all, missing_docs)]
pub mod v1 {
    tonic::include_proto!("fsin.v1");
}

#[cfg(test)]
mod tests {
    use super::v1::{node_message, Attach, NodeMessage, NodeSpec};
    use prost::Message;

    #[test]
    fn package_names_the_version() {
        assert!(super::PACKAGE.ends_with(&format!("v{}", super::PROTOCOL_VERSION)));
    }

    #[test]
    fn attach_round_trips_through_the_wire_format() {
        let m = NodeMessage {
            body: Some(node_message::Body::Attach(Attach {
                protocol_version: super::PROTOCOL_VERSION,
                nodes: vec![NodeSpec {
                    node_id: Some(3),
                    mac: vec![2, 0, 0, 0, 0, 3],
                    clock_hz: 200_000_000,
                }],
                client_name: "test".into(),
                token: String::new(),
            })),
        };
        let bytes = m.encode_to_vec();
        assert_eq!(NodeMessage::decode(bytes.as_slice()).unwrap(), m);
    }
}
