//! `fsin-bench hostile IFACE COUNT`: a guest that misbehaves on its link,
//! for the test that a misbehaving guest costs only itself
//! (docs/cosim.md, "Frames a switch would not expect"). Through a raw
//! packet socket it sends, COUNT times each, in this order:
//! - a frame to a MAC address that no node has (52:54:00:00:ff:fe);
//! - a frame with another node's source address (52:54:00:00:00:63) to
//!   guest 2's address (52:54:00:00:00:02);
//! - a broadcast of garbage (an EtherType no one speaks, bytes 0..=199);
//! - a 20-byte frame to guest 1 (the NIC pads it to 60 bytes, as Ethernet
//!   requires).
//!
//! Then, with `fsin-bench hostile IFACE COUNT FLOOD`, a flood: FLOOD
//! full-size frames (1514 bytes) to guest 2, back to back, faster than a
//! link drains them, so that this guest's NIC queue (`nic_queue_bytes`)
//! fills and drops.
//!
//! Every frame has fixed contents, so runs repeat.

use std::ffi::CString;

/// The frames of one round, from this guest's MAC `me`.
pub fn frames(me: [u8; 6]) -> [Vec<u8>; 4] {
    let frame = |dst: [u8; 6], src: [u8; 6], ethertype: u16, body: &[u8]| {
        let mut f = Vec::with_capacity(14 + body.len());
        f.extend_from_slice(&dst);
        f.extend_from_slice(&src);
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(body);
        f
    };
    let body: Vec<u8> = (0..=199).collect();
    [
        frame([0x52, 0x54, 0, 0, 0xff, 0xfe], me, 0x88b5, &body[..46]),
        frame(
            [0x52, 0x54, 0, 0, 0, 2],
            [0x52, 0x54, 0, 0, 0, 0x63],
            0x88b5,
            &body[..46],
        ),
        frame([0xff; 6], me, 0x88b6, &body),
        frame([0x52, 0x54, 0, 0, 0, 1], me, 0x88b5, &body[..6]),
    ]
}

/// The flood's frame from `me`: 1500 bytes of payload to guest 2.
pub fn flood_frame(me: [u8; 6]) -> Vec<u8> {
    let mut f = Vec::with_capacity(1514);
    f.extend_from_slice(&[0x52, 0x54, 0, 0, 0, 2]);
    f.extend_from_slice(&me);
    f.extend_from_slice(&0x88b5u16.to_be_bytes());
    f.extend((0..1500).map(|i| (i % 251) as u8));
    f
}

/// Sends [`frames`] `count` times, then [`flood_frame`] `flood` times, on
/// interface `iface`; returns the `FSIN-HOSTILE` line (frames sent).
pub fn send(iface: &str, count: usize, flood: usize) -> Result<String, String> {
    let name = CString::new(iface).map_err(|_| format!("bad IFACE {iface:?}"))?;
    // SAFETY: plain calls with a NUL-terminated name and a valid sockaddr;
    // the socket is closed on every path.
    unsafe {
        let index = libc::if_nametoindex(name.as_ptr());
        if index == 0 {
            return Err(format!("no interface {iface}"));
        }
        let me = mac_of(iface)?;
        let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0);
        if fd < 0 {
            return Err(format!(
                "packet socket: {}",
                std::io::Error::last_os_error()
            ));
        }
        let mut addr: libc::sockaddr_ll = std::mem::zeroed();
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_ifindex = index as i32;
        addr.sll_halen = 6;
        let mut sent = 0;
        let rounds = std::iter::repeat_n(frames(me), count).flatten();
        let flood = std::iter::repeat_n(flood_frame(me), flood);
        for f in rounds.chain(flood) {
            let n = libc::sendto(
                fd,
                f.as_ptr().cast(),
                f.len(),
                0,
                (&raw const addr).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            );
            if n < 0 {
                let e = std::io::Error::last_os_error();
                libc::close(fd);
                return Err(format!("send on {iface}: {e}"));
            }
            sent += 1;
        }
        libc::close(fd);
        Ok(format!("FSIN-HOSTILE frames={sent}"))
    }
}

/// The MAC address of `iface`, from sysfs.
fn mac_of(iface: &str) -> Result<[u8; 6], String> {
    let path = format!("/sys/class/net/{iface}/address");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    let bytes: Vec<u8> = text
        .trim()
        .split(':')
        .filter_map(|h| u8::from_str_radix(h, 16).ok())
        .collect();
    bytes
        .try_into()
        .map_err(|_| format!("{path}: not a MAC address: {}", text.trim()))
}
