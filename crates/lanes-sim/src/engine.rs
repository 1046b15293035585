//! The event loop: one simulated run of a scenario at one load and seed.
//!
//! Events are arrivals (one pending per service), CPU-phase ends and GPU
//! completions, processed in time order (ties in the order they were
//! scheduled). A request's path:
//!
//! - engine modes and `independent`: arrival → CPU pre → the service's queue
//!   in `lanes-serving`'s [`ServingState`] — the very state `lanes serve`
//!   runs: admission, late batch formation with the service's
//!   `max_batch_size` and `batch_timeout_micros`, one job per ready service,
//!   expiry at the deadline, target = arrival + SLO → a batch dispatched to a
//!   GPU (by the shared policy engine, or under `independent` by the service's
//!   own engine with `workers_per_gpu` batches per GPU, overlapping other
//!   services) → CPU post for each request → done. A batch's GPU time follows
//!   the service's cost curve in batch size ([`crate::config::BatchingSpec`]);
//!   measured batch times feed the estimator; requests failed at their
//!   deadline count as dropped and as SLO misses.
//! - `semaphore` (the field's per-GPU limit, one request at a time): arrival →
//!   bound round-robin to a GPU → waits for one of the service's workers on
//!   that GPU and one of the GPU's semaphore permits, both held from before
//!   pre until after post → GPU (overlapping whatever else runs there).
//!
//! With `host.interpreter` (the server's global lock,
//! [`Interpreter`]) the CPU phases and each batch's Python
//! work (`batch_ms`, before its runtime call, while the batch holds its
//! device) wait for the lock, then for a core; with `host.busy_cores`
//! background slices queue for cores throughout the run.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use lanes_policy::{CostConfig, DeviceSet, DeviceSpec, Prior};
use lanes_serving::{Action, Batching, Grants, ModelConfig, Queued, ServingState};
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

use crate::config::{Interpreter, Mode, Scenario, SimError, BUSY_SLICE_MS};
use crate::host::{CpuPool, Gpu};
use crate::stats::{GpuTime, PointResult, Recorder};
use crate::workload::{ArrivalGen, CostSampler};

/// CPU-pool tokens with this bit are batches waiting for a core
/// (`host.shared_cores`); the rest are requests' CPU phases.
const BATCH_TOKEN: u32 = 1 << 31;
/// Tokens with this bit are a batch's Python work (`host.interpreter.batch_ms`).
const BATCH_PY_TOKEN: u32 = 1 << 30;
/// The token of a background slice (`host.busy_cores`).
const BUSY_TOKEN: u32 = 1 << 29;

/// Fraction of arrivals that warm the host up and are not measured.
pub const WARMUP_FRACTION: f64 = 0.05;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ev {
    Arrival(u8),
    Cpu(u32),
    Gpu(u16, u32),
    Wake,
    /// The next background slice is due (`host.busy_cores`).
    Busy,
    /// The phase that was handed the interpreter lock is awake (`convoy_ms`).
    Lock(u32),
    /// A lock-holding phase's thread is awake and asks for the lock.
    Woken(u32),
}

impl Ev {
    /// Packed into one word for the event heap: kind in the top byte.
    fn pack(self) -> u64 {
        match self {
            Self::Arrival(s) => u64::from(s),
            Self::Cpu(r) => 1 << 56 | u64::from(r),
            Self::Gpu(g, v) => 2 << 56 | u64::from(g) << 32 | u64::from(v),
            Self::Wake => 3 << 56,
            Self::Busy => 4 << 56,
            Self::Lock(t) => 5 << 56 | u64::from(t),
            Self::Woken(t) => 6 << 56 | u64::from(t),
        }
    }

