//! The host's CPU side: phases on the core pool, the interpreter lock and
//! background load.
//!
//! A CPU phase is a token: a request's index (its pre or post), or a batch's
//! slot with [`BATCH_PY_TOKEN`] (its Python work, `host.interpreter.batch_ms`)
//! or [`BATCH_TOKEN`] (its runtime call holding a core, `host.shared_cores`),
//! or [`BUSY_TOKEN`] (a background slice, `host.busy_cores`).
//!
//! **Rule.** A request's pre or post and a batch's Python work
//! ([`holds_lock`]; not a runtime call nor a background slice) first wait
//! for their thread to wake (nothing held): `handoff` ns, or with
//! `host.handoff_dist = "exponential"` a draw with that mean; a request's
//! pre (post) with `host.pre_wake_ms` (`host.post_wake_ms`) a draw of that
//! measured distribution instead — and with `host.pre_wake_busy_ms`
//! (`host.post_wake_busy_ms`), when n runtime calls run on the cores, a draw
//! of that with probability `min(1, n / cpu_cores)` (the cores busy: the
//! woken thread waits for one); with `host.wake_spell_ms` the draw's
//! quantile level comes from [`crate::wake_spell::WakeSpell`] (the waits in
//! spells), the table chosen as without it. With an interpreter
//! lock they then ask for the lock (FCFS, a pool of one); every phase then
//! asks for a core (FCFS, `cpu_cores`; with `host.time_slicing` it runs at
//! once on the time-sliced cores, [`crate::host::TimeShared`]). A phase
//! holds lock and core for its cost and releases both at its end. A lock released to
//! a waiting phase stays idle `convoy` ns (that thread waking) before the
//! phase asks for its core. Other phases only queue for a core. Background
//! slices of [`crate::config::BUSY_SLICE_MS`] arrive every `busy_period` ns
//! while requests remain to arrive or are in flight.

use super::event::Ev;
use super::request::Phase;
use super::Sim;
use crate::host::{CpuPool, TimeShared};
use crate::workload::Quantiles;
use lanes_policy::round_nanos;
use rand::Rng;
use rand_pcg::Pcg64Mcg;

/// CPU-pool tokens with this bit are batches waiting for a core
/// (`host.shared_cores`); the rest are requests' CPU phases.
pub(super) const BATCH_TOKEN: u32 = 1 << 31;
/// Tokens with this bit are a batch's Python work (`host.interpreter.batch_ms`).
pub(super) const BATCH_PY_TOKEN: u32 = 1 << 30;
/// The token of a background slice (`host.busy_cores`).
const BUSY_TOKEN: u32 = 1 << 29;

/// Whether a CPU phase holds the interpreter lock (when there is one): a
/// request's pre or post and a batch's Python work do; a batch's runtime call
/// and a background slice do not.
fn holds_lock(token: u32) -> bool {
    token & (BATCH_TOKEN | BUSY_TOKEN) == 0
}

/// A wake-up's wait from `table`: at the spell's quantile `level` when there
/// is one (`host.wake_spell_ms`), else a draw from `rng`.
fn wait(table: &Quantiles, level: Option<f64>, rng: &mut Pcg64Mcg) -> u64 {
    level.map_or_else(|| table.sample(rng), |u| round_nanos(table.at(u)))
}

