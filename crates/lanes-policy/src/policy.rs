//! Policies: the order in which ready jobs get devices, chosen by name.
//!
//! | name | rule |
//! |---|---|
//! | `fifo` | arrival order; each device runs up to its capacity (1 by default) |
//! | `limit:K` | arrival order; every device runs up to `K` jobs at once |
//! | `sjf` | shortest estimated cost first, with aging and slack (below) |
//! | `fair` | `sjf`, except that a model running ahead of its equal share of device time yields (below) |
//! | `lanes` | `sjf`, plus a fast lane: one extra slot per device (`width` of them) that only short jobs may take, beside a long job (any job with `beside=any`; below) |
//! | `edf` | earliest deadline first; jobs that can no longer finish by their deadline are dropped |
//!
//! Every policy drops a job whose hard deadline has passed before it is
//! dispatched; `edf` drops it as soon as `now + cost > deadline`.
//!
//! ## The `sjf` rule
//!
//! **Aging.** Jobs are ordered by `cost − α·wait`, lowest first. Because every
//! queued job's wait grows at the same rate, this order never changes while jobs
//! wait, and equals the order of the static key `cost + α·arrival` — so the
//! queue is a heap, not a scan. `α = 0` is pure shortest-first; `α → ∞` is FIFO.
//!
//! *Starvation bound.* A job J (cost `c`, arrival `a`) goes before every job K
//! with `c_K + α·a_K > c + α·a`; any job arriving after `a + c/α` has such a key.
//! So J can be overtaken only by jobs already queued at `a` and jobs arriving in
//! the window `[a, a + c/α)`: its wait is at most the work of those jobs divided
//! by the devices' capacity — finite whenever the load is below 1, however many
//! short jobs keep arriving.
//!
//! **Slack.** A job with a target (its SLO) becomes *urgent* once its slack
//! `target − now − cost` is at most `slack`, and stays urgent while the slack
//! is >= 0 — while running it now can still meet the target. Urgent jobs go
//! before all others, least latest-start (`target − cost`) first. A job whose
//! slack has gone negative is past saving and returns to the aging order, so
//! hopeless jobs never crowd out savable ones. With `slack=off` only aging
//! applies. Shortest-first keeps the mean low; slack stops it from pushing a
//! long job past its SLO when a little priority would have saved it.
//!
//! *No bound with slack alone.* Urgent jobs beat the aging order, so the
//! aging bound above holds only while no job is urgent: a job past saving
//! waits as long as some other job keeps becoming urgent, which under
//! sustained overload is forever (docs/results/gpu.md, run 3: `char_cnn`'s
//! p99 1.6 s while the other models kept theirs). `starve` restores a bound.
//!
//! **Starvation bound (`starve`, off by default).** A job that has waited at
//! least `starve` (`now − arrival`) is *starving* and goes before urgent and
//! normal jobs (and, under `fair`, before the jobs of a model ahead of its
//! share); starving jobs go oldest first (least arrival, then submission).
//! What holds: from `a + starve` on, no job that arrived after J (arrival
//! `a`) starts on a regular slot of a device J may use before J does. So J
//! starts by `a + starve` plus the time those devices need to finish the jobs
//! running at `a + starve` (at most one job's run per slot) and the jobs that
//! arrived before J and were still queued then (starving before J, oldest
//! first). When none of those is left, that is about `starve` plus one job's
//! run per device; under sustained overload the starving jobs are served in
//! arrival order, as `fifo` would serve them.
//!
//! Arguments: `sjf:alpha=A,slack=MS,starve=MS` (`slack` and `starve` in
//! milliseconds, or `off`; `starve` > 0).
//!
//! ## The `fair` rule
//!
//! `sjf` lets one model's burst delay every other model: its jobs age, become
//! urgent, and take every device in turn. `fair` is `sjf` plus a per-model
//! share of device time kept by deficit counters (the accounting is in
//! `share.rs`):
//!
//! - **Shares.** A model is *active* while it has a job queued or running.
//!   When a job finishes after holding its device for `h` (measured, not
//!   estimated), every active model is credited `h / n` (`n` active models,
//!   equal shares) and the job's model is debited `h`. A model's *deficit* is
//!   thus the device time it was entitled to minus what it got; it is kept
//!   within `±cap` and forgotten (reset to 0) whenever the model goes idle.
//! - **Yield.** A model whose deficit is below `−threshold` is *ahead of its
//!   share*. Its jobs lose the slack lift and go after every job of a model
//!   that is not ahead; among themselves they keep the aging order. When
//!   nothing else is eligible they still run: the scheduler stays work
//!   conserving.
//! - **No contention, no change.** While no model is ahead (one model alone is
//!   never charged: it is credited all it runs), the order is exactly `sjf`'s.
//!
//! *Starvation bound.* While a job J of model m waits, m is active, so each
//! `h` of device time another model completes credits m with at least `h/M`
//! (`M` models); m's deficit is never below `−cap`, so m stays ahead for at
//! most `M·(cap − threshold)` of other models' device time at a stretch. A new
//! stretch needs one of m's own jobs to finish first, and between stretches J
//! is ordered as under `sjf`, where the aging bound above applies. When all of
//! m's jobs may use the same devices (the usual case), the m-jobs that run
//! before J are those before it in aging order — finitely many — so J's wait
//! is bounded. If m's jobs are pinned to different devices, m can stay ahead
//! through jobs on other devices; J then waits only while models that are not
//! ahead keep every device J may use busy — finite, like `sjf`'s bound,
//! whenever the load on those devices is below 1.
//!
//! *Shares that follow use* (`usage=MS`). Equal shares hold a model back
//! for being heavy, not for bursting: on steady traffic the model whose
//! batches take the most device time is always "ahead" of an equal split.
//! With `usage`, a model's share is instead its own recent part of the
//! device time: each model keeps `u`, the device time it got, decayed by
//! `exp(−h/usage)` at every completion of `h` (of any model: an average over
//! about the last `usage` of delivered device time, no clock), and a
//! completion credits each active model `h · w_m / Σ w` (active models) with
//! `w_m = u_m + ū/10` (`ū`: the mean `u` of the models seen, so a new or
//! rarely seen model still has a share). A model is then ahead only when it
//! takes more than it has been taking — a burst — by more than `threshold`.
//! The starvation bound above holds with `h/M` replaced by `h·w_min/Σ w`
//! (`w_min` ≥ `ū/10` > 0 once any device time was delivered).
//!
//! Arguments: `fair:alpha=A,slack=MS,starve=MS,threshold=MS,cap=MS,usage=MS|off`
//! (`alpha`, `slack` and `starve` as `sjf`; `threshold` >= 0 and < `cap`, in milliseconds;
//! `usage` > 0, off by default: equal shares).
//!
//! ## The `lanes` rule (fast lane)
//!
//! A device runs one job at a time and nothing preempts, so under `sjf` a
//! short job that arrives while every device runs a long one waits for a
//! whole long job. `lanes` gives every device, beside its regular slots
//! (its capacity, 1 by default), one **fast slot** that only short jobs use
//! (trucks keep to the slow lane so cars can use the fast one):
//!
//! - **Short and long.** A job is *short* when its estimated cost is at most
//!   `fast`, *long* otherwise. The test uses the cost the job was submitted
//!   with; it never changes while the job waits or runs.
//! - **Regular slots** are filled exactly as under `sjf`: at each dispatch the
//!   best job in `sjf` order (aging and slack) eligible for a device with a
//!   free regular slot takes one, long or short.
//! - **The fast slot** of a device is *open* when all its regular slots are
//!   taken, at least one of them by a long job, and no job holds its fast
//!   slot. Once no regular slot can take a job, the best *short* job in aging
//!   order (`cost + α·arrival`; slack does not reorder the fast lane)
//!   eligible for an open fast slot starts there, overlapping the long job.
//!   Long jobs never take a fast slot; a device runs at most one fast job at
//!   a time (`width` with that key, below). A fast job keeps its slot until
//!   it ends, even if the long job ends first (the freed regular slot takes
//!   the next job as usual).
//! - **Device choice.** Among open fast slots the scheduler's usual rule
//!   applies (fewest running jobs, least busy time, lowest index).
//! - **Work conserving.** A job never waits while a device it may use has a
//!   free regular slot or, for a short job, an open fast slot.
//! - **No short jobs, no change.** A job that is never short is ordered and
//!   placed exactly as under `sjf`, so without short jobs `lanes` is `sjf`.
//!
//! *Cost of the overlap.* On a device that shares its throughput between
//! overlapping jobs, the long job is slowed by at most the fast job's own
//! work (at most `fast`) per fast job; one fast job at a time bounds the
//! slowdown of any long job to `fast` per fast job that overlaps it. The
//! `sjf` aging bound holds for regular slots unchanged: fast jobs take no
//! regular slot.
//!
//! Arguments: `lanes:alpha=A,slack=MS,starve=MS,fast=MS,hold=MS,budget=MS`
//! (`alpha`, `slack` and `starve` as `sjf`; `fast` > 0, in milliseconds; `hold` and `budget`
//! gate the fast lane, below).
//!
//! ## The fast lane's gate (`hold`, `budget`)
//!
//! Both off by default; exact rule in [`crate::gate`]. **Hold**: a short job
//! may take a fast slot only once it has waited `hold` (its batch grows
//! meanwhile). **Budget**: a short job may take device d's fast slot only if
//! d's regular slot is not expected (by the running jobs' estimated costs) to
//! free within `budget` of the short job's arrival, or once it has waited
//! `budget`. **Burst** (qualifies `hold`): the hold applies only while some
//! long job has been queued for at least `burst` (a long model is
//! backlogged). With a gate the fast lane takes the oldest admitted short job.
//! `lanes:...,hold=MS,budget=MS|off,burst=MS|off` and
//! `fair:...,fast=MS,hold=MS,budget=MS|off,burst=MS|off` (`fair` needs `fast`
//! for any; `burst` needs `hold`).
//!
//! ## The fast lane's shape (`width`, `beside`)
//!
//! Exact rule in [`crate::fast_shape`]. **Width** (`width=K`, default 1): K
//! fast slots per device. **Beside** (`beside=long|any`, default `long`):
//! with `any` a fast slot also opens while the regular slots hold only short
//! jobs. `lanes:...,width=K,beside=long|any` and `fair:...,fast=MS,width=K,beside=long|any`
//! (`fair` needs `fast` for either).

