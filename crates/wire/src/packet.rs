//! Header structs and lengths.
//!
//! Layout on the wire (the encoding in a later module follows exactly this order):
//!
//! ```text
//! Ethernet II (14) | IPv6 (40) | UDP (8, dst 4791) | BTH (12)
//!   | RETH (16)? | ImmDt (4)? | AETH (4)? | fabricsim EXT (32)? | payload | ICRC (4) | FCS (4)
//! ```
//!
//! StaR's packets (opcodes [`opcode::STAR_WQEP`]`..=`[`opcode::STAR_SDP`]) carry a StaR
//! header ([`Sth`], 24 bytes) after the BTH and nothing else.
//!
//! On the link each frame also occupies 8 bytes of preamble/SFD and 12 of inter-frame
//! gap: [`Packet::wire_bytes`] includes them, [`Packet::frame_len`] does not.

/// The UDP destination port of RoCEv2.
pub const ROCEV2_UDP_PORT: u16 = 4791;

/// Bytes of Ethernet + IPv6 + UDP + BTH + ICRC + FCS every packet carries.
pub const BASE_HEADER_BYTES: u32 = 14 + 40 + 8 + 12 + 4 + 4;
/// Preamble, start-of-frame delimiter and inter-frame gap.
pub const PREAMBLE_IFG_BYTES: u32 = 20;
/// Length of the RDMA extended transport header.
pub const RETH_BYTES: u32 = 16;
/// Length of the ACK extended transport header.
pub const AETH_BYTES: u32 = 4;
/// Length of immediate data.
pub const IMM_BYTES: u32 = 4;
/// Length of fabricsim's extension header (see [`Ext`]).
pub const EXT_BYTES: u32 = 32;
/// Length of the StaR header (see [`Sth`]).
pub const STH_BYTES: u32 = 24;

/// Base Transport Header opcodes (InfiniBand Architecture Specification, table 38)
/// and fabricsim's extensions in the manufacturer-specific range `0xC0..=0xFF`.
pub mod opcode {
    /// RC SEND first packet of a multi-packet message.
    pub const RC_SEND_FIRST: u8 = 0x00;
    /// RC SEND middle packet.
    pub const RC_SEND_MIDDLE: u8 = 0x01;
    /// RC SEND last packet.
    pub const RC_SEND_LAST: u8 = 0x02;
    /// RC SEND last packet with immediate data.
    pub const RC_SEND_LAST_IMM: u8 = 0x03;
    /// RC SEND only.
    pub const RC_SEND_ONLY: u8 = 0x04;
    /// RC SEND of a single-packet message with immediate data.
    pub const RC_SEND_ONLY_IMM: u8 = 0x05;
    /// RC RDMA WRITE first packet of a multi-packet message.
    pub const RC_WRITE_FIRST: u8 = 0x06;
    /// RC RDMA WRITE middle packet.
    pub const RC_WRITE_MIDDLE: u8 = 0x07;
    /// RC RDMA WRITE last packet.
    pub const RC_WRITE_LAST: u8 = 0x08;
    /// RC RDMA WRITE last packet with immediate data.
    pub const RC_WRITE_LAST_IMM: u8 = 0x09;
    /// RC RDMA WRITE of a single-packet message.
    pub const RC_WRITE_ONLY: u8 = 0x0A;
    /// RC RDMA WRITE of a single-packet message with immediate data.
    pub const RC_WRITE_ONLY_IMM: u8 = 0x0B;
    /// RC Acknowledge (carries an AETH: ACK or NAK).
    pub const RC_ACK: u8 = 0x11;
    /// RoCEv2 Congestion Notification Packet.
    pub const CNP: u8 = 0x81;
    /// fabricsim: selective acknowledgement (EXT carries cumulative PSN and bitmap).
    pub const X_SACK: u8 = 0xC0;
    /// fabricsim: negative acknowledgement of one PSN (trimmed or beyond the window).
    pub const X_NACK: u8 = 0xC1;
    /// fabricsim: path probe.
    pub const X_PROBE: u8 = 0xC2;
    /// fabricsim: answer to a path probe.
    pub const X_PROBE_REPLY: u8 = 0xC3;
    /// fabricsim: per-packet acknowledgement for multipath protocols (EXT carries the
    /// acknowledged PSN, the entropy echo and the timestamp echo).
    pub const X_ACK: u8 = 0xC4;

