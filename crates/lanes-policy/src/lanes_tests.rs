//! `lanes`: a short job overlaps a long one in the device's fast slot, long
//! jobs never do, one fast job per device (`width` of them), beside a long job
//! only (any job with `beside=any`), `sjf` without short jobs, and work
//! conservation over both kinds of slot.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use super::test_clock::{advance, Running};
use super::*;

const MS: Nanos = 1_000_000;

fn scheduler(policy: &str, devices: usize) -> Scheduler {
    Scheduler::new(
        policy.parse().unwrap(),
        &vec![DeviceSpec::default(); devices],
    )
    .unwrap()
}

fn runs(out: &[Decision]) -> Vec<(JobId, DeviceId)> {
    out.iter()
        .filter_map(|d| match d {
            Decision::Run { job, device } => Some((job.id, *device)),
            Decision::Drop { .. } => None,
        })
        .collect()
}

/// One device runs job 1 (`running` ms); jobs 2.. (`queued` ms each) arrive
/// at 1 ms. Returns the jobs started at 1 ms.
fn beside(policy: &str, running: u64, queued: &[u64]) -> Vec<JobId> {
    let mut s = scheduler(policy, 1);
    let all = s.all_devices();
    let mut out = Vec::new();
    s.submit(Job::new(1, 0, running * MS, 0, all)).unwrap();
    s.dispatch(0, &mut out);
    assert_eq!(runs(&out), [(1, 0)]);
    for (i, &cost) in queued.iter().enumerate() {
        s.submit(Job::new(2 + i as JobId, 1, cost * MS, MS, all))
            .unwrap();
    }
    out.clear();
    s.dispatch(MS, &mut out);
    runs(&out).into_iter().map(|(id, _)| id).collect()
}

#[test]
fn a_short_job_takes_the_fast_slot_beside_a_long_one() {
    // (policy, running job ms, queued jobs ms, started beside it)
    let cases: &[(&str, u64, &[u64], &[JobId])] = &[
        // The default threshold is 20 ms: 5 and 20 are short, 90 is long.
        ("lanes", 90, &[5], &[2]),
        ("lanes", 90, &[20], &[2]),
        ("lanes:fast=10", 90, &[5], &[2]),
        // Long jobs never take the fast slot.
        ("lanes", 90, &[21], &[]),
        ("lanes", 90, &[45], &[]),
        ("lanes:fast=10", 90, &[20], &[]),
        // The fast slot opens beside a long job only: a short job running
        // ends soon anyway.
        ("lanes", 20, &[5], &[]),
        ("lanes:fast=10", 20, &[5], &[2]),
        // One fast job per device: the best short job (aging order) goes.
        ("lanes", 90, &[8, 5, 12], &[3]),
        ("lanes:alpha=0,slack=off", 90, &[45, 8, 5], &[4]),
        // `width`: that many fast jobs per device.
        ("lanes:width=2", 90, &[8, 5, 12], &[3, 2]),
        ("lanes:width=3", 90, &[8, 5, 12, 45], &[3, 2, 4]),
        ("lanes:width=2", 90, &[45], &[]),
        // `beside=any`: beside a short job too.
        ("lanes:fast=10,beside=any", 9, &[5, 8], &[2]),
        ("lanes:fast=10,beside=any,width=2", 9, &[5, 8], &[2, 3]),
        ("lanes:fast=10,beside=any", 9, &[20], &[]),
        ("lanes:beside=any", 90, &[5], &[2]),
        // `fair` with `fast` has the same fast lane.
        ("fair:fast=20", 90, &[5], &[2]),
        ("fair:fast=10,beside=any,width=2", 9, &[5, 8, 3], &[4, 2]),
        ("fair:fast=20", 90, &[45], &[]),
        // Other policies have no fast slot.
        ("sjf", 90, &[5], &[]),
        ("fair", 90, &[5], &[]),
        ("fifo", 90, &[5], &[]),
    ];
    for &(policy, running, queued, expect) in cases {
        assert_eq!(
            beside(policy, running, queued),
            expect,
            "{policy}: {queued:?} beside {running}"
        );
    }
}