use std::fmt;
use std::str::FromStr;

use crate::{Beside, FastGate, FastShape, Nanos, PolicyError, NANOS_PER_MS};

/// The allowed policy names, for error messages.
pub const ALLOWED: &str =
    "fifo, limit:K (K >= 1), sjf[:alpha=A,slack=MS|off,starve=MS|off], fair[:alpha=A,slack=MS|off,starve=MS|off,threshold=MS,cap=MS,usage=MS|off,fast=MS|off,hold=MS,budget=MS|off,burst=MS|off,width=K,beside=long|any], lanes[:alpha=A,slack=MS|off,starve=MS|off,fast=MS,hold=MS,budget=MS|off,burst=MS|off,width=K,beside=long|any], edf";

/// `sjf`'s default aging rate α (cost-nanoseconds forgiven per nanosecond
/// waited), chosen by simulation: docs/results/sim.md.
pub const DEFAULT_SJF_ALPHA: f64 = 4.0;
/// `sjf`'s default slack margin, chosen by simulation: docs/results/sim.md.
pub const DEFAULT_SJF_SLACK: Option<Nanos> = Some(80_000_000);
/// `sjf`'s default starvation bound: off, so a job past saving may wait as
/// long as other jobs keep becoming urgent (the module doc).
pub const DEFAULT_SJF_STARVE: Option<Nanos> = None;

