//! The serving state: every decision of a live server or a simulated one,
//! as methods that take `now` and append [`Action`]s (TGI's handle → task →
//! `State`). No I/O, no threads, no clock: the driver carries actions out.
//!
//! **One job per ready model.** While a model is *ready* (see
//! [`crate::queue`]) and has fewer than its limit of batches in flight, it has
//! exactly one job standing for "this model's next batch", costed by the
//! online estimate for the rows it would take now (resubmitted when that
//! changes), arriving when its oldest request entered the queue, with the
//! oldest request's target as the job's target (`sjf`'s slack rule) and, under
//! `edf`, the earliest queued deadline as its hard deadline. The limit is
//! `num_batch_threads` (per eligible device under `independent`).
//!
//! **Grants** come from one of three sources ([`Grants`]), an input rather
//! than a subclass:
//! - `Engine(policy)`: one policy engine for the whole host, one job per
//!   device at a time (K under `limit:K`; under `lanes` a short job may
//!   also take the device's fast slot beside a long one);
//! - `Independent`: the status quo — every model its own arrival-order
//!   engine with `num_batch_threads` slots on every device, so models overlap;
//! - `External`: another party (the `lanes arbiter` daemon) grants devices:
//!   the state emits [`Action::Ask`] / [`Action::Withdraw`] for the standing
//!   job and the driver calls [`ServingState::grant`] or, when the daemon
//!   refuses, [`ServingState::refuse`]. A standing ask is not re-costed as
//!   its queue grows (withdrawing it would lose its place at the daemon; the
//!   batch is cut when the grant comes anyway).
//!
//! **A refusal consumes work** so that ask → refuse cannot loop:
//! [`Refusal::Deadline`] fails the requests that can no longer make their
//! deadline (at least the earliest one, 504); [`Refusal::Refused`] fails one
//! batch of the queue (503 with the daemon's reason).
//!
//! **Late formation.** When a job is granted a device, the batch is cut from
//! the queue at that moment ([`Action::Start`]); requests found expired are
//! failed ([`Action::Fail`], 504), never run. A grant that finds nothing to
//! run is handed back at once.
//!
//! **Expiry** is also enforced while requests wait: a queued request whose
//! deadline passes is failed at the next call at or after it
//! ([`ServingState::next_wake`] says when that is), so a client is answered
//! at its deadline, not when a batch happens to form.
//!
//! **Deadline rule** ([`DeadlineRule`], set with
//! [`ServingState::set_deadline_rule`]): under `Finish`, when a batch is cut
//! its requests estimated to end past their deadline are failed (504
//! `deadline_unreachable`) and the batch runs without them.
//!
//! **`edf`** refuses at admission a request predicted to miss its deadline
//! (the estimated queued work of every model spread over the devices, plus
//! its own batch), and when the engine drops a model's job as unreachable,
//! the requests that cannot make it even if started now are failed.

use lanes_policy::{
    CostConfig, CostModel, Decision, DeviceId, DeviceSet, DeviceSpec, Job, JobId, Nanos, Policy,
    PolicyError, Prior, Scheduler,
};

use crate::deadline_rule::DeadlineRule;
use crate::error::ServeError;
use crate::queue::{Batching, ModelQueue, Queued, RequestId};

/// A model's index in the state, in the order models were added.
pub type ModelIx = u32;

/// Where device grants come from (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Grants {
    Engine(Policy),
    Independent,
    External,
}

/// (`External`) why the grant source will never grant a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Its deadline passed, or cannot be met, at the grant source.
    Deadline,
    /// Any other reason (overload, shutting down, unreachable), in words.
    Refused(String),
}

/// A model as the state serves it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    pub name: String,
    pub batching: Batching,
    /// Devices holding a replica of the model.
    pub devices: DeviceSet,
    /// The configured cost curve, until measurements replace it.
    pub prior: Option<Prior>,
}

/// One batch to run now.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    pub job: JobId,
    pub model: ModelIx,
    pub device: DeviceId,
    /// Rows of all requests together.
    pub rows: u32,
    /// The estimated run time at dispatch.
    pub estimate: Nanos,
    /// The requests, in arrival order.
    pub requests: Vec<Queued>,
}

