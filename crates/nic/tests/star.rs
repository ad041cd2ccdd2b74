//! StaR over the two-host harness: both shapes of a connection, loss, ECN, and the
//! client NIC's security table refusing a forged request.

mod util;

use fabricsim_engine::{Dur, Rate, Time};
use fabricsim_transport::star::{Role, StarClient, StarConfig, StarServer};
use fabricsim_transport::{AnyEndpoint, AppEvent, Endpoint, Message};
use fabricsim_wire::{opcode, Packet};
use std::cell::RefCell;
use std::rc::Rc;
use util::{info, Pair};

const BASE: u64 = 0x7f00_0000_0000;

fn cfg() -> StarConfig {
    StarConfig { init_cwnd: 64 * 1024, dctcp_g: 1.0 / 16.0, rto: Dur::from_us(100), retry_limit: 7 }
}

/// A client on host 0 writing to a stateless server on host 1.
fn writer() -> Pair {
    let c = StarClient::new(info(0, 1), cfg(), Role::ServerReceives, 0xC001);
    let s = StarServer::new(info(1, 0), cfg(), Role::ServerReceives, 0xC002);
    Pair::new(AnyEndpoint::StarClient(c), AnyEndpoint::StarServer(s), Rate::gbps(100), Dur::from_us(2))
}

/// A stateless server on host 0 writing to its client on host 1.
fn reader() -> Pair {
    let s = StarServer::new(info(0, 1), cfg(), Role::ServerSends, 0xC003);
    let c = StarClient::new(info(1, 0), cfg(), Role::ServerSends, 0xC004);
    Pair::new(AnyEndpoint::StarServer(s), AnyEndpoint::StarClient(c), Rate::gbps(100), Dur::from_us(2))
}

fn msg(seq: u32, len: u64, va: u64) -> Message {
    Message { seq, len, va, rkey: seq }
}

/// Every frame either side puts on the wire: `(side, packet)`.
fn record(p: &mut Pair) -> Rc<RefCell<Vec<(usize, Packet)>>> {
    let seen = Rc::new(RefCell::new(Vec::new()));
    let s = seen.clone();
    p.link.fate = Box::new(move |side, pkt: &mut Packet, _| {
        s.borrow_mut().push((side, *pkt));
        (false, false)
    });
    seen
}

#[test]
fn a_write_to_the_stateless_server_is_rdps_answered_by_ras_built_from_their_headers() {
    let mut p = writer();
    let seen = record(&mut p);
    let sizes = [1 << 20, 8, 10_000];
    let mut va = BASE;
    for (i, &len) in sizes.iter().enumerate() {
        p.nic.register(1, va, va + len);
        p.post(msg(i as u32, len, va));
        va += 1 << 32;
    }
    p.run(Time::ZERO + Dur::from_ms(10));
    assert_eq!(p.received().iter().map(|r| r.0).collect::<Vec<_>>().len(), 3);
    assert_eq!(p.acked().iter().map(|a| a.1).sum::<u64>(), 0, "no loss, no resend");
    let total: u64 = sizes.iter().sum();
    assert_eq!(p.ep(1).stats().bytes_placed, total);
    let seen = seen.borrow();
    // The client sends RDPs only, the server RAs only, one per RDP.
    let rdps: Vec<&Packet> = seen.iter().filter(|s| s.0 == 0).map(|s| &s.1).collect();
    let ras: Vec<&Packet> = seen.iter().filter(|s| s.0 == 1).map(|s| &s.1).collect();
    assert!(rdps.iter().all(|r| r.bth.opcode == opcode::STAR_RDP));
    assert!(ras.iter().all(|r| r.bth.opcode == opcode::STAR_RA));
    assert_eq!(rdps.len(), ras.len());
    assert_eq!(rdps.iter().map(|r| r.payload as u64).sum::<u64>(), total);
    for r in &rdps {
        let h = r.sth();
        assert_eq!(h.len as u32, r.payload, "the RDP names the bytes it carries");
        let ra = ras.iter().find(|a| a.bth.psn == r.bth.psn).expect("each RDP answered");
        // The answer goes where the RDP's header says, not where a context would.
        assert_eq!((ra.bth.dest_qp, ra.net.sport), (h.reply_qp, h.reply_sport));
        assert_eq!(ra.sth().elem, h.elem);
    }
    // 1 MB at 100 Gb/s in frames of 4096 + 82 + 24 bytes (+20 on the link): about 86 us,
    // behind the window's first round trip; the run takes well under twice that.
    let done = p.acked_times().into_iter().max().unwrap();
    let wire = Rate::gbps(100).tx_time((1u64 << 20) / 4096 * (4096 + 126));
    assert!(done.since(Time::ZERO) > wire && done.since(Time::ZERO) < wire.mul(2), "{done:?}");
}

