//! MRC on a point-to-point wire: SACK recovery, trimming, EV retirement and probing.

mod util;

use fabricsim_engine::{Dur, Rate, Rng, Time};
use fabricsim_transport::common::{EvState, PathLog, SprayResponder, SprayResponderConfig};
use fabricsim_transport::mrc::{EvSetConfig, MrcCcConfig, MrcConfig, MrcSender};
use fabricsim_transport::{AnyEndpoint, Endpoint, Message};
use fabricsim_wire::Packet;
use proptest::prelude::*;
use util::{info, Pair};

fn cfg() -> MrcConfig {
    MrcConfig {
        evs: EvSetConfig {
            active: 16,
            backup_per_plane: 4,
            ecn_penalty: 1,
            trim_penalty: 0,
            ecn_swap: 0,
            ecn_swap_window: Dur::from_us(40),
            probe_interval: Dur::from_us(100),
            probe_successes: 5,
            probe_timeout: Dur::from_us(40),
            probe_backoff_max: Dur::from_ms(10),
        },
        cc: MrcCcConfig { init: 60_000.0, max: 90_000.0, md: 0.5, mtu: 4096.0, target: None },
        reo: Dur::from_us(2),
        min_rto: Dur::from_us(50),
        max_rto: Dur::from_ms(1),
        base_rtt: Dur::from_us(4),
        write_imm: true,
        tail_probe: true,
        timeout_copy: true,
    }
}

/// The receiver's settings: SACKs, trimmed packets NACKed, an unbounded window, and
/// reverse probes every `reverse_probe` if given.
fn responder_cfg(reverse_probe: Option<Dur>) -> SprayResponderConfig {
    SprayResponderConfig { window: u32::MAX, nack_beyond: false, nack_trimmed: true, sack: true, reverse_probe }
}

fn pair(seed: u64) -> Pair {
    pair_with(seed, cfg())
}

fn pair_with(seed: u64, cfg: MrcConfig) -> Pair {
    let s = MrcSender::new(info(0, 1), cfg, Time::ZERO, Rng::new(seed));
    let rcfg = responder_cfg(Some(Dur::from_us(20)));
    let r = SprayResponder::new(info(1, 0), rcfg, Rng::new(seed + 1));
    Pair::new(AnyEndpoint::Mrc(s), AnyEndpoint::Spray(r), Rate::gbps(100), Dur::from_us(2))
}

fn mrc(p: &Pair) -> &MrcSender {
    let AnyEndpoint::Mrc(m) = p.ep(0) else { unreachable!() };
    m
}

/// A predicate true for the first value it is shown and for every later equal one: the
/// first entropy value (or parity) a fate rule meets is the one that dies.
fn first_seen() -> impl FnMut(u32) -> bool {
    let mut first = None;
    move |v| *first.get_or_insert(v) == v
}

/// Loses the first copy of data PSN `psn`; the cell then holds the entropy value and
/// send timestamp it went out with.
fn lose_first_copy(p: &mut Pair, psn: u32) -> std::rc::Rc<std::cell::Cell<Option<(u32, u64)>>> {
    let lost = std::rc::Rc::new(std::cell::Cell::new(None));
    let l = lost.clone();
    p.link.fate = Box::new(move |side, pkt: &mut Packet, _| {
        let lose = side == 0 && pkt.is_data() && pkt.bth.psn == psn && l.get().is_none();
        if lose {
            l.set(Some((pkt.ext.ev, pkt.ext.ts)));
        }
        (lose, false)
    });
    lost
}

/// When the requester saw its first message fully acknowledged.
fn acked_at(p: &Pair) -> Time {
    acked_at_nth(p, 0)
}

/// When the requester saw its `n`th message (from 0) fully acknowledged.
fn acked_at_nth(p: &Pair, n: usize) -> Time {
    p.events
        .iter()
        .filter_map(|&(t, side, e)| matches!(e, fabricsim_transport::AppEvent::Acked { .. } if side == 0).then_some(t))
        .nth(n)
        .expect("that many messages acknowledged")
}

fn log(p: &mut Pair) -> Vec<PathLog> {
    let mut out = Vec::new();
    let now = p.now();
    p.ep_mut(0).drain_path_log(now, &mut out);
    out
}

#[test]
fn consecutive_packets_use_different_evs() {
    let mut p = pair(1);
    let used = p.record_sent(|pkt| pkt.ext.ev);
    p.post(Message { seq: 0, len: 64 * 4096, va: 0, rkey: 1 });
    p.run(Time::MAX);
    let used = used.borrow();
    assert_eq!(used.len(), 64);
    for w in used.chunks(16) {
        let mut s = w.to_vec();
        s.sort();
        s.dedup();
        assert_eq!(s.len(), 16, "one rotation uses all 16 EVs once");
    }
}

#[test]
fn messages_end_with_write_with_immediate_even_when_the_last_packet_overtakes() {
    // The last packet of each message is LAST_IMM (or ONLY_IMM) carrying the message
    // number; delaying it so it arrives before the others must not complete the
    // message early: the receiver completes it once every packet is placed.
    let mut p = pair(7);
    let seen = p.record_sent(|pkt| (pkt.bth.opcode, pkt.bth.psn, pkt.hdrs & fabricsim_wire::hdr::IMM != 0, pkt.imm));
    p.link.delay_of =
        Some(Box::new(
            |side, pkt: &Packet| {
                if side == 0 && pkt.is_data() && pkt.bth.psn < 9 {
                    Dur::from_us(30)
                } else {
                    Dur::from_us(2)
                }
            },
        ));
    p.post(Message { seq: 0, len: 10 * 4096, va: 0, rkey: 1 });
    p.post(Message { seq: 1, len: 100, va: 0, rkey: 1 });
    p.run(Time::MAX);
    let done = p.received();
    assert!(done[0].1 >= Time::ZERO + Dur::from_us(30), "completed before its delayed packets: {done:?}");
    let seen = seen.borrow();
    use fabricsim_wire::opcode::*;
    let imm: Vec<_> = seen.iter().filter(|s| s.2).collect();
    assert_eq!(imm, [&(RC_WRITE_LAST_IMM, 9, true, 0), &(RC_WRITE_ONLY_IMM, 10, true, 1)]);
    assert!(seen.iter().all(|s| s.2 == (s.0 == RC_WRITE_LAST_IMM || s.0 == RC_WRITE_ONLY_IMM)));
    assert_eq!(done.len(), 2);

    let mut plain = cfg();
    plain.write_imm = false;
    let s = MrcSender::new(info(0, 1), plain, Time::ZERO, Rng::new(1));
    let mut s = AnyEndpoint::Mrc(s);
    s.post(Time::ZERO, Message { seq: 0, len: 100, va: 0, rkey: 1 });
    let fabricsim_transport::Poll::Send(pkt) = s.poll_transmit(Time::ZERO, 0) else { panic!("nothing to send") };
    assert_eq!(pkt.bth.opcode, RC_WRITE_ONLY);
}

