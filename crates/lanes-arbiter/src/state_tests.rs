//! State rules, without async: sessions, acquire checks, grant order,
//! release, cancel, disconnect, max hold and revoke, deadlines, shutdown.

use super::*;

fn config(devices: usize, policy: &str) -> StateConfig {
    StateConfig {
        devices: (0..devices).map(|d| format!("sim:{d}")).collect(),
        policy: policy.parse().unwrap(),
        capacity: 1,
        max_hold: None,
        revoke: false,
        queue_limit: 100,
        trace_events: 1000,
    }
}

fn acquire(id: u64, model: &str, cost_ns: u64) -> Message {
    Message::Acquire(Acquire {
        id,
        model: model.into(),
        batch: 1,
        cost_ns,
        timeout_ns: 0,
        devices: vec![],
    })
}

fn hello() -> Message {
    Message::Hello {
        version: 1,
        pid: 1,
        service: "svc".into(),
    }
}

/// A state with `conns` connections past HELLO.
fn state(cfg: &StateConfig, conns: u64) -> State {
    let mut s = State::new(cfg).unwrap();
    let mut out = Vec::new();
    for c in 1..=conns {
        s.connect(c);
        s.on_message(c, hello(), 0, &mut out);
    }
    assert_eq!(out.len(), conns as usize);
    s
}

/// Applies `msg` at `now`, dispatches, returns the replies.
fn step(s: &mut State, conn: ConnId, msg: Message, now: Nanos) -> Vec<Out> {
    let mut out = Vec::new();
    s.on_message(conn, msg, now, &mut out);
    s.dispatch(now, &mut out);
    out
}

fn grant(conn: ConnId, id: u64, device: u16, wait_ns: u64) -> Out {
    Out {
        conn,
        msg: Message::Grant {
            id,
            device,
            wait_ns,
        },
    }
}

fn reason_of(out: &[Out]) -> Vec<(ConnId, u64, RejectReason)> {
    out.iter()
        .filter_map(|o| match &o.msg {
            Message::Reject { id, reason, .. } => Some((o.conn, *id, *reason)),
            _ => None,
        })
        .collect()
}

#[test]
fn session_rules() {
    let cases: Vec<(Vec<Message>, Option<ErrorCode>)> = vec![
        (vec![hello()], None),
        (vec![Message::Stats], Some(ErrorCode::OutOfOrder)),
        (vec![acquire(1, "m", 1)], Some(ErrorCode::OutOfOrder)),
        (vec![hello(), hello()], Some(ErrorCode::OutOfOrder)),
        (
            vec![Message::Hello {
                version: 2,
                pid: 1,
                service: "s".into(),
            }],
            Some(ErrorCode::UnsupportedVersion),
        ),
        (
            vec![Message::Hello {
                version: 1,
                pid: 1,
                service: "s".repeat(256),
            }],
            Some(ErrorCode::Malformed),
        ),
        (
            vec![hello(), Message::Released { id: 1 }],
            Some(ErrorCode::UnknownType),
        ),
    ];
    for (msgs, want) in cases {
        let mut s = State::new(&config(2, "sjf")).unwrap();
        s.connect(1);
        let mut out = Vec::new();
        for m in msgs.clone() {
            s.on_message(1, m, 0, &mut out);
        }
        let got = out.iter().find_map(|o| match &o.msg {
            Message::Error { code, .. } => Some(*code),
            _ => None,
        });
        assert_eq!(got, want, "{msgs:?}");
        assert_eq!(s.is_open(1), want.is_none(), "{msgs:?}");
        if want.is_none() {
            assert!(
                matches!(&out[0].msg, Message::Welcome { devices, session: 1, .. } if devices.len() == 2)
            );
        }
    }
}

#[test]
fn acquire_checks_in_order() {
    let mut cfg = config(2, "fifo");
    cfg.queue_limit = 1;
    let mut s = state(&cfg, 1);
    let with = |id, batch, model: &str, devices: Vec<u16>| {
        Message::Acquire(Acquire {
            id,
            model: model.into(),
            batch,
            cost_ns: 0,
            timeout_ns: 0,
            devices,
        })
    };
    assert_eq!(
        reason_of(&step(&mut s, 1, with(1, 0, "m", vec![]), 0)),
        [(1, 1, RejectReason::BadRequest)]
    );
    assert_eq!(
        reason_of(&step(&mut s, 1, with(2, 1, "", vec![]), 0)),
        [(1, 2, RejectReason::BadRequest)]
    );
    let long = "x".repeat(256);
    assert_eq!(
        reason_of(&step(&mut s, 1, with(3, 1, &long, vec![]), 0)),
        [(1, 3, RejectReason::BadRequest)]
    );
    assert_eq!(
        reason_of(&step(&mut s, 1, with(4, 1, "m", vec![2]), 0)),
        [(1, 4, RejectReason::NoSuchDevice)]
    );
    assert_eq!(
        step(&mut s, 1, with(5, 1, "m", vec![1]), 0),
        [grant(1, 5, 1, 0)]
    );
    assert_eq!(
        reason_of(&step(&mut s, 1, with(5, 1, "m", vec![]), 0)),
        [(1, 5, RejectReason::BadRequest)]
    );
    assert_eq!(
        step(&mut s, 1, with(6, 1, "m", vec![0]), 0),
        [grant(1, 6, 0, 0)]
    );
    assert!(step(&mut s, 1, with(7, 1, "m", vec![]), 0).is_empty()); // queued
    assert_eq!(
        reason_of(&step(&mut s, 1, with(8, 1, "m", vec![]), 0)),
        [(1, 8, RejectReason::Overload)]
    );
    assert_eq!(s.counters.rejects(RejectReason::BadRequest), 4);
    assert_eq!(s.queued_per_device(), [1, 1]);
}