#[test]
fn a_write_by_the_stateless_server_is_a_wqep_then_gds_answered_by_sdps_and_a_cqep() {
    let mut p = reader();
    p.nic.register(0, BASE, BASE + 300_000);
    let seen = record(&mut p);
    p.post(msg(0, 300_000, BASE));
    p.run(Time::ZERO + Dur::from_ms(10));
    assert_eq!(p.received().len(), 1);
    assert_eq!(p.acked(), vec![(0, 0)]);
    assert_eq!(p.ep(1).stats().bytes_placed, 300_000);
    let seen = seen.borrow();
    let ops = |side: usize| -> Vec<u8> { seen.iter().filter(|s| s.0 == side).map(|s| s.1.bth.opcode).collect() };
    let (server, client) = (ops(0), ops(1));
    assert_eq!(server[0], opcode::STAR_WQEP, "the driver posts the work request first");
    assert_eq!(client[0], opcode::STAR_EA);
    let gds = client.iter().filter(|&&o| o == opcode::STAR_GD).count();
    let sdps = server.iter().filter(|&&o| o == opcode::STAR_SDP).count();
    assert_eq!((gds, sdps), (300_000usize.div_ceil(4096), gds), "one SDP per GD");
    assert_eq!(*client.last().unwrap(), opcode::STAR_CQEP, "the client completes the server's WRITE");
    assert_eq!(*server.last().unwrap(), opcode::STAR_EA);
    // Receipt comes 1.5 round trips of 4 us plus the transfer after the post; the
    // completion half a round trip after that.
    let (recv, ack) = (p.received()[0].1, p.acked_times()[0]);
    assert!(recv.since(Time::ZERO) >= Dur::from_us(6) + Rate::gbps(100).tx_time(300_000));
    let gap = ack.since(recv);
    assert!(gap >= Dur::from_us(2) && gap < Dur::from_us(3), "{gap:?}");
}

#[test]
fn lost_rdps_gds_wqeps_and_cqeps_are_recovered_and_every_byte_is_placed_once() {
    for seed in 1..4 {
        let mut w = writer().lossy(0.2, seed);
        let mut r = reader().lossy(0.05, seed);
        for i in 0..20u32 {
            let (len, va) = (1000 + 7919 * i as u64, BASE + ((i as u64) << 32));
            w.nic.register(1, va, va + len);
            r.nic.register(0, va, va + len);
            w.post(msg(i, len, va));
            r.post(msg(i, len, va));
        }
        let total: u64 = (0..20u64).map(|i| 1000 + 7919 * i).sum();
        for (name, p, receiver) in [("writer", &mut w, 1usize), ("reader", &mut r, 1)] {
            p.run(Time::ZERO + Dur::from_ms(100));
            assert_eq!(p.received().len(), 20, "{name} seed {seed}");
            assert_eq!(p.acked().len(), 20, "{name} seed {seed}");
            assert_eq!(p.ep(receiver).stats().bytes_placed, total, "{name} seed {seed}: each byte once");
            assert!(p.link.lost[0] + p.link.lost[1] > 0);
        }
        assert!(w.ep(0).stats().retransmitted > 0 && r.ep(1).stats().retransmitted > 0);
    }
}

