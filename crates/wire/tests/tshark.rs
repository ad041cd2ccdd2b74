//! Checks with tshark that the frames [`emit`](fabricsim_wire::emit) writes decode as
//! RoCEv2: a pcap of typical fabricsim packets is written and read back by Wireshark's
//! dissectors. Skipped, with a message, when tshark is not installed.

use std::net::Ipv6Addr;
use std::path::PathBuf;
use std::process::Command;

use fabricsim_wire::encode::host_addr;
use fabricsim_wire::{
    emit, hdr, opcode, Aeth, Bth, Ecn, EncodeConfig, Ext, NetHdr, Packet, PcapWriter, Reth, TrafficClass,
};

/// The packets of the capture, in order.
fn packets() -> Vec<Packet> {
    let data = NetHdr {
        src: 1,
        dst: 2,
        sport: 0xC123,
        flow_label: 0x12345,
        class: TrafficClass::Data,
        ecn: Ecn::Ect0,
        ..Default::default()
    };
    let control = NetHdr { src: 2, dst: 1, sport: 0xC456, class: TrafficClass::Control, ecn: Ecn::NotEct, ..data };
    let write = |op, psn| Packet {
        net: data,
        bth: Bth { opcode: op, ack_req: false, dest_qp: 0x11, psn },
        payload: 1024,
        ..Default::default()
    };
    let ack = |syndrome, psn| Packet {
        net: control,
        bth: Bth { opcode: opcode::RC_ACK, ack_req: false, dest_qp: 0x22, psn },
        hdrs: hdr::AETH,
        aeth: Aeth { syndrome, msn: 1 },
        ..Default::default()
    };

    let mut first = write(opcode::RC_WRITE_FIRST, 100);
    first.hdrs = hdr::RETH;
    first.reth = Reth { va: 0x7f00_0000_0000, rkey: 0x1234, len: 3 * 1024 };
    let middle = write(opcode::RC_WRITE_MIDDLE, 101);
    // A multipath data packet: SRv6 destination, RETH and EXT on a MIDDLE opcode, so
    // the BTH lists its headers explicitly.
    let mut multipath = write(opcode::RC_WRITE_MIDDLE, 102);
    multipath.net.set_srv6(0xfcbb_bb00_0102_0304_0000_0000_0000_0000);
    multipath.hdrs = hdr::RETH | hdr::EXT;
    multipath.reth = Reth { va: 0x7f00_0000_0800, rkey: 0x1234, len: 1024 };
    multipath.ext = Ext { ev: 0x0001_C123, ts: 5_000_000, ..Default::default() };
    let mut trimmed = multipath;
    trimmed.trim();
    let cnp = Packet {
        net: control,
        bth: Bth { opcode: opcode::CNP, dest_qp: 0x22, ..Default::default() },
        ..Default::default()
    };
    let sack = Packet {
        net: control,
        bth: Bth { opcode: opcode::X_SACK, ack_req: false, dest_qp: 0x22, psn: 103 },
        hdrs: hdr::EXT,
        ext: Ext {
            ev: 0x0001_C123,
            cum_psn: 101,
            ack_psn: 103,
            flags: 0,
            port_state: 1,
            port_epoch: 0,
            ts: 5_000_000,
            bitmap: 0b10,
        },
        ..Default::default()
    };
    vec![first, middle, multipath, trimmed, ack(Aeth::ACK, 101), ack(Aeth::NAK_SEQ_ERR, 102), cnp, sack]
}

fn tshark_available() -> bool {
    Command::new("tshark").arg("--version").output().is_ok_and(|o| o.status.success())
}

#[test]
fn tshark_decodes_opcodes_psns_addresses_and_checksums() {
    if !tshark_available() {
        eprintln!("SKIPPED tshark_decodes_opcodes_psns_addresses_and_checksums: tshark not found on PATH");
        return;
    }
    let pkts = packets();
    let cfg = EncodeConfig::default();
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("wire-tshark-{}.pcap", std::process::id()));
    let mut frames = Vec::new();
    {
        let file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        let mut w = PcapWriter::new(file, 65_535).unwrap();
        for (i, p) in pkts.iter().enumerate() {
            let mut frame = Vec::new();
            let len = emit(p, &cfg, &mut frame).unwrap();
            w.write_packet(i as u64 * 1_000_000, &frame, len as u32).unwrap();
            frames.push(frame);
        }
        w.flush().unwrap();
    }

    // RRoCE is on by default on UDP 4791; RPC-over-RDMA's heuristic would claim some
    // payloads, so it is disabled. UDP checksum validation is off by default.
    let out = Command::new("tshark")
        .args(["-r", path.to_str().unwrap(), "--disable-protocol", "rpcordma", "-o", "udp.check_checksum:TRUE"])
        .args(["-T", "fields", "-E", "separator=,"])
        .args(["-e", "infiniband.bth.opcode", "-e", "infiniband.bth.psn", "-e", "ipv6.dst", "-e", "udp.srcport"])
        .args(["-e", "udp.checksum.status", "-e", "infiniband.invariant.crc", "-e", "_ws.malformed"])
        .args(["-e", "infiniband.bth.destqp"])
        .output()
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(out.status.success(), "tshark failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), pkts.len(), "tshark output:\n{text}");

    for ((line, p), frame) in lines.iter().zip(&pkts).zip(&frames) {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f.len(), 8, "{line}");
        assert_eq!(f[0], p.bth.opcode.to_string(), "opcode: {line}");
        assert_eq!(f[1], p.bth.psn.to_string(), "PSN: {line}");
        let dst = match p.net.srv6() {
            0 => host_addr(p.net.dst, p.net.src_port),
            a => a,
        };
        assert_eq!(f[2], Ipv6Addr::from(dst).to_string(), "IPv6 destination: {line}");
        assert_eq!(f[3], p.net.sport.to_string(), "UDP source port: {line}");
        // Wireshark's checksum status: 0 bad, 1 good, 2 unverified.
        assert_eq!(f[4], "1", "UDP checksum: {line}");
        // Wireshark shows the ICRC for opcodes it knows, reading the wire bytes in
        // order; it treats the CNP and fabricsim's opcodes as unknown.
        if p.bth.opcode < 0x80 {
            let n = frame.len();
            let wire = u32::from_be_bytes([frame[n - 4], frame[n - 3], frame[n - 2], frame[n - 1]]);
            assert_eq!(f[5], format!("{wire:#010x}"), "ICRC position: {line}");
        }
        assert_eq!(f[6], "", "malformed: {line}");
        // Never QP 0 or 1 (management datagrams to Wireshark).
        assert_eq!(f[7], format!("{:#08x}", p.bth.dest_qp + fabricsim_wire::encode::QPN_OFFSET), "DestQP: {line}");
    }
}
