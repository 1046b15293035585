//! The driver end to end with a scripted backend on real executor threads.
//! Ordering comes from channels (a batch reports its start; a held batch
//! waits for a release token), never from sleeps; deadlines run on tokio's
//! paused clock.

use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lanes_policy::{CostConfig, DeviceSet, Policy, Prior};
use lanes_serving::{Batching, Grants, ModelConfig, ModelIx, ServeError};

use crate::backend::{Backend, BatchInfo};
use crate::driver::{DriverConfig, Handle, Request};
use crate::error::{ServerError, StartError};
use crate::observe::ObserveConfig;

/// A tag whose batch fails with an error, and one whose batch panics.
pub(crate) const FAILS: u32 = 666;
const PANICS: u32 = 667;

/// Doubles each request's tag. Reports every batch's (model, tags) as it
/// starts; when `held`, each batch then waits for one release token.
pub(crate) struct Scripted {
    started: flume::Sender<(ModelIx, Vec<u32>)>,
    release: Option<flume::Receiver<()>>,
    /// Every batch's start and end, in order: `(true, model)` for a start.
    log: Arc<Mutex<Vec<(bool, ModelIx)>>>,
    /// Whether a batch may run on the driver's thread ([`Backend::inline`]).
    inline: bool,
    /// The thread each batch ran on, in order.
    threads: Arc<Mutex<Vec<String>>>,
}

impl Backend for Scripted {
    type Input = u32;
    type Output = u32;

    fn run(&self, batch: &BatchInfo, inputs: Vec<u32>) -> Result<Vec<u32>, String> {
        self.log.lock().unwrap().push((true, batch.model));
        let thread = std::thread::current().name().unwrap_or("").to_owned();
        self.threads.lock().unwrap().push(thread);
        let _ = self.started.send((batch.model, inputs.clone()));
        if let Some(release) = &self.release {
            let _ = release.recv();
        }
        self.log.lock().unwrap().push((false, batch.model));
        if inputs.contains(&FAILS) {
            return Err("boom".into());
        }
        assert!(!inputs.contains(&PANICS), "planted panic");
        Ok(inputs.iter().map(|t| t * 2).collect())
    }

    fn inline(&self, _batch: &BatchInfo) -> bool {
        self.inline
    }
}

pub(crate) struct Lab {
    pub handle: Handle<Scripted>,
    pub started: flume::Receiver<(ModelIx, Vec<u32>)>,
    pub release: flume::Sender<()>,
    log: Arc<Mutex<Vec<(bool, ModelIx)>>>,
    threads: Arc<Mutex<Vec<String>>>,
    pub join: tokio::task::JoinHandle<()>,
}

pub(crate) fn model(name: &str, max_batch_size: u32, prior_ms: f64) -> ModelConfig {
    ModelConfig {
        name: name.into(),
        batching: Batching {
            max_batch_size,
            max_enqueued_batches: 2,
            ..Batching::default()
        },
        devices: DeviceSet::all(1),
        prior: Some(Prior {
            fixed: prior_ms * 1e6,
            per_item: 0.0,
        }),
    }
}

fn lab(grants: Grants, models: Vec<ModelConfig>, held: bool) -> Lab {
    lab_observed(grants, models, held, ObserveConfig::default())
}

/// [`lab`] with the observability's settings.
pub(crate) fn lab_observed(
    grants: Grants,
    models: Vec<ModelConfig>,
    held: bool,
    observe: ObserveConfig,
) -> Lab {
    lab_with(grants, None, models, held, observe)
}

/// [`lab_observed`] with grants from an arbiter.
pub(crate) fn lab_with(
    grants: Grants,
    arbiter: Option<crate::arbiter::ArbiterConfig>,
    models: Vec<ModelConfig>,
    held: bool,
    observe: ObserveConfig,
) -> Lab {
    lab_inline(grants, arbiter, models, held, observe, None)
}