#[test]
fn a_trimmed_packet_is_resent_at_once_and_its_ev_stays_active() {
    let mut p = pair(2);
    let mut trimmed = None;
    p.link.fate = Box::new(move |side, pkt: &mut Packet, _| {
        if side == 0 && pkt.is_data() && pkt.bth.psn == 20 && trimmed.is_none() {
            trimmed = Some(pkt.ext.ev);
            pkt.trim();
        }
        (false, false)
    });
    p.post(Message { seq: 0, len: 100 * 4096, va: 0, rkey: 1 });
    p.run(Time::MAX);
    assert_eq!(p.received().len(), 1);
    assert_eq!(p.ep(0).stats().timeouts, 0, "the NACK, not a timeout, recovered it");
    assert_eq!(p.ep(0).stats().retransmitted, 1);
    assert_eq!(p.ep(1).stats().trimmed, 1);
    assert!(log(&mut p).iter().all(|l| l.state != EvState::Retired), "trims never retire an EV");
}

#[test]
fn an_untrimmed_loss_retires_the_ev_and_probes_bring_it_back() {
    let mut p = pair(3);
    let lost = lose_first_copy(&mut p, 30);
    // A long transfer so probes have time to run while data flows.
    p.post(Message { seq: 0, len: 40_000 * 4096, va: 0, rkey: 1 });
    p.run(Time::MAX);
    assert_eq!(p.received().len(), 1);
    let (ev, _) = lost.get().unwrap();
    let states: Vec<EvState> = log(&mut p).iter().filter(|l| l.ev == ev).map(|l| l.state).collect();
    // RACK suspects the path and swaps the EV out at once; the next packet sent on it
    // arriving (same path, in order) proves the loss and retires it.
    assert_eq!(states[..3], [EvState::Active, EvState::Backup, EvState::Retired], "{states:?}");
    assert!(states.contains(&EvState::Probing));
    assert_eq!(*states.last().unwrap(), EvState::Active, "five answered probes resurrect it into its slot: {states:?}");
    assert_eq!(mrc(&p).evs().active_per_plane(), vec![16], "a backup filled the slot");
    assert_eq!(p.ep(0).stats().timeouts, 0, "RACK, not a timeout, found the loss");
}

#[test]
fn a_suspect_lost_near_the_end_of_a_message_is_retired_an_rto_later_without_more_input() {
    // PSN 60 of 64 is lost. RACK finds it from later packets on other EVs and suspects
    // its EV; no later packet goes on that EV and its copy never arrives, so only the
    // timeout rule can settle the suspicion, and after the message nothing else comes
    // in: the sender's timer must fire for it.
    let mut p = pair(5);
    let lost = lose_first_copy(&mut p, 60);
    p.post(Message { seq: 0, len: 64 * 4096, va: 0, rkey: 1 });
    p.run(Time::MAX);
    assert_eq!(p.received().len(), 1);
    let (ev, sent) = lost.get().unwrap();
    let done = acked_at(&p);
    let states: Vec<(Time, EvState)> = log(&mut p).iter().filter(|l| l.ev == ev).map(|l| (l.time, l.state)).collect();
    assert_eq!(states.get(1).map(|s| s.1), Some(EvState::Backup), "suspected first: {states:?}");
    let retired =
        states.iter().find(|s| s.1 == EvState::Retired).unwrap_or_else(|| panic!("never retired: {states:?}"));
    assert!(retired.0 > done, "retired after the message completed: {states:?}");
    assert!(retired.0 <= Time(sent) + Dur::from_us(100), "an RTO (50-100 us) after its send: {states:?}");
}

#[test]
fn a_late_packet_on_a_slow_path_is_resent_but_its_ev_is_not_retired() {
    let mut p = pair(3);
    // From PSN 30 on, one EV's path holds a 30 us queue (less than an RTO) that drains: its
    // packets are late, in order (a path is FIFO), none lost. RACK resends and swaps
    // the EV out, but the first copies arrive, so the path is not called broken.
    let slow = std::rc::Rc::new(std::cell::Cell::new(None::<(u32, u64)>));
    let s = slow.clone();
    p.link.fate = Box::new(move |side, pkt: &mut Packet, _| {
        if side == 0 && pkt.is_data() && pkt.bth.psn == 30 && s.get().is_none() {
            s.set(Some((pkt.ext.ev, pkt.ext.ts)));
        }
        (false, false)
    });
    let (base, s) = (p.link.delay, slow.clone());
    p.link.delay_of = Some(Box::new(move |side, pkt: &Packet| match s.get() {
        Some((ev, t0)) if side == 0 && pkt.ext.ev == ev && pkt.ext.ts >= t0 => {
            base + Dur(Dur::from_us(30).ps().saturating_sub(pkt.ext.ts - t0))
        }
        _ => base,
    }));
    p.post(Message { seq: 0, len: 2_000 * 4096, va: 0, rkey: 1 });
    p.run(Time::MAX);
    assert_eq!(p.received().len(), 1);
    let (ev, _) = slow.get().unwrap();
    let states: Vec<EvState> = log(&mut p).iter().filter(|l| l.ev == ev).map(|l| l.state).collect();
    assert!(p.ep(0).stats().retransmitted >= 1, "RACK resent the late packet");
    assert!(states.contains(&EvState::Backup), "the slow EV was swapped out: {states:?}");
    assert!(!states.contains(&EvState::Retired), "a late packet is no loss: {states:?}");
    assert!(mrc(&p).evs().stats().iter().all(|s| s.losses == 0));
}

