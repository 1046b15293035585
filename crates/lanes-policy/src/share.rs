//! Per-model shares of device time: the deficit counters of the `fair` policy.
//!
//! A model is *active* while it has a job queued or running. Device time is
//! charged when a job completes, by its measured run time `h` (the time it held
//! its slot): every active model — the finishing one included — is credited an
//! equal part `h / n` (`n` active models), and the finishing model is debited
//! `h`. So a model's *deficit* is the device time it was entitled to (an equal
//! split of all device time delivered while it was active) minus what it got:
//! positive when it is owed, negative when it ran ahead of its share. The
//! deficits of the active models always sum to zero before clamping.
//!
//! - A model's deficit is kept within `[-cap, cap]`, so a long burst is
//!   remembered only up to `cap` (this bounds how long a model stays behind).
//! - A model that is inactive when the scheduler next dispatches forgets its
//!   deficit (it returns at 0): idle time is neither banked nor held against
//!   it. Checking at the dispatch, not at the instant the last job leaves,
//!   lets a driver withdraw and resubmit a model's job (as `lanes serve` does
//!   when its next batch changes) without the model looking idle.
//! - A model whose deficit is below `-threshold` is *ahead of its share*; the
//!   policy then lets it yield (see [`crate::policy`]).
//!
//! - With `usage` (`fair:usage=MS`), shares follow use instead of being
//!   equal. Each model keeps `used`, the device time it received; at every
//!   completion of `h` (of any model) every `used` and every deficit first
//!   decays by `exp(−h/usage)`, then the active models are credited
//!   `h · w / Σ w` (over the active models) with `w = used + mean(used)/10`
//!   (the mean over every model seen, so a new model has a share too;
//!   before any device time was delivered, shares are equal), the finishing
//!   model is debited `h`, and `h` is added to its `used`. Both are averages
//!   over about the last `usage` of delivered device time: a deficit is then
//!   the recent excess over the model's own recent part, which a burst makes
//!   negative and steady use keeps near zero (without the decay a deficit
//!   would keep whatever it gathered while the weights settled). `used`
//!   survives idle time: it is the model's usual demand.
//!
//! Models are few (a host serves a handful to a few dozen), so a completion
//! updates every active model's counter directly: O(models), no clock needed.

use rustc_hash::FxHashMap;

use crate::{ModelId, Nanos};

#[derive(Debug, Clone, Default)]
struct Share {
    queued: u32,
    running: u32,
    /// Entitled minus received device time, ns.
    deficit: i64,
    /// (`usage`) device time received, exponentially decayed, ns.
    used: f64,
}

impl Share {
    fn active(&self) -> bool {
        self.queued > 0 || self.running > 0
    }
}

/// Deficit counters for every model seen, indexed by a dense slot.
#[derive(Debug)]
pub(crate) struct Shares {
    slots: FxHashMap<ModelId, u32>,
    models: Vec<Share>,
    threshold: i64,
    cap: i64,
    /// (`usage`) the decay's time constant in delivered device time, ns;
    /// None: equal shares.
    usage: Option<f64>,
    /// Some model went inactive since the last [`Shares::settle`].
    unsettled: bool,
}

/// (`usage`) the part of the models' mean recent device time that every
/// model's weight has on top of its own, so that a new or rarely seen model
/// is still credited.
const FLOOR_PART: f64 = 0.1;

fn signed(ns: Nanos) -> i64 {
    i64::try_from(ns).unwrap_or(i64::MAX)
}

impl Shares {
    /// Equal shares (`usage` None) or shares that follow each model's use
    /// over about `usage` of delivered device time.
    pub fn new(threshold: Nanos, cap: Nanos, usage: Option<Nanos>) -> Self {
        let cap = signed(cap);
        Self {
            slots: FxHashMap::default(),
            models: Vec::new(),
            threshold: signed(threshold).min(cap),
            cap,
            usage: usage.map(|ns| ns.max(1) as f64),
            unsettled: false,
        }
    }

    /// The dense slot of `model`, created on first sight.
    pub fn slot(&mut self, model: ModelId) -> u32 {
        if let Some(&s) = self.slots.get(&model) {
            return s;
        }
        let s = self.models.len() as u32;
        self.models.push(Share::default());
        self.slots.insert(model, s);
        s
    }

    fn get(&mut self, model: ModelId) -> &mut Share {
        let s = self.slot(model) as usize;
        &mut self.models[s]
    }

    /// Whether the model in `slot` has run more than the threshold ahead of
    /// its share.
    pub fn ahead(&self, slot: u32) -> bool {
        self.models[slot as usize].deficit < -self.threshold
    }

    /// The deficit of `model` in ns (0 for a model never seen).
    pub fn deficit(&self, model: ModelId) -> i64 {
        self.slots
            .get(&model)
            .map_or(0, |&s| self.models[s as usize].deficit)
    }

