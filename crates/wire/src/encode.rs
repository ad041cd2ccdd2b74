//! [`Packet`] to and from the bytes of a real RoCEv2-over-IPv6 Ethernet frame.
//!
//! [`emit`] writes one Ethernet II frame without FCS (what pcap linktype 1 stores) and
//! [`parse`] reads it back. Wireshark and tshark decode the result as RRoCE on UDP port
//! 4791 without any Decode-As. The layout follows [`packet`](crate::packet):
//!
//! ```text
//! Ethernet (14) | IPv6 (40) | UDP (8) | BTH (12) | RETH (16)? | ImmDt (4)? | AETH (4)?
//!   | EXT (32)? | CNP reserved (16)? | payload | pad (0-3) | ICRC (4)
//! ```
//!
//! # Addresses
//! The simulator numbers hosts; the wire needs addresses. Both are derived from the
//! host index `h` (32 bits) and the NIC port `p` the packet left from
//! ([`NetHdr::src_port`]):
//! * MAC: `02:pp:hh:hh:hh:hh` (locally administered unicast), see [`host_mac`].
//! * IPv6: `fd00::pp:hhhh:hhhh`, that is `fd00:0:0:0:0:00pp:hhhh:hhhh` (a ULA), see
//!   [`host_addr`]. Host 1 on port 0 is `fd00::1`.
//!
//! Port `p` of every host attaches to plane `p` of a multi-plane fabric, so a packet
//! that left on port `p` arrives on port `p`: the destination MAC and (without SRv6)
//! the destination address use the same `p` as the source.
//! With SRv6 the IPv6 destination is the uSID container [`NetHdr::srv6`] as it is at
//! the capture point (switches shift it in flight), and the destination host is only
//! in the destination MAC; [`parse`] reads it from there. A uSID container therefore
//! must not itself look like a host address (`fd00::/80`); real uSID blocks such as
//! `fcbb:bb00::/32` never do.
//!
//! # IPv6 and UDP
//! Traffic class = DSCP << 2 | ECN, DSCP from [`TrafficClass::dscp`]; flow label = the
//! low 20 bits of [`NetHdr::flow_label`]; next header 17 (no SRH); hop limit 64. UDP
//! source port = [`NetHdr::sport`], destination 4791, and a correct IPv6 UDP checksum
//! (`0xFFFF` when the sum is 0, because 0 means "none" and IPv6 forbids it).
//!
//! # BTH
//! Opcode; SE = 0; M (MigReq) = [`EncodeConfig::mig_req`]; pad count; TVer = 0;
//! P_Key `0xFFFF`; byte 4 = BECN for a CNP (as scapy and NICs send it), else 0;
//! DestQP = low 24 bits of [`Bth::dest_qp`] + [`QPN_OFFSET`] (QPs 0 and 1 are
//! InfiniBand's management QPs, whose payloads Wireshark decodes as MADs); A =
//! [`Bth::ack_req`]; PSN = low 24 bits of [`Bth::psn`].
//!
//! The InfiniBand opcode fixes which extension headers follow the BTH (WRITE_FIRST has a
//! RETH, ACKNOWLEDGE an AETH, ...: [`standard_hdrs`]), but fabricsim's multipath
//! transports add headers freely (a RETH and an EXT on every data packet). When a
//! packet's [`hdr`] flags differ from its opcode's standard set, or it was trimmed,
//! the seven reserved bits after the A bit (BTH byte 8, Wireshark's `reserved7`) say
//! so explicitly:
//!
//! ```text
//! bit 7: A   bit 6: 1 = explicit   bit 5: 0   bit 4: trimmed   bits 3-0: hdr flags
//! ```
//!
//! A frame from a real NIC has these bits zero, and [`parse`] then uses the standard
//! set. Wireshark decodes headers by opcode only, so it shows an extra header as
//! payload; the opcode, QP and PSN still decode.
//!
//! # fabricsim EXT header (32 bytes, big-endian)
//! ```text
//! 0  ev u32 | 4 cum_psn u32 | 8 ack_psn u32 | 12 flags u8 | 13 port_state u8
//!   | 14 port_epoch u16 | 16 ts u64 (ps) | 24 bitmap u64
//! ```
//! Field meanings are those of [`Ext`].
//!
//! # StaR header (24 bytes, big-endian)
//! StaR's opcodes (`0xD0..=0xD6`, [`opcode::is_star`]) carry the StaR header and no
//! other: see [`Sth`] for its layout. Its reply QP and source port are written as the
//! answer will carry them in its BTH and UDP header: the QP plus [`QPN_OFFSET`], the
//! port as [`wire_sport`] makes it. It is implied by the opcode, so a StaR packet is
//! written with the explicit bits only when trimmed (their header bits then zero).
//! Wireshark knows none of this: `wireshark/fabricsim_star.lua` dissects it.
//!
//! # CNP
//! A RoCEv2 CNP (opcode `0x81`) carries 16 reserved zero bytes after its headers. The
//! simulator's CNP has no payload, so the frame is 16 bytes longer than
//! [`Packet::frame_len`] counts; [`encoded_len`] gives the true length.
//!
//! # Payload and ICRC
//! The simulator does not store payload bytes: [`emit`] writes [`Packet::payload`]
//! copies of [`EncodeConfig::payload_fill`], then zero pad bytes up to a multiple of 4.
//! The ICRC follows, computed as Linux rxe and scapy do for IPv6 ([`icrc`]). It covers
//! the addresses, so with SRv6 it is valid for the destination address as captured.
//! [`EncodeConfig::payload_snaplen`] cuts the payload in the capture while the IPv6
//! and UDP lengths, the UDP checksum and the ICRC stay those of the whole frame.
//!
//! # Parsing
//! [`parse`] checks every length before reading, returns a [`ParseError`] and never
//! panics. It accepts frames truncated inside the payload (a capture's snaplen) and
//! then recovers the payload length from the UDP length; it verifies the ICRC and the
//! UDP checksum only when the whole frame is present, and accepts a UDP checksum of 0,
//! which RoCE NICs send because the ICRC covers the datagram.

use std::fmt;

use crate::checksum::{udp6_checksum, Crc32};
use crate::packet::{
    hdr, opcode, Aeth, Bth, Ecn, Ext, NetHdr, Packet, Reth, Sth, TrafficClass, AETH_BYTES, EXT_BYTES, IMM_BYTES,
    RETH_BYTES, ROCEV2_UDP_PORT, STH_BYTES,
};

/// Added to [`Bth::dest_qp`] (the simulator's endpoint number, from 0) on the wire, so
/// that no frame carries QP 0 or 1, InfiniBand's subnet and general management QPs:
/// Wireshark decodes their payloads as management datagrams, not RDMA data.
/// (QP numbers are 24 bits: beyond 2^24 - 2 endpoints they wrap, as they already
/// repeat, and two of them meet QPs 0 and 1.)
pub const QPN_OFFSET: u32 = 2;

