//! A host whose speed varies over time (`host.speed_cv`, `host.speed_ms`):
//! scenarios without it simulate exactly as before it existed (golden
//! figures); with it the mean cost is kept, so a light load's throughput
//! does not move, while slow spells lengthen the tails more the longer they
//! last and the more the load; bad keys are refused. A measured series
//! (`host.speed_series`) of ones is the steady host exactly, and a slow
//! spell in it lengthens the tail where a steady host of the same mean
//! speed does not. A run's own speed (`host.speed_run_cv`) spreads the runs
//! of one cell: near the knee their mean p99 rises, at light load the mean
//! throughput holds. Spells that deepen with load (`host.speed_cv_busy`)
//! are the steady-depth process when both cvs agree, leave a light load's
//! tail near the idle depth's and lengthen a heavy load's towards the busy
//! depth's.

mod common;

use lanes_sim::config::SimError;
use lanes_sim::simulate;

use common::{assert_golden, cpu_like, golden_cases, mode, GOLDEN};

fn run(cv: f64, ms: f64, m: &str, load: f64) -> lanes_sim::PointResult {
    let mut sc = cpu_like();
    sc.host.speed_cv = cv;
    sc.host.speed_ms = ms;
    simulate(&sc, &mode(m), load, 5, 30_000).unwrap()
}

#[test]
fn without_it_nothing_changes() {
    assert_golden(&golden_cases(), GOLDEN);
}

#[test]
fn slow_spells_lengthen_the_tail_not_the_throughput() {
    for m in ["fifo", "independent"] {
        let steady = run(0.0, 0.0, m, 0.7);
        let varying = run(0.15, 100.0, m, 0.7);
        let tput = varying.throughput_rps / steady.throughput_rps - 1.0;
        assert!(tput.abs() < 0.02, "{m}: throughput moved {tput}");
        assert!(
            varying.latency_ms.p99 > 1.05 * steady.latency_ms.p99,
            "{m}: p99 {} against steady {}",
            varying.latency_ms.p99,
            steady.latency_ms.p99
        );
    }
}

#[test]
fn longer_spells_and_more_load_lengthen_the_tail_more() {
    // Spells far shorter than a request's wait average out; long ones build
    // queues.
    let short = run(0.15, 0.05, "fifo", 0.7).latency_ms.p99;
    let long = run(0.15, 200.0, "fifo", 0.7).latency_ms.p99;
    assert!(
        long > short,
        "p99 with 200 ms spells {long}, 0.05 ms {short}"
    );
    let rel = |load: f64| {
        run(0.15, 100.0, "fifo", load).latency_ms.p99 / run(0.0, 0.0, "fifo", load).latency_ms.p99
    };
    let (light, heavy) = (rel(0.3), rel(0.8));
    assert!(
        heavy > light,
        "p99 ratio at load 0.8 {heavy}, at 0.3 {light}"
    );
}

#[test]
fn bad_keys_are_refused() {
    for (cv, ms, sliced) in [
        (0.1, 0.0, true),
        (0.0, 10.0, true),
        (-0.1, 10.0, true),
        (f64::NAN, 10.0, true),
        (0.1, f64::INFINITY, true),
        (0.1, 10.0, false),
    ] {
        let mut sc = cpu_like();
        sc.host.speed_cv = cv;
        sc.host.speed_ms = ms;
        sc.host.time_slicing = sliced;
        let err = simulate(&sc, &mode("fifo"), 0.5, 1, 1_000).unwrap_err();
        assert!(
            matches!(&err, SimError::InvalidScenario { key, .. } if key == "host.speed_cv"),
            "cv {cv}, ms {ms}, sliced {sliced}: {err}"
        );
    }
}

fn run_series(series: &[f64], bin_ms: f64, load: f64) -> lanes_sim::PointResult {
    let mut sc = cpu_like();
    sc.host.speed_series = series.to_vec();
    sc.host.speed_series_ms = bin_ms;
    simulate(&sc, &mode("fifo"), load, 3, 20_000).unwrap()
}

