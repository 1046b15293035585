//! The runtime calls' wall time and cost (`call_ms`, `call_cost_ms`): a call
//! that never shares takes its cost; one that shares the cores takes longer;
//! with a lag among the calls, the short model's calls wait less per ms of
//! cost under `independent`, against the long model's as well (the
//! seventeenth calibration round's reading of the lab).

mod common;

use lanes_sim::config::{Cost, Dist};
use lanes_sim::simulate;

use common::{cpu_like, mode, single_server};

/// Waited per ms of cost: `call / cost - 1`.
fn waited(call_ms: f64, cost_ms: f64) -> f64 {
    call_ms / cost_ms - 1.0
}

#[test]
fn a_call_that_never_shares_takes_its_cost() {
    let sc = single_server(Cost {
        dist: Dist::Exponential,
        mean_ms: 4.0,
        cv: 0.0,
    });
    let r = simulate(&sc, &mode("fifo"), 0.7, 1, 20_000).unwrap();
    let s = &r.services["only"];
    assert!(
        s.call_cost_ms > 3.5 && s.call_cost_ms < 4.5,
        "{}",
        s.call_cost_ms
    );
    assert!(
        (s.call_ms - s.call_cost_ms).abs() < 1e-6,
        "{} vs {}",
        s.call_ms,
        s.call_cost_ms
    );
    assert_eq!((r.call_ms, r.call_cost_ms), (s.call_ms, s.call_cost_ms));
}

#[test]
fn calls_on_shared_cores_take_longer_with_load() {
    let light = simulate(&cpu_like(), &mode("independent"), 0.1, 3, 20_000).unwrap();
    let heavy = simulate(&cpu_like(), &mode("independent"), 0.7, 3, 20_000).unwrap();
    let (l, h) = (
        waited(light.call_ms, light.call_cost_ms),
        waited(heavy.call_ms, heavy.call_cost_ms),
    );
    assert!(l >= 0.0 && h > l + 0.05, "light {l}, heavy {h}");
}

#[test]
fn among_calls_the_short_model_waits_less_per_ms() {
    let per_ms = |r: &lanes_sim::PointResult, s: &str| {
        waited(r.services[s].call_ms, r.services[s].call_cost_ms)
    };
    let load = 0.7;
    let base = simulate(&cpu_like(), &mode("independent"), load, 3, 40_000).unwrap();
    let mut sc = cpu_like();
    sc.host.lag_ms = 0.2;
    sc.host.lag_among_calls = true;
    let got = simulate(&sc, &mode("independent"), load, 3, 40_000).unwrap();
    // The short model's calls wait less per ms, absolutely and against the
    // long model's (here 1.66 -> 1.33 ms per ms, rnn_zh's 1.09 -> 1.12).
    let (b_cnn, b_zh) = (per_ms(&base, "cnn"), per_ms(&base, "rnn_zh"));
    let (cnn, zh) = (per_ms(&got, "cnn"), per_ms(&got, "rnn_zh"));
    assert!(cnn < 0.9 * b_cnn, "cnn {b_cnn} -> {cnn}");
    assert!(
        cnn / zh < 0.85 * (b_cnn / b_zh),
        "cnn / rnn_zh {} -> {}",
        b_cnn / b_zh,
        cnn / zh
    );
}
