//! Cost estimates per (model, batch size), learned online.
//!
//! The rule for `estimate(model, b)`, first that applies:
//! 1. batch size `b` has been measured: the exponentially weighted moving
//!    average (EWMA, weight `ewma_weight` on the newest run) of its run times;
//! 2. two or more sizes measured: the least-squares line `cost = u + v·b`
//!    through the sizes' averages (each weighted by its run count, capped at
//!    `fit_weight_cap`), provided its slope is >= 0;
//! 3. one size `s` measured (or a negative slope): that size's average scaled
//!    by the prior's ratio `prior(b) / prior(s)`, or by `b / s` with no prior;
//! 4. nothing measured: the prior `fixed + per_item·b` from config, or
//!    `default_cost` for a model without one.
//!
//! Estimates are at least 1 ns, so no job is ever free.

use rustc_hash::FxHashMap;

use crate::{round_nanos, ModelId, Nanos};

/// A configured cost curve: `fixed + per_item·batch` nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prior {
    pub fixed: f64,
    pub per_item: f64,
}

impl Prior {
    fn at(&self, batch: u32) -> f64 {
        self.fixed + self.per_item * f64::from(batch)
    }
}

/// Estimator settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostConfig {
    /// Weight of the newest measurement in the EWMA, in (0, 1].
    pub ewma_weight: f64,
    /// Estimate for a model with neither measurements nor prior.
    pub default_cost: Nanos,
    /// Largest weight one batch size gets in the fit.
    pub fit_weight_cap: f64,
}