#[test]
fn sjf_grants_the_shorter_waiting_job_first_across_connections() {
    let mut s = state(&config(1, "sjf:alpha=0,slack=off"), 2);
    assert_eq!(step(&mut s, 1, acquire(1, "a", 10), 0), [grant(1, 1, 0, 0)]);
    assert!(step(&mut s, 2, acquire(1, "long", 1000), 1).is_empty());
    assert!(step(&mut s, 1, acquire(2, "short", 10), 2).is_empty());
    let out = step(&mut s, 1, Message::Release { id: 1, run_ns: 10 }, 5);
    assert_eq!(
        out,
        [
            Out {
                conn: 1,
                msg: Message::Released { id: 1 }
            },
            grant(1, 2, 0, 3)
        ]
    );
    let out = step(&mut s, 1, Message::Release { id: 2, run_ns: 0 }, 9);
    assert_eq!(out[1], grant(2, 1, 0, 8));
}

#[test]
fn release_feeds_the_estimator_and_ignores_other_ids() {
    let mut s = state(&config(1, "sjf:alpha=0,slack=off"), 1);
    assert_eq!(step(&mut s, 1, acquire(1, "m", 0), 0).len(), 1);
    step(&mut s, 1, Message::Release { id: 1, run_ns: 777 }, 10);
    assert_eq!(s.costs.estimate(0, 1), 777);
    // Unknown ids and queued ids: RELEASED, nothing else changes.
    assert_eq!(step(&mut s, 1, acquire(2, "m", 0), 11).len(), 1);
    assert!(step(&mut s, 1, acquire(3, "m", 0), 12).is_empty());
    for id in [99, 3] {
        let out = step(&mut s, 1, Message::Release { id, run_ns: 5 }, 13);
        assert_eq!(
            out,
            [Out {
                conn: 1,
                msg: Message::Released { id }
            }]
        );
    }
    assert_eq!(s.sched.queued(), 1);
    assert_eq!(s.counters.releases(Cause::Release), 1);
}

#[test]
fn cancel_withdraws_only_queued_acquires() {
    let mut s = state(&config(1, "fifo"), 1);
    step(&mut s, 1, acquire(1, "m", 1), 0);
    step(&mut s, 1, acquire(2, "m", 1), 0);
    assert!(step(&mut s, 1, Message::Cancel { id: 1 }, 1).is_empty()); // granted: ignored
    assert!(step(&mut s, 1, Message::Cancel { id: 42 }, 1).is_empty()); // unknown
    assert_eq!(
        reason_of(&step(&mut s, 1, Message::Cancel { id: 2 }, 1)),
        [(1, 2, RejectReason::Cancelled)]
    );
    assert_eq!(s.sched.queued(), 0);
    assert_eq!(s.queued_per_device(), [0]);
}

#[test]
fn disconnect_releases_grants_and_withdraws_queued_jobs() {
    let mut s = state(&config(2, "fifo"), 3);
    step(&mut s, 1, acquire(1, "m", 1), 0);
    step(&mut s, 1, acquire(2, "m", 1), 0);
    step(&mut s, 1, acquire(3, "m", 1), 0); // queued
    assert!(step(&mut s, 2, acquire(1, "m", 1), 1).is_empty());
    s.disconnect(1, None, 5);
    let mut out = Vec::new();
    s.dispatch(5, &mut out);
    assert_eq!(out, [grant(2, 1, 0, 4)]);
    assert_eq!(s.counters.releases(Cause::Disconnect), 2);
    assert_eq!(
        (s.clients(), s.sched.running(), s.sched.queued()),
        (2, 1, 0)
    );
    s.disconnect(1, None, 6); // twice: nothing
    assert_eq!(s.counters.releases(Cause::Disconnect), 2);
}

