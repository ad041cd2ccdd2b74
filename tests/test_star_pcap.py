"""``wireshark/fabricsim_star.lua``: tshark with the script names StaR's packets and
their header's fields as the run sent them, and leaves every other RoCE frame to
Wireshark's own InfiniBand dissector. Skipped, like the other capture tests, when
tshark (with Lua) is missing."""

import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

import fabricsim
from conftest import tshark

LUA = Path(__file__).resolve().parent.parent / "wireshark" / "fabricsim_star.lua"
WITH_LUA = ("-X", f"lua_script:{LUA}")


def _no_tshark_with_lua():
    """Why the tests cannot run here, or None."""
    if shutil.which("tshark") is None:
        return "tshark not installed (apt-get install tshark)"
    version = subprocess.run(["tshark", "-v"], capture_output=True, text=True).stdout
    if "with Lua" not in " ".join(version.split()):
        return "tshark built without Lua"
    return None


_why = _no_tshark_with_lua()
needs_tshark_lua = pytest.mark.skipif(_why is not None, reason=_why or "")

# Three clients WRITE to one stateless server, host 3 (hosts 0 and 1 on the other
# leaf): RDPs from each client to the server (at the default 4096-byte MTU: 3, 2 and 1
# of them; 5001 and 301 bytes end in pad), and an RA back for each. fct_at = "sender":
# the run waits for every RA to reach its client, so the capture at the server's
# cable holds them all. Each connection has QPs and a source port of its own, so the
# RAs' addresses tell whether the server took them from the RDPs' headers.
SERVER = 3
SIZES = {0: 10_000, 1: 5_001, 2: 301}
MTU = 4096
FLOWS = ", ".join(f'{{ src = {h}, dst = {SERVER}, size = "{n}B" }}' for h, n in SIZES.items())
STAR_WRITE = f"""
name = "star-pcap"
seed = 4
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 2
[transport]
kind = "star"
server = "receiver"
[workload]
kind = "flows"
flows = [{FLOWS}]
[output]
plots = false
fct_at = "sender"
"""


def addr(host):
    """The IPv6 address of a host's NIC port 0 (crates/wire encode.rs: fd00::pp:hhhh:hhhh)."""
    return f"fd00::{host:x}" if host else "fd00::"


FIELDS = ("star.type", "star.opcode", "star.qp", "star.psn", "star.addr", "star.elem", "star.total", "star.len",
          "star.flags", "star.flags.ece", "star.flags.retx", "star.reply_qp", "star.reply_sport", "star.payload_len",
          "star.trimmed", "ipv6.src", "ipv6.dst", "udp.srcport", "_ws.col.Info")
NUMERIC = {"star.opcode", "star.qp", "star.psn", "star.addr", "star.elem", "star.total", "star.len", "star.flags",
           "star.flags.ece", "star.flags.retx", "star.reply_qp", "star.reply_sport", "star.payload_len",
           "star.trimmed", "udp.srcport"}


def star_frames(pcap):
    """Every frame as a dict of FIELDS (numbers parsed; empty fields None), decoded
    with the script."""
    frames = []
    for row in tshark(pcap, *FIELDS, args=WITH_LUA):
        # The Info column is last and is the one field that may contain the separator.
        row = row[:len(FIELDS) - 1] + [",".join(row[len(FIELDS) - 1:])]
        frames.append({f: (int(v, 0) if f in NUMERIC else v) if v != "" else None for f, v in zip(FIELDS, row)})
    return frames


QPN_OFFSET = 2  # the BTH's DestQP is the endpoint number + 2 (crates/wire encode.rs)


