//! Bindings of the prober (crates/lanes-probe): start a run, read its
//! messages, ask it to reload or stop, read its metrics.
//!
//! Messages cross as dicts with a `kind` key (`event`, `notice`, `round`),
//! the serialized [`lanes_probe::Message`]; every wait releases the GIL.

use std::time::Duration;

use lanes_probe::{Monitor, ProbeSpec, Received};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pythonize::{depythonize, pythonize};

use crate::{detached, CoreError};

/// A probe run in progress (from `probe_start`).
#[pyclass(module = "lanes._core", frozen)]
struct ProbeRun {
    monitor: Monitor,
}

/// Checks `spec`, loads the targets, opens the sockets and starts probing (without the GIL).
#[pyfunction]
fn probe_start(py: Python<'_>, spec: &Bound<'_, PyDict>) -> PyResult<ProbeRun> {
    let spec: ProbeSpec = depythonize(spec).map_err(|e| {
        CoreError {
            code: "bad_argument",
            message: format!("probe spec: {e}"),
        }
        .into_py(py)
    })?;
    detached(py, || {
        let monitor = Monitor::start(spec.build()?)?;
        Ok(ProbeRun { monitor })
    })
}

#[pymethods]
impl ProbeRun {
    /// Waits up to `timeout_s` for a message, then takes every one waiting (at
    /// most `limit`); `None` once the run has ended and every message was read.
    #[pyo3(signature = (timeout_s, limit = 100_000))]
    fn poll<'py>(
        &self,
        py: Python<'py>,
        timeout_s: f64,
        limit: usize,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let timeout = Duration::from_secs_f64(timeout_s.clamp(0.0, 3600.0));
        let (messages, finished) = py.detach(|| {
            let mut out = Vec::new();
            match self.monitor.recv(timeout) {
                Received::Message(m) => out.push(m),
                Received::Empty => return (out, false),
                Received::Finished => return (out, true),
            }
            while out.len() < limit.max(1) {
                match self.monitor.try_recv() {
                    Received::Message(m) => out.push(m),
                    Received::Empty | Received::Finished => break,
                }
            }
            (out, false)
        });
        if finished {
            return Ok(None);
        }
        let list = PyList::empty(py);
        for m in &messages {
            list.append(pythonize(py, m)?)?;
        }
        Ok(Some(list))
    }

    /// Reloads the targets file before the next round.
    fn reload(&self) {
        self.monitor.reload();
    }

    /// Stops probing at once.
    fn stop(&self) {
        self.monitor.stop();
    }

    /// Waits up to `timeout_s` seconds (without the GIL); true once the run has ended.
    fn wait(&self, py: Python<'_>, timeout_s: f64) -> bool {
        let timeout = Duration::from_secs_f64(timeout_s.clamp(0.0, 3600.0));
        py.detach(|| self.monitor.wait(timeout))
    }

    /// Waits for the end (without the GIL); raises `LanesError` if the run failed.
    fn result(&self, py: Python<'_>) -> PyResult<()> {
        detached(py, || Ok(self.monitor.join()?))
    }

    /// The mode in use: `syn`, or `connect` (asked for, or after a fallback).
    #[getter]
    fn mode(&self) -> &'static str {
        self.monitor.mode().as_str()
    }

    /// `(host, port)` of the metrics endpoint, if one was asked for.
    #[getter]
    fn metrics_address(&self) -> Option<(String, u16)> {
        self.monitor
            .metrics_addr()
            .map(|a| (a.ip().to_string(), a.port()))
    }

    /// The metrics as OpenMetrics text.
    fn metrics(&self) -> String {
        self.monitor.metrics().render()
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ProbeRun>()?;
    m.add_function(wrap_pyfunction!(probe_start, m)?)?;
    Ok(())
}