    fn unpack(word: u64) -> Self {
        match word >> 56 {
            0 => Self::Arrival(word as u8),
            1 => Self::Cpu(word as u32),
            2 => Self::Gpu((word >> 32) as u16, word as u32),
            3 => Self::Wake,
            4 => Self::Busy,
            5 => Self::Lock(word as u32),
            _ => Self::Woken(word as u32),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Pre,
    Post,
}

#[derive(Debug, Clone, Copy)]
struct Req {
    service: u8,
    gpu: u16,
    phase: Phase,
    measured: bool,
    arrival: u64,
    pre: u64,
    work: u64,
    post: u64,
    /// Start of the current wait for GPU access, and the total so far.
    waiting_since: u64,
    queued: u64,
    gpu_start: u64,
}

#[derive(Debug)]
struct ServiceRt {
    arrivals: ArrivalGen,
    rng: Pcg64Mcg,
    pre: CostSampler,
    gpu: CostSampler,
    post: CostSampler,
    last: u64,
    slo: u64,
    deadline: Option<u64>,
}

/// One batch on a GPU: its job in the serving state and its requests.
#[derive(Debug, Default)]
struct SimBatch {
    job: u64,
    device: usize,
    reqs: Vec<u32>,
    cost: u64,
    start: u64,
    measured: bool,
}

/// Worker pools and semaphores of the `semaphore` mode, indexed
/// `service * gpus + gpu` (workers) and `gpu` (semaphores).
#[derive(Debug)]
struct Pools {
    idle_workers: Vec<u32>,
    worker_queue: Vec<VecDeque<u32>>,
    permits: Vec<u32>,
    permit_queue: Vec<VecDeque<u32>>,
    next_gpu: Vec<usize>,
}

/// Busy counters when the measurement window opens.
#[derive(Debug, Default)]
struct Snapshot {
    gpu_busy: Vec<u64>,
    cpu_busy: u64,
}

/// GPU time of measured requests, nanoseconds (see [`GpuTime`]).
#[derive(Debug, Default)]
struct GpuTimeNs {
    effective: u64,
    overlap: u64,
    queue: u64,
}

struct Sim<'a> {
    sc: &'a Scenario,
    mode: Mode,
    now: u64,
    seq: u64,
    /// (time, sequence, packed event): earliest first, ties in schedule order.
    events: BinaryHeap<Reverse<(u64, u64, u64)>>,
    reqs: Vec<Req>,
    free: Vec<u32>,
    cpu: CpuPool<u32>,
    /// The interpreter lock: a pool of one (`host.interpreter`).
    lock: Option<CpuPool<u32>>,
    /// A batch's Python work, a thread's wake-up, the lock's idle time when
    /// handed over, and a background slice (`busy`: its period), ns.
    batch_py: u64,
    handoff: u64,
    convoy: u64,
    busy_slice: u64,
    busy_period: u64,
    gpus: Vec<Gpu>,
    /// The serving state (every mode but `semaphore`).
    state: Option<ServingState>,
    actions: Vec<Action>,
    batches: Vec<SimBatch>,
    free_batches: Vec<u32>,
    /// The earliest pending wake-up event (`u64::MAX`: none).
    wake_at: u64,
    done: Vec<u32>,
    pools: Pools,
    services: Vec<ServiceRt>,
    generated: u64,
    total: u64,
    warmup: u64,
    per_service: Vec<Recorder>,
    window_start: u64,
    at_window_start: Snapshot,
    gpu_time: GpuTimeNs,
    last_done: u64,
}

/// Simulates `requests` arrivals of `scenario` under `mode` at `load`.
pub fn simulate(
    scenario: &Scenario,
    mode: &Mode,
    load: f64,
    seed: u64,
    requests: u64,
) -> Result<PointResult, SimError> {
    scenario.validate()?;
    simulate_valid(scenario, mode, load, seed, requests)
}

/// [`simulate`] for a scenario the caller has validated once for many runs.
pub(crate) fn simulate_valid(
    scenario: &Scenario,
    mode: &Mode,
    load: f64,
    seed: u64,
    requests: u64,
) -> Result<PointResult, SimError> {
    if !(load.is_finite() && load > 0.0 && load <= 10.0) {
        return Err(SimError::BadArgument {
            key: "load",
            value: load.to_string(),
            allowed: "must be a number in (0, 10]",
        });
    }
    if !(100..=1_000_000_000).contains(&requests) {
        return Err(SimError::BadArgument {
            key: "requests",
            value: requests.to_string(),
            allowed: "must be an integer in 100..=1000000000",
        });
    }
    let mut sim = Sim::new(scenario, *mode, load, seed, requests)?;
    sim.run();
    Ok(sim.result(load, seed))
}

impl<'a> Sim<'a> {
    fn new(
        sc: &'a Scenario,
        mode: Mode,
        load: f64,
        seed: u64,
        total: u64,
    ) -> Result<Self, SimError> {
        let g = sc.host.gpus;
        let rate = sc.rate_for_load(load);
        let share_sum: f64 = sc.services.iter().map(|s| s.share).sum();
        let services = sc
            .services
            .iter()
            .enumerate()
            .map(|(i, s)| ServiceRt {
                arrivals: ArrivalGen::new(&s.arrival, rate * s.share / share_sum),
                // One stream per (seed, service): arrivals and costs do not
                // depend on the mode.
                rng: Pcg64Mcg::seed_from_u64(
                    seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i as u64 + 1),
                ),
                pre: CostSampler::new(&s.pre),
                gpu: CostSampler::new(&s.gpu),
                post: CostSampler::new(&s.post),
                last: 0,
                slo: (s.slo_ms.unwrap_or(sc.slo_ms) * 1e6) as u64,
                deadline: s.deadline_ms.map(|d| (d * 1e6) as u64),
            })
            .collect();
        let state = serving_state(sc, mode)?;
        let lock = sc.host.interpreter.as_ref();
        let lock_ns =
            |ms: fn(&Interpreter) -> f64| lock.map_or(0, |i| (ms(i) * 1e6).round() as u64);
        let n = sc.services.len();
        let pools = Pools {
            idle_workers: sc
                .services
                .iter()
                .flat_map(|s| vec![s.workers_per_gpu; g])
                .collect(),
            worker_queue: vec![VecDeque::new(); n * g],
            permits: vec![sc.host.semaphore; g],
            permit_queue: vec![VecDeque::new(); g],
            next_gpu: vec![0; n],
        };
        let mut sim = Self {
            sc,
            mode,
            now: 0,
            seq: 0,
            events: BinaryHeap::with_capacity(1024),
            reqs: Vec::with_capacity(1024),
            free: Vec::new(),
            cpu: CpuPool::new(sc.host.cpu_cores),
            lock: lock.map(|_| CpuPool::new(1)),
            batch_py: lock_ns(|i| i.batch_ms),
            handoff: lock_ns(|i| i.handoff_ms),
            convoy: lock_ns(|i| i.convoy_ms),
            busy_slice: (BUSY_SLICE_MS * 1e6) as u64,
            busy_period: if sc.host.busy_cores > 0.0 {
                (BUSY_SLICE_MS * 1e6 / sc.host.busy_cores).round().max(1.0) as u64
            } else {
                0
            },
            gpus: (0..g).map(|_| Gpu::new()).collect(),
            state,
            actions: Vec::new(),
            batches: Vec::new(),
            free_batches: Vec::new(),
            wake_at: u64::MAX,
            done: Vec::new(),
            pools,
            services,
            generated: 0,
            total,
            warmup: (total as f64 * WARMUP_FRACTION) as u64,
            per_service: (0..n).map(|_| Recorder::new()).collect(),
            window_start: 0,
            at_window_start: Snapshot::default(),
            gpu_time: GpuTimeNs::default(),
            last_done: 0,
        };
        for i in 0..n {
            sim.schedule_arrival(i);
        }
        if sim.busy_period > 0 {
            sim.at(0, Ev::Busy);
        }
        Ok(sim)
    }

