//! Batching in the simulator: the serving state forms batches as `lanes
//! serve` does, and a batch costs what the service's curve says.

mod common;

use lanes_sim::config::{BatchingSpec, Dist};
use lanes_sim::simulate;

use common::{cost, mode, single_server};

fn batching(max: u32, timeout_us: u64, threads: Option<u32>, curve: &[(u32, f64)]) -> BatchingSpec {
    BatchingSpec {
        max_batch_size: max,
        batch_timeout_micros: timeout_us,
        num_batch_threads: threads,
        batch_ms: curve.to_vec(),
    }
}

#[test]
fn cost_curve_factor_table() {
    // (curve points after (1, 10 ms), n, factor = curve(n) / 10 ms)
    type Case<'a> = (&'a [(u32, f64)], u32, f64);
    let cases: [Case; 7] = [
        (&[], 1, 1.0),
        (&[], 4, 4.0),                      // no points: no gain from batching
        (&[(16, 40.0)], 16, 4.0),           // a point
        (&[(16, 40.0)], 6, 2.0),            // between (1, 10) and (16, 40)
        (&[(16, 40.0)], 31, 7.0),           // extrapolated from the last two
        (&[(4, 20.0), (8, 20.0)], 12, 2.0), // flat stays flat
        (&[(4, 20.0), (8, 30.0)], 6, 2.5),
    ];
    for (curve, n, want) in cases {
        let got = batching(64, 0, None, curve).factor(10.0, n);
        assert!(
            (got - want).abs() < 1e-9,
            "{curve:?} n {n}: {got} != {want}"
        );
    }
}

#[test]
fn batching_lifts_capacity_past_serial_load() {
    // One GPU, 10 ms per item alone, 16 items in 20 ms. At load 3 (three times
    // what batches of one can carry) batches of up to 16 keep up; without
    // batching the queue grows without bound.
    let mut sc = single_server(cost(Dist::Constant, 10.0, 0.0));
    sc.services[0].batching = batching(16, 0, None, &[(16, 20.0)]);
    let batched = simulate(&sc, &mode("fifo"), 3.0, 1, 20_000).unwrap();
    sc.services[0].batching = batching(1, 0, None, &[]);
    let serial = simulate(&sc, &mode("fifo"), 3.0, 1, 20_000).unwrap();
    let ratio = |p: &lanes_sim::PointResult| p.throughput_rps / p.offered_rps;
    assert!(ratio(&batched) > 0.97, "batched keeps up: {batched:?}");
    assert!(ratio(&serial) < 0.4, "serial cannot: {}", ratio(&serial));
    assert!(batched.latency_ms.p99 < 100.0, "{:?}", batched.latency_ms);
    assert!(batched.mean_batch_size > 2.0, "{}", batched.mean_batch_size);
    assert!((serial.mean_batch_size - 1.0).abs() < 1e-9);
}

#[test]
fn batch_timeout_delays_a_lone_request_by_the_timeout() {
    // At a very low load every request is alone: eager batching answers in the
    // GPU time (10 ms), a 5 ms timeout holds each one 5 ms longer.
    let mut sc = single_server(cost(Dist::Constant, 10.0, 0.0));
    for (timeout_us, want_ms) in [(0, 10.0), (5_000, 15.0)] {
        sc.services[0].batching = batching(8, timeout_us, None, &[(8, 20.0)]);
        let p = simulate(&sc, &mode("fifo"), 0.001, 1, 2_000).unwrap();
        assert!(
            (p.latency_ms.p50 - want_ms).abs() < 0.1,
            "timeout {timeout_us} us: p50 {}",
            p.latency_ms.p50
        );
    }
}

#[test]
fn num_batch_threads_limits_a_service_to_its_batches_in_flight() {
    // Two GPUs, one service at load 0.75 (1.5 GPUs' worth) without batching:
    // with one batch in flight at a time it can use only one GPU.
    let mut sc = single_server(cost(Dist::Constant, 10.0, 0.0));
    sc.host.gpus = 2;
    for (threads, min_ratio, max_ratio) in [(None, 0.97, 1.01), (Some(1), 0.0, 0.7)] {
        sc.services[0].batching = batching(1, 0, threads, &[]);
        let p = simulate(&sc, &mode("fifo"), 0.75, 1, 20_000).unwrap();
        let ratio = p.throughput_rps / p.offered_rps;
        assert!(
            (min_ratio..=max_ratio).contains(&ratio),
            "threads {threads:?}: throughput/offered {ratio}"
        );
    }
}

#[test]
fn bad_batching_is_refused_naming_the_key() {
    let mut sc = single_server(cost(Dist::Constant, 10.0, 0.0));
    let cases = [
        (batching(0, 0, None, &[]), "batching.max_batch_size"),
        (batching(8, 0, Some(0), &[]), "batching.num_batch_threads"),
        (batching(8, 0, None, &[(1, 12.0)]), "batching.batch_ms"),
        (batching(8, 0, None, &[(4, 5.0)]), "batching.batch_ms"), // below batch-of-one
        (
            batching(8, 20_000_000, None, &[]),
            "batching.batch_timeout_micros",
        ),
    ];
    for (b, key) in cases {
        sc.services[0].batching = b;
        let e = simulate(&sc, &mode("fifo"), 0.5, 1, 1_000).unwrap_err();
        assert_eq!(e.code(), "scenario_invalid");
        assert!(e.to_string().contains(key), "{e}");
    }
}
