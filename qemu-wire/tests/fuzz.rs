//! Fuzzing the plugin wire: any bytes on either socket
//! direction decode to a message, "not yet", or an error, never a panic;
//! a decoded message is exactly the bytes it came from; every message
//! encodes and decodes back, and no strict prefix of it decodes.

use std::fmt::Debug;

use fsin_qemu_wire::{FromPlugin, ToPlugin, WireError, MAX_FRAME};
use proptest::prelude::*;

fn frame() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..200)
}

fn from_plugin() -> impl Strategy<Value = FromPlugin> {
    prop_oneof![
        (any::<u64>(), frame()).prop_map(|(at_ns, frame)| FromPlugin::Sent { at_ns, frame }),
        any::<u64>().prop_map(|round| FromPlugin::AllReached { round }),
        (any::<u64>(), any::<u64>()).prop_map(|(at_ns, idle_from_ns)| FromPlugin::Woke {
            at_ns,
            idle_from_ns
        }),
    ]
}

/// Bytes that look like messages: a kind from 0 to 5, words, and a
/// length that may lie, followed by arbitrary bytes.
fn shaped() -> impl Strategy<Value = Vec<u8>> {
    let length = prop_oneof![
        0u64..64,
        Just(MAX_FRAME as u64),
        Just(MAX_FRAME as u64 + 1),
        any::<u64>()
    ];
    (
        0u64..6,
        any::<u64>(),
        length,
        prop::collection::vec(any::<u8>(), 0..80),
    )
        .prop_map(|(kind, first, len, rest)| {
            let mut b = Vec::new();
            for w in [kind, first, len] {
                b.extend_from_slice(&w.to_le_bytes());
            }
            b.extend(rest);
            b
        })
}

/// Real messages of either direction, encoded by the wire's own
/// encoders, then kept, followed by more bytes, cut short, or with one
/// byte changed.
fn encoded() -> impl Strategy<Value = Vec<u8>> {
    let message = prop_oneof![
        from_plugin().prop_map(|m| {
            let mut b = Vec::new();
            m.encode(&mut b);
            b
        }),
        (any::<u64>(), frame()).prop_map(|(at_ns, frame)| {
            let mut b = Vec::new();
            ToPlugin::Deliver { at_ns, frame }.encode(&mut b);
            b
        }),
    ];
    (
        message,
        0u8..6,
        any::<prop::sample::Index>(),
        any::<u8>(),
        prop::collection::vec(any::<u8>(), 1..40),
    )
        .prop_map(|(mut b, how, at, byte, tail)| {
            match how {
                0 | 1 => {}
                2 | 3 => b.extend(tail),
                4 => b.truncate(at.index(b.len())),
                _ => {
                    let i = at.index(b.len());
                    b[i] ^= byte | 1;
                }
            }
            b
        })
}

/// A decoder of one direction of the wire.
type Decode<M> = fn(&[u8]) -> Result<Option<(M, usize)>, WireError>;

/// Whatever `buf` decodes to with `decode` is the bytes it took: encoding
/// it again with `encode` gives them back.
fn decodes_to_its_bytes<M: Debug>(buf: &[u8], decode: Decode<M>, encode: fn(&M, &mut Vec<u8>)) {
    if let Ok(Some((m, n))) = decode(buf) {
        let mut again = Vec::new();
        encode(&m, &mut again);
        assert_eq!(again, buf[..n], "{m:?}");
    }
}

/// Both directions of [`decodes_to_its_bytes`].
fn either_way_decodes_to_its_bytes(buf: &[u8]) {
    decodes_to_its_bytes(buf, FromPlugin::decode, FromPlugin::encode);
    decodes_to_its_bytes(buf, ToPlugin::decode, ToPlugin::encode);
}

/// `m` encodes with `encode` and decodes back with `decode`, followed by
/// `tail` or not, and no strict prefix of it decodes.
fn round_trips<M: Debug + PartialEq>(
    m: M,
    tail: Vec<u8>,
    decode: Decode<M>,
    encode: fn(&M, &mut Vec<u8>),
) -> Result<(), TestCaseError> {
    let mut buf = Vec::new();
    encode(&m, &mut buf);
    let n = buf.len();
    for cut in 0..n {
        prop_assert_eq!(decode(&buf[..cut]), Ok(None), "prefix of {}", cut);
    }
    buf.extend(tail);
    prop_assert_eq!(decode(&buf), Ok(Some((m, n))));
    Ok(())
}

proptest! {
    // A failing case is kept beside this file (fuzz.regressions), to be
    // committed: it then runs first, every time.
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_bytes_never_panic(buf in prop::collection::vec(any::<u8>(), 0..300)) {
        either_way_decodes_to_its_bytes(&buf);
    }

    #[test]
    fn shaped_bytes_decode_to_what_they_hold(buf in shaped()) {
        either_way_decodes_to_its_bytes(&buf);
    }

    #[test]
    fn encoded_bytes_decode_to_what_they_hold(buf in encoded()) {
        either_way_decodes_to_its_bytes(&buf);
    }

    #[test]
    fn from_plugin_round_trips(m in from_plugin(), tail in prop::collection::vec(any::<u8>(), 0..40)) {
        round_trips(m, tail, FromPlugin::decode, FromPlugin::encode)?;
    }

    #[test]
    fn to_plugin_round_trips(at_ns in any::<u64>(), frame in frame(), tail in prop::collection::vec(any::<u8>(), 0..40)) {
        round_trips(ToPlugin::Deliver { at_ns, frame }, tail, ToPlugin::decode, ToPlugin::encode)?;
    }
}

/// How many of 400 cases of `strategy` decode a message in either
/// direction.
fn decoded_of_400(strategy: impl Strategy<Value = Vec<u8>>) -> usize {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    (0..400)
        .filter(|_| {
            let buf = strategy.new_tree(&mut runner).unwrap().current();
            matches!(FromPlugin::decode(&buf), Ok(Some(_)))
                || matches!(ToPlugin::decode(&buf), Ok(Some(_)))
        })
        .count()
}

/// The encoded messages reach the decoders' whole path at least half
/// the time (309 of 400 on 2026-12-06: kept or followed by more bytes,
/// two thirds of the cases, and some with a changed byte), and not
/// always (the cuts); the shaped bytes decode a third of the time (137)
/// and the arbitrary ones never, which is why the encoded ones are
/// there.
#[test]
fn encoded_bytes_often_decode() {
    let encoded = decoded_of_400(encoded());
    assert!((200..400).contains(&encoded), "{encoded} of 400 decoded");
}
