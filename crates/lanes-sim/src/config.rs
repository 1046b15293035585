//! The scenario: a host and its services, as the Python front end hands it
//! over (already parsed from TOML and normalised), and its validation.
//!
//! Units: milliseconds for costs, SLOs and deadlines; seconds for trace times.

use std::fmt;
use std::str::FromStr;

use lanes_policy::{Policy, PolicyError};
use lanes_serving::DeadlineRule;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Everything the simulator refuses, with a stable [`SimError::code`].
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SimError {
    /// A scenario value out of range; names the key, the value and the rule.
    #[error("scenario {scenario}: {key} = {value}: {allowed}")]
    InvalidScenario {
        scenario: String,
        key: String,
        value: String,
        allowed: String,
    },
    /// A run argument (load, request count) out of range.
    #[error("{key} = {value}: {allowed}")]
    BadArgument {
        key: &'static str,
        value: String,
        allowed: &'static str,
    },
    /// A mode or policy name that does not parse.
    #[error(transparent)]
    Policy(#[from] PolicyError),
}

impl SimError {
    /// The stable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidScenario { .. } => "scenario_invalid",
            Self::BadArgument { .. } => "bad_argument",
            Self::Policy(e) => e.code(),
        }
    }
}

/// A cost distribution's family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dist {
    Lognormal,
    Exponential,
    Constant,
}

/// A phase's cost: a distribution by mean and coefficient of variation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cost {
    pub dist: Dist,
    pub mean_ms: f64,
    #[serde(default)]
    pub cv: f64,
}

/// A service's arrival process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Arrival {
    /// Exponential gaps.
    Poisson,
    /// Gamma-distributed gaps with this coefficient of variation.
    Bursty { cv: f64 },
    /// Recorded arrival times in seconds, rescaled to the target rate.
    Trace { times: Vec<f64> },
}

/// One service: its traffic and the cost of each phase of a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Service {
    pub name: String,
    pub share: f64,
    pub workers_per_gpu: u32,
    pub arrival: Arrival,
    pub pre: Cost,
    pub gpu: Cost,
    pub post: Cost,
    #[serde(default)]
    pub slo_ms: Option<f64>,
    #[serde(default)]
    pub deadline_ms: Option<f64>,
    /// The client's connections for this service (`lanes bench`'s
    /// `connections`, one request in flight on each): at most this many of
    /// its requests are in the server at once, the rest wait at the client
    /// in arrival order ([`crate::engine`]); `None`: no limit.
    #[serde(default)]
    pub client_connections: Option<u32>,
    #[serde(default)]
    pub batching: BatchingSpec,
}

/// How a service's requests are batched, with `lanes serve`'s knobs, and what
/// a batch costs on a GPU.
///
/// **Batch cost.** The mean GPU time of a batch of n items is the curve
/// through `(1, gpu.mean_ms)` and the `batch_ms` points, linear between points
/// and extrapolated from the last two (from `(1, gpu.mean_ms)` alone: `n ×
/// gpu.mean_ms`, no gain from batching). A batch's actual time is that mean
/// scaled by its requests' own GPU samples: `curve(n) × mean(work) /
/// gpu.mean_ms`, so a batch of one costs exactly its request's sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchingSpec {
    /// Items per batch at most; 1 (the default) is no batching.
    #[serde(default = "one")]
    pub max_batch_size: u32,
    /// How long a partial batch waits for company while a GPU is free.
    #[serde(default)]
    pub batch_timeout_micros: u64,
    /// Batches of this service in flight at once (engine modes); default: one
    /// per GPU slot, i.e. no limit of its own. `lanes serve`'s default is 1.
    #[serde(default)]
    pub num_batch_threads: Option<u32>,
    /// `(n, ms)`: mean GPU time of a batch of n items (n > 1, ascending).
    #[serde(default)]
    pub batch_ms: Vec<(u32, f64)>,
}

impl Default for BatchingSpec {
    fn default() -> Self {
        Self {
            max_batch_size: 1,
            batch_timeout_micros: 0,
            num_batch_threads: None,
            batch_ms: Vec::new(),
        }
    }
}

impl BatchingSpec {
    /// `curve(n) / curve(1)` for a service whose batch of one costs `solo_ms`
    /// (see the type's docs).
    pub fn factor(&self, solo_ms: f64, n: u32) -> f64 {
        if n <= 1 {
            return 1.0;
        }
        let x = f64::from(n);
        let mut prev = (1.0, solo_ms);
        let mut before = None;
        for &(pn, pms) in &self.batch_ms {
            let p = (f64::from(pn), pms);
            if x <= p.0 {
                return lerp(prev, p, x) / solo_ms;
            }
            before = Some(prev);
            prev = p;
        }
        let y = match before {
            Some(b) => lerp(b, prev, x),
            None => solo_ms * x,
        };
        y.max(prev.1) / solo_ms
    }
}

fn lerp(a: (f64, f64), b: (f64, f64), x: f64) -> f64 {
    a.1 + (b.1 - a.1) * (x - a.0) / (b.0 - a.0)
}

