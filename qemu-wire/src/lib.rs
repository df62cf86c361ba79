//! The messages between the fsin QEMU plugin (inside each guest's QEMU) and
//! nic-bridge: frames, on one Unix stream socket per guest, and slice
//! starts and ends, on one shared-memory [`board`] for all guests. Times are
//! guest virtual time (`QEMU_CLOCK_VIRTUAL`), nanoseconds from the guest's
//! start; with `-icount shift=3` one node cycle is 8 ns.
//!
//! Every socket message is a little-endian u64 kind followed by
//! little-endian u64 fields; a frame's bytes follow its length.
//!
//! nic-bridge -> plugin: a [`ToPlugin::Deliver`] for every frame due in the
//! coming slice, written before the slice starts on the board. Plugin ->
//! nic-bridge: a [`FromPlugin::Sent`] for every frame the guest's NIC
//! transmits, in order, [`FromPlugin::Woke`] when frames it delivers end
//! the guest's idle time, and [`FromPlugin::AllReached`] from the last
//! guest to reach a slice end.

#![warn(missing_docs)]

pub mod board;

/// Largest frame either side accepts, bytes (QEMU's e1000 sends at most
/// 16 384; the co-simulation's own limit, 9 018, is checked by nic-bridge).
pub const MAX_FRAME: usize = 65_536;

/// A malformed message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// A message kind that this side does not know.
    #[error("unknown message kind {0}")]
    Kind(u64),
    /// A frame length above [`MAX_FRAME`].
    #[error("frame of {0} bytes (at most {MAX_FRAME})")]
    Length(u64),
}

/// What nic-bridge tells the plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToPlugin {
    /// Hand `frame` to the guest's NIC when guest time reaches `at_ns`
    /// (at once if it already has). Deliveries come in time order.
    Deliver {
        /// Guest time, ns.
        at_ns: u64,
        /// The Ethernet frame, bytes.
        frame: Vec<u8>,
    },
}

/// What the plugin tells nic-bridge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromPlugin {
    /// The guest's NIC transmitted `frame` at guest time `at_ns` (the
    /// instruction that wrote the transmit register).
    Sent {
        /// Guest time, ns.
        at_ns: u64,
        /// The Ethernet frame, bytes.
        frame: Vec<u8>,
    },
    /// Every guest has reached the end of board round `round` (sent by the
    /// last to arrive). Where each stopped, and its idle promise, are on
    /// the board ([`board::Reached`]): `idle_until_ns`, every vCPU is
    /// halted and nothing is due before this guest time but a delivered
    /// frame (its next timer; `u64::MAX` when it has none); 0 when busy.
    AllReached {
        /// The board round.
        round: u64,
    },
    /// The frames delivered at guest time `at_ns` found every vCPU halted
    /// since guest time `idle_from_ns` (the last instruction before the
    /// halt): their arrival ends that idle time (a wait for the network,
    /// for `--trace-out`; docs/model.md, "Traces out of live runs").
    Woke {
        /// Guest time of the delivery, ns.
        at_ns: u64,
        /// Guest time the vCPUs halted from, ns.
        idle_from_ns: u64,
    },
}

const DELIVER: u64 = 1;
const SENT: u64 = 1;
const ALL_REACHED: u64 = 3;
const WOKE: u64 = 4;

fn put(out: &mut Vec<u8>, words: &[u64]) {
    for w in words {
        out.extend_from_slice(&w.to_le_bytes());
    }
}

/// The u64 at word `i` of `buf`, if `buf` holds it.
fn word(buf: &[u8], i: usize) -> Option<u64> {
    let b = buf.get(i * 8..i * 8 + 8)?;
    Some(u64::from_le_bytes(b.try_into().ok()?))
}

/// A decoded message: its kind, first word (time or value), frame (empty
/// for kinds without one) and length in bytes.
type Taken = (u64, u64, Vec<u8>, usize);

/// A message that is a frame (kind, time, length, bytes) or two words
/// (kind, value); `framed` tells which kind carries a frame.
fn take(buf: &[u8], framed: u64) -> Result<Option<Taken>, WireError> {
    let (Some(kind), Some(first)) = (word(buf, 0), word(buf, 1)) else {
        return Ok(None);
    };
    if kind != framed {
        return Ok(Some((kind, first, Vec::new(), 16)));
    }
    let Some(len) = word(buf, 2) else {
        return Ok(None);
    };
    if len > MAX_FRAME as u64 {
        return Err(WireError::Length(len));
    }
    let end = 24 + len as usize;
    Ok(buf.get(24..end).map(|f| (kind, first, f.to_vec(), end)))
}

