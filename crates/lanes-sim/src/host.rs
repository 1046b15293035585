//! The host's resources: a pool of CPU cores and GPUs that slow down when
//! jobs overlap.
//!
//! **CPU.** C cores serve CPU phases first come, first served; a phase holds
//! one core for its whole cost ([`CpuPool`]). With `host.time_slicing` they
//! are shared as an operating system shares them instead ([`SlicedCores`]):
//! every runnable phase runs at once, each at `min(1, C/n)` of a core with n
//! runnable (processor sharing), so a short phase is slowed by a long one but
//! never waits for it to end. With `host.slice_ms` as well they are handed
//! out in slices instead ([`crate::slices::RoundRobin`]); [`TimeShared`] is
//! either.
//!
//! **Stops.** Under processor sharing a core can stop whole for a while (the
//! hypervisor's stops, `host.stop_ms`): it leaves the pool, and the phase
//! that ran on it is set aside until the stop ends ([`SlicedCores::stop`]).
//!
//! **GPU contention.** With k jobs on one GPU, each progresses at `η(k)/k`
//! of its solo speed (processor sharing). With the default `η(k) = 1` two 50 ms
//! jobs started together each finish after 100 ms, as measured in the field.
//! A GPU recomputes the remaining work of its jobs whenever one starts or ends
//! and schedules its next completion; a completion computed before the last
//! change is stale and ignored (the GPU's `version` tells).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

use crate::config::GpuQueue;
use crate::run_queues::RunQueues;
use crate::slices::RoundRobin;

/// A FCFS pool of identical cores.
#[derive(Debug)]
pub struct CpuPool<T> {
    idle: usize,
    waiting: VecDeque<(T, u64)>,
    busy: u64,
}

impl<T> CpuPool<T> {
    /// `cores` idle cores.
    pub fn new(cores: usize) -> Self {
        Self {
            idle: cores,
            waiting: VecDeque::new(),
            busy: 0,
        }
    }

    /// Asks for a core for `cost` ns: returns the task back if it starts now,
    /// else queues it.
    pub fn request(&mut self, task: T, cost: u64) -> Option<T> {
        if self.idle > 0 {
            self.idle -= 1;
            self.busy += cost;
            Some(task)
        } else {
            self.waiting.push_back((task, cost));
            None
        }
    }

    /// A core finished: returns the next waiting task, which starts now.
    pub fn release(&mut self) -> Option<(T, u64)> {
        match self.waiting.pop_front() {
            Some((task, cost)) => {
                self.busy += cost;
                Some((task, cost))
            }
            None => {
                self.idle += 1;
                None
            }
        }
    }

    /// Core-nanoseconds of work started so far.
    pub fn busy(&self) -> u64 {
        self.busy
    }
}

/// C cores time-sliced among every runnable phase (egalitarian processor
/// sharing), runtime calls optionally stretched by how many run at once.
///
/// **Rule.** With n phases runnable each progresses at `r = min(1, C/n)` of a
/// core. Kept in *virtual time* `v`: the work each runnable phase has
/// received so far, which grows at that rate; a phase of cost c started at
/// `v0` ends when `v` reaches `v0 + c`. The phases sit in a heap by that
/// end, so a start or an end costs O(log n) however many run. Only the
/// earliest end is scheduled; every start or end bumps `version`, and an end
/// event carrying an older version is stale and ignored.
///
/// With a stretch table `s` (`host.call_stretch`), phases started as
/// runtime *calls* ([`SlicedCores::start_call`]) are among the n but keep
/// their own virtual time `w`, growing at `r / s(k)` with k calls running
/// (`s(k)` = `s[k-1]`, the last value repeating): k calls slow each other
/// by `s(k)` beyond processor sharing. Without one, calls are phases like
/// any other.
///
/// **Weighted** (`host.call_stretch_weighted`): while the n runnable
/// phases outnumber the C cores the stretch is a share, not a loss. With m
/// other phases and k calls, a call gets `1/s(k)` of what another phase
/// gets, and the cores hand out all they have, C core-seconds per second,
/// no phase above one core: the others run at `r_o = C / (m + k / s(k))`
/// and the calls at `r_o / s(k)`; where that would put the others above
/// one core they run at 1 and the calls share what is left,
/// `min(1, (C - m) / k)`. With a core to spare (n <= C) the calls stretch
/// as without it: what they lose is a spare core's time.
///
/// **Capped** (`host.call_stretch_capped`): the stretch stands for all of
/// a call's wait for a core beyond processor sharing among the calls (what
/// the lab measures: a call's wall time with k calls running over the lone
/// call's times `max(1, k/C)`), so it caps a call's rate instead of scaling
/// it: a call progresses at `min(r, min(1, C/k) / s(k))`. With the calls
/// alone on the cores (`r = min(1, C/k)`) that is the lossy rule; while
/// other phases share the cores too, sharing with them already slows the
/// call and the stretch adds only what it exceeds — the larger of the two
/// waits, not their product (as `host.call_preempt_absorbed` does for
/// preemptions). (Until 2026-12-02 05:30 UTC the cap was `1/s(k)`, which
/// leaves out the calls' own sharing once they outnumber the cores.)
///
/// **Lag** (`host.lag_ms`, no stretch): a phase's first `lag` ns less what
/// its thread has run since it last slept ([`SlicedCores::start_lagged`];
/// 0 for any phase but a runtime call) is *fresh*, the rest *stale*. The
/// n_f fresh phases share the cores as above, each at `min(1, C/n_f)`;
/// the n_s stale ones share what they leave, each at
/// `min(1, max(0, C - n_f) / n_s)`, in a virtual time `u` of their own. A
/// phase whose fresh part ends goes on as stale. This is EEVDF's lag in
/// processor sharing's terms: a thread that woke runs ahead of one that has
/// run on, until it has run its lag.
///
/// **Lag among calls** (`host.lag_among_calls`, [`SlicedCores::lagged_among_calls`]):
/// the lag splits the runtime calls' share of the cores among the calls
/// only, and only while they outnumber the cores. With n phases runnable,
/// k of them calls, every phase keeps `r = min(1, C/n)` while `k <= C`.
/// When `k > C` the calls split their `k * r` core-seconds per second among
/// themselves: each call's first `lag` ns are fresh, its rest stale; the
/// k_f fresh calls run first, each at `a_f = min(1, C/k_f)` of a scaled core,
/// the k_s stale ones share what is left, `a_s = min(1, (C - k_f * a_f) / k_s)`,
/// both scaled by `g = r * k / C`, so the calls together get `k * r` as
/// before. The other phases never see the lag: their wait for the calls is
/// processor sharing's. One executor per core never runs more calls than
/// cores, so `fifo` and `sjf` are processor sharing (to a ns of rounding); with a
/// runtime per model the short calls run through and the long ones wait.
#[derive(Debug)]
pub struct SlicedCores {
    cores: f64,
    /// (virtual end, token); the end as f64 bits (non-negative, so they order).
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    v: f64,
    /// The stretched calls, by their end in `w`.
    calls: BinaryHeap<Reverse<(u64, u32)>>,
    w: f64,
    stretch: Vec<f64>,
    /// How the stretch acts on a call's rate (see above).
    rule: StretchRule,
    /// A thread's lag, ns (0: none, every phase fresh).
    lag: u64,
    /// The stale phases, by their end in `u`.
    stale: BinaryHeap<Reverse<(u64, u32)>>,
    u: f64,
    /// The stale work of fresh phases, ns, taken up when their fresh part ends.
    later: HashMap<u32, u64>,
    /// The lag acts among the calls only (see [`SlicedCores`]).
    among_calls: bool,
    updated: u64,
    /// Bumped on every change; end events carry it.
    pub version: u32,
    busy: f64,
}

