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

/// The device threads' runs since they last slept.
#[derive(Debug)]
pub(super) struct Runs {
    lag: u64,
    /// (ran by its last call's end, when that was), per thread.
    threads: Vec<(u64, u64)>,
}

impl Runs {
    /// `threads` device threads, each with a lag of `lag` ns.
    pub(super) fn new(threads: usize, lag: u64) -> Self {
        Self {
            lag,
            threads: vec![(0, 0); threads],
        }
    }

    /// What `thread` has run since it last slept, as a call starts on it at `now`.
    pub(super) fn ran(&self, thread: usize, now: u64) -> u64 {
        let (ran, at) = self.threads[thread];
        ran.saturating_sub(now.saturating_sub(at))
    }

    /// A call of `cost` ns that started with `ran` run ended on `thread` at `now`.
    pub(super) fn ended(&mut self, thread: usize, ran: u64, cost: u64, now: u64) {
        self.threads[thread] = ((ran + cost).min(self.lag), now);
    }
}

#[cfg(test)]
mod tests {
    use super::Runs;

    #[test]
    fn a_thread_runs_up_to_its_lag_and_drains_while_it_sleeps() {
        let mut runs = Runs::new(2, 1_000);
        assert_eq!(runs.ran(0, 50), 0, "a thread that never ran is fresh");
        runs.ended(0, 0, 400, 400);
        assert_eq!(
            runs.ran(0, 400),
            400,
            "back to back: what it ran carries over"
        );
        assert_eq!(runs.ran(0, 550), 250, "150 ns asleep drain 150");
        runs.ended(0, 400, 900, 1_300);
        assert_eq!(runs.ran(0, 1_300), 1_000, "capped at the lag");
        assert_eq!(runs.ran(0, 2_300), 0, "a lag's time asleep drains it all");
        assert_eq!(runs.ran(1, 1_300), 0, "threads are apart");
    }
}
