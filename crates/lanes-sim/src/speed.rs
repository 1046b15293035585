//! The host's speed over time (`host.speed_cv`, `host.speed_ms`): a shared
//! host is not equally fast from one moment to the next.
//!
//! On a shared 2-core host the lab's runtime calls are slower or faster than
//! their cell's median *together*: a call's slowdown is correlated with the
//! calls just before it, even at 100 req/s where they hardly overlap
//! (docs/results/calibration.md, the fifteenth round). Drawing every cost
//! independently misses those slow spells, and near the knee a slow spell is
//! what builds the queues that set the tails.
//!
//! **Rule.** Time is cut into epochs whose lengths are exponential draws
//! with mean `speed_ms`; each epoch has a factor drawn from a lognormal with
//! mean 1 and coefficient of variation `speed_cv` (`σ² = ln(1 + cv²)`,
//! `μ = −σ²/2`), independent of the other epochs. Every phase that asks for
//! a core (a request's pre and post, a batch's Python work, a runtime call on
//! shared cores, a background slice) has its cost multiplied by the factor of
//! the epoch it asks in. The factor's log is then a process whose
//! autocorrelation at lag t is `exp(−t / speed_ms)`, which is how
//! bench/calibrate/host_speed.py reads `speed_cv` and `speed_ms` off a lab
//! grid. The epochs come from their own seeded stream, so a seed's other
//! draws do not change; with `speed_cv` 0 nothing is drawn.
//!
//! **A run's own speed** (`host.speed_run_cv`): on top of the epochs, one
//! factor for the whole run, drawn once from a lognormal of mean 1 and
//! that coefficient of variation (from a stream of its own, so the epochs'
//! draws do not change), multiplies every phase's cost. The lab's repeats
//! of one cell run at speeds that differ by more than the epochs make over
//! a window (the twenty-ninth round: 0.043 sd of log between runs against
//! 0.031 from 250 ms epochs of cv 0.1 over 5 s); near the knee, where the
//! tail is steep in the load, that spread is what lifts the mean of the
//! runs' p99 above the p99 of the mean run. Without `speed_cv` the run's
//! factor is the only one. bench/calibrate/host_speed.py `--between-runs`
//! reads it.
//!
//! **A measured series** (`host.speed_series`, `host.speed_series_ms`)
//! takes the draws' place: the epochs are the series' bins, each
//! `speed_series_ms` long, and the i-th has the i-th value as its factor,
//! the series starting again from its first value once it ends. So a lab
//! run's own speed over time (bench/calibrate/replay.py reads it off the
//! run's calls) can be replayed beside its own arrivals: a slow spell
//! comes when the run had it.
//!
//! Queries must come in non-decreasing time (the event loop's clock does):
//! past epochs are dropped as time passes, O(1) amortised per query.

use rand::SeedableRng;
use rand_distr::{Distribution, Exp, LogNormal};
use rand_pcg::Pcg64Mcg;

/// The host's speed factor over time; see the module docs for the rule.
#[derive(Debug, Clone)]
pub struct HostSpeed {
    source: Source,
    /// End of the current epoch, ns.
    end: u64,
    now_factor: f64,
    /// The run's own factor (`host.speed_run_cv`; 1: none).
    run: f64,
}

/// Where the epochs and their factors come from.
#[derive(Debug, Clone)]
enum Source {
    /// Exponential epochs with lognormal factors (`speed_cv`, `speed_ms`).
    Drawn {
        rng: Pcg64Mcg,
        epoch: Exp<f64>,
        factor: LogNormal<f64>,
    },
    /// No epochs: the run's own factor alone.
    Still,
    /// A measured series: bins of `bin` ns, `next` the index of the one
    /// after the current.
    Series {
        factors: Vec<f64>,
        bin: u64,
        next: usize,
    },
}

