//! STELLAR on a point-to-point wire: RTO recovery on another path, delivery under loss.

mod util;

use fabricsim_engine::{Dur, Rate, Rng, Time};
use fabricsim_transport::common::{SprayResponder, SprayResponderConfig};
use fabricsim_transport::stellar::{PathAlgo, StellarConfig, StellarSender, WindowCcConfig};
use fabricsim_transport::{AnyEndpoint, Endpoint, Message};
use fabricsim_wire::Packet;
use proptest::prelude::*;
use std::cell::RefCell;
use std::rc::Rc;
use util::{info, Pair};

fn pair(algo: PathAlgo, seed: u64) -> Pair {
    let cc = WindowCcConfig {
        g: 1.0 / 16.0,
        beta: 0.5,
        target: Dur::from_us(15),
        init: 60_000.0,
        max: 90_000.0,
        mtu: 4096.0,
    };
    let cfg =
        StellarConfig { paths: 128, algo, rto: Dur::from_us(250), base_rtt: Dur::from_us(5), window: 1 << 12, cc };
    let s = StellarSender::new(info(0, 1), cfg, Rng::new(seed));
    let rcfg = SprayResponderConfig {
        window: 1 << 12,
        nack_beyond: false,
        nack_trimmed: false,
        sack: false,
        reverse_probe: None,
    };
    let r = SprayResponder::new(info(1, 0), rcfg, Rng::new(seed + 1));
    Pair::new(AnyEndpoint::Stellar(s), AnyEndpoint::Spray(r), Rate::gbps(100), Dur::from_us(2))
}

#[test]
fn a_lost_packet_is_resent_after_the_rto_on_another_path() {
    let mut p = pair(PathAlgo::Single, 1);
    let seen: Rc<RefCell<Vec<(u32, u32)>>> = Rc::new(RefCell::new(Vec::new()));
    let s = seen.clone();
    p.link.fate = Box::new(move |side, pkt: &mut Packet, _| {
        if side != 0 || !pkt.is_data() {
            return (false, false);
        }
        let first_time = !s.borrow().iter().any(|&(psn, _)| psn == pkt.bth.psn);
        s.borrow_mut().push((pkt.bth.psn, pkt.ext.ev));
        (pkt.bth.psn == 7 && first_time, false)
    });
    p.post(Message { seq: 0, len: 40 * 4096, va: 0, rkey: 1 });
    p.run(Time::MAX);
    let (_, t) = p.received()[0];
    assert!(t >= Time(Dur::from_us(250).ps()), "recovered by the 250 us RTO, not earlier: {t}");
    let sends: Vec<u32> = seen.borrow().iter().filter(|s| s.0 == 7).map(|s| s.1).collect();
    assert_eq!(sends.len(), 2);
    assert_ne!(sends[0], sends[1], "resent on a different path even with the single-path algorithm");
}

#[test]
fn spraying_uses_many_paths_and_single_uses_one() {
    for (algo, min, max) in [(PathAlgo::Obs, 100, 128), (PathAlgo::Rr, 128, 128), (PathAlgo::Single, 1, 1)] {
        let mut p = pair(algo, 2);
        p.post(Message { seq: 0, len: 1000 * 4096, va: 0, rkey: 1 });
        p.run(Time::MAX);
        let used = p.ep(0).path_stats().len();
        assert!((min..=max).contains(&used), "{algo:?} used {used} paths");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn every_byte_arrives_once_under_loss(seed in 0u64..100_000, loss in 0.0f64..0.05, len in 1u64..1_000_000, a in 0usize..6) {
        let mut p = pair(PathAlgo::ALL[a], seed).lossy(loss, seed ^ 3);
        p.post(Message { seq: 0, len, va: 0, rkey: 1 });
        p.post(Message { seq: 1, len: 100, va: 0, rkey: 1 });
        p.run(Time(Dur::from_ms(500).ps()));
        prop_assert_eq!(p.received().len(), 2, "seed {} loss {} {:?}", seed, loss, PathAlgo::ALL[a]);
        prop_assert_eq!(p.ep(1).stats().bytes_placed, len + 100);
    }
}
