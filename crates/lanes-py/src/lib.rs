//! `lanes._core`: the native module. Every binding is a few lines through
//! `enter`, which releases the GIL, catches panics and maps errors to
//! `lanes.errors.LanesError(code, message)` — the only error map.
//! The load engine's bindings live in `load`, the policy engine's in
//! `scheduler`.

mod arbiter;
mod flame;
mod kserve_json;
mod load;
mod probe;
mod scheduler;
mod serve;

use std::panic::{catch_unwind, AssertUnwindSafe};

use lanes_sim::config::MODES;
use lanes_sim::{Mode, Point, Scenario, SimError};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pythonize::{depythonize, pythonize};

/// A failure on the native side: a stable code and a one-line message.
struct CoreError {
    code: &'static str,
    message: String,
}

impl From<SimError> for CoreError {
    fn from(e: SimError) -> Self {
        Self {
            code: e.code(),
            message: e.to_string(),
        }
    }
}

impl From<lanes_load::LoadError> for CoreError {
    fn from(e: lanes_load::LoadError) -> Self {
        Self {
            code: e.code(),
            message: e.to_string(),
        }
    }
}

impl From<lanes_probe::ProbeError> for CoreError {
    fn from(e: lanes_probe::ProbeError) -> Self {
        Self {
            code: e.code(),
            message: e.to_string(),
        }
    }
}

impl CoreError {
    fn into_py(self, py: Python<'_>) -> PyErr {
        let class = py
            .import("lanes.errors")
            .and_then(|m| m.getattr("LanesError"));
        match class.and_then(|c| c.call1((self.code, self.message.clone()))) {
            Ok(err) => PyErr::from_value(err),
            Err(_) => PyRuntimeError::new_err(format!("[{}] {}", self.code, self.message)),
        }
    }
}

/// Runs `f` without the GIL on a rayon pool of `threads` (0: all cores),
/// turning panics and errors into `LanesError`.
fn enter<T: Send>(
    py: Python<'_>,
    threads: usize,
    f: impl FnOnce() -> Result<T, CoreError> + Send,
) -> PyResult<T> {
    let result = py.detach(|| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| CoreError {
                code: "internal_error",
                message: format!("thread pool: {e}"),
            })?;
        guarded(|| pool.install(f))
    });
    result.map_err(|e| e.into_py(py))
}

/// Runs `f` without the GIL on the calling thread, turning panics and errors
/// into `LanesError`.
fn detached<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> Result<T, CoreError> + Send,
) -> PyResult<T> {
    py.detach(|| guarded(f)).map_err(|e| e.into_py(py))
}

/// Calls `f`, turning a panic into an `internal_error`.
fn guarded<T>(f: impl FnOnce() -> Result<T, CoreError>) -> Result<T, CoreError> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(CoreError {
            code: "internal_error",
            message: format!("lanes._core panicked: {what}"),
        })
    })
}

fn scenario_from(py: Python<'_>, scenario: &Bound<'_, PyAny>) -> PyResult<Scenario> {
    depythonize(scenario).map_err(|e| {
        CoreError {
            code: "scenario_invalid",
            message: format!("scenario: {e}"),
        }
        .into_py(py)
    })
}

/// The lanes version.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The allowed mode and policy names, for help texts.
#[pyfunction]
fn policy_names() -> Vec<String> {
    MODES.split(", ").map(str::to_string).collect()
}

/// The canonical name of a mode or policy, or `LanesError`.
#[pyfunction]
fn parse_policy(py: Python<'_>, name: &str) -> PyResult<String> {
    name.parse::<Mode>()
        .map(|m| m.to_string())
        .map_err(|e| CoreError::from(e).into_py(py))
}

/// Simulates each `(policy, load, seed)` point; results in order.
#[pyfunction]
#[pyo3(signature = (scenario, points, requests, threads = 0))]
fn simulate<'py>(
    py: Python<'py>,
    scenario: &Bound<'py, PyAny>,
    points: Vec<(String, f64, u64)>,
    requests: u64,
    threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let scenario = scenario_from(py, scenario)?;
    let points: Vec<Point> = points
        .into_iter()
        .map(|(mode, load, seed)| Point { mode, load, seed })
        .collect();
    let results = enter(py, threads, || {
        Ok(lanes_sim::simulate_points(&scenario, &points, requests)?)
    })?;
    Ok(pythonize(py, &results)?)
}

/// One point simulated with its device timeline: `(result, batches)`, each
/// batch a dict as `lanes_sim::BatchSpan` (times in ms from the first
/// arrival, in the order the batches ended).
#[pyfunction]
#[pyo3(signature = (scenario, policy, load, seed, requests))]
fn simulate_timeline<'py>(
    py: Python<'py>,
    scenario: &Bound<'py, PyAny>,
    policy: &str,
    load: f64,
    seed: u64,
    requests: u64,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let scenario = scenario_from(py, scenario)?;
    let (result, timeline) = enter(py, 1, || {
        let mode: Mode = policy.parse()?;
        Ok(lanes_sim::simulate_timeline(
            &scenario, &mode, load, seed, requests,
        )?)
    })?;
    Ok((pythonize(py, &result)?, pythonize(py, &timeline)?))
}

/// Capacity at SLO of one policy: `{"overall": load, "every_service": load}`.
#[pyfunction]
#[pyo3(signature = (scenario, policy, seeds, requests, threads = 0))]
fn capacity<'py>(
    py: Python<'py>,
    scenario: &Bound<'py, PyAny>,
    policy: &str,
    seeds: Vec<u64>,
    requests: u64,
    threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let scenario = scenario_from(py, scenario)?;
    let result = enter(py, threads, || {
        let mode: Mode = policy.parse()?;
        Ok(lanes_sim::capacity(&scenario, &mode, &seeds, requests)?)
    })?;
    Ok(pythonize(py, &result)?)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_class::<serve::NativeServer>()?;
    m.add_function(wrap_pyfunction!(policy_names, m)?)?;
    m.add_function(wrap_pyfunction!(parse_policy, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_timeline, m)?)?;
    m.add_function(wrap_pyfunction!(capacity, m)?)?;
    arbiter::register(m)?;
    flame::register(m)?;
    kserve_json::register(m)?;
    load::register(m)?;
    probe::register(m)?;
    scheduler::register(m)?;
    Ok(())
}