/// `fair`'s default threshold: how far (device time) a model may run ahead of
/// its share before it yields. Chosen by simulation: docs/results/sim.md.
pub const DEFAULT_FAIR_THRESHOLD: Nanos = 20_000_000;
/// `fair`'s default cap on a deficit counter, either way: how much of a
/// burst is remembered. Chosen by simulation: docs/results/sim.md.
pub const DEFAULT_FAIR_CAP: Nanos = 200_000_000;

/// `lanes`' default fast-lane threshold: a job estimated to cost at most this
/// is short and may take a device's fast slot. Chosen by simulation:
/// docs/results/sim.md.
pub const DEFAULT_LANES_FAST: Nanos = 20_000_000;

/// The most fast slots a device may have (`width`): beyond a few, a fast lane
/// is no longer a lane but `independent`.
pub const MAX_FAST_WIDTH: u32 = 8;

/// A scheduling policy. Parse one from its name with [`str::parse`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Policy {
    /// Arrival order, device capacity as configured.
    Fifo,
    /// Arrival order, `K` jobs at once on every device.
    Limit(u32),
    /// Shortest first with aging rate `alpha`, an optional slack margin and
    /// an optional starvation bound `starve`.
    Sjf {
        alpha: f64,
        slack: Option<Nanos>,
        starve: Option<Nanos>,
    },
    /// `sjf`, except that a model more than `threshold` of device time ahead
    /// of its share yields to the other models (deficits kept within
    /// `±cap`); shares are equal, or with `usage` each model's recent part
    /// of the device time; with `fast`, also `lanes`' fast slot per device.
    Fair {
        alpha: f64,
        slack: Option<Nanos>,
        starve: Option<Nanos>,
        threshold: Nanos,
        cap: Nanos,
        usage: Option<Nanos>,
        fast: Option<Nanos>,
        gate: FastGate,
        shape: FastShape,
    },
    /// `sjf` on the regular slots, plus one fast slot per device that a job
    /// of estimated cost at most `fast` may take beside a long job, when
    /// `gate` admits it (`shape`: more fast slots, or beside any job).
    Lanes {
        alpha: f64,
        slack: Option<Nanos>,
        starve: Option<Nanos>,
        fast: Nanos,
        gate: FastGate,
        shape: FastShape,
    },
    /// Earliest deadline first, dropping jobs that cannot finish in time.
    Edf,
}

impl Policy {
    /// `sjf` with the default aging and slack.
    pub fn sjf() -> Self {
        Self::Sjf {
            alpha: DEFAULT_SJF_ALPHA,
            slack: DEFAULT_SJF_SLACK,
            starve: DEFAULT_SJF_STARVE,
        }
    }

    /// `fair` with the default aging, slack, threshold and cap.
    pub fn fair() -> Self {
        Self::Fair {
            alpha: DEFAULT_SJF_ALPHA,
            slack: DEFAULT_SJF_SLACK,
            starve: DEFAULT_SJF_STARVE,
            threshold: DEFAULT_FAIR_THRESHOLD,
            cap: DEFAULT_FAIR_CAP,
            usage: None,
            fast: None,
            gate: FastGate::default(),
            shape: FastShape::default(),
        }
    }