/// Bytes of the Ethernet II header (no VLAN tag).
pub const ETH_BYTES: usize = 14;
/// Bytes of the IPv6 header.
pub const IPV6_BYTES: usize = 40;
/// Bytes of the UDP header.
pub const UDP_BYTES: usize = 8;
/// Bytes of the InfiniBand Base Transport Header.
pub const BTH_BYTES: usize = 12;
/// Bytes of the invariant CRC that ends the UDP payload.
pub const ICRC_BYTES: usize = 4;
/// Reserved bytes a RoCEv2 CNP carries after its BTH.
pub const CNP_RESERVED_BYTES: usize = 16;
/// EtherType of IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86DD;
/// IPv6 next-header value of UDP.
pub const IP_PROTO_UDP: u8 = 17;
/// Hop limit written on every frame.
pub const HOP_LIMIT: u8 = 64;
/// The default partition key.
pub const DEFAULT_PKEY: u16 = 0xFFFF;
/// The first 16 bits of every host address (`fd00::/80`, the rest of the prefix zero).
pub const HOST_PREFIX: u16 = 0xFD00;

/// Offset of the BTH in the frame.
const BTH_AT: usize = ETH_BYTES + IPV6_BYTES + UDP_BYTES;
/// BTH byte 8 bits (below the A bit), see the module doc.
const RESV7_EXPLICIT: u8 = 0x40;
const RESV7_TRIMMED: u8 = 0x10;
const RESV7_HDRS: u8 = 0x0F;
/// BTH byte 1: MigReq bit and pad-count field.
const BTH_MIG: u8 = 0x40;
const BTH_PAD_SHIFT: u8 = 4;
/// BTH byte 4: BECN bit.
const BTH_BECN: u8 = 0x40;

/// Choices [`emit`] makes that are not in a [`Packet`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EncodeConfig {
    /// Byte every payload byte is set to. The default `0xAB` is chosen because
    /// Wireshark's upper-layer heuristics (RPC-over-RDMA in particular) misread small
    /// zero or counting payloads and flag them malformed.
    pub payload_fill: u8,
    /// BTH MigReq bit. Linux rxe sets it on RC packets; the reference vectors in the
    /// research note were generated without it.
    pub mig_req: bool,
    /// At most this many payload bytes are written (like tcpdump's snaplen); pad and
    /// ICRC are then cut as well. `None` writes the whole frame. The IPv6 and UDP
    /// lengths and both checksums always describe the whole frame.
    pub payload_snaplen: Option<u32>,
}

impl Default for EncodeConfig {
    fn default() -> Self {
        EncodeConfig { payload_fill: 0xAB, mig_req: true, payload_snaplen: None }
    }
}

/// Why [`emit`] could not encode a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmitError {
    /// The UDP datagram would exceed the 65,535 bytes its 16-bit length field allows
    /// (no IPv6 jumbograms).
    TooLong {
        /// The UDP length the packet needs.
        udp_len: usize,
    },
}

impl fmt::Display for EmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmitError::TooLong { udp_len } => {
                write!(f, "UDP length {udp_len} exceeds 65535: payload too large for one IPv6 packet")
            }
        }
    }
}

impl std::error::Error for EmitError {}

/// Why [`parse`] rejected a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// The frame ends inside a header.
    Truncated {
        /// The header that is cut.
        what: &'static str,
        /// Bytes needed up to the end of that header.
        need: usize,
        /// Bytes present.
        have: usize,
    },
    /// The EtherType is not IPv6.
    EtherType(u16),
    /// The IP version field is not 6.
    IpVersion(u8),
    /// The IPv6 next header is not UDP (extension headers such as an SRH are not
    /// supported).
    NextHeader(u8),
    /// The UDP destination port is not RoCEv2's.
    UdpPort(u16),
    /// A length field is inconsistent with the others.
    Length {
        /// The field.
        what: &'static str,
        /// Its value.
        value: usize,
    },
    /// Payload and pad are not a multiple of 4 bytes.
    Pad {
        /// The BTH pad count.
        pad: u8,
        /// The payload length implied by the UDP length.
        payload: usize,
    },
    /// The DSCP is not one of fabricsim's traffic classes.
    Dscp(u8),
    /// The IPv6 source is not a fabricsim host address.
    SrcAddress(u128),
    /// The IPv6 destination is an SRv6 container but the destination MAC is not a
    /// fabricsim host MAC, so the destination host is unknown.
    DstMac([u8; 6]),
    /// The opcode is not one whose extension headers are known, and the BTH does not
    /// list them explicitly.
    Opcode(u8),
    /// The ICRC does not match the frame.
    Icrc {
        /// ICRC computed over the frame.
        computed: u32,
        /// ICRC in the frame.
        found: u32,
    },
    /// The UDP checksum does not match the datagram.
    UdpChecksum {
        /// Checksum computed over the datagram.
        computed: u16,
        /// Checksum in the frame.
        found: u16,
    },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ParseError::Truncated { what, need, have } => {
                write!(f, "frame truncated in {what}: need {need} bytes, have {have}")
            }
            ParseError::EtherType(t) => write!(f, "EtherType {t:#06x} is not IPv6 (0x86dd)"),
            ParseError::IpVersion(v) => write!(f, "IP version {v} is not 6"),
            ParseError::NextHeader(n) => write!(f, "IPv6 next header {n} is not UDP (17)"),
            ParseError::UdpPort(p) => write!(f, "UDP destination port {p} is not RoCEv2 (4791)"),
            ParseError::Length { what, value } => write!(f, "{what} {value} is inconsistent with the frame"),
            ParseError::Pad { pad, payload } => {
                write!(f, "BTH pad count {pad} with payload {payload} bytes is not a multiple of 4")
            }
            ParseError::Dscp(d) => write!(
                f,
                "DSCP {d} is not a fabricsim traffic class ({} data, {} control)",
                TrafficClass::Data.dscp(),
                TrafficClass::Control.dscp()
            ),
            ParseError::SrcAddress(a) => {
                write!(f, "IPv6 source {:x} is not a fabricsim host address (fd00::pp:hhhh:hhhh)", a)
            }
            ParseError::DstMac(m) => write!(
                f,
                "destination MAC {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x} is not a fabricsim host MAC (02:pp:hh:hh:hh:hh)",
                m[0], m[1], m[2], m[3], m[4], m[5]
            ),
            ParseError::Opcode(o) => {
                write!(f, "BTH opcode {o:#04x} has unknown extension headers and the BTH does not list them")
            }
            ParseError::Icrc { computed, found } => {
                write!(f, "ICRC {found:#010x} in the frame, {computed:#010x} computed")
            }
            ParseError::UdpChecksum { computed, found } => {
                write!(f, "UDP checksum {found:#06x} in the frame, {computed:#06x} computed")
            }
        }
    }
}

impl std::error::Error for ParseError {}

/// The MAC address of NIC port `port` of host `host`: `02:pp:hh:hh:hh:hh`.
pub fn host_mac(host: u32, port: u8) -> [u8; 6] {
    let h = host.to_be_bytes();
    [0x02, port, h[0], h[1], h[2], h[3]]
}

/// The IPv6 address of NIC port `port` of host `host`: `fd00::pp:hhhh:hhhh`.
pub fn host_addr(host: u32, port: u8) -> u128 {
    ((HOST_PREFIX as u128) << 112) | ((port as u128) << 32) | host as u128
}

