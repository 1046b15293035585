//! The observability through the real driver (driver_tests.rs' scripted
//! backend on real executor threads): known traffic, then the statistics
//! JSON, a rendered metrics page parsed line by line, and the trace JSON.
//! Ordering comes from channels and from [`Handle::drain`] (after which
//! every completion is accounted), never from sleeps. The idle-while-waiting
//! rule is checked on its own, driving a [`Probe`] by hand.

use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

use lanes_policy::CostConfig;
use lanes_serving::{Action, Grants, Queued, ServingState};

use super::*;
use crate::driver::{DriverConfig, Pending, Request};
use crate::driver_tests::{fifo, lab_observed, model, req, Lab, Scripted, FAILS};
use crate::metrics::tests::{check_families, parse, requests, value, Page};
use crate::probe::Probe;
use crate::thread_clocks::CallClocks;
use crate::timeline::tests::{check_schema, counters, replay};

fn observe_config() -> ObserveConfig {
    ObserveConfig {
        version: "9.9.9".into(),
        devices: vec!["sim:0".into()],
        model_versions: vec!["3".into()],
        trace_events: 100,
        trace_requests: 0,
    }
}

/// What a front end does per request: a record, pre-processing reported,
/// the request handed to the driver.
fn call(lab: &Lab, request: Request<u32>) -> (RequestRecord, Pending<Scripted>) {
    let record = lab
        .handle
        .observer()
        .request(request.model, lab.handle.clock().now());
    record.preprocessed(1_000);
    (record, lab.handle.infer(request))
}

/// ... and its answer: the outcome counted, post-processing reported on success.
async fn answer((record, pending): (RequestRecord, Pending<Scripted>)) -> Result<u32, ServerError> {
    match pending.await {
        Ok(reply) => {
            record.postprocessed(2_000);
            record.finish(Outcome::Success);
            Ok(reply.output)
        }
        Err(e) => {
            record.finish_error(&e);
            Err(e)
        }
    }
}

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