/// The host's resources.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    pub gpus: usize,
    pub cpu_cores: usize,
    #[serde(default = "one")]
    pub gpu_capacity: u32,
    #[serde(default = "one")]
    pub semaphore: u32,
    /// `eta[k-1]`: total GPU throughput with k jobs overlapping (the last
    /// value repeats); each of the k jobs progresses at `eta(k)/k`.
    #[serde(default = "solo_eta")]
    pub eta: Vec<f64>,
    /// How a GPU serves jobs that overlap on it (`independent`'s workers,
    /// `limit:K`): shared at once (processor sharing at `eta(k)/k`), or one
    /// after another in launch order (one stream: CUDA graphs queue).
    #[serde(default)]
    pub gpu_queue: GpuQueue,
    /// The GPUs are cores of the CPU pool (CPU executors on a CPU-only host):
    /// a running batch holds one of the `cpu_cores` cores, queueing for it
    /// with the CPU phases, so device work and CPU phases share the cores.
    #[serde(default)]
    pub shared_cores: bool,
    /// Cores' worth of CPU that work outside the served requests keeps busy
    /// all the time (another process on the host, e.g. the load generator):
    /// slices of [`BUSY_SLICE_MS`] that queue for a core like any CPU phase,
    /// one every `BUSY_SLICE_MS / busy_cores` ms.
    #[serde(default)]
    pub busy_cores: f64,
    /// A neighbour's cores over a run: `(p, cores)` quantile points (as
    /// `device_hold_ms`, in cores) of the cores the rest of the host keeps
    /// busy beyond `busy_cores`, drawn once per run (its own seeded stream)
    /// and added to `busy_cores` for the whole run. On a shared host most
    /// runs see none and a few a neighbour's 0.1-0.7 cores, which near the
    /// knee is a runaway run (docs/results/calibration.md, the twenty-ninth
    /// round). `busy_cores` plus its largest point must stay below
    /// `cpu_cores`. Empty (the default): `busy_cores` alone.
    #[serde(default)]
    pub busy_run_cores: Vec<(f64, f64)>,
    /// The server is one interpreter with a global lock (`lanes serve` in
    /// Python: the GIL); `None` (the default): no such lock.
    #[serde(default)]
    pub interpreter: Option<Interpreter>,
    /// The cores are time-sliced among every runnable phase, as an operating
    /// system shares them (`host::SlicedCores`: processor sharing), instead
    /// of serving phases first come, first served. With `shared_cores` a
    /// batch's runtime call is then one of those phases (its device's `eta`
    /// does not apply: the cores, not the device, set its speed).
    #[serde(default)]
    pub time_slicing: bool,
    /// With `time_slicing`: the cores are handed out in slices of this many
    /// ms, round-robin (`slices::RoundRobin`: a phase woken onto busy cores
    /// waits for a running one's slice to end), as Linux shares a core; 0
    /// (the default): processor sharing.
    #[serde(default)]
    pub slice_ms: f64,
    /// With `time_slicing` under processor sharing (`slice_ms` 0): each core
    /// keeps its own run queue and shares itself among the phases placed on
    /// it, as Linux does, instead of every phase sharing all the cores
    /// (`run_queues::RunQueues`: placement on an idle core, else a random
    /// one; an emptied core pulls from the fullest). Default false.
    #[serde(default)]
    pub run_queues: bool,
    /// A thread's wake-up before each request's CPU phase (pre, post), ms,
    /// no core held: the hops between a server's threads (I/O thread, hook
    /// pool, device thread). With an `interpreter`, its own `handoff_ms`
    /// applies instead (this must be 0).
    #[serde(default)]
    pub handoff_ms: f64,
    /// How each wake-up of `handoff_ms` is drawn: `constant` (the default,
    /// every wake-up the mean) or `exponential` (memoryless: most are short,
    /// a few long, as waits for a scheduler are).
    #[serde(default = "constant")]
    pub handoff_dist: Dist,
    /// A request's wait for a thread before its pre phase, drawn per
    /// request from this empirical distribution (`(p, ms)` quantile points,
    /// as `device_hold_ms`), no core held: the hops around the
    /// pre-processing hook as `lanes serve --trace-requests` measures them.
    /// Replaces `handoff_ms` for the pre phase; empty (the default): not used.
    #[serde(default)]
    pub pre_wake_ms: Vec<(f64, f64)>,
    /// The same before each request's post phase (the handler waking for
    /// its answer, the hook's thread taking it up).
    #[serde(default)]
    pub post_wake_ms: Vec<(f64, f64)>,
    /// With `shared_cores` and `time_slicing`, and `pre_wake_ms`: a pre's
    /// wake-up that begins while n runtime calls run on the cores finds them
    /// busy with probability `min(1, n / cpu_cores)` and is then a draw of
    /// this instead of `pre_wake_ms` (the woken thread waiting for a core the
    /// device threads hold; `pre_wake_ms` is then the wake-up beside no
    /// call). `(p, ms)` quantile points. Empty (the default): every pre's
    /// wake-up is a draw of `pre_wake_ms`, whatever runs.
    #[serde(default)]
    pub pre_wake_busy_ms: Vec<(f64, f64)>,
    /// The same for the wake-up before each post (with `post_wake_ms`).
    #[serde(default)]
    pub post_wake_busy_ms: Vec<(f64, f64)>,
    /// With `pre_wake_ms` or `post_wake_ms`: the wake-ups come in spells
    /// ([`crate::wake_spell`]) — each wait's quantile level follows a latent
    /// process with this time constant, ms, shared by the wake-ups near it
    /// in time; every wait keeps its table's distribution. 0 (the default):
    /// each wake-up's level is drawn on its own.
    #[serde(default)]
    pub wake_spell_ms: f64,
    /// With `wake_spell_ms`: the share of a wake-up's normal score that is
    /// the spell's, in (0, 1]; two wake-ups `dt` apart share
    /// `wake_spell_share * exp(-dt / wake_spell_ms)` of it.
    #[serde(default)]
    pub wake_spell_share: f64,
    /// What the client's side adds to each request's latency (its send and
    /// receive, the kernel's socket queues): a draw per request from this
    /// empirical distribution (`(p, ms)` points), added at its end, nothing
    /// held. Empty (the default): nothing.
    #[serde(default)]
    pub client_ms: Vec<(f64, f64)>,
    /// A device is held this long beyond each batch's runtime call, drawn
    /// per batch from this empirical distribution: `(p, ms)` points of its
    /// quantile function (see [`crate::workload::Quantiles`] for the rule),
    /// no core held — the driver and the device thread handing a batch over
    /// and back. Empty (the default): no hold.
    #[serde(default)]
    pub device_hold_ms: Vec<(f64, f64)>,
    /// A batch's runtime call loses its core this many times per ms of its
    /// cost on average (a Poisson count per batch), each time waiting a draw
    /// of `call_preempt_ms` to get it back — on a CPU-only host, the device
    /// thread preempted by the server's other threads. 0 (the default): never.
    #[serde(default)]
    pub call_preempt_per_ms: f64,
    /// How long a preempted runtime call waits for its core: `(p, ms)`
    /// quantile points (as `device_hold_ms`). Needed when
    /// `call_preempt_per_ms` > 0.
    #[serde(default)]
    pub call_preempt_ms: Vec<(f64, f64)>,
    /// With `call_preempt_per_ms`, `shared_cores` and `time_slicing`: the
    /// preemptions' waits stand for *all* of a call's waiting for its core,
    /// of which the cores' sharing already gives it some. A call's waits are
    /// drawn as before but not held ahead of it; when it ends, its device
    /// stays held for what they exceed its own time beyond its cost (the
    /// wait the shared cores gave it), so in all it waits the larger of the
    /// two instead of their sum. False (the default): the waits are held
    /// before the call, on top of the cores' sharing.
    #[serde(default)]
    pub call_preempt_absorbed: bool,
    /// With `shared_cores` and `time_slicing`, when the runtimes outnumber
    /// the cores (`independent`'s one per service per device, or the jobs a
    /// device runs at once under an engine policy, beyond `cpu_cores`): a
    /// batch dispatched while n runtime calls run on the cores finds its
    /// device thread's core busy with probability `min(1, n / cpu_cores)`
    /// (the thread wakes on a core it does not choose) and then holds its
    /// device for a draw of this instead of `device_hold_ms` — waiting for
    /// that core. `(p, ms)` quantile points (as `device_hold_ms`). Empty (the
    /// default): every hold is a draw of `device_hold_ms`.
    #[serde(default)]
    pub device_hold_busy_ms: Vec<(f64, f64)>,
    /// With `shared_cores` and processor sharing (`time_slicing`, `slice_ms`
    /// 0), when the runtimes outnumber the cores (as for
    /// `device_hold_busy_ms`): with k runtime calls running on the cores,
    /// each progresses at `min(1, cpu_cores / n) / call_stretch[k-1]` of a
    /// core instead of `min(1, cpu_cores / n)` (n: every phase running; the
    /// last value repeats for larger k) — calls that slow each other beyond
    /// processor sharing, as threads Linux places on the same core until it
    /// moves one do. Each value >= 1. Empty (the default): no stretch.
    #[serde(default)]
    pub call_stretch: Vec<f64>,
    /// With `call_stretch`: while the runnable phases outnumber the cores,
    /// the stretch as a share instead of a loss — a call gets
    /// `1/call_stretch[k-1]` of another phase's share of cores that hand
    /// out all they have; with a core to spare the calls stretch as without
    /// it (see [`crate::host::SlicedCores`]). False (the default): the
    /// stretch slows the calls and nothing gains what they lose.
    #[serde(default)]
    pub call_stretch_weighted: bool,
    /// With `call_stretch` (not weighted): the stretch as a cap on a call's
    /// rate, `min(min(1, cpu_cores / n), 1 / call_stretch[k-1])`, not a
    /// factor on it — the stretch stands for all of a call's wait for a
    /// core, so where sharing the cores with the other phases already slows
    /// it the stretch adds only what it exceeds (see
    /// [`crate::host::SlicedCores`]). False (the default): the factor.
    #[serde(default)]
    pub call_stretch_capped: bool,
    /// With `shared_cores` and processor sharing (`time_slicing`, `slice_ms`
    /// 0): the share of its wall time a runtime call is on its core even
    /// with a core to spare — the device thread's CPU time over its CPU time
    /// and run delay, as `bench/calibrate/threads.py` measures it. Its work
    /// (its CPU time) then progresses at `call_on_core` of what it would
    /// otherwise get, and while the runnable phases outnumber the cores that
    /// is its weight: the cores hand the rest to the other phases. Composed
    /// into the call stretch (`s(k) = call_stretch[k-1] / call_on_core`,
    /// weighted; see [`crate::host::SlicedCores`]), for every mode, crowded
    /// or not. In (0, 1]; 1 (the default): a call is on its core whenever
    /// it has one.
    #[serde(default = "whole")]
    pub call_on_core: f64,
    /// The host's speed varies over time ([`crate::speed::HostSpeed`]):
    /// epochs of exponential length with mean `speed_ms`, each with a
    /// lognormal factor of mean 1 and this coefficient of variation that
    /// multiplies the cost of every phase asking for a core in it. 0 (the
    /// default): a steady host, nothing drawn.
    #[serde(default)]
    pub speed_cv: f64,
    /// The speed epochs' mean length, ms (> 0 exactly when `speed_cv` is;
    /// both only with `time_slicing`, where every phase's cost is known as
    /// it takes the cores).
    #[serde(default)]
    pub speed_ms: f64,
    /// With `speed_cv`: the epochs' cv when the cores were all busy since
    /// the previous epoch's draw; an epoch's cv is `speed_cv + (speed_cv_busy
    /// − speed_cv) · u^speed_busy_exponent`, `u` the cores' utilisation over
    /// that stretch, so the spells deepen with load as the lab's do
    /// ([`crate::speed::HostSpeed::by_load`]). `speed_cv` is then an idle
    /// host's. Absent (the default): every epoch at `speed_cv`.
    #[serde(default)]
    pub speed_cv_busy: Option<f64>,
    /// With `speed_cv_busy`: the power of the utilisation in the epochs'
    /// cv (> 0; 1, the default: linear).
    #[serde(default = "whole")]
    pub speed_busy_exponent: f64,
    /// The run's own speed ([`crate::speed::HostSpeed`]): one lognormal
    /// factor of mean 1 and this coefficient of variation, drawn once per
    /// run, multiplies every phase's cost on top of `speed_cv`'s epochs, so
    /// that runs of one cell differ in speed as the lab's repeats do. Only
    /// with `time_slicing` and no `speed_series`. 0 (the default): none.
    #[serde(default)]
    pub speed_run_cv: f64,
    /// The host's speed as a measured series instead of `speed_cv`'s
    /// process ([`crate::speed::HostSpeed::series`]): the i-th value is the
    /// factor from `i * speed_series_ms` to `(i + 1) * speed_series_ms`,
    /// the series repeating once it ends. Each value > 0; only with
    /// `time_slicing` and `speed_cv` 0. Empty (the default): no series.
    #[serde(default)]
    pub speed_series: Vec<f64>,
    /// The length of each of `speed_series`' values, ms (> 0 exactly when
    /// `speed_series` is given).
    #[serde(default)]
    pub speed_series_ms: f64,
    /// With `shared_cores` and processor sharing (`time_slicing`, `slice_ms`
    /// 0, no `run_queues`, `call_stretch` or `call_on_core` below 1): a
    /// thread's lag, ms — Linux's EEVDF lets a thread that woke run ahead
    /// of one that has run on, for about this much CPU. Each phase's first
    /// `lag_ms` less what its thread has run since it last slept is *fresh*
    /// and the rest *stale*; fresh work shares the cores first, stale work
    /// what is left ([`crate::host::SlicedCores`]). A runtime call's thread
    /// is its device's executor (under `independent` its model's on that
    /// device): what it has run grows by each call's cost, up to `lag_ms`,
    /// and drains by the time it sleeps between calls. Any other phase
    /// starts fresh. 0 (the default): every phase shares alike.
    #[serde(default)]
    pub lag_ms: f64,
    /// With `lag_ms`: the lag acts among the runtime calls only, and only
    /// while they outnumber the cores. Every phase keeps processor
    /// sharing's rate `min(1, C/n)` with n runnable; when the k calls among
    /// them exceed the C cores they split their `k * min(1, C/n)` among
    /// themselves, each call's first `lag_ms` (fresh) ahead of the rest
    /// (stale), as [`crate::host::SlicedCores`] says. One executor per core
    /// (`fifo`, `sjf`) never runs more calls than cores, so it is unchanged;
    /// under `independent` the long calls take the wait. False (the
    /// default): the lag acts against every phase, per thread, as above.
    #[serde(default)]
    pub lag_among_calls: bool,
    /// The hypervisor's stops: how long a core of this guest is taken away
    /// whole, `(p, ms)` quantile points (as `device_hold_ms`;
    /// bench/calibrate/stops.py reads them). Each core stops `stops_per_s`
    /// times a second on average (a Poisson process), for a draw of this.
    /// A stopped core leaves the pool until the stop ends, and the phase that
    /// ran on it waits for the end whatever the other cores do
    /// ([`crate::host::SlicedCores::stop`]). Needs processor sharing without
    /// a lag (`time_slicing`, `slice_ms` 0, no `run_queues`, `lag_ms` 0).
    /// Empty (the default): no stops.
    #[serde(default)]
    pub stop_ms: Vec<(f64, f64)>,
    /// Stops per core per second (> 0 exactly when `stop_ms` is given).
    #[serde(default)]
    pub stops_per_s: f64,
    /// A run's stops per core per second beyond `stops_per_s`: `(p, per_s)`
    /// quantile points, drawn once per run (its own seeded stream), as
    /// `busy_run_cores` draws a neighbour's cores — on a shared host most
    /// runs see few stops and some many. Needs `stop_ms`. Empty (the
    /// default): `stops_per_s` alone.
    #[serde(default)]
    pub stop_run_per_s: Vec<(f64, f64)>,
    /// Whether a request must start by its service's `deadline_ms` (`start`,
    /// the default) or, when its batch is cut, also be estimated to finish by
    /// it (`finish`): the serving state's rule, as `lanes serve
    /// --deadline-rule` sets it ([`lanes_serving::DeadlineRule`]).
    #[serde(default, with = "deadline_rule")]
    pub deadline_rule: DeadlineRule,
}

