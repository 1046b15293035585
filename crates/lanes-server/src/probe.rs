//! The driver task's side of the observability ([`crate::observe`]): the
//! hook calls in `driver.rs`, plain `&mut` methods that only the task makes.
//! It keeps the batches on devices (for the device accounts and the
//! timeline), publishes queue depths and cost estimates for scrapes, and
//! counts what only the driver sees (`rejected`, `expired`, `cancelled`).
//!
//! **Idle while waiting** (docs/metrics.md): at a decision point — after the
//! state has applied every decision it would make now — a device is idle
//! while work waits iff some model has a job standing for its next batch
//! ([`ServingState::is_waiting`]) that may run on the device, and the device
//! has a free slot for it: under a shared engine fewer jobs on the device
//! than the policy's regular slots (1, or K under `limit:K`; `lanes`' fast
//! slot is for short jobs only), under `independent` fewer of that model's
//! jobs on it than its `num_batch_threads`. The state is work conserving, so
//! this stays 0; a non-zero value is a bug.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use lanes_policy::{DeviceSet, JobId, Nanos};
use lanes_serving::{Batch, Grants, ModelIx, ServeError, ServingState};
use rustc_hash::FxHashMap;

use crate::clock::Clock;
use crate::driver::DriverConfig;
use crate::observe::{lock, ObserveConfig, Observer};
use crate::occupancy::Occupancy;
use crate::thread_clocks::CallClocks;
use crate::timeline::Job;

/// A batch on a device, from its start to its completion.
#[derive(Debug, Clone, Copy)]
struct Dispatched {
    device: usize,
    model: ModelIx,
    rows: u32,
    requests: u32,
    start: Nanos,
    estimate: Nanos,
    queue_wait: Nanos,
}

/// A model as the decision point sees it.
#[derive(Debug)]
struct Eligible {
    devices: DeviceSet,
    threads: u32,
    /// Its jobs on each device now.
    running: Vec<u32>,
}

/// The driver task's side (see the module docs); only the task touches it.
#[derive(Debug)]
pub(crate) struct Probe {
    shared: Arc<Observer>,
    occupancy: Occupancy,
    names: Vec<Arc<str>>,
    running: FxHashMap<JobId, Dispatched>,
    models: Vec<Eligible>,
    /// Regular slots per device under a shared engine; None under `independent`.
    regular: Option<u32>,
    /// Models whose queue depth may have changed since the last decision point.
    touched: Vec<ModelIx>,
    waiting: Vec<bool>,
}

impl Probe {
    /// The observability of a driver over `state` (its models added, in
    /// `config`'s order), on `clock`.
    pub(crate) fn start(
        config: &DriverConfig,
        observe: ObserveConfig,
        state: &ServingState,
        clock: Clock,
    ) -> Self {
        let devices: Vec<String> = (0..config.devices)
            .map(|d| {
                observe
                    .devices
                    .get(d)
                    .cloned()
                    .unwrap_or_else(|| format!("device:{d}"))
            })
            .collect();
        let occupancy = Occupancy::new(devices.clone());
        let shared = Arc::new(Observer::new(config, &observe, devices, &occupancy, clock));
        let probe = Self {
            shared,
            occupancy,
            names: config
                .models
                .iter()
                .map(|m| Arc::from(m.name.as_str()))
                .collect(),
            running: FxHashMap::default(),
            models: config
                .models
                .iter()
                .map(|m| Eligible {
                    devices: m.devices.intersect(DeviceSet::all(config.devices)),
                    threads: m.batching.num_batch_threads.max(1),
                    running: vec![0; config.devices],
                })
                .collect(),
            regular: match config.grants {
                Grants::Engine(policy) => Some(policy.slots(1)),
                _ => None,
            },
            touched: Vec::new(),
            waiting: vec![false; config.devices],
        };
        for m in 0..config.models.len() as ModelIx {
            probe.publish_estimates(m, state);
        }
        probe
    }

    /// The shared side, for handles and executors.
    pub(crate) fn observer(&self) -> &Arc<Observer> {
        &self.shared
    }

