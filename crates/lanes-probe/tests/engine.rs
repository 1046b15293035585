//! The loop around the probes: the targets file reloaded when it changes or
//! when asked (state kept for targets that stay), a bad rewrite refused, the
//! metrics endpoint, stop, and start-up errors. `connect` mode, so no
//! privilege is needed.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::*;
use lanes_probe::{Mode, Monitor, ProbeSpec};

#[test]
fn targets_file_is_reloaded_on_change_and_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let a = listener();
    let b = listener();
    let (a, b) = (a.local_addr().unwrap(), b.local_addr().unwrap());
    let path = targets_file(dir.path(), &[format!("{a} a")]);
    let monitor = Monitor::start(spec(&path, Mode::Connect).build().unwrap()).unwrap();
    let mut log = Log::default();
    read_until(&monitor, &mut log, |l| l.events.len() == 1);

    // Changed on disk: reloaded before the next round; only the new target reports.
    write_targets(&path, &[format!("{a} a"), format!("{b} b")]);
    read_until(&monitor, &mut log, |l| l.events.len() == 2);
    assert!(
        log.notices
            .iter()
            .any(|n| n.contains("targets reloaded") && n.contains("2 targets (1 added, 0 removed)")),
        "{:?}",
        log.notices
    );

    // A rewrite that does not parse is refused; the previous targets stay.
    write_targets(&path, &[format!("{a} a"), "nonsense".into()]);
    read_until(&monitor, &mut log, |l| {
        l.notices.iter().any(|n| n.contains("targets not reloaded"))
    });
    let refused = log
        .notices
        .iter()
        .find(|n| n.contains("not reloaded"))
        .unwrap();
    assert!(
        refused.contains("line 2") && refused.contains("keeping the previous 2 targets"),
        "{refused}"
    );

    // Asked to reload (SIGHUP in the CLI), with b removed.
    write_targets(&path, &[format!("{b} b")]);
    monitor.reload();
    read_until(&monitor, &mut log, |l| {
        l.notices
            .iter()
            .any(|n| n.contains("1 targets (0 added, 1 removed)"))
    });
    let seen = log.rounds.len();
    read_until(&monitor, &mut log, |l| l.rounds.len() >= seen + 2);
    monitor.stop();
    assert!(monitor.wait(DEADLINE));
    assert_eq!(
        log.transitions(),
        [format!("{a} up<-"), format!("{b} up<-")],
        "state kept across reloads: {log:#?}"
    );
    assert_eq!(log.rounds.last().unwrap().targets, 1);
}

fn get(addr: std::net::SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn metrics_are_served_and_stop_is_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let open = listener();
    let path = targets_file(
        dir.path(),
        &[
            format!("{}", open.local_addr().unwrap()),
            format!("127.0.0.1:{}", closed_port()),
        ],
    );
    let monitor = Monitor::start(
        ProbeSpec {
            metrics_port: Some(0),
            interval_s: Some(3600.0),
            ..spec(&path, Mode::Connect)
        }
        .build()
        .unwrap(),
    )
    .unwrap();
    let addr = monitor.metrics_addr().unwrap();
    let mut log = Log::default();
    read_until(&monitor, &mut log, |l| !l.rounds.is_empty());
    let page = get(addr, "/metrics");
    assert!(page.starts_with("HTTP/1.1 200 OK\r\n"), "{page}");
    assert!(page
        .contains("Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\n"));
    assert!(page.ends_with("\n# EOF\n"), "{page}");
    for line in [
        "lanes_probe_info{mode=\"connect\"} 1",
        "lanes_probe_targets{state=\"up\"} 1",
        "lanes_probe_targets{state=\"refused\"} 1",
        "lanes_probe_rounds_total 1",
        "lanes_probe_probes_sent_total 2",
        "lanes_probe_replies_total 2",
        "lanes_probe_transitions_total{from=\"none\",to=\"up\"} 1",
    ] {
        assert!(
            page.lines().any(|l| l == line),
            "missing {line:?} in\n{page}"
        );
    }
    assert!(get(addr, "/nope").starts_with("HTTP/1.1 404"));
    // The next round is an hour away: stop must not wait for it.
    monitor.stop();
    assert!(monitor.wait(Duration::from_secs(2)));
    monitor.join().unwrap();
}

#[test]
fn start_up_errors_have_codes() {
    let dir = tempfile::tempdir().unwrap();
    let bad = targets_file(
        dir.path(),
        &["127.0.0.1:80".into(), "127.0.0.1:99999".into()],
    );
    let e = Monitor::start(spec(&bad, Mode::Connect).build().unwrap()).unwrap_err();
    assert_eq!(e.code(), "targets_invalid");
    assert!(e.to_string().contains("targets.txt line 2:"), "{e}");
    let missing = dir.path().join("missing.txt");
    let e = Monitor::start(spec(&missing, Mode::Connect).build().unwrap()).unwrap_err();
    assert_eq!(e.code(), "io_error");
    let taken = listener();
    let ok = targets_file(dir.path(), &["127.0.0.1:80".into()]);
    let e = Monitor::start(
        ProbeSpec {
            metrics_port: Some(taken.local_addr().unwrap().port()),
            ..spec(&ok, Mode::Connect)
        }
        .build()
        .unwrap(),
    )
    .unwrap_err();
    assert_eq!(e.code(), "metrics_bind_failed");
}