/// Every path slows down at once (a degraded last hop behind a deep queue): data sent
/// after 20 us takes 600 us, or 3 ms (beyond `max_rto`), to arrive, in order, far past
/// the 50 us RTO. Nothing is lost, so no EV may be retired, and each timeout (nothing
/// sent since got through) resends only the oldest packet (on at most two EVs, as round
/// trips were near the base until the slowdown) and restarts the timer, rather than a
/// window of copies into that queue (beyond `max_rto`, every packet older than the RTO
/// used to go out at once).
#[test]
fn when_every_path_is_slow_timeouts_resend_one_packet_and_retire_nothing() {
    for slow in [Dur::from_us(600), Dur::from_ms(3)] {
        let mut p = pair(6);
        let base = p.link.delay;
        let slow_from = Dur::from_us(20).ps();
        p.link.delay_of =
            Some(Box::new(
                move |side, pkt: &Packet| {
                    if side == 0 && pkt.is_data() && pkt.ext.ts >= slow_from {
                        slow
                    } else {
                        base
                    }
                },
            ));
        p.post(Message { seq: 0, len: 300 * 4096, va: 0, rkey: 1 });
        p.run(Time::MAX);
        assert_eq!(p.acked().len(), 1, "the message completes");
        let st = p.ep(0).stats();
        assert!(st.timeouts >= 1, "the slowdown must cost timeouts ({})", st.timeouts);
        assert!(st.retransmitted <= 2 * st.timeouts, "{} resends for {} timeouts", st.retransmitted, st.timeouts);
        assert!(st.timeouts <= 8, "{:?}: {} timeouts, the timer restarts and backs off", slow, st.timeouts);
        assert!(log(&mut p).iter().all(|l| l.state != EvState::Retired), "slow is not broken");
    }
}

#[test]
fn ecn_echoes_make_evs_sit_out() {
    let mut p = pair(4);
    // Mark every packet on one EV.
    let target = std::rc::Rc::new(std::cell::Cell::new(None));
    let t = target.clone();
    p.link.fate = Box::new(move |side, pkt: &mut Packet, _| {
        if side != 0 || !pkt.is_data() {
            return (false, false);
        }
        if t.get().is_none() {
            t.set(Some(pkt.ext.ev));
        }
        (false, Some(pkt.ext.ev) == t.get())
    });
    p.post(Message { seq: 0, len: 3000 * 4096, va: 0, rkey: 1 });
    p.run(Time::MAX);
    let x = target.get().unwrap();
    let stats = p.ep(0).path_stats();
    let on_x = stats.iter().find(|s| s.ev == x).unwrap().packets;
    let others: Vec<u64> = stats.iter().filter(|s| s.ev != x).map(|s| s.packets).collect();
    let mean = others.iter().sum::<u64>() as f64 / others.len() as f64;
    assert!((on_x as f64) < 0.7 * mean, "marked EV carried {on_x}, others {mean:.0} on average");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(30))]
    #[test]
    fn every_byte_arrives_once_under_loss(seed in 0u64..100_000, loss in 0.0f64..0.05, len in 1u64..2_000_000) {
        let mut p = pair(seed).lossy(loss, seed ^ 5);
        p.post(Message { seq: 0, len, va: 0, rkey: 1 });
        p.post(Message { seq: 1, len: 4097, va: 0, rkey: 1 });
        p.run(Time(Dur::from_ms(500).ps()));
        prop_assert_eq!(p.received().len(), 2, "seed {} loss {}", seed, loss);
        prop_assert_eq!(p.ep(1).stats().bytes_placed, len + 4097);
        prop_assert_eq!(p.acked().len(), 2);
    }
}

/// Half the paths die in both directions at 20 us, among them the one the receiver's
/// acknowledgements take. The sender hears nothing and times out; its retransmission
/// arrives as a duplicate, so the receiver probes two reverse EVs, naming the forward
/// EV that just reached it; the sender answers on that EV, and the receiver repeats its
/// latest acknowledgement on the reverse EV the answer proved, instead of leaving the
/// sender to a second, doubled timeout.
#[test]
fn a_dead_reverse_path_is_found_again_and_the_lost_acknowledgement_repeated() {
    let mut timed_out = 0;
    for seed in 1..=5 {
        let mut p = pair(seed);
        let dead_parity = std::rc::Rc::new(std::cell::Cell::new(None::<u32>));
        let repeats = std::rc::Rc::new(std::cell::Cell::new(0u32));
        let (d, r) = (dead_parity.clone(), repeats.clone());
        let start = Time::ZERO + Dur::from_us(20);
        p.link.fate = Box::new(move |side, pkt: &mut Packet, _| {
            let ev = pkt.net.entropy();
            // The first acknowledgement of data sent after the failure names the
            // parity of EVs that dies.
            if side == 1 && d.get().is_none() && pkt.ext.ts >= start.ps() && !pkt.is_data() {
                d.set(Some(ev & 1));
            }
            let lost = d.get() == Some(ev & 1);
            if !lost && pkt.ext.flags & fabricsim_wire::Ext::F_REPEAT != 0 {
                r.set(r.get() + 1);
            }
            (lost, false)
        });
        p.post(Message { seq: 0, len: 400 * 4096, va: 0, rkey: 1 });
        // (Retired EVs are probed for ever: run for a while rather than to the end.)
        p.run(Time::ZERO + Dur::from_ms(5));
        assert_eq!(p.acked().len(), 1, "seed {seed}: the message completes");
        let timeouts = mrc(&p).stats().timeouts;
        println!("seed {seed}: {timeouts} timeouts, {} repeated acknowledgements delivered", repeats.get());
        if timeouts > 0 {
            timed_out += 1;
            assert!(repeats.get() >= 1, "seed {seed}: a repeated acknowledgement got through");
        }
    }
    assert!(timed_out >= 2, "the failure must cost timeouts in some runs ({timed_out})");
}

/// The last packets of a message go out within the reordering window of each other, so
/// no acknowledgement of a packet sent a window later can expose a loss among them.
/// RACK's timer (RFC 8985 section 6.3) does: a round trip and a window after the lost
/// packet was sent, since a packet sent after it was acknowledged. Before it, such a
/// loss waited for the retransmission timeout (50 us here, against a 4 us round trip).
#[test]
fn a_loss_among_the_last_packets_is_found_by_rack_not_by_a_timeout() {
    for victim in [9, 10] {
        let mut p = pair(7);
        // PSNs 0-11, 0.33 us apart at 100 Gb/s: 9 and 10 are within 2 us (the window)
        // of the last one. The first copy of the victim is lost.
        let mut dropped = false;
        p.link.fate = Box::new(move |side, pkt: &mut Packet, _| {
            let lose = side == 0 && pkt.is_data() && pkt.bth.psn == victim && !dropped;
            dropped |= lose;
            (lose, false)
        });
        p.post(Message { seq: 0, len: 12 * 4096, va: 0, rkey: 1 });
        p.run(Time::MAX);
        let done = acked_at(&p);
        let st = p.ep(0).stats();
        assert_eq!((st.timeouts, st.retransmitted), (0, 1), "PSN {victim}: resent once, no timeout");
        assert!(done < Time::ZERO + Dur::from_us(25), "PSN {victim}: done at {done}, not after an RTO");
    }
}