#[tokio::test]
async fn known_traffic_shows_in_the_statistics_the_metrics_and_the_trace() {
    // gate: 1 row a batch, 2 rows queued at most; pair: up to 4 rows.
    let models = vec![model("gate", 1, 1.0), model("pair", 4, 1.0)];
    let lab = lab_observed(fifo(), models, true, observe_config());
    let obs = Arc::clone(lab.handle.observer());
    let held = call(&lab, req(0, 1));
    assert_eq!(lab.next_batch().await, (0, vec![1]));
    // A deadline already past: failed in the queue, never run.
    let late = call(
        &lab,
        Request {
            deadline: Some(0),
            ..req(0, 2)
        },
    );
    assert_eq!(answer(late).await.unwrap_err().code(), "deadline_exceeded");
    let queued = call(&lab, req(0, 3));
    let gone = call(&lab, req(0, 4));
    let refused = answer(call(&lab, req(0, 5))).await.unwrap_err();
    assert_eq!(refused.code(), "queue_full");
    drop(gone); // the client goes away while its request is queued
    obs.request(0, 0).finish(Outcome::BadRequest); // refused by the front end alone
    let expired = obs.request(0, 0); // past its deadline before the front end queued it
    obs.model(0).expired();
    expired.finish(Outcome::DeadlineExceeded);
    for _ in 0..2 {
        lab.release.send(()).unwrap();
    }
    assert_eq!(answer(held).await.unwrap(), 2);
    assert_eq!(answer(queued).await.unwrap(), 6);
    lab.release.send(()).unwrap();
    let failed = answer(call(&lab, req(0, FAILS))).await.unwrap_err();
    assert_eq!(failed.code(), "model_failed");
    for (model, tag) in [(0, 10), (0, 11), (0, 12), (1, 20), (1, 21), (1, 22)] {
        lab.release.send(()).unwrap();
        assert_eq!(answer(call(&lab, req(model, tag))).await.unwrap(), tag * 2);
    }
    lab.handle.drain().await;
    // Cut while draining: unavailable, not cancelled.
    drop(obs.request(1, 0));

    // Statistics: gate ran 5 batches of 1 row (1, 3, 10, 11, 12) and failed one.
    let gate = &json(&obs.stats_json(Some(0)))["model_stats"][0];
    assert_eq!(
        (&gate["name"], &gate["version"]),
        (&json!("gate"), &json!("3"))
    );
    assert_eq!(gate["inference_count"], 5);
    assert_eq!(gate["execution_count"], 5);
    assert!(gate["last_inference"].as_u64().unwrap() > 1_600_000_000_000);
    let counts: Vec<_> = [
        "success",
        "fail",
        "queue",
        "compute_input",
        "compute_infer",
        "compute_output",
    ]
    .iter()
    .map(|k| gate["inference_stats"][k]["count"].as_u64().unwrap())
    .collect();
    // compute_input: every request handed to the driver (9); output: the successes.
    assert_eq!(counts, [5, 1, 5, 9, 5, 5]);
    let infer_ns = gate["inference_stats"]["compute_infer"]["ns"]
        .as_u64()
        .unwrap();
    let batch = &gate["batch_stats"];
    assert_eq!(batch.as_array().unwrap().len(), 1);
    assert_eq!(
        (&batch[0]["batch_size"], &batch[0]["compute_infer"]["count"]),
        (&json!(1), &json!(5))
    );
    assert_eq!(
        batch[0]["compute_infer"]["ns"], infer_ns,
        "one request a batch"
    );
    assert_eq!(
        gate["lanes"],
        json!({"rejected": 1, "expired": 2, "cancelled": 1})
    );
    let every = json(&obs.stats_json(None));
    let names: Vec<_> = every["model_stats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].clone())
        .collect();
    assert_eq!(names, [json!("gate"), json!("pair")]);
    let pair = &every["model_stats"][1];
    let sizes: Vec<_> = pair["cost_estimates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["batch_size"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes, [1, 2, 4]);
    assert!(pair["cost_estimates"][0]["ns"].as_u64().unwrap() > 0);
    assert_eq!(pair["batch_stats"][0]["compute_infer"]["count"], 3);

    // Metrics.
    let page = parse(&obs.metrics_text());
    check_families(&page);
    let expected = [
        ("success", 5.0),
        ("rejected_queue_full", 1.0),
        ("deadline_exceeded", 2.0),
        ("cancelled", 1.0),
        ("bad_request", 1.0),
        ("model_error", 1.0),
        ("unavailable", 0.0),
    ];
    let requests = |model, outcome| requests(&page, model, outcome);
    let stats = obs.model(0).stats();
    for (outcome, n) in expected {
        assert_eq!(requests("gate", outcome), n, "{outcome}");
        let o = Outcome::ALL
            .into_iter()
            .find(|o| o.as_str() == outcome)
            .unwrap();
        assert_eq!(stats.outcomes(o) as f64, n, "the statistics count the same");
    }
    assert_eq!(requests("pair", "success"), 3.0);
    assert_eq!(requests("pair", "unavailable"), 1.0);
    let gate_count = |family: &str| {
        value(
            &page,
            family,
            &format!("{family}_count"),
            &[("model", "gate")],
        )
    };
    for family in [
        "lanes_request_duration_seconds",
        "lanes_queue_duration_seconds",
        "lanes_device_duration_seconds",
        "lanes_postprocess_duration_seconds",
        "lanes_batch_size",
    ] {
        assert_eq!(gate_count(family), 5.0, "{family}");
    }
    assert_eq!(gate_count("lanes_preprocess_duration_seconds"), 9.0);
    let pair_label = [("model", "pair")];
    assert_eq!(
        value(
            &page,
            "lanes_batch_size",
            "lanes_batch_size_sum",
            &pair_label
        ),
        3.0
    );
    let one_row = [("model", "pair"), ("le", "1.0")];
    assert_eq!(
        value(
            &page,
            "lanes_batch_size",
            "lanes_batch_size_bucket",
            &one_row
        ),
        3.0
    );
    let info = [("version", "9.9.9"), ("policy", "fifo")];
    assert_eq!(value(&page, "lanes_info", "lanes_info", &info), 1.0);
    for model in ["gate", "pair"] {
        assert_eq!(
            value(
                &page,
                "lanes_queue_depth",
                "lanes_queue_depth",
                &[("model", model)]
            ),
            0.0
        );
    }
    let device = |family: &str| {
        value(
            &page,
            family,
            &format!("{family}_total"),
            &[("device", "sim:0")],
        )
    };
    // Jobs: every batch, the failed one included; one at a time; never idle while work waited.
    assert_eq!(device("lanes_device_jobs"), 9.0);
    assert!(device("lanes_device_busy_seconds") > 0.0);
    assert_eq!(device("lanes_device_overlap_seconds"), 0.0);
    assert_eq!(device("lanes_device_idle_while_waiting_seconds"), 0.0);

    // The trace.
    let trace = json(&obs.trace_json(Some(60.0)));
    let events = check_schema(&trace);
    let slices: Vec<_> = events.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(slices.len(), 9);
    let failed: Vec<_> = slices
        .iter()
        .filter(|e| e["args"]["failed"] == true)
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["name"], "gate");
    assert!(slices
        .iter()
        .all(|e| e["args"]["batch_size"] == 1 && e["args"]["requests"] == 1));
    let threads: Vec<_> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].clone())
        .collect();
    assert_eq!(threads, [json!("sim:0")]);
    let jobs = counters(&events, "sim:0");
    assert_eq!(jobs, replay(&events, "sim:0"));
    assert_eq!(jobs.iter().map(|c| c.1).max(), Some(1));
    assert_eq!(jobs.last().unwrap().1, 0);
    let other = &trace["otherData"];
    assert_eq!(
        (&other["policy"], &other["version"]),
        (&json!("fifo"), &json!("9.9.9"))
    );
    assert_eq!(
        (&other["jobs"], &other["dropped"], &other["window_s"]),
        (&json!(9), &json!(0), &json!(60.0))
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.json");
    obs.write_trace(&path).unwrap();
    let written = json(&std::fs::read(&path).unwrap());
    assert_eq!(
        written["traceEvents"].as_array().unwrap().len(),
        events.len()
    );
}

