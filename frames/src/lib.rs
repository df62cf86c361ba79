//! Traffic manager of the Simics paper (section 5): Ethernet frames <-> network
//! packets.
//!
//! A frame of `B` bytes crosses the network as `ceil(B / (plength *
//! phit_bytes))` packets (at least one) to the node owning the destination
//! MAC; it is delivered when its last packet arrives (docs/contracts.md,
//! "Co-simulation"). Broadcast and multicast frames go to every other node.
//! The traffic manager is plain data and arithmetic, used by the server:
//! [`MacTable`] maps MACs to node ids, [`route`] decides where a frame goes,
//! [`Reassembly`] counts the packets of frames in flight, and [`pcap`]
//! writes captures. The adapters that use it are crates of their own: `qemu-adapter` (QEMU guests, binary
//! `nic-bridge`) and `legacy-exd` (INSEE's original protocol).

#![warn(missing_docs)]

pub mod pcap;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use thiserror::Error;

/// Smallest Ethernet frame accepted: destination, source and EtherType.
pub const MIN_FRAME_BYTES: usize = 14;
/// Largest Ethernet frame accepted (jumbo frame with VLAN tag).
pub const MAX_FRAME_BYTES: usize = 9_018;

/// A 6-byte Ethernet MAC address.
pub type Mac = [u8; 6];

/// Offset of the command byte in INSEE's "magic" statistics packet:
/// Ethernet (14) + IPv4 (20) + UDP (8) headers. Commands: 1 CLEAR_STATS,
/// 2 GET_STATS.
pub const MAGIC_PAYLOAD: usize = 42;

/// Command byte of fsin-rs's own magic packet, not INSEE's: guest 0 of a
/// booting `fsin qemu` cluster asks nic-bridge to save the cluster
/// (docs/qemu.md, "Boot once, run many"). nic-bridge keeps it from the
/// server.
pub const MAGIC_CHECKPOINT: u8 = b'C';

/// Command byte of fsin-rs's MPI trace datagrams, not INSEE's: a rank of
/// `fsin qemu --trace-level mpi` sends its records to the host in these
/// (docs/contracts.md, "MPI trace records"). nic-bridge keeps them from
/// the server.
pub const MAGIC_MPI_TRACE: u8 = b'M';

/// Command byte of fsin-rs's region-of-interest datagrams, not INSEE's: a
/// rank of `fsin qemu --roi mpi|marker` tells the host that its region
/// begins or ends (docs/contracts.md, "Region of interest"). nic-bridge
/// keeps them from the server.
pub const MAGIC_REGION: u8 = b'R';

/// The magic packets' destination MAC, IPv4 address and UDP port
/// (INSEE's, docs/contracts.md).
pub const MAGIC_MAC: Mac = [0x11, 0x22, 0x33, 0x44, 0x55, 0x66];
/// See [`MAGIC_MAC`].
pub const MAGIC_IP: [u8; 4] = [1, 2, 3, 4];
/// See [`MAGIC_MAC`].
pub const MAGIC_PORT: u16 = 5041;

/// The Internet checksum of an IPv4 header (RFC 791): the ones' complement
/// of the ones' complement sum of its 16-bit words; a header that carries
/// its right checksum sums to 0.
pub fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An Ethernet II frame of one IPv4 UDP datagram: `payload` from
/// `src_ip:sport` to `dst_ip:dport`, IPv4 header checksum computed, no UDP
/// checksum (allowed over IPv4), padded with zeros to Ethernet's 60-byte
/// minimum. The caller keeps `payload` within one frame
/// ([`MAX_FRAME_BYTES`] less 42 bytes of headers).
pub fn udp_frame(
    dst_mac: Mac,
    src_mac: Mac,
    (src_ip, sport): ([u8; 4], u16),
    (dst_ip, dport): ([u8; 4], u16),
    payload: &[u8],
) -> Vec<u8> {
    let mut f = Vec::with_capacity((MAGIC_PAYLOAD + payload.len()).max(60));
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&src_mac);
    f.extend_from_slice(&[0x08, 0x00]);
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&((20 + 8 + payload.len()) as u16).to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&src_ip);
    ip[16..20].copy_from_slice(&dst_ip);
    let sum = ipv4_checksum(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    f.resize(f.len().max(60), 0);
    f
}