impl ToPlugin {
    /// Appends the message's bytes to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Self::Deliver { at_ns, frame } => {
                put(out, &[DELIVER, *at_ns, frame.len() as u64]);
                out.extend_from_slice(frame);
            }
        }
    }

    /// The message at the front of `buf` and its length in bytes; `None`
    /// when `buf` does not hold a whole message yet.
    ///
    /// # Errors
    /// An unknown kind or a frame longer than [`MAX_FRAME`].
    pub fn decode(buf: &[u8]) -> Result<Option<(Self, usize)>, WireError> {
        Ok(match take(buf, DELIVER)? {
            None => None,
            Some((DELIVER, at_ns, frame, n)) => Some((Self::Deliver { at_ns, frame }, n)),
            Some((kind, ..)) => return Err(WireError::Kind(kind)),
        })
    }
}

impl FromPlugin {
    /// Appends the message's bytes to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Self::Sent { at_ns, frame } => {
                put(out, &[SENT, *at_ns, frame.len() as u64]);
                out.extend_from_slice(frame);
            }
            Self::AllReached { round } => put(out, &[ALL_REACHED, *round]),
            Self::Woke {
                at_ns,
                idle_from_ns,
            } => put(out, &[WOKE, *at_ns, *idle_from_ns]),
        }
    }

    /// The message at the front of `buf` and its length in bytes; `None`
    /// when `buf` does not hold a whole message yet.
    ///
    /// # Errors
    /// An unknown kind or a frame longer than [`MAX_FRAME`].
    pub fn decode(buf: &[u8]) -> Result<Option<(Self, usize)>, WireError> {
        if word(buf, 0) == Some(WOKE) {
            return Ok(word(buf, 1).zip(word(buf, 2)).map(|(at_ns, idle_from_ns)| {
                (
                    Self::Woke {
                        at_ns,
                        idle_from_ns,
                    },
                    24,
                )
            }));
        }
        Ok(match take(buf, SENT)? {
            None => None,
            Some((SENT, at_ns, frame, n)) => Some((Self::Sent { at_ns, frame }, n)),
            Some((ALL_REACHED, round, _, n)) => Some((Self::AllReached { round }, n)),
            Some((kind, ..)) => return Err(WireError::Kind(kind)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_decode_to_what_was_encoded_byte_by_byte() {
        let to = [
            ToPlugin::Deliver {
                at_ns: 8_000,
                frame: vec![7; 60],
            },
            ToPlugin::Deliver {
                at_ns: 16_000,
                frame: vec![8; 14],
            },
        ];
        let from = [
            FromPlugin::Sent {
                at_ns: 12_345,
                frame: vec![1, 2, 3],
            },
            FromPlugin::AllReached { round: 41 },
            FromPlugin::Woke {
                at_ns: 99_000,
                idle_from_ns: 97_512,
            },
        ];
        let mut bytes = Vec::new();
        to.iter().for_each(|m| m.encode(&mut bytes));
        // 24 + 60 bytes, then 24 + 14: no message before its last byte.
        assert_eq!(bytes.len(), 122);
        assert_eq!(ToPlugin::decode(&bytes[..83]), Ok(None));
        let (m, n) = ToPlugin::decode(&bytes).unwrap().unwrap();
        assert_eq!((m, n), (to[0].clone(), 84));
        assert_eq!(ToPlugin::decode(&bytes[84..121]), Ok(None));
        assert_eq!(
            ToPlugin::decode(&bytes[84..]),
            Ok(Some((to[1].clone(), 38)))
        );
        let mut bytes = Vec::new();
        from.iter().for_each(|m| m.encode(&mut bytes));
        assert_eq!(bytes.len(), 27 + 16 + 24);
        assert_eq!(FromPlugin::decode(&bytes[..26]), Ok(None));
        assert_eq!(FromPlugin::decode(&bytes), Ok(Some((from[0].clone(), 27))));
        assert_eq!(FromPlugin::decode(&bytes[27..42]), Ok(None));
        assert_eq!(
            FromPlugin::decode(&bytes[27..]),
            Ok(Some((from[1].clone(), 16)))
        );
        assert_eq!(FromPlugin::decode(&bytes[43..66]), Ok(None));
        assert_eq!(
            FromPlugin::decode(&bytes[43..]),
            Ok(Some((from[2].clone(), 24)))
        );
    }

    #[test]
    fn unknown_kinds_and_huge_frames_are_errors() {
        let mut bytes = Vec::new();
        put(&mut bytes, &[9, 0, 0]);
        assert_eq!(ToPlugin::decode(&bytes), Err(WireError::Kind(9)));
        assert_eq!(FromPlugin::decode(&bytes), Err(WireError::Kind(9)));
        let mut bytes = Vec::new();
        put(&mut bytes, &[1, 0, MAX_FRAME as u64 + 1]);
        assert_eq!(
            ToPlugin::decode(&bytes),
            Err(WireError::Length(MAX_FRAME as u64 + 1))
        );
        assert_eq!(
            FromPlugin::decode(&bytes),
            Err(WireError::Length(MAX_FRAME as u64 + 1))
        );
    }
}
