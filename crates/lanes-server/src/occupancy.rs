//! Device occupancy: the jobs each device runs now, and the time accounts
//! the metrics read (`python/lanes/serving/occupancy.py`'s rule).
//!
//! The driver task calls [`Occupancy::begin`] when it starts a batch on a
//! device, [`Occupancy::end`] when it handles the batch's completion, and
//! [`Occupancy::mark_waiting`] at each of its decision points. From those,
//! per device:
//!
//! - *busy* time: time with at least one job on the device;
//! - *overlap* time: time with more than one job on it (only `independent`
//!   and `limit:K` run more than one);
//! - *idle while waiting* time: the intervals opened and closed by
//!   [`Occupancy::mark_waiting`] (the rule that decides them is in
//!   [`crate::observe`]);
//! - *jobs*: batches completed, failed ones included.
//!
//! All updates come from the driver task, with the time passed in. A scrape
//! reads with [`DeviceAccount::read`] from any thread: each account is one
//! [`Tally`] behind its own lock (held for a copy), so a reader never sees
//! half an update. A read extends the open intervals to the reader's clock
//! and never reports less than it reported before (an update stamped slightly
//! before a concurrent read would otherwise make a counter step back).

use std::sync::{Arc, Mutex, PoisonError};

use lanes_policy::Nanos;

/// One device's accounts, closed at `at`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub at: Nanos,
    pub running: u32,
    pub jobs: u64,
    pub busy: Nanos,
    pub overlap: Nanos,
    pub idle_wait: Nanos,
    /// When the open idle-while-waiting interval began.
    pub waiting_since: Option<Nanos>,
}

impl Tally {
    /// The accounts carried to `now` (busy and overlap grow by the time
    /// since `at` while one, or two, jobs run; `at` never goes back).
    fn advanced(self, now: Nanos) -> Self {
        let dt = now.saturating_sub(self.at);
        Self {
            at: self.at.max(now),
            busy: self.busy + if self.running >= 1 { dt } else { 0 },
            overlap: self.overlap + if self.running >= 2 { dt } else { 0 },
            ..self
        }
    }

    /// A job started at `now`.
    pub fn begin(&mut self, now: Nanos) {
        *self = self.advanced(now);
        self.running += 1;
    }

    /// A job ended at `now`.
    pub fn end(&mut self, now: Nanos) {
        *self = self.advanced(now);
        self.running = self.running.saturating_sub(1);
        self.jobs += 1;
    }

    /// The device is (`on`) or is no longer idle while work waits, from `now`.
    pub fn waiting(&mut self, now: Nanos, on: bool) {
        match (on, self.waiting_since) {
            (true, None) => self.waiting_since = Some(now),
            (false, Some(since)) => {
                self.idle_wait += now.saturating_sub(since);
                self.waiting_since = None;
            }
            _ => {}
        }
    }

    /// The totals with the open intervals extended to `now`.
    pub fn totals(&self, now: Nanos) -> Totals {
        let a = self.advanced(now);
        let open = self.waiting_since.map_or(0, |s| now.saturating_sub(s));
        Totals {
            jobs: a.jobs,
            busy: a.busy,
            overlap: a.overlap,
            idle_wait: a.idle_wait + open,
        }
    }
}

/// What a reader sees: nanoseconds and counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub jobs: u64,
    pub busy: Nanos,
    pub overlap: Nanos,
    pub idle_wait: Nanos,
}

impl Totals {
    fn max(self, other: Self) -> Self {
        Self {
            jobs: self.jobs.max(other.jobs),
            busy: self.busy.max(other.busy),
            overlap: self.overlap.max(other.overlap),
            idle_wait: self.idle_wait.max(other.idle_wait),
        }
    }
}

/// The accounts of one device, shared with the readers.
#[derive(Debug)]
pub struct DeviceAccount {
    pub name: String,
    /// The tally, and the highest totals a reader has seen.
    inner: Mutex<(Tally, Totals)>,
}

impl DeviceAccount {
    fn new(name: String) -> Self {
        Self {
            name,
            inner: Mutex::new((Tally::default(), Totals::default())),
        }
    }

    fn update(&self, f: impl FnOnce(&mut Tally)) {
        f(&mut self.inner.lock().unwrap_or_else(PoisonError::into_inner).0);
    }

    /// The accounts up to `now` (the driver's clock), never less than a
    /// previous read reported; safe from any thread.
    pub fn read(&self, now: Nanos) -> Totals {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let seen = inner.0.totals(now).max(inner.1);
        inner.1 = seen;
        seen
    }

    /// A copy of the tally as last updated.
    pub fn tally(&self) -> Tally {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).0
    }
}