/// The host and port of a fabricsim host address (see [`host_addr`]), or `None` for
/// any other address.
pub fn addr_host(a: u128) -> Option<(u32, u8)> {
    let prefix = a >> 48;
    let port = (a >> 32) & 0xFFFF;
    if prefix != (HOST_PREFIX as u128) << 64 || port > u8::MAX as u128 {
        return None;
    }
    Some((a as u32, port as u8))
}

/// The extension headers ([`hdr`] flags) the InfiniBand specification puts after the
/// BTH for RC opcode `op`, with fabricsim's opcodes (`0xC0..=0xFF`) carrying an EXT and
/// the CNP none; `None` for opcodes with headers a [`Packet`] cannot hold (atomics, UC,
/// UD) or unknown ones.
pub fn standard_hdrs(op: u8) -> Option<u8> {
    match op {
        // SEND first/middle/last/only, WRITE middle/last, READ response middle.
        0x00..=0x02 | 0x04 | 0x07 | 0x08 | 0x0E => Some(0),
        // SEND last/only with immediate, WRITE last with immediate.
        0x03 | 0x05 | 0x09 => Some(hdr::IMM),
        // WRITE first/only, READ request.
        0x06 | 0x0A | 0x0C => Some(hdr::RETH),
        0x0B => Some(hdr::RETH | hdr::IMM),
        // READ response first/last/only, ACKNOWLEDGE.
        0x0D | 0x0F | 0x10 | 0x11 => Some(hdr::AETH),
        opcode::CNP => Some(0),
        opcode::STAR_WQEP..=opcode::STAR_SDP => Some(hdr::STH),
        0xC0..=0xFF => Some(hdr::EXT),
        _ => None,
    }
}

/// Bytes of the headers between the BTH and the payload.
fn ext_header_bytes(pkt_hdrs: u8, op: u8) -> usize {
    let mut n = 0;
    if pkt_hdrs & hdr::RETH != 0 {
        n += RETH_BYTES as usize;
    }
    if pkt_hdrs & hdr::IMM != 0 {
        n += IMM_BYTES as usize;
    }
    if pkt_hdrs & hdr::AETH != 0 {
        n += AETH_BYTES as usize;
    }
    if pkt_hdrs & hdr::EXT != 0 {
        n += EXT_BYTES as usize;
    }
    if pkt_hdrs & hdr::STH != 0 {
        n += STH_BYTES as usize;
    }
    if op == opcode::CNP {
        n += CNP_RESERVED_BYTES;
    }
    n
}

/// Pad bytes after `payload` bytes to reach a multiple of 4.
fn pad_for(payload: usize) -> usize {
    (4 - payload % 4) % 4
}

/// The UDP length of `pkt` on the wire (header, BTH, extension headers, payload, pad,
/// ICRC).
fn udp_len(pkt: &Packet) -> usize {
    let payload = pkt.payload as usize;
    UDP_BYTES + BTH_BYTES + ext_header_bytes(pkt.hdrs, pkt.bth.opcode) + payload + pad_for(payload) + ICRC_BYTES
}

/// The UDP source port a frame carries for entropy port `sport`: its low 14 bits
/// with the two top bits set (0xC000-0xFFFF), as Linux's `rdma_get_udp_sport` makes.
pub fn wire_sport(sport: u16) -> u16 {
    0xC000 | (sport & 0x3FFF)
}

/// Length in bytes of the whole frame [`emit`] writes for `pkt` (no FCS, no
/// truncation): the `orig_len` of a pcap record.
///
/// Equals [`Packet::frame_len`] minus the 4-byte FCS, plus 16 for a CNP (see the module
/// doc) and the 0-3 pad bytes.
pub fn encoded_len(pkt: &Packet) -> usize {
    ETH_BYTES + IPV6_BYTES + udp_len(pkt)
}

/// The IPv6 destination of `net`: its SRv6 container if it has one, else the address
/// of the destination host on the port the packet left from.
fn dst_addr(net: &NetHdr) -> u128 {
    match net.srv6() {
        0 => host_addr(net.dst, net.src_port),
        a => a,
    }
}

/// The ICRC of a RoCEv2-over-IPv6 packet: `datagram` runs from the first byte of the
/// IPv6 header to the last byte before the ICRC, with the lengths final.
///
/// CRC-32 over 8 bytes of `0xFF` (the masked InfiniBand LRH), then the IPv6 header with
/// traffic class, flow label and hop limit set to all ones, the UDP header with its
/// checksum set to `0xFFFF`, the BTH with byte 4 (FECN, BECN, reserved) set to `0xFF`,
/// then the rest unchanged. These are the fields switches may rewrite. The value is
/// written to the wire least significant byte first (`to_le_bytes`).
///
/// # Panics
/// If `datagram` is shorter than the IPv6, UDP and BTH headers (60 bytes).
pub fn icrc(datagram: &[u8]) -> u32 {
    const HDRS: usize = IPV6_BYTES + UDP_BYTES + BTH_BYTES;
    let mut masked = [0u8; HDRS];
    masked.copy_from_slice(&datagram[..HDRS]);
    masked[0] |= 0x0F;
    masked[1..4].fill(0xFF);
    masked[7] = 0xFF;
    masked[IPV6_BYTES + 6..IPV6_BYTES + 8].fill(0xFF);
    masked[IPV6_BYTES + UDP_BYTES + 4] = 0xFF;
    let mut c = Crc32::new();
    c.update(&[0xFF; 8]);
    c.update(&masked);
    c.update(&datagram[HDRS..]);
    c.finish()
}

