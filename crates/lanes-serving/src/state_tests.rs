//! Table-driven tests of the serving state: scripted inputs at given
//! instants, the actions they produce. No threads, no sleeps.

use lanes_policy::{CostConfig, DeviceSet, Policy, Prior};

use super::*;
use crate::queue::{Batching, Queued};

const MS: Nanos = 1_000_000;

fn batching(max: u32, timeout: Nanos, threads: u32) -> Batching {
    Batching {
        max_batch_size: max,
        batch_timeout: timeout,
        num_batch_threads: threads,
        max_enqueued_batches: 4,
    }
}

/// A state with models named m0, m1, ... costing `per_item_ms` each per row.
fn state(grants: Grants, devices: usize, models: &[(Batching, f64)]) -> ServingState {
    let mut s = ServingState::new(grants, devices, CostConfig::default()).unwrap();
    for (i, (b, per_item)) in models.iter().enumerate() {
        s.add_model(ModelConfig {
            name: format!("m{i}"),
            batching: *b,
            devices: DeviceSet::all(devices),
            prior: Some(Prior {
                fixed: 0.0,
                per_item: per_item * MS as f64,
            }),
        })
        .unwrap();
    }
    s
}

fn req(id: u64, at: Nanos, deadline: Option<Nanos>) -> Queued {
    Queued {
        id,
        rows: 1,
        arrival: at,
        enqueued: at,
        deadline,
        target: None,
    }
}

/// Admits and enqueues one row; returns the actions.
fn send(s: &mut ServingState, now: Nanos, model: ModelIx, r: Queued) -> Vec<Action> {
    s.admit(now, model, r.rows, r.deadline).unwrap();
    let mut out = Vec::new();
    s.enqueue(now, model, r, &mut out);
    out
}

/// The started batches as (model, device, request ids).
fn starts(actions: &[Action]) -> Vec<(ModelIx, usize, Vec<u64>)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Start(b) => {
                Some((b.model, b.device, b.requests.iter().map(|q| q.id).collect()))
            }
            _ => None,
        })
        .collect()
}

fn fails(actions: &[Action]) -> Vec<(u64, &'static str, u16)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Fail { request, error, .. } => {
                Some((*request, error.code(), error.http_status()))
            }
            _ => None,
        })
        .collect()
}

fn job_of(actions: &[Action]) -> JobId {
    actions
        .iter()
        .find_map(|a| match a {
            Action::Start(b) => Some(b.job),
            _ => None,
        })
        .expect("a batch started")
}

#[test]
fn eager_lone_request_starts_at_once_and_batches_grow_while_busy() {
    let mut s = state(Grants::Engine(Policy::Fifo), 1, &[(batching(4, 0, 1), 1.0)]);
    let a = send(&mut s, 0, 0, req(1, 0, None));
    assert_eq!(starts(&a), [(0, 0, vec![1])]);
    let job = job_of(&a);
    for id in 2..=6 {
        assert!(starts(&send(&mut s, id, 0, req(id, id, None))).is_empty());
    }
    let mut out = Vec::new();
    assert_eq!(s.complete(10, job, Some(MS), &mut out), Some(0));
    // The next batch takes max_batch_size rows in arrival order.
    assert_eq!(starts(&out), [(0, 0, vec![2, 3, 4, 5])]);
    assert_eq!(s.queued_rows(0), 1);
}

#[test]
fn batch_timeout_holds_a_partial_batch_until_due_or_full() {
    // (requests enqueued at t=0.., poll at, started ids at that poll)
    let cases: [(u64, Nanos, Vec<u64>); 3] = [
        (1, 5 * MS, vec![]),      // before the timeout: held
        (1, 10 * MS, vec![0]),    // the timeout ran out
        (4, 0, vec![0, 1, 2, 3]), // full: no wait
    ];
    for (n, at, want) in cases {
        let mut s = state(
            Grants::Engine(Policy::Fifo),
            1,
            &[(batching(4, 10 * MS, 1), 1.0)],
        );
        let mut started = Vec::new();
        for id in 0..n {
            started.extend(starts(&send(&mut s, 0, 0, req(id, 0, None))));
        }
        if started.is_empty() {
            assert_eq!(s.next_wake(), Some(10 * MS));
            let mut out = Vec::new();
            s.poll(at, &mut out);
            started = starts(&out);
        }
        let ids: Vec<u64> = started.into_iter().flat_map(|(_, _, ids)| ids).collect();
        assert_eq!(ids, want, "n {n} poll at {at}");
    }
}

