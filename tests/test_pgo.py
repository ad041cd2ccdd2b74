"""The build backend's profile-guided optimisation (pgo/fabricsim_build.py): when it uses
the profile, what it sets, and that it leaves the environment as it found it."""

import gzip
import importlib.util
import json
import os
from pathlib import Path

import pytest

pytest.importorskip("maturin")

ROOT = Path(__file__).resolve().parent.parent
PGO = ROOT / "pgo"
#: The first bytes of an indexed LLVM profile (what llvm-profdata merge writes).
MAGIC = b"\xfflprofi\x81"


@pytest.fixture
def backend():
    spec = importlib.util.spec_from_file_location("fabricsim_build", PGO / "fabricsim_build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_pyproject_builds_through_the_backend_and_ships_it_in_sdists():
    text = (ROOT / "pyproject.toml").read_text()
    assert 'build-backend = "fabricsim_build"' in text and 'backend-path = ["pgo"]' in text
    assert '{ path = "pgo/*", format = "sdist" }' in text


def test_the_committed_profile_is_a_gzipped_llvm_profile_with_its_compiler():
    info = json.loads((PGO / "profile.json").read_text())
    assert info["rustc"].startswith("rustc 1.") and info["llvm_version"].split(".")[0].isdigit(), info
    with gzip.open(PGO / "fabricsim.profdata.gz", "rb") as f:
        head = f.read(8)
    assert head == MAGIC, head


def test_fabricsim_pgo_0_turns_the_profile_off(backend, monkeypatch):
    monkeypatch.setenv("FABRICSIM_PGO", "0")
    assert backend.profile_rejection() == "FABRICSIM_PGO=0"


def test_a_profile_for_another_rustc_release_is_not_used(backend, monkeypatch, tmp_path):
    # Another release names every function differently (and may not read the format).
    info = tmp_path / "profile.json"
    info.write_text(json.dumps({"rustc": "rustc 1.95.0 (59807616e 2026-04-14)"}))
    monkeypatch.setattr(backend, "INFO", info)
    monkeypatch.delenv("FABRICSIM_PGO", raising=False)
    monkeypatch.setattr(backend, "_rustc_release", lambda: "rustc 1.96.0 (0123456789 2026-05-28)")
    why = backend.profile_rejection()
    assert why is not None and "rustc 1.95.0" in why and "rustc 1.96.0" in why, why
    monkeypatch.setattr(backend, "_rustc_release", lambda: "rustc 1.95.0 (59807616e 2026-04-14)")
    assert backend.profile_rejection() is None


def test_without_a_working_rustc_the_build_goes_on_without_the_profile(backend, monkeypatch):
    monkeypatch.delenv("FABRICSIM_PGO", raising=False)
    monkeypatch.setenv("RUSTC", "/nonexistent/rustc")
    assert backend._rustc_release() is None
    assert "could not ask rustc" in backend.profile_rejection()


def test_an_accepted_profile_is_unpacked_into_rustflags_and_the_environment_restored(backend, monkeypatch):
    wanted = json.loads((PGO / "profile.json").read_text())["rustc"]
    monkeypatch.setattr(backend, "_rustc_release", lambda: wanted)
    monkeypatch.delenv("FABRICSIM_PGO", raising=False)
    monkeypatch.setenv("RUSTFLAGS", "-Cdebuginfo=0")
    monkeypatch.delenv("CARGO_TARGET_DIR", raising=False)
    with backend._optimised_env():
        flags = os.environ["RUSTFLAGS"].split()
        assert flags[0] == "-Cdebuginfo=0" and flags[1].startswith("-Cprofile-use="), flags
        profdata = Path(flags[1].split("=", 1)[1])
        assert profdata.is_absolute() and profdata.read_bytes()[:8] == MAGIC
        assert os.environ["CARGO_TARGET_DIR"] == str(ROOT / "target" / "pgo")
    assert os.environ["RUSTFLAGS"] == "-Cdebuginfo=0"
    assert "CARGO_TARGET_DIR" not in os.environ
    assert not profdata.exists(), "the unpacked profile outlived the build"


def test_a_rejected_profile_changes_nothing(backend, monkeypatch):
    monkeypatch.setenv("FABRICSIM_PGO", "0")
    monkeypatch.delenv("RUSTFLAGS", raising=False)
    monkeypatch.delenv("CARGO_TARGET_DIR", raising=False)
    with backend._optimised_env():
        assert "RUSTFLAGS" not in os.environ and "CARGO_TARGET_DIR" not in os.environ