impl HostSpeed {
    /// The process for a scenario's `speed_cv` and `speed_ms` (validated:
    /// finite, >= 0, both set or neither) and `speed_run_cv` (finite,
    /// >= 0); `None` when both `cv` and `run_cv` are 0.
    pub fn new(cv: f64, mean_ms: f64, run_cv: f64, seed: u64) -> Option<Self> {
        let epochs = cv > 0.0 && mean_ms > 0.0;
        if !epochs && run_cv <= 0.0 {
            return None;
        }
        let run = if run_cv > 0.0 {
            let mut rng = Pcg64Mcg::seed_from_u64(seed ^ 0x0A11_5EED_0F4E);
            lognormal_of_mean_one(run_cv)?.sample(&mut rng)
        } else {
            1.0
        };
        if !epochs {
            return Some(Self {
                source: Source::Still,
                end: u64::MAX,
                now_factor: 1.0,
                run,
            });
        }
        let mut rng = Pcg64Mcg::seed_from_u64(seed ^ 0x05EE_D0F7_4057);
        let epoch = Exp::new(1.0 / (mean_ms * 1e6)).ok()?;
        let factor = lognormal_of_mean_one(cv)?;
        let first = epoch.sample(&mut rng);
        let now_factor = factor.sample(&mut rng);
        Some(Self {
            source: Source::Drawn { rng, epoch, factor },
            end: first.ceil() as u64,
            now_factor,
            run,
        })
    }

    /// The process for a measured series of factors, each `bin_ms` long
    /// (validated: every factor finite and > 0, `bin_ms` > 0 when any is
    /// given); `None` when the series is empty.
    pub fn series(factors: &[f64], bin_ms: f64) -> Option<Self> {
        let first = *factors.first()?;
        if bin_ms <= 0.0 {
            return None;
        }
        let bin = ((bin_ms * 1e6).round() as u64).max(1);
        Some(Self {
            source: Source::Series {
                factors: factors.to_vec(),
                bin,
                next: 1 % factors.len(),
            },
            end: bin,
            now_factor: first,
            run: 1.0,
        })
    }

    /// The factor in effect at `now` (ns; non-decreasing across calls).
    pub fn factor(&mut self, now: u64) -> f64 {
        while now >= self.end {
            let len = match &mut self.source {
                Source::Drawn { rng, epoch, factor } => {
                    self.now_factor = factor.sample(rng);
                    epoch.sample(rng).ceil().max(1.0) as u64
                }
                Source::Series { factors, bin, next } => {
                    self.now_factor = factors[*next];
                    *next = (*next + 1) % factors.len();
                    *bin
                }
                Source::Still => u64::MAX,
            };
            self.end = self.end.saturating_add(len);
        }
        self.now_factor * self.run
    }

    /// `cost` ns scaled by the factor at `now` (at least 1 ns when `cost` is).
    pub fn scale(&mut self, cost: u64, now: u64) -> u64 {
        if cost == 0 {
            return 0;
        }
        ((cost as f64 * self.factor(now)).round() as u64).max(1)
    }
}

