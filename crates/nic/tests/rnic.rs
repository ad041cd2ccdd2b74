//! The modelled NIC's transmit side against PFC: a paused data class holds data frames
//! only, as on an ideal NIC.

mod util;

use fabricsim_engine::{Dur, Rate, Time};
use fabricsim_nic::rnic::NicModel;
use fabricsim_nic::EndpointPlace;
use fabricsim_transport::roce::{RoceConfig, RoceRequester, RoceResponder};
use fabricsim_transport::{AnyEndpoint, AppEvent, ConnInfo, Message};
use fabricsim_wire::{Packet, TrafficClass};
use std::cell::RefCell;
use std::rc::Rc;
use util::{info, Pair};

fn msg(len: u64) -> Message {
    Message { seq: 0, len, va: 0x1000_0000, rkey: 7 }
}

/// Connection A from host 0 (endpoint 0) to host 1 (endpoint 1) and connection B
/// the other way (requester 2 on host 1, responder 3 on host 0), every NIC modelled
/// with a context cache whose misses take 1 us to fetch.
fn two_way() -> Pair {
    let cfg = RoceConfig::default();
    let mut p = Pair::new(
        AnyEndpoint::RoceRequester(RoceRequester::new(info(0, 1), cfg, 1)),
        AnyEndpoint::RoceResponder(RoceResponder::new(info(1, 0), cfg, 2)),
        Rate::gbps(100),
        Dur::from_us(1),
    );
    let b = |local: u32, local_qpn: u32, remote_qpn: u32| ConnInfo { local_qpn, remote_qpn, ..info(local, 1 - local) };
    let (req, resp) = (RoceRequester::new(b(1, 2, 3), cfg, 3), RoceResponder::new(b(0, 3, 2), cfg, 4));
    assert_eq!(p.nic.next_endpoint(), 2);
    let place = EndpointPlace { first_port: 0, ports: 1 };
    p.nic.add_endpoint_pair(1, 0, place, AnyEndpoint::RoceRequester(req), AnyEndpoint::RoceResponder(resp));
    let model = NicModel { qp_cache: Some(16), qp_fetch: Dur::from_us(1), ..NicModel::unbounded() };
    p.nic.set_models(|_| Some(model));
    p
}

fn times(p: &Pair, ep: usize, acked: bool) -> Vec<Time> {
    let wanted =
        |e: &AppEvent| if acked { matches!(e, AppEvent::Acked { .. }) } else { matches!(e, AppEvent::Received { .. }) };
    p.events.iter().filter(|(_, side, e)| *side == ep && wanted(e)).map(|(t, _, _)| *t).collect()
}

#[test]
fn a_data_frame_held_by_a_pause_does_not_hold_the_acks_behind_it() {
    let mut p = two_way();
    // Host 0's data class is paused from 1 ns on: connection A's first frame, staged at
    // 0 while its context is fetched, is ready at 1 us and must wait for the pause.
    p.link.data_paused_from[0] = Time::ZERO + Dur::from_ns(1);
    let sent = Rc::new(RefCell::new(Vec::new()));
    let log = sent.clone();
    p.link.fate = Box::new(move |side, pkt: &mut Packet, _| {
        log.borrow_mut().push((side, pkt.net.class));
        (false, false)
    });
    p.post_on(0, msg(8192));
    p.post_on(2, msg(8192));
    p.run(Time::ZERO + Dur::from_ms(1));
    assert_eq!(times(&p, 1, false), vec![], "A's data never left host 0");
    let from_0: Vec<TrafficClass> = sent.borrow().iter().filter(|s| s.0 == 0).map(|s| s.1).collect();
    assert!(
        !from_0.is_empty() && from_0.iter().all(|&c| c == TrafficClass::Control),
        "host 0 sent B's ACKs, and only them: {from_0:?}"
    );
    // B's message is acknowledged by host 0's responder at once, not after the pause
    // (the requester's 67 ms timeout is far beyond the run): two frames and a context
    // fetch at each end, a round trip of 2 us.
    let acked = times(&p, 2, true);
    assert_eq!(acked.len(), 1, "{:?}", p.events);
    assert!(acked[0] < Time::ZERO + Dur::from_us(10), "{acked:?}");
    // The pause over, A's frames go.
    p.link.data_paused_from[0] = Time::MAX;
    let now = p.now();
    p.nic.serve(now, 0, 0, &mut p.link);
    p.run(Time::MAX);
    assert_eq!(times(&p, 1, false).len(), 1);
}