#[test]
fn the_fast_slot_holds_one_job_and_reopens_when_it_ends() {
    let mut s = scheduler("lanes", 1);
    let all = s.all_devices();
    let mut out = Vec::new();
    s.submit(Job::new(1, 0, 90 * MS, 0, all)).unwrap();
    s.dispatch(0, &mut out);
    for id in 2..6 {
        s.submit(Job::new(id, 1, 5 * MS, MS, all)).unwrap();
    }
    out.clear();
    s.dispatch(MS, &mut out);
    assert_eq!(runs(&out), [(2, 0)]);
    assert_eq!(s.running_on(0), 2);
    assert!(s.fast_running(0));
    assert!(s.fast_open().is_empty() && s.free_devices().is_empty());
    assert!(!s.has_room());
    // Nothing more starts while both slots are held.
    out.clear();
    s.dispatch(2 * MS, &mut out);
    assert!(out.is_empty());
    // The fast job ends: the next short job takes the fast slot.
    s.complete(2, 6 * MS).unwrap();
    assert_eq!(s.fast_open(), DeviceSet::only(0));
    out.clear();
    s.dispatch(6 * MS, &mut out);
    assert_eq!(runs(&out), [(3, 0)]);
    // The long job ends first: the fast job keeps its slot, the regular slot
    // takes the next job (short: it runs there, beside the fast one).
    s.complete(1, 9 * MS).unwrap();
    assert_eq!(s.free_devices(), DeviceSet::only(0));
    assert!(s.fast_running(0));
    out.clear();
    s.dispatch(9 * MS, &mut out);
    assert_eq!(runs(&out), [(4, 0)]);
    // A short job in the regular slot opens no fast slot.
    assert!(s.fast_open().is_empty());
    s.complete(3, 11 * MS).unwrap();
    assert!(s.fast_open().is_empty(), "no long job runs");
    out.clear();
    s.dispatch(11 * MS, &mut out);
    assert!(out.is_empty(), "job 5 waits for the regular slot");
    s.complete(4, 14 * MS).unwrap();
    out.clear();
    s.dispatch(14 * MS, &mut out);
    assert_eq!(runs(&out), [(5, 0)]);
    assert!(!s.fast_running(0));
}

#[test]
fn an_idle_device_goes_before_a_fast_slot() {
    let mut s = scheduler("lanes", 2);
    let all = s.all_devices();
    let mut out = Vec::new();
    s.submit(Job::new(1, 0, 90 * MS, 0, all)).unwrap();
    s.dispatch(0, &mut out);
    assert_eq!(runs(&out), [(1, 0)]);
    // Device 1 is idle: the short job takes its regular slot; the next short
    // job the fast slot of device 0 (device 1 runs a short job: no fast slot).
    s.submit(Job::new(2, 1, 5 * MS, MS, all)).unwrap();
    s.submit(Job::new(3, 1, 6 * MS, MS, all)).unwrap();
    s.submit(Job::new(4, 1, 7 * MS, MS, all)).unwrap();
    out.clear();
    s.dispatch(MS, &mut out);
    assert_eq!(runs(&out), [(2, 1), (3, 0)]);
    // Device 1's regular slot frees: job 4 takes it, in `sjf` order before
    // the long job 5 (keys 7 + 4·1 = 11 ms against 45 ms).
    s.complete(2, 6 * MS).unwrap();
    s.submit(Job::new(5, 2, 45 * MS, 0, all)).unwrap();
    s.submit(Job::new(6, 1, 5 * MS, 6 * MS, all)).unwrap();
    out.clear();
    s.dispatch(6 * MS, &mut out);
    assert_eq!(runs(&out), [(4, 1)]);
    // Every slot is held or closed (device 1 runs a short job): job 6 waits
    // until device 0's fast job ends, then takes the fast slot again.
    assert!(!s.has_room());
    s.complete(3, 7 * MS).unwrap();
    out.clear();
    s.dispatch(7 * MS, &mut out);
    assert_eq!(runs(&out), [(6, 0)]);
}