/// A lognormal of mean 1 and coefficient of variation `cv`
/// (`σ² = ln(1 + cv²)`, `μ = −σ²/2`).
fn lognormal_of_mean_one(cv: f64) -> Option<LogNormal<f64>> {
    let s2 = (1.0 + cv * cv).ln();
    LogNormal::new(-s2 / 2.0, s2.sqrt()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(xs: &[f64]) -> (f64, f64) {
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        (mean, var.sqrt() / mean)
    }

    #[test]
    fn no_cv_no_process() {
        assert!(HostSpeed::new(0.0, 100.0, 0.0, 1).is_none());
        assert!(HostSpeed::new(0.1, 0.0, 0.0, 1).is_none());
    }

    #[test]
    fn epochs_have_the_factor_and_length_asked_for() {
        let mut s = HostSpeed::new(0.2, 10.0, 0.0, 7).unwrap();
        // One sample per epoch: step far past each epoch's end.
        let (mut factors, mut lens, mut t) = (Vec::new(), Vec::new(), 0u64);
        for _ in 0..20_000 {
            factors.push(s.factor(t));
            let start = t;
            t = s.end;
            lens.push((t - start) as f64);
        }
        let (mean, cv) = moments(&factors);
        assert!((mean - 1.0).abs() < 0.01, "factor mean {mean}");
        assert!((cv - 0.2).abs() < 0.01, "factor cv {cv}");
        // Epochs after the first: exponential with mean 10 ms (cv 1).
        let (len, len_cv) = moments(&lens[1..]);
        assert!(
            (len / 1e6 - 10.0).abs() < 0.3,
            "epoch mean {} ms",
            len / 1e6
        );
        assert!((len_cv - 1.0).abs() < 0.05, "epoch cv {len_cv}");
    }

    #[test]
    fn the_factor_holds_within_an_epoch_and_is_seeded() {
        let mut a = HostSpeed::new(0.3, 5.0, 0.0, 3).unwrap();
        let mut b = HostSpeed::new(0.3, 5.0, 0.0, 3).unwrap();
        let end = a.end;
        let f = a.factor(0);
        assert_eq!(a.factor(end - 1), f, "same epoch, same factor");
        assert_ne!(a.factor(end), f, "the next epoch draws again");
        assert_eq!(b.factor(end), a.factor(end), "same seed, same process");
        assert_eq!(a.scale(0, end), 0);
        assert_eq!(
            a.scale(1_000, end),
            (1_000.0 * a.factor(end)).round() as u64
        );
        let mut c = HostSpeed::new(0.3, 5.0, 0.0, 4).unwrap();
        assert_ne!(
            c.factor(0),
            HostSpeed::new(0.3, 5.0, 0.0, 3).unwrap().factor(0)
        );
    }

    #[test]
    fn a_run_has_one_factor_of_its_own_on_top_of_the_epochs() {
        // Alone: one factor for the whole run, seeded, of the mean and cv
        // asked for over many runs.
        let factors: Vec<f64> = (0..20_000u64)
            .map(|seed| HostSpeed::new(0.0, 0.0, 0.05, seed).unwrap().factor(0))
            .collect();
        let (mean, cv) = moments(&factors);
        assert!((mean - 1.0).abs() < 0.002, "run factor mean {mean}");
        assert!((cv - 0.05).abs() < 0.002, "run factor cv {cv}");
        let mut alone = HostSpeed::new(0.0, 0.0, 0.05, 9).unwrap();
        let f = alone.factor(0);
        assert_ne!(f, 1.0);
        assert_eq!(
            alone.factor(u64::MAX - 1),
            f,
            "no epochs: the run's factor throughout"
        );
        assert_eq!(HostSpeed::new(0.0, 0.0, 0.05, 9).unwrap().factor(5), f);
        // With epochs: their draws do not change, each is scaled by the run's.
        let mut epochs = HostSpeed::new(0.2, 10.0, 0.0, 9).unwrap();
        let mut both = HostSpeed::new(0.2, 10.0, 0.05, 9).unwrap();
        for i in 0..1_000u64 {
            let t = i * 3_000_000;
            let ratio = both.factor(t) / epochs.factor(t);
            assert!((ratio - f).abs() < 1e-12, "at {t} ns: {ratio} against {f}");
        }
    }

    #[test]
    fn a_series_gives_its_values_bin_by_bin_and_repeats() {
        assert!(HostSpeed::series(&[], 10.0).is_none());
        assert!(HostSpeed::series(&[1.0], 0.0).is_none());
        let mut s = HostSpeed::series(&[1.0, 1.5, 0.8], 10.0).unwrap();
        let ms = |t: f64| (t * 1e6) as u64;
        assert_eq!(s.factor(0), 1.0);
        assert_eq!(s.factor(ms(9.9)), 1.0);
        assert_eq!(s.factor(ms(10.0)), 1.5);
        assert_eq!(s.factor(ms(25.0)), 0.8);
        // Past its end the series starts again; a query may skip bins.
        assert_eq!(s.factor(ms(31.0)), 1.0);
        assert_eq!(s.factor(ms(55.0)), 0.8);
        assert_eq!(s.scale(1_000, ms(55.0)), 800);
        let mut one = HostSpeed::series(&[1.2], 1.0).unwrap();
        assert_eq!(one.factor(ms(1_000.0)), 1.2);
    }

    #[test]
    fn correlation_decays_as_exp_of_lag_over_mean_epoch() {
        // Sample the log-factor every 1 ms; lag-10 ms autocorrelation ~ e^-1.
        let mut s = HostSpeed::new(0.2, 10.0, 0.0, 11).unwrap();
        let xs: Vec<f64> = (0..400_000u64)
            .map(|i| s.factor(i * 1_000_000).ln())
            .collect();
        let n = xs.len() as f64;
        let m = xs.iter().sum::<f64>() / n;
        let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>();
        let acf = |lag: usize| {
            xs.iter()
                .zip(&xs[lag..])
                .map(|(a, b)| (a - m) * (b - m))
                .sum::<f64>()
                / var
        };
        let (r10, r30) = (acf(10), acf(30));
        assert!((r10 - (-1.0f64).exp()).abs() < 0.04, "lag 10 ms: {r10}");
        assert!((r30 - (-3.0f64).exp()).abs() < 0.04, "lag 30 ms: {r30}");
    }
}
