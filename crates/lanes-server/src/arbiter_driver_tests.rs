//! The driver under `--arbiter`: grants from a real `lanes arbiter` daemon
//! (in this process, on its own thread, on a real Unix socket), and the
//! fallbacks while none is there. Order comes from the scripted backend's
//! channels; the one negative wait ("B has not started") is bounded.

use std::time::Duration;

use lanes_arbiter::{Arbiter, ArbiterSpec};
use lanes_serving::Grants;

use crate::arbiter::{ArbiterConfig, Fallback};
use crate::driver_tests::{lab_with, model, req, Lab};
use crate::error::ServerError;
use crate::observe::ObserveConfig;

fn daemon(dir: &tempfile::TempDir, policy: &str) -> Arbiter {
    Arbiter::start(ArbiterSpec {
        socket: dir.path().join("arbiter.sock"),
        devices: vec!["sim:0".into()],
        policy: policy.into(),
        threads: 1,
        ..ArbiterSpec::default()
    })
    .expect("the daemon starts")
}

fn served(dir: &tempfile::TempDir, fallback: Fallback, name: &str, held: bool) -> Lab {
    let config = ArbiterConfig::new(dir.path().join("arbiter.sock"), name, fallback);
    let observe = ObserveConfig {
        devices: vec!["sim:0".into()],
        ..ObserveConfig::default()
    };
    lab_with(
        Grants::External,
        Some(config),
        vec![model(name, 4, 1.0)],
        held,
        observe,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_take_turns_on_a_device_the_daemon_grants() {
    let dir = tempfile::tempdir().unwrap();
    let arbiter = daemon(&dir, "fifo");
    let a = served(&dir, Fallback::FailClosed, "a", true);
    let b = served(&dir, Fallback::FailClosed, "b", true);
    let first = a.handle.infer(req(0, 1));
    assert_eq!(a.next_batch().await, (0, vec![1]));
    // B asks while A holds the only device: the daemon makes it wait.
    let second = b.handle.infer(req(0, 2));
    let early = tokio::time::timeout(Duration::from_millis(300), b.next_batch()).await;
    assert!(early.is_err(), "B ran while A held the device: {early:?}");
    a.release.send(()).unwrap();
    assert_eq!(first.await.unwrap().output, 2);
    // A's RELEASE hands the device to B.
    assert_eq!(b.next_batch().await, (0, vec![2]));
    b.release.send(()).unwrap();
    let reply = second.await.unwrap();
    assert_eq!(reply.output, 4);
    let stats: serde_json::Value = serde_json::from_str(&arbiter.stats().unwrap()).unwrap();
    assert_eq!(stats["counters"]["grants"], 2, "{stats}");
    arbiter.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_closed_refuses_at_the_deadline_while_no_daemon_answers() {
    let dir = tempfile::tempdir().unwrap();
    let lab = served(&dir, Fallback::FailClosed, "m", false);
    let mut request = req(0, 1);
    request.deadline = Some(lab.handle.clock().now() + 150_000_000);
    let error = lab.handle.infer(request).await.unwrap_err();
    let ServerError::Serve(e) = &error else {
        panic!("{error:?}");
    };
    assert!(
        matches!(e.http_status(), 503 | 504),
        "{e}: {}",
        e.http_status()
    );
    assert!(lab.started.is_empty(), "nothing ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_open_runs_alone_until_the_daemon_comes_then_asks_it() {
    let dir = tempfile::tempdir().unwrap();
    let lab = served(&dir, Fallback::FailOpen, "m", false);
    assert_eq!(lab.handle.infer(req(0, 3)).await.unwrap().output, 6);
    let arbiter = daemon(&dir, "sjf");
    // The link reconnects with backoff (50 ms doubling): within 5 s the
    // daemon grants this server's batches.
    let mut granted = 0;
    for _ in 0..100 {
        assert_eq!(lab.handle.infer(req(0, 4)).await.unwrap().output, 8);
        let stats: serde_json::Value = serde_json::from_str(&arbiter.stats().unwrap()).unwrap();
        granted = stats["counters"]["grants"].as_u64().unwrap_or(0);
        if granted > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(granted > 0, "the daemon never granted a batch");
    arbiter.stop();
}