/// Appends the Ethernet frame of `pkt` (without FCS) to `out` and returns the length of
/// the whole frame, which is more than the bytes appended when
/// [`EncodeConfig::payload_snaplen`] cut the payload.
///
/// Fields wider than their wire encoding are cut to it: the flow label to 20 bits,
/// DestQP, PSN and MSN to 24; [`hdr`] flags other than the four defined are ignored.
/// Everything [`emit`] writes, [`parse`] reads back.
///
/// # Errors
/// [`EmitError::TooLong`] if the datagram exceeds 65,535 bytes; `out` is then
/// unchanged.
pub fn emit(pkt: &Packet, cfg: &EncodeConfig, out: &mut Vec<u8>) -> Result<usize, EmitError> {
    let net = &pkt.net;
    let op = pkt.bth.opcode;
    let payload = pkt.payload as usize;
    let pad = pad_for(payload);
    let udp_len = udp_len(pkt);
    if udp_len > u16::MAX as usize {
        return Err(EmitError::TooLong { udp_len });
    }
    let start = out.len();
    let total = ETH_BYTES + IPV6_BYTES + udp_len;
    out.reserve(total);

    out.extend_from_slice(&host_mac(net.dst, net.src_port));
    out.extend_from_slice(&host_mac(net.src, net.src_port));
    out.extend_from_slice(&ETHERTYPE_IPV6.to_be_bytes());

    let tclass = (net.class.dscp() << 2) | net.ecn as u8;
    let word0 = (6u32 << 28) | ((tclass as u32) << 20) | (net.flow_label & 0xF_FFFF);
    out.extend_from_slice(&word0.to_be_bytes());
    out.extend_from_slice(&(udp_len as u16).to_be_bytes());
    out.push(IP_PROTO_UDP);
    out.push(HOP_LIMIT);
    let src = host_addr(net.src, net.src_port).to_be_bytes();
    let dst = dst_addr(net).to_be_bytes();
    out.extend_from_slice(&src);
    out.extend_from_slice(&dst);

    // The source port's two top bits set, as Linux does (`rdma_get_udp_sport`): the
    // port is the EV's low bits, and one below 1024 (ISAKMP's 500, RIP's 520) made
    // decoders take the frame for that protocol rather than RoCE.
    out.extend_from_slice(&wire_sport(net.sport).to_be_bytes());
    out.extend_from_slice(&ROCEV2_UDP_PORT.to_be_bytes());
    out.extend_from_slice(&(udp_len as u16).to_be_bytes());
    // Filled in last: the checksum covers the ICRC.
    out.extend_from_slice(&[0, 0]);

    let mig = if cfg.mig_req { BTH_MIG } else { 0 };
    let standard = standard_hdrs(op) == Some(pkt.hdrs & (RESV7_HDRS | hdr::STH));
    let resv7 = if standard && !net.trimmed {
        0
    } else {
        RESV7_EXPLICIT | if net.trimmed { RESV7_TRIMMED } else { 0 } | (pkt.hdrs & RESV7_HDRS)
    };
    out.push(op);
    out.push(mig | ((pad as u8) << BTH_PAD_SHIFT));
    out.extend_from_slice(&DEFAULT_PKEY.to_be_bytes());
    out.push(if op == opcode::CNP { BTH_BECN } else { 0 });
    out.extend_from_slice(&pkt.bth.dest_qp.wrapping_add(QPN_OFFSET).to_be_bytes()[1..]);
    out.push(((pkt.bth.ack_req as u8) << 7) | resv7);
    out.extend_from_slice(&pkt.bth.psn.to_be_bytes()[1..]);

    if pkt.hdrs & hdr::RETH != 0 {
        out.extend_from_slice(&pkt.reth.va.to_be_bytes());
        out.extend_from_slice(&pkt.reth.rkey.to_be_bytes());
        out.extend_from_slice(&pkt.reth.len.to_be_bytes());
    }
    if pkt.hdrs & hdr::IMM != 0 {
        out.extend_from_slice(&pkt.imm.to_be_bytes());
    }
    if pkt.hdrs & hdr::AETH != 0 {
        out.push(pkt.aeth.syndrome);
        out.extend_from_slice(&pkt.aeth.msn.to_be_bytes()[1..]);
    }
    if pkt.hdrs & hdr::EXT != 0 {
        let e = &pkt.ext;
        out.extend_from_slice(&e.ev.to_be_bytes());
        out.extend_from_slice(&e.cum_psn.to_be_bytes());
        out.extend_from_slice(&e.ack_psn.to_be_bytes());
        out.push(e.flags);
        out.push(e.port_state);
        out.extend_from_slice(&e.port_epoch.to_be_bytes());
        out.extend_from_slice(&e.ts.to_be_bytes());
        out.extend_from_slice(&e.bitmap.to_be_bytes());
    }
    if pkt.hdrs & hdr::STH != 0 {
        let h = pkt.sth();
        out.extend_from_slice(&h.addr.to_be_bytes());
        out.extend_from_slice(&h.elem.to_be_bytes());
        out.extend_from_slice(&h.total.to_be_bytes());
        out.extend_from_slice(&h.len.to_be_bytes());
        out.push(h.flags);
        // As the answer will carry them: a QP number as the BTH writes it, a source
        // port as the UDP header does.
        out.extend_from_slice(&h.reply_qp.wrapping_add(QPN_OFFSET).to_be_bytes()[1..]);
        out.extend_from_slice(&wire_sport(h.reply_sport).to_be_bytes());
    }
    if op == opcode::CNP {
        out.extend_from_slice(&[0; CNP_RESERVED_BYTES]);
    }
    let payload_at = out.len();
    out.resize(payload_at + payload, cfg.payload_fill);
    out.resize(out.len() + pad, 0);

    let crc = icrc(&out[start + ETH_BYTES..]);
    out.extend_from_slice(&crc.to_le_bytes());
    debug_assert_eq!(out.len() - start, total);

    let udp_at = start + ETH_BYTES + IPV6_BYTES;
    let sum = udp6_checksum(&src, &dst, &out[udp_at..]);
    out[udp_at + 6..udp_at + 8].copy_from_slice(&sum.to_be_bytes());

    if let Some(snap) = cfg.payload_snaplen {
        let snap = snap as usize;
        if payload > snap {
            out.truncate(payload_at + snap);
        }
    }
    Ok(total)
}