#[test]
fn a_freed_device_goes_to_the_policy_s_choice() {
    // m0 costs 10 ms/row, m1 1 ms/row; the device is busy with m0 when m0 then
    // m1 queue. (policy, model and request started when the device frees)
    let cases = [
        (
            Policy::Sjf {
                alpha: 0.0,
                slack: None,
                starve: None,
            },
            (1, 3),
        ), // shortest first
        (Policy::Fifo, (0, 2)), // oldest first
    ];
    for (policy, (model, id)) in cases {
        let models = [(batching(1, 0, 1), 10.0), (batching(1, 0, 1), 1.0)];
        let mut s = state(Grants::Engine(policy), 1, &models);
        let job = job_of(&send(&mut s, 0, 0, req(1, 0, None)));
        send(&mut s, 1, 0, req(2, 1, None));
        send(&mut s, 2, 1, req(3, 2, None));
        let mut out = Vec::new();
        s.complete(10 * MS, job, Some(10 * MS), &mut out);
        assert_eq!(starts(&out), [(model, 0, vec![id])], "{policy:?}");
    }
}

#[test]
fn work_conserving_and_one_job_per_model() {
    // (grants, devices, num_batch_threads, requests of m0, of m1, batches started at once)
    let cases = [
        (Grants::Engine(Policy::Fifo), 2, 1, 3, 3, 2), // one device each
        (Grants::Engine(Policy::Fifo), 2, 1, 3, 0, 1), // m0 alone: its thread limit
        (Grants::Engine(Policy::Fifo), 2, 2, 3, 0, 2), // two threads: both devices
        (Grants::Engine(Policy::Fifo), 1, 1, 3, 3, 1), // one device: one job at a time
        (Grants::Independent, 1, 1, 3, 3, 2),          // status quo: models overlap
        (Grants::Independent, 2, 1, 3, 0, 2),          // one worker per device
    ];
    for (grants, devices, threads, n0, n1, want) in cases {
        let b = batching(1, 0, threads);
        let mut s = state(grants, devices, &[(b, 1.0), (b, 1.0)]);
        let mut started = 0;
        for id in 0..n0 {
            started += starts(&send(&mut s, 0, 0, req(id, 0, None))).len();
        }
        for id in 0..n1 {
            started += starts(&send(&mut s, 0, 1, req(100 + id, 0, None))).len();
        }
        assert_eq!(
            started, want,
            "{grants:?} devices {devices} threads {threads} {n0}/{n1}"
        );
    }
}

#[test]
fn queued_requests_fail_at_their_deadline_and_never_run() {
    let mut s = state(Grants::Engine(Policy::Fifo), 1, &[(batching(4, 0, 1), 1.0)]);
    let job = job_of(&send(&mut s, 0, 0, req(1, 0, None)));
    send(&mut s, 0, 0, req(2, 0, Some(5 * MS)));
    send(&mut s, 0, 0, req(3, 0, None));
    assert_eq!(s.next_wake(), Some(5 * MS));
    let mut out = Vec::new();
    s.poll(5 * MS, &mut out);
    assert_eq!(fails(&out), [(2, "deadline_exceeded", 504)]);
    assert!(starts(&out).is_empty());
    out.clear();
    s.complete(6 * MS, job, Some(MS), &mut out);
    assert_eq!(starts(&out), [(0, 0, vec![3])]);
}

#[test]
fn withdrawn_requests_leave_the_queue_and_running_ones_stay() {
    let mut s = state(Grants::Engine(Policy::Fifo), 1, &[(batching(4, 0, 1), 1.0)]);
    let job = job_of(&send(&mut s, 0, 0, req(1, 0, None)));
    send(&mut s, 1, 0, req(2, 1, None));
    send(&mut s, 1, 0, req(3, 1, None));
    let mut out = Vec::new();
    assert!(!s.withdraw(2, 0, 1, &mut out), "running: not withdrawn");
    assert!(s.withdraw(2, 0, 2, &mut out));
    assert!(!s.withdraw(2, 0, 2, &mut out), "twice");
    s.complete(3, job, Some(MS), &mut out);
    assert_eq!(starts(&out), [(0, 0, vec![3])]);
}

