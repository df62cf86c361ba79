//! The legacy protocol's two parsers of outside data, free of sockets so
//! that they can be fuzzed (`tests/fuzz.rs`): the sync datagrams of the
//! multicast group ([`parse_sync`]) and the frame stream of a node's TCP
//! connection ([`split_frames`]). Layouts: the crate's docs and
//! docs/contracts.md, "Legacy INSEE/Simics protocol".

use std::ops::Range;

/// A MAC address, as the legacy messages carry it.
pub type Mac = [u8; 6];

/// Largest frame accepted from a node, bytes (jumbo frame with VLAN tag).
pub const MAX_FRAME: usize = 9018;

/// A legacy sync message from a node.
#[derive(Debug, PartialEq)]
pub enum SyncMsg {
    /// `CONNECT:`, u64 nodes, `:`, MAC (23 bytes).
    Connect {
        /// Nodes its simulator has (the legacy protocol's count).
        nodes: u64,
        /// Its MAC.
        mac: Mac,
    },
    /// `TS:`, MAC, `:`, u64 node time in node cycles (18 bytes).
    Ts {
        /// The node's MAC.
        mac: Mac,
        /// Its node time, node cycles.
        time: u64,
    },
}

/// A sync datagram that is not one of the legacy protocol's.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum SyncError {
    /// A `CONNECT:` of another length than 23 bytes (its length).
    #[error("CONNECT of {0} bytes (want 23: \"CONNECT:\" u64 \":\" MAC)")]
    Connect(usize),
    /// A `TS:` of another length than 18 bytes (its length).
    #[error("TS of {0} bytes (want 18: \"TS:\" MAC \":\" u64)")]
    Ts(usize),
    /// Its first 12 bytes, and its length.
    #[error("unknown message {head:?} ({bytes} bytes)")]
    Unknown {
        /// Its first 12 bytes, as text.
        head: String,
        /// Its length, bytes.
        bytes: usize,
    },
}

/// Parses a datagram of the sync group; `Ok(None)` for the server's own
/// messages (`OK:`, `CONTINUE:`, looped back).
///
/// # Errors
/// [`SyncError`] naming what is wrong: a CONNECT or TS of the wrong
/// length or layout, or an unknown message (its first 12 bytes).
pub fn parse_sync(d: &[u8]) -> Result<Option<SyncMsg>, SyncError> {
    let mac = |b: &[u8]| -> Option<Mac> { b.try_into().ok() };
    let u64_at = |b: &[u8]| b.try_into().ok().map(u64::from_le_bytes);
    if d.starts_with(b"OK:") || d.starts_with(b"CONTINUE:") {
        return Ok(None);
    }
    if let Some(rest) = d.strip_prefix(b"CONNECT:") {
        return match (rest.len(), rest.get(8)) {
            (15, Some(b':')) => match (u64_at(&rest[..8]), mac(&rest[9..])) {
                (Some(nodes), Some(mac)) => Ok(Some(SyncMsg::Connect { nodes, mac })),
                _ => Err(SyncError::Connect(d.len())),
            },
            _ => Err(SyncError::Connect(d.len())),
        };
    }
    if let Some(rest) = d.strip_prefix(b"TS:") {
        return match (rest.len(), rest.get(6)) {
            (15, Some(b':')) => match (mac(&rest[..6]), u64_at(&rest[7..])) {
                (Some(mac), Some(time)) => Ok(Some(SyncMsg::Ts { mac, time })),
                _ => Err(SyncError::Ts(d.len())),
            },
            _ => Err(SyncError::Ts(d.len())),
        };
    }
    let head: String = d.iter().take(12).map(|&b| b as char).collect();
    Err(SyncError::Unknown {
        head,
        bytes: d.len(),
    })
}

/// What a node's frame stream holds so far: u16 little-endian length,
/// then that many bytes, again and again.
#[derive(Debug, PartialEq, Eq)]
pub struct Split {
    /// Where each whole frame's bytes are in the buffer, in order.
    pub frames: Vec<Range<usize>>,
    /// Bytes taken by those frames and their lengths (the rest waits for
    /// more bytes).
    pub consumed: usize,
    /// The length of a frame over [`MAX_FRAME`] that stopped the split:
    /// the connection is to be closed.
    pub oversized: Option<usize>,
}

/// Splits `buf`, the bytes read so far from a node's frame connection,
/// into whole frames ([`Split`]).
pub fn split_frames(buf: &[u8]) -> Split {
    let mut frames = Vec::new();
    let mut at = 0;
    let mut oversized = None;
    while let Some(head) = buf.get(at..at + 2) {
        let len = usize::from(u16::from_le_bytes([head[0], head[1]]));
        if len > MAX_FRAME {
            oversized = Some(len);
            break;
        }
        if buf.len() < at + 2 + len {
            break;
        }
        frames.push(at + 2..at + 2 + len);
        at += 2 + len;
    }
    Split {
        frames,
        consumed: at,
        oversized,
    }
}