/// INSEE's "magic" statistics packet from `src_mac`/`src_ip`: UDP to
/// [`MAGIC_IP`] via [`MAGIC_MAC`] whose payload is `command` (1 =
/// CLEAR_STATS, start the measured phase; 2 = GET_STATS) and 17 zero bytes.
pub fn magic_frame(src_mac: Mac, src_ip: [u8; 4], command: u8) -> Vec<u8> {
    let mut payload = [0u8; 18];
    payload[0] = command;
    udp_frame(
        MAGIC_MAC,
        src_mac,
        (src_ip, MAGIC_PORT),
        (MAGIC_IP, MAGIC_PORT),
        &payload,
    )
}

/// Whether a frame is INSEE's "magic" packet: to MAC 11:22:33:44:55:66,
/// IPv4 UDP to 1.2.3.4 (docs/contracts.md, legacy protocol).
pub fn is_magic(f: &[u8]) -> bool {
    f.len() > MAGIC_PAYLOAD
        && f[0..6] == MAGIC_MAC
        && f[12..14] == [0x08, 0x00]
        && f[23] == 17
        && f[30..34] == MAGIC_IP
}

/// Why a frame cannot cross the network.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum FrameError {
    /// Shorter than an Ethernet header.
    #[error("frame of {0} bytes is shorter than the 14-byte Ethernet header")]
    TooShort(usize),
    /// Longer than [`MAX_FRAME_BYTES`].
    #[error("frame of {0} bytes exceeds the 9018-byte limit")]
    TooLong(usize),
    /// Packets that carry nothing: `plength` or `phit_bytes` is 0.
    #[error("packets of {plength} phits of {phit_bytes} bytes carry no bytes")]
    EmptyPackets {
        /// Phits per packet.
        plength: u32,
        /// Bytes per phit.
        phit_bytes: u32,
    },
}

/// Errors building a [`MacTable`].
#[derive(Debug, Error, PartialEq, Eq)]
pub enum MacError {
    /// Two nodes claim one MAC.
    #[error("MAC {mac} is claimed by node {first} and node {second}")]
    Duplicate {
        /// The MAC.
        mac: MacText,
        /// The first node that claims it.
        first: u32,
        /// The other.
        second: u32,
    },
    /// A group (multicast) address cannot name a node.
    #[error("MAC {0} is a group address (lowest bit of the first byte set)")]
    Group(MacText),
    /// Not 6 bytes long.
    #[error("a MAC has 6 bytes, got {0}")]
    Length(usize),
}

/// A MAC written as `aa:bb:cc:dd:ee:ff` (for messages and reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MacText(pub Mac);

impl std::fmt::Display for MacText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let m = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            m[0], m[1], m[2], m[3], m[4], m[5]
        )
    }
}

/// The MAC the server gives node `id` when the node brings none:
/// `02:00:00:00:HH:LL` (locally administered, unicast; ids above 65535 use
/// the bytes before).
pub fn mac_for_node(id: u32) -> Mac {
    let b = id.to_be_bytes();
    [0x02, 0x00, b[0], b[1], b[2], b[3]]
}

/// Parses a MAC from its 6 raw bytes.
///
/// # Errors
/// [`MacError::Length`] for any other length.
pub fn mac_from_bytes(bytes: &[u8]) -> Result<Mac, MacError> {
    bytes.try_into().map_err(|_| MacError::Length(bytes.len()))
}

/// Whether `mac` is a group address (broadcast or multicast).
pub fn is_group(mac: &Mac) -> bool {
    mac[0] & 1 == 1
}

/// Destination MAC of a frame of at least 14 bytes.
pub fn dst_mac(frame: &[u8]) -> Mac {
    frame[0..6]
        .try_into()
        .expect("frame checked to hold a header")
}

/// Node id <-> MAC map of one run.
#[derive(Debug, Clone, Default)]
pub struct MacTable {
    macs: Vec<Option<Mac>>,
    nodes: HashMap<Mac, u32>,
}

impl MacTable {
    /// An empty table for `nodes` node ids.
    pub fn new(nodes: usize) -> Self {
        MacTable {
            macs: vec![None; nodes],
            nodes: HashMap::new(),
        }
    }