    /// `lanes` with the default aging, slack and fast threshold.
    pub fn lanes() -> Self {
        Self::Lanes {
            alpha: DEFAULT_SJF_ALPHA,
            slack: DEFAULT_SJF_SLACK,
            starve: DEFAULT_SJF_STARVE,
            fast: DEFAULT_LANES_FAST,
            gate: FastGate::default(),
            shape: FastShape::default(),
        }
    }

    /// `sjf`'s aging rate and slack margin, for `sjf`, `fair` and `lanes`.
    pub(crate) fn shortest_first(&self) -> Option<(f64, Option<Nanos>)> {
        match *self {
            Self::Sjf { alpha, slack, .. }
            | Self::Fair { alpha, slack, .. }
            | Self::Lanes { alpha, slack, .. } => Some((alpha, slack)),
            _ => None,
        }
    }

    /// (`sjf`, `fair`, `lanes`) the starvation bound: a job that has waited
    /// this long goes before all others, oldest first; `None` when off and
    /// under other policies.
    pub fn starve(&self) -> Option<Nanos> {
        match *self {
            Self::Sjf { starve, .. } | Self::Fair { starve, .. } | Self::Lanes { starve, .. } => {
                starve
            }
            _ => None,
        }
    }

    /// (`lanes`) the largest estimated cost of a short job, which may take a
    /// device's fast slot; `None` under other policies.
    pub fn fast_lane(&self) -> Option<Nanos> {
        match *self {
            Self::Lanes { fast, .. } => Some(fast),
            Self::Fair { fast, .. } => fast,
            _ => None,
        }
    }

    /// (`lanes`, `fair` with `fast`) when a short job may take an open fast
    /// slot; the default (admit at once) under other policies.
    pub fn fast_gate(&self) -> FastGate {
        match *self {
            Self::Lanes { gate, .. } | Self::Fair { gate, .. } => gate,
            _ => FastGate::default(),
        }
    }

    /// (`lanes`, `fair` with `fast`) how many fast slots a device has and
    /// what a fast job may run beside; the default under other policies.
    pub fn fast_shape(&self) -> FastShape {
        match *self {
            Self::Lanes { shape, .. } | Self::Fair { shape, .. } => shape,
            _ => FastShape::default(),
        }
    }

    /// Fast slots per device under this policy (`width`, 1 by default, under
    /// `lanes` and `fair` with `fast`; else 0): a driver that sizes
    /// per-model concurrency by device slots adds these.
    pub fn fast_slots(&self) -> u32 {
        if self.fast_lane().is_some() {
            self.fast_shape().width
        } else {
            0
        }
    }

    /// Jobs a device may run at once under this policy, given its configured
    /// capacity.
    pub fn slots(&self, device_capacity: u32) -> u32 {
        match self {
            Self::Limit(k) => *k,
            _ => device_capacity,
        }
    }
}

fn bad(policy: &str, key: &str, value: &str, allowed: &str) -> PolicyError {
    PolicyError::BadPolicyArgument {
        policy: policy.to_string(),
        key: key.to_string(),
        value: value.to_string(),
        allowed: allowed.to_string(),
    }
}

fn milliseconds(name: &str, key: &str, value: &str) -> Result<Nanos, PolicyError> {
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
        .map(|ms| (ms * NANOS_PER_MS) as Nanos)
        .ok_or_else(|| bad(name, key, value, "must be milliseconds >= 0"))
}

/// Milliseconds >= 0, or `off` / `none` for `None`.
fn milliseconds_or_off(name: &str, key: &str, value: &str) -> Result<Option<Nanos>, PolicyError> {
    match value.trim() {
        "off" | "none" => Ok(None),
        v => milliseconds(name, key, v)
            .map(Some)
            .map_err(|_| bad(name, key, value, "must be milliseconds >= 0 or off")),
    }
}

/// Milliseconds > 0, or `off` / `none` for `None`.
fn positive_milliseconds_or_off(
    name: &str,
    key: &str,
    value: &str,
) -> Result<Option<Nanos>, PolicyError> {
    match milliseconds_or_off(name, key, value) {
        Ok(Some(ns)) if ns > 0 => Ok(Some(ns)),
        Ok(None) => Ok(None),
        _ => Err(bad(name, key, value, "must be milliseconds > 0 or off")),
    }
}

/// Which shortest-first policy [`parse_shortest_first`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Sjf,
    Fair,
    Lanes,
}