/// Reads big-endian fields from a slice whose length the caller checked.
fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be24(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([0, b[at], b[at + 1], b[at + 2]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be64(b: &[u8], at: usize) -> u64 {
    ((be32(b, at) as u64) << 32) | be32(b, at + 4) as u64
}

fn be128(b: &[u8], at: usize) -> u128 {
    ((be64(b, at) as u128) << 64) | be64(b, at + 8) as u128
}

/// Fails with [`ParseError::Truncated`] unless `bytes` holds `need` bytes.
fn need(bytes: &[u8], need: usize, what: &'static str) -> Result<(), ParseError> {
    if bytes.len() < need {
        return Err(ParseError::Truncated { what, need, have: bytes.len() });
    }
    Ok(())
}

/// Reads a frame written by [`emit`] (or a RoCEv2 RC frame from a NIC that uses
/// fabricsim's addressing) back into a [`Packet`].
///
/// Recovers every field [`emit`] writes; PSN, DestQP and MSN come back as their 24
/// wire bits, the flow label as 20, and the UDP source port as on the wire
/// ([`wire_sport`]). A frame cut inside the payload is accepted (see
/// the module doc).
///
/// # Errors
/// A [`ParseError`] naming the first field that is missing, inconsistent or outside
/// what fabricsim encodes. Never panics, whatever `bytes` holds.
pub fn parse(bytes: &[u8]) -> Result<Packet, ParseError> {
    need(bytes, BTH_AT + BTH_BYTES, "Ethernet/IPv6/UDP/BTH headers")?;
    let ethertype = be16(bytes, 12);
    if ethertype != ETHERTYPE_IPV6 {
        return Err(ParseError::EtherType(ethertype));
    }

    let ip = &bytes[ETH_BYTES..];
    let version = ip[0] >> 4;
    if version != 6 {
        return Err(ParseError::IpVersion(version));
    }
    let tclass = (ip[0] << 4) | (ip[1] >> 4);
    let flow_label = be32(ip, 0) & 0xF_FFFF;
    let ip_payload = be16(ip, 4) as usize;
    if ip[6] != IP_PROTO_UDP {
        return Err(ParseError::NextHeader(ip[6]));
    }
    let src = be128(ip, 8);
    let dst = be128(ip, 24);

    let udp = &ip[IPV6_BYTES..];
    let sport = be16(udp, 0);
    let dport = be16(udp, 2);
    if dport != ROCEV2_UDP_PORT {
        return Err(ParseError::UdpPort(dport));
    }
    let udp_len = be16(udp, 4) as usize;
    if udp_len != ip_payload {
        return Err(ParseError::Length { what: "UDP length (vs IPv6 payload length)", value: udp_len });
    }

    let bth = &udp[UDP_BYTES..];
    let op = bth[0];
    let pad = (bth[1] >> BTH_PAD_SHIFT) & 0x3;
    let dest_qp = be24(bth, 5).wrapping_sub(QPN_OFFSET) & 0xFF_FFFF;
    let ack_req = bth[8] & 0x80 != 0;
    let resv7 = bth[8] & 0x7F;
    let psn = be24(bth, 9);
    let (hdrs, trimmed) = if resv7 & RESV7_EXPLICIT != 0 {
        (resv7 & RESV7_HDRS, resv7 & RESV7_TRIMMED != 0)
    } else {
        (standard_hdrs(op).ok_or(ParseError::Opcode(op))?, false)
    };
    // A StaR packet's one header is implied by its opcode (see the module doc).
    let hdrs = if opcode::is_star(op) { hdr::STH } else { hdrs };

    let dscp = tclass >> 2;
    let class = match dscp {
        d if d == TrafficClass::Data.dscp() => TrafficClass::Data,
        d if d == TrafficClass::Control.dscp() => TrafficClass::Control,
        d => return Err(ParseError::Dscp(d)),
    };
    let ecn = match tclass & 0x3 {
        0 => Ecn::NotEct,
        1 => Ecn::Ect1,
        2 => Ecn::Ect0,
        _ => Ecn::Ce,
    };
    let (src_host, src_port) = addr_host(src).ok_or(ParseError::SrcAddress(src))?;
    let (dst_host, srv6) = match addr_host(dst) {
        Some((h, _)) => (h, 0),
        None => {
            let mac: [u8; 6] = [bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5]];
            if mac[0] != 0x02 {
                return Err(ParseError::DstMac(mac));
            }
            (u32::from_be_bytes([mac[2], mac[3], mac[4], mac[5]]), dst)
        }
    };

    let hdr_bytes = ext_header_bytes(hdrs, op);
    let fixed = UDP_BYTES + BTH_BYTES + hdr_bytes + pad as usize + ICRC_BYTES;
    if udp_len < fixed {
        return Err(ParseError::Length { what: "UDP length (shorter than its headers)", value: udp_len });
    }
    let payload = udp_len - fixed;
    if (payload + pad as usize) & 3 != 0 {
        return Err(ParseError::Pad { pad, payload });
    }
    need(bytes, BTH_AT + BTH_BYTES + hdr_bytes, "extension headers")?;

    let mut pkt = Packet {
        net: NetHdr {
            srv6_words: [0, 0],
            src: src_host,
            dst: dst_host,
            flow_label,
            sport,
            class,
            ecn,
            src_port,
            trimmed,
        },
        bth: Bth { opcode: op, ack_req, dest_qp, psn },
        payload: payload as u32,
        hdrs,
        ..Default::default()
    };
    pkt.net.set_srv6(srv6);

    let mut at = BTH_AT + BTH_BYTES;
    if hdrs & hdr::RETH != 0 {
        pkt.reth = Reth { va: be64(bytes, at), rkey: be32(bytes, at + 8), len: be32(bytes, at + 12) };
        at += RETH_BYTES as usize;
    }
    if hdrs & hdr::IMM != 0 {
        pkt.imm = be32(bytes, at);
        at += IMM_BYTES as usize;
    }
    if hdrs & hdr::AETH != 0 {
        pkt.aeth = Aeth { syndrome: bytes[at], msn: be24(bytes, at + 1) };
        at += AETH_BYTES as usize;
    }
    if hdrs & hdr::EXT != 0 {
        pkt.ext = Ext {
            ev: be32(bytes, at),
            cum_psn: be32(bytes, at + 4),
            ack_psn: be32(bytes, at + 8),
            flags: bytes[at + 12],
            port_state: bytes[at + 13],
            port_epoch: u16::from_be_bytes([bytes[at + 14], bytes[at + 15]]),
            ts: be64(bytes, at + 16),
            bitmap: be64(bytes, at + 24),
        };
    }
    if hdrs & hdr::STH != 0 {
        pkt.set_sth(Sth {
            addr: be64(bytes, at),
            elem: be32(bytes, at + 8),
            total: be32(bytes, at + 12),
            len: be16(bytes, at + 16),
            flags: bytes[at + 18],
            reply_qp: be24(bytes, at + 19).wrapping_sub(QPN_OFFSET) & 0xFF_FFFF,
            reply_sport: be16(bytes, at + 22),
        });
    }

    let end = ETH_BYTES + IPV6_BYTES + udp_len;
    if bytes.len() >= end {
        let datagram = &bytes[ETH_BYTES..end];
        let body = datagram.len() - ICRC_BYTES;
        let computed = icrc(&datagram[..body]);
        let found = u32::from_le_bytes([datagram[body], datagram[body + 1], datagram[body + 2], datagram[body + 3]]);
        if computed != found {
            return Err(ParseError::Icrc { computed, found });
        }
        let found = be16(udp, 6);
        if found != 0 {
            let src = src.to_be_bytes();
            let dst = dst.to_be_bytes();
            let computed = udp6_checksum(&src, &dst, &datagram[IPV6_BYTES..]);
            if computed != found {
                return Err(ParseError::UdpChecksum { computed, found });
            }
        }
    }
    Ok(pkt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    // The verified vectors of the research note (roce-wire.md section 9): built in
    // Python, ICRC and UDP checksum cross-checked with scapy, decoded by TShark 4.0.17.
    const SEND_ONLY: &str =
        "02000000000202000000000186dd66a1234500201140fd000000000000000000000000000001fd000000000000000000000000000002
        c12312b70020568e 0400ffff00000011800001000001020304050607 acb09d6e";
    const ACK: &str =
        "02000000000202000000000186dd66a12345001c1140fd000000000000000000000000000002fd000000000000000000000000000001
        c12312b7001c4a94 1100ffff00000022000001001f000001 61b75468";
    const NAK: &str =
        "02000000000202000000000186dd66a12345001c1140fd000000000000000000000000000002fd000000000000000000000000000001
        c12312b7001cb763 1100ffff00000022000001016000000502ea0561";
    const WRITE_ONLY_IMM: &str =
        "02000000000202000000000186dd66a1234500301140fd000000000000000000000000000001fd000000000000000000000000000002
        c12312b700302d05 0b90ffff0000001180000102 00007f0000001000 00001234 00001000 deadbeef ababab00 34c69dc1";
    const CNP: &str =
        "02000000000202000000000186dd6c00000000281140fd000000000000000000000000000002fd000000000000000000000000000001
        c12312b7002899f4 8100ffff40000011 00000000 00000000000000000000000000000000 89674d51";

    const VECTORS: [&str; 5] = [SEND_ONLY, ACK, NAK, WRITE_ONLY_IMM, CNP];

    /// The note's common fields: UDP source port 0xC123, flow label 0x12345, DSCP 26
    /// with ECT(0) on everything but the CNP.
    fn vector_net(src: u32, dst: u32) -> NetHdr {
        NetHdr {
            src,
            dst,
            sport: 0xC123,
            flow_label: 0x12345,
            class: TrafficClass::Data,
            ecn: Ecn::Ect0,
            ..Default::default()
        }
    }

    /// `pkt` as `parse` reads it back: with the source ports as on the wire.
    fn as_on_wire(mut pkt: Packet) -> Packet {
        pkt.net.sport = wire_sport(pkt.net.sport);
        if pkt.hdrs & hdr::STH != 0 {
            let mut h = pkt.sth();
            h.reply_sport = wire_sport(h.reply_sport);
            pkt.set_sth(h);
        }
        pkt
    }

    const VECTOR_CFG: EncodeConfig = EncodeConfig { payload_fill: 0xAB, mig_req: false, payload_snaplen: None };

    #[test]
    fn a_star_packet_carries_its_header_at_fixed_offsets_after_the_bth() {
        let mut pkt = Packet {
            net: vector_net(1, 2),
            bth: Bth { opcode: opcode::STAR_GD, ack_req: false, dest_qp: 9, psn: 0x01_0203 },
            ..Default::default()
        };
        pkt.set_sth(Sth {
            addr: 0x1122_3344_5566_7788,
            elem: 0x99AA_BBCC,
            total: 2800,
            len: 1400,
            flags: Sth::F_RETX,
            reply_qp: 0x00DE_F012,
            reply_sport: 0xC345,
        });
        let mut f = Vec::new();
        let n = emit(&pkt, &VECTOR_CFG, &mut f).unwrap();
        assert_eq!(n, ETH_BYTES + IPV6_BYTES + UDP_BYTES + BTH_BYTES + STH_BYTES as usize + ICRC_BYTES);
        // Implied by the opcode: the reserved bits stay a NIC's zero.
        assert_eq!(f[BTH_AT + 8], 0);
        let h = &f[BTH_AT + BTH_BYTES..BTH_AT + BTH_BYTES + 24];
        assert_eq!(h[..8], 0x1122_3344_5566_7788u64.to_be_bytes());
        assert_eq!(h[8..12], 0x99AA_BBCCu32.to_be_bytes());
        assert_eq!(h[12..16], 2800u32.to_be_bytes());
        assert_eq!(h[16..18], 1400u16.to_be_bytes());
        assert_eq!(h[18], Sth::F_RETX);
        assert_eq!(h[19..22], [0xDE, 0xF0, 0x14], "the QP as a BTH carries it (+2)");
        assert_eq!(h[22..24], 0xC345u16.to_be_bytes());
        assert_eq!(parse(&f), Ok(as_on_wire(pkt)));
        // Trimmed, it is written explicitly and still read back with its header.
        pkt.net.trimmed = true;
        f.clear();
        emit(&pkt, &VECTOR_CFG, &mut f).unwrap();
        assert_eq!(f[BTH_AT + 8], 0x40 | 0x10);
        assert_eq!(parse(&f), Ok(as_on_wire(pkt)));
    }

    #[test]
    fn the_udp_source_port_on_the_wire_is_never_a_well_known_one() {
        for sport in [0u16, 500, 520, 0x3FFF, 0xC123, 0xFFFF] {
            let pkt = Packet {
                net: NetHdr { sport, ..vector_net(1, 2) },
                bth: Bth { opcode: opcode::RC_ACK, ack_req: false, dest_qp: 0x22 - QPN_OFFSET, psn: 1 },
                ..Default::default()
            };
            let mut f = Vec::new();
            emit(&pkt, &VECTOR_CFG, &mut f).unwrap();
            let on_wire = be16(&f, 54);
            assert_eq!(on_wire, 0xC000 | (sport & 0x3FFF), "sport {sport}");
        }
    }

    #[test]
    fn icrc_matches_every_reference_vector() {
        for v in VECTORS {
            let f = hex(v);
            let n = f.len();
            assert_eq!(icrc(&f[ETH_BYTES..n - 4]).to_le_bytes(), f[n - 4..], "vector {v}");
        }
    }

    #[test]
    fn udp_checksum_matches_every_reference_vector() {
        for v in VECTORS {
            let f = hex(v);
            let src: [u8; 16] = f[22..38].try_into().unwrap();
            let dst: [u8; 16] = f[38..54].try_into().unwrap();
            let found = be16(&f, 54 + 6);
            assert_eq!(udp6_checksum(&src, &dst, &f[54..]), found, "vector {v}");
        }
    }

    #[test]
    fn emit_reproduces_the_reference_ack_nak_and_cnp_after_the_macs() {
        // The note used fixed MACs in both directions; every byte from the EtherType on
        // (which is what the ICRC and UDP checksum cover) must match.
        let ack = Packet {
            net: vector_net(2, 1),
            bth: Bth { opcode: opcode::RC_ACK, ack_req: false, dest_qp: 0x22 - QPN_OFFSET, psn: 0x100 },
            hdrs: hdr::AETH,
            aeth: Aeth { syndrome: Aeth::ACK, msn: 1 },
            ..Default::default()
        };
        let mut nak = ack;
        nak.bth.psn = 0x101;
        nak.aeth = Aeth { syndrome: Aeth::NAK_SEQ_ERR, msn: 5 };
        let cnp = Packet {
            net: NetHdr { flow_label: 0, class: TrafficClass::Control, ecn: Ecn::NotEct, ..vector_net(2, 1) },
            bth: Bth { opcode: opcode::CNP, ack_req: false, dest_qp: 0x11 - QPN_OFFSET, psn: 0 },
            ..Default::default()
        };
        for (pkt, v) in [(ack, ACK), (nak, NAK), (cnp, CNP)] {
            let want = hex(v);
            let mut out = Vec::new();
            let len = emit(&pkt, &VECTOR_CFG, &mut out).unwrap();
            assert_eq!(len, want.len());
            assert_eq!(len, encoded_len(&pkt));
            assert_eq!(out[12..], want[12..], "vector {v}");
            assert_eq!(parse(&want).unwrap(), pkt);
        }
    }

    #[test]
    fn the_reference_data_vectors_parse_to_their_fields() {
        let send = parse(&hex(SEND_ONLY)).unwrap();
        assert_eq!(send.net, vector_net(1, 2));
        assert_eq!(
            send.bth,
            Bth { opcode: opcode::RC_SEND_ONLY, ack_req: true, dest_qp: 0x11 - QPN_OFFSET, psn: 0x100 }
        );
        assert_eq!((send.payload, send.hdrs), (8, 0));

        let w = parse(&hex(WRITE_ONLY_IMM)).unwrap();
        assert_eq!(w.bth.opcode, opcode::RC_WRITE_ONLY_IMM);
        assert_eq!((w.payload, w.hdrs), (3, hdr::RETH | hdr::IMM));
        assert_eq!(w.reth, Reth { va: 0x7f00_0000_1000, rkey: 0x1234, len: 4096 });
        assert_eq!(w.imm, 0xdead_beef);
    }

    #[test]
    fn a_write_with_three_payload_bytes_is_padded_to_four() {
        let pkt = Packet {
            net: vector_net(1, 2),
            bth: Bth { opcode: opcode::RC_WRITE_ONLY_IMM, ack_req: true, dest_qp: 0x11 - QPN_OFFSET, psn: 0x102 },
            hdrs: hdr::RETH | hdr::IMM,
            reth: Reth { va: 0x7f00_0000_1000, rkey: 0x1234, len: 4096 },
            imm: 0xdead_beef,
            payload: 3,
            ..Default::default()
        };
        let mut out = Vec::new();
        emit(&pkt, &VECTOR_CFG, &mut out).unwrap();
        // The vector sets SE, which fabricsim never does. With SE set and both
        // checksums recomputed, every byte from the EtherType on matches.
        assert_eq!(out[BTH_AT + 1], 0x10);
        assert_eq!(parse(&out).unwrap(), as_on_wire(pkt));
        out[BTH_AT + 1] |= 0x80;
        let n = out.len();
        let crc = icrc(&out[ETH_BYTES..n - 4]);
        out[n - 4..].copy_from_slice(&crc.to_le_bytes());
        let src: [u8; 16] = out[22..38].try_into().unwrap();
        let dst: [u8; 16] = out[38..54].try_into().unwrap();
        let sum = udp6_checksum(&src, &dst, &out[54..]);
        out[60..62].copy_from_slice(&sum.to_be_bytes());
        assert_eq!(out[12..], hex(WRITE_ONLY_IMM)[12..]);
    }

    #[test]
    fn emit_writes_the_documented_bth_and_addresses() {
        let mut pkt = Packet {
            net: NetHdr {
                src: 0x0102_0304,
                dst: 7,
                src_port: 3,
                sport: 0xC001,
                flow_label: 0xFFF_FFFF,
                ..Default::default()
            },
            bth: Bth { opcode: opcode::RC_WRITE_MIDDLE, ack_req: true, dest_qp: 0x0100_0005, psn: 0x0300_0009 },
            payload: 5,
            ..Default::default()
        };
        let mut out = Vec::new();
        emit(&pkt, &EncodeConfig::default(), &mut out).unwrap();
        assert_eq!(out[..6], [0x02, 3, 0, 0, 0, 7]);
        assert_eq!(out[6..12], [0x02, 3, 1, 2, 3, 4]);
        // DSCP 26, Not-ECT, flow label cut to 20 bits.
        assert_eq!(out[14..18], [0x66, 0x8F, 0xFF, 0xFF]);
        assert_eq!(out[21], HOP_LIMIT);
        assert_eq!(be128(&out, 22), 0xfd00_0000_0000_0000_0000_0003_0102_0304);
        assert_eq!(be128(&out, 38), host_addr(7, 3));
        assert_eq!(be16(&out, 56), 4791);
        let b = &out[BTH_AT..BTH_AT + BTH_BYTES];
        // DestQP: the low 24 bits, plus the offset that keeps QPs 0 and 1 off the wire.
        assert_eq!(b, [0x07, 0x70, 0xFF, 0xFF, 0x00, 0, 0, 5 + QPN_OFFSET as u8, 0x80, 0, 0, 9]);
        assert_eq!(out[BTH_AT + 12..BTH_AT + 17], [0xAB; 5]);
        assert_eq!(out[BTH_AT + 17..BTH_AT + 20], [0; 3]);

        pkt.net.set_srv6(0xfcbb_bb00_0102_0304_0000_0000_0000_0000);
        out.clear();
        emit(&pkt, &EncodeConfig::default(), &mut out).unwrap();
        assert_eq!(be128(&out, 38), pkt.net.srv6());
    }

    #[test]
    fn non_standard_headers_and_trimming_are_flagged_in_the_bth() {
        let mut pkt = Packet {
            net: NetHdr { src: 1, dst: 2, ..Default::default() },
            bth: Bth { opcode: opcode::RC_WRITE_MIDDLE, ..Default::default() },
            hdrs: hdr::RETH | hdr::EXT,
            payload: 4096,
            ..Default::default()
        };
        let mut out = Vec::new();
        emit(&pkt, &EncodeConfig::default(), &mut out).unwrap();
        assert_eq!(out[BTH_AT + 8], 0x40 | hdr::RETH | hdr::EXT);
        assert_eq!(parse(&out).unwrap(), as_on_wire(pkt));

        pkt.hdrs = 0;
        pkt.trim();
        out.clear();
        emit(&pkt, &EncodeConfig::default(), &mut out).unwrap();
        assert_eq!(out[BTH_AT + 8], 0x40 | 0x10);
        assert_eq!(parse(&out).unwrap(), as_on_wire(pkt));

        pkt.net.trimmed = false;
        out.clear();
        emit(&pkt, &EncodeConfig::default(), &mut out).unwrap();
        assert_eq!(out[BTH_AT + 8], 0, "a standard packet looks like a NIC's");
    }

    #[test]
    fn the_ext_header_has_the_documented_layout() {
        let pkt = Packet {
            bth: Bth { opcode: opcode::X_SACK, ..Default::default() },
            hdrs: hdr::EXT,
            ext: Ext {
                ev: 0x0102_0304,
                cum_psn: 0x1112_1314,
                ack_psn: 0x2122_2324,
                flags: 0x31,
                port_state: 0x32,
                port_epoch: 0x3334,
                ts: 0x4142_4344_4546_4748,
                bitmap: 0x5152_5354_5556_5758,
            },
            ..Default::default()
        };
        let mut out = Vec::new();
        emit(&pkt, &EncodeConfig::default(), &mut out).unwrap();
        assert_eq!(out[BTH_AT + 8], 0, "EXT is standard for fabricsim opcodes");
        assert_eq!(
            out[BTH_AT + BTH_BYTES..BTH_AT + BTH_BYTES + 32],
            hex("01020304 11121314 21222324 31 32 3334 4142434445464748 5152535455565758")[..]
        );
    }

    #[test]
    fn encoded_len_is_frame_len_without_fcs_plus_pad_and_cnp_padding() {
        let mut p = Packet { payload: 4096, hdrs: hdr::RETH, ..Default::default() };
        p.bth.opcode = opcode::RC_WRITE_FIRST;
        assert_eq!(encoded_len(&p), p.frame_len() as usize - 4);
        p.payload = 4095;
        assert_eq!(encoded_len(&p), p.frame_len() as usize - 4 + 1);
        let cnp = Packet { bth: Bth { opcode: opcode::CNP, ..Default::default() }, ..Default::default() };
        assert_eq!(encoded_len(&cnp), 94);
    }

    #[test]
    fn payload_snaplen_cuts_the_capture_but_keeps_the_lengths() {
        let pkt = Packet {
            net: NetHdr { src: 1, dst: 2, ..Default::default() },
            bth: Bth { opcode: opcode::RC_WRITE_MIDDLE, psn: 3, ..Default::default() },
            payload: 4096,
            ..Default::default()
        };
        let cfg = EncodeConfig { payload_snaplen: Some(64), ..Default::default() };
        let mut full = Vec::new();
        let mut cut = Vec::new();
        let len = emit(&pkt, &EncodeConfig::default(), &mut full).unwrap();
        assert_eq!(emit(&pkt, &cfg, &mut cut).unwrap(), len);
        assert_eq!(cut.len(), BTH_AT + BTH_BYTES + 64);
        assert_eq!(cut[..], full[..cut.len()], "same lengths and checksums");
        assert_eq!(parse(&cut).unwrap(), as_on_wire(pkt));
    }

    #[test]
    fn emit_appends_and_refuses_oversized_datagrams() {
        let mut out = vec![1, 2, 3];
        let small = Packet { payload: 10, ..Default::default() };
        let n = emit(&small, &EncodeConfig::default(), &mut out).unwrap();
        assert_eq!(out.len(), 3 + n);
        assert_eq!(out[..3], [1, 2, 3]);
        let big = Packet { payload: 65_535, ..Default::default() };
        assert!(matches!(emit(&big, &EncodeConfig::default(), &mut out), Err(EmitError::TooLong { .. })));
        assert_eq!(out.len(), 3 + n);
    }

    #[test]
    fn parse_rejects_corruption_with_the_field_named() {
        let pkt = Packet {
            net: NetHdr { src: 1, dst: 2, ..Default::default() },
            bth: Bth { opcode: opcode::RC_WRITE_MIDDLE, psn: 3, ..Default::default() },
            payload: 100,
            ..Default::default()
        };
        let mut good = Vec::new();
        emit(&pkt, &EncodeConfig::default(), &mut good).unwrap();

        let mut f = good.clone();
        f[BTH_AT + 20] ^= 1;
        assert!(matches!(parse(&f), Err(ParseError::Icrc { .. })));
        // Traffic class, flow label and hop limit are masked from the ICRC: a switch
        // may rewrite them.
        let mut f = good.clone();
        f[14 + 7] = 3;
        f[14 + 1] |= 0x30;
        f[14 + 3] ^= 0x01;
        let marked = parse(&f).unwrap();
        assert_eq!((marked.net.ecn, marked.net.flow_label), (Ecn::Ce, 1));
        let mut f = good.clone();
        f[54 + 6] ^= 0x10;
        assert!(matches!(parse(&f), Err(ParseError::UdpChecksum { .. })));
        f[54 + 6..54 + 8].fill(0);
        assert!(parse(&f).is_ok(), "checksum 0: not computed, as RoCE NICs send");
        let mut f = good.clone();
        f[56..58].copy_from_slice(&4792u16.to_be_bytes());
        assert_eq!(parse(&f), Err(ParseError::UdpPort(4792)));
        let mut f = good.clone();
        f[12] = 0x08;
        f[13] = 0x00;
        assert_eq!(parse(&f), Err(ParseError::EtherType(0x0800)));
        let mut f = good.clone();
        f[20] = 43;
        assert_eq!(parse(&f), Err(ParseError::NextHeader(43)));
        assert!(matches!(parse(&good[..70]), Err(ParseError::Truncated { need: 74, have: 70, .. })));
        let mut f = good.clone();
        f[BTH_AT] = 0x13;
        assert_eq!(parse(&f), Err(ParseError::Opcode(0x13)));
        let mut f = good.clone();
        f[22] = 0xfe;
        assert!(matches!(parse(&f), Err(ParseError::SrcAddress(_))));
        let e = ParseError::Dscp(10).to_string();
        assert!(e.contains("26") && e.contains("48"), "{e}");
    }

    fn arb_packet() -> impl Strategy<Value = Packet> {
        let net = (
            (any::<u32>(), any::<u32>(), 0u32..1 << 20, any::<u16>(), any::<bool>()),
            (
                0u8..4,
                any::<u8>(),
                any::<bool>(),
                prop_oneof![Just(0u128), any::<u128>().prop_map(|a| (0xfcbbu128 << 112) | (a >> 16))],
            ),
        )
            .prop_map(|((src, dst, flow_label, sport, control), (ecn, src_port, trimmed, srv6))| {
                let mut n = NetHdr {
                    src,
                    dst,
                    flow_label,
                    sport,
                    class: if control { TrafficClass::Control } else { TrafficClass::Data },
                    ecn: [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce][ecn as usize],
                    src_port,
                    trimmed,
                    ..Default::default()
                };
                n.set_srv6(srv6);
                n
            });
        let bth = (any::<u8>(), any::<bool>(), 0u32..1 << 24, 0u32..1 << 24)
            .prop_map(|(opcode, ack_req, dest_qp, psn)| Bth { opcode, ack_req, dest_qp, psn });
        let reth = (any::<u64>(), any::<u32>(), any::<u32>()).prop_map(|(va, rkey, len)| Reth { va, rkey, len });
        let aeth = (any::<u8>(), 0u32..1 << 24).prop_map(|(syndrome, msn)| Aeth { syndrome, msn });
        let ext = (any::<(u32, u32, u32, u8, u8, u16, u64, u64)>()).prop_map(
            |(ev, cum_psn, ack_psn, flags, port_state, port_epoch, ts, bitmap)| Ext {
                ev,
                cum_psn,
                ack_psn,
                flags,
                port_state,
                port_epoch,
                ts,
                bitmap,
            },
        );
        (net, bth, prop_oneof![0u32..64, 0u32..9000], 0u8..16, reth, any::<u32>(), aeth, ext).prop_map(
            |(net, bth, payload, hdrs, reth, imm, aeth, ext)| {
                // A StaR packet carries its StaR header and nothing else, whose fields
                // are stored in the RETH, immediate and AETH (any values).
                let hdrs = if opcode::is_star(bth.opcode) { hdr::STH } else { hdrs };
                let star = hdrs == hdr::STH;
                Packet {
                    net,
                    bth,
                    payload,
                    hdrs,
                    // A parsed packet has default values in the headers it lacks.
                    reth: if star || hdrs & hdr::RETH != 0 { reth } else { Reth::default() },
                    imm: if star || hdrs & hdr::IMM != 0 { imm } else { 0 },
                    aeth: if star || hdrs & hdr::AETH != 0 { aeth } else { Aeth::default() },
                    ext: if hdrs & hdr::EXT != 0 { ext } else { Ext::default() },
                }
            },
        )
    }

    proptest! {
        #[test]
        fn emit_then_parse_gives_the_packet_back(
            pkt in arb_packet(),
            fill in any::<u8>(),
            mig_req in any::<bool>(),
            snap in prop_oneof![Just(None), (0u32..128).prop_map(Some)],
        ) {
            let cfg = EncodeConfig { payload_fill: fill, mig_req, payload_snaplen: snap };
            let mut out = Vec::new();
            let len = emit(&pkt, &cfg, &mut out).unwrap();
            prop_assert_eq!(len, encoded_len(&pkt));
            prop_assert!(out.len() <= len);
            prop_assert_eq!(parse(&out), Ok(as_on_wire(pkt)));
        }

        #[test]
        fn parse_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = parse(&bytes);
        }

        #[test]
        fn parse_never_panics_on_mutated_frames(
            pkt in arb_packet(),
            edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
            cut in any::<prop::sample::Index>(),
        ) {
            // Random bytes rarely get past the EtherType; flipping bytes of valid
            // frames and cutting them exercises the deeper length checks.
            let mut out = Vec::new();
            emit(&pkt, &EncodeConfig::default(), &mut out).unwrap();
            for (i, b) in edits {
                let i = i.index(out.len());
                out[i] = b;
            }
            let n = cut.index(out.len() + 1);
            let _ = parse(&out[..n]);
        }
    }
}