    /// Gives `mac` to `node` (replacing the node's previous MAC).
    ///
    /// # Errors
    /// [`MacError::Duplicate`] if another node owns `mac`,
    /// [`MacError::Group`] for a group address.
    ///
    /// # Panics
    /// If `node` is beyond the table.
    pub fn insert(&mut self, node: u32, mac: Mac) -> Result<(), MacError> {
        if is_group(&mac) {
            return Err(MacError::Group(MacText(mac)));
        }
        if let Some(&first) = self.nodes.get(&mac) {
            if first != node {
                return Err(MacError::Duplicate {
                    mac: MacText(mac),
                    first,
                    second: node,
                });
            }
        }
        if let Some(old) = self.macs[node as usize].replace(mac) {
            self.nodes.remove(&old);
        }
        self.nodes.insert(mac, node);
        Ok(())
    }

    /// MAC of `node`, if it has one.
    pub fn mac(&self, node: u32) -> Option<Mac> {
        self.macs.get(node as usize).copied().flatten()
    }

    /// Node owning `mac`.
    pub fn node(&self, mac: &Mac) -> Option<u32> {
        self.nodes.get(mac).copied()
    }
}

/// Where a frame goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// To one node.
    Unicast(u32),
    /// To every node but the sender (broadcast and multicast).
    AllOthers,
    /// The destination MAC belongs to no node (counted, dropped).
    Unknown,
}

/// Checks a frame's size and decides its destination.
///
/// # Errors
/// [`FrameError`] when the frame is outside `14..=9018` bytes.
pub fn route(table: &MacTable, frame: &[u8]) -> Result<Route, FrameError> {
    check_size(frame.len())?;
    let dst = dst_mac(frame);
    Ok(if is_group(&dst) {
        Route::AllOthers
    } else {
        match table.node(&dst) {
            Some(n) => Route::Unicast(n),
            None => Route::Unknown,
        }
    })
}

fn check_size(bytes: usize) -> Result<(), FrameError> {
    if bytes < MIN_FRAME_BYTES {
        return Err(FrameError::TooShort(bytes));
    }
    if bytes > MAX_FRAME_BYTES {
        return Err(FrameError::TooLong(bytes));
    }
    Ok(())
}

/// Number of network packets that carry a frame of `bytes` bytes, with
/// packets of `plength` phits of `phit_bytes` bytes each.
///
/// # Errors
/// [`FrameError`] when the frame is outside `14..=9018` bytes, or when
/// `plength` or `phit_bytes` is 0.
pub fn packets_for_frame(bytes: usize, plength: u32, phit_bytes: u32) -> Result<u32, FrameError> {
    check_size(bytes)?;
    let per_packet = (plength as usize) * (phit_bytes as usize);
    if per_packet == 0 {
        return Err(FrameError::EmptyPackets {
            plength,
            phit_bytes,
        });
    }
    Ok(bytes.div_ceil(per_packet) as u32)
}

/// Frames in flight, each waiting for its packets. Ids are slots reused
/// lowest-first after delivery, so the same sequence of calls always gives
/// the same ids (determinism).
#[derive(Debug, Clone)]
pub struct Reassembly<T> {
    slots: Vec<Option<(u32, T)>>,
    /// Free slots, lowest on top (a min-heap: O(log n) per frame with a
    /// million frames in flight).
    free: BinaryHeap<Reverse<u64>>,
    in_flight: usize,
}

impl<T> Default for Reassembly<T> {
    fn default() -> Self {
        Reassembly {
            slots: Vec::new(),
            free: BinaryHeap::new(),
            in_flight: 0,
        }
    }
}

impl<T> Reassembly<T> {
    /// Starts a frame carried by `packets` packets (at least 1); returns
    /// the id to tag its packets with.
    pub fn begin(&mut self, packets: u32, frame: T) -> u64 {
        debug_assert!(packets > 0);
        self.in_flight += 1;
        let entry = Some((packets, frame));
        match self.free.pop() {
            Some(Reverse(id)) => {
                self.slots[id as usize] = entry;
                id
            }
            None => {
                self.slots.push(entry);
                self.slots.len() as u64 - 1
            }
        }
    }

    /// Counts one packet of frame `id`; returns the frame when it was the
    /// last one.
    ///
    /// # Panics
    /// If `id` is not a frame in flight.
    pub fn arrived(&mut self, id: u64) -> Option<T> {
        let slot = &mut self.slots[id as usize];
        let (left, _) = slot.as_mut().expect("packet of a frame not in flight");
        *left -= 1;
        if *left > 0 {
            return None;
        }
        self.in_flight -= 1;
        self.free.push(Reverse(id));
        slot.take().map(|(_, t)| t)
    }