/// The last packet of a message is lost: no later packet exists whose acknowledgement
/// could expose it, to RACK or to RACK's timer. The tail loss probe (two round trips of
/// silence after the last acknowledgement) sends it again on another EV, well before
/// the 50 us retransmission timeout.
#[test]
fn a_lost_last_packet_is_resent_by_the_tail_loss_probe() {
    for seed in 1..=4 {
        let mut p = pair(seed);
        let mut dropped = false;
        p.link.fate = Box::new(move |side, pkt: &mut Packet, _| {
            let lose = side == 0 && pkt.is_data() && pkt.bth.psn == 11 && !dropped;
            dropped |= lose;
            (lose, false)
        });
        p.post(Message { seq: 0, len: 12 * 4096, va: 0, rkey: 1 });
        p.run(Time::ZERO + Dur::from_ms(1));
        let done = acked_at(&p);
        let st = p.ep(0).stats();
        assert_eq!((st.timeouts, st.tail_probes, st.retransmitted), (0, 1, 1), "seed {seed}");
        assert!(done < Time::ZERO + Dur::from_us(25), "seed {seed}: done at {done}, not after an RTO");
    }
}

/// A burst of 16 packets loses PSNs 3, 6 and 10, and every acknowledgement: half the
/// reverse EVs are dead from the start, among them the one in use. The sender times
/// out and resends PSN 0; it arrives as a duplicate, the receiver finds a working
/// reverse path and repeats its acknowledgement on it, reporting the highest PSN it
/// holds with its bitmap. So the sender resends the three lost packets and nothing
/// else. (Repeating the duplicate's own acknowledgement told it about PSN 0 alone; RACK
/// then took every packet sent before that resend for lost, and ten of the thirteen
/// resends were duplicates.)
#[test]
fn a_repaired_reverse_path_reports_everything_received() {
    let mut timed_out = 0;
    for seed in 1..=8 {
        let mut p = pair(seed);
        let mut dead_parity = first_seen();
        let mut first_copy = [true; 16];
        p.link.fate = Box::new(move |side, pkt: &mut Packet, _| {
            if side == 0 {
                let psn = pkt.bth.psn as usize;
                let lose = pkt.is_data() && [3, 6, 10].contains(&psn) && first_copy[psn];
                if pkt.is_data() {
                    first_copy[psn] = false;
                }
                return (lose, false);
            }
            (dead_parity(pkt.net.entropy() & 1), false)
        });
        p.post(Message { seq: 0, len: 16 * 4096, va: 0, rkey: 1 });
        p.run(Time::ZERO + Dur::from_ms(5));
        assert_eq!(p.acked().len(), 1, "seed {seed}: the message completes");
        let (timeouts, dups) = (mrc(&p).stats().timeouts, p.ep(1).stats().duplicates);
        let resent = p.ep(0).stats().retransmitted;
        println!("seed {seed}: {timeouts} timeouts, {resent} resends, {dups} duplicates");
        assert!(dups <= timeouts + 1, "seed {seed}: {dups} duplicates for {timeouts} timeouts");
        timed_out += (timeouts > 0) as u32;
    }
    // (A periodic reverse probe sometimes repairs the path before the timeout.)
    assert!(timed_out >= 2, "the lost acknowledgements must cost timeouts in some runs ({timed_out})");
}

/// A connection with a single active EV whose path loses everything: the resends go
/// to a backup of the plane and the dead EV is replaced. (On the lone EV a timeout
/// resent the oldest packet for ever: nothing else was sent to show that paths work.)
#[test]
fn a_lone_active_ev_that_loses_everything_is_left_for_a_backup() {
    for seed in 1..=4 {
        let mut c = cfg();
        c.evs.active = 1;
        c.evs.backup_per_plane = 2;
        let mut p = pair_with(seed, c);
        let dead = std::rc::Rc::new(std::cell::Cell::new(None::<u32>));
        let d = dead.clone();
        p.link.fate = Box::new(move |side, pkt: &mut Packet, _| {
            if side != 0 || !pkt.is_data() {
                return (false, false);
            }
            let ev = pkt.net.entropy();
            if d.get().is_none() {
                d.set(Some(ev));
            }
            (d.get() == Some(ev), false)
        });
        p.post(Message { seq: 0, len: 16 * 4096, va: 0, rkey: 1 });
        p.run(Time::ZERO + Dur::from_ms(5));
        assert_eq!(p.acked().len(), 1, "seed {seed}: the message completes");
        let done = acked_at(&p);
        assert!(done < Time::ZERO + Dur::from_us(500), "seed {seed}: done at {done}");
        let dead = dead.get().unwrap();
        assert!(
            log(&mut p).iter().any(|l| l.ev == dead && l.state == EvState::Retired),
            "seed {seed}: the dead EV is retired"
        );
    }
}

/// Every acknowledgement is lost from the start (half the reverse EVs are dead, among
/// them the one in use) and no data: the sender hears nothing. The receiver's periodic
/// reverse probe finds a working path, and the sender's reply says it has heard no
/// acknowledgement for a round trip, so the receiver repeats its latest state there:
/// the message completes without the sender's timeout (50 us here). Before, only a
/// timeout's duplicate made the receiver repeat itself, and a dead reverse path cost
/// two timeouts and more (a spine down under 100 KB: 949 us).
#[test]
fn a_sender_that_hears_nothing_gets_the_receivers_state_on_the_probed_path() {
    let mut before_timeout = 0;
    for seed in 1..=8 {
        let mut p = pair(seed);
        let mut dead_parity = first_seen();
        p.link.fate =
            Box::new(move |side, pkt: &mut Packet, _| (side == 1 && dead_parity(pkt.net.entropy() & 1), false));
        // Four packets: the last arrives before the probe's answer comes back, so no
        // later acknowledgement takes the new path by itself.
        p.post(Message { seq: 0, len: 4 * 4096, va: 0, rkey: 1 });
        p.run(Time::ZERO + Dur::from_ms(5));
        assert_eq!(p.acked().len(), 1, "seed {seed}: the message completes");
        let (timeouts, done) = (mrc(&p).stats().timeouts, acked_at(&p));
        println!("seed {seed}: {timeouts} timeouts, done at {done}");
        before_timeout += (timeouts == 0 && done < Time::ZERO + Dur::from_us(50)) as u32;
    }
    // A probe on a dead reverse EV (half of them) is lost, and with no data arriving
    // no other follows: those runs wait for the timeout. (Measured 3 of 8; none
    // before.)
    assert!(before_timeout >= 3, "{before_timeout} of 8 runs completed before the timeout");
}