/// How a stretch table acts on a runtime call's rate ([`SlicedCores`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StretchRule {
    /// A factor: `r / s(k)`, what the calls lose nobody gains (the default).
    #[default]
    Factor,
    /// A share of work-conserving cores (`host.call_stretch_weighted`).
    Weighted,
    /// A cap: `min(r, min(1, C/k) / s(k))` (`host.call_stretch_capped`).
    Capped,
}

impl SlicedCores {
    /// `cores` idle cores.
    pub fn new(cores: usize) -> Self {
        Self::with_stretch(cores, Vec::new())
    }

    /// `cores` idle cores whose calls stretch by `stretch` (empty: none).
    pub fn with_stretch(cores: usize, stretch: Vec<f64>) -> Self {
        Self::stretched(cores, stretch, StretchRule::Factor)
    }

    /// `cores` idle cores whose calls stretch by `stretch` under `rule`
    /// (see [`SlicedCores`]).
    pub fn stretched(cores: usize, stretch: Vec<f64>, rule: StretchRule) -> Self {
        Self {
            cores: cores as f64,
            heap: BinaryHeap::new(),
            v: 0.0,
            calls: BinaryHeap::new(),
            w: 0.0,
            stretch,
            rule,
            lag: 0,
            stale: BinaryHeap::new(),
            u: 0.0,
            later: HashMap::new(),
            among_calls: false,
            updated: 0,
            version: 0,
            busy: 0.0,
        }
    }

    /// `cores` idle cores whose threads have a lag of `lag` ns (see
    /// [`SlicedCores`]; 0: none).
    pub fn lagged(cores: usize, lag: u64) -> Self {
        let mut c = Self::new(cores);
        c.lag = lag;
        c
    }

    /// `cores` idle cores whose runtime calls split their share by a lag of
    /// `lag` ns each while they outnumber the cores (see [`SlicedCores`]).
    pub fn lagged_among_calls(cores: usize, lag: u64) -> Self {
        let mut c = Self::lagged(cores, lag);
        c.among_calls = true;
        c
    }

    /// Among calls: the rates of the other phases, the fresh calls and the
    /// stale calls, per the rule above.
    fn rates_among_calls(&self) -> (f64, f64, f64) {
        let (others, fresh, stale) = (self.heap.len(), self.calls.len(), self.stale.len());
        let n = others + fresh + stale;
        if n == 0 {
            return (1.0, 1.0, 1.0);
        }
        let r = (self.cores / n as f64).min(1.0);
        let k = fresh + stale;
        if k as f64 <= self.cores {
            return (r, r, r);
        }
        let scale = r * k as f64 / self.cores;
        let a_fresh = if fresh > 0 {
            (self.cores / fresh as f64).min(1.0)
        } else {
            0.0
        };
        let left = (self.cores - fresh as f64 * a_fresh).max(0.0);
        let a_stale = if stale > 0 {
            (left / stale as f64).min(1.0)
        } else {
            0.0
        };
        (r, a_fresh * scale, a_stale * scale)
    }

    /// The fresh phases running (every phase without a lag).
    fn running(&self) -> usize {
        self.heap.len() + self.calls.len()
    }

    /// The stale phases' rate: what the fresh ones leave, shared.
    fn stale_rate(&self) -> f64 {
        let left = (self.cores - self.running() as f64).max(0.0);
        (left / self.stale.len().max(1) as f64).min(1.0)
    }

    /// The rates of the other phases and of the calls, per the rule above.
    fn rates(&self) -> (f64, f64) {
        let n = self.running();
        if n == 0 {
            return (1.0, 1.0);
        }
        let k = self.calls.len();
        let stretch = match k.min(self.stretch.len()) {
            0 => 1.0,
            i => self.stretch[i - 1],
        };
        if self.rule != StretchRule::Weighted || n as f64 <= self.cores {
            let rate = (self.cores / n as f64).min(1.0);
            let call = if self.rule == StretchRule::Capped {
                rate.min((self.cores / k.max(1) as f64).min(1.0) / stretch)
            } else {
                rate / stretch
            };
            return (rate, call);
        }
        let others = self.heap.len() as f64;
        let rate = self.cores / (others + k as f64 / stretch);
        if rate <= 1.0 {
            (rate, rate / stretch)
        } else {
            (1.0, ((self.cores - others) / k as f64).min(1.0))
        }
    }

    fn advance(&mut self, now: u64) {
        if self.among_calls {
            let dt = (now - self.updated) as f64;
            if dt > 0.0 {
                let (r, fresh, stale) = self.rates_among_calls();
                self.v += dt * r;
                self.w += dt * fresh;
                self.u += dt * stale;
                self.busy += dt
                    * (self.heap.len() as f64 * r
                        + self.calls.len() as f64 * fresh
                        + self.stale.len() as f64 * stale);
            }
            self.updated = now;
            return;
        }
        let dt = (now - self.updated) as f64;
        let n = self.running();
        if n > 0 && dt > 0.0 {
            let (rate, call_rate) = self.rates();
            if !self.calls.is_empty() {
                self.w += dt * call_rate;
            }
            self.v += dt * rate;
            self.busy += dt * (n as f64).min(self.cores);
        }
        if !self.stale.is_empty() && dt > 0.0 {
            let rate = self.stale_rate();
            self.u += dt * rate;
            self.busy += dt * rate * self.stale.len() as f64;
        }
        self.updated = now;
    }

