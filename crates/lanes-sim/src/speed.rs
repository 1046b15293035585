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
//! **Spells that deepen with load** (`host.speed_cv_busy`,
//! `host.speed_busy_exponent`): the lab's spells are deeper the busier the
//! host (the thirtieth and thirty-first rounds: its calls' wall time reads
//! cv 0.10–0.11 at 600 req/s and 0.13–0.14 at 800 on three grids, where one
//! constant cv gives the simulator 0.10 at both). With the key, each epoch's
//! cv is `speed_cv + (speed_cv_busy − speed_cv) · u^e`, where `u` in [0, 1]
//! is the cores' utilisation since the previous epoch's factor was drawn
//! (the core-time the cores have accounted over that stretch, over
//! `cpu_cores` times its length) and `e` is `speed_busy_exponent` (1 by
//! default; above 1 the depth stays near `speed_cv` until the cores are
//! nearly all busy). `speed_cv` is then the cv of an idle host and
//! `speed_cv_busy` that of one whose cores were all busy. The factor is the
//! same standard normal draw `z` put through the lognormal of that cv
//! (`exp(μ + σ z)`), so the stream of draws, and with the key absent every
//! factor, is what it was.
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

use rand::Rng;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp, LogNormal, StandardNormal};
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
        /// With `speed_cv_busy`: the cv by the cores' utilisation.
        busy: Option<ByLoad>,
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

/// The epochs' cv by the cores' utilisation since the last draw
/// (`host.speed_cv_busy`; see the module docs).
#[derive(Debug, Clone)]
struct ByLoad {
    /// The cv of an idle host (`speed_cv`) and of a busy one.
    idle: f64,
    full: f64,
    /// `speed_busy_exponent`: the utilisation's power.
    exponent: f64,
    /// `cpu_cores`.
    cores: f64,
    /// When the last factor was drawn, ns, and the cores' busy core-ns then.
    at: u64,
    busy_then: u64,
    /// The utilisation the last factor was drawn at (kept for a draw that
    /// comes at the same instant).
    u: f64,
}

