//! The pacer: one global, seeded send schedule for an open-loop run, and the
//! precise timer that releases it.
//!
//! The schedule is the sequence of intended send offsets `t_0 < t_1 < ...`
//! from the run's start: `constant` sends every `1/rate`; `poisson` is a
//! Poisson process of intensity `rate`, drawn from a PCG generator seeded by
//! the run's seed, so the same seed gives the same schedule on any machine.
//! There is one schedule for the whole run ([`Claims`]) — never a ticker per
//! worker, whose phases would line up into synchronized waves.
//!
//! Count rule. A run bounded by a duration `d` has a schedule of exactly
//! `n` slots in `[0, d)`, fixed before the run ([`Schedule::within`]): `n` is
//! `rate * d` rounded (constant), or `rate * d` rounded down or up at random
//! with the fraction as the chance of up (poisson: so `n` is never off by a
//! whole request and its mean is `rate * d` however short the window). The
//! poisson slots are then a Poisson process given its count — `n` independent
//! uniform times in the window, sorted, drawn one after the other (each the
//! least of the remaining ones, `-expm1(-E/m)` of the rest of the window) —
//! which has the same exponential gaps and per-bin Poisson counts, but not a
//! count that itself varies by `sqrt(rate * d)` (0.6 % at 5,000/s for 5 s).
//! A run bounded by a request count alone draws independent exponential gaps
//! ([`Schedule::new`]), as many as it needs.
//!
//! Release rule: a sender thread that has a free connection claims the next
//! slot of the global schedule, sleeps until `t_i` on a [`Timer`] (a timerfd
//! with absolute expiry, on the thread's own event loop, timer slack cut to
//! 1 µs: no hand-off between threads), then gives the slot to that
//! connection. A thread with no free connection claims nothing, so when every
//! connection is busy the next slot waits and leaves late; latency is still
//! measured from `t_i`. Claims hold at most one slot per free connection, so
//! memory stays bounded however far the target falls behind.

use std::io;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use nix::time::{clock_gettime, ClockId as Clock};
use tokio::io::unix::AsyncFd;

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp, Exp1};
use rand_pcg::Pcg64Mcg;
use serde::Deserialize;

use crate::error::LoadError;

/// Inter-arrival law of an open-loop schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Exponential gaps: a Poisson process.
    #[default]
    Poisson,
    /// Equal gaps.
    Constant,
}

impl std::str::FromStr for Arrival {
    type Err = LoadError;
    fn from_str(s: &str) -> Result<Self, LoadError> {
        match s {
            "poisson" => Ok(Self::Poisson),
            "constant" => Ok(Self::Constant),
            _ => Err(LoadError::BadArgument(format!(
                "arrival {s:?}: expected poisson or constant"
            ))),
        }
    }
}

/// One scheduled send.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slot {
    /// Position in the schedule (also picks the corpus entry).
    pub index: u64,
    /// Intended send time, nanoseconds after the run's start.
    pub at: u64,
}

/// The law that places the next slot.
#[derive(Debug, Clone)]
enum Law {
    /// Every `gap_ns`.
    Constant { gap_ns: f64 },
    /// Exponential gaps, without end.
    Poisson { exp: Exp<f64> },
    /// A Poisson process given its count in `[0, end_ns)`.
    PoissonIn { end_ns: f64 },
}

/// The seeded schedule of intended send times.
#[derive(Debug, Clone)]
pub struct Schedule {
    law: Law,
    rng: Pcg64Mcg,
    /// The last slot's time, ns (poisson laws).
    last_ns: f64,
    index: u64,
    /// Slots left, when the schedule has a count.
    left: Option<u64>,
}

fn check_rate(rate: f64) -> Result<(), LoadError> {
    if rate.is_finite() && rate > 0.0 {
        Ok(())
    } else {
        Err(LoadError::BadArgument(format!(
            "rate must be a positive number of requests per second, not {rate}"
        )))
    }
}

