//! The messages between the fsin QEMU plugin (inside each guest's QEMU) and
//! nic-bridge, on one Unix stream socket per guest. Times are guest virtual
//! time (`QEMU_CLOCK_VIRTUAL`), nanoseconds from the guest's start; with
//! `-icount shift=3` one node cycle is 8 ns.
//!
//! Every message is a little-endian u64 kind followed by little-endian u64
//! fields; a frame's bytes follow its length.
//!
//! nic-bridge -> plugin, per slice: any number of [`ToPlugin::Deliver`], then
//! one [`ToPlugin::Run`]. Plugin -> nic-bridge: a [`FromPlugin::Sent`] for
//! every frame the guest's NIC transmits, in order, and one
//! [`FromPlugin::Reached`] when the guest has reached the slice end.

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
    Deliver { at_ns: u64, frame: Vec<u8> },
    /// Run the guest until guest time `until_ns`, the slice end, then
    /// report [`FromPlugin::Reached`] and wait.
    Run { until_ns: u64 },
}

/// What the plugin tells nic-bridge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromPlugin {
    /// The guest's NIC transmitted `frame` at guest time `at_ns` (the
    /// instruction that wrote the transmit register).
    Sent { at_ns: u64, frame: Vec<u8> },
    /// The guest stopped at guest time `at_ns` (the slice end, or up to 7 ns
    /// past it). `idle_until_ns`: every vCPU is halted and nothing is due
    /// before this guest time but a delivered frame (its next timer;
    /// `u64::MAX` when it has none); 0 when it is busy.
    Reached { at_ns: u64, idle_until_ns: u64 },
}

const DELIVER: u64 = 1;
const RUN: u64 = 2;
const SENT: u64 = 1;
const REACHED: u64 = 2;

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
            Self::Run { until_ns } => put(out, &[RUN, *until_ns]),
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
            Some((RUN, until_ns, _, n)) => Some((Self::Run { until_ns }, n)),
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
            Self::Reached {
                at_ns,
                idle_until_ns,
            } => put(out, &[REACHED, *at_ns, *idle_until_ns]),
        }
    }

    /// The message at the front of `buf` and its length in bytes; `None`
    /// when `buf` does not hold a whole message yet.
    ///
    /// # Errors
    /// An unknown kind or a frame longer than [`MAX_FRAME`].
    pub fn decode(buf: &[u8]) -> Result<Option<(Self, usize)>, WireError> {
        if word(buf, 0) == Some(REACHED) {
            let (Some(at_ns), Some(idle_until_ns)) = (word(buf, 1), word(buf, 2)) else {
                return Ok(None);
            };
            return Ok(Some((
                Self::Reached {
                    at_ns,
                    idle_until_ns,
                },
                24,
            )));
        }
        Ok(match take(buf, SENT)? {
            None => None,
            Some((SENT, at_ns, frame, n)) => Some((Self::Sent { at_ns, frame }, n)),
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
            ToPlugin::Run { until_ns: 80_000 },
        ];
        let from = [
            FromPlugin::Sent {
                at_ns: 12_345,
                frame: vec![1, 2, 3],
            },
            FromPlugin::Reached {
                at_ns: 80_003,
                idle_until_ns: u64::MAX,
            },
        ];
        let mut bytes = Vec::new();
        to.iter().for_each(|m| m.encode(&mut bytes));
        // 24 + 60 bytes, then 16: no message before its last byte.
        assert_eq!(bytes.len(), 100);
        assert_eq!(ToPlugin::decode(&bytes[..83]), Ok(None));
        let (m, n) = ToPlugin::decode(&bytes).unwrap().unwrap();
        assert_eq!((m, n), (to[0].clone(), 84));
        assert_eq!(ToPlugin::decode(&bytes[84..99]), Ok(None));
        assert_eq!(
            ToPlugin::decode(&bytes[84..]),
            Ok(Some((to[1].clone(), 16)))
        );
        let mut bytes = Vec::new();
        from.iter().for_each(|m| m.encode(&mut bytes));
        assert_eq!(bytes.len(), 27 + 24);
        assert_eq!(FromPlugin::decode(&bytes[..26]), Ok(None));
        assert_eq!(FromPlugin::decode(&bytes), Ok(Some((from[0].clone(), 27))));
        assert_eq!(FromPlugin::decode(&bytes[27..50]), Ok(None));
        assert_eq!(
            FromPlugin::decode(&bytes[27..]),
            Ok(Some((from[1].clone(), 24)))
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
