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
//! background slices queue for cores throughout the run; with
//! `host.handoff_ms` each request's CPU phase starts after its thread wakes;
//! with `host.device_hold_ms` each batch holds its device for a draw before
//! its runtime call, no core held, and with `host.call_preempt_per_ms` for
//! the waits of its call's preemptions as well (with
//! `host.device_hold_busy_ms`, when the runtimes outnumber the cores, a
//! hold that finds its core busy is drawn from that instead);
//! with `host.time_slicing` the cores are shared among every runnable phase
//! (and, with `shared_cores`, every running batch) instead of queued for —
//! with `host.slice_ms` in slices, round-robin (with `host.call_on_core`
//! a runtime call progresses at that share of what it is given, the rest
//! going to the other phases when the cores are all busy); with
//! `host.speed_cv` (or `host.speed_series`) every phase that asks for a
//! core has its cost scaled by the host's speed then
//! ([`crate::speed::HostSpeed`]); with `host.lag_ms`
//! a thread that woke runs ahead of one that has run on, for up to that
//! much CPU, or with `host.lag_among_calls` a call's first `lag_ms` runs
//! ahead of other calls' rest while the calls outnumber the cores
//! ([`crate::host::SlicedCores`]); with `host.stop_ms` a core now and then
//! stops whole, and the phase on it waits for the stop's end.
//!
//! Each concept's rule is in its (private) module, all methods of one run's
//! `Sim`:
//!
//! - `event`: the event queue, the run's clock;
//! - `request`: a request's arrival, waits, drop or completion;
//! - `cpu`: CPU phases on the core pool, the interpreter lock, background
//!   slices;
//! - `batch`: batching and dispatch through the serving state;
//! - `semaphore`: the `semaphore` mode's workers and permits;
//! - `lag`: what each device thread has run since it last slept;
//! - `stop`: the hypervisor's stops (`host.stop_ms`);
//! - `measure`: the measurement window and the run's result.

mod batch;
mod cpu;
mod event;
mod lag;
mod measure;
mod request;
mod semaphore;
mod stop;

use lanes_serving::{Action, ServingState};
use serde::Serialize;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::config::{Cost, Dist, Interpreter, Mode, Scenario, SimError, BUSY_SLICE_MS};
use crate::host::{CpuPool, Gpu, SlicedCores, StretchRule, TimeShared};
use crate::run_queues::RunQueues;
use crate::speed::HostSpeed;
use crate::stats::{PointResult, Recorder};
use crate::wake_spell::WakeSpell;
use crate::workload::{CostSampler, Quantiles};
use batch::{serving_state, SimBatch};
use event::{Ev, EventQueue};
use lag::Runs;
use measure::{GpuTimeNs, Snapshot};
use request::{Req, ServiceRt};
use semaphore::Pools;

/// Fraction of arrivals that warm the host up and are not measured.
pub const WARMUP_FRACTION: f64 = 0.05;