/// [`lab_with`] whose backend allows inline batches, up to `inline_max` ns
/// (None: a backend that does not, and a bound of 0).
fn lab_inline(
    grants: Grants,
    arbiter: Option<crate::arbiter::ArbiterConfig>,
    models: Vec<ModelConfig>,
    held: bool,
    observe: ObserveConfig,
    inline_max: Option<u64>,
) -> Lab {
    let (started_tx, started) = flume::unbounded();
    let (release, release_rx) = flume::unbounded();
    let log = Arc::default();
    let backend = Scripted {
        started: started_tx,
        release: held.then_some(release_rx),
        log: Arc::clone(&log),
        inline: inline_max.is_some(),
        threads: Arc::default(),
    };
    let threads = Arc::clone(&backend.threads);
    let config = DriverConfig {
        grants,
        arbiter,
        devices: 1,
        cost: CostConfig::default(),
        models,
        inline_max: inline_max.unwrap_or(0),
        deadline_rule: Default::default(),
    };
    let (handle, join) = Handle::start_observed(config, observe, backend).expect("driver starts");
    Lab {
        handle,
        started,
        release,
        log,
        threads,
        join,
    }
}

pub(crate) fn fifo() -> Grants {
    Grants::Engine(Policy::Fifo)
}

pub(crate) fn req(model: ModelIx, tag: u32) -> Request<u32> {
    Request {
        model,
        rows: 1,
        deadline: None,
        target: None,
        input: tag,
    }
}

impl Lab {
    /// The next batch to start (a bound, not a synchronisation: a batch
    /// that never starts fails the test instead of hanging it).
    pub async fn next_batch(&self) -> (ModelIx, Vec<u32>) {
        let next = tokio::time::timeout(Duration::from_secs(20), self.started.recv_async());
        next.await.expect("a batch starts within 20 s").unwrap()
    }
}

#[tokio::test]
async fn a_request_is_answered_with_its_output_and_timing() {
    let lab = lab(fifo(), vec![model("m", 4, 1.0)], false);
    let reply = lab.handle.infer(req(0, 21)).await.expect("answered");
    assert_eq!((reply.output, reply.batch_rows), (42, 1));
    assert!(reply.run > 0);
    assert_eq!(lab.handle.model("m"), Some(0));
    assert_eq!(lab.handle.model("x"), None);
}

#[tokio::test]
async fn a_batch_forms_late_from_what_queued_while_the_device_ran() {
    let lab = lab(fifo(), vec![model("m", 4, 1.0)], true);
    let first = lab.handle.infer(req(0, 1));
    assert_eq!(lab.next_batch().await, (0, vec![1]));
    let rest: Vec<_> = (2..=4).map(|t| lab.handle.infer(req(0, t))).collect();
    lab.release.send(()).unwrap();
    assert_eq!(first.await.unwrap().output, 2);
    assert_eq!(lab.next_batch().await, (0, vec![2, 3, 4]));
    lab.release.send(()).unwrap();
    for (pending, tag) in rest.into_iter().zip(2..) {
        let reply = pending.await.unwrap();
        assert_eq!((reply.output, reply.batch_rows), (tag * 2, 3));
    }
}

#[tokio::test]
async fn past_the_queue_bound_a_request_is_refused_with_429() {
    // max_batch_size 1 x max_enqueued_batches 2 = 2 rows queued at most.
    let lab = lab(fifo(), vec![model("m", 1, 1.0)], true);
    let running = lab.handle.infer(req(0, 1));
    lab.next_batch().await;
    let queued = [lab.handle.infer(req(0, 2)), lab.handle.infer(req(0, 3))];
    let refused = lab.handle.infer(req(0, 4)).await.unwrap_err();
    assert_eq!((refused.code(), refused.http_status()), ("queue_full", 429));
    for _ in 0..3 {
        lab.release.send(()).unwrap();
    }
    assert_eq!(running.await.unwrap().output, 2);
    for (pending, tag) in queued.into_iter().zip(2..) {
        assert_eq!(pending.await.unwrap().output, tag * 2);
    }
}

