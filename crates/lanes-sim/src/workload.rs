//! Arrival processes and cost distributions, sampled from seeded generators.
//!
//! - Costs: `lognormal` by mean `m` and coefficient of variation `cv`
//!   (`σ² = ln(1 + cv²)`, `μ = ln m − σ²/2`); `exponential` by mean (cv is 1
//!   by definition); `constant`. A cv of 0 is constant for every family.
//! - Empirical draws ([`Quantiles`], `host.device_hold_ms`): by the
//!   distribution's quantile function, given as `(p, ms)` points from `p = 0`
//!   to `p = 1` and linear between them; a draw is its value at a uniform
//!   `u` in [0, 1).
//! - Arrivals at rate `λ`: `poisson` has exponential gaps; `bursty` has gamma
//!   gaps with shape `1/cv²` (same mean, gap CV = cv); `trace` replays recorded
//!   times scaled so their mean rate is `λ`, looping with the trace's mean gap
//!   between repetitions.

use lanes_policy::round_nanos;
use rand::Rng;
use rand_distr::{Distribution, Exp, Gamma, LogNormal};

use crate::config::{Arrival, Cost, Dist};

/// Samples one phase's cost in nanoseconds.
#[derive(Debug, Clone)]
pub enum CostSampler {
    Constant(f64),
    Exponential(Exp<f64>),
    Lognormal(LogNormal<f64>),
}

impl CostSampler {
    /// A sampler for `cost` (validated: mean >= 0, cv >= 0).
    pub fn new(cost: &Cost) -> Self {
        let mean = cost.mean_ms * 1e6;
        match cost.dist {
            _ if mean == 0.0 => Self::Constant(0.0),
            Dist::Constant => Self::Constant(mean),
            Dist::Exponential => Self::Exponential(Exp::new(1.0 / mean).expect("mean > 0")),
            Dist::Lognormal if cost.cv == 0.0 => Self::Constant(mean),
            Dist::Lognormal => {
                let s2 = (1.0 + cost.cv * cost.cv).ln();
                let mu = mean.ln() - s2 / 2.0;
                Self::Lognormal(LogNormal::new(mu, s2.sqrt()).expect("sigma > 0"))
            }
        }
    }

    /// One sample, in whole nanoseconds.
    pub fn sample<R: Rng>(&self, rng: &mut R) -> u64 {
        let x = match self {
            Self::Constant(c) => *c,
            Self::Exponential(d) => d.sample(rng),
            Self::Lognormal(d) => d.sample(rng),
        };
        round_nanos(x)
    }
}

/// An empirical distribution by its quantile function.
///
/// **Rule.** The points `(p, ms)` have `p` strictly ascending from 0 to 1
/// and `ms >= 0` never falling ([`Quantiles::valid`]); the quantile at `u`
/// is linear between the two points around it, so a draw at a uniform `u`
/// falls between two measured quantiles in proportion to their probability
/// gap (uniform within each gap: the mean is the sum over gaps of
/// `(p1 − p0) · (ms0 + ms1) / 2`). Measured quantiles of a sample give
/// back that sample's distribution up to the points' resolution, its tail
/// included.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantiles {
    /// `(p, ns)`.
    points: Vec<(f64, f64)>,
}

impl Quantiles {
    /// Whether `points` (`(p, ms)`) are empty or a quantile function.
    pub fn valid(points: &[(f64, f64)]) -> bool {
        if points.is_empty() {
            return true;
        }
        let ends = points.len() >= 2 && points[0].0 == 0.0 && points[points.len() - 1].0 == 1.0;
        let each = points
            .iter()
            .all(|&(p, ms)| p.is_finite() && ms.is_finite() && ms >= 0.0);
        let rising = points
            .windows(2)
            .all(|w| w[1].0 > w[0].0 && w[1].1 >= w[0].1);
        ends && each && rising
    }

    /// The distribution of valid `points` (`(p, ms)`); `None` when they are
    /// empty or every quantile is 0 (nothing to draw).
    pub fn new(points: &[(f64, f64)]) -> Option<Self> {
        debug_assert!(Self::valid(points));
        if points.iter().all(|&(_, ms)| ms == 0.0) {
            return None;
        }
        let points = points.iter().map(|&(p, ms)| (p, ms * 1e6)).collect();
        Some(Self { points })
    }