/// `sjf:KEY=VALUE,...`, `fair:KEY=VALUE,...` and `lanes:KEY=VALUE,...`;
/// `fair` alone takes `threshold` and `cap`, `lanes` alone `fast`.
fn parse_shortest_first(name: &str, family: Family, args: &str) -> Result<Policy, PolicyError> {
    let (mut alpha, mut slack) = (DEFAULT_SJF_ALPHA, DEFAULT_SJF_SLACK);
    let mut starve = DEFAULT_SJF_STARVE;
    let (mut threshold, mut cap) = (DEFAULT_FAIR_THRESHOLD, DEFAULT_FAIR_CAP);
    let mut usage = None;
    let mut fast = DEFAULT_LANES_FAST;
    let mut fair_fast = None;
    let mut gate = FastGate::default();
    let mut shape = FastShape::default();
    let fair = family == Family::Fair;
    let lanes = family == Family::Lanes;
    let keys = match family {
        Family::Sjf => "alpha, slack, starve",
        Family::Fair => {
            "alpha, slack, starve, threshold, cap, usage, fast, hold, budget, burst, width, beside"
        }
        Family::Lanes => "alpha, slack, starve, fast, hold, budget, burst, width, beside",
    };
    for pair in args.split(',') {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(bad(
                name,
                "argument",
                pair,
                &format!("expected KEY=VALUE with KEY one of {keys}"),
            ));
        };
        match (key.trim(), fair, lanes) {
            ("alpha", _, _) => {
                alpha = value
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|a| a.is_finite() && *a >= 0.0)
                    .ok_or_else(|| bad(name, "alpha", value, "must be a number >= 0"))?;
            }
            ("slack", _, _) => slack = milliseconds_or_off(name, "slack", value)?,
            ("starve", _, _) => starve = positive_milliseconds_or_off(name, "starve", value)?,
            ("threshold", true, _) => threshold = milliseconds(name, "threshold", value)?,
            ("usage", true, _) => usage = positive_milliseconds_or_off(name, "usage", value)?,
            ("fast", false, true) => {
                fast = milliseconds(name, "fast", value)?;
                if fast == 0 {
                    return Err(bad(name, "fast", value, "must be milliseconds > 0"));
                }
            }
            ("fast", true, _) => fair_fast = positive_milliseconds_or_off(name, "fast", value)?,
            ("hold", true, _) | ("hold", _, true) => gate.hold = milliseconds(name, "hold", value)?,
            ("budget", true, _) | ("budget", _, true) => {
                gate.budget = milliseconds_or_off(name, "budget", value)?;
            }
            ("burst", true, _) | ("burst", _, true) => {
                gate.burst = milliseconds_or_off(name, "burst", value)?;
            }
            ("width", true, _) | ("width", _, true) => {
                shape.width = value
                    .trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|k| (1..=MAX_FAST_WIDTH).contains(k))
                    .ok_or_else(|| {
                        bad(
                            name,
                            "width",
                            value,
                            &format!("must be an integer from 1 to {MAX_FAST_WIDTH}"),
                        )
                    })?;
            }
            ("beside", true, _) | ("beside", _, true) => {
                shape.beside = match value.trim() {
                    "long" => Beside::Long,
                    "any" => Beside::Any,
                    _ => return Err(bad(name, "beside", value, "must be long or any")),
                };
            }
            ("cap", true, _) => {
                cap = milliseconds(name, "cap", value)?;
                if cap == 0 {
                    return Err(bad(name, "cap", value, "must be milliseconds > 0"));
                }
            }
            (other, _, _) => {
                return Err(bad(name, "argument", other, &format!("allowed are {keys}")));
            }
        }
    }
    if gate.burst.is_some() && gate.hold == 0 {
        let value = format!("{}", gate.burst.unwrap_or(0) as f64 / NANOS_PER_MS);
        return Err(bad(
            name,
            "burst",
            &value,
            "qualifies the hold, so it needs hold=MS > 0",
        ));
    }
    match family {
        Family::Sjf => {
            return Ok(Policy::Sjf {
                alpha,
                slack,
                starve,
            })
        }
        Family::Lanes => {
            return Ok(Policy::Lanes {
                alpha,
                slack,
                starve,
                fast,
                gate,
                shape,
            })
        }
        Family::Fair => {}
    }
    if fair_fast.is_none() && (!gate.is_open() || shape != FastShape::default()) {
        let key = if gate.hold > 0 {
            "hold"
        } else if gate.budget.is_some() {
            "budget"
        } else if shape.width != 1 {
            "width"
        } else {
            "beside"
        };
        let value = args
            .rsplit(',')
            .filter_map(|p| p.split_once('='))
            .find(|(k, _)| k.trim() == key)
            .map_or("", |(_, v)| v);
        return Err(bad(
            name,
            key,
            value,
            "shapes or gates the fast lane, so it needs fast=MS",
        ));
    }
    if threshold >= cap {
        let value = format!("{}", threshold as f64 / NANOS_PER_MS);
        return Err(bad(
            name,
            "threshold",
            &value,
            "must be less than cap (a deficit never goes below -cap)",
        ));
    }
    Ok(Policy::Fair {
        alpha,
        slack,
        starve,
        threshold,
        cap,
        usage,
        fast: fair_fast,
        gate,
        shape,
    })
}