/// What the driver must do, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Run this batch on its device, then call [`ServingState::complete`].
    Start(Batch),
    /// Answer this request (it left the queue) with `error`.
    Fail {
        model: ModelIx,
        request: RequestId,
        error: Box<ServeError>,
    },
    /// (`External`) ask for a device for `job`, the model's next batch.
    Ask {
        job: JobId,
        model: ModelIx,
        rows: u32,
        cost: Nanos,
        /// The earliest deadline queued (the ask is worthless after it).
        deadline: Option<Nanos>,
        devices: DeviceSet,
    },
    /// (`External`) the ask for `job` is void.
    Withdraw { job: JobId },
    /// (`External`) `job` was granted `device` but had nothing to run: give
    /// the grant back.
    Release { job: JobId, device: DeviceId },
}

#[derive(Debug)]
struct Served {
    name: String,
    queue: ModelQueue,
    devices: DeviceSet,
    /// Index into `engines` (0 when shared; the model's own under `independent`).
    engine: usize,
    /// The job standing for the next batch, and the rows it was costed for.
    job: Option<Standing>,
    /// Batches running now: (job, rows).
    running: Vec<(JobId, u32)>,
    limit: u32,
    /// When the model becomes ready (a partial batch waiting for company).
    ready_at: Option<Nanos>,
}

/// Job ids carry their model in the low bits, so no map is needed to find it.
const MODEL_BITS: u32 = 20;
const MODEL_MASK: JobId = (1 << MODEL_BITS) - 1;

/// The most models one state serves.
pub const MAX_MODELS: usize = 1 << MODEL_BITS;

/// The job standing for a model's next batch.
#[derive(Debug, Clone, Copy)]
struct Standing {
    id: JobId,
    rows: u32,
    cost: Nanos,
}

/// The serving state of one server (or one simulated host).
#[derive(Debug)]
pub struct ServingState {
    grants: Grants,
    devices: usize,
    engines: Vec<Scheduler>,
    costs: CostModel,
    models: Vec<Served>,
    next_job: JobId,
    dirty: Vec<ModelIx>,
    is_dirty: Vec<bool>,
    decisions: Vec<Decision>,
    /// Per engine: changed since its last dispatch (a job in, a slot freed, time).
    stale: Vec<bool>,
    scratch: Vec<Queued>,
    /// Emptied batch vectors handed back by the driver, for the next batches.
    spare: Vec<Vec<Queued>>,
    deadline_rule: DeadlineRule,
}

impl ServingState {
    /// A state over `devices` devices (ids `0..devices`), each running one job
    /// at a time.
    pub fn new(grants: Grants, devices: usize, cost: CostConfig) -> Result<Self, PolicyError> {
        Self::with_devices(grants, &vec![DeviceSpec::default(); devices], cost)
    }

    /// A state over `devices` as specified (their capacity applies to a shared
    /// engine; under `independent` a device runs `num_batch_threads` batches of
    /// every model).
    pub fn with_devices(
        grants: Grants,
        devices: &[DeviceSpec],
        cost: CostConfig,
    ) -> Result<Self, PolicyError> {
        // Validates the device list the same way for every source.
        let shared = Scheduler::new(
            match grants {
                Grants::Engine(policy) => policy,
                _ => Policy::Fifo,
            },
            devices,
        )?;
        let engines = match grants {
            Grants::Engine(_) => vec![shared],
            _ => Vec::new(),
        };
        let engines_len = engines.len();
        let devices = devices.len();
        Ok(Self {
            grants,
            devices,
            engines,
            costs: CostModel::new(cost),
            models: Vec::new(),
            next_job: 1,
            dirty: Vec::new(),
            is_dirty: Vec::new(),
            decisions: Vec::new(),
            stale: vec![true; engines_len],
            scratch: Vec::new(),
            spare: Vec::new(),
            deadline_rule: DeadlineRule::Start,
        })
    }

    /// Whether a request must start or finish by its deadline (the
    /// module docs; `Start` until set).
    pub fn set_deadline_rule(&mut self, rule: DeadlineRule) {
        self.deadline_rule = rule;
    }

    /// The deadline rule in force.
    pub fn deadline_rule(&self) -> DeadlineRule {
        self.deadline_rule
    }

