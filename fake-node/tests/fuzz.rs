//! Fuzzing what a node receives and what the bridge routes:
//! any bytes given to the fake node's frame parser, to the router of
//! frames and to the magic-packet check give an answer, never a panic;
//! every workload frame parses back to its message, and a flipped bit in
//! its IPv4 header makes it damaged.

use fake_node::frame::{build, parse, AppMessage, HEADERS};
use fsin_frames::{
    is_magic, mac_for_node, packets_for_frame, route, FrameError, MacTable, MAX_FRAME_BYTES,
};
use proptest::prelude::*;

fn message() -> impl Strategy<Value = AppMessage> {
    (
        any::<u32>(),
        any::<u32>(),
        any::<u64>(),
        any::<u64>(),
        any::<u8>(),
    )
        .prop_map(|(src, dst, seq, sent, kind)| AppMessage {
            src,
            dst,
            seq,
            sent,
            kind,
        })
}

fn table() -> MacTable {
    let mut t = MacTable::new(8);
    for i in 0..8 {
        t.insert(i, mac_for_node(i)).unwrap();
    }
    t
}

proptest! {
    // A failing case is kept beside this file (fuzz.regressions), to be
    // committed: it then runs first, every time.
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_bytes_never_panic(f in prop::collection::vec(any::<u8>(), 0..200), long in 0usize..10_000) {
        let _ = parse(&f);
        let _ = is_magic(&f);
        let routed = route(&table(), &f);
        prop_assert_eq!(routed.is_ok(), (14..=MAX_FRAME_BYTES).contains(&f.len()));
        let mut big = f.clone();
        big.resize(long, 0xee);
        let _ = parse(&big);
        let _ = route(&table(), &big);
    }

    #[test]
    fn packet_counts_never_panic(bytes in 0usize..20_000, plength in 0u32..3, phit_bytes in 0u32..3) {
        match packets_for_frame(bytes, plength, phit_bytes) {
            Ok(n) => prop_assert_eq!(n as usize, bytes.div_ceil((plength * phit_bytes) as usize)),
            Err(FrameError::EmptyPackets { .. }) => prop_assert_eq!(plength * phit_bytes, 0),
            Err(_) => prop_assert!(!(14..=MAX_FRAME_BYTES).contains(&bytes)),
        }
    }

    #[test]
    fn workload_frames_parse_back_and_header_damage_shows(
        m in message(),
        payload in 0usize..2000,
        bit in 0usize..160,
    ) {
        let mut f = build(&m, &mac_for_node(1), &mac_for_node(2), payload);
        prop_assert_eq!(parse(&f), Some(m));
        // Bit `bit` of the 20-byte IPv4 header: its checksum catches any
        // single flipped bit.
        f[14 + bit / 8] ^= 1 << (bit % 8);
        prop_assert_eq!(parse(&f), None);
        // A frame cut anywhere inside its payload is damaged too.
        let mut cut = build(&m, &mac_for_node(1), &mac_for_node(2), payload);
        cut.truncate(HEADERS + payload.min(cut.len() - HEADERS - 1));
        prop_assert_eq!(parse(&cut), None);
    }
}
