//! Scenarios shared by the integration tests and benchmarks.

#![allow(dead_code)]

use lanes_sim::config::{Arrival, BatchingSpec, Cost, Dist, Host, Service};
use lanes_sim::Scenario;

/// A mode by name (the names `lanes sim --policies` takes).
pub fn mode(name: &str) -> lanes_sim::config::Mode {
    name.parse().unwrap()
}

pub fn cost(dist: Dist, mean_ms: f64, cv: f64) -> Cost {
    Cost { dist, mean_ms, cv }
}

fn service(
    name: &str,
    share: f64,
    workers: u32,
    pre: f64,
    gpu: f64,
    gpu_cv: f64,
    post: f64,
) -> Service {
    Service {
        name: name.into(),
        share,
        workers_per_gpu: workers,
        arrival: Arrival::Poisson,
        pre: cost(Dist::Lognormal, pre, 0.3),
        gpu: cost(Dist::Lognormal, gpu, gpu_cv),
        post: cost(Dist::Lognormal, post, 0.3),
        slo_ms: None,
        deadline_ms: None,
        client_connections: None,
        batching: Default::default(),
    }
}

/// The built-in `ocr` scenario (python/lanes/sim/scenarios/ocr.toml).
pub fn ocr() -> Scenario {
    let mut sc = ocr_unbatched();
    let curves: [(u32, &[(u32, f64)]); 3] = [
        (16, &[(4, 8.0), (16, 20.0)]),
        (8, &[(8, 90.0)]),
        (8, &[(8, 45.0)]),
    ];
    for (s, (max, curve)) in sc.services.iter_mut().zip(curves) {
        s.batching = BatchingSpec {
            max_batch_size: max,
            batch_ms: curve.to_vec(),
            ..BatchingSpec::default()
        };
    }
    sc
}

/// `ocr` with batches of one: the worst case for the simulator's speed (one
/// GPU job per request).
pub fn ocr_unbatched() -> Scenario {
    Scenario {
        name: "ocr".into(),
        slo_ms: 150.0,
        host: Host {
            gpus: 2,
            cpu_cores: 8,
            gpu_capacity: 1,
            semaphore: 1,
            eta: vec![1.0],
            gpu_queue: lanes_sim::config::GpuQueue::Share,
            shared_cores: false,
            busy_cores: 0.0,
            interpreter: None,
            time_slicing: false,
            slice_ms: 0.0,
            run_queues: false,
            handoff_ms: 0.0,
            handoff_dist: lanes_sim::config::Dist::Constant,
            device_hold_ms: Vec::new(),
            call_preempt_per_ms: 0.0,
            call_preempt_ms: Vec::new(),
            call_preempt_absorbed: false,
            call_stretch: Vec::new(),
            call_stretch_weighted: false,
            call_stretch_capped: false,
            call_on_core: 1.0,
            speed_cv: 0.0,
            speed_ms: 0.0,
            speed_cv_busy: None,
            speed_busy_exponent: 1.0,
            wake_spell_ms: 0.0,
            wake_spell_share: 0.0,
            speed_series: Vec::new(),
            speed_series_ms: 0.0,
            speed_run_cv: 0.0,
            busy_run_cores: Vec::new(),
            lag_ms: 0.0,
            lag_among_calls: false,
            stop_ms: Vec::new(),
            stops_per_s: 0.0,
            stop_run_per_s: Vec::new(),
            deadline_rule: Default::default(),
            device_hold_busy_ms: Vec::new(),
            pre_wake_ms: Vec::new(),
            post_wake_ms: Vec::new(),
            pre_wake_busy_ms: Vec::new(),
            post_wake_busy_ms: Vec::new(),
            client_ms: Vec::new(),
        },
        services: vec![
            service("cnn", 0.60, 2, 2.0, 5.0, 0.3, 1.0),
            service("rnn_zh", 0.25, 1, 3.0, 25.0, 0.5, 2.0),
            service("rnn_en", 0.15, 1, 2.0, 12.0, 0.5, 1.0),
        ],
    }
}