    fn publish_estimates(&self, model: ModelIx, state: &ServingState) {
        let gauges = &self.shared.snapshot.models[model as usize];
        for (&size, ns) in gauges.sizes.iter().zip(&gauges.estimates) {
            ns.store(state.estimate(model, size), Ordering::Relaxed);
        }
    }

    /// A request of `model` was queued.
    pub(crate) fn queued(&mut self, model: ModelIx) {
        self.touched.push(model);
    }

    /// Admission refused a request of `model` with `error`.
    pub(crate) fn refused(&mut self, model: ModelIx, error: &ServeError) {
        let Some(m) = self.shared.models.get(model as usize) else {
            return;
        };
        match error.http_status() {
            429 => lock(&m.stats).rejected += 1,
            504 => lock(&m.stats).expired += 1,
            _ => {}
        }
    }

    /// A queued request of `model` was withdrawn (its client went away).
    pub(crate) fn withdrawn(&mut self, model: ModelIx) {
        lock(&self.shared.models[model as usize].stats).cancelled += 1;
        self.touched.push(model);
    }

    /// The state failed a queued request of `model` (it expired, or `edf`
    /// found it unreachable).
    pub(crate) fn expired(&mut self, model: ModelIx) {
        lock(&self.shared.models[model as usize].stats).expired += 1;
        self.touched.push(model);
    }

    /// `batch` starts on its device at `now`.
    pub(crate) fn started(&mut self, now: Nanos, batch: &Batch) {
        let oldest = batch.requests.first().map_or(now, |q| q.arrival);
        self.running.insert(
            batch.job,
            Dispatched {
                device: batch.device,
                model: batch.model,
                rows: batch.rows,
                requests: batch.requests.len() as u32,
                start: now,
                estimate: batch.estimate,
                queue_wait: now.saturating_sub(oldest),
            },
        );
        self.occupancy.begin(batch.device, now);
        self.models[batch.model as usize].running[batch.device] += 1;
        self.touched.push(batch.model);
    }

    /// `job` completed at `now` with its call's `clocks` (its run time, its
    /// thread's CPU and run delay; `failed`: the model failed); the state has
    /// taken the measurement.
    pub(crate) fn finished(
        &mut self,
        now: Nanos,
        job: JobId,
        clocks: CallClocks,
        failed: bool,
        state: &ServingState,
    ) {
        let Some(d) = self.running.remove(&job) else {
            return;
        };
        self.occupancy.end(d.device, now);
        let running = &mut self.models[d.model as usize].running[d.device];
        *running = running.saturating_sub(1);
        self.shared.timeline.record(Job {
            device: d.device,
            model: Arc::clone(&self.names[d.model as usize]),
            rows: d.rows,
            requests: d.requests,
            start: d.start,
            end: now,
            estimated: d.estimate,
            measured: clocks.wall,
            cpu: clocks.cpu,
            run_delay: clocks.run_delay,
            queue_wait: d.queue_wait,
            failed,
        });
        if !failed {
            self.publish_estimates(d.model, state);
        }
    }

    /// The driver drains: requests cut from now on are `unavailable`.
    pub(crate) fn draining(&self) {
        self.shared.draining.store(true, Ordering::Relaxed);
    }

    /// A decision point (see the module docs): publish the queue depths that
    /// may have changed; open or close the idle-while-waiting intervals.
    pub(crate) fn decision_point(&mut self, now: Nanos, state: &ServingState) {
        for model in self.touched.drain(..) {
            let depth = state.queued_rows(model);
            self.shared.snapshot.models[model as usize]
                .depth
                .store(depth, Ordering::Relaxed);
        }
        self.waiting.fill(false);
        for (ix, m) in self.models.iter().enumerate() {
            if !state.is_waiting(ix as ModelIx) {
                continue;
            }
            for d in m.devices.iter() {
                let free = match self.regular {
                    Some(slots) => self.occupancy.running(d) < slots,
                    None => m.running[d] < m.threads,
                };
                if free {
                    self.waiting[d] = true;
                }
            }
        }
        self.occupancy.mark_waiting(&self.waiting, now);
    }
}