    fn at(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.events.push(Reverse((t, self.seq, ev.pack())));
    }

    fn schedule_arrival(&mut self, service: usize) {
        let s = &mut self.services[service];
        let t = s.arrivals.next(s.last, &mut s.rng);
        s.last = t;
        self.at(t, Ev::Arrival(service as u8));
    }

    fn run(&mut self) {
        while let Some(Reverse((t, _, ev))) = self.events.pop() {
            self.now = t;
            match Ev::unpack(ev) {
                Ev::Arrival(s) => self.on_arrival(s as usize),
                Ev::Cpu(r) => self.on_cpu_done(r),
                Ev::Gpu(g, version) => self.on_gpu_done(g as usize, version),
                Ev::Wake => self.on_wake(t),
                Ev::Busy => self.on_busy(),
                Ev::Lock(token) => self.take_core(token, self.phase_cost(token)),
                Ev::Woken(token) => self.ask_lock(token, self.phase_cost(token)),
            }
        }
    }

    fn on_arrival(&mut self, service: usize) {
        if self.generated == self.total {
            return;
        }
        let index = self.generated;
        self.generated += 1;
        if index == self.warmup {
            self.window_start = self.now;
            self.at_window_start = Snapshot {
                gpu_busy: self.gpus.iter().map(|g| g.busy(self.now)).collect(),
                cpu_busy: self.cpu.busy(),
            };
        }
        let s = &mut self.services[service];
        let req = Req {
            service: service as u8,
            gpu: 0,
            phase: Phase::Pre,
            measured: index >= self.warmup,
            arrival: self.now,
            pre: s.pre.sample(&mut s.rng),
            work: s.gpu.sample(&mut s.rng).max(1),
            post: s.post.sample(&mut s.rng),
            waiting_since: self.now,
            queued: 0,
            gpu_start: 0,
        };
        let r = match self.free.pop() {
            Some(r) => {
                self.reqs[r as usize] = req;
                r
            }
            None => {
                self.reqs.push(req);
                (self.reqs.len() - 1) as u32
            }
        };
        self.schedule_arrival(service);
        match self.mode {
            Mode::Engine(_) | Mode::Independent => self.begin_cpu(r, Phase::Pre),
            Mode::Semaphore => {
                let g = self.pools.next_gpu[service];
                self.pools.next_gpu[service] = (g + 1) % self.gpus.len();
                self.reqs[r as usize].gpu = g as u16;
                let pool = service * self.gpus.len() + g;
                if self.pools.idle_workers[pool] > 0 {
                    self.pools.idle_workers[pool] -= 1;
                    if !self.worker_takes(r) {
                        self.pools.idle_workers[pool] += 1;
                    }
                } else {
                    self.pools.worker_queue[pool].push_back(r);
                }
            }
        }
    }

