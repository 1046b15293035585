//! Binding of the policy engine (crates/lanes-policy) for the live server:
//! `lanes._core.Scheduler`, the ready queue, the devices and the online cost
//! estimates of one host (or, in the server's `independent` mode, of one
//! model).
//!
//! The engine never reads a clock: every call that depends on time takes
//! `now_ns` from the caller (the server passes `time.monotonic_ns()`). Calls
//! are short and hold the GIL; the object is used from one thread (the
//! server's event loop), and a mutex keeps it sound if it is not.

use std::sync::Mutex;

use lanes_policy::{
    CostConfig, CostModel, Decision, DeviceSet, DeviceSpec, DropReason, Job, Policy, PolicyError,
    Prior,
};
use pyo3::prelude::*;

use crate::CoreError;

impl From<PolicyError> for CoreError {
    fn from(e: PolicyError) -> Self {
        Self {
            code: e.code(),
            message: e.to_string(),
        }
    }
}

struct State {
    engine: lanes_policy::Scheduler,
    costs: CostModel,
    decisions: Vec<Decision>,
}

/// The policy engine with its cost model (see crates/lanes-policy for the rules).
#[pyclass(module = "lanes._core", frozen)]
struct Scheduler {
    policy: String,
    devices: usize,
    state: Mutex<State>,
}

fn err(py: Python<'_>, e: impl Into<CoreError>) -> PyErr {
    e.into().into_py(py)
}

impl Scheduler {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[pymethods]
impl Scheduler {
    /// A scheduler running `policy` (`fifo`, `limit:K`, `sjf[:...]`, `fair[:...]`,
    /// `lanes[:...]`, `edf`) over
    /// devices with the given capacities (jobs at once; ids are the list's
    /// indices). `default_cost_ns` is the estimate of a model with no prior and
    /// no measurement; `ewma_weight` the weight of the newest run time.
    #[new]
    #[pyo3(signature = (policy, capacities, default_cost_ns = 1_000_000, ewma_weight = 0.1))]
    fn new(
        py: Python<'_>,
        policy: &str,
        capacities: Vec<u32>,
        default_cost_ns: u64,
        ewma_weight: f64,
    ) -> PyResult<Self> {
        let parsed: Policy = policy.parse().map_err(|e: PolicyError| err(py, e))?;
        let specs: Vec<DeviceSpec> = capacities
            .iter()
            .map(|&capacity| DeviceSpec { capacity })
            .collect();
        let engine = lanes_policy::Scheduler::new(parsed, &specs).map_err(|e| err(py, e))?;
        if !(ewma_weight > 0.0 && ewma_weight <= 1.0) {
            return Err(err(
                py,
                CoreError {
                    code: "bad_argument",
                    message: format!("ewma_weight = {ewma_weight}: must be in (0, 1]"),
                },
            ));
        }
        let costs = CostModel::new(CostConfig {
            ewma_weight,
            default_cost: default_cost_ns.max(1),
            ..CostConfig::default()
        });
        Ok(Self {
            policy: parsed.to_string(),
            devices: specs.len(),
            state: Mutex::new(State {
                engine,
                costs,
                decisions: Vec::new(),
            }),
        })
    }

    /// The canonical name of the policy in force.
    #[getter]
    fn policy(&self) -> &str {
        &self.policy
    }

    /// Number of devices.
    #[getter]
    fn device_count(&self) -> usize {
        self.devices
    }

    /// Jobs waiting for a device.
    #[getter]
    fn queued(&self) -> usize {
        self.state().engine.queued()
    }

    /// Jobs running on any device.
    #[getter]
    fn running(&self) -> usize {
        self.state().engine.running()
    }

    /// Jobs running on `device`.
    fn running_on(&self, py: Python<'_>, device: usize) -> PyResult<u32> {
        self.check_device(py, device)?;
        Ok(self.state().engine.running_on(device))
    }

    /// Time `device` has had at least one job running, as of `now_ns`.
    fn busy_ns(&self, py: Python<'_>, device: usize, now_ns: u64) -> PyResult<u64> {
        self.check_device(py, device)?;
        Ok(self.state().engine.busy_time(device, now_ns))
    }

    /// Sets the configured cost prior of `model`: `fixed_ns + per_item_ns·batch`.
    fn set_prior(&self, model: u32, fixed_ns: f64, per_item_ns: f64) {
        self.state().costs.set_prior(
            model,
            Prior {
                fixed: fixed_ns.max(0.0),
                per_item: per_item_ns.max(0.0),
            },
        );
    }