#[test]
fn a_series_of_ones_is_the_steady_host() {
    let steady = simulate(&cpu_like(), &mode("fifo"), 0.7, 3, 20_000).unwrap();
    for (series, bin_ms) in [(vec![1.0; 7], 250.0), (vec![1.0], 3.0)] {
        let ones = run_series(&series, bin_ms, 0.7);
        assert_eq!(ones.latency_ms.p50, steady.latency_ms.p50);
        assert_eq!(ones.latency_ms.p99, steady.latency_ms.p99);
        assert_eq!(ones.throughput_rps, steady.throughput_rps);
    }
}

#[test]
fn a_slow_spell_in_the_series_lengthens_the_tail() {
    // One bin in ten 1.6x slow, the rest as fast as keeps the mean at 1:
    // the spell builds a queue the steady host never has.
    let mut spelly = vec![(10.0 - 1.6) / 9.0; 10];
    spelly[3] = 1.6;
    let steady = run_series(&[1.0], 500.0, 0.7).latency_ms.p99;
    let spell = run_series(&spelly, 500.0, 0.7).latency_ms.p99;
    assert!(
        spell > 1.2 * steady,
        "p99 with a spell {spell}, steady {steady}"
    );
}

#[test]
fn bad_series_are_refused() {
    for (series, ms, cv, sliced) in [
        (vec![1.0], 0.0, 0.0, true),
        (vec![], 10.0, 0.0, true),
        (vec![1.0, 0.0], 10.0, 0.0, true),
        (vec![1.0, f64::NAN], 10.0, 0.0, true),
        (vec![1.0], -1.0, 0.0, true),
        (vec![1.0], 10.0, 0.0, false),
    ] {
        let mut sc = cpu_like();
        sc.host.speed_series = series.clone();
        sc.host.speed_series_ms = ms;
        sc.host.speed_cv = cv;
        sc.host.time_slicing = sliced;
        let err = simulate(&sc, &mode("fifo"), 0.5, 1, 1_000).unwrap_err();
        assert!(
            matches!(&err, SimError::InvalidScenario { key, .. } if key == "host.speed_series"),
            "series {series:?}, ms {ms}, sliced {sliced}: {err}"
        );
    }
    // With speed_cv the drawn process is asked for as well: one process only.
    let mut sc = cpu_like();
    sc.host.speed_series = vec![1.0];
    sc.host.speed_series_ms = 10.0;
    sc.host.speed_cv = 0.1;
    sc.host.speed_ms = 10.0;
    let err = simulate(&sc, &mode("fifo"), 0.5, 1, 1_000).unwrap_err();
    assert!(
        matches!(&err, SimError::InvalidScenario { key, .. } if key == "host.speed_series"),
        "{err}"
    );
}

fn run_own(run_cv: f64, load: f64, seeds: usize) -> Vec<lanes_sim::PointResult> {
    (0..seeds as u64)
        .map(|seed| {
            let mut sc = cpu_like();
            sc.host.speed_cv = 0.05;
            sc.host.speed_ms = 50.0;
            sc.host.speed_run_cv = run_cv;
            simulate(&sc, &mode("fifo"), load, seed, 8_000).unwrap()
        })
        .collect()
}

#[test]
fn a_runs_own_speed_spreads_the_runs_of_one_cell() {
    // Runs of one cell (seeds) at a load near the knee: with a factor of
    // their own their mean latencies spread far more than the epochs alone
    // spread them, while light load's mean throughput holds.
    let spread = |rs: &[lanes_sim::PointResult]| {
        let logs: Vec<f64> = rs.iter().map(|r| r.latency_ms.mean.ln()).collect();
        let m = logs.iter().sum::<f64>() / logs.len() as f64;
        (logs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (logs.len() - 1) as f64).sqrt()
    };
    let (steady, own) = (run_own(0.0, 0.8, 24), run_own(0.08, 0.8, 24));
    assert!(
        spread(&own) > 1.5 * spread(&steady),
        "runs' spread {} against {}",
        spread(&own),
        spread(&steady)
    );
    let tput = |rs: &[lanes_sim::PointResult]| {
        rs.iter().map(|r| r.throughput_rps).sum::<f64>() / rs.len() as f64
    };
    let moved = tput(&run_own(0.08, 0.3, 8)) / tput(&run_own(0.0, 0.3, 8)) - 1.0;
    assert!(moved.abs() < 0.02, "light load's throughput moved {moved}");
}

