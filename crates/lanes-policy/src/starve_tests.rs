//! The starvation bound (`starve`): a job past saving that a stream of urgent
//! jobs would hold back forever runs once it has waited `starve`, and starving
//! jobs go oldest first, before urgent ones.

use super::*;

/// Times in milliseconds, as the policy's arguments.
const MS: Nanos = 1_000_000;

fn one_device(policy: &str) -> Scheduler {
    Scheduler::new(policy.parse().unwrap(), &[DeviceSpec::default()]).unwrap()
}

/// One device. At t=0 a short job runs and a hopeless job H (cost 50 ms,
/// target 10 ms: never savable) queues; from then on a short job (10 ms)
/// arrives every 10 ms with a target 25 ms after its arrival, so one is
/// always urgent (slack 15 ms <= the default 80) and the device is always
/// full. All jobs are one model (so `fair` is `sjf`) and never short enough
/// to open `lanes`' fast slot (a regular slot never holds a long job).
/// Returns when H started, if within `horizon`.
fn hopeless_start(policy: &str, horizon: Nanos) -> Option<Nanos> {
    let short = 10 * MS;
    let all = DeviceSet::all(1);
    let hopeless = Job::new(2, 0, 50 * MS, 0, all).with_target(10 * MS);
    let stream = |id, arrival| Job::new(id, 0, short, arrival, all).with_target(arrival + 25 * MS);
    super::tests::start_behind_stream(policy, short, hopeless, stream, horizon)
}

/// Completes `running` at `now`, then frees the device every nanosecond
/// until nothing is left to start; returns the ids in start order.
fn drain(s: &mut Scheduler, mut running: JobId, mut now: Nanos) -> Vec<JobId> {
    let (mut out, mut order) = (Vec::new(), Vec::new());
    loop {
        s.complete(running, now).unwrap();
        out.clear();
        s.dispatch(now, &mut out);
        let Some(Decision::Run { job, .. }) = out.first() else {
            return order;
        };
        order.push(job.id);
        running = job.id;
        now += 1;
    }
}

#[test]
fn starve_serves_a_job_past_saving_that_urgent_jobs_hold_back() {
    let horizon = 10_000 * MS;
    let cases = [
        // Without the bound an urgent job is always queued: H never runs.
        ("sjf", None),
        ("fair", None),
        ("lanes", None),
        ("sjf:starve=off", None),
        // With it H runs at the first dispatch once it has waited `starve`.
        ("sjf:starve=100", Some(100 * MS)),
        ("fair:starve=100", Some(100 * MS)),
        ("lanes:starve=100", Some(100 * MS)),
        ("sjf:starve=95", Some(100 * MS)),
        ("sjf:starve=300", Some(300 * MS)),
        // Without slack aging alone applies: H's key 50 ties the short
        // arriving at 10 (10 + 4·10) and H was submitted first.
        ("sjf:slack=off", Some(10 * MS)),
    ];
    for (policy, expect) in cases {
        assert_eq!(hopeless_start(policy, horizon), expect, "{policy}");
    }
}

#[test]
fn starving_jobs_go_oldest_first_before_urgent_ones() {
    // (id, model, cost, arrival, target) queued behind job 0, which frees
    // the device at 200 ms; then the device frees every nanosecond.
    let jobs = [
        (1, 1, 30, 50, None),       // waited 150: starving
        (2, 2, 5, 80, None),        // waited 120: starving
        (3, 3, 50, 20, None),       // waited 180: starving, oldest
        (4, 4, 1, 150, None),       // waited 50, shortest
        (5, 5, 10, 190, Some(215)), // slack 5 <= 80: urgent
    ];
    let cases: [(&str, [JobId; 5]); 6] = [
        ("sjf:alpha=0", [5, 4, 2, 1, 3]),
        ("sjf:alpha=0,starve=100", [3, 1, 2, 5, 4]),
        // 3 and 1 starve; 2 (waited 120) does not at starve=130.
        ("sjf:alpha=0,starve=130", [3, 1, 5, 4, 2]),
        // Starving jobs go by arrival, not by the aging key (2, 1, 3 here).
        ("sjf:alpha=0,slack=off,starve=100", [3, 1, 2, 4, 5]),
        // Every model in its own group: the oldest across groups wins.
        ("fair:alpha=0,starve=100", [3, 1, 2, 5, 4]),
        // (no job short enough for the fast slot, which would run beside 3)
        ("lanes:alpha=0,starve=100,fast=0.5", [3, 1, 2, 5, 4]),
    ];
    for (policy, expect) in cases {
        let mut s = one_device(policy);
        let all = s.all_devices();
        let mut out = Vec::new();
        s.submit(Job::new(0, 0, 200 * MS, 0, all)).unwrap();
        s.dispatch(0, &mut out);
        for (id, model, cost, arrival, target) in jobs {
            let mut job = Job::new(id, model, cost * MS, arrival * MS, all);
            job.target = target.map(|t| t * MS);
            s.submit(job).unwrap();
        }
        assert_eq!(drain(&mut s, 0, 200 * MS), expect, "{policy}");
    }
}

#[test]
fn under_fair_a_starving_job_beats_a_model_ahead_of_its_share() {
    // Job 1 (model 0) holds the device until 200 ms; then model 0 is ahead
    // of its share (threshold 0) and its job 2 (queued since 0) yields to
    // model 1's job 3 (queued since 150) — unless job 2 is starving.
    let fair = "fair:alpha=0,slack=off,threshold=0,cap=0.0001";
    for (policy, expect) in [
        (fair.to_string(), [3, 2]),
        (format!("{fair},starve=100"), [2, 3]),
        (format!("{fair},starve=250"), [3, 2]),
    ] {
        let mut s = one_device(&policy);
        let all = s.all_devices();
        let mut out = Vec::new();
        s.submit(Job::new(1, 0, 10 * MS, 0, all)).unwrap();
        s.dispatch(0, &mut out);
        s.submit(Job::new(2, 0, MS, 0, all)).unwrap();
        s.submit(Job::new(3, 1, 50 * MS, 150 * MS, all)).unwrap();
        assert_eq!(drain(&mut s, 1, 200 * MS), expect, "{policy}");
    }
}
