//! Batching and dispatch through the serving state (every mode but
//! `semaphore`).
//!
//! After its pre, a request enters `lanes-serving`'s [`ServingState`] — the
//! very state `lanes serve` runs: admission, late batch formation with the
//! service's `max_batch_size` and `batch_timeout_micros`, one job per ready
//! service, expiry at the deadline, target = arrival + SLO. The simulator
//! carries out the state's actions and keeps one wake-up event pending for
//! its earliest timer.
//!
//! **Batch cost rule.** A batch of n requests runs for the mean of its
//! requests' own GPU samples times the service's batching factor at n
//! ([`crate::config::BatchingSpec`]), at least 1 ns. Before its runtime call
//! it does its Python work (`host.interpreter.batch_ms`, holding its device
//! and the lock, see [`super::cpu`]), then holds its device, and nothing
//! else, for a draw of `host.device_hold_ms` (the driver and the device
//! thread handing it over and back; placed before the call: after it, the
//! device and the request would take as long, up to what else shares the
//! cores meanwhile), and with `host.call_preempt_per_ms` for the waits of
//! its call's preemptions (a Poisson count per ms of its cost, each a draw
//! of `host.call_preempt_ms`: the device thread waiting for its core, which
//! processor sharing does not make at light load; with
//! `host.call_preempt_absorbed` they are held after the call instead, for
//! what they exceed the call's wait on the shared cores, so the call waits
//! the larger of the two, not their sum); with
//! `host.device_hold_busy_ms`, when the runtimes outnumber the cores, a
//! batch dispatched while n calls run on the cores finds its device thread's
//! core busy with probability `min(1, n / cores)` and its hold is a draw of
//! that instead (the thread waiting for the core); with `host.shared_cores`
//! the runtime call holds a core.
//! On completion the measured time it held the device feeds the estimator
//! and each request goes on to its post.

use lanes_policy::{CostConfig, DeviceSet, DeviceSpec, Prior};
use lanes_serving::{Action, Batching, Grants, ModelConfig, Queued, ServingState};
use rand::Rng;
use rand_distr::{Distribution, Poisson};

use super::cpu::{BATCH_PY_TOKEN, BATCH_TOKEN};
use super::event::Ev;
use super::request::Phase;
use super::Sim;
use crate::config::{Mode, Scenario, SimError};

/// One batch on a GPU: its job in the serving state and its requests.
#[derive(Debug, Default)]
pub(super) struct SimBatch {
    job: u64,
    device: usize,
    reqs: Vec<u32>,
    cost: u64,
    start: u64,
    measured: bool,
    /// Its model (the service's index).
    service: u32,
    /// When its oldest request entered the serving state (its pre done).
    oldest: u64,
    /// What that thread had run since it last slept as its call started.
    pub(super) ran: u64,
    /// When its runtime call asked for its device's runtime (after any hold).
    called: u64,
    /// Its preemptions' waits, held after its call for what they exceed
    /// the call's wait on the cores (`host.call_preempt_absorbed`; else 0).
    preempt: u64,
}

