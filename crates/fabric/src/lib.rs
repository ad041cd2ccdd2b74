//! The fabric layer: everything between two NIC ports, and nothing of any transport.
//!
//! A [`Fabric`] is a set of nodes (hosts and switches) joined by full-duplex cables.
//! Each direction of a cable is owned by the egress [`Port`] that transmits on it:
//! the port serializes frames at the link rate, then the frames propagate for the
//! link delay in the port's own FIFO (one pending event per link, not per packet).
//!
//! Modules, bottom-up:
//! * [`pool`]: the packet arena; packets move between queues by index.
//! * [`config`]: switch behaviour knobs (buffer, ECN/RED, PFC, trimming, routing).
//! * [`port`]: an egress port with strict-priority class queues, counters and the
//!   link it drives.
//! * [`routing`]: next-hop tables, the ECMP hash and SRv6 uSID forwarding.
//! * [`topology`]: builders for leaf-spine, k-ary fat-trees and multi-plane Clos.
//! * [`fabric`]: the event handlers (transmit done, arrival, PFC frame) and the
//!   interface hosts use to send and receive.
//! * [`partition`]: splitting the fabric for a run on several threads.
//! * [`htsim_topo`]: htsim's fat-tree `.topo` files as the topology they describe.
//!
//! The fabric never calls into a transport. It reports two things upward through
//! [`FabricOutput`]: a packet arrived at a host, or a host's NIC port can take
//! another packet. Everything a protocol decides (which entropy value, when to send)
//! happens above, in sans-IO state machines.

pub mod config;
pub mod fabric;
pub mod htsim_topo;
pub mod partition;
pub mod pool;
pub mod port;
pub mod routing;
pub mod topology;

pub use config::{EcnConfig, FabricConfig, PfcConfig, Routing, TrimConfig};
pub use fabric::{Fabric, FabricEvent, FabricOutput, Totals};
pub use pool::Pool;
pub use port::{Port, PortId, PortKind, PortStats};
pub use topology::{LinkParams, Node, NodeId, NodeKind, TopologyError, TopologySpec};
