//! The daemon through its handle, over a real socket with blocking std
//! clients: handshake, a closed connection's grant handed on, a live socket
//! refused, a clean stop that rejects queued acquires and removes the socket.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use lanes_arbiter::protocol::{Acquire, Message, RejectReason};
use lanes_arbiter::{decode, encode_frame, Arbiter, ArbiterSpec};

fn send(s: &mut UnixStream, m: &Message) {
    let mut out = Vec::new();
    encode_frame(m, &mut out);
    s.write_all(&out).unwrap();
}

fn recv(s: &mut UnixStream) -> Message {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).unwrap();
    decode(&body).unwrap()
}

fn client(path: &Path, service: &str) -> UnixStream {
    let mut s = UnixStream::connect(path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    send(
        &mut s,
        &Message::Hello {
            version: 1,
            pid: std::process::id(),
            service: service.into(),
        },
    );
    match recv(&mut s) {
        Message::Welcome { devices, .. } => assert_eq!(devices, ["sim:0"]),
        other => panic!("{other:?}"),
    }
    s
}

fn acquire(id: u64) -> Message {
    Message::Acquire(Acquire {
        id,
        model: "m".into(),
        batch: 1,
        ..Acquire::default()
    })
}

#[test]
fn serve_hand_on_refuse_and_stop_on_one_or_two_threads() {
    for threads in [1, 2] {
        serve_hand_on_refuse_and_stop(threads);
    }
}

fn serve_hand_on_refuse_and_stop(threads: usize) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.sock");
    let spec = ArbiterSpec {
        socket: path.clone(),
        devices: vec!["sim:0".into()],
        threads,
        ..ArbiterSpec::default()
    };
    let arbiter = Arbiter::start(spec.clone()).unwrap();
    let refused = Arbiter::start(spec).unwrap_err();
    assert_eq!(refused.code(), "socket_in_use", "{refused}");

    let mut a = client(&path, "a");
    let mut b = client(&path, "b");
    send(&mut a, &acquire(1));
    assert!(matches!(
        recv(&mut a),
        Message::Grant {
            id: 1,
            device: 0,
            ..
        }
    ));
    send(&mut b, &acquire(2));
    drop(a); // closing releases its grant: b is granted
    assert!(matches!(recv(&mut b), Message::Grant { id: 2, .. }));
    send(&mut b, &acquire(3));
    send(&mut b, &Message::Stats);
    assert!(matches!(recv(&mut b), Message::StatsReply { .. }));

    arbiter.stop();
    match recv(&mut b) {
        Message::Reject { id: 3, reason, .. } => assert_eq!(reason, RejectReason::ShuttingDown),
        other => panic!("{other:?}"),
    }
    assert!(arbiter.wait(Duration::from_secs(10)));
    arbiter.join().unwrap();
    assert!(!path.exists());
}