    fn end_wait(&mut self, r: u32) {
        let q = &mut self.reqs[r as usize];
        q.queued += self.now - q.waiting_since;
        q.waiting_since = self.now;
    }

    fn expired(&self, r: u32) -> bool {
        let q = &self.reqs[r as usize];
        self.services[q.service as usize]
            .deadline
            .is_some_and(|d| self.now > q.arrival + d)
    }

    /// A worker (already counted busy) takes `r`; `false` if `r` had expired
    /// and was dropped instead, leaving the worker free.
    fn worker_takes(&mut self, r: u32) -> bool {
        self.end_wait(r);
        if self.expired(r) {
            self.record_drop(r);
            self.free.push(r);
            return false;
        }
        if self.mode == Mode::Semaphore {
            let g = self.reqs[r as usize].gpu as usize;
            if self.pools.permits[g] == 0 {
                self.pools.permit_queue[g].push_back(r);
                return true;
            }
            self.pools.permits[g] -= 1;
        }
        self.begin_cpu(r, Phase::Pre);
        true
    }

    /// A worker of `pool` is free: it takes the next live request, or idles.
    fn worker_released(&mut self, pool: usize) {
        while let Some(next) = self.pools.worker_queue[pool].pop_front() {
            if self.worker_takes(next) {
                return;
            }
        }
        self.pools.idle_workers[pool] += 1;
    }

    fn begin_cpu(&mut self, r: u32, phase: Phase) {
        let q = &mut self.reqs[r as usize];
        q.phase = phase;
        let cost = if phase == Phase::Pre { q.pre } else { q.post };
        self.cpu_phase(r, cost);
    }

