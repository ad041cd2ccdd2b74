//! RoCEv2 RC behaviour on a point-to-point wire.

mod util;

use fabricsim_engine::{Dur, Rate, Time};
use fabricsim_transport::roce::{DcqcnConfig, RoceConfig, RoceRequester, RoceResponder};
use fabricsim_transport::{AnyEndpoint, AppEvent, Endpoint, Message};
use fabricsim_wire::{opcode, Packet};
use proptest::prelude::*;
use util::{info, Pair};

const MTU: u32 = 4096;

fn pair(cfg: RoceConfig) -> Pair {
    let req = AnyEndpoint::RoceRequester(RoceRequester::new(info(0, 1), cfg, 1000));
    let resp = AnyEndpoint::RoceResponder(RoceResponder::new(info(1, 0), cfg, 1001));
    Pair::new(req, resp, Rate::gbps(100), Dur::from_us(1))
}

fn msg(seq: u32, len: u64) -> Message {
    Message { seq, len, va: 0x1000_0000, rkey: 7 }
}

/// Serialization of a `len`-byte message as WRITE packets (RETH on the first).
fn wire_bytes(len: u64) -> u64 {
    let n = len.div_ceil(MTU as u64);
    len + n * 102 + 16
}

#[test]
fn a_lone_message_arrives_after_serialization_plus_delay() {
    let mut p = pair(RoceConfig::default());
    p.post(msg(0, 1_000_000));
    p.run(Time::MAX);
    let expected = Rate::gbps(100).tx_time(wire_bytes(1_000_000)) + Dur::from_us(1);
    assert_eq!(p.received(), vec![(0, Time::ZERO + expected)]);
    assert_eq!(p.acked(), vec![(0, 0)]);
    assert_eq!(p.ep(1).stats().bytes_placed, 1_000_000);
}

#[test]
fn messages_on_one_qp_complete_in_order() {
    let mut p = pair(RoceConfig::default());
    for (i, len) in [5000u64, 1, 8192, 70_000].iter().enumerate() {
        p.post(msg(i as u32, *len));
    }
    p.run(Time::MAX);
    let seqs: Vec<u32> = p.received().iter().map(|r| r.0).collect();
    assert_eq!(seqs, vec![0, 1, 2, 3]);
    assert_eq!(p.ep(1).stats().bytes_placed, 5000 + 1 + 8192 + 70_000);
}

#[test]
fn a_lost_packet_is_nacked_and_everything_after_it_resent() {
    let mut p = pair(RoceConfig::default());
    // Drop data packet 10 once.
    let mut dropped = false;
    p.link.fate = Box::new(move |side, pkt: &mut Packet, _| {
        let lose = side == 0 && pkt.bth.psn == 10 && pkt.bth.opcode != opcode::RC_ACK && !dropped;
        dropped |= lose;
        (lose, false)
    });
    p.post(msg(0, 100 * MTU as u64));
    p.run(Time::MAX);
    assert_eq!(p.ep(1).stats().bytes_placed, 100 * MTU as u64);
    let retx = p.acked()[0].1;
    // Go-back-N resends the lost packet and the ones already sent behind it: at least
    // one, at most what fits in the NAK's round trip (~8 packets at 100G and 2 us).
    assert!((1..=20).contains(&retx), "retransmitted {retx}");
    assert_eq!(p.ep(0).stats().timeouts, 0, "a NAK, not a timeout, should recover");
}

#[test]
fn a_lost_tail_is_recovered_by_the_timeout() {
    let cfg = RoceConfig::default();
    let mut p = pair(cfg);
    let mut dropped = false;
    p.link.fate = Box::new(move |side, pkt: &mut Packet, _| {
        let lose = side == 0 && pkt.bth.psn == 4 && !dropped;
        dropped |= lose;
        (lose, false)
    });
    p.post(msg(0, 5 * MTU as u64));
    p.run(Time::MAX);
    assert_eq!(p.ep(0).stats().timeouts, 1);
    let (_, t) = p.received()[0];
    assert!(t >= Time::ZERO + cfg.rto, "finished at {t}, before the RTO");
}

