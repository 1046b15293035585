//! Goodput is counted as a load generator counts it: the requests within
//! their SLO per second of the sending window (first to last measured
//! arrival), so past the knee it is the SLO attainment times the offered
//! rate, where per second of the whole measurement window (to the last
//! completion) the backlog's drain would dilute it; below the knee the two
//! windows agree.

mod common;

use lanes_sim::{simulate, PointResult};

use common::{mode, ocr};

fn run(m: &str, load: f64) -> PointResult {
    simulate(&ocr(), &mode(m), load, 5, 20_000).unwrap()
}

/// Requests within the SLO per second of the window to the last completion.
fn per_completion_window(r: &PointResult) -> f64 {
    let completed = (r.requests - r.dropped) as f64;
    let window_s = completed / r.throughput_rps;
    r.slo_attainment * r.requests as f64 / window_s
}

#[test]
fn past_the_knee_goodput_is_attainment_times_offer() {
    let r = run("independent", 2.0);
    let lab = r.slo_attainment * r.offered_rps;
    assert!(
        r.slo_attainment < 0.9,
        "past the knee: {}",
        r.slo_attainment
    );
    assert!(
        (r.goodput_rps / lab - 1.0).abs() < 0.02,
        "{} vs {lab}",
        r.goodput_rps
    );
    // The drain after the last arrival would have diluted it.
    assert!(per_completion_window(&r) < 0.95 * r.goodput_rps);
}

#[test]
fn below_the_knee_both_windows_agree() {
    for m in ["fifo", "sjf", "independent"] {
        let r = run(m, 0.5);
        assert!(r.slo_attainment > 0.99, "{m}");
        assert!(
            (r.goodput_rps / per_completion_window(&r) - 1.0).abs() < 0.005,
            "{m}"
        );
        assert!((r.goodput_rps / r.offered_rps - 1.0).abs() < 0.02, "{m}");
    }
}
