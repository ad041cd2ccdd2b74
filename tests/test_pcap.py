"""``--pcap``: the frames crossing chosen cables, written as real bytes and decoded by
tshark (Wireshark's dissectors), match what the simulation did. ``scripts/test``
installs tshark from Debian's packages under CI; elsewhere these tests are skipped
with a message when it is missing."""

import json
import subprocess

import pandas as pd
import pytest

from conftest import cli, needs_tshark, tshark

ONE_FLOW = """
name = "pcap-{kind}"
seed = 4
[topology]
kind = "{topo}"
{topo_keys}
[fabric]
{fabric}
[transport]
kind = "{kind}"
{transport_keys}
[workload]
kind = "flows"
flows = [{{ src = 0, dst = {dst}, size = "{size}" }}]
[output]
plots = false
"""


def run_captured(tmp_path, spec, *args, **fmt):
    sc = tmp_path / "s.toml"
    sc.write_text(ONE_FLOW.format(**fmt))
    out = tmp_path / ("out" + "".join(args))
    p = cli("run", str(sc), "--out", str(out), "--quiet", "--pcap", spec, *args)
    assert p.returncode == 0, p.stderr
    return out, json.loads((out / "summary.json").read_text())


@needs_tshark
def test_a_roce_flow_decodes_with_its_opcodes_and_consecutive_psns(tmp_path):
    # 10 packets of 4096 bytes: WRITE_FIRST (6), 8 x MIDDLE (7), LAST (8), and their
    # ACKs (17). The run ends when the last byte is placed, with ACKs still in flight
    # towards the sender, so the receiver's cable is the one that carries them all.
    out, s = run_captured(tmp_path, "host[3]", kind="roce", topo="leaf_spine", topo_keys="leaves = 2\nspines = 2\nhosts_per_leaf = 2",
                          fabric="", transport_keys="", dst=3, size="40960B")
    rows = tshark(out / "capture.pcap", "infiniband.bth.opcode", "infiniband.bth.psn", "ipv6.src", "udp.dstport",
                  "infiniband.bth.destqp", "infiniband.mad.mgmtclass")
    data = [r for r in rows if r[3] == "4791" and r[0] in ("6", "7", "8")]
    # No frame goes to QP 0 or 1, whose payloads Wireshark would read as management
    # datagrams (the endpoints' numbers start at 0; the wire adds 2).
    assert all(int(r[4], 16) >= 2 and r[5] == "" for r in rows), rows[:3]
    acks = [r for r in rows if r[0] == "17"]
    assert [r[0] for r in data] == ["6"] + ["7"] * 8 + ["8"]
    psns = [int(r[1]) for r in data]
    assert psns == list(range(psns[0], psns[0] + 10))
    assert len(data) == s["data_packets_sent"] == 10
    assert len(acks) == s["control_packets_sent"] and acks
    # The last ACK acknowledges the last PSN.
    assert int(acks[-1][1]) == psns[-1]
    assert len(rows) == len(data) + len(acks)


