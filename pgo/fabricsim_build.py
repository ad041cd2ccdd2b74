"""fabricsim's PEP 517 build backend: maturin, with profile-guided optimisation.

`pip install .` builds the Rust core through this module, which hands every hook to
maturin unchanged. For a wheel (or an editable install) it first adds
`-Cprofile-use=<profile>` to `RUSTFLAGS`, with the profile `scripts/pgo` made
(`pgo/fabricsim.profdata.gz`, unpacked into a temporary directory), so that LLVM lays
out and inlines the simulator's hot code by measured branch and call counts: about
12-17 % less time per event on the benchmark. Results are the same with or without it.

The profile is used only when it applies: when cargo's `rustc` is the release that
built the profiled extension. Another release could fail to read the profile (its LLVM
may be older than the one that wrote it) and, even with the same LLVM, would name every
function differently (symbol names carry a hash that includes the compiler's version),
so no count would find its function. Otherwise, or with `FABRICSIM_PGO=0`, the build
goes on without the profile and says so. The optimised build gets its own target directory
(`target/pgo`, unless `CARGO_TARGET_DIR` is set) so that it and the plain builds of
`cargo test` and `maturin develop` do not rebuild each other's files.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional

import maturin
from maturin import (  # noqa: F401  (hooks used unchanged)
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

HERE = Path(__file__).resolve().parent
PROFILE = HERE / "fabricsim.profdata.gz"
INFO = HERE / "profile.json"


def _say(msg: str) -> None:
    print(f"fabricsim build: {msg}", file=sys.stderr)
    sys.stderr.flush()


def _rustc_release() -> Optional[str]:
    """The first line of `rustc -vV` for the rustc cargo will use (release, commit and
    date, e.g. "rustc 1.95.0 (59807616e 2026-04-14)"), or None if it cannot run."""
    rustc = os.environ.get("RUSTC", "rustc")
    try:
        out = subprocess.run([rustc, "-vV"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.splitlines()[0].strip() if out.strip() else None


def profile_rejection() -> Optional[str]:
    """Why the profile cannot be used for this build, or None if it can."""
    if os.environ.get("FABRICSIM_PGO", "1") == "0":
        return "FABRICSIM_PGO=0"
    if not PROFILE.exists() or not INFO.exists():
        return f"no profile at {PROFILE} (scripts/pgo makes one)"
    wanted = json.loads(INFO.read_text())["rustc"]
    have = _rustc_release()
    if have is None:
        return "could not ask rustc for its version"
    if have != wanted:
        return f"the profile is for {wanted} and this is {have} (scripts/pgo makes a new one)"
    return None


@contextlib.contextmanager
def _optimised_env() -> Iterator[None]:
    """Sets RUSTFLAGS (and the target directory) for a profile-guided build while the
    block runs, then restores the environment."""
    why_not = profile_rejection()
    if why_not is not None:
        _say(f"building without profile-guided optimisation: {why_not}")
        yield
        return
    saved = {k: os.environ.get(k) for k in ("RUSTFLAGS", "CARGO_TARGET_DIR")}
    tmp = tempfile.mkdtemp(prefix="fabricsim-pgo-")
    try:
        profdata = Path(tmp) / "fabricsim.profdata"
        with gzip.open(PROFILE, "rb") as src, open(profdata, "wb") as dst:
            shutil.copyfileobj(src, dst)
        flags = f"-Cprofile-use={profdata}"
        os.environ["RUSTFLAGS"] = f"{saved['RUSTFLAGS']} {flags}" if saved["RUSTFLAGS"] else flags
        if not saved["CARGO_TARGET_DIR"]:
            os.environ["CARGO_TARGET_DIR"] = str(HERE.parent / "target" / "pgo")
        _say("building with profile-guided optimisation (pgo/fabricsim.profdata.gz)")
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(tmp, ignore_errors=True)


def build_wheel(wheel_directory: str, config_settings: Optional[Mapping[str, Any]] = None,
                metadata_directory: Optional[str] = None) -> str:
    with _optimised_env():
        return maturin.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory: str, config_settings: Optional[Mapping[str, Any]] = None,
                   metadata_directory: Optional[str] = None) -> str:
    with _optimised_env():
        return maturin.build_editable(wheel_directory, config_settings, metadata_directory)
