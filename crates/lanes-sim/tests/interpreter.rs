//! The host's interpreter lock (`host.interpreter`) and background CPU
//! (`host.busy_cores`): the lock serialises Python phases across devices, a
//! batch's Python work holds its device, background slices take their share
//! of the cores, and with both off (the default) nothing changes.

mod common;

use lanes_sim::config::{Dist, Interpreter};
use lanes_sim::{simulate, Scenario, SimError};

use common::{cost, mode, ocr, ocr_unbatched, single_server};

fn locked(sc: Scenario, batch_ms: f64) -> Scenario {
    handoff(sc, batch_ms, 0.0, 0.0)
}

fn handoff(mut sc: Scenario, batch_ms: f64, handoff_ms: f64, convoy_ms: f64) -> Scenario {
    sc.host.interpreter = Some(Interpreter {
        batch_ms,
        handoff_ms,
        convoy_ms,
    });
    sc
}

/// `gpus` GPUs, `cores` cores, one service with constant costs, no post.
fn constant(gpus: usize, cores: usize, pre_ms: f64, gpu_ms: f64) -> Scenario {
    let mut sc = single_server(cost(Dist::Constant, gpu_ms, 0.0));
    sc.host.gpus = gpus;
    sc.host.cpu_cores = cores;
    sc.services[0].pre = cost(Dist::Constant, pre_ms, 0.0);
    sc
}

#[track_caller]
fn assert_near(value: f64, expect: f64, tolerance: f64) {
    assert!(
        (value - expect).abs() <= tolerance,
        "{value} is not {expect} +- {tolerance}"
    );
}

#[test]
fn the_lock_serialises_python_phases_across_devices() {
    // Load 0.75 is 300 req/s: 1.2 cores of pre, well within 8 cores, but
    // 1.2 s of lock per second: with the lock only 1000 / 4 = 250 req/s pass.
    let cases = [(None, 300.0), (Some(0.0), 250.0)];
    for name in ["fifo", "independent"] {
        for (batch_ms, expect) in cases {
            let mut sc = constant(4, 8, 4.0, 10.0);
            if let Some(ms) = batch_ms {
                sc = locked(sc, ms);
            }
            let r = simulate(&sc, &mode(name), 0.75, 1, 40_000).unwrap();
            let err = (r.throughput_rps - expect).abs() / expect;
            assert!(err < 0.03, "{name} lock {batch_ms:?}: {}", r.throughput_rps);
        }
    }
}

#[test]
fn with_one_core_and_no_shared_cores_the_lock_changes_nothing() {
    // Every lock holder needs the one core anyway, and nothing else uses it.
    for base in [ocr(), ocr_unbatched()] {
        let mut sc = base;
        sc.host.cpu_cores = 1;
        for name in ["fifo", "sjf", "independent", "semaphore"] {
            let plain = simulate(&sc, &mode(name), 0.3, 5, 5_000).unwrap();
            let with_lock = simulate(&locked(sc.clone(), 0.0), &mode(name), 0.3, 5, 5_000);
            assert_eq!(plain, with_lock.unwrap(), "{name}");
        }
    }
}

#[test]
fn batch_python_work_holds_the_device() {
    // GPU 2 ms + 1 ms of Python per batch: a lone request takes 3 ms, and one
    // device passes at most 1000 / 3 req/s.
    let sc = locked(constant(1, 1, 0.0, 2.0), 1.0);
    let low = simulate(&sc, &mode("fifo"), 0.2, 2, 40_000).unwrap();
    assert_near(low.latency_ms.p50, 3.0, 0.01);
    let high = simulate(&sc, &mode("fifo"), 0.8, 2, 40_000).unwrap();
    assert_near(high.throughput_rps, 1000.0 / 3.0, 10.0);
}

#[test]
fn wake_ups_delay_a_lone_request_and_a_convoy_idles_the_lock() {
    // pre 1 ms, GPU 1 ms, post 0, wake-up 0.5 ms: a lone request takes
    // 0.5 + 1 + 1 + 0.5 + 0 = 3 ms (two wake-ups, the lock free). With a
    // convoy of 0.5 ms and the lock always contended each pre and post is
    // handed it, so it passes at most 1000 / (1 + 2 x 0.5) = 500 req/s (the 4
    // GPUs would pass 4,000).
    let sc = handoff(constant(4, 4, 1.0, 1.0), 0.0, 0.5, 0.5);
    let low = simulate(&sc, &mode("fifo"), 0.01, 4, 20_000).unwrap();
    assert_near(low.latency_ms.p50, 3.0, 0.01);
    let high = simulate(&sc, &mode("fifo"), 0.15, 4, 40_000).unwrap();
    assert_near(high.throughput_rps, 500.0, 15.0);
}

#[test]
fn busy_cores_take_their_share_of_the_cores() {
    // One core: requests use 0.3 of it (300 req/s x 1 ms of pre), the
    // background half of it; the rest is idle.
    for (busy, idle) in [(0.0, 0.7), (0.5, 0.2)] {
        let mut sc = constant(1, 1, 1.0, 1.0);
        sc.host.busy_cores = busy;
        let r = simulate(&sc, &mode("fifo"), 0.3, 3, 40_000).unwrap();
        assert_near(r.cpu_idle, idle, 0.02);
    }
}

#[test]
fn bad_values_are_refused_with_the_key() {
    let mut busy = constant(1, 1, 0.0, 1.0);
    busy.host.busy_cores = 1.0;
    let cases = [
        (busy, "host.busy_cores"),
        (
            handoff(constant(1, 1, 0.0, 1.0), -1.0, 0.0, 0.0),
            "host.interpreter.batch_ms",
        ),
        (
            handoff(constant(1, 1, 0.0, 1.0), 0.0, f64::NAN, 0.0),
            "host.interpreter.handoff_ms",
        ),
        (
            handoff(constant(1, 1, 0.0, 1.0), 0.0, 0.0, -1.0),
            "host.interpreter.convoy_ms",
        ),
    ];
    for (sc, key) in cases {
        let err = simulate(&sc, &mode("fifo"), 0.5, 1, 1_000).unwrap_err();
        assert!(
            matches!(&err, SimError::InvalidScenario { key: k, .. } if k == key),
            "{err}"
        );
        assert_eq!(err.code(), "scenario_invalid");
    }
}
