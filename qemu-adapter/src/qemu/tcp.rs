//! TCP retransmissions counted from the frames the guests send (the
//! report's `tcp_retransmissions`): per connection and direction, a
//! segment whose sequence space (its payload, plus one for SYN and FIN)
//! ends at or before the highest end already sent carries nothing new, so
//! the guest's TCP sent it again (after a timeout, or on duplicate
//! acknowledgements). The Simics paper's Fig. 4 turns on them: IPR helped
//! through TCP in a saturated ring.

use std::collections::HashMap;

/// One direction of a TCP connection: source and destination IPv4
/// address and port.
type Flow = ([u8; 4], [u8; 4], u16, u16);

/// The segments of every connection seen so far.
#[derive(Debug, Default)]
pub(super) struct TcpWatch {
    /// Highest sequence-space end sent per connection and direction.
    highest: HashMap<Flow, u32>,
    /// Segments that carry sequence space, and those sent again.
    pub(super) segments: u64,
    pub(super) retransmissions: u64,
}

/// The flow, first sequence number, sequence-space length and flags of
/// a TCP segment over IPv4 in Ethernet `frame`; `None` for anything else.
fn segment(frame: &[u8]) -> Option<(Flow, u32, u32, u8)> {
    if frame.get(12..14)? != [0x08, 0x00] {
        return None;
    }
    let ip = frame.get(14..)?;
    let ihl = usize::from(ip.first()? & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([*ip.get(2)?, *ip.get(3)?]));
    if *ip.get(9)? != 6 || ihl < 20 || total < ihl || total > ip.len() {
        return None;
    }
    let tcp = ip.get(ihl..total)?;
    let doff = usize::from(tcp.get(12)? >> 4) * 4;
    if doff < 20 || doff > tcp.len() {
        return None;
    }
    let flags = *tcp.get(13)?;
    let syn_fin = u32::from(flags & 0x02 != 0) + u32::from(flags & 0x01 != 0);
    let flow = (
        ip.get(12..16)?.try_into().ok()?,
        ip.get(16..20)?.try_into().ok()?,
        u16::from_be_bytes([tcp[0], tcp[1]]),
        u16::from_be_bytes([tcp[2], tcp[3]]),
    );
    let seq = u32::from_be_bytes(tcp.get(4..8)?.try_into().ok()?);
    Some((flow, seq, (tcp.len() - doff) as u32 + syn_fin, flags))
}

/// Whether Ethernet `frame` is a TCP pure acknowledgement: no payload,
/// no SYN or FIN (no sequence space) and no RST.
pub(super) fn is_pure_ack(frame: &[u8]) -> bool {
    matches!(segment(frame), Some((_, _, 0, flags)) if flags & 0x04 == 0)
}

impl TcpWatch {
    /// A frame a guest sent.
    pub(super) fn sent(&mut self, frame: &[u8]) {
        let Some((flow, seq, len, _)) = segment(frame) else {
            return;
        };
        if len == 0 {
            return;
        }
        self.segments += 1;
        let end = seq.wrapping_add(len);
        match self.highest.get_mut(&flow) {
            None => {
                self.highest.insert(flow, end);
            }
            // Serial-number order (RFC 1982): ahead by less than 2^31.
            Some(h) if (end.wrapping_sub(*h) as i32) > 0 => *h = end,
            Some(_) => self.retransmissions += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An Ethernet + IPv4 + TCP frame from 10.0.0.1:5000 to 10.0.0.2:80.
    fn tcp(seq: u32, flags: u8, payload: usize) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 20 + payload];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[16..18].copy_from_slice(&((40 + payload) as u16).to_be_bytes());
        f[23] = 6;
        f[26..30].copy_from_slice(&[10, 0, 0, 1]);
        f[30..34].copy_from_slice(&[10, 0, 0, 2]);
        f[34..36].copy_from_slice(&5000u16.to_be_bytes());
        f[36..38].copy_from_slice(&80u16.to_be_bytes());
        f[38..42].copy_from_slice(&seq.to_be_bytes());
        f[46] = 5 << 4;
        f[47] = flags;
        f
    }

    /// A SYN, two data segments, a pure acknowledgement (no sequence
    /// space), the second segment again, a SYN again, and a segment across
    /// the 2^32 wrap: two retransmissions in six segments.
    #[test]
    fn segments_that_add_no_sequence_space_are_retransmissions() {
        let mut w = TcpWatch::default();
        w.sent(&tcp(100, 0x02, 0));
        w.sent(&tcp(101, 0x10, 1000));
        w.sent(&tcp(1101, 0x10, 500));
        w.sent(&tcp(1601, 0x10, 0));
        w.sent(&tcp(1101, 0x10, 500));
        w.sent(&tcp(100, 0x02, 0));
        assert_eq!((w.segments, w.retransmissions), (5, 2));
        // Of these, only the segment without payload or SYN is a pure
        // acknowledgement; a RST without payload is not one.
        assert!(is_pure_ack(&tcp(1601, 0x10, 0)));
        assert!(!is_pure_ack(&tcp(100, 0x02, 0)) && !is_pure_ack(&tcp(101, 0x10, 1000)));
        assert!(!is_pure_ack(&tcp(1601, 0x14, 0)) && !is_pure_ack(&[0u8; 60]));
        let mut w = TcpWatch::default();
        w.sent(&tcp(u32::MAX - 99, 0x10, 100));
        w.sent(&tcp(0, 0x10, 100));
        w.sent(&tcp(u32::MAX - 99, 0x10, 100));
        assert_eq!((w.segments, w.retransmissions), (3, 1));
        // Not TCP over IPv4, or cut short: ignored.
        let mut udp = tcp(1, 0x10, 10);
        udp[23] = 17;
        w.sent(&udp);
        w.sent(&tcp(1, 0x10, 10)[..50]);
        assert_eq!(w.segments, 3);
    }
}
