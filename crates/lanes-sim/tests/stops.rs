//! The hypervisor's stops (`host.stop_ms`): a core taken away whole now
//! and then. Rare long stops lengthen the short service's tail where the
//! same share of the cores spread evenly (`busy_cores`) does not; a run's
//! rate drawn from one value is that rate, figure for figure; bad keys are
//! refused.

mod common;

use lanes_sim::config::SimError;
use lanes_sim::simulate;

use common::{cpu_like, figures, mode};

/// `cpu_like` with stops of `ms` at `per_s` a core.
fn stopping(ms: f64, per_s: f64) -> lanes_sim::config::Scenario {
    let mut sc = cpu_like();
    sc.host.stop_ms = vec![(0.0, ms), (1.0, ms)];
    sc.host.stops_per_s = per_s;
    sc
}

#[test]
fn long_stops_lengthen_the_tail_that_an_even_share_leaves() {
    // 3 % of each core: 20 ms stops 1.5 times a second, or 0.06 more cores
    // of background slices. An even share moves the short service's p99 by
    // a few percent, the stops by half again or more (about a stop's
    // length: the 1-2 % of its requests that meet one).
    let stops = stopping(20.0, 1.5);
    let mut even = cpu_like();
    even.host.busy_cores += 0.06;
    let base = cpu_like();
    for m in ["fifo", "sjf"] {
        let (mut s99, mut e99, mut b99) = (0.0, 0.0, 0.0);
        for seed in 1..=4 {
            let s = simulate(&stops, &mode(m), 0.5, seed, 40_000).unwrap();
            let e = simulate(&even, &mode(m), 0.5, seed, 40_000).unwrap();
            let b = simulate(&base, &mode(m), 0.5, seed, 40_000).unwrap();
            s99 += s.services["cnn"].latency_ms.p99 / 4.0;
            e99 += e.services["cnn"].latency_ms.p99 / 4.0;
            b99 += b.services["cnn"].latency_ms.p99 / 4.0;
        }
        println!("{m}: cnn p99 {b99:.2} ms, even share {e99:.2}, stops {s99:.2}");
        assert!(
            e99 < b99 * 1.15,
            "{m}: an even share moved the p99 {b99} -> {e99}"
        );
        assert!(
            s99 > e99 * 1.5,
            "{m}: the stops left the p99 at {s99} (even share {e99})"
        );
    }
}

#[test]
fn a_run_rate_of_one_value_is_that_much_more_stops_per_s() {
    let more = stopping(5.0, 3.0);
    let mut drawn = stopping(5.0, 1.0);
    drawn.host.stop_run_per_s = vec![(0.0, 2.0), (1.0, 2.0)];
    for m in ["fifo", "independent"] {
        for seed in [1, 2] {
            let a = simulate(&more, &mode(m), 0.6, seed, 10_000).unwrap();
            let b = simulate(&drawn, &mode(m), 0.6, seed, 10_000).unwrap();
            assert_eq!(figures(&a), figures(&b), "{m}, seed {seed}");
        }
    }
}

#[test]
fn the_same_seed_stops_the_same_way() {
    let sc = stopping(8.0, 2.0);
    let a = simulate(&sc, &mode("sjf"), 0.7, 3, 10_000).unwrap();
    let b = simulate(&sc, &mode("sjf"), 0.7, 3, 10_000).unwrap();
    assert_eq!(figures(&a), figures(&b));
    let c = simulate(&cpu_like(), &mode("sjf"), 0.7, 3, 10_000).unwrap();
    assert_ne!(figures(&a), figures(&c));
}

#[test]
fn bad_keys_are_refused() {
    let refused = |sc: &lanes_sim::config::Scenario, key: &str| {
        let err = simulate(sc, &mode("fifo"), 0.5, 1, 1_000).unwrap_err();
        assert!(
            matches!(&err, SimError::InvalidScenario { key: k, .. } if k == key),
            "{key}: {err}"
        );
    };
    let mut sc = stopping(5.0, 0.0);
    refused(&sc, "host.stops_per_s");
    sc.host.stop_ms.clear();
    sc.host.stops_per_s = 1.0;
    refused(&sc, "host.stops_per_s");
    for points in [
        vec![(0.0, 1.0)],
        vec![(0.0, 2.0), (1.0, 1.0)],
        vec![(0.0, 0.0), (1.0, 0.0)],
    ] {
        let mut sc = stopping(5.0, 1.0);
        sc.host.stop_ms = points;
        refused(&sc, "host.stop_ms");
    }
    let mut sc = stopping(5.0, 1.0);
    sc.host.time_slicing = false;
    refused(&sc, "host.stop_ms");
    let mut sc = stopping(5.0, 1.0);
    sc.host.lag_ms = 0.5;
    refused(&sc, "host.stop_ms");
    let mut sc = cpu_like();
    sc.host.stop_run_per_s = vec![(0.0, 1.0), (1.0, 1.0)];
    refused(&sc, "host.stop_run_per_s");
}