#[test]
fn protocol_errors_drop_the_connection_and_its_grants() {
    let mut s = state(&config(1, "fifo"), 2);
    step(&mut s, 1, acquire(1, "m", 1), 0);
    step(&mut s, 2, acquire(1, "m", 1), 0);
    let out = step(&mut s, 1, hello(), 3);
    assert!(matches!(
        out[0].msg,
        Message::Error {
            code: ErrorCode::OutOfOrder,
            ..
        }
    ));
    assert_eq!(out[1], grant(2, 1, 0, 3));
    assert_eq!(s.take_notices().len(), 1);
}

#[test]
fn max_hold_counts_once_and_revoke_takes_back() {
    for revoke in [false, true] {
        let mut cfg = config(1, "fifo");
        cfg.max_hold = Some(100);
        cfg.revoke = revoke;
        let mut s = state(&cfg, 2);
        step(&mut s, 1, acquire(1, "m", 1), 0);
        step(&mut s, 2, acquire(7, "m", 1), 10);
        assert_eq!(s.next_wake(), Some(100));
        let mut out = Vec::new();
        s.tick(99, &mut out);
        assert!(out.is_empty());
        s.tick(100, &mut out);
        s.dispatch(100, &mut out);
        assert_eq!(s.counters.hold_exceeded_total(), 1);
        assert_eq!(s.take_notices().len(), 1);
        if revoke {
            assert_eq!(
                out,
                [
                    Out {
                        conn: 1,
                        msg: Message::Revoked { id: 1 }
                    },
                    grant(2, 7, 0, 90)
                ]
            );
            assert_eq!(s.counters.releases(Cause::Revoke), 1);
            // The dead id: RELEASED, and the new holder keeps the device.
            let out = step(&mut s, 1, Message::Release { id: 1, run_ns: 0 }, 101);
            assert_eq!(out.len(), 1);
            assert_eq!(s.sched.running(), 1);
        } else {
            assert!(out.is_empty());
            out.clear();
            s.tick(1000, &mut out);
            assert_eq!(s.counters.hold_exceeded_total(), 1); // once per grant
            assert_eq!(s.next_wake(), None);
        }
    }
}

#[test]
fn deadlines_reject_queued_jobs_when_due() {
    for (policy, due) in [("fifo", 51), ("edf", 31)] {
        let mut s = state(&config(1, policy), 1);
        step(&mut s, 1, acquire(1, "m", 1), 0);
        let m = Message::Acquire(Acquire {
            id: 2,
            model: "m".into(),
            batch: 1,
            cost_ns: 20,
            timeout_ns: 50,
            devices: vec![],
        });
        assert!(step(&mut s, 1, m, 0).is_empty());
        assert_eq!(s.next_wake(), Some(due), "{policy}");
        let mut out = Vec::new();
        s.dispatch(due - 1, &mut out);
        assert!(out.is_empty(), "{policy}");
        s.dispatch(due, &mut out);
        assert_eq!(
            reason_of(&out),
            [(1, 2, RejectReason::Deadline)],
            "{policy}"
        );
        assert_eq!(s.next_wake(), None);
    }
}

#[test]
fn shutdown_rejects_every_queued_job() {
    let mut s = state(&config(1, "fifo"), 2);
    step(&mut s, 1, acquire(1, "m", 1), 0);
    step(&mut s, 1, acquire(2, "m", 1), 0);
    step(&mut s, 2, acquire(3, "m", 1), 0);
    let mut out = Vec::new();
    s.shutdown(&mut out);
    let mut got = reason_of(&out);
    got.sort_by_key(|g| (g.0, g.1));
    assert_eq!(
        got,
        [
            (1, 2, RejectReason::ShuttingDown),
            (2, 3, RejectReason::ShuttingDown)
        ]
    );
    assert_eq!(s.sched.queued(), 0);
}

#[test]
fn stats_metrics_and_timeline_report_the_state() {
    let mut s = state(&config(2, "fifo"), 1);
    step(&mut s, 1, acquire(1, "m", 1), 0);
    step(
        &mut s,
        1,
        Message::Release { id: 1, run_ns: 1 },
        2_000_000_000,
    );
    let stats: serde_json::Value = serde_json::from_str(&s.stats_json(3_000_000_000)).unwrap();
    assert_eq!(stats["devices"][0]["busy_s"], 2.0);
    assert_eq!(stats["counters"]["releases"]["release"], 1);
    assert_eq!(stats["clients"], 1);
    let text = s.render_metrics(3_000_000_000);
    assert!(
        text.contains("lanes_arbiter_device_busy_seconds_total{device=\"sim:0\"} 2.0\n"),
        "{text}"
    );
    let trace: serde_json::Value = serde_json::from_str(&s.timeline_json().unwrap()).unwrap();
    let slices: Vec<_> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .collect();
    assert_eq!(slices.len(), 1);
    assert_eq!(slices[0]["dur"], 2e6);
    assert_eq!(slices[0]["args"]["service"], "svc");
}
