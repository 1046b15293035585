//! Capacity at SLO: the highest load at which at least 99 % of requests finish
//! within their SLO.
//!
//! Rule: loads are searched on a grid of 0.01 in `[0.01, 1.00]`, or in
//! `[0.01, 10.00]` when a service batches (load counts batches of one, so a
//! batching host can carry more than 1). A load
//! *passes* when the attainment pooled over all seeds (requests within SLO ÷
//! requests, summed across seeds) is at least [`TARGET`] — overall for
//! `overall`, and for every service separately for `every_service`. Bisection
//! assumes attainment falls as load rises and returns the highest passing grid
//! load, or 0 if even 0.01 fails. `every_service` never exceeds `overall` (each
//! service passing implies the pool passes), so its search starts below it.

use rayon::prelude::*;
use serde::Serialize;

use crate::config::{Mode, Scenario, SimError};
use crate::engine::simulate_valid;
use crate::stats::PointResult;

/// The attainment a load must reach.
pub const TARGET: f64 = 0.99;

/// Capacity at SLO of one mode.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Capacity {
    pub overall: f64,
    pub every_service: f64,
}

/// Pooled attainment over seeds: (overall, worst service).
fn attainment(runs: &[PointResult]) -> (f64, f64) {
    let pooled = |get: &dyn Fn(&PointResult) -> Option<(u64, f64)>| {
        let (n, ok) = runs
            .iter()
            .filter_map(get)
            .fold((0u64, 0.0), |(n, ok), (rn, ra)| {
                (n + rn, ok + ra * rn as f64)
            });
        if n == 0 {
            1.0
        } else {
            ok / n as f64
        }
    };
    let overall = pooled(&|r| Some((r.requests, r.slo_attainment)));
    let worst = runs[0]
        .services
        .keys()
        .map(|name| pooled(&|r| r.services.get(name).map(|s| (s.requests, s.slo_attainment))))
        .fold(1.0, f64::min);
    (overall, worst)
}

/// Highest grid step in `1..=hi` whose load passes `passes`, or 0.
fn bisect(hi: u32, mut passes: impl FnMut(u32) -> Result<bool, SimError>) -> Result<u32, SimError> {
    if hi == 0 || !passes(1)? {
        return Ok(0);
    }
    if passes(hi)? {
        return Ok(hi);
    }
    let (mut lo, mut hi) = (1, hi);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if passes(mid)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

/// Capacity at SLO of `mode` on `scenario`, pooling `seeds`; each run
/// simulates `requests` arrivals. Seeds run in parallel.
pub fn capacity(
    scenario: &Scenario,
    mode: &Mode,
    seeds: &[u64],
    requests: u64,
) -> Result<Capacity, SimError> {
    scenario.validate()?;
    if seeds.is_empty() {
        return Err(SimError::BadArgument {
            key: "seeds",
            value: "[]".into(),
            allowed: "must name at least one seed",
        });
    }
    let batching = scenario
        .services
        .iter()
        .any(|s| s.batching.max_batch_size > 1);
    let top: u32 = if batching { 1000 } else { 100 };
    let mut cache: Vec<Option<(f64, f64)>> = vec![None; top as usize + 1];
    let mut eval = |step: u32| -> Result<(f64, f64), SimError> {
        if let Some(a) = cache[step as usize] {
            return Ok(a);
        }
        let load = f64::from(step) / 100.0;
        let runs = seeds
            .par_iter()
            .map(|&seed| simulate_valid(scenario, mode, load, seed, requests))
            .collect::<Result<Vec<_>, _>>()?;
        let a = attainment(&runs);
        cache[step as usize] = Some(a);
        Ok(a)
    };
    let overall = bisect(top, |s| Ok(eval(s)?.0 >= TARGET))?;
    let every = bisect(overall, |s| Ok(eval(s)?.1 >= TARGET))?;
    Ok(Capacity {
        overall: f64::from(overall) / 100.0,
        every_service: f64::from(every) / 100.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bisection_finds_the_last_passing_step() {
        for (threshold, expect) in [(0, 0), (1, 1), (37, 37), (99, 99), (100, 100), (150, 100)] {
            let mut calls = 0;
            let got = bisect(100, |s| {
                calls += 1;
                Ok(s <= threshold)
            })
            .unwrap();
            assert_eq!(got, expect, "threshold {threshold}");
            assert!(calls <= 9, "{calls} evaluations");
        }
    }
}