/// One GPU, one service, no CPU work: an M/G/1 queue with `gpu` service.
pub fn single_server(gpu: Cost) -> Scenario {
    Scenario {
        name: "mg1".into(),
        slo_ms: 1000.0,
        host: Host {
            gpus: 1,
            cpu_cores: 1,
            gpu_capacity: 1,
            semaphore: 1,
            eta: vec![1.0],
            gpu_queue: lanes_sim::config::GpuQueue::Share,
            shared_cores: false,
            busy_cores: 0.0,
            interpreter: None,
            time_slicing: false,
            slice_ms: 0.0,
            run_queues: false,
            handoff_ms: 0.0,
            handoff_dist: lanes_sim::config::Dist::Constant,
            device_hold_ms: Vec::new(),
            call_preempt_per_ms: 0.0,
            call_preempt_ms: Vec::new(),
            call_preempt_absorbed: false,
            call_stretch: Vec::new(),
            call_stretch_weighted: false,
            call_stretch_capped: false,
            call_on_core: 1.0,
            speed_cv: 0.0,
            speed_ms: 0.0,
            speed_cv_busy: None,
            speed_busy_exponent: 1.0,
            wake_spell_ms: 0.0,
            wake_spell_share: 0.0,
            speed_series: Vec::new(),
            speed_series_ms: 0.0,
            speed_run_cv: 0.0,
            busy_run_cores: Vec::new(),
            lag_ms: 0.0,
            lag_among_calls: false,
            stop_ms: Vec::new(),
            stops_per_s: 0.0,
            stop_run_per_s: Vec::new(),
            deadline_rule: Default::default(),
            device_hold_busy_ms: Vec::new(),
            pre_wake_ms: Vec::new(),
            post_wake_ms: Vec::new(),
            pre_wake_busy_ms: Vec::new(),
            post_wake_busy_ms: Vec::new(),
            client_ms: Vec::new(),
        },
        services: vec![Service {
            name: "only".into(),
            share: 1.0,
            workers_per_gpu: 1,
            arrival: Arrival::Poisson,
            pre: cost(Dist::Constant, 0.0, 0.0),
            gpu,
            post: cost(Dist::Constant, 0.0, 0.0),
            slo_ms: None,
            deadline_ms: None,
            client_connections: None,
            batching: Default::default(),
        }],
    }
}