impl Sim<'_> {
    /// Request `r`'s pre is done: it queues for a batch (or, under
    /// `semaphore`, starts on its GPU).
    pub(super) fn request_gpu(&mut self, r: u32) {
        let Some(state) = self.state.as_mut() else {
            let g = self.reqs[r as usize].gpu as usize;
            self.start_gpu(r, g);
            return;
        };
        let q = &mut self.reqs[r as usize];
        q.waiting_since = self.now;
        let svc = &self.services[q.service as usize];
        let model = u32::from(q.service);
        let deadline = svc.deadline.map(|d| q.sent + d);
        if state.admit(self.now, model, 1, deadline).is_err() {
            self.record_drop(r);
            self.leave(r);
            return;
        }
        let request = Queued {
            id: u64::from(r),
            rows: 1,
            arrival: q.sent,
            enqueued: self.now,
            deadline,
            target: Some(q.sent + svc.slo),
        };
        let mut actions = std::mem::take(&mut self.actions);
        state.enqueue(self.now, model, request, &mut actions);
        self.apply(actions);
    }

    /// Carries out the serving state's actions, then keeps a wake-up event
    /// pending for its next timer.
    fn apply(&mut self, mut actions: Vec<Action>) {
        // Many calls bring no action: no drain then.
        if !actions.is_empty() {
            for action in actions.drain(..) {
                match action {
                    Action::Start(batch) => self.start_batch(batch),
                    Action::Fail { request, .. } => {
                        let r = request as u32;
                        self.end_wait(r);
                        self.record_drop(r);
                        self.leave(r);
                    }
                    // Grants are never external here.
                    Action::Ask { .. } | Action::Withdraw { .. } | Action::Release { .. } => {}
                }
            }
        }
        self.actions = actions;
        let next = self.state.as_ref().and_then(ServingState::next_wake);
        if let Some(t) = next.filter(|&t| t < self.wake_at) {
            self.wake_at = t;
            self.at(t.max(self.now), Ev::Wake);
        }
    }

    #[inline]
    pub(super) fn on_wake(&mut self, t: u64) {
        if t != self.wake_at {
            return; // superseded by an earlier wake-up
        }
        self.wake_at = u64::MAX;
        let mut actions = std::mem::take(&mut self.actions);
        if let Some(state) = self.state.as_mut() {
            state.poll(self.now, &mut actions);
        }
        self.apply(actions);
    }

    /// A batch starts on its GPU: its time is the service's curve at its size
    /// scaled by its requests' own samples (config::BatchingSpec).
    fn start_batch(&mut self, batch: lanes_serving::Batch) {
        let service = batch.model as usize;
        let spec = &self.sc.services[service];
        let n = batch.requests.len() as u32;
        let slot = match self.free_batches.pop() {
            Some(slot) => slot,
            None => {
                self.batches.push(SimBatch::default());
                (self.batches.len() - 1) as u32
            }
        };
        let mut reqs = std::mem::take(&mut self.batches[slot as usize].reqs);
        let (mut work, mut measured, mut oldest) = (0u64, false, self.now);
        for q in &batch.requests {
            let r = q.id as u32;
            reqs.push(r);
            oldest = oldest.min(self.reqs[r as usize].waiting_since);
            self.end_wait(r);
            let req = &mut self.reqs[r as usize];
            req.gpu = batch.device as u16;
            req.gpu_start = self.now;
            work += req.work;
            measured |= req.measured;
        }
        let factor = spec.batching.factor(spec.gpu.mean_ms, n);
        let cost = ((work as f64 / f64::from(n.max(1))) * factor + 0.5).max(1.0) as u64;
        if let Some(state) = self.state.as_mut() {
            state.recycle(batch.requests);
        }
        self.batches[slot as usize] = SimBatch {
            job: batch.job,
            device: batch.device,
            reqs,
            cost,
            start: self.now,
            measured,
            service: service as u32,
            oldest,
            ran: 0,
            called: self.now,
            preempt: 0,
        };
        if measured {
            self.per_service[service].batch(n as usize);
        }
        if self.batch_py > 0 {
            self.cpu_phase(slot | BATCH_PY_TOKEN, self.batch_py);
        } else {
            self.device_hold(slot);
        }
    }

    /// The batch in `slot` holds its device for a draw of
    /// `host.device_hold_ms` and, with `host.call_preempt_per_ms`, for the
    /// waits of its call's preemptions: a Poisson count with mean
    /// `call_preempt_per_ms` x its cost in ms, each a draw of
    /// `host.call_preempt_ms` (no core held; its device counts as busy),
    /// then goes on to its runtime call; without either, or with draws of
    /// 0, at once. With `host.device_hold_busy_ms` (the runtimes outnumber
    /// the cores) the hold is a draw of that instead with probability
    /// `min(1, calls on the cores / cores)`.
    pub(super) fn device_hold(&mut self, slot: u32) {
        let mut draw = match &self.hold {
            Some(q) => q.sample(&mut self.hold_rng),
            None => 0,
        };
        if let Some(busy) = &self.hold_busy {
            if self.calls_on > 0 {
                let p = self.calls_on as f64 / self.sc.host.cpu_cores as f64;
                if self.hold_busy_rng.random::<f64>() < p {
                    draw = busy
                        .as_ref()
                        .map_or(0, |q| q.sample(&mut self.hold_busy_rng));
                }
            }
        }
        if let Some((per_ns, q)) = &self.preempt {
            let mean = per_ns * self.batches[slot as usize].cost as f64;
            let n = Poisson::new(mean).map_or(0.0, |p| p.sample(&mut self.preempt_rng));
            let mut waits = 0;
            for _ in 0..n as u64 {
                waits += q.sample(&mut self.preempt_rng);
            }
            if self.preempt_absorbed {
                self.batches[slot as usize].preempt = waits;
            } else {
                draw += waits;
            }
        }
        if draw == 0 {
            self.batch_runtime(slot);
            return;
        }
        let g = self.batches[slot as usize].device;
        self.gpus[g].hold(self.now, &self.sc.host.eta);
        self.at(self.now + draw, Ev::Held(slot));
    }

    /// The batch in `slot`'s device hold is over: its runtime call starts.
    pub(super) fn hold_done(&mut self, slot: u32) {
        let g = self.batches[slot as usize].device;
        self.gpus[g].unhold(self.now, &self.sc.host.eta);
        self.batch_runtime(slot);
    }

    /// The batch in `slot` is ready for its runtime call: it starts on its
    /// device, after waiting for a core if the cores are shared.
    /// With time-sliced cores the runtime call is a phase of those cores
    /// (its device only counts as busy meanwhile).
    pub(super) fn batch_runtime(&mut self, slot: u32) {
        self.batches[slot as usize].called = self.now;
        let b = &self.batches[slot as usize];
        let (g, cost) = (b.device, b.cost);
        if !self.sc.host.shared_cores {
            self.run_batch(slot);
        } else {
            if self.sliced.is_some() {
                self.gpus[g].hold(self.now, &self.sc.host.eta);
                self.calls_on += 1;
            }
            if let Some(runs) = &self.runs {
                let b = &self.batches[slot as usize];
                self.batches[slot as usize].ran = runs.ran(b.device, b.service as usize, self.now);
            }
            self.take_core(slot | BATCH_TOKEN, cost);
        }
    }

    /// The batch in `slot` finished its runtime call on the time-sliced
    /// cores: its device is free, or with `host.call_preempt_absorbed`
    /// stays held for what its preemptions' waits exceed the call's own
    /// time beyond its cost (the wait the shared cores gave it).
    pub(super) fn batch_off_cores(&mut self, slot: u32) {
        let b = &self.batches[slot as usize];
        if let Some(runs) = self.runs.as_mut() {
            runs.ended(b.device, b.service as usize, b.ran, b.cost, self.now);
        }
        self.calls_on -= 1;
        let on_cores = self.now - b.called;
        let beyond = b.preempt.saturating_sub(on_cores.saturating_sub(b.cost));
        if beyond > 0 {
            self.at(self.now + beyond, Ev::Preempted(slot));
            return;
        }
        self.preempted_done(slot);
    }

    /// The batch in `slot`'s runtime call and its waits are over: its
    /// device is free and the batch is done.
    pub(super) fn preempted_done(&mut self, slot: u32) {
        let g = self.batches[slot as usize].device;
        self.gpus[g].unhold(self.now, &self.sc.host.eta);
        let mut actions = std::mem::take(&mut self.actions);
        self.batch_done(slot, &mut actions);
        self.apply(actions);
    }

    /// The batch in `slot` starts on its device (holding a core if shared).
    pub(super) fn run_batch(&mut self, slot: u32) {
        let b = &self.batches[slot as usize];
        let (g, cost) = (b.device, b.cost);
        if let Some(t) = self.gpus[g].start(slot, cost, self.now, &self.sc.host.eta) {
            let v = self.gpus[g].version;
            self.at(t, Ev::Gpu(g as u16, v));
        }
    }

    /// GPU `g`'s completion event (stale unless `version` is current): its
    /// finished jobs — batches, or requests under `semaphore` — leave it.
    #[inline]
    pub(super) fn on_gpu_done(&mut self, g: usize, version: u32) {
        let mut done = std::mem::take(&mut self.done);
        let next = self.gpus[g].finish(version, self.now, &self.sc.host.eta, &mut done);
        if let Some(t) = next {
            let v = self.gpus[g].version;
            self.at(t, Ev::Gpu(g as u16, v));
        }
        let mut actions = std::mem::take(&mut self.actions);
        for &id in &done {
            if self.state.is_none() {
                self.request_off_gpu(id);
            } else {
                self.batch_done(id, &mut actions);
            }
        }
        done.clear();
        self.done = done;
        self.apply(actions);
    }

    /// The batch in `slot` is done: its core (if shared) and slot are free,
    /// the serving state learns its time, and its requests go on to post.
    fn batch_done(&mut self, slot: u32, actions: &mut Vec<Action>) {
        let batch = std::mem::take(&mut self.batches[slot as usize]);
        self.free_batches.push(slot);
        let held = self.now - batch.start;
        if let Some(timeline) = self.timeline.as_mut() {
            let ms = |ns: u64| ns as f64 / 1e6;
            timeline.push(super::BatchSpan {
                service: self.sc.services[batch.service as usize].name.clone(),
                device: batch.device as u32,
                size: batch.reqs.len() as u32,
                oldest_ms: ms(batch.oldest),
                start_ms: ms(batch.start),
                called_ms: ms(batch.called),
                end_ms: ms(self.now),
                cost_ms: ms(batch.cost),
                measured: batch.measured,
            });
        }
        if batch.measured {
            self.gpu_time.effective += batch.cost;
            self.gpu_time.overlap += held.saturating_sub(batch.cost);
            let n = batch.reqs.len();
            self.per_service[batch.service as usize].call(n, self.now - batch.called, batch.cost);
        }
        if self.sc.host.shared_cores {
            self.release_core();
        }
        let state = self.state.as_mut().expect("batch modes have a state");
        state.complete(self.now, batch.job, Some(held), actions);
        for &r in &batch.reqs {
            self.begin_cpu(r, Phase::Post);
        }
        let mut reqs = batch.reqs;
        reqs.clear();
        self.batches[slot as usize].reqs = reqs;
    }
}