impl Schedule {
    /// An endless schedule at `rate` sends per second (poisson: independent
    /// exponential gaps). `rate` must be positive and finite.
    pub fn new(rate: f64, arrival: Arrival, seed: u64) -> Result<Self, LoadError> {
        check_rate(rate)?;
        let law = match arrival {
            Arrival::Constant => Law::Constant { gap_ns: 1e9 / rate },
            Arrival::Poisson => Law::Poisson {
                exp: Exp::new(rate / 1e9).expect("positive finite rate"),
            },
        };
        Ok(Self {
            law,
            rng: Pcg64Mcg::seed_from_u64(seed),
            last_ns: 0.0,
            index: 0,
            left: None,
        })
    }

    /// The schedule of a run that issues for `window_ns`: exactly
    /// [`Schedule::left`] slots, all inside `[0, window_ns)` (the module's
    /// count rule).
    pub fn within(
        rate: f64,
        arrival: Arrival,
        seed: u64,
        window_ns: u64,
    ) -> Result<Self, LoadError> {
        let mut schedule = Self::new(rate, arrival, seed)?;
        let expected = rate * window_ns as f64 / 1e9;
        let count = match arrival {
            // Slot i is at i / rate: a count rounded up still ends inside the window.
            Arrival::Constant => expected.round() as u64,
            Arrival::Poisson => {
                schedule.law = Law::PoissonIn {
                    end_ns: window_ns as f64,
                };
                let whole = expected.floor();
                let up = schedule.rng.random::<f64>() < expected - whole;
                whole as u64 + u64::from(up)
            }
        };
        schedule.left = Some(count);
        Ok(schedule)
    }

    /// Slots left to come, when the schedule has a count.
    pub fn left(&self) -> Option<u64> {
        self.left
    }
}

impl Iterator for Schedule {
    type Item = Slot;

    #[inline]
    fn next(&mut self) -> Option<Slot> {
        if let Some(left) = &mut self.left {
            if *left == 0 {
                return None;
            }
            *left -= 1;
        }
        let at = match &self.law {
            Law::Constant { gap_ns } => (self.index as f64 * gap_ns) as u64,
            Law::Poisson { exp } => {
                self.last_ns += exp.sample(&mut self.rng);
                self.last_ns as u64
            }
            Law::PoissonIn { end_ns } => {
                // The least of the m uniform times left in (last, end): a share
                // 1 - U^(1/m) = -expm1(-E/m) of what is left of the window.
                let m = self.left.expect("a counted schedule") + 1;
                let e: f64 = Exp1.sample(&mut self.rng);
                self.last_ns += (end_ns - self.last_ns) * -(-e / m as f64).exp_m1();
                // Never at the window's end, even when rounding says so.
                (self.last_ns as u64).min((*end_ns as u64).saturating_sub(1))
            }
        };
        let slot = Slot {
            index: self.index,
            at,
        };
        self.index += 1;
        Some(slot)
    }
}

/// The run's schedule, shared by every sender thread, cut at the run's bounds.
#[derive(Debug)]
pub struct Claims {
    /// The schedule, its next slot (None once it has ended), and how many were claimed.
    inner: Mutex<(Schedule, Option<Slot>, u64)>,
    end_ns: Option<u64>,
    max: Option<u64>,
}

impl Claims {
    /// The schedule, ending before `end_ns` or after `max` slots (or where it ends).
    pub fn new(mut schedule: Schedule, end_ns: Option<u64>, max: Option<u64>) -> Self {
        let first = schedule.next();
        Self {
            inner: Mutex::new((schedule, first, 0)),
            end_ns,
            max,
        }
    }

    /// The open-loop schedule of a run: [`Schedule::within`] the duration
    /// when there is one, else [`Schedule::new`]; at most `requests` slots.
    pub fn for_run(
        rate: f64,
        arrival: Arrival,
        seed: u64,
        duration_ns: Option<u64>,
        requests: Option<u64>,
    ) -> Result<Self, LoadError> {
        let schedule = match duration_ns {
            Some(window) => Schedule::within(rate, arrival, seed, window)?,
            None => Schedule::new(rate, arrival, seed)?,
        };
        Ok(Self::new(schedule, duration_ns, requests))
    }

    /// The next slot, or `None` once the schedule has reached a bound.
    pub fn claim(&self) -> Option<Slot> {
        let mut guard = self.inner.lock().expect("schedule lock");
        let (schedule, next, claimed) = &mut *guard;
        let slot = (*next)?;
        if self.max.is_some_and(|m| *claimed >= m) || self.end_ns.is_some_and(|e| slot.at >= e) {
            return None;
        }
        *next = schedule.next();
        *claimed += 1;
        Some(slot)
    }