#[test]
fn admission_refuses_past_the_bound_and_release_gives_room_back() {
    let mut s = state(Grants::Engine(Policy::Fifo), 1, &[(batching(2, 0, 1), 1.0)]);
    // Bound: 4 batches x 2 rows = 8 rows.
    for _ in 0..8 {
        s.admit(0, 0, 1, None).unwrap();
    }
    let e = s.admit(0, 0, 1, None).unwrap_err();
    assert_eq!((e.code(), e.http_status()), ("queue_full", 429));
    assert!(e.to_string().contains("queue full (8 rows"), "{e}");
    s.release(0, 1);
    s.admit(0, 0, 1, None).unwrap();
    let zero = s.admit(0, 0, 0, None).unwrap_err();
    assert_eq!(zero.http_status(), 400);
    assert_eq!(s.admit(0, 9, 1, None).unwrap_err().http_status(), 404);
}

#[test]
fn edf_refuses_at_admission_what_cannot_finish() {
    let mut s = state(Grants::Engine(Policy::Edf), 1, &[(batching(1, 0, 1), 10.0)]);
    // Queue 3 requests behind a running one: backlog 3 x 10 ms + own 10 ms.
    for id in 0..4 {
        send(&mut s, 0, 0, req(id, 0, None));
    }
    assert_eq!(s.predicted_finish(0, 1, 0), 40 * MS);
    let e = s.admit(0, 0, 1, Some(39 * MS)).unwrap_err();
    assert_eq!((e.code(), e.http_status()), ("deadline_unreachable", 504));
    s.admit(0, 0, 1, Some(40 * MS)).unwrap();
}

#[test]
fn edf_drops_queued_requests_that_became_unreachable() {
    let mut s = state(Grants::Engine(Policy::Edf), 1, &[(batching(1, 0, 1), 10.0)]);
    let job = job_of(&send(&mut s, 0, 0, req(1, 0, None)));
    send(&mut s, 0, 0, req(2, 0, Some(15 * MS)));
    send(&mut s, 0, 0, req(3, 0, Some(100 * MS)));
    let mut out = Vec::new();
    // At 8 ms the 10 ms job can no longer finish by 15 ms.
    s.complete(8 * MS, job, Some(8 * MS), &mut out);
    assert_eq!(fails(&out), [(2, "deadline_unreachable", 504)]);
    assert_eq!(starts(&out), [(0, 0, vec![3])]);
}

