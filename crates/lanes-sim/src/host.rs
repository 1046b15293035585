//! The host's resources: a pool of CPU cores and GPUs that slow down when
//! jobs overlap.
//!
//! **CPU.** C cores serve CPU phases first come, first served; a phase holds
//! one core for its whole cost.
//!
//! **GPU contention.** With k jobs on one GPU, each progresses at `η(k)/k`
//! of its solo speed (processor sharing). With the default `η(k) = 1` two 50 ms
//! jobs started together each finish after 100 ms, as measured in the field.
//! A GPU recomputes the remaining work of its jobs whenever one starts or ends
//! and schedules its next completion; a completion computed before the last
//! change is stale and ignored (the GPU's `version` tells).

use std::collections::VecDeque;

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

/// One GPU under processor sharing.
#[derive(Debug)]
pub struct Gpu {
    /// (request, remaining solo work in ns).
    jobs: Vec<(u32, f64)>,
    updated: u64,
    /// Bumped on every change; completions carry it.
    pub version: u32,
    busy: u64,
}

impl Gpu {
    /// An idle GPU.
    pub fn new() -> Self {
        Self {
            jobs: Vec::with_capacity(8),
            updated: 0,
            version: 0,
            busy: 0,
        }
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
            + if self.jobs.is_empty() {
                0
            } else {
                now - self.updated
            }
    }

    fn advance(&mut self, now: u64, eta: &[f64]) {
        let elapsed = now - self.updated;
        if !self.jobs.is_empty() && elapsed > 0 {
            self.busy += elapsed;
            let done = elapsed as f64 * Self::rate(eta, self.jobs.len());
            for (_, rem) in &mut self.jobs {
                *rem -= done;
            }
        }
        self.updated = now;
    }

    /// When the next job finishes, given the current set.
    fn next_completion(&self, now: u64, eta: &[f64]) -> Option<u64> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
