//! MPRDMA on a point-to-point wire: delivery under loss, window reaction to ECN.

mod util;

use fabricsim_engine::{Dur, Rate, Rng, Time};
use fabricsim_transport::common::{SprayResponder, SprayResponderConfig};
use fabricsim_transport::mprdma::{MprdmaConfig, MprdmaSender};
use fabricsim_transport::{AnyEndpoint, Endpoint, Message};
use proptest::prelude::*;
use util::{info, Pair};

fn cfg() -> MprdmaConfig {
    MprdmaConfig { paths: 64, init_cwnd: 16, delta: 64, window: 128, explore: 0.01, min_rto: Dur::from_us(50) }
}

fn pair(seed: u64) -> Pair {
    let s = MprdmaSender::new(info(0, 1), cfg(), Rng::new(seed));
    let rcfg =
        SprayResponderConfig { window: 128, nack_beyond: true, nack_trimmed: false, sack: false, reverse_probe: None };
    let r = SprayResponder::new(info(1, 0), rcfg, Rng::new(seed + 1));
    Pair::new(AnyEndpoint::Mprdma(s), AnyEndpoint::Spray(r), Rate::gbps(100), Dur::from_us(2))
}

fn cwnd(p: &Pair) -> f64 {
    match &p.eps[0] {
        AnyEndpoint::Mprdma(m) => m.cwnd(),
        _ => unreachable!(),
    }
}

#[test]
fn an_unmarked_flow_grows_its_window_and_completes() {
    let mut p = pair(1);
    p.post(Message { seq: 0, len: 2_000_000, va: 0, rkey: 1 });
    p.run(Time::MAX);
    assert_eq!(p.received().len(), 1);
    assert_eq!(p.eps[1].stats().bytes_placed, 2_000_000);
    assert!(cwnd(&p) > 16.0, "cwnd {}", cwnd(&p));
    // Every path used is counted.
    let sent: u64 = p.eps[0].path_stats().iter().map(|s| s.packets).sum();
    assert_eq!(sent, p.eps[0].stats().data_sent);
}

#[test]
fn ecn_marks_shrink_the_window_by_half_a_packet_each() {
    let mut p = pair(2);
    // Mark every data packet: each ACK takes half a packet off the window.
    p.fate = Box::new(|side, _, _| (false, side == 0));
    p.post(Message { seq: 0, len: 400_000, va: 0, rkey: 1 });
    p.run(Time::MAX);
    assert_eq!(p.received().len(), 1);
    assert!(cwnd(&p) <= 2.0, "cwnd {}", cwnd(&p));
    assert!(p.eps[0].path_stats().iter().map(|s| s.ecn_marks).sum::<u64>() > 50);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(30))]
    #[test]
    fn every_byte_arrives_once_under_loss(seed in 0u64..100_000, loss in 0.0f64..0.05, len in 1u64..3_000_000) {
        let mut p = pair(seed).lossy(loss, seed ^ 77);
        p.post(Message { seq: 0, len, va: 0, rkey: 1 });
        p.post(Message { seq: 1, len: 5000, va: 0, rkey: 1 });
        p.run(Time(Dur::from_ms(500).ps()));
        prop_assert_eq!(p.received().len(), 2, "seed {} loss {}", seed, loss);
        prop_assert_eq!(p.eps[1].stats().bytes_placed, len + 5000);
        prop_assert_eq!(p.acked().len(), 2);
    }
}