#[test]
fn finish_rule_drops_at_the_cut_what_the_batch_would_end_too_late_for() {
    // m0 costs 10 ms a row, batches of up to 4. Request 1 runs; 2 (deadline
    // 25 ms), 3 (100 ms) and 4 (none) queue behind it. At 8 ms the device
    // frees and a batch of 3 rows is cut, estimated at 30 ms: it would end at
    // 38 ms, past request 2's deadline. (grants, rule, failed, started,
    // the started batch's estimate)
    type Case = (
        Grants,
        DeadlineRule,
        Vec<(u64, &'static str, u16)>,
        Vec<u64>,
        Nanos,
    );
    let late = vec![(2, "deadline_unreachable", 504)];
    let mut cases: Vec<Case> = Vec::new();
    for grants in [
        Grants::Engine(Policy::Fifo),
        Grants::Engine(Policy::sjf()),
        Grants::Engine(Policy::fair()),
        Grants::Independent,
    ] {
        cases.push((grants, DeadlineRule::Start, vec![], vec![2, 3, 4], 30 * MS));
        cases.push((
            grants,
            DeadlineRule::Finish,
            late.clone(),
            vec![3, 4],
            20 * MS,
        ));
    }
    for (grants, rule, failed, started, estimate) in cases {
        let mut s = state(grants, 1, &[(batching(4, 0, 1), 10.0)]);
        s.set_deadline_rule(rule);
        assert_eq!(s.deadline_rule(), rule);
        let job = job_of(&send(&mut s, 0, 0, req(1, 0, None)));
        for (id, deadline) in [(2, Some(25 * MS)), (3, Some(100 * MS)), (4, None)] {
            assert!(starts(&send(&mut s, 1, 0, req(id, 1, deadline))).is_empty());
        }
        let mut out = Vec::new();
        // A failed run teaches the estimator nothing: the prior stands.
        s.complete(8 * MS, job, None, &mut out);
        let what = format!("{grants:?} {rule}");
        assert_eq!(fails(&out), failed, "{what}");
        assert_eq!(starts(&out), [(0, 0, started)], "{what}");
        let cut = out.iter().find_map(|a| match a {
            Action::Start(b) => Some((b.rows, b.estimate)),
            _ => None,
        });
        assert_eq!(
            cut,
            Some(((estimate / (10 * MS)) as u32, estimate)),
            "{what}"
        );
    }
}

#[test]
fn finish_rule_frees_the_device_when_the_whole_batch_is_late() {
    // The engine's own grants: request 2's batch, cut at 8 ms, would end at
    // 18 ms, past its 15 ms deadline. It fails, nothing starts, and the
    // device is free for the next request at once.
    for grants in [Grants::Engine(Policy::Fifo), Grants::Independent] {
        let mut s = state(grants, 1, &[(batching(4, 0, 1), 10.0)]);
        s.set_deadline_rule(DeadlineRule::Finish);
        let job = job_of(&send(&mut s, 0, 0, req(1, 0, None)));
        assert!(starts(&send(&mut s, 1, 0, req(2, 1, Some(15 * MS)))).is_empty());
        let mut out = Vec::new();
        s.complete(8 * MS, job, None, &mut out);
        assert_eq!(
            fails(&out),
            [(2, "deadline_unreachable", 504)],
            "{grants:?}"
        );
        assert!(starts(&out).is_empty(), "{grants:?} {out:?}");
        assert_eq!((s.queued_rows(0), s.inflight(0)), (0, 0), "{grants:?}");
        let next = send(&mut s, 9 * MS, 0, req(3, 9 * MS, Some(100 * MS)));
        assert_eq!(starts(&next), [(0, 0, vec![3])], "{grants:?}");
    }
}

#[test]
fn finish_rule_gives_back_a_grant_whose_batch_is_all_late() {
    // Under an arbiter's grants: the whole batch would end past its
    // deadlines, so every request fails and the grant goes back unused.
    let mut s = state(Grants::External, 1, &[(batching(4, 0, 1), 10.0)]);
    s.set_deadline_rule(DeadlineRule::Finish);
    let a = send(&mut s, 0, 0, req(1, 0, Some(9 * MS)));
    send(&mut s, 0, 0, req(2, 0, Some(19 * MS)));
    let Some(Action::Ask { job, .. }) = a.first().cloned() else {
        panic!("{a:?}");
    };
    let mut out = Vec::new();
    // Cut at 0: two rows, 20 ms, past both deadlines.
    assert!(s.grant(0, job, 0, &mut out));
    assert_eq!(
        fails(&out),
        [
            (1, "deadline_unreachable", 504),
            (2, "deadline_unreachable", 504)
        ]
    );
    assert!(starts(&out).is_empty(), "{out:?}");
    assert!(out
        .iter()
        .any(|a| matches!(a, Action::Release { job: j, device: 0 } if *j == job)));
    assert_eq!(s.queued_rows(0), 0);
}

#[test]
fn external_grants_ask_withdraw_grant_and_release() {
    let mut s = state(Grants::External, 2, &[(batching(4, 0, 1), 1.0)]);
    let a = send(&mut s, 0, 0, req(1, 0, Some(50 * MS)));
    let Some(Action::Ask {
        job,
        rows: 1,
        deadline: Some(d),
        ..
    }) = a.first().cloned()
    else {
        panic!("{a:?}");
    };
    assert_eq!(d, 50 * MS);
    // A second request keeps the standing ask (its place at the daemon).
    let b = send(&mut s, 1, 0, req(2, 1, None));
    assert!(b.is_empty(), "{b:?}");
    let mut out = Vec::new();
    assert!(!s.grant(2, job + 100, 0, &mut out), "an unknown job");
    // Late formation: the grant cuts both.
    assert!(s.grant(2, job, 1, &mut out));
    assert_eq!(starts(&out), [(0, 1, vec![1, 2])]);
    // A grant that finds its requests gone is given back.
    let c = send(&mut s, 3, 0, req(3, 3, None));
    let _ = s.complete(3, job, Some(MS), &mut out);
    let Some(Action::Ask { job, .. }) = c.last().cloned().or_else(|| out.last().cloned()) else {
        panic!("{c:?}");
    };
    out.clear();
    assert!(s.withdraw(4, 0, 3, &mut out));
    assert!(
        matches!(out[..], [Action::Withdraw { job: j }] if j == job),
        "{out:?}"
    );
}

#[test]
fn a_refusal_consumes_work_and_asks_again_for_the_rest() {
    let mut s = state(Grants::External, 1, &[(batching(2, 0, 1), 1.0)]);
    let a = send(&mut s, 0, 0, req(1, 0, None));
    let Some(Action::Ask { job, .. }) = a.first().cloned() else {
        panic!("{a:?}");
    };
    for id in 2..=4 {
        assert!(send(&mut s, 0, 0, req(id, 0, None)).is_empty());
    }
    // Refused for a reason other than a deadline: one batch (2 rows) fails 503.
    let mut out = Vec::new();
    assert!(s.refuse(1, job, Refusal::Refused("overload".into()), &mut out));
    assert_eq!(
        fails(&out),
        [(1, "grant_refused", 503), (2, "grant_refused", 503)]
    );
    let Some(Action::Ask { job, .. }) = out.last().cloned() else {
        panic!("{out:?}");
    };
    assert!(
        !s.refuse(1, job + 1, Refusal::Deadline, &mut out),
        "not standing"
    );
    // A deadline refusal with nothing predicted late still fails the earliest.
    out.clear();
    let mut s = state(Grants::External, 1, &[(batching(4, 0, 1), 1.0)]);
    let a = send(&mut s, 0, 0, req(1, 0, Some(90 * MS)));
    let Some(Action::Ask { job, .. }) = a.first().cloned() else {
        panic!("{a:?}");
    };
    send(&mut s, 0, 0, req(2, 0, Some(80 * MS)));
    send(&mut s, 0, 0, req(3, 0, None));
    assert!(s.refuse(MS, job, Refusal::Deadline, &mut out));
    assert_eq!(fails(&out), [(2, "deadline_unreachable", 504)]);
    assert!(
        matches!(out.last(), Some(Action::Ask { rows: 2, .. })),
        "{out:?}"
    );
}

#[test]
fn external_grant_of_expired_work_is_released() {
    let mut s = state(Grants::External, 1, &[(batching(4, 0, 1), 1.0)]);
    let a = send(&mut s, 0, 0, req(1, 0, Some(MS)));
    let Some(Action::Ask { job, .. }) = a.first().cloned() else {
        panic!("{a:?}");
    };
    let mut out = Vec::new();
    // Granted exactly at the deadline: the request fails, the grant goes back.
    assert!(s.grant(MS, job, 0, &mut out));
    assert_eq!(fails(&out), [(1, "deadline_exceeded", 504)]);
    assert!(out
        .iter()
        .any(|a| matches!(a, Action::Release { job: j, device: 0 } if *j == job)));
}

#[test]
fn measured_runs_replace_the_prior() {
    let mut s = state(Grants::Engine(Policy::Fifo), 1, &[(batching(4, 0, 1), 1.0)]);
    assert_eq!(s.estimate(0, 2), 2 * MS);
    let job = job_of(&send(&mut s, 0, 0, req(1, 0, None)));
    let mut out = Vec::new();
    s.complete(7 * MS, job, Some(7 * MS), &mut out);
    assert_eq!(s.estimate(0, 1), 7 * MS);
    // A failed batch teaches nothing.
    let job = job_of(&send(&mut s, 8 * MS, 0, req(2, 8 * MS, None)));
    s.complete(9 * MS, job, None, &mut out);
    assert_eq!(s.estimate(0, 1), 7 * MS);
    assert_eq!(s.inflight(0), 0);
}

#[test]
fn bad_configurations_are_refused() {
    assert!(ServingState::new(Grants::Independent, 0, CostConfig::default()).is_err());
    let mut s = ServingState::new(Grants::Engine(Policy::Fifo), 2, CostConfig::default()).unwrap();
    let none = ModelConfig {
        name: "x".into(),
        batching: Batching::default(),
        devices: DeviceSet::only(5),
        prior: None,
    };
    assert!(s.add_model(none).is_err());
}

#[test]
fn lanes_starts_a_short_batch_beside_a_long_one() {
    // One device; m0 rows cost 90 ms (long), m1 rows 5 ms (short at fast=20).
    // (policy, does m1's request start while m0's batch runs)
    let cases = [
        ("sjf", false),
        ("lanes", true),
        ("lanes:fast=4", false),
        ("fair:fast=20", true),
    ];
    for (policy, beside) in cases {
        let mut s = state(
            Grants::Engine(policy.parse().unwrap()),
            1,
            &[(batching(8, 0, 2), 90.0), (batching(8, 0, 2), 5.0)],
        );
        assert_eq!(
            starts(&send(&mut s, 0, 0, req(1, 0, None))),
            [(0, 0, vec![1])]
        );
        let out = send(&mut s, MS, 1, req(2, MS, None));
        let expect = if beside {
            vec![(1, 0, vec![2])]
        } else {
            vec![]
        };
        assert_eq!(starts(&out), expect, "{policy}");
        // A second short request waits: one fast job per device.
        let out = send(&mut s, 2 * MS, 1, req(3, 2 * MS, None));
        assert_eq!(starts(&out), [], "{policy}");
        assert_eq!(s.inflight(1), u32::from(beside), "{policy}");
    }
}

#[test]
fn a_wider_fast_lane_starts_more_short_batches() {
    // One device; m0 rows cost 90 ms (long), m1 and m2 rows 5 ms (short).
    // (policy, m0's first request: does m1's second batch start beside m1's
    // first, does m2 start beside them)
    let cases = [
        ("lanes", false, false),
        ("lanes:width=2", true, false),
        ("fair:fast=20,width=3", true, true),
    ];
    for (policy, second, third) in cases {
        let mut s = state(
            Grants::Engine(policy.parse().unwrap()),
            1,
            &[
                (batching(8, 0, 2), 90.0),
                (batching(8, 0, 2), 5.0),
                (batching(8, 0, 2), 5.0),
            ],
        );
        assert_eq!(starts(&send(&mut s, 0, 0, req(1, 0, None))).len(), 1);
        assert_eq!(starts(&send(&mut s, MS, 1, req(2, MS, None))).len(), 1);
        let out = send(&mut s, 2 * MS, 1, req(3, 2 * MS, None));
        assert_eq!(starts(&out).len(), usize::from(second), "{policy}");
        let out = send(&mut s, 3 * MS, 2, req(4, 3 * MS, None));
        assert_eq!(starts(&out).len(), usize::from(third), "{policy}");
    }
    // `beside=any`: a short batch starts beside a short one in the regular slot.
    for (policy, beside) in [("lanes", false), ("lanes:beside=any", true)] {
        let mut s = state(
            Grants::Engine(policy.parse().unwrap()),
            1,
            &[(batching(8, 0, 2), 5.0), (batching(8, 0, 2), 5.0)],
        );
        assert_eq!(starts(&send(&mut s, 0, 0, req(1, 0, None))).len(), 1);
        let out = send(&mut s, MS, 1, req(2, MS, None));
        assert_eq!(starts(&out).len(), usize::from(beside), "{policy}");
    }
}

#[test]
fn a_gated_fast_lane_wakes_the_driver_and_the_batch_has_grown() {
    // One device; m0 rows cost 90 ms (long), m1 rows 5 ms. m1's requests
    // arrive at 1 and 2 ms; under `lanes:hold=3` the first may take the fast
    // slot at 4 ms, which `next_wake` reports; polled then, both go together.
    let mut s = state(
        Grants::Engine("lanes:hold=3".parse().unwrap()),
        1,
        &[(batching(8, 0, 2), 90.0), (batching(8, 0, 2), 5.0)],
    );
    assert_eq!(
        starts(&send(&mut s, 0, 0, req(1, 0, None))),
        [(0, 0, vec![1])]
    );
    assert_eq!(starts(&send(&mut s, MS, 1, req(2, MS, None))), []);
    assert_eq!(starts(&send(&mut s, 2 * MS, 1, req(3, 2 * MS, None))), []);
    assert_eq!(s.next_wake(), Some(4 * MS));
    let mut out = Vec::new();
    s.poll(4 * MS, &mut out);
    assert_eq!(starts(&out), [(1, 0, vec![2, 3])]);
    assert_eq!(s.next_wake(), None);
}
