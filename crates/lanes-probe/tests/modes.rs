//! Both modes against real loopback listeners, closed ports and a silent
//! listener; a listener that goes away (closed: refused) or goes silent
//! (down) and comes back; the privilege fallback; replies dropped in the
//! kernel. Tests of `syn` mode skip, saying
//! so, where CAP_NET_RAW is not held.

mod common;

use common::*;
use lanes_probe::{Mode, Monitor, ProbeSpec, State};

fn initial_states(mode: Mode) {
    let dir = tempfile::tempdir().unwrap();
    let open = listener();
    let wide = wide_listener();
    let closed = closed_port();
    let (silent, _filler) = silent_listener();
    let silent_port = silent.local_addr().unwrap().as_socket().unwrap().port();
    let wide_port = wide.local_addr().unwrap().port();
    let path = targets_file(
        dir.path(),
        &[
            format!("127.0.0.1:{} open", open.local_addr().unwrap().port()),
            format!("127.0.0.1:{closed} closed"),
            format!("127.0.0.2:{wide_port} other-address"),
            format!("127.0.0.3:{closed}"),
            format!("127.0.0.1:{silent_port} silent"),
        ],
    );
    let monitor = Monitor::start(
        ProbeSpec {
            rounds: Some(3),
            ..spec(&path, mode)
        }
        .build()
        .unwrap(),
    )
    .unwrap();
    assert_eq!(monitor.mode(), mode);
    let log = read_all(&monitor);
    let mut got = log.transitions();
    got.sort();
    let mut want = vec![
        format!("127.0.0.1:{} up<-", open.local_addr().unwrap().port()),
        format!("127.0.0.1:{closed} refused<-"),
        format!("127.0.0.2:{wide_port} up<-"),
        format!("127.0.0.3:{closed} refused<-"),
        format!("127.0.0.1:{silent_port} down<-"),
    ];
    want.sort();
    assert_eq!(got, want, "{log:#?}");
    assert!(
        log.events.iter().all(|e| e.round == 0),
        "initial states in round 0"
    );
    let named: Vec<_> = log
        .events
        .iter()
        .filter_map(|e| e.name.as_deref())
        .collect();
    assert_eq!(named.len(), 4);
    assert_eq!(log.rounds.len(), 3);
    for r in &log.rounds {
        assert_eq!((r.targets, r.sent), (5, 5), "{r:?}");
        assert_eq!(
            (r.accepted, r.refused, r.timeouts, r.unknown),
            (2, 2, 1, 0),
            "{r:?}"
        );
        assert_eq!((r.replies, r.errors, r.strays), (4, 0, 0), "{r:?}");
        assert_eq!(
            (r.up, r.refused_targets, r.down, r.pending),
            (2, 2, 1, 0),
            "{r:?}"
        );
        if mode == Mode::Syn {
            assert_eq!(r.kernel_drops, 0, "{r:?}");
            assert!(r.kernel_packets >= 4, "{r:?}");
        }
    }
}

#[test]
fn connect_mode_finds_listeners_closed_ports_and_silence() {
    initial_states(Mode::Connect);
}

#[test]
fn syn_mode_finds_listeners_closed_ports_and_silence() {
    if can_raw("syn_mode_finds_listeners_closed_ports_and_silence") {
        initial_states(Mode::Syn);
    }
}

/// A listener closes, then listens again on the same port: exactly one
/// transition away from up (to refused: a closed port on loopback answers
/// RST) and exactly one back, then quiet.
fn away_and_back(mode: Mode) {
    let dir = tempfile::tempdir().unwrap();
    let first = listener();
    let addr = first.local_addr().unwrap();
    let path = targets_file(dir.path(), &[format!("{addr} svc")]);
    let monitor = Monitor::start(spec(&path, mode).build().unwrap()).unwrap();
    let mut log = Log::default();
    read_until(&monitor, &mut log, |l| !l.events.is_empty());
    drop(first);
    read_until(&monitor, &mut log, |l| l.events.len() >= 2);
    let again = std::net::TcpListener::bind(addr).unwrap();
    read_until(&monitor, &mut log, |l| l.events.len() >= 3);
    // Several more rounds with the listener up: nothing more may happen.
    let seen = log.rounds.len();
    read_until(&monitor, &mut log, |l| l.rounds.len() >= seen + 5);
    monitor.stop();
    assert!(monitor.wait(DEADLINE));
    drop(again);
    assert_eq!(
        log.transitions(),
        [
            format!("{addr} up<-"),
            format!("{addr} refused<up"),
            format!("{addr} up<refused"),
        ],
        "{log:#?}"
    );
    assert_eq!(log.events[2].name.as_deref(), Some("svc"));
    let down_round = log.events[1].round;
    assert!(
        down_round >= 2,
        "down after 2 failures, not at once: {log:#?}"
    );
}

#[test]
fn connect_mode_listener_goes_away_and_comes_back() {
    away_and_back(Mode::Connect);
}

#[test]
fn syn_mode_listener_goes_away_and_comes_back() {
    if can_raw("syn_mode_listener_goes_away_and_comes_back") {
        away_and_back(Mode::Syn);
    }
}

