//! Time-sliced cores (`host.time_slicing`) and thread wake-ups
//! (`host.handoff_ms`): with shared cores, batches overlapping on one core
//! form an M/G/1 processor-sharing queue (mean `S / (1 − ρ)` whatever the
//! cost's spread) where first come, first served makes short phases wait for
//! long ones; each request's pre and post start after one wake-up, constant
//! or exponential.

mod common;

use lanes_sim::config::{Dist, Interpreter};
use lanes_sim::{simulate, Scenario, SimError};

use common::{cost, mode, single_server};

/// One core that is also the one device; batches of one of cost `gpu`,
/// as many overlapping as arrive (`independent`, 200 workers).
fn one_shared_core(gpu: (Dist, f64), slicing: bool) -> Scenario {
    let mut sc = single_server(cost(gpu.0, 1.0, gpu.1));
    sc.host.shared_cores = true;
    sc.host.time_slicing = slicing;
    sc.services[0].workers_per_gpu = 200;
    sc
}

#[test]
fn time_sliced_cores_are_processor_sharing() {
    // Service 1 ms, load 0.5: processor sharing gives S / (1 − ρ) = 2 ms
    // whatever the cost's spread, and the device and cores are half busy.
    for gpu in [
        (Dist::Constant, 0.0),
        (Dist::Lognormal, 0.5),
        (Dist::Lognormal, 1.5),
    ] {
        let sc = one_shared_core(gpu, true);
        let r = simulate(&sc, &mode("independent"), 0.5, 3, 400_000).unwrap();
        let err = r.latency_ms.mean / 2.0 - 1.0;
        assert!(err.abs() < 0.03, "{gpu:?}: mean {}", r.latency_ms.mean);
        assert!(
            (r.gpu_busy - 0.5).abs() < 0.02,
            "{gpu:?}: device busy {}",
            r.gpu_busy
        );
        assert!(
            (r.cpu_idle - 0.5).abs() < 0.02,
            "{gpu:?}: cores idle {}",
            r.cpu_idle
        );
    }
}

#[test]
fn first_come_first_served_cores_order_by_arrival_instead() {
    // The same host with a queue for the core: equal batches do better than
    // under sharing (at least M/D/1's 1.5 ms, the empty pre and post waiting
    // behind batches too), spread ones worse (a long batch holds up short
    // ones: at least M/G/1's 2.625 ms at cv 1.5).
    let cases = [
        ((Dist::Constant, 0.0), 1.5, 2.0),
        ((Dist::Lognormal, 1.5), 2.625, 4.0),
    ];
    for (gpu, low, high) in cases {
        let r = simulate(
            &one_shared_core(gpu, false),
            &mode("independent"),
            0.5,
            3,
            100_000,
        );
        let mean = r.unwrap().latency_ms.mean;
        assert!(low < mean && mean < high, "{gpu:?}: mean {mean}");
    }
}

#[test]
fn each_request_phase_starts_after_a_wake_up() {
    // pre 1 ms, device 1 ms, post 0: a lone request takes 2 ms + 2 wake-ups.
    for (handoff_ms, p50) in [(0.0, 2.0), (0.25, 2.5), (0.5, 3.0)] {
        for slicing in [false, true] {
            let mut sc = single_server(cost(Dist::Constant, 1.0, 0.0));
            sc.services[0].pre = cost(Dist::Constant, 1.0, 0.0);
            sc.host.handoff_ms = handoff_ms;
            sc.host.time_slicing = slicing;
            let r = simulate(&sc, &mode("fifo"), 0.01, 1, 5_000).unwrap();
            let got = r.latency_ms.p50;
            assert!(
                (got - p50).abs() < 0.01,
                "handoff {handoff_ms}, slicing {slicing}: {got}"
            );
        }
    }
}