    /// When the earliest runnable phase ends, given the current set (none
    /// while every core is stopped: [`Self::stop`]).
    fn next_end(&self, now: u64) -> Option<u64> {
        if self.cores <= 0.0 {
            return None;
        }
        let left = |heap: &BinaryHeap<Reverse<(u64, u32)>>, clock: f64, rate: f64| {
            heap.peek()
                .map(|Reverse((end, _))| ((f64::from_bits(*end) - clock).max(0.0) / rate).ceil())
        };
        if self.among_calls {
            let (r, fresh, stale) = self.rates_among_calls();
            let first = [
                left(&self.heap, self.v, r),
                (fresh > 0.0)
                    .then(|| left(&self.calls, self.w, fresh))
                    .flatten(),
                (stale > 0.0)
                    .then(|| left(&self.stale, self.u, stale))
                    .flatten(),
            ]
            .into_iter()
            .flatten()
            .reduce(f64::min)?;
            return Some(now + first as u64);
        }
        let (rate, call_rate) = self.rates();
        let phase = left(&self.heap, self.v, rate);
        let call = if self.calls.is_empty() {
            None
        } else {
            left(&self.calls, self.w, call_rate)
        };
        let stale_rate = self.stale_rate();
        let stale = if stale_rate > 0.0 {
            left(&self.stale, self.u, stale_rate)
        } else {
            None
        };
        let first = [phase, call, stale]
            .into_iter()
            .flatten()
            .reduce(f64::min)?;
        Some(now + first as u64)
    }

    /// `token` becomes runnable with `cost` ns of work; returns the new
    /// earliest end (for the current `version`).
    pub fn start(&mut self, token: u32, cost: u64, now: u64) -> Option<u64> {
        if self.among_calls {
            // Among calls the lag is the calls' alone.
            return self.push(false, token, cost, now);
        }
        self.start_lagged(token, cost, 0, now)
    }

    /// [`Self::start`] for a phase whose thread has run `ran` ns since it
    /// last slept: with a lag, its first `lag - ran` ns are fresh and the
    /// rest stale (see [`SlicedCores`]). Among calls (where only runtime
    /// calls start here) the call's own first `lag` ns are fresh, whatever
    /// `ran`.
    pub fn start_lagged(&mut self, token: u32, cost: u64, ran: u64, now: u64) -> Option<u64> {
        if self.lag == 0 {
            return self.push(false, token, cost, now);
        }
        if self.among_calls {
            let fresh = self.lag.min(cost);
            if cost > fresh {
                self.later.insert(token, cost - fresh);
            }
            return self.push(true, token, fresh, now);
        }
        let fresh = self.lag.saturating_sub(ran).min(cost);
        if fresh == 0 {
            self.advance(now);
            self.stale
                .push(Reverse(((self.u + cost as f64).to_bits(), token)));
            self.version = self.version.wrapping_add(1);
            return self.next_end(now);
        }
        if cost > fresh {
            self.later.insert(token, cost - fresh);
        }
        self.push(false, token, fresh, now)
    }

    /// [`Self::start`] for a runtime call: stretched when a stretch table
    /// is set, else a phase like any other.
    pub fn start_call(&mut self, token: u32, cost: u64, now: u64) -> Option<u64> {
        let stretched = !self.stretch.is_empty();
        self.push(stretched, token, cost, now)
    }

    /// Adds a phase to the calls' heap (`call`) or the others', ending
    /// `cost` on that heap's clock from now.
    fn push(&mut self, call: bool, token: u32, cost: u64, now: u64) -> Option<u64> {
        self.advance(now);
        let (heap, clock) = if call {
            (&mut self.calls, self.w)
        } else {
            (&mut self.heap, self.v)
        };
        heap.push(Reverse(((clock + cost as f64).to_bits(), token)));
        self.version = self.version.wrapping_add(1);
        self.next_end(now)
    }

    /// An end event of `version`: moves every phase whose work is done
    /// into `done` and returns the next end, or `None` if stale or idle.
    pub fn finish(&mut self, version: u32, now: u64, done: &mut Vec<u32>) -> Option<u64> {
        if version != self.version {
            return None;
        }
        self.advance(now);
        // Sub-nanosecond leftovers are rounding, not work.
        for (heap, clock) in [(&mut self.heap, self.v), (&mut self.calls, self.w)] {
            while let Some(&Reverse((end, token))) = heap.peek() {
                if f64::from_bits(end) > clock + 0.5 {
                    break;
                }
                heap.pop();
                match self.later.remove(&token) {
                    Some(work) => self
                        .stale
                        .push(Reverse(((self.u + work as f64).to_bits(), token))),
                    None => done.push(token),
                }
            }
        }
        while let Some(&Reverse((end, token))) = self.stale.peek() {
            if f64::from_bits(end) > self.u + 0.5 {
                break;
            }
            self.stale.pop();
            done.push(token);
        }
        self.version = self.version.wrapping_add(1);
        self.next_end(now)
    }

    /// Core-nanoseconds of work done so far, up to the last change.
    pub fn busy(&self) -> u64 {
        self.busy as u64
    }

    /// Takes `token` off the cores at `now` (it moves elsewhere): returns
    /// the work it had left, in ns, and the new earliest end. A token not
    /// running here has none left.
    pub fn remove(&mut self, token: u32, now: u64) -> (u64, Option<u64>) {
        self.advance(now);
        let mut left = self.later.remove(&token).unwrap_or(0) as f64;
        let clocks = [
            (&mut self.heap, self.v),
            (&mut self.calls, self.w),
            (&mut self.stale, self.u),
        ];
        for (heap, clock) in clocks {
            heap.retain(|Reverse((end, t))| {
                if *t == token {
                    left += (f64::from_bits(*end) - clock).max(0.0);
                }
                *t != token
            });
        }
        self.version = self.version.wrapping_add(1);
        (left.round() as u64, self.next_end(now))
    }

    /// A core stops at `now` (`host.stop_ms`: the hypervisor takes the
    /// vCPU): it leaves the pool until [`Self::resume`]. With n phases
    /// running on the C cores left before it, with probability
    /// `min(1, n/C)` (`hit` below it) one was on the stopped core: the
    /// phase at `pick * n` (both uniform in [0, 1)) in the others' heap then
    /// the calls' is set aside with the work it had left, and waits for the
    /// stop's end whatever the other cores do. Returns it, and the new
    /// earliest end. With no core running (every core stopped) nothing
    /// changes. Only without a lag (`host.lag_ms` 0: no stale phases).
    pub fn stop(&mut self, now: u64, hit: f64, pick: f64) -> (Option<Frozen>, Option<u64>) {
        if self.cores < 1.0 {
            return (None, self.next_end(now));
        }
        self.advance(now);
        let (others, n) = (self.heap.len(), self.running());
        let mut frozen = None;
        if n > 0 && hit < (n as f64 / self.cores).min(1.0) {
            let i = ((pick * n as f64) as usize).min(n - 1);
            let (heap, clock, call, at) = if i < others {
                (&mut self.heap, self.v, false, i)
            } else {
                (&mut self.calls, self.w, true, i - others)
            };
            let mut entries = std::mem::take(heap).into_vec();
            let Reverse((end, token)) = entries.swap_remove(at);
            *heap = BinaryHeap::from(entries);
            let left = (f64::from_bits(end) - clock).max(0.0);
            frozen = Some(Frozen { token, left, call });
        }
        self.cores -= 1.0;
        self.version = self.version.wrapping_add(1);
        (frozen, self.next_end(now))
    }

