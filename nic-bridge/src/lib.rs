//! Traffic manager of seed 003: Ethernet frames <-> network packets.
//!
//! A frame of `B` bytes crosses the network as `ceil(B / (plength *
//! phit_bytes))` packets (at least one) to the node owning the destination
//! MAC; it is delivered when its last packet arrives (`DESIGN.md`,
//! "Co-simulation"). MAC tables, reassembly and pcap capture arrive with the
//! co-simulation server issue.

use thiserror::Error;

/// Smallest Ethernet frame accepted: destination, source and EtherType.
pub const MIN_FRAME_BYTES: usize = 14;
/// Largest Ethernet frame accepted (jumbo frame with VLAN tag).
pub const MAX_FRAME_BYTES: usize = 9_018;

/// Why a frame cannot cross the network.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum FrameError {
    /// Shorter than an Ethernet header.
    #[error("frame of {0} bytes is shorter than the 14-byte Ethernet header")]
    TooShort(usize),
    /// Longer than [`MAX_FRAME_BYTES`].
    #[error("frame of {0} bytes exceeds the 9018-byte limit")]
    TooLong(usize),
}

/// Number of network packets that carry a frame of `bytes` bytes, with
/// packets of `plength` phits of `phit_bytes` bytes each.
///
/// # Errors
/// [`FrameError`] when the frame is outside `14..=9018` bytes.
pub fn packets_for_frame(bytes: usize, plength: u32, phit_bytes: u32) -> Result<u32, FrameError> {
    if bytes < MIN_FRAME_BYTES {
        return Err(FrameError::TooShort(bytes));
    }
    if bytes > MAX_FRAME_BYTES {
        return Err(FrameError::TooLong(bytes));
    }
    let per_packet = (plength as usize) * (phit_bytes as usize);
    Ok(bytes.div_ceil(per_packet) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
