//! A device held beyond each batch's runtime call (`host.device_hold_ms`):
//! scenarios without it simulate exactly as before it existed (golden
//! figures), a hold of zero changes nothing, and a hold lengthens each
//! request by its draw and keeps the device busy meanwhile, holding no core.

mod common;

use lanes_sim::config::{Dist, Scenario};
use lanes_sim::simulate;

use common::{
    assert_golden, assert_idle_busy, assert_mg1, cost, figures, golden_cases, mode, ocr,
    single_server, GOLDEN,
};

/// Every golden case: (scenario, mode, load, seed).
fn cases() -> Vec<(&'static str, Scenario, &'static str, f64)> {
    golden_cases()
}

#[test]
#[ignore = "prints the golden figures of `without_a_hold_nothing_changes`"]
fn print_golden() {
    common::print_golden(&cases());
}

#[test]
fn without_a_hold_nothing_changes() {
    // Figures of these runs before `device_hold_ms` existed (commit 53c4800).
    assert_golden(&cases(), GOLDEN);
}

#[test]
fn a_hold_of_zero_changes_nothing() {
    for (name, mut sc, m, load) in cases() {
        let before = simulate(&sc, &mode(m), load, 7, 20_000).unwrap();
        sc.host.device_hold_ms = vec![(0.0, 0.0), (0.5, 0.0), (1.0, 0.0)];
        let after = simulate(&sc, &mode(m), load, 7, 20_000).unwrap();
        assert_eq!(figures(&after), figures(&before), "{name} {m}");
    }
}

/// `E[X]` and `E[X²]` of the quantile function through `points` (uniform
/// between points), ms.
fn moments(points: &[(f64, f64)]) -> (f64, f64) {
    points.windows(2).fold((0.0, 0.0), |(m1, m2), w| {
        let ((p0, a), (p1, b)) = (w[0], w[1]);
        let p = p1 - p0;
        (
            m1 + p * (a + b) / 2.0,
            m2 + p * (a * a + a * b + b * b) / 3.0,
        )
    })
}

#[test]
fn a_held_device_serves_as_if_each_batch_were_longer() {
    // One device, batches of one of 1 ms, no CPU work, each batch holding
    // the device beyond its call for a draw of the table: an M/G/1 queue of
    // service 1 ms + hold, whose mean response Pollaczek-Khinchine gives;
    // the device is busy for the holds too.
    let table = [(0.0, 0.0), (0.5, 0.2), (0.9, 1.0), (1.0, 3.0)];
    let (h1, h2) = moments(&table);
    for (policy, load) in [("fifo", 0.3), ("fifo", 0.6), ("sjf", 0.6)] {
        let mut sc = single_server(cost(Dist::Constant, 1.0, 0.0));
        sc.host.device_hold_ms = table.to_vec();
        let r = simulate(&sc, &mode(policy), load, 5, 400_000).unwrap();
        let lambda = load; // per ms: load 1.0 is one 1 ms batch per ms
        let (s1, s2) = (1.0 + h1, 1.0 + 2.0 * h1 + h2);
        assert_mg1(&r, lambda, s1, s2, &format!("{policy} {load}"));
    }
}

#[test]
fn a_hold_holds_no_core() {
    // The device is the one core (shared, time-sliced): a hold keeps the
    // device busy but leaves the core idle, so the core is busy only for
    // the calls while the device is busy for calls and holds.
    let mut sc = single_server(cost(Dist::Constant, 1.0, 0.0));
    sc.host.shared_cores = true;
    sc.host.time_slicing = true;
    sc.host.device_hold_ms = vec![(0.0, 0.5), (1.0, 0.5)];
    let r = simulate(&sc, &mode("fifo"), 0.4, 5, 200_000).unwrap();
    assert_idle_busy(&r, 0.6, 0.6);
    // A lone request's latency is its call plus its hold.
    let lone = simulate(&sc, &mode("fifo"), 0.001, 5, 2_000).unwrap();
    assert!(
        (lone.latency_ms.p50 - 1.5).abs() < 0.01,
        "p50 {}",
        lone.latency_ms.p50
    );
}

#[test]
fn a_bad_hold_table_is_refused() {
    for table in [
        vec![(0.0, 0.1)],
        vec![(0.0, 0.2), (1.0, 0.1)],
        vec![(0.2, 0.1), (1.0, 0.2)],
    ] {
        let mut sc = ocr();
        sc.host.device_hold_ms = table.clone();
        let err = simulate(&sc, &mode("fifo"), 0.5, 1, 1_000).unwrap_err();
        assert_eq!(err.code(), "scenario_invalid", "{table:?}");
        assert!(err.to_string().contains("host.device_hold_ms"), "{err}");
    }
}