/// Device `sim:0`'s sample of counter `family` on `page`.
fn device_total(page: &Page, family: &str) -> f64 {
    value(
        page,
        family,
        &format!("{family}_total"),
        &[("device", "sim:0")],
    )
}

#[tokio::test]
async fn overlap_is_counted_under_independent_only() {
    for (grants, overlaps) in [(Grants::Independent, true), (fifo(), false)] {
        let models = vec![model("a", 1, 1.0), model("b", 1, 1.0)];
        let lab = lab_observed(grants, models, true, observe_config());
        let a = lab.handle.infer(req(0, 1));
        lab.next_batch().await;
        let b = lab.handle.infer(req(1, 2));
        if overlaps {
            assert_eq!(lab.next_batch().await, (1, vec![2])); // beside a
        }
        lab.release.send(()).unwrap();
        lab.release.send(()).unwrap();
        a.await.unwrap();
        b.await.unwrap();
        lab.handle.drain().await;
        let obs = lab.handle.observer();
        let page = parse(&obs.metrics_text());
        let overlap = device_total(&page, "lanes_device_overlap_seconds");
        let busy = device_total(&page, "lanes_device_busy_seconds");
        assert_eq!(device_total(&page, "lanes_device_jobs"), 2.0);
        assert_eq!(
            device_total(&page, "lanes_device_idle_while_waiting_seconds"),
            0.0
        );
        assert_eq!(overlap > 0.0, overlaps, "{grants:?}: overlap {overlap}");
        assert!(overlap < busy);
        let events = check_schema(&json(&obs.trace_json(None)));
        let most = counters(&events, "sim:0").iter().map(|c| c.1).max();
        assert_eq!(most, Some(if overlaps { 2 } else { 1 }), "{grants:?}");
    }
}

#[tokio::test]
async fn idle_while_waiting_is_the_time_a_standing_job_had_a_free_device() {
    // Grants from outside: the state's standing job waits for a grant while
    // the device is free — the one way to see the rule count.
    let config = DriverConfig {
        grants: Grants::External,
        arbiter: None,
        devices: 1,
        cost: CostConfig::default(),
        models: vec![model("m", 1, 1.0)],
        inline_max: 0,
        deadline_rule: Default::default(),
    };
    let mut state = ServingState::new(config.grants, 1, config.cost).unwrap();
    state.add_model(config.models[0].clone()).unwrap();
    let mut probe = Probe::start(&config, observe_config(), &state, crate::Clock::start());
    let obs = Arc::clone(probe.observer());
    let account = |at| obs.snapshot.devices[0].read(at);
    probe.decision_point(0, &state);
    let mut out = Vec::new();
    state.admit(5, 0, 1, None).unwrap();
    let queued = Queued {
        id: 1,
        rows: 1,
        arrival: 5,
        enqueued: 5,
        deadline: None,
        target: None,
    };
    state.enqueue(5, 0, queued, &mut out);
    let Some(&Action::Ask { job, .. }) = out.first() else {
        panic!("an ask: {out:?}");
    };
    probe.queued(0);
    probe.decision_point(5, &state);
    assert_eq!(obs.queue_depth(0), 1);
    assert_eq!(account(12).idle_wait, 7, "open since 5");
    out.clear();
    assert!(state.grant(20, job, 0, &mut out));
    let Some(Action::Start(batch)) = out.first() else {
        panic!("a start: {out:?}");
    };
    probe.started(20, batch);
    probe.decision_point(20, &state);
    assert_eq!(obs.queue_depth(0), 0);
    let totals = account(50);
    assert_eq!((totals.idle_wait, totals.busy), (15, 30));
    let clocks = CallClocks {
        wall: 40,
        cpu: Some(30),
        run_delay: Some(5),
    };
    probe.finished(60, batch.job, clocks, false, &state);
    let totals = account(100);
    assert_eq!((totals.idle_wait, totals.busy, totals.jobs), (15, 40, 1));
    assert_eq!(obs.timeline().len(), 1);
    let jobs = obs.timeline().window(None, 100);
    assert_eq!((jobs[0].cpu, jobs[0].run_delay), (Some(30), Some(5)));
}