/// One run's state; each concept's rules and methods live in its module.
struct Sim<'a> {
    sc: &'a Scenario,
    mode: Mode,
    now: u64,
    events: EventQueue,
    reqs: Vec<Req>,
    free: Vec<u32>,
    cpu: CpuPool<u32>,
    /// The cores time-sliced instead (`host.time_slicing`): `cpu` unused.
    sliced: Option<TimeShared>,
    /// The interpreter lock: a pool of one (`host.interpreter`).
    lock: Option<CpuPool<u32>>,
    /// A batch's Python work, a thread's wake-up (the interpreter's, or
    /// `host.handoff_ms`), the lock's idle time when handed over, and a
    /// background slice (`busy`: its period), ns.
    batch_py: u64,
    handoff: u64,
    /// Draws each wake-up (`host.handoff_dist`), from its own seeded stream.
    wake: CostSampler,
    wake_rng: Pcg64Mcg,
    convoy: u64,
    /// Each request's wake-up before its pre and its post phase
    /// (`host.pre_wake_ms`, `host.post_wake_ms`; `None`: `handoff`), drawn
    /// from `wake_rng`.
    pre_wake: Option<Quantiles>,
    post_wake: Option<Quantiles>,
    /// The same wake-ups onto cores the runtime calls hold
    /// (`host.pre_wake_busy_ms`, `host.post_wake_busy_ms`; `None`: never),
    /// drawn from `wake_busy_rng` with probability `min(1, calls_on /
    /// cpu_cores)`.
    pre_wake_busy: Option<Quantiles>,
    post_wake_busy: Option<Quantiles>,
    wake_busy_rng: Pcg64Mcg,
    /// The wake-ups' spells (`host.wake_spell_ms`; `None`: each level drawn
    /// on its own).
    wake_spell: Option<WakeSpell>,
    /// The client's part of each request's latency (`host.client_ms`;
    /// `None`: none), from its own seeded stream.
    client: Option<Quantiles>,
    client_rng: Pcg64Mcg,
    /// Draws each batch's device hold (`host.device_hold_ms`; `None`:
    /// none), from its own seeded stream.
    hold: Option<Quantiles>,
    hold_rng: Pcg64Mcg,
    /// A runtime call's preemptions (`host.call_preempt_per_ms`, per ns of
    /// cost; `None`: none) and each one's wait, from their own seeded
    /// stream.
    preempt: Option<(f64, Quantiles)>,
    preempt_rng: Pcg64Mcg,
    /// The preemptions' waits net of the cores' (`host.call_preempt_absorbed`):
    /// held after the call, for what they exceed its wait on the cores.
    preempt_absorbed: bool,
    /// A hold onto busy cores (`host.device_hold_busy_ms`, when the
    /// runtimes outnumber the cores; `None`: never): its draws (`None`:
    /// 0), from its own seeded stream.
    hold_busy: Option<Option<Quantiles>>,
    hold_busy_rng: Pcg64Mcg,
    /// The host's speed over time (`host.speed_cv` or `host.speed_series`;
    /// `None`: steady): every phase asking for a core has its cost scaled
    /// by it.
    speed: Option<HostSpeed>,
    /// The device threads' runs since they last slept (`host.lag_ms`).
    runs: Option<Runs>,
    /// Runtime calls on the time-sliced cores now.
    calls_on: usize,
    busy_slice: u64,
    busy_period: u64,
    /// The hypervisor's stops (`host.stop_ms`).
    stops: Option<stop::Stops>,
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
    /// The last measured arrival: the sending window's end.
    last_arrival: u64,
    /// Every batch as it ended, when the run keeps its timeline
    /// ([`simulate_timeline`]).
    timeline: Option<Vec<BatchSpan>>,
}

/// One simulated batch on its device, as the lab's device timeline has it
/// (`lanes serve --trace-requests`): times in ms from the first arrival.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BatchSpan {
    /// The service's name.
    pub service: String,
    /// The device (GPU index).
    pub device: u32,
    /// Requests in the batch.
    pub size: u32,
    /// Its oldest request entered the serving state (its pre done): the
    /// lab's `start_ms - queue_wait_ms`.
    pub oldest_ms: f64,
    /// Dispatched to its device.
    pub start_ms: f64,
    /// Its runtime call began (after its interpreter work and device hold).
    pub called_ms: f64,
    /// It ended: its device free (with `host.call_preempt_absorbed`, after
    /// the preemption waits held past the call).
    pub end_ms: f64,
    /// Its solo cost, ms.
    pub cost_ms: f64,
    /// Whether its requests count in the measurement (past the warm-up).
    pub measured: bool,
}

/// The runtimes (device threads) of the host under `mode`: one per service
/// per device (`workers_per_gpu` each) under `independent`, else the jobs a
/// device runs at once, per device.
fn runtimes(sc: &Scenario, mode: Mode) -> usize {
    let per_gpu = match mode {
        Mode::Independent => sc.services.iter().map(|s| s.workers_per_gpu).sum(),
        Mode::Engine(policy) => policy.slots(sc.host.gpu_capacity) + policy.fast_slots(),
        Mode::Semaphore => sc.host.semaphore,
    };
    sc.host.gpus * per_gpu as usize
}

/// The cores work outside the served requests keeps busy over the run
/// seeded `seed`: `host.busy_cores`, plus one draw of `host.busy_run_cores`
/// (a neighbour's, from a stream of its own) when it is given.
fn busy_cores(sc: &Scenario, seed: u64) -> f64 {
    let extra = Quantiles::new(&sc.host.busy_run_cores).map_or(0.0, |q| {
        let mut rng = Pcg64Mcg::seed_from_u64(seed ^ 0x0B05_7AB0_0C0E);
        // Quantiles keeps its points x 1e6 (ms as ns); these are cores.
        q.at(rng.random::<f64>()) / 1e6
    });
    sc.host.busy_cores + extra
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
    check_point(load, requests)?;
    let mut sim = Sim::new(scenario, *mode, load, seed, requests)?;
    sim.run();
    Ok(sim.result(load, seed))
}

