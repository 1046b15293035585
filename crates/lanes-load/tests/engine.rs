//! The engine against real loopback servers: counts, bounds, error classes,
//! transports, stop, and the send log. Asserts behaviour, never speed.

mod common;

use std::time::{Duration, Instant};

use common::Behaviour;
use lanes_load::report::Report;
use lanes_load::{Run, RunSpec};

fn spec(url: String) -> RunSpec {
    RunSpec {
        url,
        seed: 1,
        threads: Some(2),
        ..RunSpec::default()
    }
}

/// A started run and its configuration (for its report).
fn started(spec: RunSpec) -> (lanes_load::RunConfig, Run) {
    let config = spec.build().expect("valid spec");
    let run = Run::start(config.clone()).expect("the run starts");
    (config, run)
}

fn run(spec: RunSpec) -> Report {
    let (config, run) = started(spec);
    Report::new(&config, &run.join())
}

#[test]
fn closed_loop_sends_exactly_the_requests_asked_for() {
    let server = common::http(Behaviour::Ok);
    let r = run(RunSpec {
        connections: Some(4),
        requests: Some(500),
        ..spec(server.url("/"))
    });
    assert_eq!(r.mode, "closed");
    assert_eq!((r.requests, r.sent), (500, 500));
    assert_eq!(r.errors.total(), 0);
    assert_eq!(r.status_codes["200"], 500);
    assert_eq!(r.late_sends_fraction, 0.0);
    assert_eq!(
        server.requests.load(std::sync::atomic::Ordering::Relaxed),
        500
    );
    assert_eq!(r.timeseries.iter().map(|p| p.requests).sum::<u64>(), 500);
    assert_eq!(r.bytes.received, 1000);
}

#[test]
fn open_loop_sends_the_whole_schedule() {
    let server = common::http(Behaviour::Ok);
    let r = run(RunSpec {
        rate: Some(2000.0),
        requests: Some(400),
        connections: Some(16),
        ..spec(server.url("/"))
    });
    assert_eq!(r.mode, "open");
    assert_eq!(r.scheduled, Some(400));
    assert_eq!((r.sent, r.requests, r.errors.total()), (400, 400, 0));
    // 400 Poisson arrivals at 2000/s span about 0.2 s.
    assert!(r.duration_s > 0.1 && r.duration_s < 5.0, "{}", r.duration_s);
}

/// The sent-vs-scheduled rule: a run bounded by a duration schedules exactly
/// the window's count (rate x duration, rounded) and sends no more than it
/// scheduled — all of it when the run ends by itself.
fn assert_sent_within_schedule(r: &Report, window_count: u64) {
    let scheduled = r.scheduled.expect("open loop");
    assert_eq!(scheduled, window_count, "scheduled");
    assert!(r.sent <= scheduled, "sent {} of {scheduled}", r.sent);
    assert_eq!(
        r.sent, scheduled,
        "a run that ends by itself sends its schedule"
    );
    assert_eq!(r.requests + r.errors.total() + r.unfinished, r.sent);
    let binned: u64 = r.sends_10ms.counts.iter().map(|&n| u64::from(n)).sum();
    assert_eq!(binned, r.sent, "sends_10ms counts every send once");
}

#[test]
fn open_loop_with_a_duration_sends_exactly_rate_times_duration() {
    use lanes_load::pacer::Arrival::{Constant, Poisson};
    let server = common::http(Behaviour::Ok);
    // (arrival, threads, seed, request bound, the schedule): a request bound
    // below the window's count is the schedule.
    for (arrival, threads, seed, requests, count) in [
        (Poisson, 1, 1, None, 2000),
        (Poisson, 2, 7, None, 2000),
        (Constant, 2, 1, None, 2000),
        (Poisson, 2, 1, Some(300), 300),
    ] {
        let r = run(RunSpec {
            rate: Some(2000.0),
            arrival,
            duration_s: Some(1.0),
            requests,
            connections: Some(32),
            threads: Some(threads),
            seed,
            ..spec(server.url("/"))
        });
        assert_sent_within_schedule(&r, count);
        assert_eq!(r.errors.total(), 0);
        assert_eq!(r.sends_10ms.bin_ms, 10);
        assert_eq!(r.sends_10ms.start_ns, 0);
    }
}

#[test]
fn a_server_too_slow_for_the_schedule_still_gets_the_schedule_and_no_more() {
    // 4 connections at 20 ms a reply carry 200/s; 400/s is offered for 0.5 s:
    // sends queue and leave late, past the window, but every slot of the
    // window leaves once and nothing else does.
    let server = common::http(Behaviour::Slow(20));
    let r = run(RunSpec {
        rate: Some(400.0),
        duration_s: Some(0.5),
        connections: Some(4),
        ..spec(server.url("/"))
    });
    assert_sent_within_schedule(&r, 200);
    assert!(r.late_sends > 0);
    assert_eq!(
        server.requests.load(std::sync::atomic::Ordering::Relaxed),
        200
    );
}

