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


@pytest.mark.parametrize("value", ["0", "false", "off"])
def test_fabricsim_pgo_0_turns_the_profile_off(backend, monkeypatch, value):
    monkeypatch.setenv("FABRICSIM_PGO", value)
    assert backend.profile_rejection() == f"FABRICSIM_PGO={value}"


def test_a_profile_for_another_rustc_release_is_not_used(backend, monkeypatch, tmp_path):
    # Another release names every function differently (and may not read the format).
    info = tmp_path / "profile.json"
    info.write_text(json.dumps({"rustc": "rustc 1.95.0 (59807616e 2026-04-14)"}))
    monkeypatch.setattr(backend, "INFO", info)
    monkeypatch.delenv("FABRICSIM_PGO", raising=False)
    monkeypatch.setattr(backend, "rustc_release", lambda: "rustc 1.96.0 (0123456789 2026-05-28)")
    why = backend.profile_rejection()
    assert why is not None and "rustc 1.95.0" in why and "rustc 1.96.0" in why, why
    monkeypatch.setattr(backend, "rustc_release", lambda: "rustc 1.95.0 (59807616e 2026-04-14)")
    assert backend.profile_rejection() is None


def test_an_unreadable_record_or_profile_means_a_plain_build_not_a_failed_one(backend, monkeypatch, tmp_path):
    monkeypatch.delenv("FABRICSIM_PGO", raising=False)
    info = tmp_path / "profile.json"
    info.write_text("{}")
    monkeypatch.setattr(backend, "INFO", info)
    assert "cannot read" in backend.profile_rejection()
    info.write_text(json.dumps({"rustc": "rustc 9.9.9"}))
    monkeypatch.setattr(backend, "rustc_release", lambda: "rustc 9.9.9")
    bad = tmp_path / "fabricsim.profdata.gz"
    bad.write_bytes(b"not gzip")
    monkeypatch.setattr(backend, "PROFILE", bad)
    monkeypatch.setenv("CARGO_TARGET_DIR", str(tmp_path / "target"))
    with backend.optimised_env() as used:
        assert not used and "CARGO_ENCODED_RUSTFLAGS" not in os.environ


def test_without_a_working_rustc_the_build_goes_on_without_the_profile(backend, monkeypatch):
    monkeypatch.delenv("FABRICSIM_PGO", raising=False)
    monkeypatch.setenv("RUSTC", "/nonexistent/rustc")
    assert backend.rustc_release() is None
    assert "could not ask rustc" in backend.profile_rejection()


@pytest.fixture
def accepted(backend, monkeypatch, tmp_path):
    """The backend with the committed profile accepted, building into a scratch target."""
    monkeypatch.setattr(backend, "rustc_release", lambda: json.loads((PGO / "profile.json").read_text())["rustc"])
    monkeypatch.delenv("FABRICSIM_PGO", raising=False)
    monkeypatch.delenv("CARGO_ENCODED_RUSTFLAGS", raising=False)
    monkeypatch.setenv("CARGO_TARGET_DIR", str(tmp_path / "target dir"))
    return backend


def test_the_profile_goes_after_the_users_flags_one_field_each_and_everything_is_restored(accepted, monkeypatch):
    monkeypatch.setenv("RUSTFLAGS", "-Cdebuginfo=0  -Ctarget-cpu=x86-64")
    before = dict(os.environ)
    with accepted.optimised_env() as used:
        assert used
        flags = os.environ["CARGO_ENCODED_RUSTFLAGS"].split("\x1f")
        assert flags[:2] == ["-Cdebuginfo=0", "-Ctarget-cpu=x86-64"] and len(flags) == 3, flags
        profdata = Path(flags[2].split("=", 1)[1])
        # A path with a space in it is still one flag, and the file is a profile.
        assert " " in str(profdata) and profdata.read_bytes()[:8] == MAGIC
    assert dict(os.environ) == before
    assert profdata.exists(), "the unpacked profile is kept for the next build"


def test_encoded_user_flags_are_kept_as_they_are(accepted, monkeypatch):
    monkeypatch.setenv("CARGO_ENCODED_RUSTFLAGS", "-Clink-arg=-Wl,--as-needed\x1f-Cdebuginfo=0")
    monkeypatch.setenv("RUSTFLAGS", "-Cignored")
    with accepted.optimised_env():
        flags = os.environ["CARGO_ENCODED_RUSTFLAGS"].split("\x1f")
    assert flags[:2] == ["-Clink-arg=-Wl,--as-needed", "-Cdebuginfo=0"] and flags[2].startswith("-Cprofile-use=")


def test_two_builds_get_the_same_flags_so_cargo_reuses_its_work(accepted):
    with accepted.optimised_env():
        first = os.environ["CARGO_ENCODED_RUSTFLAGS"]
    with accepted.optimised_env():
        assert os.environ["CARGO_ENCODED_RUSTFLAGS"] == first


def test_the_wheel_hook_restores_the_environment_when_maturin_fails(accepted, monkeypatch):
    seen = {}

    def failing(wheel_directory, config_settings=None, metadata_directory=None):
        seen.update(os.environ)
        raise SystemExit(1)

    monkeypatch.setattr(accepted.maturin, "build_wheel", failing)
    monkeypatch.delenv("RUSTFLAGS", raising=False)
    before = dict(os.environ)
    with pytest.raises(SystemExit):
        accepted.build_wheel("/nonexistent")
    assert "-Cprofile-use=" in seen["CARGO_ENCODED_RUSTFLAGS"]
    assert dict(os.environ) == before


def test_editable_installs_build_without_the_profile(backend):
    import maturin

    assert backend.build_editable is maturin.build_editable


def test_a_rejected_profile_changes_nothing(backend, monkeypatch):
    monkeypatch.setenv("FABRICSIM_PGO", "0")
    before = dict(os.environ)
    with backend.optimised_env() as used:
        assert not used and dict(os.environ) == before


def test_a_relative_target_directory_still_gives_an_absolute_profile_path(accepted, monkeypatch, tmp_path):
    # rustc compiles each dependency in its own directory: a relative path would not hold.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CARGO_TARGET_DIR", "rel target")
    with accepted.optimised_env():
        profdata = Path(os.environ["CARGO_ENCODED_RUSTFLAGS"].split("\x1f")[-1].split("=", 1)[1])
        assert profdata.is_absolute() and profdata.parent == tmp_path / "rel target", profdata
        assert os.environ["CARGO_TARGET_DIR"] == str(tmp_path / "rel target")


def test_a_corrupt_profile_body_means_a_plain_build(accepted, monkeypatch, tmp_path):
    good = gzip.compress(b"x" * 1000)
    bad = tmp_path / "p.gz"
    bad.write_bytes(good[:12] + bytes(len(good) - 20) + good[-8:])  # a valid header, a broken body
    monkeypatch.setattr(accepted, "PROFILE", bad)
    with accepted.optimised_env() as used:
        assert not used
