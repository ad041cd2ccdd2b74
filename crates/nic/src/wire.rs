//! The seam between the NIC and whatever carries its frames.
//!
//! The simulator's fabric implements [`Wire`], and so do the tests' two-host pair
//! harness and (later) a socket datapath: the NIC layer drives endpoints the same way
//! over each. Time belongs to the wire's owner too: the NIC asks it to come back at a
//! time ([`Wire::schedule`]) instead of holding an event queue of its own.

use fabricsim_engine::Time;
use fabricsim_wire::{Packet, TrafficClass};

/// A NIC's own deadline: the event the wire's owner hands back at its time through
/// [`crate::Nic::on_event`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NicEvent {
    /// Endpoint `n`'s timer (the deadline it last asked for).
    Timer(u32),
    /// Endpoint `n` may send again (its pacing wait is over).
    Wake(u32),
    /// Host `n`'s NIC has processed the packet at the head of its receive queue
    /// (modelled NICs, [`crate::rnic`]).
    Rx(u32),
    /// Host `host`'s NIC has prepared the packet staged on port `port`: it goes on the
    /// wire (modelled NICs).
    Tx {
        /// The host.
        host: u32,
        /// Its NIC port.
        port: u8,
    },
    /// Requester `n`'s posting worker (Maestro's worker thread of that QP) has done
    /// the CPU work of the work request at the head of its queue: the NIC takes it.
    Post(u32),
}

/// What a NIC needs from the network and the clock.
pub trait Wire {
    /// Whether NIC port `port` of `host` can start a frame of `class` now (idle, and
    /// that class not paused by PFC).
    fn can_send(&self, host: u32, port: u8, class: TrafficClass, now: Time) -> bool;

    /// Puts `pkt` on NIC port `port` of `host` (which [`can_send`](Self::can_send) said
    /// is free). The wire reports the port free again through
    /// [`crate::Nic::serve`].
    fn send(&mut self, now: Time, host: u32, port: u8, pkt: Packet);

    /// Hands `ev` back through [`crate::Nic::on_event`] at `at` (never before now).
    fn schedule(&mut self, at: Time, ev: NicEvent);
}
