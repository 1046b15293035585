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
    /// Some model went inactive since the last [`Shares::settle`].
    unsettled: bool,
}

fn signed(ns: Nanos) -> i64 {
    i64::try_from(ns).unwrap_or(i64::MAX)
}

impl Shares {
    pub fn new(threshold: Nanos, cap: Nanos) -> Self {
        let cap = signed(cap);
        Self {
            slots: FxHashMap::default(),
            models: Vec::new(),
            threshold: signed(threshold).min(cap),
            cap,
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
    /// every active model `held / n`, debit `model` `held`, clamp.
    pub fn finished(&mut self, model: ModelId, held: Nanos) {
        let s = self.slot(model) as usize;
        let held = signed(held);
        let active = self.models.iter().filter(|m| m.active()).count().max(1);
        let part = held / active as i64;
        let cap = self.cap;
        for m in self.models.iter_mut().filter(|m| m.active()) {
            m.deficit = m.deficit.saturating_add(part).min(cap);
        }
        let m = &mut self.models[s];
        m.deficit = m.deficit.saturating_sub(held).max(-cap);
        m.running -= 1;
        self.unsettled |= !m.active();
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
            let mut s = Shares::new(3, 12);
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
        let mut s = Shares::new(3, 100);
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
}