#[tokio::test(start_paused = true)]
async fn a_request_queued_past_its_deadline_gets_504_and_never_runs() {
    let lab = lab(fifo(), vec![model("m", 1, 1.0)], true);
    let running = lab.handle.infer(req(0, 1));
    // On the paused clock a timeout would fire at once: wait unbounded.
    lab.started.recv_async().await.unwrap();
    let deadline = lab.handle.clock().now() + 50_000_000;
    let late = lab.handle.infer(Request {
        deadline: Some(deadline),
        ..req(0, 2)
    });
    let error = late.await.unwrap_err();
    assert_eq!(
        (error.code(), error.http_status()),
        ("deadline_exceeded", 504)
    );
    assert!(lab.handle.clock().now() >= deadline);
    lab.release.send(()).unwrap();
    running.await.unwrap();
    let after = lab.handle.infer(req(0, 3));
    assert_eq!(lab.started.recv_async().await.unwrap(), (0, vec![3])); // tag 2 never ran
    lab.release.send(()).unwrap();
    after.await.unwrap();
}

#[tokio::test]
async fn dropping_a_reply_withdraws_its_queued_request() {
    let lab = lab(fifo(), vec![model("m", 4, 1.0)], true);
    let running = lab.handle.infer(req(0, 1));
    lab.next_batch().await;
    drop(lab.handle.infer(req(0, 2))); // the client went away
    let kept = lab.handle.infer(req(0, 3));
    lab.release.send(()).unwrap();
    running.await.unwrap();
    assert_eq!(lab.next_batch().await, (0, vec![3]));
    lab.release.send(()).unwrap();
    assert_eq!(kept.await.unwrap().batch_rows, 1);
}

#[tokio::test]
async fn a_failing_or_panicking_model_fails_its_batch_with_500_and_serving_goes_on() {
    let lab = lab(fifo(), vec![model("m", 4, 1.0)], false);
    for (tag, text) in [(FAILS, "boom"), (PANICS, "panicked: planted panic")] {
        let error = lab.handle.infer(req(0, tag)).await.unwrap_err();
        assert_eq!(error.http_status(), 500);
        assert_eq!(error.to_string(), format!("model 'm' failed: {text}"));
        assert_eq!(lab.handle.infer(req(0, 5)).await.unwrap().output, 10);
    }
}

#[tokio::test]
async fn drain_refuses_new_requests_and_waits_for_admitted_ones() {
    let lab = lab(fifo(), vec![model("m", 1, 1.0)], true);
    let running = lab.handle.infer(req(0, 1));
    lab.next_batch().await;
    let queued = lab.handle.infer(req(0, 2));
    let drained = lab.handle.drain();
    let refused = lab.handle.infer(req(0, 3)).await.unwrap_err();
    assert_eq!(
        (refused.code(), refused.http_status()),
        ("shutting_down", 503)
    );
    lab.release.send(()).unwrap();
    lab.release.send(()).unwrap();
    assert_eq!(running.await.unwrap().output, 2);
    assert_eq!(queued.await.unwrap().output, 4);
    drained.await;
    lab.join.await.expect("the task ends after a drain");
}

#[tokio::test]
async fn sjf_starts_the_short_model_first_fifo_the_older() {
    for (policy, expected) in [("sjf:alpha=0,slack=off", [1, 0]), ("fifo", [0, 1])] {
        let grants = Grants::Engine(Policy::from_str(policy).unwrap());
        let models = vec![model("long", 1, 100.0), model("short", 1, 1.0)];
        let lab = lab(grants, models, true);
        // The head is short's (a measured run replaces a model's prior).
        let head = lab.handle.infer(req(1, 1));
        lab.next_batch().await;
        let long = lab.handle.infer(req(0, 2));
        let short = lab.handle.infer(req(1, 3));
        lab.release.send(()).unwrap();
        head.await.unwrap();
        let order = [lab.next_batch().await.0, {
            lab.release.send(()).unwrap();
            lab.next_batch().await.0
        }];
        assert_eq!(order, expected, "{policy}");
        lab.release.send(()).unwrap();
        long.await.unwrap();
        short.await.unwrap();
    }
}