    /// Records a measured run time of a batch of `batch` items of `model`.
    fn observe(&self, model: u32, batch: u32, run_ns: u64) {
        self.state().costs.observe(model, batch, run_ns);
    }

    /// The current run-time estimate of a batch of `batch` items of `model`.
    fn estimate(&self, model: u32, batch: u32) -> u64 {
        self.state().costs.estimate(model, batch)
    }

    /// Queues job `job` (one batch of `batch` items of `model`, ready since
    /// `arrival_ns`) and returns the cost it was queued with: `cost_ns`, or the
    /// current estimate. `devices` lists the eligible device ids (None: all);
    /// `deadline_ns` is a hard deadline (dropped, never run, once passed —
    /// under `edf` once it can no longer be met); `target_ns` a soft target
    /// used by `sjf`'s slack rule.
    #[pyo3(signature = (job, model, batch, arrival_ns, devices = None, deadline_ns = None, target_ns = None, cost_ns = None))]
    #[allow(clippy::too_many_arguments)]
    fn submit(
        &self,
        py: Python<'_>,
        job: u64,
        model: u32,
        batch: u32,
        arrival_ns: u64,
        devices: Option<Vec<usize>>,
        deadline_ns: Option<u64>,
        target_ns: Option<u64>,
        cost_ns: Option<u64>,
    ) -> PyResult<u64> {
        let set = match devices {
            None => DeviceSet::all(self.devices),
            Some(list) => {
                for &d in &list {
                    self.check_device(py, d)?;
                }
                list.into_iter().collect()
            }
        };
        let mut state = self.state();
        let cost = cost_ns.unwrap_or_else(|| state.costs.estimate(model, batch.max(1)));
        let mut j = Job::new(job, model, cost.max(1), arrival_ns, set).with_batch(batch);
        if let Some(d) = deadline_ns {
            j = j.with_deadline(d);
        }
        if let Some(t) = target_ns {
            j = j.with_target(t);
        }
        state.engine.submit(j).map_err(|e| err(py, e))?;
        Ok(cost.max(1))
    }

    /// Removes a queued job; False if it is not queued (running jobs finish).
    fn cancel(&self, job: u64) -> bool {
        self.state().engine.cancel(job).is_some()
    }

    /// Every decision at `now_ns`, in order: `("drop", job, reason)` for jobs
    /// past their deadline (reason `deadline_expired` or, under `edf`,
    /// `deadline_unreachable`), then `("run", job, device)` until no eligible
    /// device has a free slot.
    fn dispatch(&self, now_ns: u64) -> Vec<(&'static str, u64, DecisionArg)> {
        let mut state = self.state();
        let State {
            engine, decisions, ..
        } = &mut *state;
        decisions.clear();
        engine.dispatch(now_ns, decisions);
        decisions
            .iter()
            .map(|d| match *d {
                Decision::Run { job, device } => ("run", job.id, DecisionArg::Device(device)),
                Decision::Drop { job, reason } => (
                    "drop",
                    job.id,
                    DecisionArg::Reason(match reason {
                        DropReason::DeadlineExpired => "deadline_expired",
                        DropReason::DeadlineUnreachable => "deadline_unreachable",
                    }),
                ),
            })
            .collect()
    }

    /// (fast-lane gate: `hold`, `budget`) when a short job held back at the
    /// last `dispatch` is admitted with no other event: call `dispatch` then.
    /// None when none was held back.
    fn next_wake(&self) -> Option<u64> {
        self.state().engine.next_wake()
    }

    /// Marks running job `job` finished at `now_ns`; returns `(device,
    /// held_ns)`. Call `dispatch` afterwards to hand the slot on.
    fn complete(&self, py: Python<'_>, job: u64, now_ns: u64) -> PyResult<(usize, u64)> {
        let done = self
            .state()
            .engine
            .complete(job, now_ns)
            .map_err(|e| err(py, e))?;
        Ok((done.device, done.held))
    }

    fn __repr__(&self) -> String {
        format!(
            "Scheduler(policy={:?}, devices={})",
            self.policy, self.devices
        )
    }
}

impl Scheduler {
    fn check_device(&self, py: Python<'_>, device: usize) -> PyResult<()> {
        if device >= self.devices {
            return Err(err(
                py,
                CoreError {
                    code: "bad_argument",
                    message: format!(
                        "device {device}: the scheduler has devices 0..{}",
                        self.devices
                    ),
                },
            ));
        }
        Ok(())
    }
}

/// The third field of a decision: a device id (`run`) or a reason (`drop`).
#[derive(IntoPyObject)]
enum DecisionArg {
    Device(usize),
    Reason(&'static str),
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Scheduler>()
}