    pub fn queued(&mut self, model: ModelId) {
        self.get(model).queued += 1;
    }

    /// A queued job left without running (dropped or cancelled).
    pub fn unqueued(&mut self, model: ModelId) {
        let m = self.get(model);
        m.queued -= 1;
        self.unsettled |= !m.active();
    }

    /// A queued job started on a device.
    pub fn started(&mut self, model: ModelId) {
        let m = self.get(model);
        m.queued -= 1;
        m.running += 1;
    }

    /// Models with nothing queued or running forget their deficit. Called at
    /// each dispatch, before the counters are read.
    pub fn settle(&mut self) {
        if std::mem::take(&mut self.unsettled) {
            for m in self.models.iter_mut().filter(|m| !m.active()) {
                m.deficit = 0;
            }
        }
    }

    /// A job of `model` finished after holding its slot for `held`: credit
    /// every active model its part of `held` (`held / n`, or by weight with
    /// `usage`), debit `model` `held`, clamp.
    pub fn finished(&mut self, model: ModelId, held: Nanos) {
        let s = self.slot(model) as usize;
        let cap = self.cap;
        let h = signed(held);
        if let Some(tau) = self.usage {
            let keep = (-(held as f64) / tau).exp();
            for m in &mut self.models {
                m.used *= keep;
                m.deficit = (m.deficit as f64 * keep) as i64;
            }
        }
        match self.usage.and_then(|_| self.weights()) {
            None => {
                let active = self.models.iter().filter(|m| m.active()).count().max(1);
                let part = h / active as i64;
                for m in self.models.iter_mut().filter(|m| m.active()) {
                    m.deficit = m.deficit.saturating_add(part).min(cap);
                }
            }
            Some((total, floor)) => {
                for m in self.models.iter_mut().filter(|m| m.active()) {
                    let part = (h as f64 * (m.used + floor) / total) as i64;
                    m.deficit = m.deficit.saturating_add(part).min(cap);
                }
            }
        }
        if self.usage.is_some() {
            self.models[s].used += held as f64;
        }
        let m = &mut self.models[s];
        m.deficit = m.deficit.saturating_sub(h).max(-cap);
        m.running -= 1;
        self.unsettled |= !m.active();
    }

    /// (`usage`) [`FLOOR_PART`] of the mean `used` over every model seen:
    /// the part of a weight every model has.
    fn floor(&self) -> f64 {
        let n = self.models.len().max(1) as f64;
        self.models.iter().map(|m| m.used).sum::<f64>() / n * FLOOR_PART
    }

    /// (`usage`) the sum of the active models' weights and the floor each
    /// weight includes, None while no device time was delivered (then
    /// shares are equal).
    fn weights(&self) -> Option<(f64, f64)> {
        let floor = self.floor();
        let total: f64 = self
            .models
            .iter()
            .filter(|m| m.active())
            .map(|m| m.used + floor)
            .sum();
        (total > 0.0).then_some((total, floor))
    }

