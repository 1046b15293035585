//! The link's decisions ([`Book`]) as tables: no socket, no clock.

use super::*;

const MS: Nanos = 1_000_000;

fn names() -> Vec<String> {
    vec!["sim:0".into(), "sim:1".into()]
}

fn ask(devices: &[usize], deadline: Option<Nanos>) -> Ask {
    Ask {
        model: Arc::from("m"),
        rows: 2,
        cost: 3 * MS,
        deadline,
        devices: devices.iter().copied().collect(),
    }
}

/// An ask of `job` for `devices`, no deadline.
fn ask_on(job: JobId, devices: &[usize]) -> Request {
    Request::Ask {
        job,
        ask: ask(devices, None),
    }
}

fn request(book: &mut Book, now: Nanos, r: Request) -> Vec<Effect> {
    let mut out = Vec::new();
    book.request(now, r, &mut out);
    out
}

fn granted(job: JobId, device: DeviceId) -> Effect {
    Effect::Deliver(Event::Granted { job, device })
}

/// The decisions in `out`, without the notices for the logs (tested apart).
fn decisions(out: Vec<Effect>) -> Vec<Effect> {
    out.into_iter()
        .filter(|e| !matches!(e, Effect::Deliver(Event::Notice(_))))
        .collect()
}

/// The notices in `out`: (warning, message).
fn notices(out: &[Effect]) -> Vec<(bool, String)> {
    out.iter()
        .filter_map(|e| match e {
            Effect::Deliver(Event::Notice(n)) => Some((n.warning, n.message.clone())),
            _ => None,
        })
        .collect()
}

fn message(book: &mut Book, m: Message) -> Vec<Effect> {
    let mut out = Vec::new();
    book.message(0, m, &mut out);
    decisions(out)
}

fn grant(id: JobId, device: u16) -> Message {
    Message::Grant {
        id,
        device,
        wait_ns: 0,
    }
}

fn reject(id: JobId, reason: RejectReason, message: &str) -> Message {
    Message::Reject {
        id,
        reason,
        message: message.into(),
    }
}

fn up(book: &mut Book, conn: u64, daemon: &[&str]) -> Vec<Effect> {
    let daemon: Vec<String> = daemon.iter().map(|s| (*s).to_owned()).collect();
    let mut out = Vec::new();
    book.up(0, conn, &daemon, &mut out);
    decisions(out)
}

#[test]
fn an_ask_becomes_an_acquire_on_the_daemons_device_numbers() {
    let mut book = Book::new(Fallback::FailClosed, "s".into(), names());
    assert!(up(&mut book, 1, &["cuda:0", "sim:1", "sim:0"]).is_empty());
    let out = request(
        &mut book,
        10 * MS,
        Request::Ask {
            job: 7,
            ask: ask(&[0, 1], Some(25 * MS)),
        },
    );
    assert_eq!(
        out,
        [Effect::Send(Message::Acquire(Acquire {
            id: 7,
            model: "m".into(),
            batch: 2,
            cost_ns: 3 * MS,
            timeout_ns: 15 * MS,
            devices: vec![2, 1],
        }))]
    );
    // GRANT of the daemon's device 1 is this server's sim:1.
    let out = message(&mut book, grant(7, 1));
    assert_eq!(out, [granted(7, 1)]);
    // The finished batch is released with its run time.
    let out = request(
        &mut book,
        0,
        Request::Release {
            job: 7,
            run: 4 * MS,
        },
    );
    assert_eq!(
        out,
        [Effect::Send(Message::Release {
            id: 7,
            run_ns: 4 * MS
        })]
    );
}

#[test]
fn an_ask_no_device_of_the_daemon_can_take_is_refused() {
    let mut book = Book::new(Fallback::FailOpen, "s".into(), names());
    up(&mut book, 1, &["cuda:0"]);
    let out = request(&mut book, 0, ask_on(1, &[0]));
    let [Effect::Deliver(Event::Refused {
        job: 1,
        refusal: Refusal::Refused(why),
    })] = &out[..]
    else {
        panic!("{out:?}");
    };
    assert!(why.contains("sim:0"), "{why}");
}

