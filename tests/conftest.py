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


def cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    """Runs the ``fabricsim`` command of the installed package."""
    return subprocess.run([sys.executable, "-m", "fabricsim", *args], capture_output=True, text=True, cwd=cwd)
