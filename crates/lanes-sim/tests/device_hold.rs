//! A device held beyond each batch's runtime call (`host.device_hold_ms`):
//! scenarios without it simulate exactly as before it existed (golden
//! figures), a hold of zero changes nothing, and a hold lengthens each
//! request by its draw and keeps the device busy meanwhile, holding no core.

mod common;

use lanes_sim::config::{Dist, Mode, Scenario};
use lanes_sim::{simulate, PointResult};

use common::{cost, ocr, single_server};

fn mode(name: &str) -> Mode {
    name.parse().unwrap()
}

/// `ocr` on two shared, time-sliced cores with background work and
/// exponential wake-ups: the features the calibrated CPU scenario uses.
fn cpu_like() -> Scenario {
    let mut sc = ocr();
    sc.host.cpu_cores = 2;
    sc.host.shared_cores = true;
    sc.host.time_slicing = true;
    sc.host.busy_cores = 0.1;
    sc.host.handoff_ms = 0.5;
    sc.host.handoff_dist = Dist::Exponential;
    for s in &mut sc.services {
        s.gpu.mean_ms /= 10.0;
        s.pre.mean_ms /= 10.0;
        s.post.mean_ms /= 10.0;
        s.batching.num_batch_threads = Some(1);
        for p in &mut s.batching.batch_ms {
            p.1 /= 10.0;
        }
    }
    sc
}

/// Requests, dropped, p50, p99, mean latency (ms), goodput (/s).
type Figures = (u64, u64, f64, f64, f64, f64);

/// What a run's figures are compared by: counts and latencies, exactly.
fn figures(r: &PointResult) -> Figures {
    (
        r.requests,
        r.dropped,
        r.latency_ms.p50,
        r.latency_ms.p99,
        r.latency_ms.mean,
        r.goodput_rps,
    )
}

/// Every golden case: (scenario, mode, load, seed).
fn cases() -> Vec<(&'static str, Scenario, &'static str, f64)> {
    vec![
        ("ocr", ocr(), "fifo", 0.8),
        ("ocr", ocr(), "sjf", 0.8),
        ("ocr", ocr(), "independent", 0.8),
        ("cpu-like", cpu_like(), "fifo", 0.5),
        ("cpu-like", cpu_like(), "sjf", 0.5),
        ("cpu-like", cpu_like(), "independent", 0.5),
    ]
}

#[test]
#[ignore = "prints the golden figures of `without_a_hold_nothing_changes`"]
fn print_golden() {
    for (name, sc, m, load) in cases() {
        let r = simulate(&sc, &mode(m), load, 7, 20_000).unwrap();
        println!("({name:?}, {m:?}, {:?}),", figures(&r));
    }
}

#[test]
fn without_a_hold_nothing_changes() {
    // Figures of these runs before `device_hold_ms` existed (commit 53c4800).
    #[rustfmt::skip]
    let golden: &[(&str, &str, Figures)] = &[
        ("ocr", "fifo", (19000, 0, 15.597567, 74.186751, 21.109391144421007, 145.94918098194054)),
        ("ocr", "sjf", (19000, 0, 14.884863, 77.004799, 20.817788604631584, 145.95686292209433)),
        ("ocr", "independent", (19000, 0, 16.572415, 121.044991, 26.346646581894717, 145.56825743133396)),
        ("cpu-like", "fifo", (19000, 0, 2.654207, 12.165119, 3.4207231663157813, 912.3208882174855)),
        ("cpu-like", "sjf", (19000, 0, 2.646015, 12.156927, 3.418931920842103, 912.3208882174855)),
        ("cpu-like", "independent", (19000, 0, 2.783231, 13.189119, 3.5370116648421006, 912.3208882174855)),
    ];
    assert_eq!(golden.len(), cases().len());
    for ((name, sc, m, load), (gname, gm, want)) in cases().into_iter().zip(golden) {
        assert_eq!((name, m), (*gname, *gm));
        let r = simulate(&sc, &mode(m), load, 7, 20_000).unwrap();
        assert_eq!(figures(&r), *want, "{name} {m}");
    }
}