/// `ocr` on two shared, time-sliced cores with background work and
/// exponential wake-ups: the features the calibrated CPU scenario uses.
pub fn cpu_like() -> Scenario {
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
pub type Figures = (u64, u64, f64, f64, f64, f64);

/// What a run's figures are compared by: counts and latencies, exactly.
pub fn figures(r: &lanes_sim::PointResult) -> Figures {
    (
        r.requests,
        r.dropped,
        r.latency_ms.p50,
        r.latency_ms.p99,
        r.latency_ms.mean,
        r.goodput_rps,
    )
}

/// The golden runs of an opt-in host key's test: (name, scenario, mode,
/// load), each simulated at seed 7 with 20,000 requests.
pub fn golden_cases() -> Vec<(&'static str, Scenario, &'static str, f64)> {
    vec![
        ("ocr", ocr(), "fifo", 0.8),
        ("ocr", ocr(), "sjf", 0.8),
        ("ocr", ocr(), "independent", 0.8),
        ("cpu-like", cpu_like(), "fifo", 0.5),
        ("cpu-like", cpu_like(), "sjf", 0.5),
        ("cpu-like", cpu_like(), "independent", 0.5),
    ]
}

/// [`golden_cases`]' figures before `device_hold_ms` existed (commit
/// 53c4800), unchanged since but for the goodput, per second of the sending
/// window since the thirty-third calibration round (the same requests within
/// their SLO; the window ends at the last measured arrival, not completion).
#[rustfmt::skip]
pub const GOLDEN: &[(&str, &str, Figures)] = &[
    ("ocr", "fifo", (19000, 0, 15.597567, 74.186751, 21.109391144421007, 145.98272806862704)),
    ("ocr", "sjf", (19000, 0, 14.884863, 77.004799, 20.817788604631584, 145.9904117745099)),
    ("ocr", "independent", (19000, 0, 16.572415, 121.044991, 26.346646581894717, 145.60622648036647)),
    ("cpu-like", "fifo", (19000, 0, 2.654207, 12.165119, 3.4207231663157813, 912.4400755274539)),
    ("cpu-like", "sjf", (19000, 0, 2.646015, 12.156927, 3.418931920842103, 912.4400755274539)),
    ("cpu-like", "independent", (19000, 0, 2.783231, 13.189119, 3.5370116648421006, 912.4400755274539)),
];

/// A golden case's figures: `(name, mode, figures)` of its run at seed 7
/// with 20,000 requests.
pub fn golden_run(
    (name, sc, mode, load): &(&'static str, Scenario, &'static str, f64),
) -> (&'static str, &'static str, Figures) {
    let policy: lanes_sim::config::Mode = mode.parse().unwrap();
    let r = lanes_sim::simulate(sc, &policy, *load, 7, 20_000).unwrap();
    (name, mode, figures(&r))
}

/// Asserts that each case simulates to its golden figures, in order.
pub fn assert_golden(
    cases: &[(&'static str, Scenario, &'static str, f64)],
    golden: &[(&str, &str, Figures)],
) {
    assert_eq!(golden.len(), cases.len());
    for (case, (gname, gm, want)) in cases.iter().zip(golden) {
        let (name, m, got) = golden_run(case);
        assert_eq!((name, m), (*gname, *gm));
        assert_eq!(got, *want, "{name} {m}");
    }
}

/// Prints each case's golden figures in the form [`assert_golden`] reads.
pub fn print_golden(cases: &[(&'static str, Scenario, &'static str, f64)]) {
    for case in cases {
        println!("{:?},", golden_run(case));
    }
}

/// Asserts that `r` is an M/G/1 queue at arrival rate `lambda` per ms with
/// service moments `s1 = E[S]` and `s2 = E[S²]` (ms, ms²): its mean latency
/// within 3 % of Pollaczek–Khinchine's and its device busy `lambda · s1`
/// within 0.01.
pub fn assert_mg1(r: &lanes_sim::PointResult, lambda: f64, s1: f64, s2: f64, what: &str) {
    let rho = lambda * s1;
    let want = s1 + lambda * s2 / (2.0 * (1.0 - rho));
    let err = r.latency_ms.mean / want - 1.0;
    assert!(
        err.abs() < 0.03,
        "{what}: mean {} want {want}",
        r.latency_ms.mean
    );
    assert!(
        (r.gpu_busy - rho).abs() < 0.01,
        "{what}: busy {} want {rho}",
        r.gpu_busy
    );
}

/// Asserts the cores' idle share and the device's busy share of `r`, each
/// within 0.01.
pub fn assert_idle_busy(r: &lanes_sim::PointResult, cores_idle: f64, device_busy: f64) {
    assert!(
        (r.cpu_idle - cores_idle).abs() < 0.01,
        "cores idle {} want {cores_idle}",
        r.cpu_idle
    );
    assert!(
        (r.gpu_busy - device_busy).abs() < 0.01,
        "device busy {} want {device_busy}",
        r.gpu_busy
    );
}

/// A change to a scenario.
pub type Edit = fn(&mut Scenario);

/// Each case's change to [`ocr`] makes `simulate` under `policy` refuse the
/// scenario with `scenario_invalid` and a message naming the case's key.
pub fn assert_refused(policy: &str, cases: &[(&str, Edit)]) {
    for (key, edit) in cases {
        let mut sc = ocr();
        edit(&mut sc);
        let mode = policy.parse().unwrap();
        let err = lanes_sim::simulate(&sc, &mode, 0.5, 1, 1_000).unwrap_err();
        assert_eq!(err.code(), "scenario_invalid", "{key}");
        assert!(err.to_string().contains(key), "{err}");
    }
}