@needs_tshark_lua
def test_star_writes_show_rdps_to_the_server_and_ras_built_from_their_headers():
    r = fabricsim.run(STAR_WRITE, pcap=f"host[{SERVER}]")
    s = r.summary
    assert s["transport"] == "star" and s["retransmitted_packets"] == 0
    assert s["bytes_delivered"] == sum(SIZES.values())
    frames = star_frames(r.pcap)
    assert len(frames) == s["run"]["pcap_frames"] > 0

    # Only the server-receives shape's packets, every frame named.
    assert {f["star.type"] for f in frames} == {"RDP", "RA"}, frames[:4]
    rdps = [f for f in frames if f["star.type"] == "RDP"]
    ras = [f for f in frames if f["star.type"] == "RA"]
    assert all(f["star.opcode"] == 0xD3 for f in rdps) and all(f["star.opcode"] == 0xD4 for f in ras)
    assert len(rdps) == s["data_packets_sent"] == sum(-(-n // MTU) for n in SIZES.values())
    assert len(ras) == s["control_packets_sent"] == len(rdps)
    assert all(f["ipv6.dst"] == addr(SERVER) for f in rdps) and all(f["ipv6.src"] == addr(SERVER) for f in ras)

    replies = set()
    for host, size in SIZES.items():
        mine = sorted((f for f in rdps if f["ipv6.src"] == addr(host)), key=lambda f: f["star.psn"])
        # Consecutive PSNs of one work request, each RDP naming the bytes it carries
        # (its len is the frame's payload length) at consecutive addresses; together
        # they carry the bytes written.
        assert [f["star.psn"] for f in mine] == list(range(mine[0]["star.psn"], mine[0]["star.psn"] + len(mine)))
        assert len({f["star.elem"] for f in mine}) == 1 and all(f["star.total"] == size for f in mine)
        assert all(f["star.len"] == f["star.payload_len"] > 0 for f in mine), mine
        assert sum(f["star.payload_len"] for f in mine) == size
        assert [f["star.len"] for f in mine] == [MTU] * (size // MTU) + ([size % MTU] if size % MTU else [])
        assert all(b["star.addr"] == a["star.addr"] + a["star.len"] for a, b in zip(mine, mine[1:]))
        assert all(f["star.flags"] == 0 and f["star.trimmed"] == 0 for f in mine)
        # One server QP; every RDP asks for the answer at the client's QP, on the
        # source port the RDPs take.
        assert len({f["star.qp"] for f in mine}) == 1 and mine[0]["star.qp"] >= QPN_OFFSET
        reply = {(f["star.reply_qp"], f["star.reply_sport"]) for f in mine}
        assert len(reply) == 1
        replies |= reply
        assert all(f["udp.srcport"] == f["star.reply_sport"] for f in mine)

        # One RA per RDP, same PSN, to the client, addressed from the RDP's header: its
        # reply QP and reply source port; the header echoed, no payload, no resend.
        theirs = {f["star.psn"]: f for f in ras if f["ipv6.dst"] == addr(host)}
        assert sorted(theirs) == [f["star.psn"] for f in mine]
        for rdp in mine:
            ra = theirs[rdp["star.psn"]]
            assert ra["star.qp"] == rdp["star.reply_qp"], (rdp, ra)
            assert ra["udp.srcport"] == rdp["star.reply_sport"], (rdp, ra)
            for k in ("star.addr", "star.elem", "star.total", "star.len", "star.reply_qp", "star.reply_sport"):
                assert ra[k] == rdp[k], (k, rdp, ra)
            assert ra["star.payload_len"] == 0 and ra["star.flags.retx"] == 0
            assert ra["_ws.col.Info"].startswith(f"StaR RA psn={rdp['star.psn']} elem={rdp['star.elem']} ")
        first = mine[0]
        assert first["_ws.col.Info"] == (f"StaR RDP psn={first['star.psn']} elem={first['star.elem']} "
                                         f"addr={first['star.addr']:#x} len={first['star.len']}")
    # Each connection answered at its own QP and port.
    assert len(replies) == len(SIZES)


@needs_tshark_lua
def test_the_script_leaves_ordinary_roce_frames_to_wiresharks_infiniband_dissector():
    roce = STAR_WRITE.replace('kind = "star"\nserver = "receiver"', 'kind = "roce"')
    assert roce != STAR_WRITE
    r = fabricsim.run(roce, pcap=f"host[{SERVER}]")
    assert r.summary["transport"] == "roce"
    fields = ("infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn", "infiniband.reth.dmalen",
              "infiniband.aeth.syndrome", "_ws.col.Protocol", "_ws.col.Info")
    plain = tshark(r.pcap, *fields)
    # The same flows over RoCE: WRITE FIRST (6), MIDDLE (7), LAST (8) for 10,000
    # bytes, FIRST and LAST for 5001, WRITE ONLY (10, with a RETH) for 301, and ACKs (17).
    ops = Counter(row[0] for row in plain)
    assert {op: ops[op] for op in ("6", "7", "8", "10")} == {"6": 2, "7": 1, "8": 2, "10": 1}, ops
    assert ops["17"] > 0 and set(ops) == {"6", "7", "8", "10", "17"}, ops
    assert tshark(r.pcap, *fields, args=WITH_LUA) == plain
    assert tshark(r.pcap, "frame.number", args=(*WITH_LUA, "-Y", "star")) == []