/// After a first message has measured the round trip at its base, the EVs of one parity
/// die in both directions (a switch on half the paths goes down) while a second,
/// 8-packet message is out. Nothing comes back for its packets on dead paths, and when
/// the tail loss probe dies too, the timeout (nothing sent since got through) resends
/// the oldest unacknowledged packet on two EVs: it survives unless both die (a quarter
/// of the time rather than half), and chains of doubling timeouts are rare.
#[test]
fn a_timeout_after_paths_went_silent_resends_on_two_evs() {
    let (mut total, mut timeouts_all) = (Dur::ZERO, 0);
    for seed in 1..=16 {
        let mut p = pair(seed);
        p.post(Message { seq: 0, len: 8 * 4096, va: 0, rkey: 1 });
        p.run(Time::ZERO + Dur::from_us(100));
        assert_eq!(p.acked().len(), 1);
        let start = p.now();
        let copies = std::rc::Rc::new(std::cell::RefCell::new(std::collections::BTreeMap::new()));
        let c = copies.clone();
        let mut dead_parity = first_seen();
        p.link.fate = Box::new(move |side, pkt: &mut Packet, _| {
            if side == 0 && pkt.is_data() {
                c.borrow_mut().entry((pkt.bth.psn, pkt.ext.ts)).or_insert_with(Vec::new).push(pkt.ext.ev);
            }
            (dead_parity(pkt.net.entropy() & 1), false)
        });
        p.post(Message { seq: 1, len: 8 * 4096, va: 0, rkey: 1 });
        p.run(start + Dur::from_ms(5));
        assert_eq!(p.acked().len(), 2, "seed {seed}: the second message completes");
        let took = acked_at_nth(&p, 1) - start;
        let timeouts = mrc(&p).stats().timeouts;
        let pairs = copies.borrow().values().filter(|evs| evs.len() == 2 && evs[0] != evs[1]).count() as u64;
        println!("seed {seed}: {timeouts} timeouts, {pairs} resends on two EVs, done in {took}");
        // One timeout, one packet on two EVs (not every packet it found lost).
        assert_eq!(pairs, timeouts, "seed {seed}: resends on two EVs");
        (total, timeouts_all) = (total + took, timeouts_all + timeouts);
    }
    let mean = Dur(total.ps() / 16);
    println!("mean {mean}, {timeouts_all} timeouts");
    // Measured: a mean of 81 us (9 timeouts in 16 runs); with one copy per timeout, one
    // run took 1.6 ms and another had not finished after 5 ms.
    assert!(mean < Dur::from_us(200), "the second message took {mean} on average");
}

/// A receiver whose port comes back up repeats its latest state (its SACK, with the
/// new port bitmap) and probes reverse EVs on that port at once: the sender, backed
/// off after timing out against the dead port, need not wait for its next timeout.
#[test]
fn a_receiver_whose_port_comes_back_up_says_so_at_once() {
    use fabricsim_wire::{opcode, Ext};
    let mut p = pair(3);
    p.post(Message { seq: 0, len: 8 * 4096, va: 0, rkey: 1 });
    p.run(Time::ZERO + Dur::from_us(100));
    assert_eq!(p.received().len(), 1);
    let now = p.now();
    let r = p.ep_mut(1);
    let drain = |r: &mut AnyEndpoint, t: Time| util::drain(r, t, 0);
    drain(r, now);
    r.on_port_state(now, 0, false);
    assert!(drain(r, now).is_empty(), "a dead port sends nothing");
    r.on_port_state(now, 0, true);
    let sent = drain(r, now);
    let ack = sent.iter().find(|k| k.bth.opcode == opcode::X_SACK).expect("a SACK on the port back up");
    assert_eq!(ack.ext.flags & (Ext::F_REPEAT | Ext::F_PORT_UP), Ext::F_REPEAT | Ext::F_PORT_UP);
    assert_eq!((ack.ext.cum_psn, ack.ext.port_state & 1), (8, 1), "everything received; port 0 up");
    let probes: Vec<&Packet> = sent.iter().filter(|k| k.bth.opcode == opcode::X_PROBE).collect();
    assert_eq!(probes.len(), 2, "two reverse probes too: {sent:?}");
    assert!(probes.iter().all(|k| k.ext.flags & Ext::F_PORT_UP != 0));
    r.on_port_state(now, 0, true);
    assert!(drain(r, now).is_empty(), "a port already up announces nothing");
    // Unanswered, the probes are repeated every two probe intervals (20 us here), eight
    // rounds in all.
    let (mut at, mut rounds) = (now, 1);
    while let Some(t) = r.poll_timeout() {
        assert_eq!(t, at + Dur::from_us(40), "round {rounds}");
        r.on_timeout(t);
        let sent = drain(r, t);
        assert_eq!(sent.iter().filter(|k| k.bth.opcode == opcode::X_PROBE).count(), 2, "round {rounds}");
        (at, rounds) = (t, rounds + 1);
        assert!(rounds <= 8, "the retries end");
    }
    assert_eq!(rounds, 8);
    // An answer ends them at once, and the latest state is repeated on the path it
    // proved, without the port-up flag (the announcement is made once).
    r.on_port_state(at, 0, false);
    r.on_port_state(at, 0, true);
    let probe = *drain(r, at).iter().find(|k| k.bth.opcode == opcode::X_PROBE).expect("probes");
    assert!(r.poll_timeout().is_some());
    let mut reply = probe;
    reply.bth.opcode = opcode::X_PROBE_REPLY;
    r.on_packet(at, &reply);
    assert_eq!(r.poll_timeout(), None, "an answered probe ends the retries");
    let repeated = drain(r, at);
    assert!(
        repeated.iter().any(|k| k.bth.opcode == opcode::X_SACK && k.ext.flags & Ext::F_PORT_UP == 0),
        "{repeated:?}"
    );
}