/// Every device's account (the driver's side: it alone updates them).
#[derive(Debug)]
pub struct Occupancy {
    accounts: Arc<[DeviceAccount]>,
    /// Jobs on each device now (a copy kept here, read without a lock).
    running: Vec<u32>,
    /// Devices idle while work waits now.
    waiting: Vec<bool>,
}

impl Occupancy {
    /// Zeroed accounts for devices named `names`, in index order.
    pub fn new(names: Vec<String>) -> Self {
        let n = names.len();
        Self {
            accounts: names.into_iter().map(DeviceAccount::new).collect(),
            running: vec![0; n],
            waiting: vec![false; n],
        }
    }

    /// The accounts, for readers.
    pub fn accounts(&self) -> &Arc<[DeviceAccount]> {
        &self.accounts
    }

    /// Jobs on `device` now.
    pub fn running(&self, device: usize) -> u32 {
        self.running[device]
    }

    /// A job started on `device` at `now`.
    pub fn begin(&mut self, device: usize, now: Nanos) {
        self.running[device] += 1;
        self.accounts[device].update(|t| t.begin(now));
    }

    /// A job on `device` ended at `now`.
    pub fn end(&mut self, device: usize, now: Nanos) {
        self.running[device] = self.running[device].saturating_sub(1);
        self.accounts[device].update(|t| t.end(now));
    }

    /// Exactly the devices `waiting[d]` are idle while work waits from `now`
    /// on (the others stop being so).
    pub fn mark_waiting(&mut self, waiting: &[bool], now: Nanos) {
        for (d, (&on, was)) in waiting.iter().zip(&mut self.waiting).enumerate() {
            if on != *was {
                *was = on;
                self.accounts[d].update(|t| t.waiting(now, on));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step of a device's life: `B` begin, `E` end, `W` waiting on, `N` not waiting.
    #[derive(Debug, Clone, Copy)]
    enum Step {
        B(Nanos),
        E(Nanos),
        W(Nanos),
        N(Nanos),
    }
    use Step::*;

    #[test]
    fn accounts_follow_the_rule() {
        // steps on device 0, read at → (jobs, busy, overlap, idle while waiting)
        let table: [(&[Step], Nanos, Totals); 8] = [
            (&[], 10, totals(0, 0, 0, 0)),
            (&[B(0), E(10)], 20, totals(1, 10, 0, 0)),
            // an open job counts up to the read
            (&[B(5)], 12, totals(0, 7, 0, 0)),
            // two overlapping jobs: busy is their union, overlap their intersection
            (&[B(0), B(5), E(10), E(15)], 30, totals(2, 15, 5, 0)),
            // back to back: no overlap, no gap
            (&[B(0), E(10), B(10), E(20)], 20, totals(2, 20, 0, 0)),
            (&[W(2), N(5)], 9, totals(0, 0, 0, 3)),
            // an open wait counts up to the read; marking it twice changes nothing
            (&[W(2), W(4)], 9, totals(0, 0, 0, 7)),
            (&[W(0), N(1), W(3), N(6), B(6), E(8)], 9, totals(1, 2, 0, 4)),
        ];
        for (steps, at, expected) in table {
            let mut occ = Occupancy::new(vec!["sim:0".into()]);
            for step in steps {
                match *step {
                    B(t) => occ.begin(0, t),
                    E(t) => occ.end(0, t),
                    W(t) => occ.mark_waiting(&[true], t),
                    N(t) => occ.mark_waiting(&[false], t),
                }
            }
            assert_eq!(occ.accounts()[0].read(at), expected, "{steps:?}");
        }
    }

    fn totals(jobs: u64, busy: Nanos, overlap: Nanos, idle_wait: Nanos) -> Totals {
        Totals {
            jobs,
            busy,
            overlap,
            idle_wait,
        }
    }

    #[test]
    fn a_read_never_reports_less_than_before() {
        let mut occ = Occupancy::new(vec!["a".into()]);
        occ.begin(0, 0);
        assert_eq!(occ.accounts()[0].read(10).busy, 10);
        // A read at an earlier instant (a reader's clock read before the
        // driver's last update) does not step back.
        assert_eq!(occ.accounts()[0].read(4).busy, 10);
        occ.end(0, 12);
        assert_eq!(occ.accounts()[0].read(12), totals(1, 12, 0, 0));
    }

    #[test]
    fn devices_keep_their_own_accounts() {
        let mut occ = Occupancy::new(vec!["a".into(), "b".into()]);
        occ.begin(1, 0);
        occ.mark_waiting(&[true, false], 0);
        occ.mark_waiting(&[false, false], 4);
        assert_eq!((occ.running(0), occ.running(1)), (0, 1));
        assert_eq!(occ.accounts()[0].read(10), totals(0, 0, 0, 4));
        assert_eq!(occ.accounts()[1].read(10), totals(0, 10, 0, 0));
        assert_eq!(occ.accounts()[1].name, "b");
    }
}