#[test]
fn capacity_two_opens_the_fast_slot_when_both_regular_slots_are_taken() {
    let mut s = Scheduler::new(Policy::lanes(), &[DeviceSpec { capacity: 2 }]).unwrap();
    let all = s.all_devices();
    let mut out = Vec::new();
    s.submit(Job::new(1, 0, 90 * MS, 0, all)).unwrap();
    s.submit(Job::new(2, 0, 10 * MS, 0, all)).unwrap();
    s.submit(Job::new(3, 1, 5 * MS, 0, all)).unwrap();
    s.submit(Job::new(4, 1, 6 * MS, 0, all)).unwrap();
    s.dispatch(0, &mut out);
    // Regular slots in aging order (3, 4), then the fast slot is not open:
    // no long job runs. Then nothing.
    assert_eq!(runs(&out), [(3, 0), (4, 0)]);
    s.complete(3, 5 * MS).unwrap();
    out.clear();
    s.dispatch(5 * MS, &mut out);
    assert_eq!(runs(&out), [(2, 0)]);
    s.complete(4, 6 * MS).unwrap();
    s.submit(Job::new(5, 1, 5 * MS, 6 * MS, all)).unwrap();
    out.clear();
    s.dispatch(6 * MS, &mut out);
    // Job 2 (10 ms) goes before job 1 (90 ms) in a regular slot... job 5 is
    // shorter still but arrived later: key 5 + 4·6 = 29 ms against 90.
    assert_eq!(runs(&out), [(5, 0)]);
    s.complete(5, 11 * MS).unwrap();
    out.clear();
    s.dispatch(11 * MS, &mut out);
    assert_eq!(runs(&out), [(1, 0)]);
    // Both regular slots taken, one by a long job: the fast slot opens.
    assert_eq!(s.fast_open(), DeviceSet::only(0));
    s.submit(Job::new(6, 1, 5 * MS, 12 * MS, all)).unwrap();
    s.submit(Job::new(7, 1, 5 * MS, 12 * MS, all)).unwrap();
    out.clear();
    s.dispatch(12 * MS, &mut out);
    assert_eq!(runs(&out), [(6, 0)]);
    assert_eq!(s.running_on(0), 3);
}

/// A job for [`simulate`]: arrival, model, cost (also its exact run time),
/// optional target, eligible devices.
#[derive(Debug, Clone, Copy)]
struct Arrival {
    at: Nanos,
    model: ModelId,
    cost: Nanos,
    target: Option<Nanos>,
    devices: DeviceSet,
}

/// Every start: (time, job index, device, fast slot).
type Starts = Vec<(Nanos, JobId, DeviceId, bool)>;

