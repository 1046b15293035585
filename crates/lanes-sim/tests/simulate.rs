//! The simulator end to end: determinism, queueing theory, and the modes
//! (on `ocr` without batching where a test reasons about one job per request;
//! batching has its own tests in batching.rs).

mod common;

use lanes_sim::config::{Arrival, Dist, Mode};
use lanes_sim::{capacity, simulate, simulate_points, Point};

use common::{cost, mode, ocr, ocr_unbatched, single_server};

#[test]
fn same_seed_same_result_and_seeds_differ() {
    let sc = ocr();
    for name in ["independent", "semaphore", "fifo", "sjf", "edf", "limit:2"] {
        let a = simulate(&sc, &mode(name), 0.7, 11, 20_000).unwrap();
        let b = simulate(&sc, &mode(name), 0.7, 11, 20_000).unwrap();
        assert_eq!(a, b, "{name}");
        let c = simulate(&sc, &mode(name), 0.7, 12, 20_000).unwrap();
        assert_ne!(a.latency_ms, c.latency_ms, "{name}: another seed");
    }
    // In parallel too, in order.
    let points: Vec<Point> = [0.5, 0.9]
        .iter()
        .map(|&load| Point {
            mode: "sjf".into(),
            load,
            seed: 3,
        })
        .collect();
    let par = simulate_points(&sc, &points, 10_000).unwrap();
    assert_eq!(par[1], simulate(&sc, &mode("sjf"), 0.9, 3, 10_000).unwrap());
}

#[test]
fn mm1_mean_matches_closed_form() {
    // M/M/1: mean response = S / (1 - rho). M/D/1 and M/G/1 by
    // Pollaczek-Khinchine: S + rho (1 + cv^2) S / (2 (1 - rho)).
    let s = 10.0;
    for (dist, cv) in [
        (Dist::Exponential, 1.0),
        (Dist::Constant, 0.0),
        (Dist::Lognormal, 2.0),
    ] {
        for rho in [0.5, 0.8] {
            let sc = single_server(cost(dist, s, cv));
            let expect = s + rho * (1.0 + cv * cv) * s / (2.0 * (1.0 - rho));
            let means: Vec<f64> = (1..=4)
                .map(|seed| {
                    simulate(&sc, &mode("fifo"), rho, seed, 400_000)
                        .unwrap()
                        .latency_ms
                        .mean
                })
                .collect();
            let mean = means.iter().sum::<f64>() / means.len() as f64;
            let err = (mean / expect - 1.0).abs();
            // Heavy-tailed lognormal at rho 0.8 converges slowest.
            let tol = if cv > 1.0 { 0.08 } else { 0.03 };
            assert!(
                err < tol,
                "{dist:?} rho={rho}: {mean:.2} vs {expect:.2} ms ({err:.3})"
            );
        }
    }
}

#[test]
fn processor_sharing_is_mg1_ps() {
    // Independent mode with one worker per GPU is FIFO; with many workers
    // and eta = 1 the GPU is processor sharing: mean = S / (1 - rho).
    let mut sc = single_server(cost(Dist::Lognormal, 10.0, 1.5));
    sc.services[0].workers_per_gpu = 200;
    let r = simulate(&sc, &mode("independent"), 0.6, 5, 400_000).unwrap();
    let expect = 10.0 / 0.4;
    assert!(
        (r.latency_ms.mean / expect - 1.0).abs() < 0.04,
        "{} vs {expect}",
        r.latency_ms.mean
    );
    assert!(r.gpu_time_s.overlap > 0.0);
}

#[test]
fn load_sets_offered_rate_and_busy_time() {
    let sc = ocr_unbatched();
    let r = simulate(&sc, &mode("fifo"), 0.6, 1, 100_000).unwrap();
    let rate = 0.6 * 2.0 * 1000.0 / sc.mean_gpu_ms();
    assert!((r.offered_rps - rate).abs() < 1e-9);
    assert!(
        (r.throughput_rps / rate - 1.0).abs() < 0.03,
        "{}",
        r.throughput_rps
    );
    assert!((r.gpu_busy - 0.6).abs() < 0.03, "{}", r.gpu_busy);
    assert!(
        r.gpu_imbalance < 0.05,
        "engine balances: {}",
        r.gpu_imbalance
    );
    assert_eq!(r.gpu_time_s.overlap, 0.0, "one job per GPU never overlaps");
    assert_eq!(r.services.len(), 3);
    assert!(r.cpu_idle > 0.5 && r.cpu_idle < 1.0);
}