    // StaR (APNet '20), whose paper leaves the packets' layout out: fabricsim's numbers
    // and its StaR header ([`super::Sth`]).
    /// StaR: a work queue element carried from the stateless server's driver to the
    /// client (the server's WRITE or SEND to post).
    pub const STAR_WQEP: u8 = 0xD0;
    /// StaR: a completion element carried from the client to the server.
    pub const STAR_CQEP: u8 = 0xD1;
    /// StaR: element acknowledgement of a WQEP or CQEP.
    pub const STAR_EA: u8 = 0xD2;
    /// StaR: receiving data packet: data for the stateless server, with its DMA
    /// address and length.
    pub const STAR_RDP: u8 = 0xD3;
    /// StaR: receiving ACK, built by the stateless server from the RDP's header.
    pub const STAR_RA: u8 = 0xD4;
    /// StaR: get data: the client asks the stateless server for bytes at an address.
    pub const STAR_GD: u8 = 0xD5;
    /// StaR: send data packet: the stateless server's answer to a GD.
    pub const STAR_SDP: u8 = 0xD6;

    /// Whether `op` is one of StaR's packets.
    pub fn is_star(op: u8) -> bool {
        (STAR_WQEP..=STAR_SDP).contains(&op)
    }

    /// Whether `op` is a data-carrying RDMA WRITE (or SEND) packet.
    pub fn is_data(op: u8) -> bool {
        matches!(op, RC_SEND_FIRST..=RC_WRITE_ONLY_IMM | STAR_RDP | STAR_SDP)
    }
    /// Whether `op` starts a message (its first or only packet: a work request's).
    pub fn starts_message(op: u8) -> bool {
        matches!(
            op,
            RC_SEND_FIRST | RC_SEND_ONLY | RC_SEND_ONLY_IMM | RC_WRITE_FIRST | RC_WRITE_ONLY | RC_WRITE_ONLY_IMM
        )
    }
    /// Whether `op` ends a message (the receiver completes it once all its bytes are in).
    pub fn ends_message(op: u8) -> bool {
        matches!(
            op,
            RC_SEND_LAST..=RC_SEND_ONLY_IMM | RC_WRITE_LAST | RC_WRITE_LAST_IMM | RC_WRITE_ONLY | RC_WRITE_ONLY_IMM
        )
    }
}

/// Flags saying which optional headers a packet carries.
pub mod hdr {
    /// RDMA extended transport header.
    pub const RETH: u8 = 1 << 0;
    /// Immediate data.
    pub const IMM: u8 = 1 << 1;
    /// ACK extended transport header.
    pub const AETH: u8 = 1 << 2;
    /// fabricsim extension header.
    pub const EXT: u8 = 1 << 3;
    /// StaR header (the only header of a StaR packet, implied by its opcode).
    pub const STH: u8 = 1 << 4;
}

/// The two-bit ECN field of the IP header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum Ecn {
    /// Not ECN-capable: a congested switch may drop but never marks.
    #[default]
    NotEct = 0,
    /// ECN-capable transport (1).
    Ect1 = 1,
    /// ECN-capable transport (0): what RoCEv2 senders set.
    Ect0 = 2,
    /// Congestion experienced: set by a switch instead of dropping.
    Ce = 3,
}

/// Traffic classes the fabric schedules with strict priority.
///
/// RoCE deployments put data in a lossless class (PFC) and ACK/NAK/CNP in a higher one;
/// trimmed headers travel with the control class so the receiver learns of the loss
/// at once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum TrafficClass {
    /// Data packets. The only class PFC pauses.
    #[default]
    Data = 0,
    /// ACKs, NAKs, CNPs, probes and trimmed headers; served before data, never paused.
    Control = 1,
}

impl TrafficClass {
    /// Number of classes.
    pub const COUNT: usize = 2;
    /// DSCP value written on the wire for this class.
    pub fn dscp(self) -> u8 {
        match self {
            TrafficClass::Data => 26,
            TrafficClass::Control => 48,
        }
    }
}