    /// Adds a model; its index is the number of models before it.
    pub fn add_model(&mut self, config: ModelConfig) -> Result<ModelIx, ServeError> {
        let ix = self.models.len() as ModelIx;
        let bad = |reason: String| ServeError::BadModel {
            model: config.name.clone(),
            reason,
        };
        if self.models.len() >= MAX_MODELS {
            return Err(bad(format!("at most {MAX_MODELS} models per server")));
        }
        let devices = config.devices.intersect(DeviceSet::all(self.devices));
        if devices.is_empty() {
            return Err(bad(format!(
                "no replica on any of the {} devices",
                self.devices
            )));
        }
        let threads = config.batching.num_batch_threads.max(1);
        let (engine, limit) = match self.grants {
            Grants::Independent => {
                let spec = DeviceSpec { capacity: threads };
                let engine = Scheduler::new(Policy::Fifo, &vec![spec; self.devices])
                    .map_err(|e| bad(e.to_string()))?;
                self.engines.push(engine);
                self.stale.push(true);
                (
                    self.engines.len() - 1,
                    threads * devices.iter().count() as u32,
                )
            }
            _ => (0, threads),
        };
        if let Some(prior) = config.prior {
            self.costs.set_prior(ix, prior);
        }
        self.models.push(Served {
            name: config.name,
            queue: ModelQueue::new(config.batching),
            devices,
            engine,
            job: None,
            running: Vec::new(),
            limit,
            ready_at: None,
        });
        self.is_dirty.push(false);
        Ok(ix)
    }

    /// Models served, in index order.
    pub fn model_count(&self) -> usize {
        self.models.len()
    }

    /// A model's name.
    pub fn model_name(&self, model: ModelIx) -> &str {
        &self.models[model as usize].name
    }

    /// Rows queued for `model` now.
    pub fn queued_rows(&self, model: ModelIx) -> u64 {
        self.models[model as usize].queue.rows()
    }

    /// Batches of `model` running now.
    pub fn inflight(&self, model: ModelIx) -> u32 {
        self.models[model as usize].running.len() as u32
    }

    /// Whether `model` has a job standing for its next batch: it is ready,
    /// below its limit of batches in flight, and waits for a device.
    pub fn is_waiting(&self, model: ModelIx) -> bool {
        self.models[model as usize].job.is_some()
    }

    /// The online run-time estimate of a batch of `rows` of `model`.
    pub fn estimate(&self, model: ModelIx, rows: u32) -> Nanos {
        self.costs.estimate(model, rows.max(1))
    }

    /// Records a measured run time outside serving (warm-up).
    pub fn observe(&mut self, model: ModelIx, rows: u32, run: Nanos) {
        self.costs.observe(model, rows.max(1), run);
    }

    fn served(&self, model: ModelIx) -> Result<&Served, ServeError> {
        self.models
            .get(model as usize)
            .ok_or(ServeError::UnknownModel { model })
    }

    /// Admits a request of `rows` rows: reserves room in the model's queue
    /// (refused with 429 past the bound) and, under `edf`, refuses one
    /// predicted to miss `deadline` (504). Follow with
    /// [`ServingState::enqueue`] or [`ServingState::release`].
    pub fn admit(
        &mut self,
        now: Nanos,
        model: ModelIx,
        rows: u32,
        deadline: Option<Nanos>,
    ) -> Result<(), ServeError> {
        let s = self.served(model)?;
        if rows == 0 {
            return Err(ServeError::BadRows {
                model: s.name.clone(),
                rows,
                allowed: "the leading batch dimension must be at least 1",
            });
        }
        if let (Grants::Engine(Policy::Edf), Some(d)) = (self.grants, deadline) {
            if self.predicted_finish(model, rows, now) > d {
                return Err(ServeError::DeadlineUnreachable {
                    model: s.name.clone(),
                    queued: false,
                });
            }
        }
        let s = &mut self.models[model as usize];
        if s.queue.admit(rows) {
            return Ok(());
        }
        let b = s.queue.batching;
        Err(ServeError::QueueFull {
            model: s.name.clone(),
            bound: b.queue_rows(),
            max_enqueued_batches: b.max_enqueued_batches,
            max_batch_size: b.max_batch_size.max(1),
        })
    }

    /// When a request of `rows` rows of `model` would finish if queued now:
    /// the estimated queued work of every model spread over the devices, plus
    /// its own batch.
    pub fn predicted_finish(&self, model: ModelIx, rows: u32, now: Nanos) -> Nanos {
        let mut backlog = 0u64;
        for (ix, s) in self.models.iter().enumerate() {
            let queued = s.queue.rows();
            if queued > 0 {
                let cap = u64::from(s.queue.batching.max_batch_size.max(1));
                let batches = queued.div_ceil(cap);
                let one = self.costs.estimate(ix as ModelIx, cap.min(queued) as u32);
                backlog += batches * one;
            }
        }
        now + backlog / self.devices.max(1) as u64 + self.estimate(model, rows)
    }

