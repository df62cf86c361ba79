//! Capture of the frames of a co-simulation run as a pcap file (readable by
//! Wireshark and tcpdump), stamped with simulated time: the node cycle at
//! which each frame left its sender, divided by the node clock.

use std::io::Write;
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, TsResolution};

/// Errors writing a capture.
#[derive(Debug, thiserror::Error)]
pub enum PcapError {
    /// A packet or the header could not be written.
    #[error("cannot write the pcap capture: {0}")]
    Write(#[from] pcap_file::PcapError),
    /// The file could not be flushed.
    #[error("cannot flush the pcap capture: {0}")]
    Flush(#[from] std::io::Error),
}

/// A pcap writer with nanosecond, simulated-time stamps.
pub struct Capture<W: Write> {
    writer: PcapWriter<W>,
    clock_hz: u64,
}

impl<W: Write> Capture<W> {
    /// Starts a capture on `out` for nodes clocked at `clock_hz` Hz.
    ///
    /// # Errors
    /// [`PcapError`] when the header cannot be written.
    pub fn new(out: W, clock_hz: u64) -> Result<Self, PcapError> {
        let header = PcapHeader {
            datalink: DataLink::ETHERNET,
            ts_resolution: TsResolution::NanoSecond,
            ..PcapHeader::default()
        };
        Ok(Capture {
            writer: PcapWriter::with_header(out, header)?,
            clock_hz: clock_hz.max(1),
        })
    }

    /// Records `frame`, sent at node cycle `node_cycle`.
    ///
    /// # Errors
    /// [`PcapError`] when the record cannot be written.
    pub fn record(&mut self, node_cycle: u64, frame: &[u8]) -> Result<(), PcapError> {
        let ns = u128::from(node_cycle) * 1_000_000_000 / u128::from(self.clock_hz);
        let ts = Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX));
        let packet = PcapPacket::new(ts, frame.len() as u32, frame);
        self.writer.write_packet(&packet)?;
        Ok(())
    }

    /// Flushes and returns the writer.
    ///
    /// # Errors
    /// [`PcapError::Flush`] when the writer cannot be flushed.
    pub fn finish(self) -> Result<W, PcapError> {
        let mut w = self.writer.into_writer();
        w.flush()?;
        Ok(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcap_file::pcap::PcapReader;

    #[test]
    fn records_read_back_with_simulated_time() {
        let mut cap = Capture::new(Vec::new(), 200_000_000).unwrap();
        cap.record(1_000, &[0xab; 60]).unwrap();
        cap.record(400_000_000, &[0xcd; 14]).unwrap();
        let bytes = cap.finish().unwrap();
        let mut r = PcapReader::new(bytes.as_slice()).unwrap();
        let p = r.next_packet().unwrap().unwrap();
        // 1000 cycles at 200 MHz = 5 us.
        assert_eq!(p.timestamp, Duration::from_micros(5));
        assert_eq!(p.data.len(), 60);
        let p = r.next_packet().unwrap().unwrap();
        assert_eq!(p.timestamp, Duration::from_secs(2));
        assert!(r.next_packet().is_none());
    }
}
