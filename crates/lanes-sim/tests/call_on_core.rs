//! Runtime calls on their core only part of their wall time
//! (`host.call_on_core`): scenarios without it simulate exactly as before
//! it existed (golden figures); a lone call takes `1 / call_on_core` of its
//! cost, in every mode, crowded or not; near the knee it costs far less
//! than giving the calls their wall time as cost (the cores hand what a
//! call is off its core to the other phases); bad values are refused.

mod common;

use lanes_sim::config::SimError;
use lanes_sim::simulate;

use common::{assert_golden, cpu_like, golden_cases, mode, GOLDEN};

#[test]
fn without_it_nothing_changes() {
    assert_golden(&golden_cases(), GOLDEN);
}

#[test]
fn a_lone_call_takes_its_cost_over_its_share() {
    // Light load: calls hardly meet anything on the cores, so each request
    // is longer by about (1 / 0.8 - 1) = 25 % of its own call.
    let sc = cpu_like();
    let total: f64 = sc.services.iter().map(|s| s.share).sum();
    let call_ms: f64 = sc
        .services
        .iter()
        .map(|s| s.share / total * s.gpu.mean_ms)
        .sum();
    for m in ["fifo", "independent"] {
        let base = simulate(&sc, &mode(m), 0.05, 3, 20_000).unwrap();
        let mut off = cpu_like();
        off.host.call_on_core = 0.8;
        let got = simulate(&off, &mode(m), 0.05, 3, 20_000).unwrap();
        let added = (got.latency_ms.mean - base.latency_ms.mean) / call_ms;
        assert!((0.2..0.32).contains(&added), "{m}: {added} of a call added");
    }
}

#[test]
fn near_the_knee_it_costs_less_than_wall_time_as_cost() {
    // The same wall time for a lone call two ways: cost c on its core 80 %
    // of the time, or cost c / 0.8 on its core all the time. The second
    // asks the cores for 25 % more work. Load counts device time, so the
    // same rate is load x 1.25 of the second.
    let mut on_core = cpu_like();
    on_core.host.call_on_core = 0.8;
    let mut wall = cpu_like();
    for s in &mut wall.services {
        s.gpu.mean_ms /= 0.8;
        for p in &mut s.batching.batch_ms {
            p.1 /= 0.8;
        }
    }
    for m in ["fifo", "independent"] {
        let a = simulate(&on_core, &mode(m), 0.7, 3, 20_000).unwrap();
        let b = simulate(&wall, &mode(m), 0.7 / 0.8, 3, 20_000).unwrap();
        let rate = a.offered_rps / b.offered_rps - 1.0;
        assert!(rate.abs() < 1e-6, "{m}: offered rates differ by {rate}");
        assert!(
            a.latency_ms.p99 < 0.9 * b.latency_ms.p99,
            "{m}: p99 {} with call_on_core, {} with wall time as cost",
            a.latency_ms.p99,
            b.latency_ms.p99
        );
    }
}

#[test]
fn it_composes_with_a_weighted_stretch() {
    let mut sc = cpu_like();
    sc.host.call_stretch = vec![1.0, 1.3];
    sc.host.call_stretch_weighted = true;
    let stretched = simulate(&sc, &mode("independent"), 0.5, 3, 20_000).unwrap();
    sc.host.call_on_core = 0.8;
    let both = simulate(&sc, &mode("independent"), 0.5, 3, 20_000).unwrap();
    assert!(both.latency_ms.mean > stretched.latency_ms.mean);
}

#[test]
fn bad_values_are_refused() {
    let with = |f: &dyn Fn(&mut lanes_sim::Scenario)| {
        let mut sc = cpu_like();
        sc.host.call_on_core = 0.8;
        f(&mut sc);
        sc
    };
    let cases = [
        with(&|sc| sc.host.call_on_core = 0.0),
        with(&|sc| sc.host.call_on_core = 1.2),
        with(&|sc| sc.host.call_on_core = f64::NAN),
        with(&|sc| sc.host.shared_cores = false),
        with(&|sc| sc.host.slice_ms = 4.0),
        with(&|sc| sc.host.run_queues = true),
        with(&|sc| sc.host.call_stretch = vec![1.0, 1.2]),
    ];
    for sc in cases {
        let err = simulate(&sc, &mode("fifo"), 0.5, 1, 1_000).unwrap_err();
        assert!(
            matches!(&err, SimError::InvalidScenario { key, .. } if key == "host.call_on_core"),
            "{err:?}"
        );
    }
}