#[test]
fn a_hold_of_zero_changes_nothing() {
    for (name, mut sc, m, load) in cases() {
        let before = simulate(&sc, &mode(m), load, 7, 20_000).unwrap();
        sc.host.device_hold_ms = vec![(0.0, 0.0), (0.5, 0.0), (1.0, 0.0)];
        let after = simulate(&sc, &mode(m), load, 7, 20_000).unwrap();
        assert_eq!(figures(&after), figures(&before), "{name} {m}");
    }
}

/// `E[X]` and `E[X²]` of the quantile function through `points` (uniform
/// between points), ms.
fn moments(points: &[(f64, f64)]) -> (f64, f64) {
    points.windows(2).fold((0.0, 0.0), |(m1, m2), w| {
        let ((p0, a), (p1, b)) = (w[0], w[1]);
        let p = p1 - p0;
        (
            m1 + p * (a + b) / 2.0,
            m2 + p * (a * a + a * b + b * b) / 3.0,
        )
    })
}

#[test]
fn a_held_device_serves_as_if_each_batch_were_longer() {
    // One device, batches of one of 1 ms, no CPU work, each batch holding
    // the device beyond its call for a draw of the table: an M/G/1 queue of
    // service 1 ms + hold, whose mean response Pollaczek-Khinchine gives;
    // the device is busy for the holds too.
    let table = [(0.0, 0.0), (0.5, 0.2), (0.9, 1.0), (1.0, 3.0)];
    let (h1, h2) = moments(&table);
    for (policy, load) in [("fifo", 0.3), ("fifo", 0.6), ("sjf", 0.6)] {
        let mut sc = single_server(cost(Dist::Constant, 1.0, 0.0));
        sc.host.device_hold_ms = table.to_vec();
        let r = simulate(&sc, &mode(policy), load, 5, 400_000).unwrap();
        let lambda = load; // per ms: load 1.0 is one 1 ms batch per ms
        let (s1, s2) = (1.0 + h1, 1.0 + 2.0 * h1 + h2);
        let rho = lambda * s1;
        let want = s1 + lambda * s2 / (2.0 * (1.0 - rho));
        let err = r.latency_ms.mean / want - 1.0;
        assert!(
            err.abs() < 0.03,
            "{policy} {load}: mean {} want {want}",
            r.latency_ms.mean
        );
        assert!(
            (r.gpu_busy - rho).abs() < 0.01,
            "{policy} {load}: busy {}",
            r.gpu_busy
        );
    }
}

#[test]
fn a_hold_holds_no_core() {
    // The device is the one core (shared, time-sliced): a hold keeps the
    // device busy but leaves the core idle, so the core is busy only for
    // the calls while the device is busy for calls and holds.
    let mut sc = single_server(cost(Dist::Constant, 1.0, 0.0));
    sc.host.shared_cores = true;
    sc.host.time_slicing = true;
    sc.host.device_hold_ms = vec![(0.0, 0.5), (1.0, 0.5)];
    let r = simulate(&sc, &mode("fifo"), 0.4, 5, 200_000).unwrap();
    assert!((r.cpu_idle - 0.6).abs() < 0.01, "cores idle {}", r.cpu_idle);
    assert!(
        (r.gpu_busy - 0.6).abs() < 0.01,
        "device busy {}",
        r.gpu_busy
    );
    // A lone request's latency is its call plus its hold.
    let lone = simulate(&sc, &mode("fifo"), 0.001, 5, 2_000).unwrap();
    assert!(
        (lone.latency_ms.p50 - 1.5).abs() < 0.01,
        "p50 {}",
        lone.latency_ms.p50
    );
}

#[test]
fn a_bad_hold_table_is_refused() {
    for table in [
        vec![(0.0, 0.1)],
        vec![(0.0, 0.2), (1.0, 0.1)],
        vec![(0.2, 0.1), (1.0, 0.2)],
    ] {
        let mut sc = ocr();
        sc.host.device_hold_ms = table.clone();
        let err = simulate(&sc, &mode("fifo"), 0.5, 1, 1_000).unwrap_err();
        assert_eq!(err.code(), "scenario_invalid", "{table:?}");
        assert!(err.to_string().contains("host.device_hold_ms"), "{err}");
    }
}