    /// Gives back an admission (the request failed before it was queued).
    pub fn release(&mut self, model: ModelIx, rows: u32) {
        if let Some(s) = self.models.get_mut(model as usize) {
            s.queue.release(rows);
        }
    }

    /// Queues an admitted request and acts on it.
    pub fn enqueue(&mut self, now: Nanos, model: ModelIx, request: Queued, out: &mut Vec<Action>) {
        self.models[model as usize].queue.push(request);
        self.mark(model);
        self.pump(now, out);
    }

    /// Takes a still-queued request out (its client is gone); `false` if it
    /// is not queued (running or answered).
    pub fn withdraw(
        &mut self,
        now: Nanos,
        model: ModelIx,
        request: RequestId,
        out: &mut Vec<Action>,
    ) -> bool {
        let Some(s) = self.models.get_mut(model as usize) else {
            return false;
        };
        if s.queue.remove(request).is_none() {
            return false;
        }
        self.mark(model);
        self.pump(now, out);
        true
    }

    /// Acts on time passing: expired requests, partial batches whose timeout
    /// ran out. Call it at [`ServingState::next_wake`].
    pub fn poll(&mut self, now: Nanos, out: &mut Vec<Action>) {
        self.stale.fill(true);
        for ix in 0..self.models.len() as ModelIx {
            let s = &self.models[ix as usize];
            if s.queue.next_expiry() <= now || s.ready_at.is_some_and(|t| t <= now) {
                self.mark(ix);
            }
        }
        self.pump(now, out);
    }

    /// The next instant [`ServingState::poll`] has work, if any: a request
    /// expires, a partial batch's timeout runs out, or an engine's fast-lane
    /// gate admits a short job it held back.
    pub fn next_wake(&self) -> Option<Nanos> {
        // A plain loop: the simulator asks after every event.
        let mut next = Nanos::MAX;
        for s in &self.models {
            next = next.min(s.queue.next_expiry());
            if let Some(t) = s.ready_at {
                next = next.min(t);
            }
        }
        for e in &self.engines {
            if let Some(t) = e.next_wake() {
                next = next.min(t);
            }
        }
        (next != Nanos::MAX).then_some(next)
    }

    /// (`External`) `job` was granted `device`: cut and start its batch.
    pub fn grant(
        &mut self,
        now: Nanos,
        job: JobId,
        device: DeviceId,
        out: &mut Vec<Action>,
    ) -> bool {
        let Some(model) = self.waiting(job) else {
            return false;
        };
        self.start(now, job, model, device, out);
        self.pump(now, out);
        true
    }

    /// (`External`) `job` will never be granted: consume work (module docs)
    /// and ask again for what is left. False when `job` is not standing.
    pub fn refuse(
        &mut self,
        now: Nanos,
        job: JobId,
        refusal: Refusal,
        out: &mut Vec<Action>,
    ) -> bool {
        let Some(model) = self.waiting(job) else {
            return false;
        };
        let s = &mut self.models[model as usize];
        s.job = None;
        let mut gone = std::mem::take(&mut self.scratch);
        let error = match refusal {
            Refusal::Deadline => {
                let cost = self.costs.estimate(model, s.queue.next_batch_rows().max(1));
                s.queue.drop_late(now, cost, &mut gone);
                ServeError::DeadlineUnreachable {
                    model: s.name.clone(),
                    queued: true,
                }
            }
            Refusal::Refused(reason) => {
                let mut expired = Vec::new();
                s.queue.take(now, &mut gone, &mut expired);
                for request in expired {
                    out.push(Action::Fail {
                        model,
                        request: request.id,
                        error: Box::new(ServeError::expired(&s.name, request.arrival, now)),
                    });
                }
                ServeError::Refused {
                    model: s.name.clone(),
                    reason,
                }
            }
        };
        for request in gone.drain(..) {
            out.push(Action::Fail {
                model,
                request: request.id,
                error: Box::new(error.clone()),
            });
        }
        self.scratch = gone;
        self.mark(model);
        self.pump(now, out);
        true
    }

