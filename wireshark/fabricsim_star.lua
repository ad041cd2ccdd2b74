--[[
fabricsim_star.lua: a Wireshark/tshark dissector for StaR's packets in fabricsim's
pcap captures.

StaR (APNet '20) is an RDMA transport whose server NIC keeps no per-connection
state. The paper (section 3.1) names its seven packet types and what some of them
carry but leaves their layout out; the layout dissected here is fabricsim's own (crates/wire/src/
packet.rs, `opcode::STAR_*` and `struct Sth`; crates/wire/src/encode.rs, module doc),
so this script decodes fabricsim's captures, not any real NIC's traffic.

Use:
    tshark -X lua_script:wireshark/fabricsim_star.lua -r capture.pcap
    tshark -X lua_script:wireshark/fabricsim_star.lua -r capture.pcap -Y star \
        -T fields -e star.type -e star.psn -e star.elem -e star.len -e star.payload_len
or copy this file into Wireshark's personal Lua plugins folder (Help > About
Wireshark > Folders > Personal Lua Plugins: ~/.local/lib/wireshark/plugins on Linux
and macOS, %APPDATA%\Wireshark\plugins on Windows) and restart Wireshark (or
Analyze > Reload Lua Plugins). Display filter: star (e.g. star.type == "RDP").

What is on the wire (RoCEv2 over IPv6, UDP destination port 4791):

    BTH (12) | StaR header (24) | payload | pad (0-3) | ICRC (4)

* BTH: byte 0 opcode, 0xD0-0xD6 = WQEP, CQEP, EA, RDP, RA, GD, SDP; byte 1 bits
  5-4 pad count; bytes 5-7 DestQP (fabricsim's endpoint number + 2, so that no
  frame goes to InfiniBand's management QPs 0 and 1); byte 8 bit 7 AckReq, and
  bits 0x40|0x10 both set when the packet was trimmed (payload cut by a switch);
  bytes 9-11 PSN.
* StaR header, big-endian:
      0 addr u64 | 8 elem u32 | 12 total u32 | 16 len u16 | 18 flags u8
        | 19 reply_qp u24 | 22 reply_sport u16
  addr: DMA address (where an RDP's payload goes, where a GD's/SDP's bytes come
  from, a WQEP's buffer); elem: the work request, numbered per connection; total:
  its length; len: the bytes this packet places (RDP, SDP) or asks for (GD);
  flags bit 0 = ECN echo, bit 1 = retransmission; reply_qp, reply_sport: where the
  answer (RA, SDP, EA) goes, written as the answer's BTH DestQP and UDP source port
  will carry them.

Every other frame on UDP port 4791 goes to the dissector that had the port before
this script (Wireshark's InfiniBand/RRoCE dissector), so ordinary RoCE frames
decode exactly as without the script, with one trace: since the script takes the
port, "star" appears before "infiniband" in their frame.protocols ([Protocols in
frame]). The star display filter matches StaR frames only. Disabling the protocol
star (Analyze > Enabled Protocols) turns off RoCE decoding on the port too: remove
the script instead.
--]]

local ROCE_PORT = 4791
local BTH_LEN = 12
local STH_LEN = 24
local ICRC_LEN = 4
local OP_FIRST, OP_LAST = 0xD0, 0xD6

local names = {
    [0xD0] = "WQEP", [0xD1] = "CQEP", [0xD2] = "EA", [0xD3] = "RDP",
    [0xD4] = "RA", [0xD5] = "GD", [0xD6] = "SDP",
}
local meaning = {
    [0xD0] = "work queue element (server's driver to client)",
    [0xD1] = "completion element (client to server)",
    [0xD2] = "element acknowledgement",
    [0xD3] = "receiving data packet (data for the stateless server)",
    [0xD4] = "receiving ACK (built by the server from the RDP's header)",
    [0xD5] = "get data (client asks the server for bytes)",
    [0xD6] = "send data packet (the server's answer to a GD)",
}

local star = Proto("star", "fabricsim StaR")

local f = {
    type = ProtoField.string("star.type", "Type", base.ASCII, "StaR packet type (WQEP, CQEP, EA, RDP, RA, GD, SDP)"),
    opcode = ProtoField.uint8("star.opcode", "Opcode", base.HEX, names, nil, "BTH opcode"),
    padcnt = ProtoField.uint8("star.padcnt", "Pad count", base.DEC, nil, 0x30),
    qp = ProtoField.uint24("star.qp", "Destination QP", base.DEC, nil, nil,
        "BTH DestQP as on the wire (fabricsim endpoint number + 2)"),
    ackreq = ProtoField.bool("star.ackreq", "Acknowledge request", 8, nil, 0x80),
    trimmed = ProtoField.bool("star.trimmed", "Trimmed", base.NONE, nil, nil,
        "BTH byte 8 has 0x40|0x10 set: a switch cut the payload"),
    psn = ProtoField.uint24("star.psn", "PSN", base.DEC),
    addr = ProtoField.uint64("star.addr", "DMA address", base.HEX),
    elem = ProtoField.uint32("star.elem", "Work request", base.DEC, nil, nil, "elem: the work request's number"),
    total = ProtoField.uint32("star.total", "Work request length", base.DEC, nil, nil, "total: bytes"),
    len = ProtoField.uint16("star.len", "Length", base.DEC, nil, nil,
        "Bytes this packet places (RDP, SDP) or asks for (GD)"),
    flags = ProtoField.uint8("star.flags", "Flags", base.HEX),
    ece = ProtoField.bool("star.flags.ece", "ECN echo", 8, nil, 0x01),
    retx = ProtoField.bool("star.flags.retx", "Retransmission", 8, nil, 0x02),
    reply_qp = ProtoField.uint24("star.reply_qp", "Reply QP", base.DEC, nil, nil,
        "The DestQP the answer carries"),
    reply_sport = ProtoField.uint16("star.reply_sport", "Reply source port", base.DEC, nil, nil,
        "The UDP source port the answer carries"),
    payload_len = ProtoField.uint32("star.payload_len", "Payload length", base.DEC, nil, nil,
        "Payload bytes in the frame (after the StaR header, before pad and ICRC)"),
    payload = ProtoField.bytes("star.payload", "Payload"),
    pad = ProtoField.bytes("star.pad", "Pad"),
    icrc = ProtoField.uint32("star.icrc", "ICRC", base.HEX),
}
star.fields = {
    f.type, f.opcode, f.padcnt, f.qp, f.ackreq, f.trimmed, f.psn, f.addr, f.elem, f.total, f.len,
    f.flags, f.ece, f.retx, f.reply_qp, f.reply_sport,
    f.payload_len, f.payload, f.pad, f.icrc,
}

local ef_short = ProtoExpert.new("star.short", "Frame too short for the BTH and StaR header",
    expert.group.MALFORMED, expert.severity.ERROR)
local ef_length = ProtoExpert.new("star.length", "UDP length too short for the pad count and ICRC",
    expert.group.MALFORMED, expert.severity.ERROR)
star.experts = { ef_short, ef_length }

-- The dissector that had UDP port 4791 before this script: Wireshark's
-- InfiniBand/RRoCE one (nil if it is disabled or absent).
local udp_table = DissectorTable.get("udp.port")
local roce = udp_table:get_dissector(ROCE_PORT)

-- "0x..." without leading zeros, from a UInt64 (Lua 5.2 numbers hold 53 bits).
local function hex64(v)
    local hi, lo = v:higher(), v:lower()
    if hi == 0 then
        return string.format("0x%x", lo)
    end
    return string.format("0x%x%08x", hi, lo)
end

local function dissect_star(tvb, pinfo, tree, op)
    local name = names[op]
    pinfo.cols.protocol = "StaR"
    local root = tree:add(star, tvb(), "fabricsim StaR " .. name)

    local bth = root:add(tvb(0, BTH_LEN), "Base Transport Header")
    bth:add(f.type, tvb(0, 1), name):append_text(string.format(" (opcode 0x%02x: %s)", op, meaning[op]))
    bth:add(f.opcode, tvb(0, 1))
    bth:add(f.padcnt, tvb(1, 1))
    bth:add(f.qp, tvb(5, 3))
    bth:add(f.ackreq, tvb(8, 1))
    local trimmed = bit.band(tvb(8, 1):uint(), 0x50) == 0x50
    bth:add(f.trimmed, tvb(8, 1), trimmed)
    bth:add(f.psn, tvb(9, 3))
    local psn = tvb(9, 3):uint()
    local pad = bit.rshift(bit.band(tvb(1, 1):uint(), 0x30), 4)

    local s = tvb(BTH_LEN, STH_LEN)
    local sth = root:add(s, "StaR Header")
    sth:add(f.addr, tvb(12, 8))
    sth:add(f.elem, tvb(20, 4))
    sth:add(f.total, tvb(24, 4))
    sth:add(f.len, tvb(28, 2))
    local flags = sth:add(f.flags, tvb(30, 1))
    flags:add(f.ece, tvb(30, 1))
    flags:add(f.retx, tvb(30, 1))
    sth:add(f.reply_qp, tvb(31, 3))
    sth:add(f.reply_sport, tvb(34, 2))

    -- The payload length from the datagram's length (the reported length: a capture
    -- cut by a snap length still counts the whole payload).
    local after = tvb:reported_len() - BTH_LEN - STH_LEN
    local payload = after - pad - ICRC_LEN
    if payload < 0 then
        root:add_proto_expert_info(ef_length)
        payload = 0
    end
    root:add(f.payload_len, tvb(BTH_LEN + STH_LEN, 0), payload):set_generated()
    local at = BTH_LEN + STH_LEN
    local have = tvb:len()
    if payload > 0 and have > at then
        root:add(f.payload, tvb(at, math.min(payload, have - at)))
    end
    if pad > 0 and have >= at + payload + pad then
        root:add(f.pad, tvb(at + payload, pad))
    end
    if after >= ICRC_LEN and have >= at + after then
        -- The ICRC goes on the wire least significant byte first.
        root:add_le(f.icrc, tvb(at + after - ICRC_LEN, ICRC_LEN))
    end

    local info = string.format("StaR %s psn=%d elem=%d addr=%s len=%d", name, psn, tvb(20, 4):uint(),
        hex64(tvb(12, 8):uint64()), tvb(28, 2):uint())
    local fl = tvb(30, 1):uint()
    if bit.band(fl, 0x01) ~= 0 then info = info .. " ECE" end
    if bit.band(fl, 0x02) ~= 0 then info = info .. " retx" end
    if trimmed then info = info .. " trimmed" end
    pinfo.cols.info:set(info)
    return tvb:len()
end

function star.dissector(tvb, pinfo, tree)
    local op = tvb:len() >= 1 and tvb(0, 1):uint() or nil
    if op == nil or op < OP_FIRST or op > OP_LAST then
        if roce ~= nil then
            return roce:call(tvb, pinfo, tree)
        end
        return 0
    end
    if tvb:len() < BTH_LEN + STH_LEN then
        pinfo.cols.protocol = "StaR"
        pinfo.cols.info:set("StaR " .. names[op] .. " [truncated]")
        local root = tree:add(star, tvb())
        root:add_proto_expert_info(ef_short)
        return tvb:len()
    end
    return dissect_star(tvb, pinfo, tree, op)
end

udp_table:add(ROCE_PORT, star)