impl Default for CostConfig {
    fn default() -> Self {
        Self {
            ewma_weight: 0.1,
            default_cost: 1_000_000,
            fit_weight_cap: 20.0,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Average {
    mean: f64,
    runs: u64,
}

#[derive(Debug, Default)]
struct ModelCosts {
    prior: Option<Prior>,
    /// Measured batch sizes, sorted (a model sees few distinct sizes, so a
    /// short vector beats a tree).
    sizes: Vec<(u32, Average)>,
}

impl ModelCosts {
    fn get(&self, batch: u32) -> Option<&Average> {
        self.sizes.iter().find(|(b, _)| *b == batch).map(|(_, a)| a)
    }
}

/// Models with an id below this are kept in a vector indexed by id (callers
/// number their models from 0: no hashing per estimate); the rest in a map.
const DENSE_MODELS: usize = 1024;

/// Online run-time estimates. See the module docs for the rule.
#[derive(Debug, Default)]
pub struct CostModel {
    config: CostConfig,
    /// Models `0..DENSE_MODELS` seen so far, by id (an id never set holds
    /// the default entry: no prior, nothing measured — estimated alike).
    dense: Vec<ModelCosts>,
    sparse: FxHashMap<ModelId, ModelCosts>,
}

impl CostModel {
    /// An estimator with `config`.
    pub fn new(config: CostConfig) -> Self {
        Self {
            config,
            dense: Vec::new(),
            sparse: FxHashMap::default(),
        }
    }

    fn costs(&self, model: ModelId) -> Option<&ModelCosts> {
        match self.dense.get(model as usize) {
            Some(m) => Some(m),
            None => self.sparse.get(&model),
        }
    }

    fn costs_mut(&mut self, model: ModelId) -> &mut ModelCosts {
        let ix = model as usize;
        if ix >= DENSE_MODELS {
            return self.sparse.entry(model).or_default();
        }
        if ix >= self.dense.len() {
            self.dense.resize_with(ix + 1, ModelCosts::default);
        }
        &mut self.dense[ix]
    }

    /// Sets the configured prior for `model`.
    pub fn set_prior(&mut self, model: ModelId, prior: Prior) {
        self.costs_mut(model).prior = Some(prior);
    }

    /// Records a measured run time of a batch of `batch` items.
    pub fn observe(&mut self, model: ModelId, batch: u32, run: Nanos) {
        let w = self.config.ewma_weight;
        let sizes = &mut self.costs_mut(model).sizes;
        let x = run as f64;
        match sizes.binary_search_by_key(&batch, |(b, _)| *b) {
            Ok(i) => {
                let a = &mut sizes[i].1;
                a.mean += w * (x - a.mean);
                a.runs += 1;
            }
            Err(i) => sizes.insert(i, (batch, Average { mean: x, runs: 1 })),
        }
    }

    /// Run-time estimate for a batch of `batch` items of `model`.
    pub fn estimate(&self, model: ModelId, batch: u32) -> Nanos {
        let est = match self.costs(model) {
            None => self.config.default_cost as f64,
            Some(m) => self.estimate_in(m, batch),
        };
        round_nanos(est).max(1)
    }

    fn estimate_in(&self, m: &ModelCosts, batch: u32) -> f64 {
        if let Some(a) = m.get(batch) {
            return a.mean;
        }
        if m.sizes.len() >= 2 {
            if let Some(fit) = self.fit(m, batch) {
                return fit;
            }
        }
        // Nearest measured size, scaled.
        if let Some(&(s, a)) = m.sizes.iter().min_by_key(|(s, _)| s.abs_diff(batch)) {
            let ratio = match m.prior {
                Some(p) if p.at(s) > 0.0 => p.at(batch) / p.at(s),
                _ => f64::from(batch) / f64::from(s),
            };
            return a.mean * ratio;
        }
        match m.prior {
            Some(p) => p.at(batch),
            None => self.config.default_cost as f64,
        }
    }

    /// Weighted least squares `u + v·b` over measured sizes; `None` if the
    /// slope is negative or the sizes are degenerate.
    fn fit(&self, m: &ModelCosts, batch: u32) -> Option<f64> {
        let (mut sw, mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for &(b, a) in &m.sizes {
            let w = (a.runs as f64).min(self.config.fit_weight_cap);
            let x = f64::from(b);
            sw += w;
            sx += w * x;
            sy += w * a.mean;
            sxx += w * x * x;
            sxy += w * x * a.mean;
        }
        let den = sw * sxx - sx * sx;
        if den.abs() < f64::EPSILON {
            return None;
        }
        let v = (sw * sxy - sx * sy) / den;
        let u = (sy - v * sx) / sw;
        (v >= 0.0).then(|| u + v * f64::from(batch))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_table() {
        let prior = Prior {
            fixed: 1000.0,
            per_item: 100.0,
        };
        let mut m = CostModel::new(CostConfig::default());
        // 4. nothing measured: default, or prior.
        assert_eq!(m.estimate(7, 4), 1_000_000);
        m.set_prior(1, prior);
        assert_eq!(m.estimate(1, 10), 2000);
        // 1. the first measurement is the estimate; later ones move it by the weight.
        m.observe(1, 4, 5000);
        assert_eq!(m.estimate(1, 4), 5000);
        m.observe(1, 4, 6000);
        assert_eq!(m.estimate(1, 4), 5100);
        // 3. one size measured: scaled by the prior's ratio (2000 / 1400).
        assert_eq!(
            m.estimate(1, 10),
            (5100.0 * 2000.0 / 1400.0_f64).round() as u64
        );
        // 2. two sizes: the line through them.
        m.observe(1, 8, 9100);
        assert_eq!(m.estimate(1, 6), 7100);
        // 3. without a prior, one size scales linearly.
        m.observe(2, 2, 400);
        assert_eq!(m.estimate(2, 6), 1200);
    }

    #[test]
    fn negative_slope_falls_back_to_nearest_size() {
        let mut m = CostModel::default();
        m.observe(3, 1, 900);
        m.observe(3, 8, 500);
        // No prior: nearest measured size (8) scaled by 9/8.
        assert_eq!(m.estimate(3, 9), 563);
    }

    #[test]
    fn dense_and_sparse_ids_estimate_alike() {
        // (model id) on both sides of DENSE_MODELS, and an unset id below a set one.
        let prior = Prior {
            fixed: 1000.0,
            per_item: 100.0,
        };
        let mut m = CostModel::default();
        let ids = [
            0,
            5,
            DENSE_MODELS as ModelId - 1,
            DENSE_MODELS as ModelId,
            u32::MAX,
        ];
        for id in ids {
            m.set_prior(id, prior);
            m.observe(id, 4, 5000);
        }
        for id in ids {
            assert_eq!(m.estimate(id, 4), 5000, "id {id}");
            assert_eq!(m.estimate(id, 8), m.estimate(0, 8), "id {id}");
        }
        // Id 3 was never set (but lies below set ids): the default cost.
        assert_eq!(m.estimate(3, 4), CostConfig::default().default_cost);
        assert_eq!(m.estimate(7_000, 4), CostConfig::default().default_cost);
    }

    #[test]
    fn estimates_are_never_zero() {
        let mut m = CostModel::default();
        m.observe(1, 1, 0);
        assert_eq!(m.estimate(1, 1), 1);
    }
}
