//! Bindings of the load engine (crates/lanes-load): start a run, watch it,
//! stop it, collect its result; merge results; HdrHistogram text.
//!
//! Results cross the boundary as JSON text (the `Report` of lanes-load), so
//! the Python side, the CLI's `--json` file and merges all share one shape.

use std::sync::Mutex;
use std::time::Duration;

use lanes_load::report::{self, Report, Which};
use lanes_load::{Progress, Run, RunConfig, RunSpec};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pythonize::depythonize;

use crate::{detached, CoreError};

fn invalid(message: String) -> CoreError {
    CoreError {
        code: "bad_argument",
        message,
    }
}

/// A load run in progress (from `load_start`).
#[pyclass(module = "lanes._core", frozen)]
struct LoadRun {
    config: RunConfig,
    run: Mutex<Option<Run>>,
    result: Mutex<Option<String>>,
    /// The counts when the result was taken (the run is gone then).
    last: Mutex<Progress>,
}

/// Checks `spec`, opens the connections and starts the run (without the GIL).
#[pyfunction]
fn load_start(py: Python<'_>, spec: &Bound<'_, PyDict>) -> PyResult<LoadRun> {
    let spec: RunSpec =
        depythonize(spec).map_err(|e| invalid(format!("load spec: {e}")).into_py(py))?;
    detached(py, || {
        let config = spec.build()?;
        let run = Run::start(config.clone())?;
        Ok(LoadRun {
            config,
            run: Mutex::new(Some(run)),
            result: Mutex::new(None),
            last: Mutex::new(Progress::default()),
        })
    })
}

#[pymethods]
impl LoadRun {
    /// `{"elapsed_s", "sent", "replies", "errors", "finished"}`.
    fn progress<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let guard = self.run.lock().expect("run lock");
        let p = match guard.as_ref() {
            Some(run) => run.progress(),
            None => *self.last.lock().expect("progress lock"),
        };
        d.set_item("elapsed_s", p.elapsed_s)?;
        d.set_item("sent", p.sent)?;
        d.set_item("replies", p.replies)?;
        d.set_item("errors", p.errors)?;
        d.set_item("finished", guard.is_none() || p.finished)?;
        Ok(d)
    }

    /// Ends the run now; requests in flight are abandoned.
    fn stop(&self) {
        if let Some(run) = self.run.lock().expect("run lock").as_ref() {
            run.stop();
        }
    }

    /// Waits up to `timeout_s` seconds (without the GIL); true once the run has ended.
    fn wait(&self, py: Python<'_>, timeout_s: f64) -> PyResult<bool> {
        let timeout = Duration::from_secs_f64(timeout_s.clamp(0.0, 3600.0));
        detached(py, || {
            let guard = self.run.lock().expect("run lock");
            Ok(guard.as_ref().is_none_or(|r| r.wait(timeout)))
        })
    }

    /// The result as JSON text, once the run has ended (waits for it without
    /// the GIL); writes the send log when the spec asked for one.
    fn result(&self, py: Python<'_>) -> PyResult<String> {
        detached(py, || {
            let mut cached = self.result.lock().expect("result lock");
            if let Some(json) = cached.as_ref() {
                return Ok(json.clone());
            }
            let run = self.run.lock().expect("run lock").take();
            let Some(run) = run else {
                return Err(CoreError {
                    code: "internal_error",
                    message: "the run's result was already taken".into(),
                });
            };
            while !run.wait(Duration::from_secs(1)) {}
            *self.last.lock().expect("progress lock") = Progress {
                finished: true,
                ..run.progress()
            };
            let mut outcome = run.join();
            if let (Some(path), Some(log)) =
                (&self.config.send_log, outcome.recorder.send_log.as_mut())
            {
                lanes_load::write_atomic(path, lanes_load::send_log_text(log).as_bytes())?;
            }
            let report = Report::new(&self.config, &outcome);
            let json = serde_json::to_string(&report).map_err(|e| CoreError {
                code: "internal_error",
                message: format!("result: {e}"),
            })?;
            *cached = Some(json.clone());
            Ok(json)
        })
    }
}

fn parse(json: &str) -> Result<Report, CoreError> {
    serde_json::from_str(json).map_err(|e| CoreError {
        code: "result_invalid",
        message: format!("not a lanes bench result: {e}"),
    })
}

/// Merges results (JSON texts) of runs made side by side into one (JSON text).
#[pyfunction]
fn load_merge(py: Python<'_>, results: Vec<String>) -> PyResult<String> {
    detached(py, || {
        let reports = results
            .iter()
            .map(|r| parse(r))
            .collect::<Result<Vec<_>, _>>()?;
        let merged = report::merge(&reports)?;
        Ok(serde_json::to_string(&merged).expect("a report serializes"))
    })
}

/// HdrHistogram's percentile-distribution text of a result's `latency` or
/// `service_time` histogram (milliseconds).
#[pyfunction]
fn load_percentiles(py: Python<'_>, result: &str, which: &str) -> PyResult<String> {
    detached(py, || {
        let which = match which {
            "latency" => Which::Latency,
            "service_time" => Which::ServiceTime,
            other => {
                return Err(invalid(format!(
                    "histogram {other:?}: expected latency or service_time"
                )))
            }
        };
        Ok(report::percentile_distribution(&parse(result)?, which)?)
    })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<LoadRun>()?;
    m.add_function(wrap_pyfunction!(load_start, m)?)?;
    m.add_function(wrap_pyfunction!(load_merge, m)?)?;
    m.add_function(wrap_pyfunction!(load_percentiles, m)?)?;
    Ok(())
}