impl FromStr for Policy {
    type Err = PolicyError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        let (head, args) = match name.split_once(':') {
            Some((h, a)) => (h, Some(a)),
            None => (name, None),
        };
        match (head, args) {
            ("fifo", None) => Ok(Self::Fifo),
            ("edf", None) => Ok(Self::Edf),
            ("sjf", None) => Ok(Self::sjf()),
            ("sjf", Some(a)) => parse_shortest_first(name, Family::Sjf, a),
            ("fair", None) => Ok(Self::fair()),
            ("fair", Some(a)) => parse_shortest_first(name, Family::Fair, a),
            ("lanes", None) => Ok(Self::lanes()),
            ("lanes", Some(a)) => parse_shortest_first(name, Family::Lanes, a),
            ("limit", Some(k)) => k
                .parse::<u32>()
                .ok()
                .filter(|k| *k >= 1)
                .map(Self::Limit)
                .ok_or_else(|| bad(name, "K", k, "must be an integer >= 1")),
            ("limit", None) => Err(bad(name, "K", "", "must be an integer >= 1, as in limit:2")),
            ("fifo" | "edf", Some(a)) => Err(bad(name, "argument", a, "this policy takes none")),
            _ => Err(PolicyError::UnknownPolicy {
                name: name.to_string(),
                allowed: ALLOWED,
            }),
        }
    }
}

impl fmt::Display for Policy {
    /// The canonical name; parsing it gives the same policy back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Fifo => f.write_str("fifo"),
            Self::Edf => f.write_str("edf"),
            Self::Limit(k) => write!(f, "limit:{k}"),
            Self::Sjf { .. } => {
                if *self == Self::sjf() {
                    return f.write_str("sjf");
                }
                write!(f, "sjf:")?;
                write_shortest_first(f, self)
            }
            Self::Fair {
                threshold,
                cap,
                usage,
                fast,
                gate,
                shape,
                ..
            } => {
                if *self == Self::fair() {
                    return f.write_str("fair");
                }
                write!(f, "fair:")?;
                write_shortest_first(f, self)?;
                write!(
                    f,
                    ",threshold={},cap={}",
                    *threshold as f64 / NANOS_PER_MS,
                    *cap as f64 / NANOS_PER_MS
                )?;
                if let Some(ns) = usage {
                    write!(f, ",usage={}", *ns as f64 / NANOS_PER_MS)?;
                }
                match fast {
                    Some(ns) => write!(f, ",fast={}", *ns as f64 / NANOS_PER_MS)?,
                    None => return Ok(()),
                }
                write_gate(f, gate)?;
                write_shape(f, shape)
            }
            Self::Lanes {
                fast, gate, shape, ..
            } => {
                if *self == Self::lanes() {
                    return f.write_str("lanes");
                }
                write!(f, "lanes:")?;
                write_shortest_first(f, self)?;
                write!(f, ",fast={}", *fast as f64 / NANOS_PER_MS)?;
                write_gate(f, gate)?;
                write_shape(f, shape)
            }
        }
    }
}

/// `,width=K` and `,beside=any` where they differ from the default.
fn write_shape(f: &mut fmt::Formatter<'_>, shape: &FastShape) -> fmt::Result {
    if shape.width != 1 {
        write!(f, ",width={}", shape.width)?;
    }
    if shape.beside != Beside::Long {
        write!(f, ",beside={}", shape.beside)?;
    }
    Ok(())
}

fn write_gate(f: &mut fmt::Formatter<'_>, gate: &FastGate) -> fmt::Result {
    if gate.hold > 0 {
        write!(f, ",hold={}", gate.hold as f64 / NANOS_PER_MS)?;
    }
    if let Some(ns) = gate.budget {
        write!(f, ",budget={}", ns as f64 / NANOS_PER_MS)?;
    }
    match gate.burst {
        Some(ns) => write!(f, ",burst={}", ns as f64 / NANOS_PER_MS),
        None => Ok(()),
    }
}