/// Runs `arrivals` (sorted) on `devices` devices of capacity 1; every job
/// runs for exactly its cost. The harness keeps its own picture of each
/// device (the regular job and its cost, the fast job) and after each
/// dispatch checks the slot rules against it: a start on a device whose
/// regular slot is held is a fast start, which must be short, beside a long
/// job (any job with `beside=any`), with fewer than `width` fast jobs
/// running there; and no queued job could start (work conservation over
/// regular and fast slots).
fn simulate(policy: &str, devices: usize, arrivals: &[Arrival]) -> Starts {
    let p: Policy = policy.parse().unwrap();
    let fast = p.fast_lane();
    let shape = p.fast_shape();
    let any = shape.beside == crate::Beside::Any;
    let width = shape.width as usize;
    let mut s = scheduler(policy, devices);
    let mut starts = Vec::new();
    // Per device: the regular job (id, cost), the fast jobs (ids).
    let mut regular: Vec<Option<(JobId, Nanos)>> = vec![None; devices];
    let mut in_fast: Vec<Vec<JobId>> = vec![Vec::new(); devices];
    let mut running = Running::new();
    let mut queued: Vec<Job> = Vec::new();
    let mut out = Vec::new();
    let mut next = 0;
    loop {
        let next_arrival = arrivals.get(next).map(|a| a.at);
        let Some(now) = advance(&mut s, &mut running, next_arrival, |id| {
            for d in 0..devices {
                if regular[d].is_some_and(|r| r.0 == id) {
                    regular[d] = None;
                }
                in_fast[d].retain(|&f| f != id);
            }
        }) else {
            break;
        };
        while next < arrivals.len() && arrivals[next].at == now {
            let a = arrivals[next];
            let mut job = Job::new(next as JobId, a.model, a.cost, a.at, a.devices);
            job.target = a.target;
            s.submit(job).unwrap();
            queued.push(job);
            next += 1;
        }
        out.clear();
        s.dispatch(now, &mut out);
        for d in &out {
            let Decision::Run { job, device } = *d else {
                panic!("no deadlines here")
            };
            assert!(job.devices.contains(device), "{policy}: eligible device");
            let lane_fast = match regular[device] {
                None => {
                    regular[device] = Some((job.id, job.cost));
                    false
                }
                Some((_, long)) => {
                    let f = fast.expect("{policy}: only lanes overlaps jobs");
                    assert!(job.cost <= f, "{policy}: a long job in the fast slot");
                    assert!(long > f || any, "{policy}: a fast job beside a short one");
                    assert!(
                        in_fast[device].len() < width,
                        "{policy}: too many fast jobs"
                    );
                    in_fast[device].push(job.id);
                    true
                }
            };
            starts.push((now, job.id, device, lane_fast));
            running.push((now + job.cost, job.id));
            queued.retain(|q| q.id != job.id);
        }
        for device in 0..devices {
            assert_eq!(
                s.fast_running(device),
                !in_fast[device].is_empty(),
                "{policy}"
            );
            let expect = u32::from(regular[device].is_some()) + in_fast[device].len() as u32;
            assert_eq!(s.running_on(device), expect, "{policy}: device {device}");
        }
        // No queued job may start anywhere: eligible devices have their
        // regular slot held and, for a short job, no open fast slot.
        for q in &queued {
            for device in q.devices.iter() {
                let Some((_, cost)) = regular[device] else {
                    panic!(
                        "{policy}: job {} waits at {now} while device {device} is free",
                        q.id
                    );
                };
                if let Some(f) = fast {
                    assert!(
                        q.cost > f || (cost <= f && !any) || in_fast[device].len() >= width,
                        "{policy}: short job {} waits at {now} beside device {device}'s open fast slot",
                        q.id
                    );
                }
            }
        }
        assert_eq!(s.queued(), queued.len(), "{policy}");
    }
    starts
}

fn random_arrivals(seed: u64, n: usize, costs: &[Nanos], devices: usize) -> Vec<Arrival> {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut at = 0;
    (0..n)
        .map(|_| {
            at += rng.random_range(0..12 * MS);
            let model = rng.random_range(0..costs.len()) as ModelId;
            let cost = costs[model as usize] / 2 + rng.random_range(0..costs[model as usize]);
            let mask = rng.random_range(1..(1u64 << devices));
            Arrival {
                at,
                model,
                cost,
                target: rng.random_bool(0.7).then_some(at + 150 * MS),
                devices: DeviceSet(mask),
            }
        })
        .collect()
}

#[test]
fn without_short_jobs_lanes_is_sjf() {
    // (and `fair:fast=MS` is `fair`)
    // Every job costs more than the threshold: never short.
    for seed in 1..=4 {
        let arrivals = random_arrivals(seed, 600, &[45 * MS, 60 * MS, 90 * MS], 3);
        assert!(arrivals.iter().all(|a| a.cost > 20 * MS));
        for (lanes, sjf) in [
            ("lanes", "sjf"),
            ("lanes:alpha=0,slack=off,fast=10", "sjf:alpha=0,slack=off"),
            ("lanes:alpha=1,slack=40,fast=14", "sjf:alpha=1,slack=40"),
            ("fair:fast=20", "fair"),
        ] {
            let a = simulate(lanes, 3, &arrivals);
            let b = simulate(sjf, 3, &arrivals);
            assert_eq!(a, b, "seed {seed}: {lanes} vs {sjf}");
            assert!(a.iter().all(|st| !st.3), "{lanes}: no fast job");
        }
    }
}