#[test]
fn ecn_marks_shrink_the_clients_window_in_both_shapes() {
    for mut p in [writer(), reader()] {
        p.link.fate = Box::new(|_, pkt: &mut Packet, _| (false, pkt.is_data()));
        let server = if matches!(p.ep(0), AnyEndpoint::StarServer(_)) { 0 } else { 1 };
        p.nic.register(server as u32, BASE, BASE + (1 << 20));
        // The requester (endpoint 0) is posted the WRITE in either shape.
        p.post(msg(0, 1 << 20, BASE));
        p.run(Time::ZERO + Dur::from_ms(10));
        let client = 1 - server;
        let AnyEndpoint::StarClient(c) = p.ep(client) else { panic!("the client") };
        assert!(c.cwnd() < 16 * 1024, "every answer marked: the window falls ({})", c.cwnd());
        assert!(c.stats().ecn_marked > 0);
        assert_eq!(p.received().len(), 1);
    }
}

#[test]
fn a_forged_request_outside_the_registered_memory_is_refused_at_the_clients_nic() {
    let mut p = writer();
    // The server registered one 8 KB buffer; the client's application forges a WRITE
    // to another address of the server's memory, then posts a legal one.
    p.nic.register(1, BASE, BASE + 8192);
    let seen = record(&mut p);
    p.post(msg(0, 4096, BASE + (5 << 32)));
    p.post(msg(1, 8192, BASE));
    p.run(Time::ZERO + Dur::from_ms(10));
    // Nothing of the forged one left host 0; the legal one was placed and answered.
    assert!(seen.borrow().iter().filter(|s| s.0 == 0).all(|s| s.1.sth().elem == 1));
    assert_eq!(p.received(), vec![(1, p.received()[0].1)]);
    assert_eq!(p.ep(1).stats().bytes_placed, 8192);
    // Each try counted; after its retries the connection gives up.
    assert_eq!(p.nic.security_refused()[0], 1 + cfg().retry_limit as u64);
    assert!(p.events.iter().any(|e| e.1 == 0 && e.2 == AppEvent::Failed));
}

/// Heavy loss (20 % of packets each way, a third of round trips) on a 2 MB WRITE: each
/// piece's resends are counted on their own (InfiniBand's per-request retry count),
/// so a window's pieces timing out one after another do not add up to a failure, and
/// pieces that three later answers show lost go again without waiting for the timeout.
#[test]
fn a_long_write_survives_heavy_loss_and_resends_most_losses_before_the_timeout() {
    for seed in 1..4 {
        let mut w = writer().lossy(0.2, seed);
        w.nic.register(1, BASE, BASE + 2_000_000);
        w.post(msg(0, 2_000_000, BASE));
        w.run(Time::ZERO + Dur::from_ms(100));
        assert_eq!(w.received().len(), 1, "seed {seed}");
        assert_eq!(w.ep(1).stats().bytes_placed, 2_000_000);
        let s = *w.ep(0).stats();
        assert!(!w.events.iter().any(|e| e.2 == AppEvent::Failed));
        assert!(s.retransmitted > s.timeouts, "seed {seed}: {s:?}");
    }
    // Little loss: nearly every loss goes without a timeout.
    let mut w = writer().lossy(0.01, 7);
    w.nic.register(1, BASE, BASE + 8_000_000);
    w.post(msg(0, 8_000_000, BASE));
    w.run(Time::ZERO + Dur::from_ms(100));
    let s = *w.ep(0).stats();
    assert_eq!(w.received().len(), 1);
    assert!(s.retransmitted >= 10 && s.timeouts * 4 < s.retransmitted, "{s:?}");
}