#[test]
fn a_withdrawn_ask_is_cancelled_and_a_crossing_grant_released() {
    let mut book = Book::new(Fallback::FailOpen, "s".into(), names());
    up(&mut book, 1, &["sim:0", "sim:1"]);
    request(&mut book, 0, ask_on(3, &[0]));
    let out = request(&mut book, 0, Request::Withdraw { job: 3 });
    assert_eq!(out, [Effect::Send(Message::Cancel { id: 3 })]);
    let out = message(&mut book, grant(3, 0));
    assert_eq!(out, [Effect::Send(Message::Release { id: 3, run_ns: 0 })]);
    // The REJECT (cancelled) that follows a CANCEL is nothing to the driver.
    let out = message(&mut book, reject(3, RejectReason::Cancelled, ""));
    assert!(out.is_empty());
}

#[test]
fn rejects_map_to_refusals() {
    let mut book = Book::new(Fallback::FailClosed, "s".into(), names());
    up(&mut book, 1, &["sim:0", "sim:1"]);
    for (job, reason, want_deadline) in [
        (1, RejectReason::Deadline, true),
        (2, RejectReason::Overload, false),
        (3, RejectReason::ShuttingDown, false),
    ] {
        request(&mut book, 0, ask_on(job, &[0]));
        let out = message(&mut book, reject(job, reason, "queue full"));
        let [Effect::Deliver(Event::Refused { job: j, refusal })] = &out[..] else {
            panic!("{out:?}");
        };
        assert_eq!(*j, job);
        match refusal {
            Refusal::Deadline => assert!(want_deadline),
            Refusal::Refused(why) => {
                assert!(!want_deadline);
                assert!(
                    why.contains(reason.as_str()) && why.contains("queue full"),
                    "{why}"
                );
            }
        }
    }
}

#[test]
fn fail_open_runs_alone_at_one_batch_per_device_while_the_daemon_is_down() {
    let mut book = Book::new(Fallback::FailOpen, "s".into(), names());
    assert_eq!(request(&mut book, 0, ask_on(1, &[0, 1])), [granted(1, 0)]);
    assert_eq!(request(&mut book, 0, ask_on(2, &[0])), []);
    assert_eq!(request(&mut book, 0, ask_on(3, &[0, 1])), [granted(3, 1)]);
    assert_eq!(request(&mut book, 0, ask_on(4, &[1])), []);
    // sim:1 frees: job 4 (the only waiter that may use it) takes it.
    assert_eq!(
        request(&mut book, 0, Request::Release { job: 3, run: MS }),
        [granted(4, 1)]
    );
    // sim:0 frees: the oldest waiter, job 2.
    assert_eq!(
        request(&mut book, 0, Request::Release { job: 1, run: MS }),
        [granted(2, 0)]
    );
    assert_eq!(
        request(&mut book, 0, Request::Release { job: 2, run: MS }),
        []
    );
    assert_eq!(request(&mut book, 0, ask_on(5, &[0])), [granted(5, 0)]);
}