#[test]
fn a_dead_link_fails_the_qp_after_the_retry_limit() {
    let cfg = RoceConfig { retry_limit: 3, ..Default::default() };
    let mut p = pair(cfg).lossy(1.0, 1);
    p.post(msg(0, 10_000));
    p.run(Time::MAX);
    assert_eq!(p.ep(0).stats().timeouts, 4);
    assert!(p.events.iter().any(|e| e.2 == AppEvent::Failed));
    assert!(p.received().is_empty());
}

#[test]
fn with_infiniband_nak_rules_a_psn_lost_on_every_resend_fails_the_qp() {
    // PSN 10 never gets through, and the message is long enough that a go-back's
    // resend still runs when a repeated NAK would come (every 500 us by default, which
    // would send the QP back for ever). With one NAK per sequence error the lost resend
    // is found by the timeout, and the retry limit ends it.
    let cfg = RoceConfig { retry_limit: 3, nak_interval: None, rto: Dur::from_ms(1), ..Default::default() };
    let mut p = pair(cfg);
    p.link.fate = Box::new(|side, pkt: &mut Packet, _| {
        (side == 0 && pkt.bth.psn == 10 && pkt.bth.opcode != opcode::RC_ACK, false)
    });
    p.post(msg(0, 4000 * MTU as u64));
    p.run_to(Time::ZERO + Dur::from_ms(50));
    assert!(p.events.iter().any(|e| e.2 == AppEvent::Failed), "still going back at 50 ms");
    assert_eq!(p.ep(0).stats().timeouts, 4);
    assert!(p.received().is_empty());
    // One NAK for the first loss; the lost resends were found by timeouts.
    assert_eq!(p.ep(1).stats().control_sent, 10 + 1, "the ACKs of PSNs 0-9 and one NAK");
}

/// HPCC's model: every marked packet's acknowledgement carries a CNP; here a CNP leaves
/// for every marked packet (ahead of its ACK), and the requester hears every one.
#[test]
fn with_hpccs_preset_every_marked_packet_brings_a_cnp() {
    let cfg = RoceConfig { dcqcn: Some(DcqcnConfig::hpcc(Rate::gbps(100))), ..Default::default() };
    let mut p = pair(cfg);
    // Mark every third data packet.
    p.link.fate = Box::new(|side, pkt: &mut Packet, _| (false, side == 0 && pkt.bth.psn.is_multiple_of(3)));
    p.post(msg(0, 300 * MTU as u64));
    p.run(Time::MAX);
    let marked = p.ep(1).stats().ecn_marked;
    assert!(marked >= 100, "{marked}");
    assert_eq!(p.ep(1).stats().cnps, marked);
    assert_eq!(p.ep(0).stats().cnps, marked);
}

#[test]
fn ecn_marks_become_rate_limited_cnps_and_slow_the_sender() {
    // ConnectX firmware: at most one CNP per QP per 4 us.
    let dcqcn = DcqcnConfig::firmware();
    let cfg = RoceConfig { dcqcn: Some(dcqcn), ..Default::default() };
    let mut p = pair(cfg);
    p.link.fate = Box::new(|side, _, _| (false, side == 0));
    p.post(msg(0, 4_000_000));
    p.run(Time::MAX);
    let (_, t) = p.received()[0];
    let line = Rate::gbps(100).tx_time(wire_bytes(4_000_000));
    assert!(t.ps() > 2 * line.ps(), "marking every packet must slow the flow: {t} vs {line}");
    let cnps = p.ep(1).stats().cnps;
    let max_cnps = t.ps() / dcqcn.cnp_interval.ps() + 1;
    assert!(cnps > 10 && cnps <= max_cnps, "{cnps} CNPs in {t} (at most {max_cnps})");
    assert_eq!(p.ep(0).stats().cnps, cnps);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]
    /// Under random loss in both directions every byte is placed exactly once and
    /// every message completes, in order.
    #[test]
    fn go_back_n_delivers_every_byte_exactly_once(seed in 0u64..10_000, loss in 0.0f64..0.05, sizes in proptest::collection::vec(1u64..200_000, 1..6)) {
        let cfg = RoceConfig { rto: Dur::from_us(50), retry_limit: 1000, ..Default::default() };
        let mut p = pair(cfg).lossy(loss, seed);
        for (i, &s) in sizes.iter().enumerate() {
            p.post(msg(i as u32, s));
        }
        p.run(Time::MAX);
        let total: u64 = sizes.iter().sum();
        prop_assert_eq!(p.ep(1).stats().bytes_placed, total);
        let seqs: Vec<u32> = p.received().iter().map(|r| r.0).collect();
        prop_assert_eq!(seqs, (0..sizes.len() as u32).collect::<Vec<_>>());
        prop_assert_eq!(p.acked().len(), sizes.len());
    }
}