/// The network part of a packet: what switches read.
///
/// `repr(C)` with the widest fields first keeps it at 40 bytes, so that together with
/// the BTH and the payload length it fits the first cache line of a [`Packet`]: a
/// switch reads one line per hop.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct NetHdr {
    /// SRv6 uSID destination address as `[high, low]` 64-bit halves (locator in the
    /// top 32 bits, then 16-bit uSIDs); zero when the fabric routes by destination
    /// host. See [`srv6`](Self::srv6).
    pub srv6_words: [u64; 2],
    /// Source host (its IPv6 address is derived from this index).
    pub src: u32,
    /// Destination host.
    pub dst: u32,
    /// IPv6 flow label (20 bits), a second entropy field (MRC stripes its EV over it).
    pub flow_label: u32,
    /// UDP source port: RoCEv2's entropy field, hashed by ECMP.
    pub sport: u16,
    /// Traffic class (strict priority; PFC applies to [`TrafficClass::Data`]).
    pub class: TrafficClass,
    /// ECN codepoint.
    pub ecn: Ecn,
    /// The NIC port (plane) the packet left its source from.
    pub src_port: u8,
    /// Set by a switch that cut the payload off instead of dropping the packet.
    pub trimmed: bool,
}

impl NetHdr {
    /// The SRv6 destination address (zero: none).
    #[inline]
    pub fn srv6(&self) -> u128 {
        ((self.srv6_words[0] as u128) << 64) | self.srv6_words[1] as u128
    }

    /// Sets the SRv6 destination address.
    #[inline]
    pub fn set_srv6(&mut self, a: u128) {
        self.srv6_words = [(a >> 64) as u64, a as u64];
    }

    /// The 32-bit entropy value: UDP source port in the low 16 bits, the low 16 bits
    /// of the IPv6 flow label above (MRC stripes its EV over both fields).
    #[inline]
    pub fn entropy(&self) -> u32 {
        ((self.flow_label & 0xFFFF) << 16) | self.sport as u32
    }

    /// Sets the entropy value (see [`entropy`](Self::entropy)).
    #[inline]
    pub fn set_entropy(&mut self, ev: u32) {
        self.sport = ev as u16;
        self.flow_label = (self.flow_label & !0xFFFF) | (ev >> 16);
    }
}

/// An entropy value's plane lives in its top 3 bits (a multipath transport that spans
/// the planes of a multi-plane NIC tags its EVs with them); paths are chosen from the
/// low bits, so the tag never steers a packet.
pub const EV_PLANE_SHIFT: u32 = 29;

/// The plane tagged in entropy value `ev`.
#[inline]
pub fn ev_plane(ev: u32) -> u8 {
    (ev >> EV_PLANE_SHIFT) as u8
}

/// `bits` (the path-selecting part, top 3 bits ignored) tagged with `plane`.
#[inline]
pub fn ev_with_plane(bits: u32, plane: u8) -> u32 {
    (bits & ((1 << EV_PLANE_SHIFT) - 1)) | ((plane as u32 & 7) << EV_PLANE_SHIFT)
}

/// InfiniBand Base Transport Header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Bth {
    /// Operation (see [`opcode`]).
    pub opcode: u8,
    /// Acknowledge-request bit: the requester asks for an ACK of this packet.
    pub ack_req: bool,
    /// Destination queue pair number (24 bits).
    pub dest_qp: u32,
    /// Packet sequence number (24 bits on the wire; the simulator keeps 32 and encodes
    /// the low 24).
    pub psn: u32,
}

/// RDMA Extended Transport Header: where the payload goes in the remote memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reth {
    /// Remote virtual address of this packet's first payload byte.
    pub va: u64,
    /// Remote key of the memory region.
    pub rkey: u32,
    /// DMA length: bytes of the whole message (first packet) or of this packet when
    /// every packet carries an address (multipath protocols).
    pub len: u32,
}