#[test]
fn exponential_wake_ups_keep_the_mean_and_spread_the_latency() {
    // pre 0, device 1 ms, post 0, wake-ups of mean 0.5 ms: a lone request
    // takes 1 ms + two wake-ups. Constant: 2 ms every time. Exponential: the
    // same 2 ms mean, the sum of two exponentials: median 1 + 0.5 x 1.678,
    // p99 1 + 0.5 x 6.638 (Gamma(2) quantiles).
    let cases = [
        (Dist::Constant, 2.0, 2.0, 2.0),
        (Dist::Exponential, 2.0, 1.839, 4.319),
    ];
    for (dist, mean, p50, p99) in cases {
        let mut sc = single_server(cost(Dist::Constant, 1.0, 0.0));
        sc.host.handoff_ms = 0.5;
        sc.host.handoff_dist = dist;
        let r = simulate(&sc, &mode("fifo"), 0.002, 1, 100_000).unwrap();
        let l = r.latency_ms;
        let near = |got: f64, want: f64| (got / want - 1.0).abs() < 0.03;
        assert!(near(l.mean, mean) && near(l.p50, p50), "{dist:?}: {l:?}");
        assert!(near(l.p99, p99), "{dist:?}: p99 {}", l.p99);
    }
}

#[test]
fn a_bad_handoff_is_refused_with_the_key() {
    let mut negative = single_server(cost(Dist::Constant, 1.0, 0.0));
    negative.host.handoff_ms = -1.0;
    let mut both = single_server(cost(Dist::Constant, 1.0, 0.0));
    both.host.handoff_ms = 0.5;
    both.host.interpreter = Some(Interpreter {
        batch_ms: 0.0,
        handoff_ms: 0.5,
        convoy_ms: 0.0,
    });
    let mut lognormal = single_server(cost(Dist::Constant, 1.0, 0.0));
    lognormal.host.handoff_dist = Dist::Lognormal;
    let cases = [
        (negative, "host.handoff_ms"),
        (both, "host.handoff_ms"),
        (lognormal, "host.handoff_dist"),
    ];
    for (sc, want) in cases {
        let err = simulate(&sc, &mode("fifo"), 0.5, 1, 1_000).unwrap_err();
        assert!(
            matches!(&err, SimError::InvalidScenario { key, .. } if key == want),
            "{err}"
        );
    }
}

/// One shared core, `independent` with as many batches as arrive: a long
/// service (10 ms batches, 4 % of requests) and a short one (0.1 ms).
fn long_and_short(slice_ms: f64) -> Scenario {
    let mut sc = one_shared_core((Dist::Constant, 0.0), true);
    sc.host.slice_ms = slice_ms;
    let mut short = sc.services[0].clone();
    short.name = "short".into();
    short.share = 0.96;
    short.gpu = cost(Dist::Constant, 0.1, 0.0);
    sc.services[0].name = "long".into();
    sc.services[0].share = 0.04;
    sc.services[0].gpu = cost(Dist::Constant, 10.0, 0.0);
    sc.services.push(short);
    sc
}

#[test]
fn in_slices_short_phases_run_at_once_and_long_ones_absorb_them() {
    // Load 0.15 of the core (the scenario's rate is set by the mean cost,
    // 0.496 ms): the long batches keep it about 0.12 busy, the short ones
    // 0.03. Processor sharing is M/G/1-PS: a short batch takes 0.1 / (1 -
    // 0.15) = 0.118 ms on average; in slices of 4 ms it preempts the long
    // one and takes 0.1 ms plus the short ones that preempt it in turn
    // (about 0.1 x 1.03). A long batch absorbs the short ones' work (at
    // least 10 x 1.03 ms on average).
    let means = |slice_ms: f64| {
        let r = simulate(
            &long_and_short(slice_ms),
            &mode("independent"),
            0.15,
            1,
            200_000,
        );
        let r = r.unwrap();
        (
            r.services["short"].latency_ms.mean,
            r.services["long"].latency_ms.mean,
        )
    };
    let (shared, _) = means(0.0);
    let (sliced, sliced_long) = means(4.0);
    assert!(shared > 0.112, "processor sharing: short mean {shared}");
    assert!(sliced < 0.105, "slices: short mean {sliced}");
    assert!(sliced_long > 10.3, "slices: long mean {sliced_long}");
}

#[test]
fn slices_need_time_slicing() {
    let mut sc = single_server(cost(Dist::Constant, 1.0, 0.0));
    sc.host.slice_ms = 4.0;
    let err = simulate(&sc, &mode("fifo"), 0.5, 1, 1_000).unwrap_err();
    assert!(
        matches!(&err, SimError::InvalidScenario { key, .. } if key == "host.slice_ms"),
        "{err}"
    );
}