/// The receiver's link is down from the start to 500 us: everything the sender sends
/// is lost and its timeouts back off (at 50, 100, 200, 400 us from the last). When the
/// link comes back the receiver, which has nothing to acknowledge, says so in reverse
/// probes flagged port-up, and the sender forgets its backoff and resends at once
/// rather than at its next timeout, near 750 us.
#[test]
fn a_sender_backed_off_during_an_outage_resends_when_the_receivers_port_is_back() {
    for seed in 1..=4 {
        let mut p = pair(seed);
        let down = std::rc::Rc::new(std::cell::Cell::new(false));
        let d = down.clone();
        p.link.fate = Box::new(move |_, _: &mut Packet, _| (d.get(), false));
        down.set(true);
        p.port_state(1, 0, false);
        p.post(Message { seq: 0, len: 64 * 4096, va: 0, rkey: 1 });
        p.run_to(Time::ZERO + Dur::from_us(500));
        assert!(mrc(&p).stats().timeouts >= 3, "seed {seed}: the outage cost backed-off timeouts");
        down.set(false);
        p.port_state(1, 0, true);
        p.run(Time::ZERO + Dur::from_ms(5));
        assert_eq!(p.acked().len(), 1, "seed {seed}: the message completes");
        let done = acked_at(&p);
        println!("seed {seed}: done at {done}");
        assert!(done < Time::ZERO + Dur::from_us(560), "seed {seed}: done at {done}, not after the next timeout");
    }
}

/// Whether `s` has a tail loss probe waiting that would leave now on plane 0 (and be
/// counted as it leaves), tried on a copy of `s`.
fn probe_queued(s: &MrcSender, at: Time) -> bool {
    let mut c = s.clone();
    matches!(c.poll_transmit(at, 0), fabricsim_transport::Poll::Send(_)) && c.stats().tail_probes == 1
}

/// A tail loss probe waits for its plane's next transmit opportunity. If the local
/// port goes down first and the probed PSN is acknowledged during the outage (on
/// another path, or by the original copy), the probe is stale when the port comes
/// back: it is dropped, not sent, and counted neither as a retransmission nor as a
/// probe.
#[test]
fn a_copy_acknowledged_while_its_plane_was_down_is_not_sent_when_the_plane_returns() {
    use fabricsim_transport::Poll;
    let mut s = MrcSender::new(info(0, 1), cfg(), Time::ZERO, Rng::new(5));
    let rcfg = responder_cfg(None);
    let mut r = SprayResponder::new(info(1, 0), rcfg, Rng::new(6));
    let t0 = Time::ZERO;
    s.post(t0, Message { seq: 0, len: 4 * 4096, va: 0, rkey: 1 });
    let sent = util::drain(&mut s, t0, 0);
    assert_eq!(sent.len(), 4, "the whole message goes out at once");
    // Every packet arrives; the receiver's acknowledgements are held back but the
    // first's, which gives the sender its round trip.
    let mut acks = Vec::new();
    for pkt in &sent {
        r.on_packet(t0 + Dur::from_us(2), pkt);
        acks.extend(util::drain(&mut r, t0 + Dur::from_us(2), 0));
    }
    assert_eq!(acks.len(), 4);
    s.on_packet(t0 + Dur::from_us(4), &acks[0]);
    // Nothing more comes back: the tail loss probe comes due before the timeout and
    // queues a copy of the newest packet.
    let probe_at = s.poll_timeout().expect("a deadline");
    s.on_timeout(probe_at);
    assert!(probe_queued(&s, probe_at), "the probe fired at {probe_at}");
    // The port goes down before the copy leaves; the held acknowledgements arrive.
    s.on_port_state(probe_at, 0, false);
    for a in &acks[1..] {
        s.on_packet(probe_at + Dur::from_us(1), a);
    }
    s.on_port_state(probe_at + Dur::from_us(10), 0, true);
    let after = s.poll_transmit(probe_at + Dur::from_us(10), 0);
    assert!(matches!(after, Poll::Idle), "nothing is left to send: {after:?}");
    assert_eq!(s.stats().retransmitted, 0, "the stale copy is not counted");
    assert_eq!(s.stats().tail_probes, 0, "nor is it a probe sent");
    assert_eq!(s.stats().data_sent, 4);
}

/// Control packets are counted as they leave, not as they are queued: those still
/// waiting when a run ends never went on the wire.
#[test]
fn control_packets_count_when_they_leave() {
    let mut s = MrcSender::new(info(0, 1), cfg(), Time::ZERO, Rng::new(5));
    let mut r = SprayResponder::new(info(1, 0), responder_cfg(None), Rng::new(6));
    let t0 = Time::ZERO;
    s.post(t0, Message { seq: 0, len: 4 * 4096, va: 0, rkey: 1 });
    let sent = util::drain(&mut s, t0, 0);
    for pkt in &sent {
        r.on_packet(t0 + Dur::from_us(2), pkt);
    }
    assert_eq!(r.stats().control_sent, 0, "acknowledgements queued, none sent yet");
    let acks = util::drain(&mut r, t0 + Dur::from_us(2), 0);
    assert!(!acks.is_empty());
    assert_eq!(r.stats().control_sent, acks.len() as u64);
}

