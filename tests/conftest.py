import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

SMALL = """
name = "small"
seed = 3
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 4
[workload]
kind = "permutation"
size = "200KB"
[output]
sample_interval = "5us"
"""


@pytest.fixture
def small_toml(tmp_path: Path) -> Path:
    p = tmp_path / "small.toml"
    p.write_text(SMALL)
    return p


def mrc_incast(planes: int, **fabric) -> dict:
    """Six senders to host 0 over ``planes`` planes of 100G (2 groups of 4 hosts, 2 T1s
    per plane, 1 MB switch buffers), MRC on a lossy fabric with trimming plus
    ``fabric``, 1 MB per sender."""
    return {"topology": {"kind": "multi_plane", "planes": planes, "groups": 2, "hosts_per_group": 4,
                         "t1_per_plane": 2, "switch_buffer": "1MB"},
            "fabric": {"pfc": False, "trimming": True, **fabric},
            "transport": {"kind": "mrc"},
            "workload": {"kind": "incast", "senders": 6, "receiver": 0, "size": "1MB"},
            "output": {"plots": False}}


def cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    """Runs the ``fabricsim`` command of the installed package."""
    return subprocess.run([sys.executable, "-m", "fabricsim", *args], capture_output=True, text=True, cwd=cwd)


def popen_interruptible(args, **kwargs) -> subprocess.Popen:
    """``subprocess.Popen`` for a child the test will Ctrl-C: SIGINT set back to its
    default in the child. A test run started in the background of a shell without job
    control (as some CI runners start it) inherits SIGINT ignored, and Python keeps an
    ignored SIGINT ignored, so the child would never see the signal the test sends."""
    return subprocess.Popen(args, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **kwargs)


needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed (apt-get install tshark)")


def tshark(pcap, *fields, args=()):
    """Rows of the requested fields for every frame (RPC-over-RDMA's heuristic would
    claim some payloads, so it is off); ``args`` are more tshark options (a Lua
    script, a display filter)."""
    cmd = ["tshark", "-r", str(pcap), "--disable-protocol", "rpcordma", *args, "-T", "fields", "-E", "separator=,"]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return [line.split(",") for line in out.stdout.splitlines()]
