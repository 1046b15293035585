//! Runtime calls that slow each other beyond processor sharing
//! (`host.call_stretch`): scenarios without it simulate exactly as before it
//! existed (golden figures); it applies only when the runtimes outnumber the
//! cores, and then lengthens requests more the more it stretches; a bad
//! table is refused. Weighted (`host.call_stretch_weighted`), it loses no
//! capacity: near the knee it lengthens requests less than the lossy form.
//! Capped (`host.call_stretch_capped`), it is the lossy form while a core is
//! to spare and adds less once the cores are shared.

mod common;

use lanes_sim::config::SimError;
use lanes_sim::simulate;

use common::{assert_golden, cpu_like, figures, golden_cases, mode, GOLDEN};

#[test]
fn without_it_nothing_changes() {
    // Figures of these runs before `call_stretch` existed (commit 53c4800's,
    // unchanged since).
    assert_golden(&golden_cases(), GOLDEN);
}

#[test]
fn it_applies_only_when_the_runtimes_outnumber_the_cores() {
    // `cpu_like`: 2 devices, 2 cores, 3 services. fifo and sjf run one
    // runtime per device: 2 on 2 cores. independent runs one per service
    // per device: 6.
    for (m, changes) in [("fifo", false), ("sjf", false), ("independent", true)] {
        let mut sc = cpu_like();
        let before = simulate(&sc, &mode(m), 0.5, 7, 20_000).unwrap();
        sc.host.call_stretch = vec![1.0, 1.5];
        let after = simulate(&sc, &mode(m), 0.5, 7, 20_000).unwrap();
        assert_eq!(figures(&after) != figures(&before), changes, "{m}");
    }
}

#[test]
fn more_stretch_means_longer_requests() {
    // independent at a load where calls overlap: no stretch (1.0 for every
    // k: the calls' own clock runs as the others'), then 1.25 and 2 for two
    // or more calls at once.
    let mut means = Vec::new();
    for stretch in [vec![1.0], vec![1.0, 1.25], vec![1.0, 2.0]] {
        let mut sc = cpu_like();
        sc.host.call_stretch = stretch;
        means.push(simulate(&sc, &mode("independent"), 0.5, 3, 20_000).unwrap());
    }
    let base = simulate(&cpu_like(), &mode("independent"), 0.5, 3, 20_000).unwrap();
    let rel = means[0].latency_ms.mean / base.latency_ms.mean - 1.0;
    assert!(
        rel.abs() < 0.005,
        "a stretch of 1 changes the mean by {rel}"
    );
    let (a, b, c) = (
        means[0].latency_ms.mean,
        means[1].latency_ms.mean,
        means[2].latency_ms.mean,
    );
    assert!(a < b && b < c, "means {a} {b} {c}");
}

#[test]
fn weighted_it_costs_less_than_lost_work_near_the_knee() {
    // independent near its knee: the lossy stretch wastes core time when
    // calls overlap, the weighted one hands it to the other phases.
    let run = |stretch: Vec<f64>, weighted: bool| {
        let mut sc = cpu_like();
        sc.host.call_stretch = stretch;
        sc.host.call_stretch_weighted = weighted;
        simulate(&sc, &mode("independent"), 0.85, 3, 20_000).unwrap()
    };
    let base = simulate(&cpu_like(), &mode("independent"), 0.85, 3, 20_000).unwrap();
    let lossy = run(vec![1.0, 1.5], false);
    let weighted = run(vec![1.0, 1.5], true);
    let (b, l, w) = (
        base.latency_ms.mean,
        lossy.latency_ms.mean,
        weighted.latency_ms.mean,
    );
    assert!(w < l, "weighted {w} ms, lossy {l} ms (base {b} ms)");
    // (Weighted may even beat no stretch: what the calls give up goes to
    // the request's own CPU phases.)
    // A stretch of 1 weighs nothing.
    let flat = run(vec![1.0], true);
    let rel = flat.latency_ms.mean / b - 1.0;
    assert!(
        rel.abs() < 0.005,
        "a weighted stretch of 1 moves the mean by {rel}"
    );
}

#[test]
fn capped_it_is_the_factor_at_light_load_and_less_near_the_knee() {
    let run = |capped: bool, load: f64| {
        let mut sc = cpu_like();
        sc.host.call_stretch = vec![1.0, 1.5];
        sc.host.call_stretch_capped = capped;
        simulate(&sc, &mode("independent"), load, 3, 20_000).unwrap()
    };
    let base = |load: f64| simulate(&cpu_like(), &mode("independent"), load, 3, 20_000).unwrap();
    // Near the knee the phases outnumber the cores most of the time: the
    // cap adds less than the factor does, and still something.
    let (b, f, c) = (
        base(0.85).latency_ms.mean,
        run(false, 0.85).latency_ms.mean,
        run(true, 0.85).latency_ms.mean,
    );
    assert!(b < c && c < f, "none {b} ms, capped {c} ms, factor {f} ms");
    // Light: mostly a core to spare, where the two rules are one; the gap
    // between them is a small share of the gap near the knee.
    let (f, c) = (
        run(false, 0.1).latency_ms.mean,
        run(true, 0.1).latency_ms.mean,
    );
    assert!(
        c <= f && (f - c) / f < 0.02,
        "light: capped {c} ms, factor {f} ms"
    );
}

#[test]
fn capped_needs_a_table_of_the_lossy_form() {
    let mut no_table = cpu_like();
    no_table.host.call_stretch_capped = true;
    let mut weighted = cpu_like();
    weighted.host.call_stretch = vec![1.0, 1.5];
    weighted.host.call_stretch_weighted = true;
    weighted.host.call_stretch_capped = true;
    for sc in [no_table, weighted] {
        let err = simulate(&sc, &mode("independent"), 0.5, 1, 1_000).unwrap_err();
        assert!(
            matches!(&err, SimError::InvalidScenario { key, .. } if key == "host.call_stretch_capped"),
            "{err:?}"
        );
    }
}

#[test]
fn weighted_needs_a_table() {
    let mut sc = cpu_like();
    sc.host.call_stretch_weighted = true;
    let err = simulate(&sc, &mode("independent"), 0.5, 1, 1_000).unwrap_err();
    assert!(
        matches!(&err, SimError::InvalidScenario { key, .. } if key == "host.call_stretch_weighted"),
        "{err:?}"
    );
}

#[test]
fn a_bad_table_is_refused() {
    let mut below_one = cpu_like();
    below_one.host.call_stretch = vec![1.0, 0.9];
    let mut unsliced = cpu_like();
    unsliced.host.time_slicing = false;
    unsliced.host.call_stretch = vec![1.0, 1.2];
    let mut unshared = cpu_like();
    unshared.host.shared_cores = false;
    unshared.host.call_stretch = vec![1.0, 1.2];
    let mut slices = cpu_like();
    slices.host.slice_ms = 4.0;
    slices.host.call_stretch = vec![1.0, 1.2];
    for sc in [below_one, unsliced, unshared, slices] {
        let err = simulate(&sc, &mode("independent"), 0.5, 1, 1_000).unwrap_err();
        assert!(
            matches!(&err, SimError::InvalidScenario { key, .. } if key == "host.call_stretch"),
            "{err:?}"
        );
    }
}
