//! Time-shared cores with a run queue each, as Linux keeps them
//! (`host.run_queues`).
//!
//! [`crate::host::SlicedCores`] shares C cores among every runnable phase
//! (each at `min(1, C/n)` of a core): a phase is never on a busier core than
//! another. Linux instead keeps a run queue per core and shares each core
//! among the threads queued on it, so with three threads on two cores one
//! runs alone and two share a core, until a core goes idle and pulls work.
//!
//! **Rule.** Each core shares itself among the phases placed on it
//! (processor sharing on one core: each of k at `1/k`).
//! - **Placement.** A phase that becomes runnable goes to an idle core if
//!   there is one (the lowest-numbered), else to a core drawn uniformly at
//!   random (seeded): a woken thread lands on its previous or its waker's
//!   core, which the model does not track.
//! - **Idle pull.** When a core's last phase ends and another core holds two
//!   or more, the core that holds the most (lowest-numbered on a tie) gives
//!   its most recently placed phase, with the work it has left, to the idle
//!   core (Linux's new-idle balance).
//! - No other migration: two busy cores keep their queues however uneven
//!   (Linux's periodic balance, tens of ms apart when the cores are busy, is
//!   not modelled).
//!
//! Same interface as [`crate::host::TimeShared`]'s processor sharing: every
//! change bumps `version`, and only an end event carrying the current
//! version is acted on.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::host::SlicedCores;

/// Cores with a run queue each (module docs).
#[derive(Debug)]
pub struct RunQueues {
    cores: Vec<SlicedCores>,
    /// Per core, its phases in the order they were placed.
    placed: Vec<Vec<u32>>,
    /// Per core, its next end (for that core's own version).
    next: Vec<Option<u64>>,
    rng: Pcg64Mcg,
    /// Bumped on every change; end events carry it.
    pub version: u32,
}

impl RunQueues {
    /// `cores` idle cores; placement draws from `seed`.
    pub fn new(cores: usize, seed: u64) -> Self {
        Self {
            cores: (0..cores).map(|_| SlicedCores::new(1)).collect(),
            placed: vec![Vec::new(); cores],
            next: vec![None; cores],
            rng: Pcg64Mcg::seed_from_u64(seed),
            version: 0,
        }
    }

    /// The core a phase becoming runnable now goes to.
    fn place(&mut self) -> usize {
        match self.placed.iter().position(Vec::is_empty) {
            Some(idle) => idle,
            None => self.rng.random_range(0..self.cores.len()),
        }
    }

    fn earliest(&self) -> Option<u64> {
        self.next.iter().flatten().copied().min()
    }

    /// `token` becomes runnable with `cost` ns of work; returns the earliest
    /// end (for the current `version`).
    pub fn start(&mut self, token: u32, cost: u64, now: u64) -> Option<u64> {
        let c = self.place();
        self.put(c, token, cost, now);
        self.version = self.version.wrapping_add(1);
        self.earliest()
    }

    fn put(&mut self, c: usize, token: u32, cost: u64, now: u64) {
        self.next[c] = self.cores[c].start(token, cost, now);
        self.placed[c].push(token);
    }

    /// An end event of `version`: every phase whose work is done goes into
    /// `done`, idle cores pull work; returns the earliest end, or `None` if
    /// stale or idle.
    pub fn finish(&mut self, version: u32, now: u64, done: &mut Vec<u32>) -> Option<u64> {
        if version != self.version {
            return None;
        }
        for c in 0..self.cores.len() {
            if self.next[c].is_some_and(|t| t <= now) {
                let v = self.cores[c].version;
                let before = done.len();
                self.next[c] = self.cores[c].finish(v, now, done);
                let gone = &done[before..];
                self.placed[c].retain(|t| !gone.contains(t));
            }
        }
        self.pull(now);
        self.version = self.version.wrapping_add(1);
        self.earliest()
    }

