//! The fast lane's gate: when a short job may take an open fast slot.
//!
//! Without a gate (`lanes`, `fair:...,fast=MS` as they were) a short job takes
//! an open fast slot at once. It then runs alone, in a batch of one or two,
//! beside a long job: isolation, at the price of small batches (more device
//! time per request) taken from the middle of another model's burst. The gate
//! holds a short job back from the fast lane — it stays eligible for regular
//! slots as before — by two rules, each off by default:
//!
//! - **Hold** (`hold=MS`). A short job may take a fast slot only once it has
//!   waited at least `hold` (`now − arrival >= hold`; the arrival of a
//!   model's standing job is its oldest request's). Meanwhile its batch grows.
//! - **Budget** (`budget=MS`). A short job may take device d's fast slot only
//!   if waiting for d's regular slot would take it past its budget: the
//!   earliest estimated end of a job in d's regular slots (`started + cost`),
//!   or `now` once that estimate has passed, is at least `budget` after the
//!   short job's arrival. A job that would get the regular slot within its
//!   budget waits for it instead of slowing the long job; one whose long job
//!   overran its estimate is admitted once it has waited `budget`.
//! - **Burst** (`burst=MS`, qualifies `hold`). The hold applies only while
//!   some long job has been queued for at least `burst` (its arrival is at
//!   least `burst` before `now`): a long model is backlogged, a burst is on,
//!   and device time a short job saves by batching goes to that backlog.
//!   Otherwise a short job may take a fast slot at once (budget permitting).
//!
//! With both, a job needs both. Both are conditions on the job's arrival
//! (admitted on d at `now` iff `arrival <= cutoff(d)`), so with a gate the
//! fast lane serves **admitted short jobs oldest first** (arrival, then
//! submission order) instead of in aging order: the oldest short job of a
//! queue group is the one to test, and no admitted job is passed over.
//!
//! *Waking.* With the devices as they are, a job held back is admitted at
//! `arrival + hold` if the budget rule already lets it onto some device, else
//! at `arrival + max(hold, budget)` ([`FastGate::admitted_at`]);
//! [`crate::Scheduler::next_wake`] reports the earliest such instant so the
//! driver calls `dispatch` then. *Work conservation* holds for regular slots
//! as before; a fast slot may stay open while the gate holds every short job
//! back.

use crate::Nanos;

/// When a short job may take an open fast slot (module docs). The default
/// admits every short job at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FastGate {
    /// The least wait before a short job may take a fast slot (0: none).
    pub hold: Nanos,
    /// The wait a short job accepts for a regular slot before it takes the
    /// fast one; `None`: no budget rule.
    pub budget: Option<Nanos>,
    /// The hold applies only while a long job has been queued this long;
    /// `None`: always.
    pub burst: Option<Nanos>,
}

impl FastGate {
    /// Whether the gate admits every short job at once (no rule set).
    pub fn is_open(&self) -> bool {
        self.hold == 0 && self.budget.is_none()
    }

    /// The gate in force at `now`, given the earliest arrival of a queued
    /// long job (`oldest_long`): with `burst`, the hold is dropped unless
    /// that job has waited at least `burst`.
    pub fn at(&self, now: Nanos, oldest_long: Option<Nanos>) -> FastGate {
        let backlogged = match self.burst {
            None => true,
            Some(b) => oldest_long.is_some_and(|a| now.saturating_sub(a) >= b),
        };
        FastGate {
            hold: if backlogged { self.hold } else { 0 },
            ..*self
        }
    }

    /// Whether a short job that arrived at `arrival` may take, at `now`, the
    /// fast slot of a device whose regular slots' earliest estimated end is
    /// `regular_end`.
    pub fn admits(&self, arrival: Nanos, now: Nanos, regular_end: Nanos) -> bool {
        let waited = now.saturating_sub(arrival);
        let budget_ok = self
            .budget
            .is_none_or(|b| regular_end.max(now).saturating_sub(arrival) >= b);
        waited >= self.hold && budget_ok
    }