#[test]
fn fail_closed_waits_for_the_daemon_until_the_deadline() {
    let mut book = Book::new(Fallback::FailClosed, "/run/a.sock".into(), names());
    for (job, deadline) in [(1, Some(5 * MS)), (2, None), (3, Some(9 * MS))] {
        let out = request(
            &mut book,
            0,
            Request::Ask {
                job,
                ask: ask(&[0], deadline),
            },
        );
        assert!(out.is_empty(), "{out:?}");
    }
    assert_eq!(book.next_wake(), Some(5 * MS));
    let mut out = Vec::new();
    book.expire(5 * MS, &mut out);
    let [Effect::Deliver(Event::Refused {
        job: 1,
        refusal: Refusal::Refused(why),
    })] = &out[..]
    else {
        panic!("{out:?}");
    };
    assert!(
        why.contains("/run/a.sock") && why.contains("fail_closed"),
        "{why}"
    );
    // The daemon comes back: the rest go to it, oldest first.
    let out = up(&mut book, 1, &["sim:0"]);
    let ids: Vec<u64> = out
        .iter()
        .map(|e| match e {
            Effect::Send(Message::Acquire(a)) => a.id,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(ids, [2, 3]);
    assert_eq!(book.next_wake(), None);
}

#[test]
fn a_lost_connection_sends_asks_round_again_and_forgets_grants() {
    let mut book = Book::new(Fallback::FailOpen, "s".into(), names());
    up(&mut book, 1, &["sim:0", "sim:1"]);
    for job in [1, 2] {
        request(&mut book, 0, ask_on(job, &[1]));
    }
    let out = message(&mut book, grant(1, 1));
    assert_eq!(out, [granted(1, 1)]);
    // Down: job 2 falls back to the local sim:1 (job 1's grant is the
    // daemon's, forgotten: it does not hold the local device).
    let mut out = Vec::new();
    book.down(0, &mut out);
    assert_eq!(decisions(out), [granted(2, 1)]);
    // Job 1's release goes nowhere; job 2's frees the local device.
    assert!(request(&mut book, 0, Request::Release { job: 1, run: MS }).is_empty());
    assert!(request(&mut book, 0, Request::Release { job: 2, run: MS }).is_empty());
    // Back up on a new connection: asks go to the daemon again.
    up(&mut book, 2, &["sim:0", "sim:1"]);
    let out = request(&mut book, 0, ask_on(9, &[1]));
    assert!(matches!(&out[..], [Effect::Send(Message::Acquire(a))] if a.id == 9));
}

#[test]
fn shutting_down_under_fail_open_falls_back() {
    let mut book = Book::new(Fallback::FailOpen, "s".into(), names());
    up(&mut book, 1, &["sim:0", "sim:1"]);
    request(&mut book, 0, ask_on(4, &[0]));
    let out = message(&mut book, reject(4, RejectReason::ShuttingDown, "stopping"));
    assert_eq!(out, [granted(4, 0)]);
    assert!(!book.connected());
}

#[test]
fn the_logs_hear_once_per_change_of_the_daemons_state() {
    let mut book = Book::new(Fallback::FailOpen, "/run/a.sock".into(), names());
    // Unreachable at start, twice: said once.
    let mut out = Vec::new();
    book.unreachable(&mut out);
    book.unreachable(&mut out);
    let said = notices(&out);
    assert_eq!(said.len(), 1);
    assert!(said[0].0);
    assert!(
        said[0].1.contains("/run/a.sock is not reachable") && said[0].1.contains("fail_open"),
        "{said:?}"
    );
    // Back, with a device the daemon does not have.
    let mut out = Vec::new();
    book.up(0, 1, &["sim:0".into(), "cuda:0".into()], &mut out);
    assert_eq!(
        notices(&out),
        [(
            false,
            "lanes arbiter at /run/a.sock: back; it does not grant sim:1 (its devices: sim:0, \
             cuda:0)"
                .to_owned()
        )]
    );
    // Lost, then the reconnects fail: one warning.
    let mut out = Vec::new();
    book.down(0, &mut out);
    book.unreachable(&mut out);
    let said = notices(&out);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].0 && said[0].1.contains("connection lost"),
        "{said:?}"
    );
    // A first connection is "connected".
    let mut fresh = Book::new(Fallback::FailClosed, "s".into(), names());
    let mut out = Vec::new();
    fresh.up(0, 1, &["sim:0".into(), "sim:1".into()], &mut out);
    assert_eq!(
        notices(&out),
        [(false, "lanes arbiter at s: connected".to_owned())]
    );
}

#[test]
fn a_refusal_other_than_a_missed_deadline_is_logged() {
    let mut book = Book::new(Fallback::FailClosed, "s".into(), names());
    up(&mut book, 1, &["sim:0", "sim:1"]);
    for (job, reason, logged) in [
        (1, RejectReason::Deadline, false),
        (2, RejectReason::Overload, true),
    ] {
        request(&mut book, 0, ask_on(job, &[0]));
        let mut out = Vec::new();
        book.message(0, reject(job, reason, "queue full"), &mut out);
        let said = notices(&out);
        assert_eq!(said.len(), usize::from(logged), "{said:?}");
        if logged {
            assert!(
                said[0].0 && said[0].1.starts_with("m: the arbiter refused"),
                "{said:?}"
            );
        }
    }
}
