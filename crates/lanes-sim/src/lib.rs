//! A discrete-event simulator of a GPU host, driven by the lanes policy engine.
//!
//! A host has G GPUs, C CPU cores and S services. Each request of a service
//! arrives (Poisson, bursty or a trace), is pre-processed on a CPU core, runs
//! on a GPU, and is post-processed on a CPU core. How the GPU phase reaches a
//! GPU is the [`Mode`]: the status quo (`independent` worker pools, optionally
//! behind a per-GPU `semaphore`), or any policy of `lanes-policy` coordinating
//! GPU phases host-wide — the very engine the server and arbiter use.
//!
//! Everything is seeded and deterministic: the same scenario, mode, load and
//! seed give identical results. Arrivals and costs of a seed do not depend on
//! the mode (common random numbers), so modes are compared on the same work.
//!
//! - [`config`]: the scenario (validated) and its errors;
//! - [`workload`]: arrival processes and cost distributions;
//! - [`host`]: the CPU pool and the GPU contention model;
//! - [`slices`]: cores handed out in slices, as an operating system does;
//! - [`speed`]: the host's speed over time;
//! - [`wake_spell`]: wake-ups whose waits come in spells;
//! - [`engine`]: the event loop;
//! - [`stats`]: what a run measures;
//! - [`capacity`](mod@capacity): the highest load that meets the SLO, by bisection.

pub mod capacity;
pub mod config;
pub mod engine;
pub mod host;
pub mod run_queues;
pub mod slices;
pub mod speed;
pub mod stats;
pub mod wake_spell;
pub mod workload;

pub use capacity::{capacity, Capacity};
pub use config::{Mode, Scenario, SimError};
pub use engine::{simulate, simulate_timeline, BatchSpan};

use engine::simulate_valid;
pub use stats::PointResult;

use rayon::prelude::*;

/// One simulation to run: a mode by name, a load, a seed.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub mode: String,
    pub load: f64,
    pub seed: u64,
}

/// Runs `points` in parallel on the current rayon pool; results in order.
/// The scenario is validated and every mode name parsed before anything runs.
pub fn simulate_points(
    scenario: &Scenario,
    points: &[Point],
    requests: u64,
) -> Result<Vec<PointResult>, SimError> {
    scenario.validate()?;
    let modes = points
        .iter()
        .map(|p| p.mode.parse::<Mode>())
        .collect::<Result<Vec<_>, _>>()?;
    points
        .par_iter()
        .zip(modes.par_iter())
        .map(|(p, mode)| simulate_valid(scenario, mode, p.load, p.seed, requests))
        .collect()
}