    /// A stop ends at `now`: its core is back, and the phase it had set
    /// aside (if any) runs on with the work it had left. Returns the new
    /// earliest end.
    pub fn resume(&mut self, frozen: Option<Frozen>, now: u64) -> Option<u64> {
        self.advance(now);
        self.cores += 1.0;
        if let Some(f) = frozen {
            let (heap, clock) = if f.call {
                (&mut self.calls, self.w)
            } else {
                (&mut self.heap, self.v)
            };
            heap.push(Reverse(((clock + f.left).to_bits(), f.token)));
        }
        self.version = self.version.wrapping_add(1);
        self.next_end(now)
    }
}

/// A phase set aside by a stopped core ([`SlicedCores::stop`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Frozen {
    /// The phase's token.
    pub token: u32,
    /// Its work left, ns of its heap's clock.
    pub left: f64,
    /// It was a runtime call (the calls' heap).
    pub call: bool,
}

/// Time-shared cores (`host.time_slicing`): processor sharing, with
/// `host.slice_ms` slices handed out round-robin, or with `host.run_queues`
/// processor sharing per core over a run queue each.
#[derive(Debug)]
pub enum TimeShared {
    Sharing(SlicedCores),
    Slices(RoundRobin),
    Queues(RunQueues),
}

impl TimeShared {
    /// `cores` idle cores; slices of `slice` ns, or with 0 processor sharing
    /// (whose calls stretch by `stretch` under `rule`: see [`SlicedCores`]).
    pub fn new(cores: usize, slice: u64, stretch: Vec<f64>, rule: StretchRule) -> Self {
        if slice == 0 {
            Self::Sharing(SlicedCores::stretched(cores, stretch, rule))
        } else {
            Self::Slices(RoundRobin::new(cores, slice))
        }
    }

    /// Bumped on every change; end events carry it.
    #[inline]
    pub fn version(&self) -> u32 {
        match self {
            Self::Sharing(c) => c.version,
            Self::Slices(c) => c.version,
            Self::Queues(c) => c.version,
        }
    }

    /// `token` becomes runnable with `cost` ns of work; returns the next
    /// event (for the current version).
    #[inline]
    pub fn start(&mut self, token: u32, cost: u64, now: u64) -> Option<u64> {
        match self {
            Self::Sharing(c) => c.start(token, cost, now),
            Self::Slices(c) => c.start(token, cost, now),
            Self::Queues(c) => c.start(token, cost, now),
        }
    }

    /// [`Self::start`] for a runtime call ([`SlicedCores::start_call`]),
    /// whose thread has run `ran` ns since it last slept (counted with a
    /// lag: [`SlicedCores::start_lagged`]).
    #[inline]
    pub fn start_call(&mut self, token: u32, cost: u64, ran: u64, now: u64) -> Option<u64> {
        match self {
            Self::Sharing(c) if c.lag > 0 => c.start_lagged(token, cost, ran, now),
            Self::Sharing(c) => c.start_call(token, cost, now),
            Self::Slices(c) => c.start(token, cost, now),
            Self::Queues(c) => c.start(token, cost, now),
        }
    }

    /// An event of `version`: every phase whose work is done goes into
    /// `done`; returns the next event, or `None` if stale or idle.
    #[inline]
    pub fn finish(&mut self, version: u32, now: u64, done: &mut Vec<u32>) -> Option<u64> {
        match self {
            Self::Sharing(c) => c.finish(version, now, done),
            Self::Slices(c) => c.finish(version, now, done),
            Self::Queues(c) => c.finish(version, now, done),
        }
    }

    /// A core stops ([`SlicedCores::stop`]; processor sharing only, as the
    /// scenario's validation requires).
    pub fn stop(&mut self, now: u64, hit: f64, pick: f64) -> (Option<Frozen>, Option<u64>) {
        match self {
            Self::Sharing(c) => c.stop(now, hit, pick),
            _ => unreachable!("host.stop_ms needs processor sharing"),
        }
    }

    /// A stop ends ([`SlicedCores::resume`]).
    pub fn resume(&mut self, frozen: Option<Frozen>, now: u64) -> Option<u64> {
        match self {
            Self::Sharing(c) => c.resume(frozen, now),
            _ => unreachable!("host.stop_ms needs processor sharing"),
        }
    }

    /// Core-nanoseconds of work done so far, up to the last change.
    pub fn busy(&self) -> u64 {
        match self {
            Self::Sharing(c) => c.busy(),
            Self::Slices(c) => c.busy(),
            Self::Queues(c) => c.busy(),
        }
    }
}

/// One GPU. Its overlapping jobs are served as [`GpuQueue`] says: under
/// processor sharing (each of k jobs at `eta(k)/k` of its solo speed), or one
/// after another in the order they started (the first at `eta[0]`, the rest
/// waiting; time left over when one ends goes to the next).
#[derive(Debug)]
pub struct Gpu {
    /// (request, remaining solo work in ns), in the order they started.
    jobs: Vec<(u32, f64)>,
    updated: u64,
    /// Bumped on every change; completions carry it.
    pub version: u32,
    busy: u64,
    /// Batches running elsewhere that hold the GPU ([`Gpu::hold`]).
    held: u32,
    queue: GpuQueue,
}

impl Gpu {
    /// An idle GPU under processor sharing.
    pub fn new() -> Self {
        Self::with_queue(GpuQueue::Share)
    }

    /// An idle GPU serving overlapping jobs as `queue` says.
    pub fn with_queue(queue: GpuQueue) -> Self {
        Self {
            jobs: Vec::with_capacity(8),
            updated: 0,
            version: 0,
            busy: 0,
            held: 0,
            queue,
        }
    }

    /// A batch whose work runs elsewhere (on time-sliced cores) holds the
    /// GPU: it counts as busy until [`Gpu::unhold`].
    pub fn hold(&mut self, now: u64, eta: &[f64]) {
        self.advance(now, eta);
        self.held += 1;
    }

    /// A batch that held the GPU leaves it.
    pub fn unhold(&mut self, now: u64, eta: &[f64]) {
        self.advance(now, eta);
        self.held -= 1;
    }

    fn rate(eta: &[f64], k: usize) -> f64 {
        eta[(k - 1).min(eta.len() - 1)] / k as f64
    }

    /// Jobs on the GPU.
    pub fn running(&self) -> usize {
        self.jobs.len()
    }

    /// Time with at least one job, up to `now`.
    pub fn busy(&self, now: u64) -> u64 {
        self.busy
            + if self.jobs.is_empty() && self.held == 0 {
                0
            } else {
                now - self.updated
            }
    }