    /// Idle cores take the most recently placed phase of the fullest core
    /// holding two or more.
    fn pull(&mut self, now: u64) {
        while let Some(idle) = self.placed.iter().position(Vec::is_empty) {
            let Some(from) = (0..self.cores.len())
                .filter(|&c| self.placed[c].len() >= 2)
                .max_by_key(|&c| (self.placed[c].len(), std::cmp::Reverse(c)))
            else {
                return;
            };
            let token = self.placed[from].pop().expect("two or more");
            let (left, next) = self.cores[from].remove(token, now);
            self.next[from] = next;
            self.put(idle, token, left, now);
        }
    }

    /// Core-nanoseconds of work done so far.
    pub fn busy(&self) -> u64 {
        self.cores.iter().map(SlicedCores::busy).sum()
    }

    /// Phases on each core.
    #[cfg(test)]
    fn queued(&self) -> Vec<usize> {
        self.placed.iter().map(Vec::len).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{play, TimeShared};

    const MS: u64 = 1_000_000;

    /// Plays `phases` (token, cost, start) on two cores with run queues,
    /// placement seeded with `seed` ([`crate::host::play`], which also checks
    /// that every phase's work is done once); returns each token's end, by
    /// token, and the queues.
    fn run(seed: u64, phases: &[(u32, u64, u64)]) -> (Vec<(u32, u64)>, RunQueues) {
        let mut cores = TimeShared::Queues(RunQueues::new(2, seed));
        let mut ends = play(&mut cores, phases);
        ends.sort();
        let TimeShared::Queues(q) = cores else {
            unreachable!()
        };
        (ends, q)
    }

    fn end(ends: &[(u32, u64)], token: u32) -> u64 {
        ends.iter().find(|e| e.0 == token).unwrap().1
    }

    #[test]
    fn two_phases_on_two_cores_run_alone() {
        let (ends, _) = run(1, &[(1, 4 * MS, 0), (2, 4 * MS, 0)]);
        assert_eq!(ends, [(1, 4 * MS), (2, 4 * MS)]);
    }

    #[test]
    fn a_third_phase_shares_one_core_not_both() {
        // Processor sharing over both cores would give each of three 2/3 of
        // a core; here two share one core and one runs alone.
        let (ends, _) = run(7, &[(1, 6 * MS, 0), (2, 6 * MS, 0), (3, 2 * MS, 0)]);
        // Phase 3 shares a core at 1/2: it ends at 4 ms (6 ms alone-shared
        // at 2/3 would end at 3 ms).
        assert_eq!(end(&ends, 3), 4 * MS);
        // Its partner got 2 ms of work by then and has 4 left; the other
        // runs alone and ends at 6 ms; the partner finishes alone at 8 ms.
        let mut rest = [end(&ends, 1), end(&ends, 2)];
        rest.sort();
        assert_eq!(rest, [6 * MS, 8 * MS]);
    }

    #[test]
    fn an_idle_core_pulls_work_from_a_shared_one() {
        // Phases 1 (10 ms) and 2 (2 ms) take the two idle cores; phase 3
        // (10 ms) lands on either at random.
        let mut shared_with = [0; 2];
        for seed in 1..=16 {
            let (ends, q) = run(seed, &[(1, 10 * MS, 0), (2, 2 * MS, 0), (3, 10 * MS, 0)]);
            let end = |t| end(&ends, t);
            if end(2) == 2 * MS {
                // Beside phase 1: when phase 2's core empties at 2 ms it
                // pulls phase 3 (1 ms done, 9 left), and both end at 11 ms
                // (without the pull they would share a core until 20 ms).
                shared_with[0] += 1;
                assert_eq!((end(1), end(3)), (11 * MS, 11 * MS), "seed {seed}");
            } else {
                // Beside phase 2: no core empties, nothing moves.
                shared_with[1] += 1;
                assert_eq!((end(2), end(1), end(3)), (4 * MS, 10 * MS, 12 * MS));
            }
            assert_eq!(q.queued(), [0, 0]);
        }
        assert!(shared_with.iter().all(|&n| n > 0), "{shared_with:?}");
    }

    #[test]
    fn a_stale_event_is_ignored() {
        let mut q = RunQueues::new(2, 1);
        let v = q.version;
        q.start(1, MS, 0);
        let mut done = Vec::new();
        assert_eq!(q.finish(v, MS, &mut done), None);
        assert!(done.is_empty());
    }
}