/// A tail loss probe queued just before its port goes down must not wait out the
/// outage and leave stamped with the time it was queued: its acknowledgement would
/// read as a round trip as long as the outage and inflate every timer after it.
#[test]
fn a_copy_queued_before_an_outage_does_not_inflate_the_round_trip() {
    let mut s = MrcSender::new(info(0, 1), cfg(), Time::ZERO, Rng::new(5));
    let rcfg = responder_cfg(None);
    let mut r = SprayResponder::new(info(1, 0), rcfg, Rng::new(6));
    let drain = |e: &mut dyn Endpoint, t: Time| util::drain(e, t, 0);
    let t0 = Time::ZERO;
    s.post(t0, Message { seq: 0, len: 4 * 4096, va: 0, rkey: 1 });
    let sent = drain(&mut s, t0);
    // PSNs 1 and 2 are lost; of 0 and 3 only the first acknowledgement gets back.
    let mut acks = Vec::new();
    for pkt in sent.iter().filter(|p| p.bth.psn == 0 || p.bth.psn == 3) {
        r.on_packet(t0 + Dur::from_us(2), pkt);
        acks.extend(drain(&mut r, t0 + Dur::from_us(2)));
    }
    s.on_packet(t0 + Dur::from_us(4), &acks[0]);
    let probe_at = s.poll_timeout().expect("a deadline");
    s.on_timeout(probe_at);
    assert!(probe_queued(&s, probe_at));
    // The port is down for 1 ms before the probe leaves.
    s.on_port_state(probe_at, 0, false);
    let up = probe_at + Dur::from_ms(1);
    s.on_port_state(up, 0, true);
    let out = drain(&mut s, up);
    assert!(out.iter().all(|p| p.ext.ts == up.ps()), "everything leaves stamped now: {out:?}");
    let psns: Vec<u32> = out.iter().map(|p| p.bth.psn).collect();
    assert_eq!(psns, [1, 2, 3], "each outstanding PSN once");
    assert_eq!(s.stats().tail_probes, 0, "the probe was dropped with its plane, never sent");
    r.on_packet(up + Dur::from_us(2), &out[0]);
    let back = drain(&mut r, up + Dur::from_us(2));
    s.on_packet(up + Dur::from_us(4), &back[0]);
    let next = s.poll_timeout().expect("packets are out");
    assert!(
        next < up + Dur::from_us(100),
        "a 4 us round trip, yet the next deadline is {} after the outage",
        next - up
    );
}

/// A two-plane sender with a message out on both planes (its NIC serving the two
/// ports in turn) and its receiver: `(sender, receiver, sent on plane 0)`.
fn two_planes_under_way() -> (MrcSender, SprayResponder, Vec<Packet>) {
    use fabricsim_transport::Poll;
    let mut s = MrcSender::new(util::info2(0, 1), cfg(), Time::ZERO, Rng::new(5));
    let r = SprayResponder::new(util::info2(1, 0), responder_cfg(None), Rng::new(6));
    s.post(Time::ZERO, Message { seq: 0, len: 64 * 4096, va: 0, rkey: 1 });
    let (mut on0, mut on1) = (Vec::new(), Vec::new());
    loop {
        let mut sent = false;
        for (port, out) in [(0, &mut on0), (1, &mut on1)] {
            if let Poll::Send(p) = s.poll_transmit(Time::ZERO, port) {
                out.push(p);
                sent = true;
            }
        }
        if !sent {
            break;
        }
    }
    assert!(on0.len() >= 3 && !on1.is_empty(), "both planes carry data");
    (s, r, on0)
}

/// What the receiver sends on both its ports after taking `pkt` at `t`.
fn answer(r: &mut SprayResponder, pkt: &Packet, t: Time) -> Vec<Packet> {
    r.on_packet(t, pkt);
    let mut out = util::drain(r, t, 0);
    out.extend(util::drain(r, t, 1));
    out
}

/// Two planes. A SACK sent before the receiver's port 1 went down arrives after one
/// sent since (it took a slower path): the older bitmap must not bring plane 1 back.
/// (The bitmap's epoch tells them apart; without it the sender resent on the dead
/// plane what it had just moved off it.)
#[test]
fn a_sack_overtaken_by_a_later_one_does_not_undo_a_port_down() {
    use fabricsim_transport::Poll;
    let (mut s, mut r, on0) = two_planes_under_way();
    let t0 = Time::ZERO;
    let old = answer(&mut r, &on0[0], t0 + Dur::from_us(2));
    r.on_port_state(t0 + Dur::from_us(3), 1, false);
    let new = answer(&mut r, &on0[1], t0 + Dur::from_us(4));
    assert_eq!((old.len(), new.len()), (1, 1));
    assert_eq!((old[0].ext.port_state & 2, new[0].ext.port_state & 2), (2, 0));
    let t = t0 + Dur::from_us(6);
    s.on_packet(t, &new[0]);
    assert_eq!(s.peer_ports() & 2, 0, "plane 1 is down at the peer");
    assert!(matches!(s.poll_transmit(t, 1), Poll::Idle));
    s.on_packet(t + Dur::from_us(1), &old[0]);
    assert_eq!(s.peer_ports() & 2, 0, "the stale SACK revived plane 1");
    let after = s.poll_transmit(t + Dur::from_us(1), 1);
    assert!(matches!(after, Poll::Idle), "and the sender used it: {after:?}");
}

/// The bitmap's 16-bit epoch wraps: after 16384 flaps of the receiver's port 1 that
/// the sender never heard of (32768 changes), the bitmap announcing the port back
/// must still be taken, not read as older than the last one applied (which froze
/// plane 1 out for good; found by a review).
#[test]
fn a_port_back_after_its_epoch_wrapped_is_learned() {
    use fabricsim_transport::Poll;
    let (mut s, mut r, on0) = two_planes_under_way();
    let t0 = Time::ZERO;
    r.on_port_state(t0 + Dur::from_us(1), 1, false);
    let down = answer(&mut r, &on0[0], t0 + Dur::from_us(2));
    s.on_packet(t0 + Dur::from_us(4), &down[0]);
    assert_eq!(s.peer_ports() & 2, 0);
    for k in 0..16_384u64 {
        r.on_port_state(t0 + Dur::from_ns(10 + 200 * k), 1, true);
        r.on_port_state(t0 + Dur::from_ns(110 + 200 * k), 1, false);
    }
    let back = t0 + Dur::from_ms(4);
    r.on_port_state(back, 1, true);
    let Poll::Send(fresh) = s.poll_transmit(back, 0) else { panic!("something to send on plane 0") };
    let up = answer(&mut r, &fresh, back);
    let sack = up.iter().find(|p| p.ext.port_state & 2 != 0).expect("a SACK saying port 1 is up");
    assert_eq!(sack.ext.port_epoch, 32_770);
    s.on_packet(back + Dur::from_us(2), sack);
    assert_eq!(s.peer_ports() & 2, 2, "plane 1 stayed out");
}