#[test]
fn work_conservation_holds_over_both_slots() {
    for seed in 1..=4 {
        // The OCR mix: short CNN batches, long RNN batches.
        let arrivals = random_arrivals(seed, 800, &[8 * MS, 60 * MS, 30 * MS], 2);
        for policy in [
            "lanes",
            "lanes:fast=10",
            "lanes:alpha=0,slack=off",
            "fair:fast=20",
            "lanes:width=2",
            "lanes:fast=10,beside=any",
            "fair:fast=10,width=3,beside=any",
            "lanes:fast=10,width=2,beside=any",
            "sjf",
        ] {
            let starts = simulate(policy, 2, &arrivals);
            assert_eq!(starts.len(), arrivals.len(), "{policy}: every job runs");
            let fast = starts.iter().filter(|st| st.3).count();
            if policy.contains("fast") || policy.starts_with("lanes") {
                assert!(fast > 0, "{policy} seed {seed}: the fast lane is used");
            } else {
                assert_eq!(fast, 0, "{policy}");
            }
        }
    }
}

#[test]
fn short_jobs_wait_less_beside_long_ones() {
    // Two devices kept busy by 90 ms jobs; 5 ms jobs arrive every 20 ms.
    let all = DeviceSet::all(2);
    let mut arrivals: Vec<Arrival> = (0..20)
        .map(|k| Arrival {
            at: k * 45 * MS,
            model: 1,
            cost: 90 * MS,
            target: None,
            devices: all,
        })
        .collect();
    arrivals.extend((0..40).map(|k| Arrival {
        at: MS + k * 20 * MS,
        model: 0,
        cost: 5 * MS,
        target: None,
        devices: all,
    }));
    arrivals.sort_by_key(|a| a.at);
    let worst_short_wait = |policy: &str| {
        simulate(policy, 2, &arrivals)
            .iter()
            .filter(|st| arrivals[st.1 as usize].model == 0)
            .map(|st| st.0 - arrivals[st.1 as usize].at)
            .max()
            .unwrap()
    };
    assert!(worst_short_wait("sjf:alpha=0,slack=off") >= 40 * MS);
    // Each short job finds a fast slot at once or after one short job.
    assert!(worst_short_wait("lanes:alpha=0,slack=off") <= 5 * MS);
    assert!(worst_short_wait("lanes") <= 5 * MS);
}

/// One device runs job 1 (`running` ms, from 0); short job 2 (5 ms) arrives
/// at `arrive` ms, and the scheduler dispatches then and at each of `at` (ms,
/// increasing; job 1 never ends here: an estimate it overruns). Returns when
/// job 2 started and the wake-up reported after each dispatch, in ms.
fn gated(policy: &str, running: u64, arrive: u64, at: &[u64]) -> (Option<u64>, Vec<Option<u64>>) {
    let mut s = scheduler(policy, 1);
    let all = s.all_devices();
    let mut out = Vec::new();
    s.submit(Job::new(1, 0, running * MS, 0, all)).unwrap();
    s.dispatch(0, &mut out);
    s.submit(Job::new(2, 1, 5 * MS, arrive * MS, all)).unwrap();
    let mut wakes = Vec::new();
    for &now in std::iter::once(&arrive).chain(at) {
        out.clear();
        s.dispatch(now * MS, &mut out);
        wakes.push(s.next_wake().map(|w| w / MS));
        if runs(&out).contains(&(2, 0)) {
            return (Some(now), wakes);
        }
    }
    (None, wakes)
}

