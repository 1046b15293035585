//! Wake-ups that come in spells (`host.wake_spell_ms`,
//! `host.wake_spell_share`): on a crowded host the waits for a thread come
//! long together, not one by one.
//!
//! The lab's request spans show it (docs/results/calibration.md, the
//! thirty-fourth round, round34/wake_spells.py): at 800 req/s one request's
//! wait before its pre goes with the next request's at r = 0.70–0.89 (log),
//! and with its own wait before post at r = 0.17–0.41 under `independent`
//! and the default, in spells of a few ms — a long call holding the cores.
//! Drawn one by one from `host.pre_wake_ms` / `pre_wake_busy_ms` (and the
//! post tables) the simulator's waits are independent, so the slow parts of
//! one request seldom come together, and the short models' tails run short.
//!
//! **Rule.** A latent standard normal `z(t)` follows an Ornstein–Uhlenbeck
//! process with time constant `wake_spell_ms`: at a query `dt` after the
//! last, `z ← a·z + √(1 − a²)·n` with `a = exp(−dt / wake_spell_ms)` and `n`
//! a fresh standard normal draw. Each wake-up's quantile level is
//! `u = Φ(√s·z + √(1 − s)·e)`, `s` = `wake_spell_share` and `e` its own
//! standard normal draw, and its wait is the table's quantile at `u` (the
//! table chosen as without the key). So every wait keeps its table's
//! distribution, and two wake-ups `dt` apart share `s·exp(−dt / τ)` of their
//! normal scores' variance. The draws come from their own seeded stream:
//! without the key nothing is drawn from it and every figure is as before.

use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal};
use rand_pcg::Pcg64Mcg;

/// The latent spell process of the wake-ups; see the module docs.
#[derive(Debug, Clone)]
pub struct WakeSpell {
    /// The time constant, ns.
    tau: f64,
    /// √s and √(1 − s).
    shared: f64,
    own: f64,
    /// The latent score and when it was last moved, ns.
    z: f64,
    last: u64,
    rng: Pcg64Mcg,
}

impl WakeSpell {
    /// `ms` the time constant (> 0), `share` in (0, 1].
    pub fn new(ms: f64, share: f64, seed: u64) -> Self {
        let mut rng = Pcg64Mcg::seed_from_u64(seed ^ 0x5EE1_1A7E_0F5A_4E5D);
        let z = StandardNormal.sample(&mut rng);
        Self {
            tau: ms * 1e6,
            shared: share.sqrt(),
            own: (1.0 - share).max(0.0).sqrt(),
            z,
            last: 0,
            rng,
        }
    }

    /// The quantile level in (0, 1) of a wake-up at `now` (ns,
    /// non-decreasing).
    pub fn level(&mut self, now: u64) -> f64 {
        let dt = now.saturating_sub(self.last) as f64;
        let a = (-dt / self.tau).exp();
        let n: f64 = StandardNormal.sample(&mut self.rng);
        self.z = a * self.z + (1.0 - a * a).sqrt() * n;
        self.last = now.max(self.last);
        let e: f64 = StandardNormal.sample(&mut self.rng);
        normal_cdf(self.shared * self.z + self.own * e)
    }
}

/// Φ, the standard normal distribution function.
fn normal_cdf(x: f64) -> f64 {
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corr(a: &[f64], b: &[f64]) -> f64 {
        let n = a.len() as f64;
        let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
        let cov: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
        let va: f64 = a.iter().map(|x| (x - ma).powi(2)).sum();
        let vb: f64 = b.iter().map(|y| (y - mb).powi(2)).sum();
        cov / (va * vb).sqrt()
    }

    /// Levels `step_ns` apart, 20,000 of them.
    fn levels(ms: f64, share: f64, step_ns: u64) -> Vec<f64> {
        let mut s = WakeSpell::new(ms, share, 7);
        (0..20_000).map(|i| s.level(i * step_ns)).collect()
    }

    #[test]
    fn the_levels_are_uniform() {
        let u = levels(5.0, 0.8, 1_000_000);
        let mean = u.iter().sum::<f64>() / u.len() as f64;
        let below = u.iter().filter(|&&x| x < 0.1).count() as f64 / u.len() as f64;
        assert!((mean - 0.5).abs() < 0.03, "mean {mean}");
        assert!((below - 0.1).abs() < 0.03, "share below 0.1: {below}");
    }

    #[test]
    fn neighbours_go_together_within_a_spell_and_not_across_many() {
        // 1 ms apart with a 5 ms time constant: shared 0.8 * exp(-0.2) of the variance
        let near = levels(5.0, 0.8, 1_000_000);
        let r_near = corr(&near[..near.len() - 1], &near[1..]);
        assert!(r_near > 0.5, "neighbours 1 ms apart: r {r_near}");
        // 50 ms apart: exp(-10), nothing shared
        let far = levels(5.0, 0.8, 50_000_000);
        let r_far = corr(&far[..far.len() - 1], &far[1..]);
        assert!(r_far.abs() < 0.05, "50 ms apart: r {r_far}");
    }

    #[test]
    fn a_smaller_share_ties_neighbours_less() {
        let strong = levels(5.0, 0.9, 1_000_000);
        let weak = levels(5.0, 0.2, 1_000_000);
        let r = |u: &[f64]| corr(&u[..u.len() - 1], &u[1..]);
        assert!(
            r(&strong) > r(&weak) + 0.3,
            "{} vs {}",
            r(&strong),
            r(&weak)
        );
    }
}