impl Sim<'_> {
    pub(super) fn begin_cpu(&mut self, r: u32, phase: Phase) {
        let q = &mut self.reqs[r as usize];
        q.phase = phase;
        let cost = if phase == Phase::Pre { q.pre } else { q.post };
        let (measured, busy) = match phase {
            Phase::Pre => (self.pre_wake.as_ref(), self.pre_wake_busy.as_ref()),
            Phase::Post => (self.post_wake.as_ref(), self.post_wake_busy.as_ref()),
        };
        if let Some(table) = measured {
            // with spells the level comes from the spell process, the table
            // chosen as without it (module docs of crate::wake_spell)
            let level = self.wake_spell.as_mut().map(|s| s.level(self.now));
            let mut wake = wait(table, level, &mut self.wake_rng);
            if let Some(busy) = busy.filter(|_| self.calls_on > 0) {
                let p = self.calls_on as f64 / self.sc.host.cpu_cores as f64;
                if self.wake_busy_rng.random::<f64>() < p {
                    wake = wait(busy, level, &mut self.wake_busy_rng);
                }
            }
            self.at(self.now + wake, Ev::Woken(r));
            return;
        }
        self.cpu_phase(r, cost);
    }

    /// A CPU phase (`token`) of `cost` ns begins: if it is a request's phase
    /// or holds the interpreter lock ([`holds_lock`]) its thread wakes up
    /// first (`handoff`, nothing held); then it asks for the lock if it holds
    /// one, and for a core.
    pub(super) fn cpu_phase(&mut self, token: u32, cost: u64) {
        if self.handoff > 0 && holds_lock(token) {
            let wake = self.wake.sample(&mut self.wake_rng);
            self.at(self.now + wake, Ev::Woken(token));
            return;
        }
        self.awake(token, cost);
    }

    /// A phase's thread woke up (`Ev::Woken`).
    pub(super) fn woken(&mut self, token: u32) {
        self.awake(token, self.phase_cost(token));
    }

    fn awake(&mut self, token: u32, cost: u64) {
        if self.lock.is_some() && holds_lock(token) {
            self.ask_lock(token, cost);
        } else {
            self.take_core(token, cost);
        }
    }

    /// `token` asks for the lock: a free lock is taken at once; a held one
    /// is waited for, and then handed over ([`Self::handed_lock`]).
    #[inline]
    pub(super) fn ask_lock(&mut self, token: u32, cost: u64) {
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

    /// `token` asks for a core: first come, first served, or with
    /// `host.time_slicing` it runs at once on the time-sliced cores. With
    /// `host.speed_cv` its cost is first scaled by the host's speed factor
    /// now ([`crate::speed::HostSpeed`]; with `host.speed_cv_busy` a new
    /// epoch's factor is drawn by the cores' utilisation, read off
    /// [`Self::cpu_busy`]).
    #[inline]
    pub(super) fn take_core(&mut self, token: u32, cost: u64) {
        // The cores' accounted time: a field read, needed only by a new
        // epoch's draw under `host.speed_cv_busy`.
        let busy = self.cpu_busy();
        let cost = match self.speed.as_mut() {
            Some(speed) => speed.scale(cost, self.now, busy),
            None => cost,
        };
        if let Some(cores) = self.sliced.as_mut() {
            let next = if token & BATCH_TOKEN != 0 {
                let ran = self.batches[(token & !BATCH_TOKEN) as usize].ran;
                cores.start_call(token, cost, ran, self.now)
            } else {
                cores.start(token, cost, self.now)
            };
            if let Some(t) = next {
                let v = cores.version();
                self.at(t, Ev::Cores(v));
            }
            return;
        }
        if self.cpu.request(token, cost).is_some() {
            self.on_core(token, cost);
        }
    }

    /// The time-sliced cores' end event (stale unless `version` is
    /// current): each phase whose work is done ends — a batch's runtime
    /// call ([`BATCH_TOKEN`]) as its device's completion, any other as a CPU
    /// phase.
    pub(super) fn on_cores_done(&mut self, version: u32) {
        let cores = self.sliced.as_mut().expect("only with time slicing");
        let mut done = std::mem::take(&mut self.done);
        if let Some(t) = cores.finish(version, self.now, &mut done) {
            let v = cores.version();
            self.at(t, Ev::Cores(v));
        }
        for &token in &done {
            if token & BATCH_TOKEN != 0 {
                self.batch_off_cores(token & !BATCH_TOKEN);
            } else {
                self.on_cpu_done(token);
            }
        }
        done.clear();
        self.done = done;
    }

    /// Core-nanoseconds of CPU work so far (phases and, with shared cores,
    /// batches).
    pub(super) fn cpu_busy(&self) -> u64 {
        self.sliced
            .as_ref()
            .map_or(self.cpu.busy(), TimeShared::busy)
    }

    /// The cost of the lock-holding phase `token`, ns.
    #[inline]
    pub(super) fn phase_cost(&self, token: u32) -> u64 {
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

    #[inline]
    pub(super) fn on_cpu_done(&mut self, token: u32) {
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
            self.device_hold(token & !BATCH_PY_TOKEN);
            return;
        }
        match self.reqs[token as usize].phase {
            Phase::Pre => self.request_gpu(token),
            Phase::Post => self.finish(token),
        }
    }

    /// A background slice (`host.busy_cores`) queues for a core; the next is
    /// due one period later while requests remain to arrive or are in flight.
    #[inline]
    pub(super) fn on_busy(&mut self) {
        if !self.work_remains() {
            return;
        }
        self.cpu_phase(BUSY_TOKEN, self.busy_slice);
        self.at(self.now + self.busy_period, Ev::Busy);
    }

    /// Requests remain to arrive or are in flight: the host's background
    /// processes (slices, stops) go on only while this holds.
    #[inline]
    pub(super) fn work_remains(&self) -> bool {
        self.generated < self.total || self.reqs.len() > self.free.len()
    }

    /// A core of the CPU pool is free: the next waiting phase or batch takes
    /// it (nothing to do when the cores are time-sliced).
    pub(super) fn release_core(&mut self) {
        if self.sliced.is_some() {
            return;
        }
        if let Some((next, cost)) = self.cpu.release() {
            self.on_core(next, cost);
        }
    }
}
