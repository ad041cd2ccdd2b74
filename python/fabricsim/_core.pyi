"""Type stubs for fabricsim's Rust core (``fabricsim._core``)."""

from typing import Any, Dict, List, Optional, Tuple, Union

__version__: str
#: Whether the core was compiled with profile-guided optimisation (``pip install .``
#: does when the toolchain can read ``pgo/fabricsim.profdata.gz``).
PGO: bool

class ScenarioError(ValueError):
    """A scenario that cannot be run; the message names the key and the allowed values."""

Column = Union[Tuple[str, bytes], List[str]]

def run(text: str, format: str = "toml", seed: Optional[int] = None, progress: bool = False,
        pcap: Optional[str] = None, pcap_path: Optional[str] = None, pcap_snap: int = 128,
        partitions: Optional[int] = None) -> Dict[str, Any]:
    """Run a scenario; returns the result tables as typed column buffers."""

def validate(text: str, format: str = "toml") -> Dict[str, Any]:
    """Check a scenario without running it."""

def catalog() -> str:
    """The scenario schema as JSON."""

def layout(text: str, format: str = "toml") -> Dict[str, List[Tuple[Any, ...]]]:
    """The fabric a scenario builds: ``nodes`` as (name, tier, plane) and ``ports`` as
    (name, node, peer port, rate in bit/s, kind "nic"/"up"/"down"), a port's position
    being its id."""
