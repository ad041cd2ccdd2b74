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
//!
//! The fabric knows nothing of any protocol: it never looks past [`NetHdr`] except to
//! cut the payload when trimming.

pub mod packet;

pub use packet::{hdr, opcode, Aeth, Bth, Ecn, Ext, NetHdr, Packet, Reth, TrafficClass};
