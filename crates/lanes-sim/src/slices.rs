//! Cores handed out in slices (`host.slice_ms`): time sharing at the grain
//! an operating system shares at, instead of processor sharing.
//!
//! Linux (EEVDF) does not share a core among runnable threads at every
//! instant. bench/calibrate/slices.py measured it on this host: two threads
//! that both run on alternate in slices of about 4 ms (one tick); a thread
//! that sleeps between short bursts, woken onto a busy core, runs at once
//! (it is owed time); one that works 5 ms per wake-up mostly runs at once
//! but now and then waits up to a slice. So short phases beside long ones
//! run at full speed, and the long ones absorb their work — where processor
//! sharing slows both alike.

use std::collections::VecDeque;

/// One phase on a core.
#[derive(Debug, Clone, Copy)]
struct Run {
    token: u32,
    /// When its work is done if it keeps the core.
    end: u64,
    /// When it got the core; its slices end every `slice` from here.
    since: u64,
    /// Its work was longer than a slice when it became runnable.
    long: bool,
}

/// C cores shared as Linux shares them: short phases at once, long ones in
/// slices of `slice` ns.
///
/// **Rule.** A phase is *short* if its work is at most one slice, else
/// *long* (a thread that sleeps between short bursts is owed time and runs
/// when it wakes; one that runs on keeps only its fair share — the
/// scheduler's lag, approximated by the phase's length). A phase that
/// becomes runnable takes an idle core at once. With every core busy a
/// short phase preempts the phase on one of them, the cores taken in turn
/// (where a woken thread lands is no choice of its own), and the preempted
/// phase goes to the front of its queue (short or long); a long phase joins
/// the back of the long queue. A long phase keeps its core until its work is done or, while a
/// long phase waits, until its slice ends (slices are counted from when it
/// got the core, renewed while nobody waits); then it goes to the back of
/// the long queue and the queue's head takes the core. A freed core goes to
/// the short queue's head, else the long queue's. Only the earliest end or
/// slice boundary is scheduled; every change bumps `version`, and an event
/// carrying an older version is stale and ignored. O(C) per start or event.
#[derive(Debug)]
pub struct RoundRobin {
    cores: usize,
    slice: u64,
    running: Vec<Run>,
    /// (token, work left) of waiting phases, short and long.
    short: VecDeque<(u32, u64)>,
    long: VecDeque<(u32, u64)>,
    /// The core a short phase preempts next (cycling over the cores).
    victim: usize,
    /// Bumped on every change; events carry it.
    pub version: u32,
    busy: u64,
    updated: u64,
}

impl RoundRobin {
    /// `cores` idle cores handing out slices of `slice` ns (at least 1).
    pub fn new(cores: usize, slice: u64) -> Self {
        Self {
            cores,
            slice: slice.max(1),
            running: Vec::with_capacity(cores),
            short: VecDeque::new(),
            long: VecDeque::new(),
            victim: 0,
            version: 0,
            busy: 0,
            updated: 0,
        }
    }

    fn advance(&mut self, now: u64) {
        self.busy += self.running.len() as u64 * (now - self.updated);
        self.updated = now;
    }

    /// The first slice boundary of `run` after `now` (or at it, if `now`
    /// is past `since`).
    fn boundary(&self, run: &Run, now: u64) -> u64 {
        let k = (now - run.since).div_ceil(self.slice).max(1);
        run.since + k * self.slice
    }

    /// The next event: the earliest end, or with a long phase waiting the
    /// earliest end or long phase's slice boundary.
    fn next(&self, now: u64) -> Option<u64> {
        let waiting = !self.long.is_empty();
        self.running
            .iter()
            .map(|r| {
                if waiting && r.long {
                    r.end.min(self.boundary(r, now))
                } else {
                    r.end
                }
            })
            .min()
    }

    fn run(token: u32, work: u64, now: u64, long: bool) -> Run {
        Run {
            token,
            end: now + work,
            since: now,
            long,
        }
    }

    /// `token` becomes runnable with `cost` ns of work; returns the next
    /// event (for the current `version`).
    pub fn start(&mut self, token: u32, cost: u64, now: u64) -> Option<u64> {
        self.advance(now);
        let long = cost > self.slice;
        if self.running.len() < self.cores {
            self.running.push(Self::run(token, cost, now, long));
        } else if long {
            self.long.push_back((token, cost));
        } else {
            let i = self.victim % self.cores;
            self.victim = self.victim.wrapping_add(1);
            let r = self.running[i];
            let queue = if r.long {
                &mut self.long
            } else {
                &mut self.short
            };
            queue.push_front((r.token, r.end - now));
            self.running[i] = Self::run(token, cost, now, false);
        }
        self.version = self.version.wrapping_add(1);
        self.next(now)
    }

