//! `fair`: a bursting model yields while others wait, nothing changes without
//! contention, and a model that is ahead still gets its turn.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use super::test_clock::{advance, Running};
use super::*;

const MS: Nanos = 1_000_000;

/// A job for [`simulate`]: arrival, model, cost (also its exact run time),
/// optional target.
#[derive(Debug, Clone, Copy)]
struct Arrival {
    at: Nanos,
    model: ModelId,
    cost: Nanos,
    target: Option<Nanos>,
}

/// When each job (by index into `arrivals`) started, and on which device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Start {
    at: Nanos,
    device: DeviceId,
}

/// Runs `arrivals` (sorted by time) through a scheduler on `devices` devices
/// of capacity 1; every job runs for exactly its cost. At each instant,
/// completions are handled first, then arrivals, then one dispatch, after
/// which no device may be free while a job waits (work conservation).
fn simulate(policy: &str, devices: usize, arrivals: &[Arrival]) -> Vec<Option<Start>> {
    let mut s = Scheduler::new(
        policy.parse().unwrap(),
        &vec![DeviceSpec::default(); devices],
    )
    .unwrap();
    let all = s.all_devices();
    let mut starts = vec![None; arrivals.len()];
    let mut running = Running::new();
    let mut out = Vec::new();
    let mut next = 0;
    while let Some(now) = advance(
        &mut s,
        &mut running,
        arrivals.get(next).map(|a| a.at),
        |_| {},
    ) {
        while next < arrivals.len() && arrivals[next].at == now {
            let a = arrivals[next];
            let mut job = Job::new(next as JobId, a.model, a.cost, a.at, all);
            job.target = a.target;
            s.submit(job).unwrap();
            next += 1;
        }
        out.clear();
        s.dispatch(now, &mut out);
        for d in &out {
            let Decision::Run { job, device } = *d else {
                panic!("no deadlines here")
            };
            starts[job.id as usize] = Some(Start { at: now, device });
            running.push((now + job.cost, job.id));
        }
        assert!(
            s.queued() == 0 || s.free_devices().is_empty(),
            "{policy}: a device idles at {now} while {} jobs wait",
            s.queued()
        );
    }
    starts
}

fn waits(arrivals: &[Arrival], starts: &[Option<Start>], model: ModelId) -> Vec<Nanos> {
    arrivals
        .iter()
        .zip(starts)
        .filter(|(a, _)| a.model == model)
        .map(|(a, s)| s.expect("every job runs").at - a.at)
        .collect()
}

/// Two devices. Model 1 bursts: 80 jobs of 10 ms at t = 0, SLO 150 ms. Model 0
/// sends a 5 ms job every 7 ms from t = 3 ms, SLO 150 ms (a third of one
/// device). Under `sjf` (α = 0.5, slack 40 ms) the burst ages and turns
/// urgent, and model 0 waits behind it. Under `fair` model 1 keeps the
/// devices only until it is `threshold` ahead of its share (20 ms at the
/// default: two rounds of its jobs finishing while model 0 waits), so at the
/// onset model 0 waits at most `threshold` plus one of model 1's jobs; from
/// then on model 1 stays ahead, every device that frees while model 0 waits
/// goes to model 0, and model 0 waits at most for one of model 1's running
/// jobs to end.
#[test]
fn a_bursting_model_yields_to_the_others() {
    let mut arrivals: Vec<Arrival> = (0..80)
        .map(|_| Arrival {
            at: 0,
            model: 1,
            cost: 10 * MS,
            target: Some(150 * MS),
        })
        .collect();
    arrivals.extend((0..60).map(|k| {
        let at = 3 * MS + k * 7 * MS;
        Arrival {
            at,
            model: 0,
            cost: 5 * MS,
            target: Some(at + 150 * MS),
        }
    }));
    arrivals.sort_by_key(|a| a.at);
    // (policy, most model 0 may wait in ms: arriving in the first 100 ms,
    // arriving after)
    let cases = [
        ("sjf:alpha=0.5,slack=40", None),
        ("fair", Some((30, 10))),
        ("fair:alpha=0.5,slack=40", Some((30, 10))),
        ("fair:alpha=4,slack=80", Some((30, 10))),
        ("fair:alpha=0.5,slack=40,threshold=0", Some((10, 10))),
        ("fair:alpha=0,slack=off", Some((30, 10))),
    ];
    for (policy, bounds) in cases {
        let starts = simulate(policy, 2, &arrivals);
        let waits = waits(&arrivals, &starts, 0);
        let (onset, steady) = waits.split_at(14); // arrivals before 100 ms
        let worst = |w: &[Nanos]| w.iter().max().copied().unwrap() / MS;
        match bounds {
            // sjf: behind the burst for most of its length.
            None => assert!(worst(steady) >= 100, "{policy}: {waits:?}"),
            Some((first, then)) => {
                assert!(worst(onset) <= first, "{policy}: {waits:?}");
                assert!(worst(steady) <= then, "{policy}: {waits:?}");
            }
        }
    }
}