    /// The quantile at `u` in [0, 1], ns.
    pub fn at(&self, u: f64) -> f64 {
        let pts = &self.points;
        let i = pts.partition_point(|&(p, _)| p < u).clamp(1, pts.len() - 1);
        let ((p0, x0), (p1, x1)) = (pts[i - 1], pts[i]);
        x0 + (x1 - x0) * ((u - p0) / (p1 - p0)).clamp(0.0, 1.0)
    }

    /// The mean, ns.
    pub fn mean(&self) -> f64 {
        self.points
            .windows(2)
            .map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
            .sum()
    }

    /// One draw, in whole nanoseconds.
    pub fn sample<R: Rng>(&self, rng: &mut R) -> u64 {
        round_nanos(self.at(rng.random::<f64>()))
    }
}

/// Generates one service's arrival times in nanoseconds.
#[derive(Debug, Clone)]
pub enum ArrivalGen {
    Poisson(Exp<f64>),
    Gamma(Gamma<f64>),
    Trace {
        /// Scaled times, relative to the first.
        times: Vec<f64>,
        /// Offset between repetitions: span plus one mean gap.
        period: f64,
        next: usize,
        base: f64,
    },
}

impl ArrivalGen {
    /// A generator at `rate` requests per second (> 0).
    pub fn new(arrival: &Arrival, rate: f64) -> Self {
        let mean_gap = 1e9 / rate;
        match arrival {
            Arrival::Poisson => Self::Poisson(Exp::new(1.0 / mean_gap).expect("rate > 0")),
            Arrival::Bursty { cv } => {
                let shape = 1.0 / (cv * cv);
                Self::Gamma(Gamma::new(shape, mean_gap / shape).expect("shape, scale > 0"))
            }
            Arrival::Trace { times } => {
                let first = times[0];
                let span = times[times.len() - 1] - first;
                let trace_gap = span / (times.len() - 1) as f64;
                let scale = mean_gap / (trace_gap * 1e9);
                let scaled: Vec<f64> = times.iter().map(|t| (t - first) * 1e9 * scale).collect();
                let period = scaled[scaled.len() - 1] + mean_gap;
                Self::Trace {
                    times: scaled,
                    period,
                    next: 0,
                    base: 0.0,
                }
            }
        }
    }