    /// An event of `version`: moves every phase whose work is done into
    /// `done`, hands freed cores and ended slices to waiting phases, and
    /// returns the next event, or `None` if stale or idle.
    pub fn finish(&mut self, version: u32, now: u64, done: &mut Vec<u32>) -> Option<u64> {
        if version != self.version {
            return None;
        }
        self.advance(now);
        self.running.retain(|r| {
            let finished = r.end <= now;
            if finished {
                done.push(r.token);
            }
            !finished
        });
        while self.running.len() < self.cores {
            if let Some((token, left)) = self.short.pop_front() {
                self.running.push(Self::run(token, left, now, false));
            } else if let Some((token, left)) = self.long.pop_front() {
                self.running.push(Self::run(token, left, now, true));
            } else {
                break;
            }
        }
        for i in 0..self.running.len() {
            let r = self.running[i];
            if !r.long || now == r.since || (now - r.since) % self.slice != 0 {
                continue;
            }
            let Some((token, left)) = self.long.pop_front() else {
                break;
            };
            self.long.push_back((r.token, r.end - now));
            self.running[i] = Self::run(token, left, now, true);
        }
        self.version = self.version.wrapping_add(1);
        self.next(now)
    }

    /// Core-nanoseconds of work done so far, up to the last change.
    pub fn busy(&self) -> u64 {
        self.busy
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{play, StretchRule, TimeShared};

    /// Each case: cores, slice, phases `(token, cost, start)`, then the
    /// order and times at which they end.
    #[test]
    fn long_phases_take_turns_in_slices_and_short_ones_go_first() {
        type Case<'a> = (usize, u64, &'a [(u32, u64, u64)], &'a [(u32, u64)]);
        let cases: &[Case] = &[
            // Alone, a long phase is never cut: slices renew while nobody
            // waits.
            (1, 10, &[(1, 35, 0)], &[(1, 35)]),
            // A short phase arriving at 13 preempts the long one at once and
            // runs whole (13-18); the long one resumes: 35 + 5 = 40.
            (1, 10, &[(1, 35, 0), (2, 5, 13)], &[(2, 18), (1, 40)]),
            // A long phase arriving at 13 waits for the running one's slice
            // to end (20), then they alternate slice by slice: 2 runs
            // 20-30, 1 30-40, 2 40-50, 1 50-55 (done), 2 55-57 (done).
            (1, 10, &[(1, 35, 0), (2, 22, 13)], &[(1, 55), (2, 57)]),
            // A short phase preempts a short one too (it goes to the front
            // of the short queue): 2 runs 1-6, 1 resumes and ends at 9.
            (1, 10, &[(1, 4, 0), (2, 5, 1)], &[(2, 6), (1, 9)]),
            // Two cores: the short phase preempts the first core's phase (1;
            // the next short one would take the second's) and runs 5-8; 1
            // resumes at 8 and ends at 8 + 25 = 33; 2 is not touched.
            (
                2,
                10,
                &[(1, 30, 0), (2, 28, 2), (3, 3, 5)],
                &[(3, 8), (2, 30), (1, 33)],
            ),
            // An idle core takes a new phase at once.
            (2, 10, &[(1, 30, 0), (2, 30, 5)], &[(1, 30), (2, 35)]),
            // A preempted short phase goes before a waiting long one: 3
            // preempts 1 (2-7), 1 resumes (7-9), then 4 (long) runs 9-29.
            (
                1,
                10,
                &[(1, 4, 0), (4, 20, 1), (3, 5, 2)],
                &[(3, 7), (1, 9), (4, 29)],
            ),
        ];
        for &(cores, slice, phases, want) in cases {
            let got = play(
                &mut TimeShared::new(cores, slice, Vec::new(), StretchRule::Factor),
                phases,
            );
            assert_eq!(got, want, "cores {cores}, slice {slice}, phases {phases:?}");
        }
    }

    #[test]
    fn stale_events_are_ignored() {
        let mut rr = RoundRobin::new(1, 10);
        rr.start(1, 10, 0);
        let stale = rr.version;
        rr.start(2, 10, 5);
        let mut done = Vec::new();
        assert_eq!(rr.finish(stale, 10, &mut done), None);
        assert!(done.is_empty());
    }
}