/// Two planes. The receiver's port 1 is down from the start (the sender learns it
/// from the SACKs' port bitmap and stops using plane 1); at 20 us its port 0 goes down
/// for good; at 100 us port 1 comes back. The SACK announcing it is lost; the eight
/// rounds of reverse probes flagged port-up carry the bitmap too, and the sender must
/// learn from them that plane 1 works again (it used to ignore them, and the message
/// never completed).
#[test]
fn a_peer_port_back_up_is_learned_from_its_probes_too() {
    use fabricsim_wire::{opcode, Ext};
    use std::cell::Cell;
    use std::rc::Rc;
    let s = MrcSender::new(util::info2(0, 1), cfg(), Time::ZERO, Rng::new(5));
    let rcfg = responder_cfg(Some(Dur::from_us(20)));
    let r = SprayResponder::new(util::info2(1, 0), rcfg, Rng::new(6));
    // Two ports each, 2 us apart, no serialization.
    let mut p = Pair::with_ports(AnyEndpoint::Mrc(s), AnyEndpoint::Spray(r), 2, None, Dur::from_us(2));
    p.port_state(1, 1, false);
    p.post(Message { seq: 0, len: 2000 * 4096, va: 0, rkey: 1 });
    let (down0, up1) = (Time::ZERO + Dur::from_us(20), Time::ZERO + Dur::from_us(100));
    let clock = Rc::new(Cell::new(Time::ZERO));
    let lost_announcements = Rc::new(Cell::new(0));
    let (c, lost) = (clock.clone(), lost_announcements.clone());
    p.link.fate = Box::new(move |side, pkt: &mut Packet, _| {
        let now = c.get();
        if side == 0 {
            // The receiver's port `port` must be up.
            let up = if pkt.net.src_port == 0 { now < down0 } else { now >= up1 };
            return (!up, false);
        }
        if pkt.bth.opcode == opcode::X_SACK && pkt.ext.flags & Ext::F_PORT_UP != 0 {
            lost.set(lost.get() + 1);
            return (true, false);
        }
        (false, false)
    });
    let (mut did_down, mut did_up) = (false, false);
    p.run_with(Time::ZERO + Dur::from_ms(50), |now, p| {
        clock.set(now);
        if now >= down0 && !did_down {
            did_down = true;
            p.port_state(1, 0, false);
        }
        if now >= up1 && !did_up {
            did_up = true;
            p.port_state(1, 1, true);
        }
    });
    let acked = p.acked_times();
    assert_eq!(lost_announcements.get(), 1);
    assert_eq!(acked.len(), 1, "the message completes over plane 1 ({:?})", p.ep(0).stats());
    // Measured: 524 us, 2 timeouts.
    assert!(acked[0] < Time::ZERO + Dur::from_ms(1), "completed at {}", acked[0]);
}

/// Two planes; the receiver's port 1 is down from the start and plane 0 loses half of
/// the data packets. Retirements must not empty plane 0, the only usable one: the
/// "last active EV" guard used to count plane 1's EVs as a way out, and sending then
/// waited for probes (3.8 ms with 7-9 timeouts, against 1.7 ms for the same loss on a
/// one-plane connection).
#[test]
fn the_only_usable_plane_keeps_an_active_ev() {
    for seed in 1..=3u64 {
        let mut c = cfg();
        c.evs.active = 4;
        c.evs.backup_per_plane = 1;
        let s = MrcSender::new(util::info2(0, 1), c, Time::ZERO, Rng::new(seed));
        let rcfg = responder_cfg(Some(Dur::from_us(20)));
        let r = SprayResponder::new(util::info2(1, 0), rcfg, Rng::new(seed + 9));
        let mut p = Pair::with_ports(AnyEndpoint::Mrc(s), AnyEndpoint::Spray(r), 2, None, Dur::from_us(2));
        p.port_state(1, 1, false);
        p.post(Message { seq: 0, len: 3000 * 4096, va: 0, rkey: 1 });
        let mut rng = Rng::new(seed * 77);
        p.link.fate = Box::new(move |side, pkt: &mut Packet, _| {
            (side == 0 && (pkt.net.src_port == 1 || (pkt.is_data() && rng.chance(0.5))), false)
        });
        p.run(Time::ZERO + Dur::from_ms(200));
        let acked = p.acked_times();
        println!("seed {seed}: acked at {acked:?}, {} timeouts", p.ep(0).stats().timeouts);
        assert!(acked[0] < Time::ZERO + Dur::from_ms(2), "seed {seed}: acked at {}", acked[0]);
    }
}

/// Every active EV of the plane dies at once while its backups work (ECMP hashed them
/// all into a switch that then went down: two EVs over two spines, one seed in four).
/// Nothing sent after the failure is acknowledged, so no timeout shows which paths
/// lost their packets and none is retired: the sender resent one packet per timeout,
/// round the dead active EVs, for ever (a 256 KB flow on a 2x2 leaf-spine with
/// `spine[0]` down stalled with 14 timeouts and no retirement). From the second
/// silent timeout in a row, once every active EV has gone unanswered, the resend tries
/// a path outside the rotation. Messages of fewer packets than active EVs too: their
/// live packets never cover the rotation, the timer's own resends must count.
#[test]
fn a_plane_whose_active_evs_all_die_finds_a_working_path() {
    for (active, packets) in [(2, 1), (2, 2), (4, 1), (4, 3), (4, 4), (4, 32)] {
        for seed in 1..=4 {
            let mut c = cfg();
            c.evs.active = active;
            c.evs.backup_per_plane = 2;
            let mut p = pair_with(seed, c);
            p.post(Message { seq: 0, len: 8 * 4096, va: 0, rkey: 1 });
            p.run(Time::ZERO + Dur::from_us(100));
            assert_eq!(p.acked().len(), 1);
            let start = p.now();
            let dead = mrc(&p).evs().active(0);
            let d = dead.clone();
            p.link.fate =
                Box::new(move |side, pkt: &mut Packet, _| (side == 0 && d.contains(&pkt.net.entropy()), false));
            p.post(Message { seq: 1, len: packets * 4096, va: 0, rkey: 1 });
            p.run(start + Dur::from_ms(20));
            let case = format!("{active} active EVs, {packets} packets, seed {seed}");
            assert_eq!(p.acked().len(), 2, "{case}: the second message completes");
            let took = acked_at_nth(&p, 1) - start;
            // Timeouts at 50, 150 us (then one resend outside the rotation), ...; with
            // one packet per active EV or fewer, one more timeout can pass before the
            // resends have covered the rotation.
            assert!(took < Dur::from_us(800), "{case}: the second message took {took}");
            let retired = log(&mut p).iter().filter(|l| dead.contains(&l.ev) && l.state == EvState::Retired).count();
            if packets > u64::from(active) {
                assert!(retired > 0, "{case}: dead EVs are retired");
            }
        }
    }
}
