//! Classic libpcap files with nanosecond timestamps, for Wireshark and tshark.
//!
//! The format (draft-ietf-opsawg-pcap): a 24-byte file header, then per frame a 16-byte
//! record header and the captured bytes. Fields are written little-endian; readers
//! learn the byte order and the timestamp unit from the magic number `0xA1B23C4D`
//! (nanoseconds). The link type is Ethernet (1) and frames carry no FCS, which is what
//! [`emit`] produces.
//!
//! The writer only formats; deciding which packets to capture, and where, belongs to a
//! tracer wrapped around a port or link, never to protocol code.

use std::io::{self, Write};

use crate::encode::{emit, EncodeConfig};
use crate::packet::Packet;

/// Magic number of a pcap file whose record timestamps are in nanoseconds.
pub const MAGIC_NANOS: u32 = 0xA1B2_3C4D;
/// `LINKTYPE_ETHERNET`: frames start at the destination MAC and carry no FCS.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// Snapshot length used by tcpdump and Wireshark by default.
pub const DEFAULT_SNAPLEN: u32 = 262_144;
/// Bytes of the file header.
pub const FILE_HEADER_BYTES: usize = 24;
/// Bytes of a record header.
pub const RECORD_HEADER_BYTES: usize = 16;

/// Writes a pcap file to `W`.
///
/// Call [`new`](Self::new) (which writes the file header), then
/// [`write_packet`](Self::write_packet) or [`write_sim_packet`](Self::write_sim_packet)
/// once per frame in time order, then [`into_inner`](Self::into_inner) or
/// [`flush`](Self::flush). Wrap a file in a `BufWriter`: every record is two writes.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    w: W,
    snaplen: u32,
    /// Reused frame buffer of [`write_sim_packet`](Self::write_sim_packet).
    scratch: Vec<u8>,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header to `w`. Frames longer than `snaplen` bytes are cut to it
    /// (a pcap reader expects no record longer than the header's snaplen).
    ///
    /// # Errors
    /// Any error of `w`.
    pub fn new(mut w: W, snaplen: u32) -> io::Result<Self> {
        let mut h = [0u8; FILE_HEADER_BYTES];
        h[0..4].copy_from_slice(&MAGIC_NANOS.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone and sigfigs stay 0: timestamps are simulated UTC-less time.
        h[16..20].copy_from_slice(&snaplen.to_le_bytes());
        h[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        w.write_all(&h)?;
        Ok(PcapWriter { w, snaplen, scratch: Vec::new() })
    }

    /// The snapshot length in the file header.
    pub fn snaplen(&self) -> u32 {
        self.snaplen
    }

    /// Writes one record: `frame` captured at `time_ps` picoseconds of simulated time,
    /// originally `orig_len` bytes long (larger than `frame.len()` when the frame was
    /// already cut, for example by [`EncodeConfig::payload_snaplen`]).
    ///
    /// The timestamp is truncated to whole nanoseconds; seconds are stored in 32 bits,
    /// which lasts 136 years of simulated time. At most [`snaplen`](Self::snaplen)
    /// bytes of `frame` are stored, and the recorded original length is never below the
    /// captured length.
    ///
    /// # Errors
    /// Any error of the underlying writer.
    pub fn write_packet(&mut self, time_ps: u64, frame: &[u8], orig_len: u32) -> io::Result<()> {
        let ns = time_ps / 1_000;
        let incl = frame.len().min(self.snaplen as usize);
        let mut h = [0u8; RECORD_HEADER_BYTES];
        h[0..4].copy_from_slice(&((ns / 1_000_000_000) as u32).to_le_bytes());
        h[4..8].copy_from_slice(&((ns % 1_000_000_000) as u32).to_le_bytes());
        h[8..12].copy_from_slice(&(incl as u32).to_le_bytes());
        h[12..16].copy_from_slice(&orig_len.max(incl as u32).to_le_bytes());
        self.w.write_all(&h)?;
        self.w.write_all(&frame[..incl])
    }

    /// Encodes `pkt` with [`emit`] and writes it as one record at `time_ps`.
    ///
    /// # Errors
    /// Any error of the underlying writer; a packet [`emit`] refuses is reported as
    /// [`io::ErrorKind::InvalidInput`] and nothing is written.
    pub fn write_sim_packet(&mut self, time_ps: u64, pkt: &Packet, cfg: &EncodeConfig) -> io::Result<()> {
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        let res = match emit(pkt, cfg, &mut buf) {
            Ok(len) => self.write_packet(time_ps, &buf, len as u32),
            Err(e) => Err(io::Error::new(io::ErrorKind::InvalidInput, e)),
        };
        self.scratch = buf;
        res
    }

    /// Flushes the underlying writer.
    ///
    /// # Errors
    /// Any error of the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }

    /// The underlying writer (not flushed).
    pub fn into_inner(self) -> W {
        self.w
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::encoded_len;
    use crate::packet::{opcode, Bth};

    #[test]
    fn the_file_header_has_the_nanosecond_magic_and_ethernet_linktype() {
        let w = PcapWriter::new(Vec::new(), 65_535).unwrap();
        let bytes = w.into_inner();
        // The research note's expected bytes, checked there with tshark.
        let want = [
            0x4d, 0x3c, 0xb2, 0xa1, 0x02, 0x00, 0x04, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0x00, 0x00, 0x01, 0x00,
            0x00, 0x00,
        ];
        assert_eq!(bytes, want);
    }

    #[test]
    fn records_carry_nanosecond_timestamps_and_both_lengths() {
        let mut w = PcapWriter::new(Vec::new(), DEFAULT_SNAPLEN).unwrap();
        let frame = [0xAAu8; 10];
        // 2 s + 1,234,567 ns + 999 ps: the picoseconds below a nanosecond are dropped.
        w.write_packet(2_001_234_567_999, &frame, 1500).unwrap();
        let bytes = w.into_inner();
        let rec = &bytes[FILE_HEADER_BYTES..];
        assert_eq!(rec[0..4], 2u32.to_le_bytes());
        assert_eq!(rec[4..8], 1_234_567u32.to_le_bytes());
        assert_eq!(rec[8..12], 10u32.to_le_bytes());
        assert_eq!(rec[12..16], 1500u32.to_le_bytes());
        assert_eq!(rec[16..], frame);
    }

    #[test]
    fn frames_longer_than_the_snaplen_are_cut() {
        let mut w = PcapWriter::new(Vec::new(), 4).unwrap();
        w.write_packet(0, &[1, 2, 3, 4, 5, 6], 0).unwrap();
        let bytes = w.into_inner();
        let rec = &bytes[FILE_HEADER_BYTES..];
        assert_eq!(rec[8..12], 4u32.to_le_bytes());
        assert_eq!(rec[12..16], 4u32.to_le_bytes(), "orig_len raised to the captured length");
        assert_eq!(rec[16..], [1, 2, 3, 4]);
    }

    #[test]
    fn sim_packets_are_encoded_with_their_true_length() {
        let pkt = Packet {
            bth: Bth { opcode: opcode::RC_WRITE_MIDDLE, ..Default::default() },
            payload: 1000,
            ..Default::default()
        };
        let cfg = EncodeConfig { payload_snaplen: Some(0), ..Default::default() };
        let mut w = PcapWriter::new(Vec::new(), DEFAULT_SNAPLEN).unwrap();
        w.write_sim_packet(5_000, &pkt, &cfg).unwrap();
        w.write_sim_packet(6_000, &pkt, &EncodeConfig::default()).unwrap();
        let bytes = w.into_inner();
        let rec = &bytes[FILE_HEADER_BYTES..];
        assert_eq!(rec[4..8], 5u32.to_le_bytes());
        assert_eq!(rec[8..12], 74u32.to_le_bytes());
        assert_eq!(rec[12..16], (encoded_len(&pkt) as u32).to_le_bytes());
        let rec2 = &rec[RECORD_HEADER_BYTES + 74..];
        assert_eq!(rec2[8..12], (encoded_len(&pkt) as u32).to_le_bytes());
        assert_eq!(rec2.len(), RECORD_HEADER_BYTES + encoded_len(&pkt));

        let big = Packet { payload: 70_000, ..Default::default() };
        let mut w = PcapWriter::new(Vec::new(), DEFAULT_SNAPLEN).unwrap();
        let err = w.write_sim_packet(0, &big, &EncodeConfig::default()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(w.into_inner().len(), FILE_HEADER_BYTES);
    }
}