    /// Hands a finished batch's request vector back for reuse (optional: a
    /// driver that keeps it loses nothing but an allocation per batch).
    pub fn recycle(&mut self, mut requests: Vec<Queued>) {
        if self.spare.len() < 64 {
            requests.clear();
            self.spare.push(requests);
        }
    }

    /// A batch finished at `now`; `run` is its measured device time (`None`
    /// when the model failed: no measurement). Returns the batch's model.
    pub fn complete(
        &mut self,
        now: Nanos,
        job: JobId,
        run: Option<Nanos>,
        out: &mut Vec<Action>,
    ) -> Option<ModelIx> {
        let model = (job & MODEL_MASK) as ModelIx;
        let s = self.models.get_mut(model as usize)?;
        let i = s.running.iter().position(|&(j, _)| j == job)?;
        let (_, rows) = s.running.swap_remove(i);
        if self.grants != Grants::External {
            let _ = self.engines[s.engine].complete(job, now);
            self.stale[s.engine] = true;
        }
        if let Some(run) = run {
            self.costs.observe(model, rows, run);
        }
        self.mark(model);
        self.pump(now, out);
        Some(model)
    }

    /// The model whose standing job is `job`, if it is one.
    fn waiting(&self, job: JobId) -> Option<ModelIx> {
        let model = (job & MODEL_MASK) as ModelIx;
        let s = self.models.get(model as usize)?;
        s.job.filter(|j| j.id == job).map(|_| model)
    }

    fn mark(&mut self, model: ModelIx) {
        if !self.is_dirty[model as usize] {
            self.is_dirty[model as usize] = true;
            self.dirty.push(model);
        }
    }

    /// Refreshes dirty models and applies engine decisions until none is
    /// left (work conserving).
    fn pump(&mut self, now: Nanos, out: &mut Vec<Action>) {
        loop {
            while let Some(model) = self.dirty.pop() {
                self.is_dirty[model as usize] = false;
                if self.models[model as usize].queue.next_expiry() <= now {
                    self.expire(now, model, out);
                }
                self.refresh(now, model, out);
            }
            let mut progress = false;
            let mut decisions = std::mem::take(&mut self.decisions);
            for e in 0..self.engines.len() {
                // An engine untouched since its last dispatch, or with no free
                // slot (regular, or `lanes`' open fast slot), has nothing to
                // decide (`edf` may still drop jobs).
                if !std::mem::take(&mut self.stale[e]) {
                    continue;
                }
                let engine = &mut self.engines[e];
                if !engine.has_room() && engine.policy() != Policy::Edf {
                    continue;
                }
                engine.dispatch(now, &mut decisions);
                for d in decisions.drain(..) {
                    progress = true;
                    match d {
                        Decision::Run { job, device } => {
                            if let Some(model) = self.waiting(job.id) {
                                self.start(now, job.id, model, device, out);
                            }
                        }
                        Decision::Drop { job, .. } => self.unreachable(now, job, out),
                    }
                }
            }
            self.decisions = decisions;
            if !progress && self.dirty.is_empty() {
                return;
            }
        }
    }

    fn expire(&mut self, now: Nanos, model: ModelIx, out: &mut Vec<Action>) {
        let mut gone = std::mem::take(&mut self.scratch);
        let s = &mut self.models[model as usize];
        s.queue.expire(now, &mut gone);
        for request in gone.drain(..) {
            out.push(Action::Fail {
                model,
                request: request.id,
                error: Box::new(ServeError::expired(&s.name, request.arrival, now)),
            });
        }
        self.scratch = gone;
    }