    fn advance(&mut self, now: u64, eta: &[f64]) {
        let elapsed = now - self.updated;
        if self.held > 0 && self.jobs.is_empty() {
            self.busy += elapsed;
        } else if !self.jobs.is_empty() && elapsed > 0 {
            self.busy += elapsed;
            if self.queue == GpuQueue::Fifo {
                // The work of the elapsed time, to the jobs in order.
                let mut left = elapsed as f64 * eta[0];
                for (_, rem) in &mut self.jobs {
                    if left <= 0.0 {
                        break;
                    }
                    let take = left.min(rem.max(0.0));
                    *rem -= take;
                    left -= take;
                }
            } else {
                let done = elapsed as f64 * Self::rate(eta, self.jobs.len());
                for (_, rem) in &mut self.jobs {
                    *rem -= done;
                }
            }
        }
        self.updated = now;
    }

    /// When the next job finishes, given the current set.
    fn next_completion(&self, now: u64, eta: &[f64]) -> Option<u64> {
        if self.queue == GpuQueue::Fifo {
            let first = self.jobs.first()?.1;
            return Some(now + (first.max(0.0) / eta[0]).ceil() as u64);
        }
        let min = self.jobs.iter().map(|j| j.1).fold(f64::INFINITY, f64::min);
        (min.is_finite())
            .then(|| now + (min.max(0.0) / Self::rate(eta, self.jobs.len())).ceil() as u64)
    }

    /// Starts `req` with `work` ns of solo work; returns the new next
    /// completion time (for the current `version`).
    pub fn start(&mut self, req: u32, work: u64, now: u64, eta: &[f64]) -> Option<u64> {
        self.advance(now, eta);
        self.jobs.push((req, work as f64));
        self.version = self.version.wrapping_add(1);
        self.next_completion(now, eta)
    }

    /// Handles a completion event of `version`: moves every finished job into
    /// `done` and returns the next completion time, or `None` if stale/idle.
    pub fn finish(
        &mut self,
        version: u32,
        now: u64,
        eta: &[f64],
        done: &mut Vec<u32>,
    ) -> Option<u64> {
        if version != self.version {
            return None;
        }
        self.advance(now, eta);
        // Sub-nanosecond leftovers are rounding, not work.
        self.jobs.retain(|&(req, rem)| {
            let finished = rem <= 0.5;
            if finished {
                done.push(req);
            }
            !finished
        });
        self.version = self.version.wrapping_add(1);
        self.next_completion(now, eta)
    }
}

impl Default for Gpu {
    fn default() -> Self {
        Self::new()
    }
}

/// Runs `phases` (`(token, cost, start)`, by start) on `cores`; returns
/// `(token, end)` in order of ending, and checks that every phase's work is
/// done once.
#[cfg(test)]
pub(crate) fn play(cores: &mut TimeShared, phases: &[(u32, u64, u64)]) -> Vec<(u32, u64)> {
    let ran: Vec<_> = phases.iter().map(|&(t, c, at)| (t, c, at, 0)).collect();
    play_ran(cores, &ran)
}