/// Whether each batch so far ran on a device's executor thread.
fn on_executors(lab: &Lab) -> Vec<bool> {
    let threads = lab.threads.lock().unwrap();
    threads
        .iter()
        .map(|t| t.starts_with("lanes-device-"))
        .collect()
}

#[tokio::test]
async fn on_an_idle_server_a_tiny_batch_runs_on_the_drivers_thread() {
    // (backend allows, bound ns, prior ms) -> ran on an executor
    let table = [
        (true, 1_000_000, 0.01, false), // 10 µs estimated, 1 ms bound: inline
        (true, 1_000_000, 5.0, true),   // estimated past the bound
        (true, 0, 0.01, true),          // bound 0: never
        (false, 1_000_000, 0.01, true), // the backend does not allow it
    ];
    for (allows, bound, prior_ms, executor) in table {
        let lab = lab_inline(
            fifo(),
            None,
            vec![model("m", 4, prior_ms)],
            false,
            ObserveConfig::default(),
            allows.then_some(bound),
        );
        let reply = lab.handle.infer(req(0, 21)).await.expect("answered");
        assert_eq!((reply.output, reply.batch_rows), (42, 1));
        assert!(reply.run > 0);
        let stats = lab.handle.observer().model(0).stats();
        assert_eq!(stats.execution_count, 1, "counted alike");
        assert_eq!(
            on_executors(&lab),
            [executor],
            "{allows} {bound} {prior_ms}"
        );
    }
}

#[tokio::test]
async fn while_a_batch_runs_the_next_goes_to_an_executor() {
    // Independent grants let b start while a (estimated 100 ms) holds the device.
    let models = vec![model("a", 1, 100.0), model("b", 1, 0.01)];
    let lab = lab_inline(
        Grants::Independent,
        None,
        models,
        true,
        ObserveConfig::default(),
        Some(1_000_000),
    );
    let a = lab.handle.infer(req(0, 1));
    assert_eq!(lab.next_batch().await, (0, vec![1]));
    let b = lab.handle.infer(req(1, 2));
    assert_eq!(lab.next_batch().await, (1, vec![2]));
    lab.release.send(()).unwrap();
    lab.release.send(()).unwrap();
    assert_eq!(a.await.unwrap().output, 2);
    assert_eq!(b.await.unwrap().output, 4);
    assert_eq!(on_executors(&lab), [true, true]);
}

#[tokio::test(start_paused = true)]
async fn within_the_quiet_time_after_a_batch_the_next_goes_to_an_executor_and_failures_are_alike() {
    // Idle for the quiet time: each batch runs inline; a failure there fails
    // its request with 500 and the driver goes on. Within the quiet time
    // after a batch, the next goes to its executor.
    let lab = lab_inline(
        fifo(),
        None,
        vec![model("b", 1, 0.01)],
        false,
        ObserveConfig::default(),
        Some(1_000_000),
    );
    let quiet = Duration::from_nanos(crate::driver::INLINE_AFTER_IDLE);
    for tag in [FAILS, PANICS] {
        let err = lab.handle.infer(req(0, tag)).await.unwrap_err();
        assert_eq!(err.http_status(), 500, "{tag}: {err}");
        tokio::time::advance(quiet).await;
    }
    assert_eq!(lab.handle.infer(req(0, 5)).await.unwrap().output, 10);
    assert_eq!(lab.handle.infer(req(0, 6)).await.unwrap().output, 12);
    assert_eq!(on_executors(&lab), [false, false, false, true]);
}

#[tokio::test]
async fn independent_models_overlap_on_a_device_and_a_shared_engine_does_not() {
    let (a_then_b, a_beside_b) = ([(true, 0), (false, 0), (true, 1)], [(true, 0), (true, 1)]);
    for (grants, overlaps) in [(Grants::Independent, true), (fifo(), false)] {
        let lab = lab(grants, vec![model("a", 1, 1.0), model("b", 1, 1.0)], true);
        let a = lab.handle.infer(req(0, 1));
        lab.next_batch().await;
        let b = lab.handle.infer(req(1, 2));
        if overlaps {
            assert_eq!(lab.next_batch().await, (1, vec![2])); // while a still runs
            lab.release.send(()).unwrap();
            lab.release.send(()).unwrap();
        } else {
            lab.release.send(()).unwrap();
            assert_eq!(lab.next_batch().await, (1, vec![2]));
            lab.release.send(()).unwrap();
        }
        a.await.unwrap();
        b.await.unwrap();
        let log = lab.log.lock().unwrap().clone();
        if overlaps {
            assert_eq!(log[..2], a_beside_b);
        } else {
            assert_eq!(log[..3], a_then_b);
        }
    }
}

