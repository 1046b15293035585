//! A neighbour's cores over a run (`host.busy_run_cores`): drawn once per
//! run and added to `busy_cores`. A distribution that is one value is that
//! many more `busy_cores`, figure for figure; a rare neighbour leaves most
//! runs as they were and slows the few it lands on; bad points are refused.

mod common;

use lanes_sim::config::SimError;
use lanes_sim::simulate;

use common::{cpu_like, figures, mode};

#[test]
fn one_value_is_that_many_more_busy_cores() {
    let mut more = cpu_like();
    more.host.busy_cores += 0.3;
    let mut drawn = cpu_like();
    drawn.host.busy_run_cores = vec![(0.0, 0.3), (1.0, 0.3)];
    for m in ["fifo", "sjf", "independent"] {
        for seed in [1, 2] {
            let a = simulate(&more, &mode(m), 0.6, seed, 10_000).unwrap();
            let b = simulate(&drawn, &mode(m), 0.6, seed, 10_000).unwrap();
            assert_eq!(figures(&a), figures(&b), "{m}, seed {seed}");
            assert_eq!(a.cpu_idle, b.cpu_idle, "{m}, seed {seed}");
        }
    }
}

#[test]
fn a_rare_neighbour_slows_only_the_runs_it_lands_on() {
    // One run in five has a neighbour's 0.6 cores; the others none.
    let mut sc = cpu_like();
    sc.host.busy_run_cores = vec![(0.0, 0.0), (0.8, 0.0), (0.8001, 0.6), (1.0, 0.6)];
    let steady = cpu_like();
    let (mut same, mut slower) = (0, 0);
    for seed in 0..30 {
        let a = simulate(&steady, &mode("fifo"), 0.7, seed, 6_000).unwrap();
        let b = simulate(&sc, &mode("fifo"), 0.7, seed, 6_000).unwrap();
        if figures(&a) == figures(&b) {
            same += 1;
        } else {
            assert!(
                b.cpu_idle < a.cpu_idle - 0.1 && b.latency_ms.p99 > a.latency_ms.p99,
                "seed {seed}: idle {} against {}, p99 {} against {}",
                b.cpu_idle,
                a.cpu_idle,
                b.latency_ms.p99,
                a.latency_ms.p99
            );
            slower += 1;
        }
    }
    assert!(
        same >= 15 && slower >= 2,
        "{same} runs as before, {slower} slower"
    );
}

#[test]
fn bad_points_are_refused() {
    for points in [
        vec![(0.0, 0.1)],
        vec![(0.1, 0.0), (1.0, 0.1)],
        vec![(0.0, 0.2), (1.0, 0.1)],
        vec![(0.0, -0.1), (1.0, 0.1)],
        vec![(0.0, 0.0), (1.0, f64::NAN)],
        // busy_cores (0.1) plus the last point reaches the 2 cores.
        vec![(0.0, 0.0), (1.0, 1.9)],
    ] {
        let mut sc = cpu_like();
        sc.host.busy_run_cores = points.clone();
        let err = simulate(&sc, &mode("fifo"), 0.5, 1, 1_000).unwrap_err();
        assert!(
            matches!(&err, SimError::InvalidScenario { key, .. } if key == "host.busy_run_cores"),
            "{points:?}: {err}"
        );
    }
}