/// ACK Extended Transport Header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Aeth {
    /// Syndrome: `0x1F` = ACK with unlimited credits, `0x60` = NAK PSN sequence error.
    pub syndrome: u8,
    /// Message sequence number: messages completed at the responder.
    pub msn: u32,
}

impl Aeth {
    /// ACK syndrome (credit count field set to "invalid", i.e. unlimited).
    pub const ACK: u8 = 0x1F;
    /// NAK: PSN sequence error (the requester must go back to the PSN in the BTH).
    pub const NAK_SEQ_ERR: u8 = 0x60;
    /// Whether this AETH is a NAK.
    pub fn is_nak(&self) -> bool {
        self.syndrome & 0x60 == 0x60
    }
}

/// fabricsim's extension header for multipath transports (32 bytes on the wire).
///
/// Field meaning depends on the opcode; the documented uses are:
/// * data packets: `ev` = entropy value of the path, `ts` = send timestamp.
/// * `X_ACK`/`X_SACK`/`X_NACK`: `cum_psn` = every PSN below is received, `ack_psn` =
///   the PSN that triggered this feedback, `bitmap` bit *i* = PSN `ack_psn - 1 - i`
///   received (so every PSN's state is repeated in the next 64 SACKs and one lost SACK
///   loses nothing), `ev` = entropy value the data came on, `ts` = its timestamp
///   echoed, `flags` see the `F_*` constants, `port_state` = bit *p* set while the
///   sender's NIC port *p* is up (MRC), `port_epoch` = how many times that bitmap has
///   changed (wrapping), so that a SACK overtaken by a later one does not undo it.
/// * `X_PROBE`/`X_PROBE_REPLY`: `ev` = the entropy value under test, `ts` = the probe's
///   send time (echoed); a receiver's reverse probe with [`Ext::F_HINT`] names in
///   `bitmap` the forward entropy value its reply should take.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ext {
    /// Entropy value (path) of the data packet this refers to.
    pub ev: u32,
    /// Cumulative acknowledgement: all PSNs below this are received.
    pub cum_psn: u32,
    /// The PSN this acknowledgement is for.
    pub ack_psn: u32,
    /// Flags (`F_*`).
    pub flags: u8,
    /// Bitmap of NIC ports that are up at the sender of this packet.
    pub port_state: u8,
    /// Changes of `port_state` at the sender so far (wrapping): a newer bitmap has a
    /// larger epoch.
    pub port_epoch: u16,
    /// Timestamp in picoseconds (sent, or echoed).
    pub ts: u64,
    /// SACK bitmap above `cum_psn`.
    pub bitmap: u64,
}

impl Ext {
    /// The data packet this acknowledges carried an ECN CE mark.
    pub const F_ECE: u8 = 1 << 0;
    /// The data packet arrived trimmed (NACK: fast-retransmit it).
    pub const F_TRIMMED: u8 = 1 << 1;
    /// The packet is a retransmission.
    pub const F_RETX: u8 = 1 << 2;
    /// The acknowledged data packet had already arrived (a duplicate): the
    /// retransmission that brought it was spurious.
    pub const F_DUP: u8 = 1 << 3;
    /// A receiver's reverse probe: `bitmap` holds the entropy value of the latest data
    /// packet that reached it on this plane, a forward path known to work, for the
    /// reply.
    pub const F_HINT: u8 = 1 << 4;
    /// A repeated acknowledgement (sent again on a reverse path just found to work): it
    /// gives no round-trip sample.
    pub const F_REPEAT: u8 = 1 << 5;
    /// A probe reply from a sender that has heard no acknowledgement for a round trip
    /// while packets are outstanding: the receiver repeats its latest acknowledgement
    /// on the reverse path the reply just proved.
    pub const F_UNHEARD: u8 = 1 << 6;
    /// From a receiver whose NIC port just came back up (its repeated acknowledgement
    /// and reverse probes): the silence a sender timed out against was an outage, now
    /// over, so it resends at once rather than after its backed-off timeout.
    pub const F_PORT_UP: u8 = 1 << 7;
}