    /// Keeps exactly one job for a ready model below its limit (module docs).
    fn refresh(&mut self, now: Nanos, model: ModelIx, out: &mut Vec<Action>) {
        let s = &mut self.models[model as usize];
        s.ready_at = None;
        let ready = s.queue.ready_at(now);
        let want = match ready {
            Some(t) if t <= now && (s.running.len() as u32) < s.limit => {
                Some(s.queue.next_batch_rows())
            }
            Some(t) if t > now => {
                s.ready_at = Some(t);
                None
            }
            _ => None,
        };
        if let (Some(rows), Some(job)) = (want, s.job) {
            if rows == job.rows || self.grants == Grants::External {
                return;
            }
        }
        self.cancel_job(model, out);
        let Some(rows) = want else {
            return;
        };
        let id = self.next_job << MODEL_BITS | JobId::from(model);
        self.next_job += 1;
        let cost = self.costs.estimate(model, rows.max(1));
        let s = &mut self.models[model as usize];
        let first = *s.queue.front().expect("a ready model has a queued request");
        s.job = Some(Standing { id, rows, cost });
        match self.grants {
            Grants::External => out.push(Action::Ask {
                job: id,
                model,
                rows,
                cost,
                deadline: s.queue.earliest_deadline(),
                devices: s.devices,
            }),
            grants => {
                let mut job = Job::new(id, model, cost, first.enqueued, s.devices).with_batch(rows);
                job.target = first.target.or(first.deadline);
                if grants == Grants::Engine(Policy::Edf) {
                    job.deadline = s.queue.earliest_deadline();
                }
                self.engines[s.engine]
                    .submit(job)
                    .expect("job ids are unique and devices were checked at add_model");
                self.stale[s.engine] = true;
            }
        }
    }

    fn cancel_job(&mut self, model: ModelIx, out: &mut Vec<Action>) {
        let s = &mut self.models[model as usize];
        let Some(Standing { id, .. }) = s.job.take() else {
            return;
        };
        match self.grants {
            Grants::External => out.push(Action::Withdraw { job: id }),
            _ => {
                self.engines[s.engine].cancel(id);
            }
        }
    }

    /// `job` of `model` holds `device` now: cut the batch (late formation).
    fn start(
        &mut self,
        now: Nanos,
        job: JobId,
        model: ModelIx,
        device: DeviceId,
        out: &mut Vec<Action>,
    ) {
        if self.models[model as usize].queue.next_expiry() <= now {
            self.expire(now, model, out);
        }
        let s = &mut self.models[model as usize];
        let costed = s.job.take().filter(|j| j.id == job);
        let mut requests = self.spare.pop().unwrap_or_default();
        let mut gone = std::mem::take(&mut self.scratch);
        let mut rows = s.queue.take(now, &mut requests, &mut gone);
        debug_assert!(gone.is_empty(), "expired requests left before the cut");
        let mut estimate = match costed {
            Some(c) if c.rows == rows => c.cost,
            _ => self.costs.estimate(model, rows.max(1)),
        };
        if self.deadline_rule == DeadlineRule::Finish && !requests.is_empty() {
            let end = now.saturating_add(estimate);
            requests.retain(|q| {
                let late = q.misses(end);
                if late {
                    gone.push(*q);
                }
                !late
            });
            if !gone.is_empty() {
                rows = requests.iter().map(|q| q.rows).sum();
                estimate = self.costs.estimate(model, rows.max(1));
                fail_unreachable(model, &s.name, &mut gone, out);
            }
        }
        self.scratch = gone;
        let engine = s.engine;
        if requests.is_empty() {
            self.spare.push(requests);
            match self.grants {
                Grants::External => out.push(Action::Release { job, device }),
                _ => {
                    let _ = self.engines[engine].complete(job, now);
                    self.stale[engine] = true;
                }
            }
            self.mark(model);
            return;
        }
        s.running.push((job, rows));
        self.mark(model);
        out.push(Action::Start(Batch {
            job,
            model,
            device,
            rows,
            estimate,
            requests,
        }));
    }

    /// (`edf`) the engine dropped `job`: fail what cannot make its deadline.
    fn unreachable(&mut self, now: Nanos, job: Job, out: &mut Vec<Action>) {
        let Some(model) = self.waiting(job.id) else {
            return;
        };
        let s = &mut self.models[model as usize];
        s.job = None;
        let mut gone = std::mem::take(&mut self.scratch);
        // The engine's rule and the queue's agree (now + cost > deadline);
        // drop_late guards the loop should they ever not.
        s.queue.drop_late(now, job.cost, &mut gone);
        fail_unreachable(model, &s.name, &mut gone, out);
        self.scratch = gone;
        self.mark(model);
    }
}

/// Fails every request of `model` in `gone` as unable to finish by its
/// deadline (504 `deadline_unreachable`), leaving `gone` empty.
fn fail_unreachable(model: ModelIx, name: &str, gone: &mut Vec<Queued>, out: &mut Vec<Action>) {
    for request in gone.drain(..) {
        out.push(Action::Fail {
            model,
            request: request.id,
            error: Box::new(ServeError::DeadlineUnreachable {
                model: name.to_owned(),
                queued: true,
            }),
        });
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