/// A point's load in (0, 10] and its arrivals in 100..=1e9.
fn check_point(load: f64, requests: u64) -> Result<(), SimError> {
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
    Ok(())
}

/// [`simulate`], keeping every batch's span on its device as well (in the
/// order the batches ended): the simulator's device timeline, to set
/// against a lab run's call by call.
pub fn simulate_timeline(
    scenario: &Scenario,
    mode: &Mode,
    load: f64,
    seed: u64,
    requests: u64,
) -> Result<(PointResult, Vec<BatchSpan>), SimError> {
    scenario.validate()?;
    check_point(load, requests)?;
    let mut sim = Sim::new(scenario, *mode, load, seed, requests)?;
    sim.timeline = Some(Vec::new());
    sim.run();
    let timeline = sim.timeline.take().unwrap_or_default();
    Ok((sim.result(load, seed), timeline))
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
        let state = serving_state(sc, mode)?;
        let lock = sc.host.interpreter.as_ref();
        let lock_ns =
            |ms: fn(&Interpreter) -> f64| lock.map_or(0, |i| (ms(i) * 1e6).round() as u64);
        let n = sc.services.len();
        // More runtimes than cores: device threads land on busy cores
        // (`device_hold_busy_ms`) and their calls stretch (`call_stretch`).
        let crowded = runtimes(sc, mode) > sc.host.cpu_cores;
        let mut sim = Self {
            sc,
            mode,
            now: 0,
            events: EventQueue::new(),
            reqs: Vec::with_capacity(1024),
            free: Vec::new(),
            cpu: CpuPool::new(sc.host.cpu_cores),
            sliced: sc.host.time_slicing.then(|| {
                if sc.host.run_queues {
                    return TimeShared::Queues(RunQueues::new(
                        sc.host.cpu_cores,
                        seed ^ 0x0C0E_5EED_4A11,
                    ));
                }
                let mut stretch = if crowded {
                    sc.host.call_stretch.clone()
                } else {
                    Vec::new()
                };
                // A call off its core part of its wall time (`call_on_core`):
                // composed into the stretch, always weighted.
                let on_core = sc.host.call_on_core;
                if on_core < 1.0 {
                    if stretch.is_empty() {
                        stretch.push(1.0);
                    }
                    stretch.iter_mut().for_each(|s| *s /= on_core);
                }
                if sc.host.lag_ms > 0.0 {
                    let lag = (sc.host.lag_ms * 1e6).round() as u64;
                    let cores = if sc.host.lag_among_calls {
                        SlicedCores::lagged_among_calls(sc.host.cpu_cores, lag)
                    } else {
                        SlicedCores::lagged(sc.host.cpu_cores, lag)
                    };
                    return TimeShared::Sharing(cores);
                }
                let rule = if sc.host.call_stretch_weighted || on_core < 1.0 {
                    StretchRule::Weighted
                } else if sc.host.call_stretch_capped {
                    StretchRule::Capped
                } else {
                    StretchRule::Factor
                };
                TimeShared::new(
                    sc.host.cpu_cores,
                    (sc.host.slice_ms * 1e6).round() as u64,
                    stretch,
                    rule,
                )
            }),
            lock: lock.map(|_| CpuPool::new(1)),
            batch_py: lock_ns(|i| i.batch_ms),
            handoff: match lock {
                Some(i) => (i.handoff_ms * 1e6).round() as u64,
                None => (sc.host.handoff_ms * 1e6).round() as u64,
            },
            wake: CostSampler::new(&Cost {
                dist: if lock.is_some() {
                    Dist::Constant
                } else {
                    sc.host.handoff_dist
                },
                mean_ms: lock.map_or(sc.host.handoff_ms, |i| i.handoff_ms),
                cv: 0.0,
            }),
            wake_rng: Pcg64Mcg::seed_from_u64(seed ^ 0x005E_ED0F_3A4E),
            convoy: lock_ns(|i| i.convoy_ms),
            pre_wake: Quantiles::new(&sc.host.pre_wake_ms),
            post_wake: Quantiles::new(&sc.host.post_wake_ms),
            pre_wake_busy: Quantiles::new(&sc.host.pre_wake_busy_ms),
            post_wake_busy: Quantiles::new(&sc.host.post_wake_busy_ms),
            wake_busy_rng: Pcg64Mcg::seed_from_u64(seed ^ 0x0A3E_B05F_7A1E),
            wake_spell: (sc.host.wake_spell_ms > 0.0)
                .then(|| WakeSpell::new(sc.host.wake_spell_ms, sc.host.wake_spell_share, seed)),
            client: Quantiles::new(&sc.host.client_ms),
            client_rng: Pcg64Mcg::seed_from_u64(seed ^ 0x0C11_E470_5EED),
            hold: Quantiles::new(&sc.host.device_hold_ms),
            hold_rng: Pcg64Mcg::seed_from_u64(seed ^ 0x0DE7_1CE0_4B1D),
            preempt: Quantiles::new(&sc.host.call_preempt_ms)
                .filter(|_| sc.host.call_preempt_per_ms > 0.0)
                .map(|q| (sc.host.call_preempt_per_ms / 1e6, q)),
            preempt_rng: Pcg64Mcg::seed_from_u64(seed ^ 0x0C0E_3A17_5EED),
            preempt_absorbed: sc.host.call_preempt_absorbed,
            hold_busy: (!sc.host.device_hold_busy_ms.is_empty() && crowded)
                .then(|| Quantiles::new(&sc.host.device_hold_busy_ms)),
            hold_busy_rng: Pcg64Mcg::seed_from_u64(seed ^ 0x0B05_7C0E_4E1D),
            speed: HostSpeed::new(
                sc.host.speed_cv,
                sc.host.speed_ms,
                sc.host.speed_run_cv,
                seed,
            )
            .map(|s| match sc.host.speed_cv_busy {
                Some(cv_busy) => s.by_load(
                    sc.host.speed_cv,
                    cv_busy,
                    sc.host.speed_busy_exponent,
                    sc.host.cpu_cores,
                ),
                None => s,
            })
            .or_else(|| HostSpeed::series(&sc.host.speed_series, sc.host.speed_series_ms)),
            // Among calls the lag is each call's own: no thread's runs to keep.
            runs: (sc.host.lag_ms > 0.0 && !sc.host.lag_among_calls)
                .then(|| Runs::new(mode, g, n, (sc.host.lag_ms * 1e6).round() as u64)),
            calls_on: 0,
            busy_slice: (BUSY_SLICE_MS * 1e6) as u64,
            busy_period: match busy_cores(sc, seed) {
                busy if busy > 0.0 => (BUSY_SLICE_MS * 1e6 / busy).round().max(1.0) as u64,
                _ => 0,
            },
            stops: stop::Stops::new(sc, seed),
            gpus: (0..g).map(|_| Gpu::with_queue(sc.host.gpu_queue)).collect(),
            state,
            actions: Vec::new(),
            batches: Vec::new(),
            free_batches: Vec::new(),
            wake_at: u64::MAX,
            done: Vec::new(),
            pools: Pools::new(sc),
            services: request::services(sc, load, seed),
            generated: 0,
            total,
            warmup: (total as f64 * WARMUP_FRACTION) as u64,
            per_service: (0..n).map(|_| Recorder::new()).collect(),
            window_start: 0,
            at_window_start: Snapshot::default(),
            gpu_time: GpuTimeNs::default(),
            last_done: 0,
            last_arrival: 0,
            timeline: None,
        };
        for i in 0..n {
            sim.schedule_arrival(i);
        }
        if sim.busy_period > 0 {
            sim.at(0, Ev::Busy);
        }
        if let Some(first) = sim.stops.as_mut().map(stop::Stops::first) {
            sim.at(first, Ev::Stop);
        }
        Ok(sim)
    }

    /// Schedules `ev` at `t`.
    #[inline]
    fn at(&mut self, t: u64, ev: Ev) {
        self.events.push(t, ev);
    }

    /// Processes events in time order until none is left.
    fn run(&mut self) {
        while let Some((t, ev)) = self.events.pop() {
            self.now = t;
            match ev {
                Ev::Arrival(s) => self.on_arrival(s as usize),
                Ev::Cpu(r) => self.on_cpu_done(r),
                Ev::Gpu(g, version) => self.on_gpu_done(g as usize, version),
                Ev::Wake => self.on_wake(t),
                Ev::Busy => self.on_busy(),
                Ev::Lock(token) => self.take_core(token, self.phase_cost(token)),
                Ev::Woken(token) => self.woken(token),
                Ev::Cores(version) => self.on_cores_done(version),
                Ev::Held(slot) => self.hold_done(slot),
                Ev::Preempted(slot) => self.preempted_done(slot),
                Ev::Send(r) => self.send(r),
                Ev::Stop => self.on_stop(),
                Ev::Resume(slot) => self.on_resume(slot),
            }
        }
    }
}