@needs_tshark
def test_an_mrc_flow_shows_srv6_destinations_and_the_entropy_values_it_used(tmp_path):
    out, s = run_captured(tmp_path, "host[3]", kind="mrc", topo="multi_plane",
                          topo_keys="planes = 2\ngroups = 2\nhosts_per_group = 2\nt1_per_plane = 2",
                          fabric='pfc = false\ntrimming = true\nrouting = "srv6"', transport_keys="evs = 16", dst=3, size="400KB")
    rows = tshark(out / "capture.pcap", "infiniband.bth.opcode", "infiniband.bth.psn", "ipv6.dst", "udp.srcport", "ipv6.src")
    # Data from host 0 (fd00:: on NIC port 0, fd00::1:0:0 on port 1) arrives with the
    # uSID container left after the switches' shifts.
    data = [r for r in rows if r[4] in ("fd00::", "fd00::1:0:0") and r[0] in ("6", "7", "9")]
    assert data and len(data) == s["data_packets_sent"]
    assert all(r[2].startswith("fcbb:bb00:") for r in data), data[:3]
    # The UDP source ports are the low 14 bits of the EVs paths.parquet counted, with
    # the top two set (as Linux does: never a well-known port).
    paths = pd.read_parquet(out / "paths.parquet")
    assert {int(r[3]) for r in data} == {0xC000 | (int(ev) & 0x3FFF) for ev in paths["ev"]}
    assert all(r[3] and int(r[3]) >= 0xC000 for r in rows if r[0])
    assert len({int(r[3]) for r in data}) == 16
    # Every PSN of the message went out at least once.
    psns = {int(r[1]) for r in data}
    assert len(psns) == -(-400_000 // 4096)
    # The message ends with an RDMA WRITE with immediate (LAST_IMM, 9) on its last PSN.
    assert {int(r[1]) for r in data if r[0] == "9"} == {max(psns)}


@needs_tshark
def test_a_capture_on_two_partitions_decodes_like_a_plain_one(tmp_path):
    # The two hosts are simulated by different threads; the coordinator merges their
    # frames by time. A lone flow takes the same course on any number of partitions, so
    # the same frames come out at the same nanoseconds (simultaneous ones, such as two
    # planes' NIC ports starting frames together, possibly in another order).
    mrc = dict(kind="mrc", topo="multi_plane", topo_keys="planes = 2\ngroups = 2\nhosts_per_group = 2\nt1_per_plane = 2",
               fabric='pfc = false\ntrimming = true\nrouting = "srv6"', transport_keys="evs = 16", dst=3, size="200KB")
    fields = ("frame.time_epoch", "infiniband.bth.opcode", "infiniband.bth.psn", "ipv6.dst", "udp.srcport")
    one, s1 = run_captured(tmp_path, "host[0],host[3]", "--partitions", "1", **mrc)
    two, s2 = run_captured(tmp_path, "host[0],host[3]", "--partitions", "2", **mrc)
    assert s2["scenario"]["partitions"] == 2
    rows = tshark(two / "capture.pcap", *fields)
    plain = tshark(one / "capture.pcap", *fields)
    assert sorted(rows) == sorted(plain) and len(rows) == s2["run"]["pcap_frames"]
    # Every data packet twice (leaving host 0, reaching host 3), in time order.
    assert sum(r[1] in ("6", "7", "9") for r in rows) == 2 * s2["data_packets_sent"] > 0
    times = [float(r[0]) for r in rows]
    assert times == sorted(times)


def test_a_bad_capture_spec_is_refused_before_anything_is_written(tmp_path):
    sc = tmp_path / "s.toml"
    sc.write_text(ONE_FLOW.format(kind="roce", topo="leaf_spine", topo_keys="leaves = 2\nspines = 2\nhosts_per_leaf = 2",
                                  fabric="", transport_keys="", dst=3, size="40KB"))
    out = tmp_path / "out"
    p = cli("run", str(sc), "--out", str(out), "--pcap", "spine[9]")
    assert p.returncode == 2, p.stderr
    assert "pcap" in p.stderr and "spine[9]" in p.stderr and "Traceback" not in p.stderr
    assert not out.exists()


@needs_tshark
@pytest.mark.parametrize("kind", ["roce", "mrc"])
def test_the_default_capture_decodes_without_malformed_frames(tmp_path, kind):
    # A payload cut to a snap length made tshark mark every RoCE data frame
    # "[Malformed Packet]" ("Invalid Packet Length from LRH!"): the default keeps whole
    # frames, so every frame of the default capture decodes.
    topo = ("multi_plane", "planes = 2\ngroups = 2\nhosts_per_group = 2\nt1_per_plane = 2") if kind == "mrc" else \
        ("leaf_spine", "leaves = 2\nspines = 2\nhosts_per_leaf = 2")
    out, s = run_captured(tmp_path, "host[3]", kind=kind, topo=topo[0], topo_keys=topo[1],
                          fabric="pfc = false\ntrimming = true\nrouting = \"srv6\"" if kind == "mrc" else "",
                          transport_keys="", dst=3, size="100000B")
    pcap = out / "capture.pcap"
    malformed = subprocess.run(["tshark", "-r", str(pcap), "--disable-protocol", "rpcordma", "-Y", "_ws.malformed"],
                               capture_output=True, text=True, check=True).stdout
    frames = tshark(pcap, "frame.len", "frame.cap_len")
    assert len(frames) > 20
    assert malformed.strip() == "", malformed[:500]
    assert all(r[0] == r[1] for r in frames), "whole frames"


@needs_tshark
def test_maestro_chunks_are_ordinary_roce_writes_on_k_source_ports(tmp_path):
    # 200 KB in 50 KB chunks over 4 QPs: each chunk an ordinary RoCEv2 WRITE (FIRST
    # with a RETH at its offset of the message's buffer, 11 MIDDLE, LAST; no
    # fabricsim extension header), each on its own QP's UDP source port, and the
    # ports those of paths.parquet; each QP's 2-byte probe a WRITE_ONLY.
    out, s = run_captured(tmp_path, "host[0]", kind="maestro", topo="leaf_spine",
                          topo_keys="leaves = 2\nspines = 4\nhosts_per_leaf = 1", fabric="",
                          transport_keys='paths = 4\nchunk = "50000B"', dst=1, size="200000B")
    rows = tshark(out / "capture.pcap", "infiniband.bth.opcode", "udp.srcport", "udp.dstport",
                  "infiniband.reth.dmalen", "infiniband.reth.va", "infiniband.bth.destqp")
    data = [r for r in rows if r[2] == "4791" and r[0] in ("6", "7", "8", "10")]
    ports = pd.read_parquet(out / "paths.parquet")
    assert sorted(ports["ev"]) == sorted({int(r[1]) for r in data}), "one source port per QP, as paths.parquet says"
    assert len(ports) == 4 and ports["ev"].nunique() == 4
    firsts = sorted((int(r[4], 16), int(r[3]), r[1]) for r in data if r[0] == "6")
    base = firsts[0][0]
    assert [(va - base, n) for va, n, _ in firsts] == [(o, 50000) for o in range(0, 200000, 50000)]
    assert len({p for _, _, p in firsts}) == 4, "the four chunks on four QPs"
    for port in ports["ev"]:
        ops = [r[0] for r in data if int(r[1]) == port]
        # Its probe, then its chunk: 50000 bytes are 13 packets of 4096 or less.
        assert ops == ["10", "6"] + ["7"] * 11 + ["8"], (port, ops)
        assert len({r[5] for r in data if int(r[1]) == port}) == 1, "one destination QP per source port"
    probes = [r for r in data if r[0] == "10"]
    assert [int(r[3]) for r in probes] == [2] * 4
    assert s["data_packets_sent"] == len(data) == 4 * 14


@needs_tshark
def test_a_maestro_send_is_write_chunks_then_a_send_only_with_immediate(tmp_path):
    # verb = "send": the same four 50 KB WRITE chunks at their offsets, then, after
    # every chunk is acknowledged, one SEND Only with Immediate (opcode 5): no RETH,
    # no payload, a 4-byte ImmDt (the message's id, 0), on one of the QPs' ports.
    out, s = run_captured(tmp_path, "host[0]", kind="maestro", topo="leaf_spine",
                          topo_keys="leaves = 2\nspines = 4\nhosts_per_leaf = 1", fabric="",
                          transport_keys='paths = 4\nchunk = "50000B"\nverb = "send"', dst=1, size="200000B")
    rows = tshark(out / "capture.pcap", "frame.time_epoch", "infiniband.bth.opcode", "udp.srcport", "udp.dstport",
                  "infiniband.reth.dmalen", "frame.len", "infiniband.immdt")
    data = [r for r in rows if r[3] == "4791" and r[1] in ("5", "6", "7", "8", "10")]
    sends = [r for r in data if r[1] == "5"]
    assert len(sends) == 1, sends
    send = sends[0]
    # (Wireshark lists the ImmDt field twice, hence the last columns.)
    assert send[4] == "" and set(send[6:]) == {"00000000"}, send
    # Ethernet 14 + IPv6 40 + UDP 8 + BTH 12 + ImmDt 4 + ICRC 4: no RETH, no payload.
    assert int(send[5]) == 82, send
    ports = pd.read_parquet(out / "paths.parquet")
    assert int(send[2]) in set(ports["ev"]), "on one of the QPs"
    writes = [r for r in data if r[1] in ("6", "7", "8")]
    assert sorted(int(r[4]) for r in writes if r[1] == "6") == [50000] * 4
    assert float(send[0]) >= max(float(r[0]) for r in writes), "after every chunk"
    assert s["data_packets_sent"] == len(data) == 4 * 14 + 1