#[test]
fn chunked_replies_and_replies_to_head_are_read_to_their_end() {
    // Chunked: 2 payload bytes a reply; HEAD: the head alone (Content-Length: 2, no body).
    for (how, method, bytes) in [(Behaviour::Chunked, "GET", 400), (Behaviour::Ok, "HEAD", 0)] {
        let server = common::http(how);
        let r = run(RunSpec {
            requests: Some(200),
            method: Some(method.into()),
            connections: Some(4),
            ..spec(server.url("/"))
        });
        assert_eq!(
            (r.requests, r.errors.total()),
            (200, 0),
            "{method}: {:?}",
            r.errors
        );
        assert_eq!(r.bytes.received, bytes, "{method}");
        assert_eq!(
            server.requests.load(std::sync::atomic::Ordering::Relaxed),
            200
        );
    }
}

#[test]
fn a_connection_the_server_closed_while_idle_is_reopened_without_errors() {
    // The server answers (keep-alive implied) and then closes; the next send
    // comes 100 ms later, on a connection seen closed while idle.
    let server = common::http(Behaviour::CloseIdle);
    let r = run(RunSpec {
        rate: Some(10.0),
        arrival: lanes_load::pacer::Arrival::Constant,
        requests: Some(5),
        connections: Some(1),
        threads: Some(1),
        ..spec(server.url("/"))
    });
    assert_eq!((r.requests, r.errors.total()), (5, 0), "{:?}", r.errors);
}

#[test]
fn a_duration_bound_stops_the_run_by_itself() {
    let server = common::http(Behaviour::Ok);
    let t0 = Instant::now();
    let r = run(RunSpec {
        rate: Some(500.0),
        arrival: lanes_load::pacer::Arrival::Constant,
        duration_s: Some(0.5),
        ..spec(server.url("/"))
    });
    assert!(t0.elapsed() < Duration::from_secs(5));
    // Constant gaps of 2 ms from 0: slots at 0, 2, ..., 498 ms.
    assert_eq!(r.scheduled, Some(250));
    assert_eq!(r.sent, 250);
}

#[test]
fn statuses_of_400_and_above_count_as_status_errors() {
    let server = common::http(Behaviour::Status(500));
    let r = run(RunSpec {
        requests: Some(50),
        ..spec(server.url("/"))
    });
    assert_eq!(r.requests, 50);
    assert_eq!(r.errors.status, 50);
    assert_eq!(r.status_codes["500"], 50);
    assert_eq!(r.errors.total(), 50);
}

#[test]
fn resets_count_as_read_errors() {
    let server = common::http(Behaviour::Reset);
    let r = run(RunSpec {
        requests: Some(20),
        connections: Some(2),
        ..spec(server.url("/"))
    });
    assert_eq!(r.requests, 0);
    assert_eq!(r.errors.read, 20, "{:?}", r.errors);
}

#[test]
fn a_server_that_stalls_gives_timeouts() {
    let server = common::http(Behaviour::Stall);
    let t0 = Instant::now();
    let r = run(RunSpec {
        requests: Some(3),
        connections: Some(3),
        timeout_s: Some(0.2),
        ..spec(server.url("/"))
    });
    assert_eq!(r.errors.timeout, 3);
    assert_eq!(r.requests, 0);
    assert!(t0.elapsed() < Duration::from_secs(3));
}

#[test]
fn a_reset_while_the_body_is_written_is_a_write_or_read_error() {
    let server = common::http(Behaviour::ResetWhileReading);
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("big.bin");
    std::fs::write(&body, vec![7u8; 16 << 20]).unwrap();
    let r = run(RunSpec {
        requests: Some(4),
        connections: Some(1),
        threads: Some(1),
        body_file: Some(body),
        ..spec(server.url("/"))
    });
    assert_eq!(r.errors.write + r.errors.read, 4, "{:?}", r.errors);
    assert!(
        r.errors.write > 0,
        "a reset during a 16 MiB write: {:?}",
        r.errors
    );
}

#[test]
fn connections_the_server_closes_between_requests_are_reopened_without_errors() {
    let server = common::http(Behaviour::CloseEach);
    let r = run(RunSpec {
        requests: Some(100),
        connections: Some(2),
        ..spec(server.url("/"))
    });
    assert_eq!((r.requests, r.errors.total()), (100, 0), "{:?}", r.errors);
}

#[test]
fn an_unreachable_target_fails_before_the_run() {
    let addr = common::closed_port();
    let err = Run::start(spec(format!("http://{addr}/")).build().unwrap()).unwrap_err();
    assert_eq!(err.code(), "connect_failed");
    assert!(
        err.to_string()
            .contains("cannot connect to http://127.0.0.1:"),
        "{err}"
    );
}