#[tokio::test]
async fn start_refuses_what_it_cannot_drive() {
    let start = |grants, models| {
        let (started, _) = flume::unbounded();
        let backend = Scripted {
            started,
            release: None,
            log: Arc::default(),
            inline: false,
            threads: Arc::default(),
        };
        let config = DriverConfig {
            grants,
            arbiter: None,
            devices: 1,
            cost: CostConfig::default(),
            models,
            inline_max: 0,
            deadline_rule: Default::default(),
        };
        Handle::start(config, backend).map(|_| ()).unwrap_err()
    };
    let external = start(Grants::External, vec![model("m", 1, 1.0)]);
    assert!(matches!(external, StartError::ExternalGrants));
    let mut nowhere = model("m", 1, 1.0);
    nowhere.devices = DeviceSet::only(3);
    let error = start(fifo(), vec![nowhere]);
    assert_eq!(error.code(), "bad_model");
    assert_eq!(
        error.to_string(),
        "model 'm': no replica on any of the 1 devices"
    );
}

#[test]
fn server_errors_keep_the_serving_states_codes() {
    let table: [(ServerError, &str, u16); 3] = [
        (
            ServeError::DeadlineExceeded {
                model: "m".into(),
                waited_ms: 1.0,
            }
            .into(),
            "deadline_exceeded",
            504,
        ),
        (
            ServerError::ModelFailed {
                model: "m".into(),
                message: "x".into(),
            },
            "model_failed",
            500,
        ),
        (ServerError::ShuttingDown, "shutting_down", 503),
    ];
    for (error, code, status) in table {
        assert_eq!((error.code(), error.http_status()), (code, status));
    }
}

#[tokio::test]
async fn a_call_runs_once_on_each_executor_thread_of_its_device() {
    // Independent grants: one executor per model's batch thread, two here.
    let models = vec![model("a", 1, 1.0), model("b", 1, 1.0)];
    let lab = lab(Grants::Independent, models, false);
    let name = || std::thread::current().name().unwrap_or("").to_owned();
    let mut names: Vec<String> = lab
        .handle
        .on_executors(0, name)
        .await
        .into_iter()
        .map(|r| r.expect("ran"))
        .collect();
    names.sort();
    assert_eq!(names, ["lanes-device-0.0", "lanes-device-0.1"]);
    // A panic is that thread's result, and the executors go on serving.
    let results = lab
        .handle
        .on_executors(0, || -> u32 { panic!("cold") })
        .await;
    assert_eq!(
        results,
        [Err("panicked: cold".into()), Err("panicked: cold".into())]
    );
    assert_eq!(lab.handle.infer(req(1, 4)).await.unwrap().output, 8);
    assert!(
        lab.handle.on_executors(7, name).await.is_empty(),
        "no such device"
    );
}

#[tokio::test]
async fn a_device_has_a_thread_for_its_regular_slot_and_each_fast_slot() {
    // (policy, executor threads per device): one per regular slot, plus one per
    // fast slot so that fast jobs really overlap.
    let cases = [
        ("sjf", 1),
        ("lanes", 2),
        ("lanes:width=3", 4),
        ("fair:fast=25,width=2,beside=any", 3),
    ];
    for (policy, threads) in cases {
        let grants = Grants::Engine(policy.parse().unwrap());
        let lab = lab(grants, vec![model("a", 1, 1.0)], false);
        let ran = lab.handle.on_executors(0, || ()).await;
        assert_eq!(ran.len(), threads, "{policy}");
    }
}
