"""Type stubs for fabricsim's Rust core (``fabricsim._core``)."""

from typing import Any, Dict, List, Optional, Tuple, Union

__version__: str
#: Whether the core was compiled with profile-guided optimisation (``pip install .``
#: does when the toolchain can read ``pgo/fabricsim.profdata.gz``).
PGO: bool
#: The most partitions a run may have (``partitions``, ``--partitions``).
MAX_PARTITIONS: int
#: Bytes every packet carries besides its payload: Ethernet, IPv6, UDP, BTH, ICRC, FCS.
HEADER_BYTES: int
#: Preamble, start-of-frame delimiter and inter-frame gap: on the link, not in the frame.
PREAMBLE_IFG_BYTES: int
#: The RDMA extended transport header (the first packet of a RoCE message; every
#: packet of the multipath transports).
RETH_BYTES: int
#: fabricsim's extension header (every packet, ACK included, of the multipath transports).
EXT_BYTES: int

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

def layout(text: str, format: str = "toml", base: Optional[str] = None) -> Dict[str, List[Tuple[Any, ...]]]:
    """The fabric a scenario builds: ``nodes`` as (name, tier, plane) and ``ports`` as
    (name, node, peer port, rate in bit/s, kind "nic"/"up"/"down"), a port's position
    being its id."""