/// A listener stops answering (its accept queue is full, so SYNs are
/// dropped), then answers again: exactly one down event and one up event.
fn silent_and_back(mode: Mode) {
    let dir = tempfile::tempdir().unwrap();
    let mut gate = Gate::open_on_loopback();
    let addr = gate.addr;
    let path = targets_file(dir.path(), &[format!("{addr} svc")]);
    let monitor = Monitor::start(spec(&path, mode).build().unwrap()).unwrap();
    let mut log = Log::default();
    read_until(&monitor, &mut log, |l| !l.events.is_empty());
    gate.close();
    read_until(&monitor, &mut log, |l| l.events.len() >= 2);
    gate.open();
    read_until(&monitor, &mut log, |l| l.events.len() >= 3);
    let seen = log.rounds.len();
    read_until(&monitor, &mut log, |l| l.rounds.len() >= seen + 5);
    monitor.stop();
    assert!(monitor.wait(DEADLINE));
    assert_eq!(
        log.transitions(),
        [
            format!("{addr} up<-"),
            format!("{addr} down<up"),
            format!("{addr} up<down"),
        ],
        "{log:#?}"
    );
}

#[test]
fn connect_mode_listener_goes_silent_and_comes_back() {
    silent_and_back(Mode::Connect);
}

#[test]
fn syn_mode_listener_goes_silent_and_comes_back() {
    if can_raw("syn_mode_listener_goes_silent_and_comes_back") {
        silent_and_back(Mode::Syn);
    }
}

#[test]
fn without_raw_privilege_syn_falls_back_to_connect() {
    let dir = tempfile::tempdir().unwrap();
    let open = listener();
    let path = targets_file(dir.path(), &[format!("{}", open.local_addr().unwrap())]);
    let monitor = Monitor::start(
        ProbeSpec {
            rounds: Some(1),
            simulate_no_raw: true,
            ..spec(&path, Mode::Syn)
        }
        .build()
        .unwrap(),
    )
    .unwrap();
    assert_eq!(monitor.mode(), Mode::Connect);
    let log = read_all(&monitor);
    assert!(
        log.notices[0].starts_with("Warning: syn mode needs CAP_NET_RAW")
            && log.notices[0].contains("probing in connect mode instead"),
        "{:?}",
        log.notices
    );
    assert_eq!(log.events.len(), 1);
    assert_eq!(log.events[0].state, State::Up);
}

#[test]
fn replies_dropped_in_the_kernel_are_counted_and_never_read_as_down() {
    if !can_raw("replies_dropped_in_the_kernel_are_counted_and_never_read_as_down") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let closed = closed_port();
    // 600 closed ports answer 600 RSTs at once; a 4 KiB buffer holds a handful.
    let lines: Vec<String> = (0..600)
        .map(|i| format!("127.0.{}.{}:{closed}", 1 + i / 200, 1 + i % 200))
        .collect();
    let path = targets_file(dir.path(), &lines);
    let monitor = Monitor::start(
        ProbeSpec {
            rounds: Some(2),
            recv_buffer: Some(4096),
            ..spec(&path, Mode::Syn)
        }
        .build()
        .unwrap(),
    )
    .unwrap();
    let log = read_all(&monitor);
    assert!(
        log.notices
            .iter()
            .any(|n| n.starts_with("Warning: the receive buffer is")),
        "a warning at start: {:?}",
        log.notices
    );
    for r in &log.rounds {
        assert!(r.kernel_drops > 0, "{r:?}");
        assert_eq!(r.kernel_packets, 600, "{r:?}");
        assert_eq!(r.replies + r.kernel_drops, 600, "{r:?}");
        assert_eq!(
            (r.timeouts, r.down),
            (0, 0),
            "silence after drops proves nothing: {r:?}"
        );
        assert_eq!(r.unknown, r.kernel_drops, "{r:?}");
    }
    assert!(
        log.notices.iter().any(|n| n.contains("the kernel dropped")),
        "{:?}",
        log.notices
    );
    assert!(log.events.iter().all(|e| e.state == State::Refused));
}

#[test]
fn syn_mode_probes_ipv6_targets_with_connects() {
    if !can_raw("syn_mode_probes_ipv6_targets_with_connects") {
        return;
    }
    let Ok(v6) = std::net::TcpListener::bind("[::1]:0") else {
        eprintln!("syn_mode_probes_ipv6_targets_with_connects: skipped: no IPv6 loopback");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let v4 = listener();
    let v6_addr = v6.local_addr().unwrap();
    let path = targets_file(
        dir.path(),
        &[
            format!("{}", v4.local_addr().unwrap()),
            format!("{v6_addr} six"),
        ],
    );
    let monitor = Monitor::start(
        ProbeSpec {
            rounds: Some(2),
            ..spec(&path, Mode::Syn)
        }
        .build()
        .unwrap(),
    )
    .unwrap();
    assert_eq!(monitor.mode(), Mode::Syn);
    let log = read_all(&monitor);
    assert!(
        log.notices
            .iter()
            .any(|n| n.contains("1 targets (IPv6, or no IPv4 route) are probed with connects")),
        "{:?}",
        log.notices
    );
    let mut got = log.transitions();
    got.sort();
    let mut want = vec![
        format!("{} up<-", v4.local_addr().unwrap()),
        format!("{v6_addr} up<-"),
    ];
    want.sort();
    assert_eq!(got, want);
    for r in &log.rounds {
        assert_eq!((r.sent, r.replies, r.accepted), (2, 2, 2), "{r:?}");
        // The IPv4 target's SYN-ACK comes through the packet socket; on a
        // busy host the listener may retransmit it within the round (it passes
        // the filter: our port, our tag), so more than one may arrive, and user
        // space counts one reply (checked above). A fresh-clone run saw 6.
        assert!(
            r.kernel_packets >= 1,
            "a SYN-ACK through the packet socket: {r:?}"
        );
    }
}