#[test]
fn http_over_a_unix_socket() {
    let server = common::unix(false);
    let url = format!("unix:{}:/v2/health/ready", server.path.display());
    let r = run(RunSpec {
        requests: Some(100),
        ..spec(url)
    });
    assert_eq!((r.requests, r.errors.total()), (100, 0));
}

#[test]
fn raw_frames_over_a_unix_socket() {
    let server = common::unix(true);
    let r = run(RunSpec {
        requests: Some(100),
        body: Some("hello".into()),
        rate: Some(5000.0),
        ..spec(format!("frame+unix:{}", server.path.display()))
    });
    assert_eq!((r.requests, r.errors.total()), (100, 0));
    assert_eq!(r.status_codes["0"], 100);
    assert_eq!((r.bytes.sent, r.bytes.received), (500, 500));
}

#[test]
fn a_hello_per_connection_and_sequences_of_frames() {
    let server = common::unix(true);
    let dir = tempfile::tempdir().unwrap();
    let hello = dir.path().join("hello.bin");
    std::fs::write(&hello, b"HELLO").unwrap();
    let frame = |p: &[u8]| [&(p.len() as u32).to_be_bytes()[..], p].concat();
    let body = [frame(b"ab"), frame(b"cde")].concat();
    let r = run(RunSpec {
        requests: Some(100),
        connections: Some(3),
        body_file: None,
        body: Some(String::from_utf8(body).unwrap()),
        frame_hello: Some(hello),
        frame_seq: true,
        ..spec(format!("frame+unix:{}", server.path.display()))
    });
    assert_eq!((r.requests, r.errors.total()), (100, 0));
    // Each exchange is two frames and their two replies; the hellos are not recorded.
    assert_eq!((r.bytes.sent, r.bytes.received), (1300, 500));
    // 3 connections for the run, plus the preflight's: one hello each.
    let seen = server.frames.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(seen, 200 + 4);
}

#[test]
fn stop_ends_a_run_early_and_still_reports() {
    // Closed loop, and open loop offering 1000/s to a server that carries 200/s.
    for rate in [None, Some(1000.0)] {
        let server = common::http(Behaviour::Slow(20));
        let (config, run) = started(RunSpec {
            rate,
            duration_s: Some(60.0),
            connections: Some(4),
            ..spec(server.url("/"))
        });
        std::thread::sleep(Duration::from_millis(300));
        assert!(!run.is_finished());
        let p = run.progress();
        assert!(p.replies > 0 && p.elapsed_s > 0.2, "{p:?}");
        let t0 = Instant::now();
        run.stop();
        assert!(run.wait(Duration::from_secs(5)));
        let r = Report::new(&config, &run.join());
        assert!(t0.elapsed() < Duration::from_secs(2));
        assert!(r.interrupted);
        assert!(r.requests > 0);
        assert!(r.duration_s < 10.0);
        let binned: u64 = r.sends_10ms.counts.iter().map(|&n| u64::from(n)).sum();
        assert_eq!(binned, r.sent);
        // A stopped open-loop run sent no more than it had scheduled, and
        // scheduled only part of its window.
        if let Some(scheduled) = r.scheduled {
            assert!(r.sent <= scheduled, "{} of {scheduled}", r.sent);
            assert!(scheduled < 60_000, "{scheduled}");
        }
    }
}

#[test]
fn in_open_loop_latency_counts_the_wait_for_a_free_connection() {
    // One connection, 20 ms per reply, 200 req/s offered: sends queue behind
    // each other, so latency grows while service time stays ~20 ms.
    let server = common::http(Behaviour::Slow(20));
    let r = run(RunSpec {
        rate: Some(200.0),
        arrival: lanes_load::pacer::Arrival::Constant,
        requests: Some(40),
        connections: Some(1),
        threads: Some(1),
        ..spec(server.url("/"))
    });
    assert_eq!(r.requests, 40);
    assert!(r.service_time_ms.p50 < 100.0, "{:?}", r.service_time_ms);
    assert!(r.latency_ms.max > 300.0, "{:?}", r.latency_ms);
    assert!(r.late_sends_fraction > 0.5, "{}", r.late_sends_fraction);
}

#[test]
fn the_send_log_has_one_line_per_send_in_schedule_order() {
    let server = common::http(Behaviour::Ok);
    let config = RunSpec {
        rate: Some(1000.0),
        requests: Some(200),
        send_log: Some("unused-by-the-engine".into()),
        ..spec(server.url("/"))
    }
    .build()
    .unwrap();
    let mut outcome = Run::start(config).unwrap().join();
    let mut log = outcome.recorder.send_log.take().unwrap();
    let text = lanes_load::send_log_text(&mut log);
    let rows: Vec<Vec<u64>> = text
        .lines()
        .skip(1)
        .map(|l| l.split(' ').map(|x| x.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 200);
    assert!(rows
        .iter()
        .enumerate()
        .all(|(i, r)| r[0] == i as u64 && r[2] >= r[1]));
    assert!(rows.windows(2).all(|w| w[0][1] <= w[1][1]));
}