impl ByLoad {
    /// The lognormal for a draw at `now` with `busy` core-ns accounted.
    fn factor(&mut self, now: u64, busy: u64) -> Option<LogNormal<f64>> {
        if now > self.at {
            let span = self.cores * (now - self.at) as f64;
            self.u = (busy.saturating_sub(self.busy_then) as f64 / span).clamp(0.0, 1.0);
            self.at = now;
            self.busy_then = busy;
        }
        lognormal_of_mean_one(self.idle + (self.full - self.idle) * self.u.powf(self.exponent))
    }
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
            source: Source::Drawn {
                rng,
                epoch,
                factor,
                busy: None,
            },
            end: first.ceil() as u64,
            now_factor,
            run,
        })
    }

    /// With `speed_cv_busy` (validated: finite, >= 0) and
    /// `speed_busy_exponent` (finite, > 0): each epoch after the first draws
    /// its factor at the cv for the cores' utilisation since the draw before
    /// (see the module docs); the first, at time 0, is drawn at `cv`, the
    /// process's `speed_cv`. `cores` is `cpu_cores`. A process without epochs
    /// is returned as it is.
    pub fn by_load(mut self, cv: f64, cv_busy: f64, exponent: f64, cores: usize) -> Self {
        if let Source::Drawn { busy, .. } = &mut self.source {
            *busy = Some(ByLoad {
                idle: cv,
                full: cv_busy,
                exponent,
                cores: cores.max(1) as f64,
                at: 0,
                busy_then: 0,
                u: 0.0,
            });
        }
        self
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
    /// Without `speed_cv_busy`; with it, [`Self::factor_at`] gives the cores'
    /// busy time.
    pub fn factor(&mut self, now: u64) -> f64 {
        self.factor_at(now, 0)
    }

    /// The factor in effect at `now` (ns; non-decreasing across calls),
    /// `busy` the core-ns the cores have accounted by then (non-decreasing;
    /// read only with `speed_cv_busy`, to draw a new epoch's factor).
    pub fn factor_at(&mut self, now: u64, busy: u64) -> f64 {
        while now >= self.end {
            let len = match &mut self.source {
                Source::Drawn {
                    rng,
                    epoch,
                    factor,
                    busy: by_load,
                    ..
                } => {
                    let z: f64 = rng.sample(StandardNormal);
                    self.now_factor = match by_load.as_mut().and_then(|b| b.factor(now, busy)) {
                        Some(at_load) => at_load.from_zscore(z),
                        None => factor.from_zscore(z),
                    };
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

    /// `cost` ns scaled by the factor at `now` (at least 1 ns when `cost`
    /// is), `busy` as for [`Self::factor_at`].
    pub fn scale(&mut self, cost: u64, now: u64, busy: u64) -> u64 {
        if cost == 0 {
            return 0;
        }
        ((cost as f64 * self.factor_at(now, busy)).round() as u64).max(1)
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
        assert_eq!(a.scale(0, end, 0), 0);
        assert_eq!(
            a.scale(1_000, end, 0),
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

    /// One factor per epoch of `s`, the cores (2) kept busy at `u` of their
    /// capacity throughout.
    fn factors_at_load(s: &mut HostSpeed, u: f64, n: usize) -> Vec<f64> {
        let (mut out, mut t) = (Vec::new(), 0u64);
        for _ in 0..n {
            out.push(s.factor_at(t, (2.0 * u * t as f64) as u64));
            t = s.end;
        }
        out
    }

    #[test]
    fn by_load_the_cv_runs_from_idle_to_busy() {
        // The first epoch is drawn at time 0, at speed_cv; the rest by load.
        for (u, want) in [(0.0, 0.05), (0.5, 0.125), (1.0, 0.2)] {
            let mut s = HostSpeed::new(0.05, 10.0, 0.0, 5)
                .unwrap()
                .by_load(0.05, 0.2, 1.0, 2);
            let f = factors_at_load(&mut s, u, 20_000);
            let (mean, cv) = moments(&f[1..]);
            assert!((mean - 1.0).abs() < 0.01, "u {u}: factor mean {mean}");
            assert!(
                (cv - want).abs() < 0.01,
                "u {u}: factor cv {cv}, want {want}"
            );
        }
        // An exponent of 2: half busy is a quarter of the way.
        let mut s = HostSpeed::new(0.05, 10.0, 0.0, 5)
            .unwrap()
            .by_load(0.05, 0.2, 2.0, 2);
        let (_, cv) = moments(&factors_at_load(&mut s, 0.5, 20_000)[1..]);
        assert!(
            (cv - 0.0875).abs() < 0.01,
            "u 0.5, exponent 2: factor cv {cv}"
        );
        // Busy time beyond the cores' capacity counts as full.
        let mut over = HostSpeed::new(0.05, 10.0, 0.0, 5)
            .unwrap()
            .by_load(0.05, 0.2, 1.0, 2);
        let mut full = HostSpeed::new(0.05, 10.0, 0.0, 5)
            .unwrap()
            .by_load(0.05, 0.2, 1.0, 2);
        assert_eq!(
            factors_at_load(&mut over, 3.0, 100),
            factors_at_load(&mut full, 1.0, 100)
        );
    }

    #[test]
    fn by_load_keeps_the_draws_and_the_epochs() {
        // speed_cv_busy = speed_cv is the process without the key, factor
        // for factor; another cv moves each factor along the same z: the
        // same epochs, the same sign of each factor's log.
        let mut plain = HostSpeed::new(0.1, 10.0, 0.0, 8).unwrap();
        let mut same = HostSpeed::new(0.1, 10.0, 0.0, 8)
            .unwrap()
            .by_load(0.1, 0.1, 1.0, 2);
        let mut deep = HostSpeed::new(0.1, 10.0, 0.0, 8)
            .unwrap()
            .by_load(0.1, 0.3, 1.0, 2);
        let mut t = 0u64;
        for i in 0..2_000u64 {
            let busy = 2 * t;
            let (p, s, d) = (
                plain.factor(t),
                same.factor_at(t, busy),
                deep.factor_at(t, busy),
            );
            assert_eq!(p, s, "epoch {i}");
            assert_eq!(plain.end, deep.end, "epoch {i}: same epochs");
            if i > 0 {
                // exp(mu + sigma z): log f + sigma^2 / 2 has z's sign.
                let s2 = |cv: f64| (1.0f64 + cv * cv).ln();
                let zp = (p.ln() + s2(0.1) / 2.0) / s2(0.1).sqrt();
                let zd = (d.ln() + s2(0.3) / 2.0) / s2(0.3).sqrt();
                assert!((zp - zd).abs() < 1e-9, "epoch {i}: z {zp} against {zd}");
            }
            t = plain.end;
        }
        // Without epochs there is nothing to deepen.
        let still = HostSpeed::new(0.0, 0.0, 0.05, 9)
            .unwrap()
            .by_load(0.0, 0.3, 1.0, 2);
        assert!(matches!(still.source, Source::Still));
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
        assert_eq!(s.scale(1_000, ms(55.0), 0), 800);
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
