//! A hold onto busy cores (`host.device_hold_busy_ms`): scenarios without
//! it simulate exactly as before it existed (golden figures); it applies
//! only when the runtimes outnumber the cores (a table of cases); a batch
//! dispatched while no call runs never finds its core busy; and a bad table
//! is refused.

mod common;

use lanes_sim::config::{Scenario, SimError};
use lanes_sim::simulate;

use common::{assert_golden, cpu_like, figures, golden_cases, mode, GOLDEN};

/// A constant busy hold of `ms`.
fn constant(ms: f64) -> Vec<(f64, f64)> {
    vec![(0.0, ms), (1.0, ms)]
}

#[test]
#[ignore = "prints the golden figures of `without_it_nothing_changes`"]
fn print_golden() {
    common::print_golden(&golden_cases());
}

#[test]
fn without_it_nothing_changes() {
    // Figures of these runs before `device_hold_busy_ms` existed (the
    // figures of commit 53c4800, unchanged since).
    assert_golden(&golden_cases(), GOLDEN);
}

#[test]
fn it_applies_only_when_the_runtimes_outnumber_the_cores() {
    // `cpu_like`: 2 devices, 2 cores, 3 services. Each case: a change to the
    // scenario, the mode, and whether a busy hold of 2 ms changes the run.
    type Case = (&'static str, fn(&mut Scenario), &'static str, bool);
    let cases: &[Case] = &[
        // 2 runtimes (one per device) on 2 cores: each keeps its own core.
        ("as is", |_| {}, "fifo", false),
        ("as is", |_| {}, "sjf", false),
        // One runtime per service per device: more than 2.
        ("as is", |_| {}, "independent", true),
        // As many cores as runtimes.
        (
            "a core per runtime",
            |sc| {
                let per_gpu: u32 = sc.services.iter().map(|s| s.workers_per_gpu).sum();
                sc.host.cpu_cores = sc.host.gpus * per_gpu as usize;
            },
            "independent",
            false,
        ),
        // 2 jobs per device: 4 runtimes on 2 cores.
        ("capacity 2", |sc| sc.host.gpu_capacity = 2, "fifo", true),
        // `lanes`' fast slot: 2 per device.
        ("as is", |_| {}, "lanes", true),
        // `limit:2`: 2 jobs per device.
        ("as is", |_| {}, "limit:2", true),
    ];
    for &(what, change, m, changes) in cases {
        let mut sc = cpu_like();
        change(&mut sc);
        let before = simulate(&sc, &mode(m), 0.5, 7, 20_000).unwrap();
        sc.host.device_hold_busy_ms = constant(2.0);
        let after = simulate(&sc, &mode(m), 0.5, 7, 20_000).unwrap();
        assert_eq!(
            figures(&after) != figures(&before),
            changes,
            "{what} {m}: {:?} -> {:?}",
            figures(&before),
            figures(&after)
        );
        if changes {
            // The holds lengthen requests: the mean grows, by less than
            // the 2 ms every batch would add if every core were busy.
            let added = after.latency_ms.mean - before.latency_ms.mean;
            assert!(added > 0.0 && added < 2.0, "{what} {m}: {added}");
        }
    }
}

#[test]
fn a_batch_dispatched_beside_no_call_never_waits() {
    // At a very light load a batch hardly ever starts while another call
    // runs: a busy hold of 50 ms leaves the median alone and adds to the
    // mean only the rare overlaps' share.
    let mut sc = cpu_like();
    let before = simulate(&sc, &mode("independent"), 0.001, 3, 20_000).unwrap();
    sc.host.device_hold_busy_ms = constant(50.0);
    let after = simulate(&sc, &mode("independent"), 0.001, 3, 20_000).unwrap();
    assert!(
        (after.latency_ms.p50 / before.latency_ms.p50 - 1.0).abs() < 0.005,
        "p50 {} -> {}",
        before.latency_ms.p50,
        after.latency_ms.p50
    );
    let added = after.latency_ms.mean - before.latency_ms.mean;
    assert!((0.0..0.2).contains(&added), "mean + {added}");
}

#[test]
fn a_bad_table_is_refused() {
    let falling = vec![(0.0, 0.2), (0.5, 0.1), (1.0, 4.0)];
    let mut sc = cpu_like();
    sc.host.device_hold_busy_ms = falling;
    let mut unsliced = cpu_like();
    unsliced.host.time_slicing = false;
    unsliced.host.device_hold_busy_ms = constant(1.0);
    let mut unshared = cpu_like();
    unshared.host.shared_cores = false;
    unshared.host.device_hold_busy_ms = constant(1.0);
    for sc in [sc, unsliced, unshared] {
        let err = simulate(&sc, &mode("independent"), 0.5, 1, 1_000).unwrap_err();
        assert!(
            matches!(&err, SimError::InvalidScenario { key, .. } if key == "host.device_hold_busy_ms"),
            "{err:?}"
        );
    }
}
