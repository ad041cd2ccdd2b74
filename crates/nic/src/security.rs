//! StaR's security table on the client NIC (the paper's section 3.2).
//!
//! A stateless server NIC does whatever a packet asks: place its payload at the
//! address it names (RDP), or read the bytes it names and send them (GD). So the
//! client's NIC checks every such packet before it leaves: it may go only if the
//! address range it names lies within memory the server registered for that
//! connection. Entries are installed by the server's side when it registers a buffer
//! (here: when a message is booked on the connection, its buffer at the server); a
//! packet outside them is dropped at the client's NIC and counted.

use fabricsim_wire::{opcode, Packet};
use std::collections::HashMap;

/// Per stateless server endpoint, the address ranges registered to it, and the
/// packets refused.
#[derive(Clone, Debug, Default)]
pub struct Security {
    /// Server endpoint (the packets' destination QP) -> sorted, disjoint `[lo, hi)`.
    ranges: HashMap<u32, Vec<(u64, u64)>>,
    /// Packets refused, per sending host.
    pub refused: Vec<u64>,
}

impl Security {
    /// A table for `hosts` NICs, with no entries.
    pub fn new(hosts: u32) -> Security {
        Security { ranges: HashMap::new(), refused: vec![0; hosts as usize] }
    }

    /// The stateless server endpoint `server` registered `[lo, hi)`.
    pub fn register(&mut self, server: u32, lo: u64, hi: u64) {
        if hi <= lo {
            return;
        }
        let v = self.ranges.entry(server).or_default();
        let i = v.partition_point(|r| r.0 < lo);
        v.insert(i, (lo, hi));
        // Merge with the neighbours it touches, keeping the list disjoint.
        let mut j = i.saturating_sub(1);
        while j + 1 < v.len() {
            if v[j].1 >= v[j + 1].0 {
                v[j].1 = v[j].1.max(v[j + 1].1);
                v.remove(j + 1);
            } else if j + 1 > i {
                break;
            } else {
                j += 1;
            }
        }
    }

    /// Whether `pkt`, about to leave host `host`'s NIC, may go: anything but an RDP or
    /// GD may; those only within a range registered to their destination QP. A packet
    /// refused is counted.
    pub fn allows(&mut self, host: u32, pkt: &Packet) -> bool {
        let op = pkt.bth.opcode;
        if op != opcode::STAR_RDP && op != opcode::STAR_GD {
            return true;
        }
        let h = pkt.sth();
        let (lo, hi) = (h.addr, h.addr + h.len as u64);
        let ok = self.ranges.get(&pkt.bth.dest_qp).is_some_and(|v| {
            let i = v.partition_point(|r| r.0 <= lo);
            i > 0 && v[i - 1].1 >= hi
        });
        if !ok {
            self.refused[host as usize] += 1;
        }
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabricsim_wire::Sth;

    fn request(op: u8, qp: u32, addr: u64, len: u16) -> Packet {
        let mut p = Packet::default();
        p.bth.opcode = op;
        p.bth.dest_qp = qp;
        p.set_sth(Sth { addr, len, ..Sth::default() });
        p
    }

    #[test]
    fn only_requests_within_a_registered_range_of_their_server_pass() {
        let mut s = Security::new(2);
        s.register(7, 1000, 2000);
        s.register(7, 2000, 2500);
        s.register(7, 5000, 6000);
        assert!(s.allows(0, &request(opcode::STAR_RDP, 7, 1000, 1000)));
        assert!(s.allows(0, &request(opcode::STAR_RDP, 7, 1900, 600)), "merged with its neighbour");
        assert!(s.allows(0, &request(opcode::STAR_GD, 7, 5500, 500)));
        assert!(!s.allows(0, &request(opcode::STAR_RDP, 7, 2400, 200)), "runs past the end");
        assert!(!s.allows(1, &request(opcode::STAR_GD, 7, 900, 10)), "starts before");
        assert!(!s.allows(1, &request(opcode::STAR_RDP, 8, 1000, 10)), "another server's memory");
        // Answers and elements are not requests: they pass.
        assert!(s.allows(1, &request(opcode::STAR_RA, 8, 0, 10)));
        assert_eq!(s.refused, vec![1, 2]);
    }
}