#[test]
fn the_gate_holds_a_short_job_back_from_the_fast_slot() {
    // (policy, running job ms, job 2 arrives ms, dispatches after ms,
    //  job 2 starts at ms, wake-up after each dispatch)
    type Case<'a> = (&'a str, u64, u64, &'a [u64], Option<u64>, &'a [Option<u64>]);
    #[rustfmt::skip]
    let cases: &[Case] = &[
        // No gate: at once, no wake-up.
        ("lanes", 90, 1, &[], Some(1), &[None]),
        // Hold: only once it has waited 3 ms; the wake-up says when.
        ("lanes:hold=3", 90, 1, &[3, 4], Some(4), &[Some(4), Some(4), None]),
        ("fair:fast=20,hold=3", 90, 1, &[4], Some(4), &[Some(4), None]),
        // Budget: the regular slot frees 89 ms after arrival: at once.
        ("lanes:budget=10", 90, 1, &[], Some(1), &[None]),
        // ... 5 ms after arrival (within 10): it waits for the regular slot;
        // when that overruns its estimate, it goes once it has waited 10 ms.
        ("lanes:budget=10", 25, 20, &[29, 30], Some(30), &[Some(30), Some(30), None]),
        // Both: the hold's wake-up when the budget already admits it.
        ("lanes:hold=3,budget=10", 90, 1, &[4], Some(4), &[Some(4), None]),
        ("lanes:hold=3,budget=10", 25, 20, &[23, 30], Some(30), &[Some(30), Some(30), None]),
        // A gate does not make a long job short (job 2 is 5 ms).
        ("lanes:hold=3,fast=4", 90, 1, &[50], None, &[None, None]),
    ];
    for &(policy, running, arrive, at, start, wakes) in cases {
        let (started, woke) = gated(policy, running, arrive, at);
        assert_eq!(started, start, "{policy}");
        assert_eq!(woke, wakes, "{policy}");
    }
}

#[test]
fn with_a_gate_the_fast_lane_takes_the_oldest_admitted_short_job() {
    // One device runs a 90 ms job; short jobs (arrival ms, cost ms) queue.
    // (policy, queued, dispatch at ms, started)
    type Case<'a> = (&'a str, &'a [(u64, u64)], u64, &'a [JobId]);
    let cases: &[Case] = &[
        // Aging order without a gate: 5 + 4·3 = 17 < 15 + 4·1 = 19.
        ("lanes", &[(1, 15), (3, 5)], 3, &[3]),
        // With one, the oldest: job 2.
        ("lanes:budget=0", &[(1, 15), (3, 5)], 3, &[2]),
        ("lanes:hold=2", &[(1, 15), (3, 5)], 3, &[2]),
        // The oldest is held back (1 ms short of its hold): nobody younger
        // is admitted either.
        ("lanes:hold=3", &[(1, 15), (3, 5)], 3, &[]),
    ];
    for &(policy, queued, now, expect) in cases {
        let mut s = scheduler(policy, 1);
        let all = s.all_devices();
        let mut out = Vec::new();
        s.submit(Job::new(1, 0, 90 * MS, 0, all)).unwrap();
        s.dispatch(0, &mut out);
        for (i, &(arrival, cost)) in queued.iter().enumerate() {
            s.submit(Job::new(2 + i as JobId, 1, cost * MS, arrival * MS, all))
                .unwrap();
        }
        out.clear();
        s.dispatch(now * MS, &mut out);
        let started: Vec<JobId> = runs(&out).into_iter().map(|(id, _)| id).collect();
        assert_eq!(started, expect, "{policy}");
    }
}

#[test]
fn with_burst_the_hold_applies_only_while_a_long_job_is_backlogged() {
    // One device runs long job 1 (90 ms, from 0); long job 2 (90 ms) queues
    // at `long_at`; short job 3 (5 ms) arrives at 40 ms. Under
    // `lanes:hold=6,burst=30` it is held only if job 2 has waited 30 ms.
    // (long job 2 queued at ms, job 3 starts at 40 ms, wake-up ms)
    let cases: &[(u64, bool, Option<u64>)] = &[(5, false, Some(46)), (20, true, None)];
    for &(long_at, at_once, wake) in cases {
        let mut s = scheduler("lanes:hold=6,burst=30", 1);
        let all = s.all_devices();
        let mut out = Vec::new();
        s.submit(Job::new(1, 0, 90 * MS, 0, all)).unwrap();
        s.dispatch(0, &mut out);
        s.submit(Job::new(2, 0, 90 * MS, long_at * MS, all))
            .unwrap();
        s.submit(Job::new(3, 1, 5 * MS, 40 * MS, all)).unwrap();
        out.clear();
        s.dispatch(40 * MS, &mut out);
        let started = runs(&out).contains(&(3, 0));
        assert_eq!(started, at_once, "long job queued at {long_at}");
        assert_eq!(
            s.next_wake(),
            wake.map(|w| w * MS),
            "long job queued at {long_at}"
        );
    }
}
