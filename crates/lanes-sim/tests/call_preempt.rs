//! A runtime call preempted off its core (`host.call_preempt_per_ms`,
//! `host.call_preempt_ms`): scenarios without it simulate exactly as before
//! it existed (golden figures), a rate or waits of zero change nothing, and
//! a batch holds its device for its call plus a Poisson count of waits per
//! ms of its cost (an M/G/1 queue of that service), holding no core.

mod common;

use lanes_sim::config::{Dist, Scenario};
use lanes_sim::simulate;

use common::{
    assert_golden, assert_idle_busy, assert_mg1, cost, cpu_like, figures, golden_cases, mode, ocr,
    single_server, Figures, GOLDEN,
};

/// Every golden case: (scenario, mode, load).
fn cases() -> Vec<(&'static str, Scenario, &'static str, f64)> {
    let mut held = cpu_like();
    held.host.device_hold_ms = vec![(0.0, 0.01), (0.5, 0.08), (0.99, 2.0), (1.0, 4.0)];
    let mut cases = golden_cases();
    cases.push(("cpu-like-held", held, "sjf", 0.5));
    cases
}

#[test]
#[ignore = "prints the golden figures of `without_preemptions_nothing_changes`"]
fn print_golden() {
    common::print_golden(&cases());
}

#[test]
fn without_preemptions_nothing_changes() {
    // Figures of these runs before `call_preempt_per_ms` existed (commit 64e5475;
    // the first six as before `device_hold_ms` too).
    let mut golden = GOLDEN.to_vec();
    golden.push(("cpu-like-held", "sjf", GOLDEN_HELD));
    assert_golden(&cases(), &golden);
}

#[test]
fn a_rate_or_waits_of_zero_change_nothing() {
    for (name, sc, m, load) in cases() {
        let before = simulate(&sc, &mode(m), load, 7, 20_000).unwrap();
        for (rate, table) in [
            (0.0, vec![(0.0, 1.0), (1.0, 2.0)]),
            (3.0, vec![(0.0, 0.0), (0.5, 0.0), (1.0, 0.0)]),
        ] {
            let mut sc = sc.clone();
            sc.host.call_preempt_per_ms = rate;
            sc.host.call_preempt_ms = table;
            let after = simulate(&sc, &mode(m), load, 7, 20_000).unwrap();
            assert_eq!(figures(&after), figures(&before), "{name} {m} rate {rate}");
        }
    }
}

#[test]
fn a_preempted_call_holds_its_device_as_a_longer_batch() {
    // One device, batches of one of `cost` ms, no CPU work, each call
    // preempted N ~ Poisson(rate x cost) times, each wait `wait` ms: an
    // M/G/1 queue of service S = cost + wait N, E[S] = cost (1 + rate
    // wait), E[S^2] = cost^2 + 2 cost wait E[N] + wait^2 (E[N] + E[N]^2);
    // Pollaczek-Khinchine gives the mean response. The device is busy for
    // the waits too. Each case: rate per ms, wait ms, cost ms, load, policy.
    let cases: &[(f64, f64, f64, f64, &str)] = &[
        (2.0, 0.5, 1.0, 0.3, "fifo"),
        (0.5, 2.0, 1.0, 0.2, "fifo"),
        (1.0, 0.2, 4.0, 0.15, "sjf"),
    ];
    for &(rate, wait, c, load, policy) in cases {
        let mut sc = single_server(cost(Dist::Constant, c, 0.0));
        sc.host.call_preempt_per_ms = rate;
        sc.host.call_preempt_ms = vec![(0.0, wait), (1.0, wait)];
        let r = simulate(&sc, &mode(policy), load, 5, 400_000).unwrap();
        let lambda = load / c; // per ms: load 1.0 is one call of c ms per c ms
        let n = rate * c;
        let s1 = c + wait * n;
        let s2 = c * c + 2.0 * c * wait * n + wait * wait * (n + n * n);
        let what = format!("rate {rate} wait {wait} cost {c}");
        assert_mg1(&r, lambda, s1, s2, &what);
    }
}

#[test]
fn a_preempted_call_holds_no_core() {
    // The device is the one core (shared, time-sliced): the waits keep the
    // device busy but leave the core idle.
    let mut sc = single_server(cost(Dist::Constant, 1.0, 0.0));
    sc.host.shared_cores = true;
    sc.host.time_slicing = true;
    sc.host.call_preempt_per_ms = 1.0;
    sc.host.call_preempt_ms = vec![(0.0, 0.5), (1.0, 0.5)];
    let r = simulate(&sc, &mode("fifo"), 0.4, 5, 200_000).unwrap();
    assert_idle_busy(&r, 0.6, 0.6);
}

#[test]
fn bad_preemption_keys_are_refused() {
    type Case = (f64, Vec<(f64, f64)>, &'static str);
    let cases: &[Case] = &[
        (
            -1.0,
            vec![(0.0, 0.1), (1.0, 0.2)],
            "host.call_preempt_per_ms",
        ),
        (
            f64::NAN,
            vec![(0.0, 0.1), (1.0, 0.2)],
            "host.call_preempt_per_ms",
        ),
        (1.0, vec![], "host.call_preempt_ms"),
        (1.0, vec![(0.0, 0.2), (1.0, 0.1)], "host.call_preempt_ms"),
        (0.0, vec![(0.2, 0.1), (1.0, 0.2)], "host.call_preempt_ms"),
    ];
    for (rate, table, key) in cases {
        let mut sc = ocr();
        sc.host.call_preempt_per_ms = *rate;
        sc.host.call_preempt_ms = table.clone();
        let err = simulate(&sc, &mode("fifo"), 0.5, 1, 1_000).unwrap_err();
        assert_eq!(err.code(), "scenario_invalid", "{rate} {table:?}");
        assert!(err.to_string().contains(key), "{err}");
    }
}

/// `cpu-like-held` sjf at 0.5 before `call_preempt_per_ms` existed (commit
/// 64e5475, `print_golden`; the goodput per second of the sending window, as
/// [`common::GOLDEN`]'s).
const GOLDEN_HELD: Figures = (
    19000,
    0,
    3.735551,
    13.385727,
    4.418828092631578,
    912.4400755274539,
);
