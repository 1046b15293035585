//! A thread's lag (`host.lag_ms`): scenarios without it simulate exactly as
//! before it existed (golden figures); at light load, where calls hardly
//! meet, it changes next to nothing; near the knee under `independent` the
//! short model's calls run ahead and the long models' absorb the wait, where
//! processor sharing slows all alike; bad values are refused. Among calls
//! (`host.lag_among_calls`) one executor per core (`fifo`, `sjf`) simulates
//! as without a lag (to a nanosecond's rounding), and under `independent`
//! the short calls run ahead.

mod common;

use lanes_sim::config::SimError;
use lanes_sim::simulate;

use common::{assert_golden, cpu_like, figures, golden_cases, mode, GOLDEN};

#[test]
fn without_it_nothing_changes() {
    assert_golden(&golden_cases(), GOLDEN);
}

#[test]
fn at_light_load_it_changes_next_to_nothing() {
    let base = simulate(&cpu_like(), &mode("independent"), 0.05, 3, 20_000).unwrap();
    let mut sc = cpu_like();
    sc.host.lag_ms = 1.0;
    let got = simulate(&sc, &mode("independent"), 0.05, 3, 20_000).unwrap();
    let moved = got.latency_ms.mean / base.latency_ms.mean - 1.0;
    assert!(moved.abs() < 0.02, "the mean moved by {moved}");
}

#[test]
fn short_calls_run_ahead_and_long_ones_absorb_the_wait() {
    // cpu_like: cnn's calls 0.5 ms, rnn_zh's 2.5 ms, a lag of 1 ms.
    let load = 0.6;
    let base = simulate(&cpu_like(), &mode("independent"), load, 3, 40_000).unwrap();
    let mut sc = cpu_like();
    sc.host.lag_ms = 1.0;
    let got = simulate(&sc, &mode("independent"), load, 3, 40_000).unwrap();
    let mean = |r: &lanes_sim::PointResult, s: &str| r.services[s].latency_ms.mean;
    let (cnn, zh) = (
        mean(&got, "cnn") / mean(&base, "cnn"),
        mean(&got, "rnn_zh") / mean(&base, "rnn_zh"),
    );
    assert!(cnn < 0.95, "cnn's mean x{cnn}");
    assert!(zh > 1.02, "rnn_zh's mean x{zh}");
}

#[test]
fn bad_values_are_refused() {
    let with = |f: &dyn Fn(&mut lanes_sim::Scenario)| {
        let mut sc = cpu_like();
        sc.host.lag_ms = 1.0;
        f(&mut sc);
        sc
    };
    let cases = [
        with(&|sc| sc.host.lag_ms = -1.0),
        with(&|sc| sc.host.lag_ms = f64::INFINITY),
        with(&|sc| sc.host.shared_cores = false),
        with(&|sc| sc.host.slice_ms = 4.0),
        with(&|sc| sc.host.run_queues = true),
        with(&|sc| sc.host.call_stretch = vec![1.0, 1.2]),
        with(&|sc| sc.host.call_on_core = 0.8),
    ];
    for sc in cases {
        let err = simulate(&sc, &mode("fifo"), 0.5, 1, 1_000).unwrap_err();
        assert!(
            matches!(&err, SimError::InvalidScenario { key, .. } if key == "host.lag_ms"),
            "{err:?}"
        );
    }
}

#[test]
fn among_calls_one_executor_per_core_is_unchanged() {
    // cpu_like: 2 devices on 2 cores, so fifo and sjf never run more calls
    // than cores.
    for policy in ["fifo", "sjf"] {
        let base = simulate(&cpu_like(), &mode(policy), 0.7, 3, 20_000).unwrap();
        let mut sc = cpu_like();
        sc.host.lag_ms = 1.0;
        sc.host.lag_among_calls = true;
        let got = simulate(&sc, &mode(policy), 0.7, 3, 20_000).unwrap();
        // The calls keep clocks of their own, so an end may round to
        // another nanosecond: the figures agree to a millionth.
        let (g, b) = (figures(&got), figures(&base));
        assert_eq!((g.0, g.1), (b.0, b.1), "{policy}: counts");
        for (x, y) in [(g.2, b.2), (g.3, b.3), (g.4, b.4), (g.5, b.5)] {
            assert!((x - y).abs() <= 1e-6 * y.abs(), "{policy}: {g:?} vs {b:?}");
        }
    }
}

#[test]
fn among_calls_short_calls_run_ahead_under_independent() {
    let load = 0.6;
    let base = simulate(&cpu_like(), &mode("independent"), load, 3, 40_000).unwrap();
    let mut sc = cpu_like();
    sc.host.lag_ms = 1.0;
    sc.host.lag_among_calls = true;
    let got = simulate(&sc, &mode("independent"), load, 3, 40_000).unwrap();
    let mean = |r: &lanes_sim::PointResult, s: &str| r.services[s].latency_ms.mean;
    let (cnn, zh) = (
        mean(&got, "cnn") / mean(&base, "cnn"),
        mean(&got, "rnn_zh") / mean(&base, "rnn_zh"),
    );
    assert!(cnn < 0.97, "cnn's mean x{cnn}");
    assert!(zh > 1.01, "rnn_zh's mean x{zh}");
}

#[test]
fn among_calls_needs_a_lag() {
    let mut sc = cpu_like();
    sc.host.lag_among_calls = true;
    let err = simulate(&sc, &mode("independent"), 0.5, 1, 1_000).unwrap_err();
    assert!(
        matches!(&err, SimError::InvalidScenario { key, .. } if key == "host.lag_among_calls"),
        "{err:?}"
    );
}
