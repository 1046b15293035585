//! Bindings of the arbiter daemon (crates/lanes-arbiter): start one, read its
//! log lines, its metrics and stats, stop it. Every wait releases the GIL.

use std::time::Duration;

use lanes_arbiter::{Arbiter, ArbiterSpec};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pythonize::depythonize;

use crate::{detached, CoreError};

impl From<lanes_arbiter::ArbiterError> for CoreError {
    fn from(e: lanes_arbiter::ArbiterError) -> Self {
        Self {
            code: e.code(),
            message: e.to_string(),
        }
    }
}

/// A running arbiter daemon (from `arbiter_start`).
#[pyclass(module = "lanes._core", frozen)]
struct ArbiterRun {
    arbiter: Arbiter,
}

/// Checks `spec`, creates the socket and starts serving (without the GIL).
#[pyfunction]
fn arbiter_start(py: Python<'_>, spec: &Bound<'_, PyDict>) -> PyResult<ArbiterRun> {
    let spec: ArbiterSpec = depythonize(spec).map_err(|e| {
        CoreError {
            code: "bad_argument",
            message: format!("arbiter spec: {e}"),
        }
        .into_py(py)
    })?;
    detached(py, || {
        Ok(ArbiterRun {
            arbiter: Arbiter::start(spec)?,
        })
    })
}

fn timeout(seconds: f64) -> Duration {
    Duration::from_secs_f64(seconds.clamp(0.0, 3600.0))
}

#[pymethods]
impl ArbiterRun {
    /// The next log line, waiting up to `timeout_s`; `None` if none came.
    fn notice(&self, py: Python<'_>, timeout_s: f64) -> Option<String> {
        py.detach(|| self.arbiter.notice(timeout(timeout_s)))
    }

    /// Starts the shutdown: queued acquires are rejected, the socket removed.
    fn stop(&self) {
        self.arbiter.stop();
    }

    /// Waits up to `timeout_s` seconds; true once the run has ended.
    fn wait(&self, py: Python<'_>, timeout_s: f64) -> bool {
        py.detach(|| self.arbiter.wait(timeout(timeout_s)))
    }

    /// Waits for the end; raises `LanesError` if the run failed.
    fn result(&self, py: Python<'_>) -> PyResult<()> {
        detached(py, || Ok(self.arbiter.join()?))
    }

    /// The metrics as OpenMetrics text; `None` once stopped.
    fn metrics(&self, py: Python<'_>) -> Option<String> {
        py.detach(|| self.arbiter.metrics())
    }

    /// The STATS_REPLY JSON document; `None` once stopped.
    fn stats(&self, py: Python<'_>) -> Option<String> {
        py.detach(|| self.arbiter.stats())
    }

    /// `(host, port)` of the metrics endpoint, if one was asked for.
    #[getter]
    fn metrics_address(&self) -> Option<(String, u16)> {
        self.arbiter
            .metrics_addr()
            .map(|a| (a.ip().to_string(), a.port()))
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ArbiterRun>()?;
    m.add_function(wrap_pyfunction!(arbiter_start, m)?)?;
    Ok(())
}