    /// Slots claimed so far: the schedule inside the bounds once the run has ended.
    pub fn claimed(&self) -> u64 {
        self.inner.lock().expect("schedule lock").2
    }
}

/// A timerfd that wakes its thread's event loop at absolute offsets from the
/// run's start, to the microsecond.
#[derive(Debug)]
pub struct Timer {
    fd: AsyncFd<Fd>,
    /// `CLOCK_MONOTONIC` at the run's start, ns.
    base_ns: u64,
}

#[derive(Debug)]
struct Fd(TimerFd);

impl AsRawFd for Fd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

fn monotonic_ns() -> io::Result<u64> {
    let t = clock_gettime(Clock::CLOCK_MONOTONIC)?;
    Ok(t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
}

impl Timer {
    /// A timer for offsets from `start`; must be made inside a tokio runtime.
    /// Also cuts the calling thread's timer slack to 1 µs.
    pub fn new(start: Instant) -> io::Result<Self> {
        // Best effort: without it the kernel may wake the thread up to 50 µs late.
        let _ = nix::sys::prctl::set_timerslack(1_000);
        let fd = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )?;
        // `Instant` reads CLOCK_MONOTONIC too; pair the two readings closely
        // (retrying if preempted between them) so the timer never fires early.
        let mut base_ns = 0;
        for _ in 0..10 {
            let before = monotonic_ns()?;
            let elapsed = start.elapsed().as_nanos() as u64;
            let after = monotonic_ns()?;
            base_ns = after.saturating_sub(elapsed);
            if after - before < 20_000 {
                break;
            }
        }
        // `AsyncFd::new` is deprecated because a borrowed descriptor could close
        // under it; ours is owned by the `AsyncFd` and open for its whole life.
        #[allow(deprecated)]
        let fd = AsyncFd::new(Fd(fd))?;
        Ok(Self { fd, base_ns })
    }

    /// Returns at `offset_ns` after the start (at once when that has passed).
    pub async fn until(&self, offset_ns: u64) -> io::Result<()> {
        let due = self.base_ns + offset_ns;
        if monotonic_ns()? >= due {
            return Ok(());
        }
        let at = TimeSpec::from_duration(Duration::from_nanos(due));
        self.fd.get_ref().0.set(
            Expiration::OneShot(at),
            TimerSetTimeFlags::TFD_TIMER_ABSTIME,
        )?;
        loop {
            let mut guard = self.fd.readable().await?;
            match guard.try_io(|fd| fd.get_ref().0.wait().map_err(io::Error::from)) {
                Ok(result) => return result,
                Err(_would_block) => continue,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_schedules_are_exact() {
        let s: Vec<Slot> = Schedule::new(1000.0, Arrival::Constant, 7)
            .unwrap()
            .take(4)
            .collect();
        let at: Vec<u64> = s.iter().map(|s| s.at).collect();
        assert_eq!(at, [0, 1_000_000, 2_000_000, 3_000_000]);
        assert_eq!(s[3].index, 3);
    }

    #[test]
    fn poisson_schedules_are_reproducible_from_the_seed() {
        let a: Vec<Slot> = Schedule::new(5000.0, Arrival::Poisson, 11)
            .unwrap()
            .take(1000)
            .collect();
        let b: Vec<Slot> = Schedule::new(5000.0, Arrival::Poisson, 11)
            .unwrap()
            .take(1000)
            .collect();
        let c: Vec<Slot> = Schedule::new(5000.0, Arrival::Poisson, 12)
            .unwrap()
            .take(1000)
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        // A fixed table: the first offsets for seed 11 never change between versions.
        let first: Vec<u64> = a.iter().take(3).map(|s| s.at).collect();
        assert_eq!(first, FIRST_POISSON_SEED_11, "the seeded schedule changed");
    }

    // Pinned once from this implementation; a change means schedules from old
    // seeds are no longer reproduced.
    const FIRST_POISSON_SEED_11: [u64; 3] = [245_118, 311_010, 326_600];

    #[test]
    fn poisson_gaps_have_the_exponential_mean_and_spread() {
        let rate = 20_000.0;
        let at: Vec<f64> = Schedule::new(rate, Arrival::Poisson, 3)
            .unwrap()
            .take(200_001)
            .map(|s| s.at as f64)
            .collect();
        let gaps: Vec<f64> = at.windows(2).map(|w| w[1] - w[0]).collect();
        let n = gaps.len() as f64;
        let mean = gaps.iter().sum::<f64>() / n;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n;
        let expected = 1e9 / rate;
        assert!((mean / expected - 1.0).abs() < 0.01, "mean gap {mean}");
        // An exponential's coefficient of variation is 1.
        assert!(
            (var.sqrt() / mean - 1.0).abs() < 0.02,
            "cv {}",
            var.sqrt() / mean
        );
    }

    #[test]
    fn rates_must_be_positive_and_finite() {
        for rate in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let err = Schedule::new(rate, Arrival::Poisson, 0).unwrap_err();
            assert_eq!(err.code(), "bad_argument");
        }
    }

    #[test]
    fn claims_stop_at_the_end_time_or_the_count() {
        let schedule = Schedule::new(2000.0, Arrival::Constant, 0).unwrap();
        let claims = Claims::new(schedule.clone(), Some(50_000_000), None);
        let got: Vec<Slot> = std::iter::from_fn(|| claims.claim()).collect();
        // Slots at 0, 0.5, ..., 49.5 ms: 100 of them.
        assert_eq!(got.len(), 100);
        assert_eq!(got[99].at, 49_500_000);
        assert_eq!(claims.claimed(), 100);
        assert_eq!(claims.claim(), None);
        let claims = Claims::new(schedule, None, Some(7));
        assert_eq!(std::iter::from_fn(|| claims.claim()).count(), 7);
    }

    /// Gaps and the dispersion index of counts per `bin_ns` over `[0, end_ns)`.
    fn gaps_and_dispersion(at: &[u64], end_ns: u64, bin_ns: u64) -> (Vec<f64>, f64) {
        let gaps = at.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        let mut bins = vec![0f64; (end_ns / bin_ns) as usize];
        for &t in at {
            bins[(t / bin_ns) as usize] += 1.0;
        }
        let n = bins.len() as f64;
        let mean = bins.iter().sum::<f64>() / n;
        let var = bins.iter().map(|c| (c - mean).powi(2)).sum::<f64>() / n;
        (gaps, var / mean)
    }

    #[test]
    fn a_window_holds_exactly_rate_times_duration_slots() {
        let window = 5_000_000_000;
        for arrival in [Arrival::Poisson, Arrival::Constant] {
            for seed in 1..=5 {
                let s = Schedule::within(5000.0, arrival, seed, window).unwrap();
                assert_eq!(s.left(), Some(25_000));
                let at: Vec<u64> = s.map(|s| s.at).collect();
                assert_eq!(at.len(), 25_000, "{arrival:?} seed {seed}");
                assert!(at.windows(2).all(|w| w[0] <= w[1]));
                assert!(*at.last().unwrap() < window);
            }
        }
        // The same seed gives the same schedule; another seed another one.
        let a: Vec<Slot> = Schedule::within(300.0, Arrival::Poisson, 4, 1_000_000_000)
            .unwrap()
            .collect();
        let b: Vec<Slot> = Schedule::within(300.0, Arrival::Poisson, 4, 1_000_000_000)
            .unwrap()
            .collect();
        let c: Vec<Slot> = Schedule::within(300.0, Arrival::Poisson, 5, 1_000_000_000)
            .unwrap()
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn a_fractional_count_rounds_at_random_with_the_right_mean() {
        // 2.5 expected slots: 2 or 3, 2.5 on average over seeds (no bias for
        // short windows at low rates, such as the lab's segments).
        let counts: Vec<u64> = (0..4000)
            .map(|seed| {
                let s = Schedule::within(2.5, Arrival::Poisson, seed, 1_000_000_000).unwrap();
                let left = s.left().unwrap();
                assert_eq!(s.count() as u64, left);
                left
            })
            .collect();
        assert!(counts.iter().all(|&n| n == 2 || n == 3));
        let mean = counts.iter().sum::<u64>() as f64 / counts.len() as f64;
        assert!((mean - 2.5).abs() < 0.05, "mean count {mean}");
        // Constant: rounded; every slot inside the window.
        let at: Vec<u64> = Schedule::within(2.5, Arrival::Constant, 0, 1_000_000_000)
            .unwrap()
            .map(|s| s.at)
            .collect();
        assert_eq!(at, [0, 400_000_000, 800_000_000]);
    }

    #[test]
    fn a_windowed_poisson_schedule_is_poisson_inside() {
        let (rate, window) = (20_000.0, 10_000_000_000);
        let at: Vec<u64> = Schedule::within(rate, Arrival::Poisson, 3, window)
            .unwrap()
            .map(|s| s.at)
            .collect();
        let (gaps, dispersion) = gaps_and_dispersion(&at, window, 1_000_000);
        let n = gaps.len() as f64;
        let mean = gaps.iter().sum::<f64>() / n;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n;
        assert!((mean / (1e9 / rate) - 1.0).abs() < 0.01, "mean gap {mean}");
        assert!(
            (var.sqrt() / mean - 1.0).abs() < 0.02,
            "cv {}",
            var.sqrt() / mean
        );
        // Counts per 1 ms bin: Poisson (dispersion 1), not a clock (0).
        assert!((dispersion - 1.0).abs() < 0.05, "dispersion {dispersion}");
        let at: Vec<u64> = Schedule::within(rate, Arrival::Constant, 3, window)
            .unwrap()
            .map(|s| s.at)
            .collect();
        assert!(gaps_and_dispersion(&at, window, 1_000_000).1 < 0.01);
    }

    #[test]
    fn a_run_with_a_duration_claims_its_window_and_no_more() {
        let claims =
            Claims::for_run(5000.0, Arrival::Poisson, 1, Some(5_000_000_000), None).unwrap();
        assert_eq!(std::iter::from_fn(|| claims.claim()).count(), 25_000);
        assert_eq!(claims.claimed(), 25_000);
        assert_eq!(claims.claim(), None);
        // A request bound below the window's count wins.
        let claims =
            Claims::for_run(5000.0, Arrival::Poisson, 1, Some(5_000_000_000), Some(100)).unwrap();
        assert_eq!(std::iter::from_fn(|| claims.claim()).count(), 100);
        // Without a duration the schedule is the endless one, cut at the count.
        let claims = Claims::for_run(5000.0, Arrival::Poisson, 11, None, Some(3)).unwrap();
        let at: Vec<u64> = std::iter::from_fn(|| claims.claim())
            .map(|s| s.at)
            .collect();
        assert_eq!(at, FIRST_POISSON_SEED_11);
    }

    #[test]
    fn claims_from_many_threads_take_each_slot_once_in_order() {
        let schedule = Schedule::new(1e6, Arrival::Poisson, 9).unwrap();
        let expected: Vec<Slot> = schedule.clone().take(40_000).collect();
        let claims = Claims::new(schedule, None, Some(40_000));
        let mut got: Vec<Slot> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| s.spawn(|| std::iter::from_fn(|| claims.claim()).collect::<Vec<_>>()))
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        got.sort_by_key(|s| s.index);
        assert_eq!(got, expected);
    }

    #[test]
    fn the_timer_never_fires_early() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let start = Instant::now();
        rt.block_on(async {
            let timer = Timer::new(start).unwrap();
            for ms in [5u64, 10, 12, 30] {
                timer.until(ms * 1_000_000).await.unwrap();
                assert!(start.elapsed() >= Duration::from_millis(ms));
            }
            // Sub-millisecond offsets are honoured (tokio's own timer rounds to 1 ms).
            let base = start.elapsed().as_nanos() as u64 + 1_000_000;
            for i in 0..200u64 {
                let due = base + i * 100_000;
                timer.until(due).await.unwrap();
                let now = start.elapsed().as_nanos() as u64;
                assert!(now >= due, "step {i}: woke at {now} ns for {due} ns");
            }
            // A time already past returns at once.
            let t0 = Instant::now();
            timer.until(0).await.unwrap();
            assert!(t0.elapsed() < Duration::from_millis(5));
        });
    }
}
