//! Measured wake-ups and the client's part (`host.pre_wake_ms`,
//! `host.post_wake_ms`, `host.client_ms`): scenarios without them simulate
//! as before (the golden figures of the other suites), a constant table
//! shifts every request by its value and changes nothing else, a random one
//! lengthens the mean by its mean and holds no core, and bad tables are
//! refused with the key named.

mod common;

use lanes_sim::config::Dist;
use lanes_sim::simulate;

use common::{assert_idle_busy, assert_refused, cost, mode, ocr, single_server, Edit};

fn constant(ms: f64) -> Vec<(f64, f64)> {
    vec![(0.0, ms), (1.0, ms)]
}

#[test]
fn constant_wakes_and_client_shift_every_request_and_nothing_else() {
    // Every request waits 0.5 ms before its pre and 0.3 before its post and
    // the client adds 0.2: the queue sees the same arrivals 0.5 ms later, so
    // each latency grows by exactly 1.0 ms.
    for (policy, load) in [("fifo", 0.3), ("sjf", 0.7), ("independent", 0.5)] {
        let sc = ocr();
        let before = simulate(&sc, &mode(policy), load, 3, 20_000).unwrap();
        let mut shifted = sc.clone();
        shifted.host.pre_wake_ms = constant(0.5);
        shifted.host.post_wake_ms = constant(0.3);
        shifted.host.client_ms = constant(0.2);
        let after = simulate(&shifted, &mode(policy), load, 3, 20_000).unwrap();
        assert_eq!(after.requests, before.requests, "{policy}");
        for (a, b, what) in [
            (after.latency_ms.p50, before.latency_ms.p50, "p50"),
            (after.latency_ms.p99, before.latency_ms.p99, "p99"),
            (after.latency_ms.mean, before.latency_ms.mean, "mean"),
        ] {
            // Within the latency histogram's resolution (3 significant digits).
            let tolerance = 0.01 + 0.002 * a;
            assert!(
                (a - b - 1.0).abs() < tolerance,
                "{policy} {what}: {a} vs {b} + 1"
            );
        }
    }
}

#[test]
fn a_random_wake_adds_its_mean_and_holds_no_core() {
    // One device of 1 ms batches of one; each request first waits a draw of
    // a constant 0.4 ms or, half the time, 2 ms (mean 1.2, no core held).
    // The queue then sees Poisson arrivals delayed by independent draws —
    // still Poisson — so it stays the M/G/1 of the device, plus the mean
    // wake; the client's 0..1 ms uniform part adds its mean 0.5 too.
    let mut sc = single_server(cost(Dist::Constant, 1.0, 0.0));
    sc.host.pre_wake_ms = vec![(0.0, 0.4), (0.5, 0.4), (0.5000001, 2.0), (1.0, 2.0)];
    sc.host.client_ms = vec![(0.0, 0.0), (1.0, 1.0)];
    let load = 0.6;
    let r = simulate(&sc, &mode("fifo"), load, 5, 400_000).unwrap();
    // Pollaczek-Khinchine for 1 ms constant service, plus both means.
    let want = 1.0 + load / (2.0 * (1.0 - load)) + 1.2 + 0.5;
    let err = r.latency_ms.mean / want - 1.0;
    assert!(err.abs() < 0.03, "mean {} want {want}", r.latency_ms.mean);
    // No core is held (this host has no CPU work), the device busy 60 %.
    assert_idle_busy(&r, 1.0, load);
}

#[test]
fn bad_wake_tables_are_refused_naming_the_key() {
    let cases: [(&str, Edit); 4] = [
        ("host.pre_wake_ms", |sc| {
            sc.host.pre_wake_ms = vec![(0.0, 0.1)]
        }),
        ("host.post_wake_ms", |sc| {
            sc.host.post_wake_ms = vec![(0.0, 0.2), (1.0, 0.1)]
        }),
        ("host.client_ms", |sc| {
            sc.host.client_ms = vec![(0.1, 0.1), (1.0, 0.2)]
        }),
        // A measured wake-up replaces `handoff_ms`: not both.
        ("host.pre_wake_ms", |sc| {
            sc.host.handoff_ms = 0.3;
            sc.host.pre_wake_ms = constant(0.1);
        }),
    ];
    assert_refused("fifo", &cases);
}