    /// A CPU phase (`token`) of `cost` ns begins: if it holds the
    /// interpreter lock ([`holds_lock`]) its thread wakes up (`handoff`, no
    /// lock held) and asks for the lock; then it waits for a core.
    fn cpu_phase(&mut self, token: u32, cost: u64) {
        if self.lock.is_some() && holds_lock(token) {
            if self.handoff > 0 {
                self.at(self.now + self.handoff, Ev::Woken(token));
            } else {
                self.ask_lock(token, cost);
            }
            return;
        }
        self.take_core(token, cost);
    }

    /// `token` asks for the lock: a free lock is taken at once; a held one
    /// is waited for, and then handed over ([`Self::handed_lock`]).
    fn ask_lock(&mut self, token: u32, cost: u64) {
        let lock = self.lock.as_mut().expect("only with a lock");
        if lock.request(token, cost).is_some() {
            self.take_core(token, cost);
        }
    }

    /// A released lock goes to `token`, which waited for it: the lock stays
    /// idle `convoy` ns (its thread waking), then `token` asks for a core.
    fn handed_lock(&mut self, token: u32, cost: u64) {
        if self.convoy > 0 {
            self.at(self.now + self.convoy, Ev::Lock(token));
        } else {
            self.take_core(token, cost);
        }
    }

    fn take_core(&mut self, token: u32, cost: u64) {
        if self.cpu.request(token, cost).is_some() {
            self.on_core(token, cost);
        }
    }

    /// The cost of the lock-holding phase `token`, ns.
    fn phase_cost(&self, token: u32) -> u64 {
        if token & BATCH_PY_TOKEN != 0 {
            return self.batch_py;
        }
        let q = &self.reqs[token as usize];
        if q.phase == Phase::Pre {
            q.pre
        } else {
            q.post
        }
    }

    /// `token` got a core: a batch's runtime call starts on its device, any
    /// other phase ends after `cost`.
    fn on_core(&mut self, token: u32, cost: u64) {
        if token & BATCH_TOKEN != 0 {
            self.run_batch(token & !BATCH_TOKEN);
        } else {
            self.at(self.now + cost, Ev::Cpu(token));
        }
    }

    fn on_cpu_done(&mut self, token: u32) {
        self.release_core();
        if holds_lock(token) {
            if let Some((next, cost)) = self.lock.as_mut().and_then(CpuPool::release) {
                self.handed_lock(next, cost);
            }
        }
        if token == BUSY_TOKEN {
            return;
        }
        if token & BATCH_PY_TOKEN != 0 {
            self.batch_runtime(token & !BATCH_PY_TOKEN);
            return;
        }
        match self.reqs[token as usize].phase {
            Phase::Pre => self.request_gpu(token),
            Phase::Post => self.finish(token),
        }
    }

    /// A background slice (`host.busy_cores`) queues for a core; the next is
    /// due one period later while requests remain to arrive or are in flight.
    fn on_busy(&mut self) {
        let in_flight = self.reqs.len() - self.free.len();
        if self.generated == self.total && in_flight == 0 {
            return;
        }
        self.cpu_phase(BUSY_TOKEN, self.busy_slice);
        self.at(self.now + self.busy_period, Ev::Busy);
    }

    fn request_gpu(&mut self, r: u32) {
        let Some(state) = self.state.as_mut() else {
            let g = self.reqs[r as usize].gpu as usize;
            self.start_gpu(r, g);
            return;
        };
        let q = &mut self.reqs[r as usize];
        q.waiting_since = self.now;
        let svc = &self.services[q.service as usize];
        let model = u32::from(q.service);
        let deadline = svc.deadline.map(|d| q.arrival + d);
        if state.admit(self.now, model, 1, deadline).is_err() {
            self.record_drop(r);
            self.free.push(r);
            return;
        }
        let request = Queued {
            id: u64::from(r),
            rows: 1,
            arrival: q.arrival,
            enqueued: self.now,
            deadline,
            target: Some(q.arrival + svc.slo),
        };
        let mut actions = std::mem::take(&mut self.actions);
        state.enqueue(self.now, model, request, &mut actions);
        self.apply(actions);
    }

