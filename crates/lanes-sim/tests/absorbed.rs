//! The preemptions' waits net of the shared cores' (`host.call_preempt_absorbed`,
//! the nineteenth calibration round): a call waits the larger of its drawn
//! preemption waits and the wait the shared cores gave it, not their sum.
//! With idle cores the two placements wait alike (the waits then show in the
//! call's own time); on crowded cores the absorbed waits hold the devices
//! less; and the key is refused without the preemptions or the shared cores
//! it nets them against.

mod common;

use lanes_sim::config::SimError;
use lanes_sim::{simulate, PointResult, Scenario};

use common::{cpu_like, mode};

/// Every preemption waits exactly `wait_ms`, `per_ms` of them per ms of cost.
fn preempted(per_ms: f64, wait_ms: f64, absorbed: bool) -> Scenario {
    let mut sc = cpu_like();
    sc.host.call_preempt_per_ms = per_ms;
    sc.host.call_preempt_ms = vec![(0.0, wait_ms), (1.0, wait_ms)];
    sc.host.call_preempt_absorbed = absorbed;
    sc
}

/// The calls' wait per ms of their cost (`call_ms / call_cost_ms - 1`).
fn waited(r: &PointResult) -> f64 {
    r.call_ms / r.call_cost_ms - 1.0
}

#[test]
fn on_idle_cores_the_call_waits_its_preemptions() {
    // 0.5 preemptions per ms of 0.4 ms each: 0.2 ms per ms of cost.
    let (per_ms, wait) = (0.5, 0.4);
    let load = 0.02;
    let before = simulate(
        &preempted(per_ms, wait, false),
        &mode("fifo"),
        load,
        3,
        20_000,
    )
    .unwrap();
    let after = simulate(
        &preempted(per_ms, wait, true),
        &mode("fifo"),
        load,
        3,
        20_000,
    )
    .unwrap();
    // Held before the call, the waits are not the call's; held after it, for
    // all they exceed the cores' (next to nothing here), they are.
    assert!(waited(&before) < 0.02, "before: {}", waited(&before));
    let got = waited(&after);
    assert!((got - per_ms * wait).abs() < 0.03, "after: {got}");
    // Either way the requests wait as long: the devices are held as long.
    let (b, a) = (before.latency_ms.mean, after.latency_ms.mean);
    assert!((a / b - 1.0).abs() < 0.02, "mean latency {b} -> {a}");
}

#[test]
fn on_crowded_cores_the_waits_count_once() {
    let (per_ms, wait) = (0.5, 0.4);
    let load = 0.7;
    let sum = simulate(
        &preempted(per_ms, wait, false),
        &mode("independent"),
        load,
        3,
        20_000,
    )
    .unwrap();
    let max = simulate(
        &preempted(per_ms, wait, true),
        &mode("independent"),
        load,
        3,
        20_000,
    )
    .unwrap();
    let none = simulate(&cpu_like(), &mode("independent"), load, 3, 20_000).unwrap();
    // Summed, the preemptions come on top of the cores' wait: the calls' own
    // time is the cores' alone and the devices are held beyond it.
    // Absorbed, the calls wait at least the cores' wait and at least the
    // preemptions, and less than the two together.
    let cores = waited(&sum);
    let got = waited(&max);
    assert!(
        cores > per_ms * wait,
        "the cores' wait {cores} should exceed the waits drawn"
    );
    assert!(
        got >= cores - 0.05 && got < cores + per_ms * wait - 0.05,
        "{cores} -> {got}"
    );
    assert!(
        max.gpu_busy < sum.gpu_busy,
        "busy {} -> {}",
        sum.gpu_busy,
        max.gpu_busy
    );
    assert!(
        max.gpu_busy > none.gpu_busy,
        "busy without {} / absorbed {}",
        none.gpu_busy,
        max.gpu_busy
    );
}

#[test]
fn absorbed_needs_preemptions_on_shared_sliced_cores() {
    let mut without = cpu_like();
    without.host.call_preempt_absorbed = true;
    let mut unshared = preempted(0.5, 0.4, true);
    unshared.host.shared_cores = false;
    unshared.host.time_slicing = false;
    for sc in [without, unshared] {
        let err = simulate(&sc, &mode("fifo"), 0.5, 1, 1_000).unwrap_err();
        assert!(
            matches!(&err, SimError::InvalidScenario { key, .. } if key == "host.call_preempt_absorbed"),
            "{err}"
        );
    }
}