    /// Frames whose last packet has not arrived.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_checksum_of_a_known_header() {
        // The worked example of the IPv4 header checksum (RFC 1071's
        // method): 192.168.0.1 to 192.168.0.199, UDP, 115 bytes.
        let h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(ipv4_checksum(&h), 0xb861);
    }

    #[test]
    fn udp_and_magic_frames_are_well_formed() {
        let f = udp_frame(
            [0xff; 6],
            MAGIC_MAC,
            (MAGIC_IP, 5041),
            ([10, 0, 0, 255], 5042),
            b"G",
        );
        assert_eq!(f.len(), 60, "padded to Ethernet's minimum");
        assert_eq!(ipv4_checksum(&f[14..34]), 0, "checksum carried");
        assert_eq!(&f[16..18], &29u16.to_be_bytes(), "IP length: 20 + 8 + 1");
        assert_eq!(&f[36..38], &5042u16.to_be_bytes());
        assert_eq!(&f[38..40], &9u16.to_be_bytes(), "UDP length: 8 + 1");
        assert_eq!(f[42], b'G');
        let m = magic_frame([2, 0, 0, 0, 0, 1], [10, 0, 0, 1], 1);
        assert!(is_magic(&m));
        assert_eq!(m[MAGIC_PAYLOAD], 1);
        assert_eq!(ipv4_checksum(&m[14..34]), 0);
    }

    #[test]
    fn segmentation_counts() {
        // 16 phits of 4 bytes = 64 bytes per packet.
        assert_eq!(packets_for_frame(64, 16, 4), Ok(1));
        assert_eq!(packets_for_frame(65, 16, 4), Ok(2));
        assert_eq!(packets_for_frame(1514, 16, 4), Ok(24));
        assert_eq!(packets_for_frame(13, 16, 4), Err(FrameError::TooShort(13)));
        assert_eq!(
            packets_for_frame(9019, 16, 4),
            Err(FrameError::TooLong(9019))
        );
    }

    fn frame_to(dst: Mac) -> Vec<u8> {
        let mut f = dst.to_vec();
        f.extend_from_slice(&mac_for_node(0));
        f.extend_from_slice(&[0x08, 0x00]);
        f.resize(60, 0);
        f
    }

    #[test]
    fn routes_by_destination_mac() {
        let mut t = MacTable::new(4);
        for n in 0..4 {
            t.insert(n, mac_for_node(n)).unwrap();
        }
        assert_eq!(route(&t, &frame_to(mac_for_node(3))), Ok(Route::Unicast(3)));
        assert_eq!(route(&t, &frame_to([0xff; 6])), Ok(Route::AllOthers));
        assert_eq!(
            route(&t, &frame_to([0x01, 0, 0x5e, 0, 0, 1])),
            Ok(Route::AllOthers)
        );
        assert_eq!(
            route(&t, &frame_to([0x02, 9, 9, 9, 9, 9])),
            Ok(Route::Unknown)
        );
        assert_eq!(route(&t, &[0; 10]), Err(FrameError::TooShort(10)));
    }

    #[test]
    fn mac_table_rejects_duplicates_and_groups() {
        let mut t = MacTable::new(3);
        t.insert(0, mac_for_node(7)).unwrap();
        assert!(matches!(
            t.insert(1, mac_for_node(7)),
            Err(MacError::Duplicate {
                first: 0,
                second: 1,
                ..
            })
        ));
        assert!(matches!(t.insert(2, [0xff; 6]), Err(MacError::Group(_))));
        assert_eq!(MacText(mac_for_node(258)).to_string(), "02:00:00:00:01:02");
    }

    #[test]
    fn reassembly_delivers_on_the_last_packet_and_reuses_lowest_ids() {
        let mut r = Reassembly::default();
        let a = r.begin(3, "a");
        let b = r.begin(1, "b");
        let c = r.begin(1, "c");
        assert_eq!((a, b, c), (0, 1, 2));
        assert_eq!(r.arrived(a), None);
        assert_eq!(r.arrived(c), Some("c"));
        assert_eq!(r.arrived(b), Some("b"));
        assert_eq!(r.arrived(a), None);
        assert_eq!(r.arrived(a), Some("a"));
        assert_eq!(r.in_flight(), 0);
        assert_eq!(r.begin(1, "d"), 0);
        assert_eq!(r.begin(1, "e"), 1);
    }
}