/// `alpha=A,slack=MS|off`, then `,starve=MS` when the bound is on.
fn write_shortest_first(f: &mut fmt::Formatter<'_>, policy: &Policy) -> fmt::Result {
    let Some((alpha, slack)) = policy.shortest_first() else {
        return Ok(());
    };
    write!(f, "alpha={alpha}")?;
    match slack {
        None => f.write_str(",slack=off")?,
        Some(ns) => write!(f, ",slack={}", ns as f64 / NANOS_PER_MS)?,
    }
    match policy.starve() {
        Some(ns) => write!(f, ",starve={}", ns as f64 / NANOS_PER_MS),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_round_trip() {
        let cases = [
            ("fifo", "fifo"),
            ("edf", "edf"),
            ("limit:3", "limit:3"),
            ("sjf", "sjf"),
            ("sjf:alpha=0", "sjf:alpha=0,slack=80"),
            ("sjf:alpha=0.25,slack=off", "sjf:alpha=0.25,slack=off"),
            ("sjf:slack=5", "sjf:alpha=4,slack=5"),
            ("fair", "fair"),
            (
                "fair:alpha=1,slack=5,threshold=5",
                "fair:alpha=1,slack=5,threshold=5,cap=200",
            ),
            (
                "fair:slack=off,cap=1000,alpha=0",
                "fair:alpha=0,slack=off,threshold=20,cap=1000",
            ),
            ("fair:fast=off", "fair"),
            ("fair:usage=off", "fair"),
            (
                "fair:usage=30000,threshold=100,cap=1000",
                "fair:alpha=4,slack=80,threshold=100,cap=1000,usage=30000",
            ),
            (
                "fair:fast=25,usage=2500.5",
                "fair:alpha=4,slack=80,threshold=20,cap=200,usage=2500.5,fast=25",
            ),
            (
                "fair:fast=20",
                "fair:alpha=4,slack=80,threshold=20,cap=200,fast=20",
            ),
            ("lanes", "lanes"),
            ("lanes:fast=10", "lanes:alpha=4,slack=80,fast=10"),
            (
                "lanes:slack=off,fast=2.5,alpha=0",
                "lanes:alpha=0,slack=off,fast=2.5",
            ),
            ("lanes:hold=3", "lanes:alpha=4,slack=80,fast=20,hold=3"),
            ("lanes:hold=0,budget=off", "lanes"),
            (
                "lanes:budget=10,fast=25",
                "lanes:alpha=4,slack=80,fast=25,budget=10",
            ),
            (
                "fair:fast=25,hold=2.5,budget=0",
                "fair:alpha=4,slack=80,threshold=20,cap=200,fast=25,hold=2.5,budget=0",
            ),
            ("fair:hold=0,budget=off", "fair"),
            (
                "lanes:burst=100,hold=6",
                "lanes:alpha=4,slack=80,fast=20,hold=6,burst=100",
            ),
            ("sjf:starve=300", "sjf:alpha=4,slack=80,starve=300"),
            ("sjf:starve=off", "sjf"),
            ("sjf:starve=none,slack=off", "sjf:alpha=4,slack=off"),
            ("sjf:starve=0.5,alpha=0", "sjf:alpha=0,slack=80,starve=0.5"),
            (
                "fair:starve=450",
                "fair:alpha=4,slack=80,starve=450,threshold=20,cap=200",
            ),
            ("fair:starve=off", "fair"),
            (
                "lanes:fast=10,starve=300",
                "lanes:alpha=4,slack=80,starve=300,fast=10",
            ),
            ("lanes:width=1,beside=long", "lanes"),
            (
                "lanes:beside=any,width=2",
                "lanes:alpha=4,slack=80,fast=20,width=2,beside=any",
            ),
            (
                "fair:fast=8,hold=6,burst=100,beside=any,width=2",
                "fair:alpha=4,slack=80,threshold=20,cap=200,fast=8,hold=6,burst=100,width=2,beside=any",
            ),
            (
                "fair:fast=8,width=3",
                "fair:alpha=4,slack=80,threshold=20,cap=200,fast=8,width=3",
            ),
            ("fair:width=1,beside=long", "fair"),
        ];
        for (name, canonical) in cases {
            let p: Policy = name.parse().unwrap();
            assert_eq!(p.to_string(), canonical, "{name}");
            assert_eq!(canonical.parse::<Policy>().unwrap(), p, "{name}");
        }
        // `fair` spelled out with every default is `fair` (it shares `sjf`'s
        // alpha and slack).
        let slack = DEFAULT_SJF_SLACK.map_or("off".to_string(), |ns| {
            (ns as f64 / NANOS_PER_MS).to_string()
        });
        let long = format!(
            "fair:alpha={DEFAULT_SJF_ALPHA},slack={slack},threshold={},cap={}",
            DEFAULT_FAIR_THRESHOLD as f64 / NANOS_PER_MS,
            DEFAULT_FAIR_CAP as f64 / NANOS_PER_MS
        );
        assert_eq!(long.parse::<Policy>().unwrap().to_string(), "fair");
    }

    #[test]
    fn bad_names_name_the_value_and_what_is_allowed() {
        let cases = [
            ("lifo", "unknown_policy", "lifo"),
            ("limit:0", "bad_policy_argument", "'0'"),
            ("limit", "bad_policy_argument", "limit:2"),
            ("limit:x", "bad_policy_argument", "'x'"),
            ("sjf:alpha=-1", "bad_policy_argument", "'-1'"),
            ("sjf:beta=1", "bad_policy_argument", "alpha, slack"),
            ("sjf:slack=soon", "bad_policy_argument", "'soon'"),
            ("fifo:2", "bad_policy_argument", "takes none"),
            ("sjf:threshold=5", "bad_policy_argument", "alpha, slack"),
            (
                "fair:weight=2",
                "bad_policy_argument",
                "threshold, cap, usage, fast",
            ),
            ("fair:threshold=-1", "bad_policy_argument", "'-1'"),
            ("fair:cap=0", "bad_policy_argument", "> 0"),
            ("fair:usage=0", "bad_policy_argument", "'0'"),
            ("fair:usage=soon", "bad_policy_argument", "'soon'"),
            ("sjf:usage=100", "bad_policy_argument", "alpha, slack"),
            ("lanes:usage=100", "bad_policy_argument", "fast, hold"),
            ("fair:cap=soon", "bad_policy_argument", "'soon'"),
            ("fair:threshold=300", "bad_policy_argument", "less than cap"),
            ("fair:threshold", "bad_policy_argument", "KEY=VALUE"),
            ("fiar", "unknown_policy", "fair["),
            ("shape", "unknown_policy", "lanes["),
            ("lanes:fast=0", "bad_policy_argument", "> 0"),
            ("lanes:fast=-5", "bad_policy_argument", "'-5'"),
            ("lanes:fast=soon", "bad_policy_argument", "'soon'"),
            (
                "lanes:threshold=5",
                "bad_policy_argument",
                "alpha, slack, starve, fast",
            ),
            ("sjf:fast=5", "bad_policy_argument", "alpha, slack"),
            ("fair:fast=0", "bad_policy_argument", "> 0 or off"),
            ("fair:fast=soon", "bad_policy_argument", "'soon'"),
            ("lanes:fast", "bad_policy_argument", "KEY=VALUE"),
            ("lanes:hold=-1", "bad_policy_argument", "'-1'"),
            ("lanes:hold=soon", "bad_policy_argument", "'soon'"),
            ("lanes:budget=-2", "bad_policy_argument", "budget = '-2'"),
            ("lanes:budget=soon", "bad_policy_argument", ">= 0 or off"),
            ("fair:hold=3", "bad_policy_argument", "needs fast=MS"),
            ("fair:budget=10", "bad_policy_argument", "budget = '10'"),
            (
                "fair:fast=off,budget=10",
                "bad_policy_argument",
                "needs fast=MS",
            ),
            ("sjf:hold=3", "bad_policy_argument", "alpha, slack"),
            (
                "lanes:burst=100",
                "bad_policy_argument",
                "needs hold=MS > 0",
            ),
            ("lanes:hold=3,burst=soon", "bad_policy_argument", "'soon'"),
            (
                "fair:hold=3,burst=50",
                "bad_policy_argument",
                "needs fast=MS",
            ),
            ("lanes:delay=3", "bad_policy_argument", "fast, hold, budget"),
            ("sjf:starve=0", "bad_policy_argument", "starve = '0'"),
            ("sjf:starve=0", "bad_policy_argument", "> 0 or off"),
            ("sjf:starve=-5", "bad_policy_argument", "starve = '-5'"),
            ("sjf:starve=soon", "bad_policy_argument", "starve = 'soon'"),
            ("fair:starve=inf", "bad_policy_argument", "> 0 or off"),
            ("lanes:starve=", "bad_policy_argument", "starve = ''"),
            ("edf:starve=300", "bad_policy_argument", "takes none"),
            ("sjf:starve", "bad_policy_argument", "alpha, slack, starve"),
            ("lanes:width=0", "bad_policy_argument", "width = '0'"),
            ("lanes:width=9", "bad_policy_argument", "from 1 to 8"),
            ("lanes:width=1.5", "bad_policy_argument", "width = '1.5'"),
            ("lanes:beside=short", "bad_policy_argument", "long or any"),
            ("fair:hold=3", "bad_policy_argument", "gates the fast lane"),
            ("fair:width=2", "bad_policy_argument", "needs fast=MS"),
            ("fair:beside=any", "bad_policy_argument", "beside = 'any'"),
            (
                "fair:fast=off,beside=any",
                "bad_policy_argument",
                "needs fast",
            ),
            ("sjf:width=2", "bad_policy_argument", "alpha, slack"),
            ("lanes:shape=2", "bad_policy_argument", "width, beside"),
        ];
        for (name, code, fragment) in cases {
            let err = name.parse::<Policy>().unwrap_err();
            assert_eq!(err.code(), code, "{name}");
            let msg = err.to_string();
            assert!(msg.contains(fragment), "{name}: {msg}");
            assert!(!msg.contains('\n'), "{name}: one line");
        }
    }

    #[test]
    fn limit_overrides_capacity() {
        assert_eq!(Policy::Limit(3).slots(1), 3);
        assert_eq!(Policy::Fifo.slots(2), 2);
        assert_eq!(Policy::lanes().slots(1), 1, "the fast slot is extra");
        assert_eq!(Policy::lanes().fast_slots(), 1);
        assert_eq!(Policy::sjf().fast_slots(), 0);
        let wide = |name: &str| name.parse::<Policy>().unwrap().fast_slots();
        assert_eq!(wide("lanes:width=3"), 3);
        assert_eq!(wide("fair:fast=8,width=2"), 2);
        assert_eq!(wide("fair"), 0);
    }
}