/// [`Host::deadline_rule`] as its name (`start`, `finish`).
mod deadline_rule {
    use lanes_serving::DeadlineRule;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(rule: &DeadlineRule, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(rule)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DeadlineRule, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

fn constant() -> Dist {
    Dist::Constant
}

/// Length of one slice of [`Host::busy_cores`]' background work, ms.
pub const BUSY_SLICE_MS: f64 = 1.0;

/// One host-wide interpreter lock that the server's Python work holds.
///
/// **Rule.** A phase that holds the lock starts with its thread waking up
/// (`handoff_ms`, the lock not held), then asks for the lock. A free lock it
/// takes at once; a held one it waits for (first come, first served, one
/// holder), and when it is handed the lock, the lock stays idle for
/// `convoy_ms` before the phase goes on (the GIL convoy: a released GIL waits
/// for the thread it was handed to). Holding the lock it waits for a core; it
/// releases both when it ends. The phases that hold it: every request's `pre` and `post`,
/// and each batch's Python work ([`Interpreter::batch_ms`]: dispatch,
/// collate, split, completion), which runs before the batch's runtime call
/// while the batch holds its device. The runtime call itself (the GPU phase,
/// or with `shared_cores` its core) and [`Host::busy_cores`] do not hold it:
/// ONNX Runtime releases the GIL while a batch runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interpreter {
    /// Python work per batch, ms, holding the lock and a core.
    #[serde(default)]
    pub batch_ms: f64,
    /// A thread's wake-up before each lock-holding phase, ms (lock not held).
    #[serde(default)]
    pub handoff_ms: f64,
    /// The lock's idle time each time it is handed to a waiting phase, ms.
    #[serde(default)]
    pub convoy_ms: f64,
}

fn whole() -> f64 {
    1.0
}

fn one() -> u32 {
    1
}

fn solo_eta() -> Vec<f64> {
    vec![1.0]
}

/// How a GPU serves the jobs that overlap on it ([`Host::gpu_queue`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GpuQueue {
    /// All at once, each at `eta(k)/k` of its solo speed (processor sharing).
    #[default]
    Share,
    /// One after another in the order they were launched, the one running
    /// at full speed (`eta[0]`): a single stream, as CUDA graphs replayed
    /// from several threads on one device queue.
    Fifo,
}