    /// (`usage`) the device time `model` received, decayed, ns (0 for a
    /// model never seen).
    #[cfg(test)]
    pub fn used(&self, model: ModelId) -> f64 {
        self.slots
            .get(&model)
            .map_or(0.0, |&s| self.models[s as usize].used)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs one job of `model` for `held`: queue, start, finish.
    fn run(s: &mut Shares, model: ModelId, held: Nanos) {
        s.queued(model);
        s.started(model);
        s.finished(model, held);
    }

    #[test]
    fn completions_move_deficits_by_equal_parts() {
        // (model completing, held) steps; then the expected deficits of 0, 1, 2.
        // Models 0 and 1 each have a job queued throughout; model 2 none.
        type Steps = &'static [(ModelId, Nanos)];
        let cases: [(Steps, [i64; 3]); 4] = [
            (&[], [0, 0, 0]),
            // Model 0 ran 10 while 0 and 1 were active: 0 got 10, was owed 5.
            (&[(0, 10)], [-5, 5, 0]),
            (&[(0, 10), (1, 4)], [-3, 3, 0]),
            // Clamped at cap = 12.
            (&[(0, 10), (0, 10), (0, 10)], [-12, 12, 0]),
        ];
        for (steps, expect) in cases {
            let mut s = Shares::new(3, 12, None);
            for m in [0, 1] {
                s.queued(m);
            }
            s.slot(2);
            for &(m, held) in steps {
                run(&mut s, m, held);
                s.settle();
            }
            let got = [s.deficit(0), s.deficit(1), s.deficit(2)];
            assert_eq!(got, expect, "{steps:?}");
        }
    }

    #[test]
    fn ahead_is_past_the_threshold_and_an_idle_model_forgets() {
        let mut s = Shares::new(3, 100, None);
        let (a, b) = (s.slot(0), s.slot(1));
        s.queued(0);
        s.queued(1);
        run(&mut s, 0, 6); // 0 and 1 active: -3, exactly the threshold
        assert!(!s.ahead(a));
        run(&mut s, 0, 2); // -3 + 1 - 2 = -4: past it
        assert!(s.ahead(a) && !s.ahead(b));
        assert_eq!(s.deficit(1), 4);
        // Model 0's last job leaves and a new one comes before the next
        // dispatch (a driver resubmitting it): not idle, nothing forgotten.
        s.unqueued(0);
        s.queued(0);
        s.settle();
        assert!(s.ahead(a));
        // Idle at a dispatch: forgotten.
        s.unqueued(0);
        s.settle();
        assert_eq!(s.deficit(0), 0);
        assert!(!s.ahead(a));
        s.unqueued(1);
        assert_eq!(s.deficit(1), 4, "kept until the next dispatch");
        s.settle();
        assert_eq!(s.deficit(1), 0);
    }

    /// Two models, both always active; `pattern` is the order of their
    /// completions (each holding 10 ms), repeated `rounds` times; returns
    /// the shares with `usage` = 1 s and the largest lead model 0 took.
    fn follow(pattern: &[ModelId], rounds: usize, threshold_ms: u64) -> (Shares, i64) {
        let ms = 1_000_000;
        let mut s = Shares::new(threshold_ms * ms, 500 * ms, Some(1_000 * ms));
        s.queued(0);
        s.queued(1);
        let mut lead = 0;
        for _ in 0..rounds {
            for &m in pattern {
                s.queued(m);
                s.started(m);
                s.finished(m, 10 * ms);
                lead = lead.min(s.deficit(0));
            }
        }
        (s, lead)
    }

    #[test]
    fn with_usage_a_steady_heavy_model_is_not_ahead_and_a_burst_is() {
        let ms = 1_000_000_i64;
        // Model 0 takes 3 of every 4 completions for 200 rounds (8 s of
        // device time, 8 usage time constants): its share follows, so its
        // deficit stays within a few completions of zero.
        let steady = [0, 0, 0, 1];
        let (mut s, _) = follow(&steady, 200, 20);
        let d0 = s.deficit(0);
        assert!(d0.abs() < 30 * ms, "steady deficit {d0}");
        let u = (s.used(0), s.used(1));
        assert!((u.0 / (u.0 + u.1) - 0.75).abs() < 0.03, "{u:?}");
        // The same pattern under equal shares: model 0 is ahead by the cap.
        let mut eq = Shares::new(20 * ms as u64, 500 * ms as u64, None);
        let a = eq.slot(0);
        eq.queued(0);
        eq.queued(1);
        for _ in 0..200 {
            for &m in &steady {
                eq.queued(m);
                eq.started(m);
                eq.finished(m, 10 * ms as u64);
            }
        }
        assert!(eq.ahead(a), "equal shares: {}", eq.deficit(0));
        assert!(
            eq.deficit(0) <= -490 * ms,
            "near the cap: {}",
            eq.deficit(0)
        );
        // A burst: model 0 then takes 20 completions in a row, 200 ms more
        // than its usual 150: past a 20 ms threshold.
        let a = s.slot(0);
        for _ in 0..20 {
            s.queued(0);
            s.started(0);
            s.finished(0, 10 * ms as u64);
        }
        assert!(s.ahead(a), "deficit after the burst {}", s.deficit(0));
    }

    #[test]
    fn with_usage_equal_use_is_equal_shares_and_a_new_model_has_a_part() {
        let ms = 1_000_000_i64;
        // Alternating completions: the same deficits as equal shares.
        let (s, lead) = follow(&[0, 1], 100, 20);
        assert!(lead > -10 * ms, "lead {lead}");
        assert!(s.deficit(0).abs() <= 5 * ms && s.deficit(1).abs() <= 5 * ms);
        // Before any device time, shares are equal (the first completion
        // splits its 10 ms into 5 and 5).
        let mut f = Shares::new(0, 100 * ms as u64, Some(1_000 * ms as u64));
        f.queued(0);
        f.queued(1);
        f.queued(0);
        f.started(0);
        f.finished(0, 10 * ms as u64);
        assert_eq!((f.deficit(0), f.deficit(1)), (-5 * ms, 5 * ms));
        // Model 2 appears after model 0 took everything: credited its floor
        // (a tenth of the mean use), not nothing.
        f.queued(2);
        f.queued(0);
        f.started(0);
        f.finished(0, 10 * ms as u64);
        assert!(f.deficit(2) > 0, "{}", f.deficit(2));
    }
}
