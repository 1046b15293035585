//! Scenarios shared by the integration tests and benchmarks.

#![allow(dead_code)]

use lanes_sim::config::{Arrival, BatchingSpec, Cost, Dist, Host, Service};
use lanes_sim::Scenario;

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
            shared_cores: false,
            busy_cores: 0.0,
            interpreter: None,
            time_slicing: false,
            slice_ms: 0.0,
            handoff_ms: 0.0,
            handoff_dist: lanes_sim::config::Dist::Constant,
            device_hold_ms: Vec::new(),
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
            shared_cores: false,
            busy_cores: 0.0,
            interpreter: None,
            time_slicing: false,
            slice_ms: 0.0,
            handoff_ms: 0.0,
            handoff_dist: lanes_sim::config::Dist::Constant,
            device_hold_ms: Vec::new(),
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
            batching: Default::default(),
        }],
    }
}