#[test]
fn fair_is_sjf_without_contention() {
    let mut rng = Pcg64Mcg::seed_from_u64(11);
    // Random work: costs 1-30 ms, targets 150 ms after arrival.
    let mut random = |models: u32, gap_ms: u64, n: usize| -> Vec<Arrival> {
        let mut at = 0;
        (0..n)
            .map(|_| {
                at += rng.random_range(0..gap_ms * MS);
                Arrival {
                    at,
                    model: rng.random_range(0..models),
                    cost: rng.random_range(MS..30 * MS),
                    target: Some(at + 150 * MS),
                }
            })
            .collect()
    };
    // (fair, sjf, workload): identical starts expected.
    let cases = [
        // One model is never charged: it is credited all it runs.
        ("fair", "sjf", random(1, 20, 3_000), "one model, overloaded"),
        (
            "fair:alpha=0,slack=off",
            "sjf:alpha=0,slack=off",
            random(1, 20, 3_000),
            "one model, pure shortest first",
        ),
        // Arrivals far apart: no job ever waits, so no model gets ahead.
        (
            "fair",
            "sjf",
            random(4, 200, 1_000),
            "four models, no queue",
        ),
        // Several models under load, but a threshold no deficit reaches.
        (
            "fair:threshold=1000000,cap=2000000",
            "sjf",
            random(4, 20, 3_000),
            "four models, threshold out of reach",
        ),
    ];
    for (fair, sjf, arrivals, why) in cases {
        let a = simulate(fair, 2, &arrivals);
        let b = simulate(sjf, 2, &arrivals);
        assert_eq!(a, b, "{why}");
    }
}

/// One device. Model 1's job A (cost `a`) runs from t = 0; model 0 sends a
/// 10 ms job every 10 ms from t = 1 ms (the device is never idle again); model
/// 1's job B (10 ms) arrives at t = 2 ms. When A ends, model 1 was credited
/// `a/2` and debited `a`: deficit `−min(a/2, cap)`. If that is below
/// `−threshold`, B yields until model 0's completions (5 ms credit each) lift
/// it back to `−threshold` — at most `M·(cap − threshold)` = `2·(cap −
/// threshold)` of model 0's device time — and then B, the oldest, runs.
#[test]
fn a_model_ahead_of_its_share_still_gets_its_turn() {
    let mut arrivals = vec![
        Arrival {
            at: 0,
            model: 1,
            cost: 0,
            target: None,
        },
        Arrival {
            at: 2 * MS,
            model: 1,
            cost: 10 * MS,
            target: None,
        },
    ];
    arrivals.extend((0..400).map(|k| Arrival {
        at: MS + k * 10 * MS,
        model: 0,
        cost: 10 * MS,
        target: None,
    }));
    arrivals.sort_by_key(|a| a.at);
    let b = arrivals
        .iter()
        .position(|a| a.model == 1 && a.at > 0)
        .unwrap();
    // (policy, A's cost ms, threshold ms, cap ms, B's start ms)
    let cases = [
        // sjf: B (key 10 + 1) goes after the short that came at 1 (10.5).
        ("sjf:alpha=0.5,slack=40", 100, 0, 0, 110),
        // Deficit -50 < -20: 6 shorts lift it to -20.
        ("fair", 100, 20, 200, 160),
        // Deficit -50 is not past -60: B is not held back.
        ("fair:threshold=60", 100, 60, 200, 110),
        // Clamped at -200: 36 shorts, exactly the bound 2·(200 − 20).
        ("fair", 1_000, 20, 200, 1_360),
        ("fair:threshold=0,cap=50", 1_000, 0, 50, 1_100),
    ];
    for (policy, a, threshold, cap, expect) in cases {
        arrivals[0].cost = a * MS;
        let starts = simulate(policy, 1, &arrivals);
        let start = starts[b].unwrap().at / MS;
        assert_eq!(start, expect, "{policy}, A = {a} ms");
        if policy.starts_with("fair") {
            let bound = a + 2 * (cap - threshold) + 10;
            assert!(start <= bound, "{policy}: {start} > bound {bound}");
        }
    }
}