    /// The first instant from `now` on at which [`FastGate::admits`] holds
    /// for a job that arrived at `arrival`, with `regular_end` unchanged:
    /// the hold has passed and the budget rule holds (at once if the regular
    /// slot frees `budget` or more after the arrival, else from
    /// `arrival + budget`).
    pub fn admitted_at(&self, arrival: Nanos, now: Nanos, regular_end: Nanos) -> Nanos {
        let by_hold = arrival.saturating_add(self.hold);
        let by_budget = match self.budget {
            Some(b) if regular_end.saturating_sub(arrival) < b => arrival.saturating_add(b),
            _ => now,
        };
        by_hold.max(by_budget).max(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    #[test]
    fn admits_by_hold_and_budget() {
        // (hold ms, budget ms, arrival ms, now ms, regular end ms, admitted)
        type Case = (u64, Option<u64>, u64, u64, u64, bool);
        let cases: &[Case] = &[
            (0, None, 5, 5, 90, true),
            (3, None, 5, 7, 90, false),
            (3, None, 5, 8, 90, true),
            // The budget: would the regular slot free within 10 ms of arrival?
            (0, Some(10), 5, 5, 90, true),
            (0, Some(10), 5, 5, 14, false),
            (0, Some(10), 5, 5, 15, true),
            // The long job overran its estimate (ended by 14): admitted once
            // it has waited the budget.
            (0, Some(10), 5, 14, 14, false),
            (0, Some(10), 5, 15, 14, true),
            // Both rules: both must hold.
            (3, Some(10), 5, 5, 90, false),
            (3, Some(10), 5, 8, 90, true),
            (3, Some(10), 5, 8, 12, false),
            (3, Some(10), 5, 15, 12, true),
        ];
        for &(hold, budget, arrival, now, end, expect) in cases {
            let gate = FastGate {
                hold: hold * MS,
                budget: budget.map(|b| b * MS),
                burst: None,
            };
            assert_eq!(
                gate.admits(arrival * MS, now * MS, end * MS),
                expect,
                "{gate:?} arrival {arrival} now {now} end {end}"
            );
        }
    }

    #[test]
    fn held_back_jobs_are_admitted_at_their_instant_and_not_before() {
        // (hold ms, budget ms, regular end ms, admitted at ms) for a job that
        // arrived at 5 ms, asked at 6 ms.
        let cases: &[(u64, Option<u64>, u64, u64)] = &[
            (3, None, 90, 8),
            (0, Some(10), 90, 6),
            (0, Some(10), 12, 15),
            (3, Some(10), 90, 8),
            (3, Some(10), 12, 15),
            (12, Some(10), 12, 17),
            (0, None, 12, 6),
        ];
        for &(hold, budget, end, expect) in cases {
            let gate = FastGate {
                hold: hold * MS,
                budget: budget.map(|b| b * MS),
                burst: None,
            };
            let at = gate.admitted_at(5 * MS, 6 * MS, end * MS);
            assert_eq!(at, expect * MS, "{gate:?} end {end}");
            assert!(gate.admits(5 * MS, at, end * MS), "{gate:?} end {end}");
            if at > 6 * MS {
                assert!(!gate.admits(5 * MS, at - 1, end * MS), "{gate:?} end {end}");
            }
        }
        assert!(FastGate::default().is_open());
        assert!(!FastGate {
            budget: Some(0),
            ..FastGate::default()
        }
        .is_open());
    }

    #[test]
    fn burst_keeps_the_hold_only_while_a_long_job_is_backlogged() {
        // (burst ms, oldest queued long job's arrival ms, hold in force ms)
        // at 100 ms, with hold=6.
        let cases: &[(Option<u64>, Option<u64>, u64)] = &[
            (None, None, 6),
            (None, Some(99), 6),
            (Some(50), None, 0),
            (Some(50), Some(51), 0),
            (Some(50), Some(50), 6),
            (Some(50), Some(0), 6),
        ];
        for &(burst, oldest, expect) in cases {
            let gate = FastGate {
                hold: 6 * MS,
                budget: Some(10 * MS),
                burst: burst.map(|b| b * MS),
            };
            let now = gate.at(100 * MS, oldest.map(|a| a * MS));
            assert_eq!(now.hold, expect * MS, "{gate:?} oldest {oldest:?}");
            assert_eq!(now.budget, gate.budget);
        }
    }
}