/// [`play`] for `(token, cost, start, ran)` phases started as runtime calls
/// whose threads have run `ran` ns since they last slept
/// ([`TimeShared::start_call`]; without a lag or a stretch, as [`play`]).
#[cfg(test)]
pub(crate) fn play_ran(cores: &mut TimeShared, phases: &[(u32, u64, u64, u64)]) -> Vec<(u32, u64)> {
    let mut pending: Vec<_> = phases.iter().rev().copied().collect();
    let (mut next, mut got, mut done) = (None::<u64>, Vec::new(), Vec::new());
    while !pending.is_empty() || next.is_some() {
        let arrival = pending.last().map(|p| p.2);
        match (arrival, next) {
            (Some(a), n) if n.is_none_or(|n| a <= n) => {
                let (token, cost, at, ran) = pending.pop().unwrap();
                next = cores.start_call(token, cost, ran, at);
            }
            (_, Some(t)) => {
                next = cores.finish(cores.version(), t, &mut done);
                got.extend(done.drain(..).map(|token| (token, t)));
            }
            _ => unreachable!(),
        }
    }
    let work: u64 = phases.iter().map(|p| p.1).sum();
    assert_eq!(
        cores.busy(),
        work,
        "every phase's work is done once: {phases:?}"
    );
    got
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopped_core_holds_its_phase_and_the_other_core_runs_on() {
        // Two 10 ms phases on 2 cores; at 2 ms a core stops until 7 ms and
        // holds the first: the second ends at 10 ms, the first has 8 ms left
        // at 7 ms and ends at 15 ms.
        let ms = 1_000_000;
        let mut c = SlicedCores::new(2);
        c.start(1, 10 * ms, 0);
        assert_eq!(c.start(2, 10 * ms, 0), Some(10 * ms));
        let (frozen, next) = c.stop(2 * ms, 0.0, 0.0);
        let frozen = frozen.expect("two phases on two cores: the stopped one ran one");
        assert_eq!((frozen.left.round() as u64, frozen.call), (8 * ms, false));
        assert_eq!(next, Some(10 * ms));
        let held = frozen.token;
        let mut done = Vec::new();
        assert_eq!(c.resume(Some(frozen), 7 * ms), Some(10 * ms));
        let v = c.version;
        assert_eq!(c.finish(v, 10 * ms, &mut done), Some(15 * ms));
        assert_eq!(done, [3 - held]);
        let v = c.version;
        assert_eq!(c.finish(v, 15 * ms, &mut done), None);
        assert_eq!(done, [3 - held, held]);
    }

    #[test]
    fn a_stop_misses_a_phase_with_a_core_to_spare_by_its_share() {
        // One phase on 2 cores: a stop holds it only when `hit` < 1/2; the
        // other time the phase runs on, and the stop costs it nothing.
        let ms = 1_000_000;
        let mut c = SlicedCores::new(2);
        c.start(1, 10 * ms, 0);
        assert_eq!(c.stop(ms, 0.7, 0.0), (None, Some(10 * ms)));
        assert_eq!(c.resume(None, 3 * ms), Some(10 * ms));
        let (frozen, next) = c.stop(4 * ms, 0.3, 0.9);
        assert_eq!(frozen.map(|f| f.token), Some(1));
        assert_eq!(next, None);
        assert_eq!(c.resume(frozen, 6 * ms), Some(12 * ms));
    }

    #[test]
    fn with_every_core_stopped_nothing_runs_until_one_is_back() {
        // Three phases of 6 ms on 2 cores (each at 2/3); both cores stop at
        // 3 ms (each holding a phase), and the third waits too: they are back
        // at 5 and 9 ms.
        let ms = 1_000_000;
        let mut c = SlicedCores::new(2);
        for t in 1..=3 {
            c.start(t, 6 * ms, 0);
        }
        let (a, _) = c.stop(3 * ms, 0.0, 0.0);
        let (b, next) = c.stop(3 * ms, 0.0, 0.0);
        assert!(a.is_some() && b.is_some());
        assert_eq!(next, None);
        // A stop with no core left to stop changes nothing.
        assert_eq!(c.stop(4 * ms, 0.0, 0.0), (None, None));
        // One core back at 5 ms with the first stop's phase: it and the
        // third (4 ms left each) share it, to end at 13 ms; at 9 ms the
        // second's is back too (4 ms left, the others 2): three on two cores
        // at 2/3, the first two end at 12 ms.
        assert_eq!(c.resume(a, 5 * ms), Some(13 * ms));
        assert_eq!(c.resume(b, 9 * ms), Some(12 * ms));
        // Work done by 9 ms: 3 x 2 ms before the stops, nothing while both
        // cores were stopped, one core's 4 ms after.
        assert!(
            (c.busy() as f64 - 10.0 * ms as f64).abs() < 2.0,
            "{}",
            c.busy()
        );
    }

    #[test]
    fn overlapping_jobs_share_the_gpu() {
        // Two 50 ms jobs together: both end at 100 ms with eta = 1.
        let eta = [1.0];
        let mut g = Gpu::new();
        g.start(1, 50, 0, &eta);
        let t = g.start(2, 50, 0, &eta).unwrap();
        assert_eq!(t, 100);
        let mut done = Vec::new();
        assert_eq!(g.finish(g.version, t, &eta, &mut done), None);
        assert_eq!(done, [1, 2]);
        assert_eq!(g.busy(t), 100);
    }

    #[test]
    fn a_fifo_gpu_runs_overlapping_jobs_one_after_another() {
        let mut g = Gpu::with_queue(GpuQueue::Fifo);
        let eta = [1.0];
        let mut done = Vec::new();
        assert_eq!(g.start(1, 50, 0, &eta), Some(50));
        // The second job waits: the first still ends at 50, the second at 50 + 30.
        assert_eq!(g.start(2, 30, 10, &eta), Some(50));
        let v = g.version;
        assert_eq!(g.finish(v, 50, &eta, &mut done), Some(80));
        assert_eq!(done, [1]);
        let v = g.version;
        assert_eq!(g.finish(v, 80, &eta, &mut done), None);
        assert_eq!(done, [1, 2]);
        assert_eq!(g.busy(80), 80);
    }

    #[test]
    fn a_fifo_gpu_gives_time_left_over_to_the_next_job() {
        // Two jobs started together; the GPU is looked at only after both
        // would have ended: the first's 20 and the second's 30 are done in turn.
        let mut g = Gpu::with_queue(GpuQueue::Fifo);
        let eta = [1.0];
        g.start(1, 20, 0, &eta);
        g.start(2, 30, 0, &eta);
        let mut done = Vec::new();
        let v = g.version;
        assert_eq!(g.finish(v, 50, &eta, &mut done), None);
        assert_eq!(done, [1, 2]);
    }

    #[test]
    fn eta_speeds_overlap_and_stale_completions_are_ignored() {
        // eta(2) = 1.5: each of two jobs at 0.75 speed.
        let eta = [1.0, 1.5];
        let mut g = Gpu::new();
        let first = g.start(1, 30, 0, &eta).unwrap();
        assert_eq!(first, 30);
        let stale = g.version;
        let t = g.start(2, 60, 10, &eta).unwrap();
        // Job 1 has 20 left at 0.75/ns: ends at 10 + 26.67 -> 37.
        assert_eq!(t, 37);
        let mut done = Vec::new();
        assert_eq!(g.finish(stale.wrapping_sub(1), 30, &eta, &mut done), None);
        let next = g.finish(g.version, t, &eta, &mut done).unwrap();
        assert_eq!(done, [1]);
        // Job 2 did 27·0.75 = 20.25, 39.75 left alone.
        assert_eq!(next, 37 + 40);
    }

    /// Each case: cores, phases `(token, cost, start)`, then the order and
    /// times at which they end under processor sharing.
    #[test]
    fn sliced_cores_share_every_runnable_phase() {
        /// `(token, cost, start)` of each phase; `(token, end)` expected.
        type Case<'a> = (usize, &'a [(u32, u64, u64)], &'a [(u32, u64)]);
        let cases: &[Case] = &[
            // One core, two phases at once: 10 and 30 -> both at half speed
            // until 20, then the long one alone: 20 + 20 = 40.
            (1, &[(1, 10, 0), (2, 30, 0)], &[(1, 20), (2, 40)]),
            // Two cores, two phases: each has a core.
            (2, &[(1, 10, 0), (2, 30, 0)], &[(1, 10), (2, 30)]),
            // Two cores, three phases from 0: 2/3 speed until the 10 ends at
            // 15, then full speed: 20 and 30 have 10 and 20 left -> 25, 35.
            (
                2,
                &[(1, 10, 0), (2, 20, 0), (3, 30, 0)],
                &[(1, 15), (2, 25), (3, 35)],
            ),
            // A short phase arriving during a long one on one core is slowed,
            // not queued: 100 alone for 50, then both at half speed.
            (1, &[(1, 100, 0), (2, 10, 50)], &[(2, 70), (1, 110)]),
        ];
        for &(cores, phases, want) in cases {
            let got = play(
                &mut TimeShared::new(cores, 0, Vec::new(), StretchRule::Factor),
                phases,
            );
            assert_eq!(got, want, "cores {cores}, phases {phases:?}");
        }
    }

    /// `(token, cost, start, call)` phases on `cores` cores whose calls
    /// stretch by `stretch` (as a share when `weighted`): `(token, end)` in
    /// order of ending.
    fn play_calls(
        cores: usize,
        stretch: &[f64],
        weighted: bool,
        phases: &[(u32, u64, u64, bool)],
    ) -> Vec<(u32, u64)> {
        let rule = if weighted {
            StretchRule::Weighted
        } else {
            StretchRule::Factor
        };
        let pool = SlicedCores::stretched(cores, stretch.to_vec(), rule);
        play_mixed(&mut TimeShared::Sharing(pool), phases)
    }

    /// Runs `(token, cost, start, call)` phases, by start, on `pool`: `call`
    /// phases start as runtime calls (a thread that ran nothing before), the
    /// others as any other phase; `(token, end)` in order of ending.
    fn play_mixed(pool: &mut TimeShared, phases: &[(u32, u64, u64, bool)]) -> Vec<(u32, u64)> {
        let mut pending: Vec<_> = phases.iter().rev().copied().collect();
        let (mut next, mut got, mut done) = (None::<u64>, Vec::new(), Vec::new());
        while !pending.is_empty() || next.is_some() {
            let arrival = pending.last().map(|p| p.2);
            match (arrival, next) {
                (Some(a), n) if n.is_none_or(|n| a <= n) => {
                    let (token, cost, at, call) = pending.pop().unwrap();
                    next = if call {
                        pool.start_call(token, cost, 0, at)
                    } else {
                        pool.start(token, cost, at)
                    };
                }
                (_, Some(t)) => {
                    next = pool.finish(pool.version(), t, &mut done);
                    got.extend(done.drain(..).map(|token| (token, t)));
                }
                _ => unreachable!(),
            }
        }
        got
    }

    /// (cores, stretch table, `(token, cost, start, call)` phases, the
    /// `(token, end)` expected in order of ending).
    type Case<'a> = (
        usize,
        &'a [f64],
        &'a [(u32, u64, u64, bool)],
        &'a [(u32, u64)],
    );

    fn check_calls(cases: &[Case], weighted: bool) {
        for &(cores, stretch, phases, want) in cases {
            let got = play_calls(cores, stretch, weighted, phases);
            assert_eq!(
                got, want,
                "cores {cores}, stretch {stretch:?}, weighted {weighted}, phases {phases:?}"
            );
        }
    }

    #[test]
    fn a_weighted_stretch_is_a_share_of_cores_that_waste_nothing() {
        let cases: &[Case] = &[
            // Two calls alone on two cores (n = C, not outnumbered):
            // stretched as without the key, 1/1.5 -> 150.
            (
                2,
                &[1.0, 1.5],
                &[(1, 100, 0, true), (2, 100, 0, true)],
                &[(1, 150), (2, 150)],
            ),
            // One core, two calls alone: the cores outnumbered, so a share
            // of one core that loses nothing, 1/2 each.
            (
                1,
                &[1.0, 1.5],
                &[(1, 100, 0, true), (2, 100, 0, true)],
                &[(1, 200), (2, 200)],
            ),
            // Two calls and two phases on two cores: the phases at
            // 2 / (2 + 2/1.5) = 0.6, the calls at 0.4: both cores busy
            // throughout, nothing lost. The phases end at 166.7 (167 whole
            // ns); the calls, a core each now (n = C), stretch by 1.5 for
            // their last 33.2 -> 217.
            (
                2,
                &[1.0, 1.5],
                &[
                    (1, 100, 0, true),
                    (2, 100, 0, true),
                    (3, 100, 0, false),
                    (4, 100, 0, false),
                ],
                &[(3, 167), (4, 167), (1, 217), (2, 217)],
            ),
            // One phase and two calls on two cores: 2 / (1 + 2/1.5) = 0.857
            // for the phase, 0.571 for each call; the phase ends at 116.7
            // (117 whole ns), then the calls stretch by 1.5 on a core each
            // for their last 33.2 -> 167.
            (
                2,
                &[1.0, 1.5],
                &[(1, 100, 0, true), (2, 100, 0, true), (3, 100, 0, false)],
                &[(3, 117), (1, 167), (2, 167)],
            ),
            // Three calls and a phase on three cores: 3 / (1 + 3/2) would
            // put the phase above one core, so it gets one and the calls
            // share the other two, 2/3 each; once it ends (100) the three
            // calls have a core each, n = C, and stretch by 2: their last
            // 33.3 at 1/2 -> 167.
            (
                3,
                &[1.0, 2.0],
                &[
                    (1, 100, 0, true),
                    (2, 100, 0, true),
                    (3, 100, 0, true),
                    (4, 100, 0, false),
                ],
                &[(4, 100), (1, 167), (2, 167), (3, 167)],
            ),
        ];
        check_calls(cases, true);
    }

    #[test]
    fn calls_stretch_by_how_many_run_at_once() {
        let cases: &[Case] = &[
            // One call alone: its cost.
            (2, &[1.0, 1.5], &[(1, 100, 0, true)], &[(1, 100)]),
            // Two calls on two cores: each at 1 / 1.5 -> 150.
            (
                2,
                &[1.0, 1.5],
                &[(1, 100, 0, true), (2, 100, 0, true)],
                &[(1, 150), (2, 150)],
            ),
            // A call beside a CPU phase: one call, no stretch; the phase is
            // never stretched.
            (
                2,
                &[1.0, 1.5],
                &[(1, 100, 0, true), (2, 100, 0, false)],
                &[(2, 100), (1, 100)],
            ),
            // One core, two calls: 1/2 of a core over 1.5 -> 300 each.
            (
                1,
                &[1.0, 1.5],
                &[(1, 100, 0, true), (2, 100, 0, true)],
                &[(1, 300), (2, 300)],
            ),
            // Three calls, the table's last value repeating: 2 cores / 3 at
            // 1 / 1.5 -> 4/9 of a core until the short one ends at 112.5
            // (113 whole ns), then two at 1/1.5 each.
            (
                2,
                &[1.0, 1.5],
                &[(1, 50, 0, true), (2, 100, 0, true), (3, 100, 0, true)],
                &[(1, 113), (2, 188), (3, 188)],
            ),
            // Without a table a call is a phase like any other.
            (
                2,
                &[],
                &[(1, 100, 0, true), (2, 100, 0, true)],
                &[(1, 100), (2, 100)],
            ),
        ];
        check_calls(cases, false);
    }

    #[test]
    fn a_capped_stretch_adds_only_what_sharing_does_not_already_give() {
        let play = |phases: &[(u32, u64, u64, bool)]| {
            let pool = SlicedCores::stretched(2, vec![1.0, 1.5], StretchRule::Capped);
            play_mixed(&mut TimeShared::Sharing(pool), phases)
        };
        // Two calls on two cores, a core each: the cap is the factor, 150.
        assert_eq!(
            play(&[(1, 100, 0, true), (2, 100, 0, true)]),
            [(1, 150), (2, 150)]
        );
        // Three calls alone: the cap is their own sharing, 2/3 of a core,
        // over 1.5: 4/9 each, the factor. The short one ends at 112.5, then
        // two at 1/1.5 each.
        assert_eq!(
            play(&[(1, 50, 0, true), (2, 100, 0, true), (3, 100, 0, true)]),
            [(1, 113), (2, 188), (3, 188)]
        );
        // Two calls beside two other phases: sharing gives every phase 1/2
        // of a core, under the cap of 1/1.5, so the calls run as processor
        // sharing does, not at 1/3 (the factor's product of the two).
        assert_eq!(
            play(&[
                (1, 100, 0, true),
                (2, 100, 0, true),
                (3, 100, 0, false),
                (4, 100, 0, false)
            ]),
            [(3, 200), (4, 200), (1, 200), (2, 200)]
        );
    }

    #[test]
    fn sliced_cores_ignore_stale_ends() {
        let mut pool = SlicedCores::new(1);
        pool.start(1, 10, 0);
        let stale = pool.version;
        pool.start(2, 10, 5);
        let mut done = Vec::new();
        assert_eq!(pool.finish(stale, 10, &mut done), None);
        assert!(done.is_empty());
    }

    #[test]
    fn cpu_pool_is_first_come_first_served() {
        let mut cpu = CpuPool::new(1);
        assert_eq!(cpu.request('a', 5), Some('a'));
        assert_eq!(cpu.request('b', 7), None);
        assert_eq!(cpu.request('c', 9), None);
        assert_eq!(cpu.release(), Some(('b', 7)));
        assert_eq!(cpu.release(), Some(('c', 9)));
        assert_eq!(cpu.release(), None);
        assert_eq!(cpu.busy(), 21);
    }

    /// `(token, cost, start, ran)` phases on `cores` cores with a lag of
    /// `lag` ns, each thread having run `ran` since it last slept:
    /// `(token, end)` in order of ending. Checks every phase's work is done
    /// once.
    fn play_lagged(cores: usize, lag: u64, phases: &[(u32, u64, u64, u64)]) -> Vec<(u32, u64)> {
        play_ran(
            &mut TimeShared::Sharing(SlicedCores::lagged(cores, lag)),
            phases,
        )
    }

    #[test]
    fn a_thread_that_woke_runs_ahead_of_one_that_ran_on() {
        type Case<'a> = (usize, u64, &'a [(u32, u64, u64, u64)], &'a [(u32, u64)]);
        let cases: &[Case] = &[
            // One core, lag 10: 1 (30 ns, fresh) runs 10 fresh, then stale;
            // 2 (5 ns) wakes at 12 and takes the core whole (12-17); 1 has
            // 18 left and ends at 35. Processor sharing would end 2 at 22.
            (1, 10, &[(1, 30, 0, 0), (2, 5, 12, 0)], &[(2, 17), (1, 35)]),
            // A call whose thread ran its lag is all stale: 2 (fresh, 4)
            // runs first, 1 (6 ns) after it.
            (1, 10, &[(1, 6, 0, 10), (2, 4, 0, 0)], &[(2, 4), (1, 10)]),
            // Part run: 1 ran 7 of 10, so 3 of its 6 are fresh and share
            // with 2 (4 fresh) at 1/2: 1's fresh part ends at 6, 2 has 1
            // left, alone fresh, ends at 7; 1's stale 3 end at 10.
            (1, 10, &[(1, 6, 0, 7), (2, 4, 0, 0)], &[(2, 7), (1, 10)]),
            // Two cores: two fresh phases take both; the stale one gets
            // nothing until one ends (10), then a core: 10 + 20 = 30.
            (
                2,
                10,
                &[(1, 10, 0, 0), (2, 20, 0, 0), (3, 20, 0, 10)],
                &[(1, 10), (2, 20), (3, 30)],
            ),
            // A core to spare: the stale phase runs at once, at full speed.
            (2, 10, &[(1, 40, 0, 10), (2, 5, 0, 0)], &[(2, 5), (1, 40)]),
        ];
        for &(cores, lag, phases, want) in cases {
            let got = play_lagged(cores, lag, phases);
            assert_eq!(got, want, "cores {cores}, lag {lag}, phases {phases:?}");
        }
    }

    #[test]
    fn without_a_lag_every_phase_shares_alike() {
        // The first case above under processor sharing: 2 ends at 22.
        let got = play(
            &mut TimeShared::new(1, 0, Vec::new(), StretchRule::Factor),
            &[(1, 30, 0), (2, 5, 12)],
        );
        assert_eq!(got, [(2, 22), (1, 35)]);
    }

    /// [`play_mixed`] on cores whose calls split their share by `lag`
    /// (`lag_among_calls`), checking that every phase's work is done once.
    fn play_among_calls(
        cores: usize,
        lag: u64,
        phases: &[(u32, u64, u64, bool)],
    ) -> Vec<(u32, u64)> {
        let mut pool = TimeShared::Sharing(SlicedCores::lagged_among_calls(cores, lag));
        let got = play_mixed(&mut pool, phases);
        let work: u64 = phases.iter().map(|p| p.1).sum();
        assert_eq!(pool.busy(), work, "every phase's work is done once");
        got
    }

    #[test]
    fn among_calls_the_lag_splits_the_calls_share_only() {
        type Case<'a> = (usize, u64, &'a [(u32, u64, u64, bool)], &'a [(u32, u64)]);
        let cases: &[Case] = &[
            // One core, two calls: 1 (30 ns) is stale after 10; 2 (5 ns,
            // fresh) comes at 12 and takes the calls' whole share (12-17);
            // 1 has 18 left, ends at 35. Processor sharing: 2 at 22.
            (
                1,
                10,
                &[(1, 30, 0, true), (2, 5, 12, true)],
                &[(2, 17), (1, 35)],
            ),
            // One core, a call and another phase: never more calls than
            // cores, so processor sharing whatever the lag (2 ends at 22).
            (
                1,
                10,
                &[(1, 30, 0, true), (2, 5, 12, false)],
                &[(2, 22), (1, 35)],
            ),
            // Two cores, lag 3. Call 1 (23 ns) runs alone, stale from 3;
            // at 5 (18 left) come calls 2 and 3 (3 ns each, fresh) and
            // phase 4 (4 ns). n = 4, r = 1/2: phase 4 keeps 1/2; the three
            // calls split 3/2 cores, the fresh two first at 3/4 each (end
            // at 9), call 1 nothing. From 9 phase 4 (2 left) and call 1 run
            // a core each: 4 ends at 11, 1 at 27.
            (
                2,
                3,
                &[
                    (1, 23, 0, true),
                    (2, 3, 5, true),
                    (3, 3, 5, true),
                    (4, 4, 5, false),
                ],
                &[(2, 9), (3, 9), (4, 11), (1, 27)],
            ),
        ];
        for &(cores, lag, phases, want) in cases {
            let got = play_among_calls(cores, lag, phases);
            assert_eq!(got, want, "cores {cores}, lag {lag}, phases {phases:?}");
        }
    }

    #[test]
    fn among_calls_no_more_calls_than_cores_is_processor_sharing() {
        // Two cores, never more than two calls at once, other phases
        // between: the same ends as without a lag. Call 1 (20 ns) alone,
        // phase 4 (8) from 2, call 3 (10) and phase 2 (6) from 4: four at
        // 1/2 each until 4 and 2 end at 16, then a core each: 3 ends at 20,
        // 1 (call 1's fresh 4 long run) at 26.
        let phases = [
            (1, 20, 0, true),
            (4, 8, 2, false),
            (3, 10, 4, true),
            (2, 6, 4, false),
        ];
        let got = play_among_calls(2, 4, &phases);
        assert_eq!(got, [(2, 16), (4, 16), (3, 20), (1, 26)]);
        let plain: Vec<_> = phases.iter().map(|&(t, c, at, _)| (t, c, at)).collect();
        let want = play(
            &mut TimeShared::new(2, 0, Vec::new(), StretchRule::Factor),
            &plain,
        );
        assert_eq!(got, want);
    }

    #[test]
    fn a_removed_phase_takes_its_stale_work_along() {
        let mut pool = SlicedCores::lagged(1, 10);
        pool.start_lagged(1, 30, 0, 0);
        // At 4: 4 fresh done, 6 fresh and 20 stale left.
        let (left, next) = pool.remove(1, 4);
        assert_eq!((left, next), (26, None));
    }
}