#[test]
fn deficits_follow_measured_run_times_and_survive_a_resubmission() {
    // Job 1 (model 7, estimate 1 ms) holds the device for 30 ms while models
    // 7 and 8 both have work: 7 is charged 30 and credited 15, 8 credited 15.
    let mut s = Scheduler::new(Policy::fair(), &[DeviceSpec::default()]).unwrap();
    let all = s.all_devices();
    for (id, model) in [(1, 7), (2, 8), (3, 7)] {
        s.submit(Job::new(id, model, MS, 0, all)).unwrap();
    }
    let mut out = Vec::new();
    s.dispatch(0, &mut out);
    assert!(matches!(out[..], [Decision::Run { job, .. }] if job.id == 1));
    s.complete(1, 30 * MS).unwrap();
    assert_eq!(s.deficit(7), Some(-15 * MS as i64));
    assert_eq!(s.deficit(8), Some(15 * MS as i64));
    // A driver withdraws model 7's only queued job and resubmits it (its
    // batch changed): model 7 never looked idle at a dispatch, so it keeps
    // its deficit — and is ahead of its share (−15 < −threshold 10).
    let fair10: Policy = "fair:threshold=10".parse().unwrap();
    let mut s2 = Scheduler::new(fair10, &[DeviceSpec::default()]).unwrap();
    for (id, model) in [(1, 7), (2, 8), (3, 7)] {
        s2.submit(Job::new(id, model, MS, 0, all)).unwrap();
    }
    out.clear();
    s2.dispatch(0, &mut out);
    s2.complete(1, 30 * MS).unwrap();
    s2.cancel(3).unwrap();
    s2.submit(Job::new(4, 7, MS, 0, all)).unwrap();
    out.clear();
    s2.dispatch(30 * MS, &mut out);
    assert!(
        matches!(out[..], [Decision::Run { job, .. }] if job.id == 2),
        "7 yields"
    );
    assert_eq!(s2.deficit(7), Some(-15 * MS as i64));
    // Its only job starts: running, still active, deficit kept.
    s2.complete(2, 40 * MS).unwrap();
    out.clear();
    s2.dispatch(40 * MS, &mut out);
    assert!(matches!(out[..], [Decision::Run { job, .. }] if job.id == 4));
    assert_eq!(s2.deficit(7), Some(-10 * MS as i64));
    // Nothing left of model 7 at the next dispatch: forgotten.
    s2.complete(4, 41 * MS).unwrap();
    out.clear();
    s2.dispatch(41 * MS, &mut out);
    assert_eq!(s2.deficit(7), Some(0));
    let sjf = Scheduler::new(Policy::sjf(), &[DeviceSpec::default()]).unwrap();
    assert_eq!(sjf.deficit(7), None);
}
