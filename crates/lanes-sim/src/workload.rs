//! Arrival processes and cost distributions, sampled from seeded generators.
//!
//! - Costs: `lognormal` by mean `m` and coefficient of variation `cv`
//!   (`σ² = ln(1 + cv²)`, `μ = ln m − σ²/2`); `exponential` by mean (cv is 1
//!   by definition); `constant`. A cv of 0 is constant for every family.
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