#[tokio::test]
async fn the_metrics_page_is_served_over_http() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let lab = lab_observed(fifo(), vec![model("m", 1, 1.0)], false, observe_config());
    lab.handle.infer(req(0, 1)).await.unwrap();
    lab.handle.drain().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(Arc::clone(lab.handle.observer()).serve_metrics(listener));
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: lanes\r\n\r\n")
        .await
        .unwrap();
    let mut reply = String::new();
    let read = stream.read_to_string(&mut reply);
    tokio::time::timeout(std::time::Duration::from_secs(20), read)
        .await
        .expect("the server answers and closes")
        .unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    let page = parse(body);
    check_families(&page);
    assert_eq!(device_total(&page, "lanes_device_jobs"), 1.0);
    server.abort();
}

/// test_api.py's lone request: its queue time (arrival to the batch's
/// start) is the batch timeout when there is one, else 0 — exactly, on
/// tokio's paused clock (the driver sleeps until the partial batch is ready).
#[tokio::test(start_paused = true)]
async fn a_lone_requests_queue_time_is_the_batch_timeout() {
    for (timeout, queued) in [(100_000_000, 100_000_000u64), (0, 0)] {
        let mut m = model("m", 8, 1.0);
        m.batching.batch_timeout = timeout;
        let lab = lab_observed(fifo(), vec![m], false, observe_config());
        lab.handle.infer(req(0, 1)).await.unwrap();
        lab.handle.drain().await;
        let obs = lab.handle.observer();
        let stats = &json(&obs.stats_json(Some(0)))["model_stats"][0];
        let queue = &stats["inference_stats"]["queue"];
        assert_eq!((&queue["count"], &queue["ns"]), (&json!(1), &json!(queued)));
        assert_eq!(stats["batch_stats"][0]["batch_size"], 1);
        let events = check_schema(&json(&obs.trace_json(None)));
        let slice = events.iter().find(|e| e["ph"] == "X").unwrap();
        assert_eq!(slice["args"]["queue_wait_ms"], queued as f64 / 1e6);
        assert_eq!(
            slice["ts"],
            queued as f64 / 1e3,
            "started when it was ready"
        );
    }
}

/// test_metrics.py's scrape loop during load: serving goes on, every request
/// is counted once, and the device counters never step back between scrapes.
#[tokio::test]
async fn scraping_during_load_does_not_break_serving() {
    let mut m = model("m", 8, 0.5);
    m.batching.max_enqueued_batches = 64;
    let lab = lab_observed(fifo(), vec![m], false, observe_config());
    let obs = Arc::clone(lab.handle.observer());
    let stop = Arc::new(AtomicBool::new(false));
    let scraper = {
        let (obs, stop) = (Arc::clone(&obs), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut seen = Vec::new();
            loop {
                let page = parse(&obs.metrics_text());
                let jobs = device_total(&page, "lanes_device_jobs");
                let busy = device_total(&page, "lanes_device_busy_seconds");
                seen.push((jobs, busy));
                if stop.load(Ordering::Relaxed) {
                    return seen;
                }
            }
        })
    };
    let n = 2_000;
    let mut inflight = std::collections::VecDeque::new();
    for tag in 1_000..1_000 + n {
        // (tags above FAILS and PANICS: every batch succeeds)
        inflight.push_back(answer(call(&lab, req(0, tag))));
        if inflight.len() == 16 {
            inflight.pop_front().unwrap().await.unwrap();
        }
    }
    for reply in inflight {
        reply.await.unwrap();
    }
    lab.handle.drain().await;
    stop.store(true, Ordering::Relaxed);
    let seen = scraper.join().unwrap();
    assert!(
        seen.windows(2)
            .all(|w| w[1].0 >= w[0].0 && w[1].1 >= w[0].1),
        "counters never step back"
    );
    let page = parse(&obs.metrics_text());
    assert_eq!(requests(&page, "m", "success"), f64::from(n));
    let stats = obs.model(0).stats();
    assert_eq!(stats.inference_count, u64::from(n));
    assert_eq!(
        device_total(&page, "lanes_device_jobs"),
        stats.execution_count as f64
    );
}