/// The serving state for `mode` (none for `semaphore`): one model per
/// service with its batching, its GPU cost curve as the estimator's prior.
pub(super) fn serving_state(sc: &Scenario, mode: Mode) -> Result<Option<ServingState>, SimError> {
    let g = sc.host.gpus;
    let grants = match mode {
        Mode::Engine(policy) => Grants::Engine(policy),
        Mode::Independent => Grants::Independent,
        Mode::Semaphore => return Ok(None),
    };
    let spec = DeviceSpec {
        capacity: sc.host.gpu_capacity,
    };
    let mut state = ServingState::with_devices(grants, &vec![spec; g], CostConfig::default())?;
    state.set_deadline_rule(sc.host.deadline_rule);
    for s in &sc.services {
        let b = &s.batching;
        let threads = match mode {
            Mode::Independent => s.workers_per_gpu,
            // No limit of the service's own: every slot of every GPU,
            // `lanes`' fast slots included.
            Mode::Engine(policy) => b
                .num_batch_threads
                .unwrap_or(g as u32 * (sc.host.gpu_capacity + policy.fast_slots())),
            Mode::Semaphore => b
                .num_batch_threads
                .unwrap_or(g as u32 * sc.host.gpu_capacity),
        };
        let max = b.max_batch_size;
        let solo = s.gpu.mean_ms * 1e6;
        let per_item = if max > 1 {
            (solo * b.factor(s.gpu.mean_ms, max) - solo) / f64::from(max - 1)
        } else {
            solo
        };
        state
            .add_model(ModelConfig {
                name: s.name.clone(),
                batching: Batching {
                    max_batch_size: max,
                    batch_timeout: b.batch_timeout_micros * 1000,
                    num_batch_threads: threads,
                    // The simulator measures queues, it does not bound them.
                    max_enqueued_batches: u32::MAX / max.max(1),
                },
                devices: DeviceSet::all(g),
                prior: Some(Prior {
                    fixed: solo - per_item,
                    per_item,
                }),
            })
            .map_err(|e| SimError::InvalidScenario {
                scenario: sc.name.clone(),
                key: format!("service {}", s.name),
                value: e.code().to_owned(),
                allowed: e.to_string(),
            })?;
    }
    Ok(Some(state))
}