    /// Carries out the serving state's actions, then keeps a wake-up event
    /// pending for its next timer.
    fn apply(&mut self, mut actions: Vec<Action>) {
        for action in actions.drain(..) {
            match action {
                Action::Start(batch) => self.start_batch(batch),
                Action::Fail { request, .. } => {
                    let r = request as u32;
                    self.end_wait(r);
                    self.record_drop(r);
                    self.free.push(r);
                }
                // Grants are never external here.
                Action::Ask { .. } | Action::Withdraw { .. } | Action::Release { .. } => {}
            }
        }
        self.actions = actions;
        let next = self.state.as_ref().and_then(ServingState::next_wake);
        if let Some(t) = next.filter(|&t| t < self.wake_at) {
            self.wake_at = t;
            self.at(t.max(self.now), Ev::Wake);
        }
    }

    fn on_wake(&mut self, t: u64) {
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
        let (mut work, mut measured) = (0u64, false);
        for q in &batch.requests {
            let r = q.id as u32;
            reqs.push(r);
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
        };
        if measured {
            self.per_service[service].batch(n as usize);
        }
        if self.batch_py > 0 {
            self.cpu_phase(slot | BATCH_PY_TOKEN, self.batch_py);
        } else {
            self.batch_runtime(slot);
        }
    }

    /// The batch in `slot` is ready for its runtime call: it starts on its
    /// device, after waiting for a core if the cores are shared.
    fn batch_runtime(&mut self, slot: u32) {
        let cost = self.batches[slot as usize].cost;
        if !self.sc.host.shared_cores || self.cpu.request(slot | BATCH_TOKEN, cost).is_some() {
            self.run_batch(slot);
        }
    }

    /// The batch in `slot` starts on its device (holding a core if shared).
    fn run_batch(&mut self, slot: u32) {
        let b = &self.batches[slot as usize];
        let (g, cost) = (b.device, b.cost);
        if let Some(t) = self.gpus[g].start(slot, cost, self.now, &self.sc.host.eta) {
            let v = self.gpus[g].version;
            self.at(t, Ev::Gpu(g as u16, v));
        }
    }

    /// A core of the CPU pool is free: the next waiting phase or batch takes it.
    fn release_core(&mut self) {
        if let Some((next, cost)) = self.cpu.release() {
            self.on_core(next, cost);
        }
    }

    fn start_gpu(&mut self, r: u32, g: usize) {
        let q = &mut self.reqs[r as usize];
        q.gpu = g as u16;
        q.gpu_start = self.now;
        if let Some(t) = self.gpus[g].start(r, q.work, self.now, &self.sc.host.eta) {
            let v = self.gpus[g].version;
            self.at(t, Ev::Gpu(g as u16, v));
        }
    }

    fn on_gpu_done(&mut self, g: usize, version: u32) {
        let mut done = std::mem::take(&mut self.done);
        let next = self.gpus[g].finish(version, self.now, &self.sc.host.eta, &mut done);
        if let Some(t) = next {
            let v = self.gpus[g].version;
            self.at(t, Ev::Gpu(g as u16, v));
        }
        let mut actions = std::mem::take(&mut self.actions);
        for &id in &done {
            if self.state.is_none() {
                let q = self.reqs[id as usize];
                if q.measured {
                    self.gpu_time.effective += q.work;
                    self.gpu_time.overlap += (self.now - q.gpu_start).saturating_sub(q.work);
                }
                self.begin_cpu(id, Phase::Post);
                continue;
            }
            let batch = std::mem::take(&mut self.batches[id as usize]);
            self.free_batches.push(id);
            let held = self.now - batch.start;
            if batch.measured {
                self.gpu_time.effective += batch.cost;
                self.gpu_time.overlap += held.saturating_sub(batch.cost);
            }
            if self.sc.host.shared_cores {
                self.release_core();
            }
            let state = self.state.as_mut().expect("batch modes have a state");
            state.complete(self.now, batch.job, Some(held), &mut actions);
            for &r in &batch.reqs {
                self.begin_cpu(r, Phase::Post);
            }
            let mut reqs = batch.reqs;
            reqs.clear();
            self.batches[id as usize].reqs = reqs;
        }
        done.clear();
        self.done = done;
        self.apply(actions);
    }