/// A simulated host and its services.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    pub slo_ms: f64,
    pub host: Host,
    pub services: Vec<Service>,
}

impl Scenario {
    fn invalid(&self, key: String, value: impl fmt::Display, allowed: &str) -> SimError {
        SimError::InvalidScenario {
            scenario: self.name.clone(),
            key,
            value: value.to_string(),
            allowed: allowed.to_string(),
        }
    }

    /// Checks every range the simulator relies on.
    pub fn validate(&self) -> Result<(), SimError> {
        let positive = |v: f64| v.is_finite() && v > 0.0;
        let non_negative = |v: f64| v.is_finite() && v >= 0.0;
        if !positive(self.slo_ms) {
            return Err(self.invalid("slo_ms".into(), self.slo_ms, "must be a number > 0"));
        }
        let h = &self.host;
        if h.gpus == 0 || h.gpus > 64 {
            return Err(self.invalid("host.gpus".into(), h.gpus, "must be an integer in 1..=64"));
        }
        if h.cpu_cores == 0 {
            return Err(self.invalid("host.cpu_cores".into(), h.cpu_cores, "must be >= 1"));
        }
        if h.gpu_capacity == 0 {
            return Err(self.invalid("host.gpu_capacity".into(), 0, "must be >= 1"));
        }
        if h.semaphore == 0 {
            return Err(self.invalid("host.semaphore".into(), 0, "must be >= 1"));
        }
        if !(non_negative(h.busy_cores) && h.busy_cores < h.cpu_cores as f64) {
            return Err(self.invalid(
                "host.busy_cores".into(),
                h.busy_cores,
                "must be a number >= 0 and below host.cpu_cores",
            ));
        }
        if !non_negative(h.handoff_ms) || (h.handoff_ms > 0.0 && h.interpreter.is_some()) {
            return Err(self.invalid(
                "host.handoff_ms".into(),
                h.handoff_ms,
                "must be a number >= 0, and 0 with [host.interpreter] (use its handoff_ms)",
            ));
        }
        if !non_negative(h.slice_ms) || (h.slice_ms > 0.0 && !h.time_slicing) {
            return Err(self.invalid(
                "host.slice_ms".into(),
                h.slice_ms,
                "must be a number >= 0, and 0 without host.time_slicing",
            ));
        }
        if h.run_queues && !(h.time_slicing && h.slice_ms == 0.0 && h.call_stretch.is_empty()) {
            return Err(self.invalid(
                "host.run_queues".into(),
                h.run_queues,
                "needs host.time_slicing under processor sharing (slice_ms = 0) and no call_stretch",
            ));
        }
        if h.handoff_dist == Dist::Lognormal {
            return Err(self.invalid(
                "host.handoff_dist".into(),
                "lognormal",
                "must be constant or exponential",
            ));
        }
        for (key, points) in [
            ("pre_wake_ms", &h.pre_wake_ms),
            ("post_wake_ms", &h.post_wake_ms),
            ("client_ms", &h.client_ms),
        ] {
            let waking = key != "client_ms";
            if !crate::workload::Quantiles::valid(points)
                || (waking && !points.is_empty() && (h.handoff_ms > 0.0 || h.interpreter.is_some()))
            {
                return Err(self.invalid(
                    format!("host.{key}"),
                    format!("{points:?}"),
                    "must be empty or [p, ms] points with p ascending from 0 to 1 and ms >= 0 \
                     not below the previous point's (a wake-up table: not with host.handoff_ms \
                     > 0 nor [host.interpreter])",
                ));
            }
        }
        for (key, points, idle) in [
            ("pre_wake_busy_ms", &h.pre_wake_busy_ms, &h.pre_wake_ms),
            ("post_wake_busy_ms", &h.post_wake_busy_ms, &h.post_wake_ms),
        ] {
            let placed = !idle.is_empty() && h.shared_cores && h.time_slicing;
            if !crate::workload::Quantiles::valid(points) || !(points.is_empty() || placed) {
                return Err(self.invalid(
                    format!("host.{key}"),
                    format!("{points:?}"),
                    "must be empty or [p, ms] points with p ascending from 0 to 1 and ms >= 0 \
                     not below the previous point's, and only beside the idle table (host.\
                     pre_wake_ms / post_wake_ms) with host.shared_cores and host.time_slicing",
                ));
            }
        }
        let most = h.busy_run_cores.last().map_or(0.0, |&(_, c)| c);
        if !(crate::workload::Quantiles::valid(&h.busy_run_cores)
            && h.busy_cores + most < h.cpu_cores as f64)
        {
            return Err(self.invalid(
                "host.busy_run_cores".into(),
                format!("{:?}", h.busy_run_cores),
                "must be empty or [p, cores] points with p ascending from 0 to 1 and cores >= 0 \
                 not below the previous point's, and host.busy_cores plus the last below \
                 host.cpu_cores",
            ));
        }
        if !crate::workload::Quantiles::valid(&h.device_hold_ms) {
            return Err(self.invalid(
                "host.device_hold_ms".into(),
                format!("{:?}", h.device_hold_ms),
                "must be empty or [p, ms] points with p ascending from 0 to 1 and ms >= 0 \
                 not below the previous point's",
            ));
        }
        if !(h.call_preempt_per_ms.is_finite() && h.call_preempt_per_ms >= 0.0) {
            return Err(self.invalid(
                "host.call_preempt_per_ms".into(),
                h.call_preempt_per_ms.to_string(),
                "must be a number >= 0",
            ));
        }
        if !crate::workload::Quantiles::valid(&h.call_preempt_ms)
            || (h.call_preempt_per_ms > 0.0 && h.call_preempt_ms.is_empty())
        {
            return Err(self.invalid(
                "host.call_preempt_ms".into(),
                format!("{:?}", h.call_preempt_ms),
                "must be [p, ms] points with p ascending from 0 to 1 and ms >= 0 not below \
                 the previous point's (and given when call_preempt_per_ms > 0)",
            ));
        }
        if !crate::workload::Quantiles::valid(&h.device_hold_busy_ms)
            || !(h.device_hold_busy_ms.is_empty() || (h.shared_cores && h.time_slicing))
        {
            return Err(self.invalid(
                "host.device_hold_busy_ms".into(),
                format!("{:?}", h.device_hold_busy_ms),
                "must be empty or [p, ms] points with p ascending from 0 to 1 and ms >= 0 not \
                 below the previous point's, and only with host.shared_cores and \
                 host.time_slicing",
            ));
        }
        let stretch_ok = h.call_stretch.iter().all(|s| s.is_finite() && *s >= 1.0);
        let sharing = h.shared_cores && h.time_slicing && h.slice_ms == 0.0;
        let stretch_valid = h.call_stretch.is_empty() || (stretch_ok && sharing);
        if !stretch_valid {
            return Err(self.invalid(
                "host.call_stretch".into(),
                format!("{:?}", h.call_stretch),
                "must be empty or numbers >= 1, and only with host.shared_cores and \
                 host.time_slicing under processor sharing (host.slice_ms = 0)",
            ));
        }
        if h.call_stretch_weighted && h.call_stretch.is_empty() {
            return Err(self.invalid(
                "host.call_stretch_weighted".into(),
                "true",
                "needs host.call_stretch (the stretch it weighs)",
            ));
        }
        if h.call_stretch_capped
            && (h.call_stretch.is_empty() || h.call_stretch_weighted || h.call_on_core < 1.0)
        {
            return Err(self.invalid(
                "host.call_stretch_capped".into(),
                "true",
                "needs host.call_stretch (the stretch it caps), not weighted, with \
                 host.call_on_core 1",
            ));
        }
        let on_core_ok =
            h.call_on_core.is_finite() && h.call_on_core > 0.0 && h.call_on_core <= 1.0;
        let on_core_fits = h.call_on_core == 1.0
            || (sharing && !h.run_queues && (h.call_stretch.is_empty() || h.call_stretch_weighted));
        if !(on_core_ok && on_core_fits) {
            return Err(self.invalid(
                "host.call_on_core".into(),
                h.call_on_core,
                "must be in (0, 1], and below 1 only with host.shared_cores and \
                 host.time_slicing under processor sharing (host.slice_ms = 0, no \
                 host.run_queues), with any host.call_stretch weighted",
            ));
        }
        let speed_set = (h.speed_cv > 0.0) == (h.speed_ms > 0.0);
        let speed_sliced = h.speed_cv == 0.0 || h.time_slicing;
        if !(non_negative(h.speed_cv) && non_negative(h.speed_ms) && speed_set && speed_sliced) {
            return Err(self.invalid(
                "host.speed_cv".into(),
                format!("{} (speed_ms {})", h.speed_cv, h.speed_ms),
                "speed_cv and speed_ms must be numbers >= 0, both above 0 or both 0, \
                 and only with host.time_slicing",
            ));
        }
        if let Some(busy) = h.speed_cv_busy {
            if !(non_negative(busy) && h.speed_cv > 0.0) {
                return Err(self.invalid(
                    "host.speed_cv_busy".into(),
                    busy,
                    "must be a number >= 0, and only with host.speed_cv > 0 (the epochs \
                     it sets the depth of)",
                ));
            }
        }
        let exponent_ok = h.speed_busy_exponent.is_finite() && h.speed_busy_exponent > 0.0;
        if !exponent_ok || (h.speed_busy_exponent != 1.0 && h.speed_cv_busy.is_none()) {
            return Err(self.invalid(
                "host.speed_busy_exponent".into(),
                h.speed_busy_exponent,
                "must be a number > 0, and other than 1 only with host.speed_cv_busy",
            ));
        }
        let tables = !(h.pre_wake_ms.is_empty() && h.post_wake_ms.is_empty());
        let spell_on = h.wake_spell_ms > 0.0;
        if !(non_negative(h.wake_spell_ms) && (!spell_on || tables)) {
            return Err(self.invalid(
                "host.wake_spell_ms".into(),
                h.wake_spell_ms,
                "must be a number >= 0, and above 0 only with host.pre_wake_ms or \
                 host.post_wake_ms (the tables whose draws it ties together)",
            ));
        }
        let share_ok = if spell_on {
            h.wake_spell_share > 0.0 && h.wake_spell_share <= 1.0
        } else {
            h.wake_spell_share == 0.0
        };
        if !share_ok {
            return Err(self.invalid(
                "host.wake_spell_share".into(),
                h.wake_spell_share,
                "must be in (0, 1] with host.wake_spell_ms above 0, and not given without it",
            ));
        }
        let run_fits = h.speed_run_cv == 0.0 || (h.time_slicing && h.speed_series.is_empty());
        if !(non_negative(h.speed_run_cv) && run_fits) {
            return Err(self.invalid(
                "host.speed_run_cv".into(),
                h.speed_run_cv,
                "must be a number >= 0, and above 0 only with host.time_slicing and no \
                 host.speed_series",
            ));
        }
        let series_ok = h.speed_series.iter().all(|f| f.is_finite() && *f > 0.0);
        let series_set = h.speed_series.is_empty() == (h.speed_series_ms == 0.0);
        let series_fits = h.speed_series.is_empty() || (h.time_slicing && h.speed_cv == 0.0);
        if !(series_ok && non_negative(h.speed_series_ms) && series_set && series_fits) {
            return Err(self.invalid(
                "host.speed_series".into(),
                format!(
                    "{} values (speed_series_ms {})",
                    h.speed_series.len(),
                    h.speed_series_ms
                ),
                "every value must be a number > 0, speed_series_ms > 0 exactly when the \
                 series is given, and only with host.time_slicing and host.speed_cv 0",
            ));
        }
        let lag_fits = h.lag_ms == 0.0
            || (sharing && !h.run_queues && h.call_stretch.is_empty() && h.call_on_core == 1.0);
        if !(non_negative(h.lag_ms) && lag_fits) {
            return Err(self.invalid(
                "host.lag_ms".into(),
                h.lag_ms,
                "must be a number >= 0, and above 0 only with host.shared_cores and \
                 host.time_slicing under processor sharing (host.slice_ms = 0), without \
                 host.run_queues, host.call_stretch or host.call_on_core below 1",
            ));
        }
        if h.call_preempt_absorbed
            && !(h.call_preempt_per_ms > 0.0 && h.shared_cores && h.time_slicing)
        {
            return Err(self.invalid(
                "host.call_preempt_absorbed".into(),
                h.call_preempt_absorbed,
                "true needs host.call_preempt_per_ms above 0, host.shared_cores and \
                 host.time_slicing (the cores' sharing whose wait it nets out)",
            ));
        }
        let stops_fit = h.time_slicing && h.slice_ms == 0.0 && !h.run_queues && h.lag_ms == 0.0;
        if !(crate::workload::Quantiles::valid(&h.stop_ms)
            && (h.stop_ms.is_empty() || (stops_fit && h.stop_ms.last().map_or(0.0, |p| p.1) > 0.0)))
        {
            return Err(self.invalid(
                "host.stop_ms".into(),
                format!("{:?}", h.stop_ms),
                "must be empty or [p, ms] points with p ascending from 0 to 1, ms >= 0 not \
                 below the previous point's and the last above 0, and needs processor sharing \
                 without a lag (host.time_slicing, slice_ms 0, no run_queues, lag_ms 0)",
            ));
        }
        if !(non_negative(h.stops_per_s) && (h.stops_per_s > 0.0) != h.stop_ms.is_empty()) {
            return Err(self.invalid(
                "host.stops_per_s".into(),
                h.stops_per_s,
                "must be a number above 0 exactly when host.stop_ms is given",
            ));
        }
        if !(crate::workload::Quantiles::valid(&h.stop_run_per_s)
            && (h.stop_run_per_s.is_empty() || !h.stop_ms.is_empty()))
        {
            return Err(self.invalid(
                "host.stop_run_per_s".into(),
                format!("{:?}", h.stop_run_per_s),
                "must be empty or [p, per_s] points with p ascending from 0 to 1 and per_s >= 0 \
                 not below the previous point's, and needs host.stop_ms",
            ));
        }
        if h.lag_among_calls && h.lag_ms == 0.0 {
            return Err(self.invalid(
                "host.lag_among_calls".into(),
                h.lag_among_calls,
                "true needs host.lag_ms above 0 (the lag it splits the calls' share by)",
            ));
        }
        if let Some(i) = &h.interpreter {
            let keys = [
                ("batch_ms", i.batch_ms),
                ("handoff_ms", i.handoff_ms),
                ("convoy_ms", i.convoy_ms),
            ];
            for (key, v) in keys {
                if !non_negative(v) {
                    let key = format!("host.interpreter.{key}");
                    return Err(self.invalid(key, v, "must be a number >= 0"));
                }
            }
        }
        if h.eta.is_empty() || !h.eta.iter().all(|&e| positive(e)) {
            return Err(self.invalid(
                "host.eta".into(),
                format!("{:?}", h.eta),
                "must be a non-empty list of numbers > 0",
            ));
        }
        if h.gpu_queue == GpuQueue::Fifo && h.eta.len() > 1 {
            return Err(self.invalid(
                "host.eta".into(),
                format!("{:?}", h.eta),
                "must be one value with host.gpu_queue = \"fifo\" (one job runs at a time)",
            ));
        }
        if h.gpu_queue == GpuQueue::Fifo && h.shared_cores {
            return Err(self.invalid(
                "host.gpu_queue".into(),
                "\"fifo\"",
                "needs shared_cores = false (with shared_cores a batch runs on the cores)",
            ));
        }
        if self.services.is_empty() {
            return Err(self.invalid("services".into(), "[]", "must name at least one service"));
        }
        if self.services.len() > 255 {
            return Err(self.invalid(
                "services".into(),
                self.services.len(),
                "at most 255 services",
            ));
        }
        for (i, s) in self.services.iter().enumerate() {
            let key = |k: &str| format!("service[{i}].{k}");
            if !positive(s.share) {
                return Err(self.invalid(key("share"), s.share, "must be a number > 0"));
            }
            if s.workers_per_gpu == 0 {
                return Err(self.invalid(key("workers_per_gpu"), 0, "must be >= 1"));
            }
            for (phase, c) in [("pre", &s.pre), ("gpu", &s.gpu), ("post", &s.post)] {
                if !non_negative(c.mean_ms) {
                    return Err(self.invalid(
                        key(&format!("{phase}.mean_ms")),
                        c.mean_ms,
                        "must be a number >= 0",
                    ));
                }
                if !non_negative(c.cv) {
                    return Err(self.invalid(
                        key(&format!("{phase}.cv")),
                        c.cv,
                        "must be a number >= 0",
                    ));
                }
            }
            if !positive(s.gpu.mean_ms) {
                return Err(self.invalid(
                    key("gpu.mean_ms"),
                    s.gpu.mean_ms,
                    "must be a number > 0",
                ));
            }
            match &s.arrival {
                Arrival::Poisson => {}
                Arrival::Bursty { cv } if !positive(*cv) => {
                    return Err(self.invalid(key("arrival.cv"), cv, "must be a number > 0"));
                }
                Arrival::Bursty { .. } => {}
                Arrival::Trace { times } => {
                    let sorted = times.windows(2).all(|w| w[0] <= w[1]);
                    let span = times.last().copied().unwrap_or(0.0)
                        - times.first().copied().unwrap_or(0.0);
                    if times.len() < 2
                        || !sorted
                        || !positive(span)
                        || !times.iter().all(|t| t.is_finite())
                    {
                        return Err(self.invalid(
                            key("arrival.times"),
                            format!("{} times", times.len()),
                            "must be at least 2 sorted finite times spanning > 0 s",
                        ));
                    }
                }
            }
            if let Some(slo) = s.slo_ms.filter(|v| !positive(*v)) {
                return Err(self.invalid(key("slo_ms"), slo, "must be a number > 0"));
            }
            if let Some(d) = s.deadline_ms.filter(|v| !positive(*v)) {
                return Err(self.invalid(key("deadline_ms"), d, "must be a number > 0"));
            }
            if s.client_connections == Some(0) {
                return Err(self.invalid(key("client_connections"), 0, "must be an integer >= 1"));
            }
            let b = &s.batching;
            if !(1..=4096).contains(&b.max_batch_size) {
                return Err(self.invalid(
                    key("batching.max_batch_size"),
                    b.max_batch_size,
                    "must be an integer in 1..=4096",
                ));
            }
            if b.batch_timeout_micros > 10_000_000 {
                return Err(self.invalid(
                    key("batching.batch_timeout_micros"),
                    b.batch_timeout_micros,
                    "must be an integer in 0..=10000000 (10 s)",
                ));
            }
            if b.num_batch_threads == Some(0) {
                return Err(self.invalid(key("batching.num_batch_threads"), 0, "must be >= 1"));
            }
            let mut last = (1, s.gpu.mean_ms);
            for &(n, ms) in &b.batch_ms {
                if n <= last.0 || !positive(ms) || ms < last.1 {
                    return Err(self.invalid(
                        key("batching.batch_ms"),
                        format!("[{n}, {ms}]"),
                        "points [n, ms] need n > 1 ascending and ms > 0 not below the \
                         previous point's (the first point is [1, gpu.mean_ms])",
                    ));
                }
                last = (n, ms);
            }
        }
        Ok(())
    }

