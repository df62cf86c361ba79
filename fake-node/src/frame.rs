//! Real Ethernet frames for the fake-node workloads: Ethernet II, IPv4
//! (header checksum computed), UDP, and an application payload that carries
//! its own FNV-1a checksum so receivers can prove a frame arrived intact.
//!
//! Node `n` has IPv4 address `10.0.H.L` (`H.L` = `n` in two bytes) and the
//! MAC the server assigned it. Payload layout (little-endian):
//! `b"FSIN"`, source node u32, destination node u32, sequence u64, send
//! cycle u64, kind u8, filler bytes, then the u32 checksum of all of it.

/// Ethernet + IPv4 + UDP header bytes.
pub const HEADERS: usize = 14 + 20 + 8;
/// Application header before the filler, and the trailing checksum.
const APP_HEADER: usize = 4 + 4 + 4 + 8 + 8 + 1;
const CHECKSUM: usize = 4;
/// Smallest payload a message can have.
pub const MIN_PAYLOAD: usize = APP_HEADER + CHECKSUM;
/// UDP port of the workloads.
pub const PORT: u16 = 7000;

/// What an application message says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppMessage {
    /// The sending node's id.
    pub src: u32,
    /// The receiving node's id.
    pub dst: u32,
    /// The sender's sequence number of the message.
    pub seq: u64,
    /// Node cycle at which the sender sent it.
    pub sent: u64,
    /// Workload-defined kind (e.g. ping or pong).
    pub kind: u8,
}

fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |h, &b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// IPv4 address of node `n`.
pub fn ip_of(n: u32) -> [u8; 4] {
    let b = (n as u16).to_be_bytes();
    [10, 0, b[0], b[1]]
}

/// Builds the frame of `m` from `src_mac` to `dst_mac` with a payload of
/// `payload` bytes (at least [`MIN_PAYLOAD`], so frames are at least 75
/// bytes, above the 60-byte Ethernet minimum).
pub fn build(m: &AppMessage, src_mac: &[u8], dst_mac: &[u8], payload: usize) -> Vec<u8> {
    let payload = payload.max(MIN_PAYLOAD);
    let mut f = Vec::with_capacity(HEADERS + payload);
    f.extend_from_slice(dst_mac);
    f.extend_from_slice(src_mac);
    f.extend_from_slice(&[0x08, 0x00]);
    let ip_len = (20 + 8 + payload) as u16;
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
    ip[4..6].copy_from_slice(&(m.seq as u16).to_be_bytes());
    ip[6] = 0x40; // don't fragment
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&ip_of(m.src));
    ip[16..20].copy_from_slice(&ip_of(m.dst));
    let sum = fsin_frames::ipv4_checksum(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&PORT.to_be_bytes());
    f.extend_from_slice(&PORT.to_be_bytes());
    f.extend_from_slice(&((8 + payload) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]); // no UDP checksum (allowed over IPv4)
    let start = f.len();
    f.extend_from_slice(b"FSIN");
    f.extend_from_slice(&m.src.to_le_bytes());
    f.extend_from_slice(&m.dst.to_le_bytes());
    f.extend_from_slice(&m.seq.to_le_bytes());
    f.extend_from_slice(&m.sent.to_le_bytes());
    f.push(m.kind);
    let fill = payload - MIN_PAYLOAD;
    f.extend((0..fill).map(|i| (i as u8).wrapping_mul(31) ^ m.seq as u8));
    let sum = fnv1a(&f[start..]);
    f.extend_from_slice(&sum.to_le_bytes());
    f
}

/// INSEE's "magic" statistics packet from node `src` (MAC `src_mac`):
/// UDP to 1.2.3.4 via MAC 11:22:33:44:55:66 whose first payload byte is
/// `command` (1 = CLEAR_STATS, start the measured phase; 2 = GET_STATS).
/// A MAC of other than 6 bytes leaves the source MAC zero (a magic packet
/// never enters the network).
pub fn magic(src: u32, src_mac: &[u8], command: u8) -> Vec<u8> {
    fsin_frames::magic_frame(src_mac.try_into().unwrap_or_default(), ip_of(src), command)
}

/// Parses a workload frame; `None` if it is not one or is damaged (IPv4
/// header checksum, lengths or payload checksum wrong).
pub fn parse(f: &[u8]) -> Option<AppMessage> {
    if f.len() < HEADERS + MIN_PAYLOAD || f[12..14] != [0x08, 0x00] {
        return None;
    }
    let ip = &f[14..34];
    if ip[9] != 17 || fsin_frames::ipv4_checksum(ip) != 0 {
        return None;
    }
    let udp_len = usize::from(u16::from_be_bytes([f[38], f[39]]));
    let payload = udp_len.checked_sub(8)?;
    let p = f.get(HEADERS..HEADERS + payload)?;
    if payload < MIN_PAYLOAD || &p[0..4] != b"FSIN" {
        return None;
    }
    let (body, sum) = p.split_at(payload - CHECKSUM);
    if fnv1a(body).to_le_bytes() != sum {
        return None;
    }
    let u32_at = |i: usize| u32::from_le_bytes(p[i..i + 4].try_into().expect("4 bytes"));
    let u64_at = |i: usize| u64::from_le_bytes(p[i..i + 8].try_into().expect("8 bytes"));
    Some(AppMessage {
        src: u32_at(4),
        dst: u32_at(8),
        seq: u64_at(12),
        sent: u64_at(20),
        kind: p[28],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_damage_is_detected() {
        let m = AppMessage {
            src: 3,
            dst: 258,
            seq: 77,
            sent: 123_456,
            kind: 2,
        };
        let mut f = build(&m, &[2, 0, 0, 0, 0, 3], &[2, 0, 0, 0, 1, 2], 200);
        assert_eq!(f.len(), HEADERS + 200);
        assert_eq!(&f[30..34], &[10, 0, 1, 2]);
        assert_eq!(parse(&f), Some(m));
        let small = build(&m, &[2; 6], &[4; 6], 0);
        assert_eq!(small.len(), 75);
        assert_eq!(parse(&small), Some(m));
        f[100] ^= 1;
        assert_eq!(parse(&f), None);
    }
}