/// StaR's header (24 bytes on the wire, big-endian), the whole state a stateless NIC
/// needs to act on a packet:
///
/// ```text
/// 0 addr u64 | 8 elem u32 | 12 total u32 | 16 len u16 | 18 flags u8 | 19 reply_qp u24
///   | 22 reply_sport u16
/// ```
///
/// * `addr`: the DMA address: where an RDP's payload goes, where a GD's (and its SDP's)
///   bytes come from, the buffer of a WQEP's work request.
/// * `elem`: the work request (message) the packet belongs to, numbered per connection.
/// * `total`: that work request's length in bytes.
/// * `len`: the bytes this packet places (RDP, SDP) or asks for (GD), at most 64 KiB
///   (the paper's two bytes).
/// * `reply_qp`, `reply_sport`: what the answer (RA, SDP, EA) is addressed to: the
///   header information the paper has an RDP or GD carry, so that the stateless side
///   builds its answer from the packet alone.
///
/// A [`Packet`] stores it in the RETH, immediate and AETH fields, which a StaR packet
/// does not otherwise have: see [`Packet::sth`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sth {
    /// DMA address.
    pub addr: u64,
    /// Work request number.
    pub elem: u32,
    /// Work request length.
    pub total: u32,
    /// Bytes placed or asked for.
    pub len: u16,
    /// Flags (`F_*`).
    pub flags: u8,
    /// QP the answer goes to (24 bits).
    pub reply_qp: u32,
    /// UDP source port (entropy) of the answer.
    pub reply_sport: u16,
}

impl Sth {
    /// The answered packet carried an ECN CE mark (RA, SDP's GD... echoed to the client).
    pub const F_ECE: u8 = 1 << 0;
    /// The packet is a retransmission.
    pub const F_RETX: u8 = 1 << 1;
}

/// One packet: headers as data plus a payload length (payload bytes are not stored).
///
/// Laid out for the fabric: everything a switch reads (network header, BTH, header
/// flags, payload length) is in the first of its two cache lines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct Packet {
    /// Network header.
    pub net: NetHdr,
    /// Base transport header.
    pub bth: Bth,
    /// Bytes of payload carried (zero once trimmed).
    pub payload: u32,
    /// Which optional headers are present ([`hdr`] flags).
    pub hdrs: u8,
    /// RDMA address, if [`hdr::RETH`].
    pub reth: Reth,
    /// Immediate data, if [`hdr::IMM`].
    pub imm: u32,
    /// ACK header, if [`hdr::AETH`].
    pub aeth: Aeth,
    /// Extension header, if [`hdr::EXT`].
    pub ext: Ext,
}

impl Packet {
    /// Ethernet frame length in bytes, FCS included, preamble and gap excluded.
    pub fn frame_len(&self) -> u32 {
        let mut n = BASE_HEADER_BYTES + self.payload;
        if self.hdrs & hdr::RETH != 0 {
            n += RETH_BYTES;
        }
        if self.hdrs & hdr::IMM != 0 {
            n += IMM_BYTES;
        }
        if self.hdrs & hdr::AETH != 0 {
            n += AETH_BYTES;
        }
        if self.hdrs & hdr::EXT != 0 {
            n += EXT_BYTES;
        }
        if self.hdrs & hdr::STH != 0 {
            n += STH_BYTES;
        }
        n
    }

    /// The StaR header of a StaR packet (meaningless for others).
    ///
    /// Stored in fields a StaR packet has no other use for, so that [`Packet`] stays
    /// two cache lines: `addr`, `elem` and `total` in the RETH's address, key and length,
    /// `len` and `reply_sport` in the immediate, `flags` and `reply_qp` in the AETH.
    #[inline]
    pub fn sth(&self) -> Sth {
        Sth {
            addr: self.reth.va,
            elem: self.reth.rkey,
            total: self.reth.len,
            len: self.imm as u16,
            flags: self.aeth.syndrome,
            reply_qp: self.aeth.msn,
            reply_sport: (self.imm >> 16) as u16,
        }
    }

    /// Sets the StaR header (see [`sth`](Self::sth)) and marks it present.
    #[inline]
    pub fn set_sth(&mut self, h: Sth) {
        self.reth = Reth { va: h.addr, rkey: h.elem, len: h.total };
        self.imm = h.len as u32 | (h.reply_sport as u32) << 16;
        self.aeth = Aeth { syndrome: h.flags, msn: h.reply_qp & 0xFF_FFFF };
        self.hdrs = hdr::STH;
    }