    /// Mean GPU work per request, in milliseconds, over the traffic mix.
    pub fn mean_gpu_ms(&self) -> f64 {
        let total: f64 = self.services.iter().map(|s| s.share).sum();
        self.services
            .iter()
            .map(|s| s.share / total * s.gpu.mean_ms)
            .sum()
    }

    /// Requests per second that make `load` the offered GPU utilisation if
    /// GPU work were serialised: `load · G / mean GPU work`.
    pub fn rate_for_load(&self, load: f64) -> f64 {
        load * self.host.gpus as f64 * 1000.0 / self.mean_gpu_ms()
    }
}

/// How GPU phases reach the GPUs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    /// Status quo: each service has `workers_per_gpu` workers on every GPU; a
    /// request is bound round-robin to a GPU at arrival and a worker there
    /// holds it through pre, GPU and post; GPU phases overlap freely.
    Independent,
    /// `Independent` plus a per-GPU semaphore (`host.semaphore` permits) held
    /// for the whole request.
    Semaphore,
    /// A `lanes-policy` policy coordinates GPU phases host-wide; CPU phases
    /// only queue for cores.
    Engine(Policy),
}

/// Allowed mode names, for messages.
pub const MODES: &str =
    "independent, semaphore, fifo, limit:K (K >= 1), sjf[:alpha=A,slack=MS|off,starve=MS|off], fair[:alpha=A,slack=MS|off,starve=MS|off,threshold=MS,cap=MS,usage=MS|off,fast=MS|off,hold=MS,budget=MS|off,burst=MS|off,width=K,beside=long|any], lanes[:alpha=A,slack=MS|off,starve=MS|off,fast=MS,hold=MS,budget=MS|off,burst=MS|off,width=K,beside=long|any], edf";

impl FromStr for Mode {
    type Err = SimError;

    fn from_str(name: &str) -> Result<Self, SimError> {
        match name {
            "independent" => Ok(Self::Independent),
            "semaphore" => Ok(Self::Semaphore),
            _ => match name.parse::<Policy>() {
                Ok(p) => Ok(Self::Engine(p)),
                Err(PolicyError::UnknownPolicy { name, .. }) => {
                    Err(SimError::Policy(PolicyError::UnknownPolicy {
                        name,
                        allowed: MODES,
                    }))
                }
                Err(e) => Err(e.into()),
            },
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Independent => f.write_str("independent"),
            Self::Semaphore => f.write_str("semaphore"),
            Self::Engine(p) => p.fmt(f),
        }
    }
}
