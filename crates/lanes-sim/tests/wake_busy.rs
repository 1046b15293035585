//! Wake-ups onto busy cores (`host.pre_wake_busy_ms`,
//! `host.post_wake_busy_ms`): a wake-up that begins while n runtime calls run
//! draws from the busy table with probability `min(1, n / cpu_cores)`. Without
//! the tables nothing changes; beside no call a wake-up never draws from
//! them, under every policy; with more cores the same calls make fewer
//! wake-ups busy; and a table without its idle one, or off shared
//! time-sliced cores, is refused with the key named.

mod common;

use lanes_sim::config::Scenario;
use lanes_sim::simulate;

use common::{cpu_like, figures, mode};

fn constant(ms: f64) -> Vec<(f64, f64)> {
    vec![(0.0, ms), (1.0, ms)]
}

/// `cpu_like` with measured idle wake-ups of 0.05 ms before pre and post.
fn measured() -> Scenario {
    let mut sc = cpu_like();
    sc.host.handoff_ms = 0.0;
    sc.host.pre_wake_ms = constant(0.05);
    sc.host.post_wake_ms = constant(0.05);
    sc
}

#[test]
fn empty_tables_change_nothing() {
    let sc = measured();
    for policy in ["fifo", "sjf", "independent"] {
        let before = simulate(&sc, &mode(policy), 0.5, 7, 20_000).unwrap();
        let mut with = sc.clone();
        with.host.pre_wake_busy_ms = Vec::new();
        with.host.post_wake_busy_ms = Vec::new();
        let after = simulate(&with, &mode(policy), 0.5, 7, 20_000).unwrap();
        assert_eq!(figures(&after), figures(&before), "{policy}");
    }
}

#[test]
fn beside_no_call_a_wake_up_is_never_busy() {
    // At a very light load a request almost never arrives while a call
    // runs: busy wake-ups of 50 ms leave the median alone under every policy
    // (unlike the busy hold, which needs more runtimes than cores).
    for policy in ["fifo", "sjf", "independent"] {
        let sc = measured();
        let before = simulate(&sc, &mode(policy), 0.001, 3, 20_000).unwrap();
        let mut busy = sc.clone();
        busy.host.pre_wake_busy_ms = constant(50.0);
        busy.host.post_wake_busy_ms = constant(50.0);
        let after = simulate(&busy, &mode(policy), 0.001, 3, 20_000).unwrap();
        assert!(
            (after.latency_ms.p50 / before.latency_ms.p50 - 1.0).abs() < 0.005,
            "{policy} p50 {} -> {}",
            before.latency_ms.p50,
            after.latency_ms.p50
        );
    }
}

#[test]
fn busy_cores_lengthen_wake_ups_and_more_cores_fewer_of_them() {
    // At load 0.5 calls often run: 2 ms busy wake-ups add to the mean under
    // every policy, less than the 4 ms of every wake-up busy; with 8 cores
    // the same calls find a core free more often (n / 8, not n / 2), so they
    // add about a quarter as much.
    for policy in ["fifo", "sjf", "independent"] {
        let added = |cores: usize| {
            let mut sc = measured();
            sc.host.cpu_cores = cores;
            let before = simulate(&sc, &mode(policy), 0.5, 7, 20_000).unwrap();
            sc.host.pre_wake_busy_ms = constant(2.0);
            sc.host.post_wake_busy_ms = constant(2.0);
            let after = simulate(&sc, &mode(policy), 0.5, 7, 20_000).unwrap();
            after.latency_ms.mean - before.latency_ms.mean
        };
        let (two, eight) = (added(2), added(8));
        assert!(two > 0.1 && two < 4.0, "{policy}: 2 cores + {two} ms");
        // n / 8 against n / 2: about a quarter (0.25-0.27 when written).
        let ratio = eight / two;
        assert!(
            (0.15..0.4).contains(&ratio),
            "{policy}: 8 cores + {eight} ms, 2 cores + {two} ms"
        );
    }
}

#[test]
fn a_busy_table_needs_its_idle_one_and_shared_time_sliced_cores() {
    type Edit = fn(&mut Scenario);
    let cases: [(&str, Edit); 5] = [
        ("host.pre_wake_busy_ms", |sc| {
            sc.host.pre_wake_busy_ms = vec![(0.0, 0.2), (1.0, 0.1)]
        }),
        ("host.post_wake_busy_ms", |sc| {
            sc.host.post_wake_ms = Vec::new();
            sc.host.post_wake_busy_ms = constant(1.0);
        }),
        ("host.pre_wake_busy_ms", |sc| {
            sc.host.time_slicing = false;
            sc.host.pre_wake_busy_ms = constant(1.0);
        }),
        ("host.post_wake_busy_ms", |sc| {
            sc.host.shared_cores = false;
            sc.host.post_wake_busy_ms = constant(1.0);
        }),
        ("host.pre_wake_busy_ms", |sc| {
            sc.host.pre_wake_busy_ms = vec![(0.1, 0.1), (1.0, 0.2)]
        }),
    ];
    for (key, edit) in cases {
        let mut sc = measured();
        edit(&mut sc);
        let err = simulate(&sc, &mode("fifo"), 0.5, 1, 1_000).unwrap_err();
        assert_eq!(err.code(), "scenario_invalid", "{key}");
        assert!(err.to_string().contains(key), "{key}: {err}");
    }
}
