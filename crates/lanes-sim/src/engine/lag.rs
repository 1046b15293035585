//! What each device thread has run since it last slept (`host.lag_ms`): the
//! part of a runtime call that is stale on the lagged cores
//! ([`crate::host::SlicedCores::start_lagged`]).
//!
//! **Rule.** A runtime call's thread is its device's executor; under
//! `independent`, its model's executor on that device. What the thread has
//! run grows by each call's cost, up to the lag, and drains by the time the
//! thread sleeps between calls (one ns per ns, as Linux's EEVDF lets a
//! sleeping thread's negative lag run off): a call that starts `gap` ns
//! after its thread's last call ended, when the thread had run `ran` by
//! then, starts with `ran - gap` run (at least 0).

use crate::config::Mode;

/// The device threads' runs since they last slept.
#[derive(Debug)]
pub(super) struct Runs {
    lag: u64,
    /// The models under `independent` (a thread per model per device), else
    /// 0 (one thread per device).
    models: usize,
    /// (ran by its last call's end, when that was), per thread.
    threads: Vec<(u64, u64)>,
}

impl Runs {
    /// The device threads of `devices` devices serving `models` models under
    /// `mode`, each with a lag of `lag` ns.
    pub(super) fn new(mode: Mode, devices: usize, models: usize, lag: u64) -> Self {
        let models = if mode == Mode::Independent { models } else { 0 };
        Self {
            lag,
            models,
            threads: vec![(0, 0); devices * models.max(1)],
        }
    }

    /// The thread that runs `model`'s calls on `device`.
    fn thread(&self, device: usize, model: usize) -> usize {
        if self.models == 0 {
            device
        } else {
            device * self.models + model
        }
    }

    /// What the thread of `model` on `device` has run since it last slept,
    /// as a call starts on it at `now`.
    pub(super) fn ran(&self, device: usize, model: usize, now: u64) -> u64 {
        let (ran, at) = self.threads[self.thread(device, model)];
        ran.saturating_sub(now.saturating_sub(at))
    }

    /// A call of `cost` ns that started with `ran` run ended on the thread of
    /// `model` on `device` at `now`.
    pub(super) fn ended(&mut self, device: usize, model: usize, ran: u64, cost: u64, now: u64) {
        let thread = self.thread(device, model);
        self.threads[thread] = ((ran + cost).min(self.lag), now);
    }
}

#[cfg(test)]
mod tests {
    use super::Runs;
    use crate::config::Mode;

    #[test]
    fn a_thread_runs_up_to_its_lag_and_drains_while_it_sleeps() {
        let mut runs = Runs::new(Mode::Independent, 1, 2, 1_000);
        assert_eq!(runs.ran(0, 0, 50), 0, "a thread that never ran is fresh");
        runs.ended(0, 0, 0, 400, 400);
        assert_eq!(
            runs.ran(0, 0, 400),
            400,
            "back to back: what it ran carries over"
        );
        assert_eq!(runs.ran(0, 0, 550), 250, "150 ns asleep drain 150");
        runs.ended(0, 0, 400, 900, 1_300);
        assert_eq!(runs.ran(0, 0, 1_300), 1_000, "capped at the lag");
        assert_eq!(
            runs.ran(0, 0, 2_300),
            0,
            "a lag's time asleep drains it all"
        );
        assert_eq!(runs.ran(0, 1, 1_300), 0, "threads are apart");
    }

    #[test]
    fn a_shared_engine_has_one_thread_per_device() {
        let mut runs = Runs::new("fifo".parse().unwrap(), 2, 3, 1_000);
        runs.ended(1, 0, 0, 400, 400);
        assert_eq!(
            runs.ran(1, 2, 400),
            400,
            "every model's calls on one thread"
        );
        assert_eq!(runs.ran(0, 0, 400), 0, "devices are apart");
    }
}