#[test]
fn semaphore_loses_throughput_and_sjf_beats_independent() {
    let sc = ocr_unbatched();
    let sem = simulate(&sc, &mode("semaphore"), 0.8, 1, 100_000).unwrap();
    // The whole-request semaphore idles the GPU during CPU phases: it cannot
    // carry load 0.8 (its queue grows), so its throughput falls short.
    assert!(
        sem.throughput_rps < 0.97 * sem.offered_rps,
        "{}",
        sem.throughput_rps
    );
    // On the batched host, serialised batches beat overlapping ones.
    let sc = ocr();
    let at = |name: &str| simulate(&sc, &mode(name), 0.8, 1, 100_000).unwrap();
    let (ind, sjf) = (at("independent"), at("sjf"));
    assert!(
        sjf.latency_ms.mean < 0.9 * ind.latency_ms.mean,
        "{} vs {}",
        sjf.latency_ms.mean,
        ind.latency_ms.mean
    );
}

#[test]
fn deadlines_drop_work_in_every_mode() {
    let mut sc = ocr_unbatched();
    for s in &mut sc.services {
        s.deadline_ms = Some(40.0);
    }
    for name in ["independent", "fifo", "edf"] {
        let r = simulate(&sc, &mode(name), 0.95, 1, 50_000).unwrap();
        assert!(r.dropped > 0, "{name}");
        assert!(r.slo_attainment < 1.0);
    }
}

#[test]
fn the_finish_rule_carries_more_in_time_past_the_knee() {
    // Past the knee with a deadline equal to the SLO: under `start` a batch
    // cut just before its requests' deadline still runs and ends past the
    // SLO; under `finish` such requests are dropped at the cut instead, so
    // the devices' time goes to requests that can still make it.
    use lanes_serving::DeadlineRule;
    let mut sc = ocr();
    for s in &mut sc.services {
        s.deadline_ms = Some(sc.slo_ms);
    }
    for name in ["fifo", "sjf"] {
        let run = |rule: DeadlineRule| {
            let mut sc = sc.clone();
            sc.host.deadline_rule = rule;
            simulate(&sc, &mode(name), 3.0, 3, 40_000).unwrap()
        };
        let (start, finish) = (run(DeadlineRule::Start), run(DeadlineRule::Finish));
        eprintln!(
            "{name}: goodput {:.3} -> {:.3}, attainment {:.3} -> {:.3}, dropped {} -> {}",
            start.goodput_rps,
            finish.goodput_rps,
            start.slo_attainment,
            finish.slo_attainment,
            start.dropped,
            finish.dropped
        );
        assert!(finish.goodput_rps > 1.05 * start.goodput_rps, "{name}");
        assert!(finish.slo_attainment > start.slo_attainment, "{name}");
    }
}

#[test]
fn trace_and_bursty_arrivals_run() {
    let mut sc = ocr_unbatched();
    sc.services[0].arrival = Arrival::Bursty { cv: 4.0 };
    sc.services[1].arrival = Arrival::Trace {
        times: vec![0.0, 0.1, 0.15, 0.4, 1.0],
    };
    let bursty = simulate(&sc, &mode("sjf"), 0.7, 1, 50_000).unwrap();
    let smooth = simulate(&ocr_unbatched(), &mode("sjf"), 0.7, 1, 50_000).unwrap();
    assert!(bursty.latency_ms.p99 > smooth.latency_ms.p99);
}

#[test]
fn capacity_of_fifo_is_between_bounds() {
    let sc = ocr_unbatched();
    let c = capacity(&sc, &mode("fifo"), &[1, 2], 20_000).unwrap();
    assert!(c.every_service <= c.overall);
    assert!(c.overall > 0.5 && c.overall < 1.0, "{c:?}");
}

#[test]
fn bad_arguments_are_refused_with_codes() {
    let sc = ocr_unbatched();
    let e = simulate(&sc, &mode("fifo"), 0.0, 1, 1000).unwrap_err();
    assert_eq!(e.code(), "bad_argument");
    let e = simulate(&sc, &mode("fifo"), 0.5, 1, 10).unwrap_err();
    assert_eq!(e.code(), "bad_argument");
    let e = "lifo".parse::<Mode>().unwrap_err();
    assert_eq!(e.code(), "unknown_policy");
    assert!(e.to_string().contains("independent, semaphore"), "{e}");
    let mut bad = ocr_unbatched();
    bad.services[1].gpu.cv = -1.0;
    let e = bad.validate().unwrap_err();
    assert_eq!(e.code(), "scenario_invalid");
    assert_eq!(
        e.to_string(),
        "scenario ocr: service[1].gpu.cv = -1: must be a number >= 0"
    );
}