    /// Bytes the packet occupies on a link: frame plus preamble and inter-frame gap.
    /// Serialization time is `wire_bytes * 8 / rate`.
    pub fn wire_bytes(&self) -> u32 {
        self.frame_len() + PREAMBLE_IFG_BYTES
    }

    /// Whether this packet carries RDMA payload (or carried it before trimming).
    pub fn is_data(&self) -> bool {
        opcode::is_data(self.bth.opcode)
    }

    /// Cuts the payload off, keeping every header: what a trimming switch does.
    pub fn trim(&mut self) {
        self.payload = 0;
        self.net.trimmed = true;
        self.net.class = TrafficClass::Control;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_mtu_write_packet_has_the_rocev2_overhead() {
        let p = Packet {
            bth: Bth { opcode: opcode::RC_WRITE_MIDDLE, ..Default::default() },
            payload: 4096,
            ..Default::default()
        };
        // Ethernet 14 + IPv6 40 + UDP 8 + BTH 12 + ICRC 4 + FCS 4.
        assert_eq!(p.frame_len(), 4096 + 82);
        assert_eq!(p.wire_bytes(), 4096 + 102);
    }

    #[test]
    fn optional_headers_add_their_lengths() {
        let mut p = Packet { hdrs: hdr::RETH | hdr::EXT, payload: 100, ..Default::default() };
        assert_eq!(p.frame_len(), 82 + 16 + 32 + 100);
        p.hdrs = hdr::AETH;
        p.payload = 0;
        assert_eq!(p.frame_len(), 86);
    }

    #[test]
    fn trimming_keeps_headers_and_raises_priority() {
        let mut p = Packet { hdrs: hdr::RETH, payload: 4096, ..Default::default() };
        p.bth.opcode = opcode::RC_WRITE_MIDDLE;
        p.trim();
        assert_eq!(p.payload, 0);
        assert!(p.net.trimmed && p.is_data());
        assert_eq!(p.net.class, TrafficClass::Control);
        assert_eq!(p.frame_len(), 82 + 16);
    }

    #[test]
    fn packets_stay_compact_and_switches_read_one_cache_line() {
        // The pool stores one of these per packet in flight; the foundation's budget
        // is 250 bytes per packet including the simulator's bookkeeping.
        assert_eq!(std::mem::size_of::<Packet>(), 128);
        assert_eq!(std::mem::size_of::<NetHdr>(), 40);
        let p = Packet::default();
        let base = &p as *const Packet as usize;
        let end_of = |f: usize, size: usize| f - base + size;
        assert!(end_of(&p.bth as *const Bth as usize, std::mem::size_of::<Bth>()) <= 64);
        assert!(end_of(&p.hdrs as *const u8 as usize, 1) <= 64);
        assert!(end_of(&p.payload as *const u32 as usize, 4) <= 64);
    }

    #[test]
    fn the_star_header_round_trips_through_its_storage_and_counts_24_bytes() {
        let h = Sth {
            addr: 0x7f00_1234_5678_9abc,
            elem: 7,
            total: 2800,
            len: 1400,
            flags: Sth::F_ECE | Sth::F_RETX,
            reply_qp: 0xAB_CDEF,
            reply_sport: 0xC123,
        };
        let mut p = Packet { payload: 1400, ..Default::default() };
        p.bth.opcode = opcode::STAR_RDP;
        p.set_sth(h);
        assert_eq!(p.sth(), h);
        assert_eq!(p.frame_len(), 82 + 24 + 1400);
        assert!(p.is_data() && opcode::is_star(p.bth.opcode) && !opcode::is_star(opcode::X_ACK));
    }

    #[test]
    fn the_srv6_address_round_trips_through_its_halves() {
        let mut n = NetHdr::default();
        let a = 0xfcbb_bb00_5805_98c8_592c_d811_0000_0000u128;
        n.set_srv6(a);
        assert_eq!(n.srv6(), a);
    }
}