use fabricsim_wire::{hdr, Aeth, Bth};

/// An acknowledgement (or a sequence-error NAK) carrying `psn`.
fn ctl(psn: u32, nak: bool) -> Packet {
    let mut p = Packet { bth: Bth { opcode: opcode::RC_ACK, ack_req: false, dest_qp: 0, psn }, ..Default::default() };
    p.hdrs = hdr::AETH;
    p.aeth = Aeth { syndrome: if nak { Aeth::NAK_SEQ_ERR } else { Aeth::ACK }, msn: 0 };
    p
}

/// The HPCC model's DCQCN steps scale with the line rate: at 400 Gb/s the hyper
/// increase is 800 Mb/s (the product used to overflow a u64: a panic in a debug build,
/// a meaningless step in a release one).
#[test]
fn dcqcn_defaults_scale_to_400g_links() {
    let c = DcqcnConfig::hpcc(Rate::gbps(400));
    assert_eq!(c.rate_hai, Rate::mbps(800));
}

/// A NAK delayed behind the acknowledgement of everything (reordering) is stale: it
/// must not start the retransmission timer of a QP with nothing outstanding, which then
/// timed out again and again and failed the idle QP.
#[test]
fn a_stale_nak_does_not_time_out_an_idle_qp() {
    let cfg = RoceConfig { retry_limit: 3, ..Default::default() };
    let mut r = RoceRequester::new(info(0, 1), cfg, 1000);
    let mut now = Time::ZERO;
    r.post(now, msg(0, 3 * MTU as u64));
    while let fabricsim_transport::Poll::Send(_) = r.poll_transmit(now, 0) {
        now += Dur::from_ns(400);
    }
    // Everything acknowledged (ACK of PSN 2), then a NAK(expected=1) sent earlier arrives late.
    r.on_packet(now, &ctl(2, false));
    assert_eq!(r.poll_timeout(), None, "idle after full ack");
    r.on_packet(now, &ctl(1, true));
    let mut evs = Vec::new();
    while let Some(e) = r.poll_event() {
        evs.push(e);
    }
    let mut n = 0;
    while let Some(t) = r.poll_timeout() {
        r.on_timeout(t);
        while let Some(e) = r.poll_event() {
            evs.push(e);
        }
        n += 1;
        if n > 100 {
            break;
        }
    }
    assert_eq!(r.stats().timeouts, 0, "RTO armed with nothing outstanding");
    assert!(!evs.contains(&AppEvent::Failed));
}

/// With every packet ECN-marked, DCQCN paces the QP down to its minimum rate, where
/// packets leave further apart than a short timeout. Nothing is lost, and with nothing
/// in flight while the pacer holds the next packet there is nothing to time out (the
/// timer used to run then: 17 timeouts, and the QP failed).
#[test]
fn pacing_below_the_timeout_is_not_a_timeout() {
    let mut dc = DcqcnConfig::hpcc(Rate::gbps(100));
    dc.min_rate = Rate::mbps(100);
    let cfg = RoceConfig { rto: Dur::from_us(50), retry_limit: 3, dcqcn: Some(dc), ..Default::default() };
    let mut p = pair(cfg);
    // Mark every data packet: CNPs drive the rate to the minimum.
    p.link.fate = Box::new(|side, _, _| (false, side == 0));
    p.post(msg(0, 200 * MTU as u64));
    p.run(Time::ZERO + Dur::from_ms(200));
    assert_eq!(p.ep(0).stats().timeouts, 0);
    assert!(!p.events.iter().any(|e| e.2 == AppEvent::Failed));
    assert_eq!(p.acked().len(), 1, "the message completes");
}