#[test]
fn bad_run_speeds_are_refused() {
    for (run_cv, sliced, series) in [
        (-0.1, true, vec![]),
        (f64::NAN, true, vec![]),
        (f64::INFINITY, true, vec![]),
        (0.05, false, vec![]),
        (0.05, true, vec![1.0]),
    ] {
        let mut sc = cpu_like();
        sc.host.speed_run_cv = run_cv;
        sc.host.time_slicing = sliced;
        if !series.is_empty() {
            sc.host.speed_series = series;
            sc.host.speed_series_ms = 10.0;
        }
        let err = simulate(&sc, &mode("fifo"), 0.5, 1, 1_000).unwrap_err();
        assert!(
            matches!(&err, SimError::InvalidScenario { key, .. } if key == "host.speed_run_cv"),
            "run_cv {run_cv}, sliced {sliced}: {err}"
        );
    }
}

fn run_by_load(cv: f64, cv_busy: Option<f64>, load: f64) -> lanes_sim::PointResult {
    let mut sc = cpu_like();
    sc.host.speed_cv = cv;
    sc.host.speed_ms = 100.0;
    sc.host.speed_cv_busy = cv_busy;
    simulate(&sc, &mode("fifo"), load, 5, 30_000).unwrap()
}

#[test]
fn spells_deepen_with_load() {
    // Both cvs alike: the process without the key, to the last figure.
    let plain = run_by_load(0.15, None, 0.7);
    let same = run_by_load(0.15, Some(0.15), 0.7);
    assert_eq!(plain.latency_ms.p99, same.latency_ms.p99);
    assert_eq!(plain.latency_ms.p50, same.latency_ms.p50);
    // Idle 0.02, busy 0.3: at a light load near the shallow process, at a
    // heavy one past the process of the same cv everywhere that the light
    // load's utilisation would give.
    let p99 = |cv: f64, busy: Option<f64>, load: f64| run_by_load(cv, busy, load).latency_ms.p99;
    let (light, light_shallow) = (p99(0.02, Some(0.3), 0.2), p99(0.02, None, 0.2));
    let (heavy, heavy_shallow) = (p99(0.02, Some(0.3), 0.8), p99(0.02, None, 0.8));
    let light_rise = light / light_shallow - 1.0;
    let heavy_rise = heavy / heavy_shallow - 1.0;
    assert!(
        heavy_rise > 2.0 * light_rise.max(0.01),
        "p99 over the shallow process: +{:.1} % at load 0.8, +{:.1} % at 0.2",
        100.0 * heavy_rise,
        100.0 * light_rise
    );
}

#[test]
fn bad_busy_depths_are_refused() {
    for (cv, busy) in [
        (0.1, -0.1),
        (0.1, f64::NAN),
        (0.1, f64::INFINITY),
        (0.0, 0.2),
    ] {
        let mut sc = cpu_like();
        if cv > 0.0 {
            sc.host.speed_cv = cv;
            sc.host.speed_ms = 100.0;
        }
        sc.host.speed_cv_busy = Some(busy);
        let err = simulate(&sc, &mode("fifo"), 0.5, 1, 1_000).unwrap_err();
        assert!(
            matches!(&err, SimError::InvalidScenario { key, .. } if key == "host.speed_cv_busy"),
            "cv {cv}, busy {busy}: {err}"
        );
    }
    for (busy, exponent) in [(Some(0.2), 0.0), (Some(0.2), f64::NAN), (None, 2.0)] {
        let mut sc = cpu_like();
        sc.host.speed_cv = 0.1;
        sc.host.speed_ms = 100.0;
        sc.host.speed_cv_busy = busy;
        sc.host.speed_busy_exponent = exponent;
        let err = simulate(&sc, &mode("fifo"), 0.5, 1, 1_000).unwrap_err();
        assert!(
            matches!(&err, SimError::InvalidScenario { key, .. } if key == "host.speed_busy_exponent"),
            "busy {busy:?}, exponent {exponent}: {err}"
        );
    }
}
