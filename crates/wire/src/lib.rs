//! Packets as plain data, shaped after real RoCEv2.
//!
//! Every layer of fabricsim handles the same [`Packet`]: the fabric reads its network
//! header ([`NetHdr`]: addresses, UDP source port used as entropy, traffic class, ECN,
//! the SRv6 destination), the transports read and write the InfiniBand transport
//! headers ([`Bth`], [`Reth`], [`Aeth`], immediate data) and fabricsim's extension
//! header ([`Ext`]: SACK, entropy-value echo, timestamps) that the multipath protocols
//! need. Which headers a packet carries is explicit ([`hdr`] flags), so its length on
//! the wire is exact and it can be encoded to real bytes.
//!
//! Modules:
//! * [`packet`]: the header structs, opcodes, lengths.
//! * [`encode`]: [`emit`] a [`Packet`] as the bytes of a real RoCEv2/IPv6 Ethernet
//!   frame (ICRC and UDP checksum included) and [`parse`] it back; the addressing
//!   scheme and fabricsim's EXT header layout are documented there.
//! * [`checksum`]: CRC-32 and the Internet checksum the encoding needs.
//! * [`pcap`]: [`PcapWriter`], nanosecond pcap files that Wireshark reads.
//!
//! The fabric knows nothing of any protocol: it never looks past [`NetHdr`] except to
//! cut the payload when trimming.

pub mod checksum;
pub mod encode;
pub mod packet;
pub mod pcap;

pub use encode::{emit, encoded_len, parse, EmitError, EncodeConfig, ParseError};
pub use packet::{
    ev_plane, ev_with_plane, hdr, opcode, Aeth, Bth, Ecn, Ext, NetHdr, Packet, Reth, Sth, TrafficClass, EV_PLANE_SHIFT,
};
pub use pcap::PcapWriter;