    /// The next arrival after `last` (the previous arrival, or 0 at start).
    pub fn next<R: Rng>(&mut self, last: u64, rng: &mut R) -> u64 {
        match self {
            Self::Poisson(d) => last + round_nanos(d.sample(rng)),
            Self::Gamma(d) => last + round_nanos(d.sample(rng)),
            Self::Trace {
                times,
                period,
                next,
                base,
            } => {
                if *next == times.len() {
                    *next = 0;
                    *base += *period;
                }
                let t = *base + times[*next];
                *next += 1;
                round_nanos(t).max(last)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    use super::*;

    fn moments(samples: &[f64]) -> (f64, f64) {
        let n = samples.len() as f64;
        let mean = samples.iter().sum::<f64>() / n;
        let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        (mean, var.sqrt() / mean)
    }

    #[test]
    fn costs_have_their_mean_and_cv() {
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        for (dist, cv, expect_cv) in [
            (Dist::Lognormal, 0.5, 0.5),
            (Dist::Lognormal, 0.0, 0.0),
            (Dist::Exponential, 0.0, 1.0),
            (Dist::Constant, 0.7, 0.0),
        ] {
            let s = CostSampler::new(&Cost {
                dist,
                mean_ms: 5.0,
                cv,
            });
            let xs: Vec<f64> = (0..200_000).map(|_| s.sample(&mut rng) as f64).collect();
            let (mean, got_cv) = moments(&xs);
            assert!((mean / 5e6 - 1.0).abs() < 0.01, "{dist:?}: mean {mean}");
            assert!((got_cv - expect_cv).abs() < 0.02, "{dist:?}: cv {got_cv}");
        }
    }

    #[test]
    fn quantile_points_are_checked() {
        let cases: &[(&[(f64, f64)], bool)] = &[
            (&[], true),
            (&[(0.0, 0.1), (1.0, 0.1)], true),
            (&[(0.0, 0.0), (0.5, 0.1), (0.99, 2.0), (1.0, 4.0)], true),
            (&[(0.0, 0.1)], false),             // one point
            (&[(0.1, 0.1), (1.0, 0.2)], false), // not from 0
            (&[(0.0, 0.1), (0.9, 0.2)], false), // not to 1
            (&[(0.0, 0.1), (0.5, 0.2), (0.5, 0.3), (1.0, 0.4)], false), // p repeated
            (&[(0.0, 0.3), (0.5, 0.2), (1.0, 0.4)], false), // ms falling
            (&[(0.0, -0.1), (1.0, 0.2)], false), // ms below 0
            (&[(0.0, 0.1), (1.0, f64::INFINITY)], false),
        ];
        for (points, ok) in cases {
            assert_eq!(Quantiles::valid(points), *ok, "{points:?}");
        }
    }

    #[test]
    fn quantiles_are_linear_between_points() {
        let q = Quantiles::new(&[(0.0, 0.0), (0.5, 1.0), (0.9, 2.0), (1.0, 6.0)]).unwrap();
        for (u, ns) in [
            (0.0, 0.0),
            (0.25, 0.5e6),
            (0.5, 1e6),
            (0.7, 1.5e6),
            (0.95, 4e6),
            (1.0, 6e6),
        ] {
            assert!((q.at(u) - ns).abs() < 1e-6, "at {u}: {}", q.at(u));
        }
        // 0.5 · 0.5 + 0.4 · 1.5 + 0.1 · 4 ms.
        assert!((q.mean() - 1.25e6).abs() < 1e-6);
        assert_eq!(Quantiles::new(&[(0.0, 0.0), (1.0, 0.0)]), None);
        assert_eq!(Quantiles::new(&[]), None);
    }

    #[test]
    fn quantile_draws_have_their_quantiles_and_mean() {
        let points = [
            (0.0, 0.01),
            (0.5, 0.08),
            (0.9, 0.35),
            (0.99, 2.4),
            (1.0, 6.0),
        ];
        let q = Quantiles::new(&points).unwrap();
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        let mut xs: Vec<u64> = (0..400_000).map(|_| q.sample(&mut rng)).collect();
        xs.sort_unstable();
        for &(p, ms) in &points[1..points.len() - 1] {
            // The share of draws at or below the quantile (flat-sloped
            // quantiles make a poor test: a tiny error in p moves them far).
            let below = xs.partition_point(|&x| x as f64 <= ms * 1e6) as f64 / xs.len() as f64;
            assert!(
                (below - p).abs() < 0.003,
                "p{p}: {below} of draws <= {ms} ms"
            );
        }
        let mean = xs.iter().sum::<u64>() as f64 / xs.len() as f64;
        // The tail's spread makes the sample mean's sd about 0.35 %.
        assert!((mean / q.mean() - 1.0).abs() < 0.015, "mean {mean}");
    }

    #[test]
    fn arrivals_have_their_rate_and_burstiness() {
        let mut rng = Pcg64Mcg::seed_from_u64(2);
        let trace = Arrival::Trace {
            times: vec![10.0, 10.5, 10.75, 12.0],
        };
        for (arrival, expect_cv) in [
            (Arrival::Poisson, Some(1.0)),
            (Arrival::Bursty { cv: 3.0 }, Some(3.0)),
            (trace, None),
        ] {
            let mut g = ArrivalGen::new(&arrival, 200.0);
            let mut last = 0;
            let mut gaps = Vec::new();
            for _ in 0..200_000 {
                let t = g.next(last, &mut rng);
                gaps.push((t - last) as f64);
                last = t;
            }
            let (mean, cv) = moments(&gaps);
            assert!(
                (mean / 5e6 - 1.0).abs() < 0.03,
                "{arrival:?}: mean gap {mean}"
            );
            if let Some(e) = expect_cv {
                assert!((cv - e).abs() / e < 0.05, "{arrival:?}: cv {cv}");
            }
        }
    }
}