    fn finish(&mut self, r: u32) {
        let q = self.reqs[r as usize];
        if q.measured {
            let s = &self.services[q.service as usize];
            let latency = self.now - q.arrival;
            let own = q.pre + q.work + q.post;
            self.per_service[q.service as usize].complete(latency, own, s.slo);
            self.gpu_time.queue += q.queued;
            self.last_done = self.now;
        }
        let pool = q.service as usize * self.gpus.len() + q.gpu as usize;
        match self.mode {
            Mode::Engine(_) | Mode::Independent => {}
            Mode::Semaphore => {
                let g = q.gpu as usize;
                match self.pools.permit_queue[g].pop_front() {
                    Some(next) => {
                        self.end_wait(next);
                        self.begin_cpu(next, Phase::Pre);
                    }
                    None => self.pools.permits[g] += 1,
                }
                self.worker_released(pool);
            }
        }
        self.free.push(r);
    }

    fn record_drop(&mut self, r: u32) {
        let q = self.reqs[r as usize];
        if q.measured {
            self.per_service[q.service as usize].drop_one();
            self.last_done = self.last_done.max(self.now);
        }
    }

    fn result(&self, load: f64, seed: u64) -> PointResult {
        let end = self.last_done.max(self.window_start + 1);
        let window = end - self.window_start;
        let window_s = window as f64 / 1e9;
        let busy: Vec<u64> = self
            .gpus
            .iter()
            .zip(&self.at_window_start.gpu_busy)
            .map(|(g, start)| g.busy(self.now) - start)
            .collect();
        let mean_busy = busy.iter().sum::<u64>() as f64 / busy.len() as f64;
        let (lo, hi) = (
            busy.iter().min().copied().unwrap_or(0),
            busy.iter().max().copied().unwrap_or(0),
        );
        let cpu_used = (self.cpu.busy() - self.at_window_start.cpu_busy) as f64;
        let services = self
            .sc
            .services
            .iter()
            .zip(&self.per_service)
            .map(|(s, rec)| (s.name.clone(), rec.service_result(window_s)))
            .collect();
        let all = &Recorder::merged(&self.per_service);
        PointResult {
            policy: self.mode.to_string(),
            load,
            seed,
            requests: all.completed() + all.dropped(),
            offered_rps: self.sc.rate_for_load(load),
            throughput_rps: all.completed() as f64 / window_s,
            goodput_rps: all.within_slo() as f64 / window_s,
            latency_ms: all.latency(),
            slo_attainment: all.attainment(),
            dropped: all.dropped(),
            max_wait_ms: all.max_wait_ms(),
            p99_slowdown: all.p99_slowdown(),
            gpu_busy: (mean_busy / window as f64).min(1.0),
            gpu_imbalance: if mean_busy > 0.0 {
                (hi - lo) as f64 / mean_busy
            } else {
                0.0
            },
            cpu_idle: (1.0 - cpu_used / (self.sc.host.cpu_cores as f64 * window as f64))
                .clamp(0.0, 1.0),
            mean_batch_size: all.mean_batch_size(),
            gpu_time_s: GpuTime {
                effective: self.gpu_time.effective as f64 / 1e9,
                overlap: self.gpu_time.overlap as f64 / 1e9,
                queue: self.gpu_time.queue as f64 / 1e9,
            },
            services,
        }
    }
}

/// Whether a CPU phase holds the interpreter lock (when there is one): a
/// request's pre or post and a batch's Python work do; a batch's runtime call
/// and a background slice do not.
fn holds_lock(token: u32) -> bool {
    token & (BATCH_TOKEN | BUSY_TOKEN) == 0
}

/// The serving state for `mode` (none for `semaphore`): one model per
/// service with its batching, its GPU cost curve as the estimator's prior.
fn serving_state(sc: &Scenario, mode: Mode) -> Result<Option<ServingState>, SimError> {
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
