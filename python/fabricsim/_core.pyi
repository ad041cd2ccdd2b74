"""Type stubs for fabricsim's Rust core (``fabricsim._core``)."""

from typing import Any, Dict, List, Optional, Tuple, Union

__version__: str
#: Whether the core was compiled with profile-guided optimisation (``pip install .``
#: does when the toolchain can read ``pgo/fabricsim.profdata.gz``).
PGO: bool

class ScenarioError(ValueError):
    """A scenario that cannot be run; the message names the key and the allowed values."""

    #: The key at fault (``"topology.leaves"``); empty for the whole document. Set on
    #: the errors the core raises.
    key: str
    #: What is wrong with it and what is allowed (the message without the key).
    reason: str

Column = Union[Tuple[str, bytes], List[str]]

#: The result tables a run produces, by name, in the order they are written.
TABLES: List[str]

def run(text: str, format: str = "toml", seed: Optional[int] = None, progress: bool = False,
        pcap: Optional[str] = None, pcap_path: Optional[str] = None, pcap_snap: int = 65535,
        partitions: Optional[int] = None, base: Optional[str] = None) -> Dict[str, Any]:
    """Run a scenario (trace files relative to ``base``); returns the result tables as typed column buffers."""

def validate(text: str, format: str = "toml", base: Optional[str] = None) -> Dict[str, Any]:
    """Check a scenario without running it."""

def catalog() -> str:
    """The scenario schema as JSON."""
