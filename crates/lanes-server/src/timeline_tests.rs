//! tests/serving/test_timeline.py's cases on the Rust timeline: the
//! trace-event schema per phase, counters that agree with the slices, the
//! ring bound and windows, `seconds` parsing and its error text, and the
//! trace file.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::*;

/// Phase → keys every event of it must have (Trace Event Format).
fn required(phase: &str) -> &'static [&'static str] {
    match phase {
        "M" => &["name", "ph", "pid", "tid", "args"],
        "X" => &["name", "ph", "pid", "tid", "ts", "dur", "args"],
        "C" => &["name", "ph", "pid", "ts", "args"],
        other => panic!("unexpected phase {other}"),
    }
}

const JOB_ARGS: [&str; 8] = [
    "batch_size",
    "cpu_ms",
    "estimated_ms",
    "measured_ms",
    "model",
    "queue_wait_ms",
    "requests",
    "run_delay_ms",
];

/// Asserts the trace-event format; returns the events.
pub(crate) fn check_schema(trace: &Value) -> Vec<Value> {
    let mut keys: Vec<_> = trace.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, ["displayTimeUnit", "otherData", "traceEvents"]);
    assert_eq!(trace["displayTimeUnit"], "ms");
    let events = trace["traceEvents"].as_array().unwrap().clone();
    for e in &events {
        let phase = e["ph"].as_str().unwrap();
        for key in required(phase) {
            assert!(e.get(key).is_some(), "{e} lacks {key}");
        }
        assert!(e["name"].is_string() && e["pid"].is_u64(), "{e}");
        match phase {
            "M" => assert!(
                ["process_name", "thread_name", "thread_sort_index"]
                    .contains(&e["name"].as_str().unwrap()),
                "{e}"
            ),
            "X" => {
                assert!(
                    e["ts"].is_number() && e["dur"].as_f64().unwrap() >= 0.0,
                    "{e}"
                );
                let mut args: Vec<_> = e["args"].as_object().unwrap().keys().cloned().collect();
                args.retain(|k| k != "failed");
                args.sort();
                assert_eq!(args, JOB_ARGS, "{e}");
                assert_eq!(e["name"], e["args"]["model"]);
            }
            _ => {
                assert!(e["ts"].is_number(), "{e}");
                assert!(e["name"].as_str().unwrap().starts_with("jobs "), "{e}");
                let args: Vec<_> = e["args"].as_object().unwrap().keys().collect();
                assert_eq!(args, ["jobs"], "{e}");
                assert!(e["args"]["jobs"].is_i64(), "{e}");
            }
        }
    }
    events
}

/// The job count of `device` over time, recomputed from its slices (ends first).
pub(crate) fn replay(events: &[Value], device: &str) -> Vec<(f64, i64)> {
    let tid = events
        .iter()
        .find(|e| e["name"] == "thread_name" && e["args"]["name"] == device)
        .map(|e| e["tid"].clone())
        .unwrap();
    // Keyed by ns (µs × 1000, rounded): undoes float rounding of ts + dur.
    let mut changes: BTreeMap<i64, i64> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X" && e["tid"] == tid) {
        let ts = e["ts"].as_f64().unwrap();
        let end = ts + e["dur"].as_f64().unwrap();
        *changes.entry((ts * 1e3).round() as i64).or_default() += 1;
        *changes.entry((end * 1e3).round() as i64).or_default() -= 1;
    }
    let mut n = 0;
    let mut out = Vec::new();
    for (ns, delta) in changes {
        if delta != 0 {
            n += delta;
            out.push((ns as f64 / 1e3, n));
        }
    }
    out
}

pub(crate) fn counters(events: &[Value], device: &str) -> Vec<(f64, i64)> {
    events
        .iter()
        .filter(|e| e["name"] == format!("jobs {device}").as_str())
        .map(|e| {
            (
                e["ts"].as_f64().unwrap(),
                e["args"]["jobs"].as_i64().unwrap(),
            )
        })
        .collect()
}

fn job(device: usize, start_ms: f64, end_ms: f64, model: &str) -> Job {
    Job {
        device,
        model: model.into(),
        rows: 2,
        requests: 1,
        start: (start_ms * 1e6) as Nanos,
        end: (end_ms * 1e6) as Nanos,
        estimated: 1_000_000,
        measured: 900_000,
        cpu: Some(700_000),
        run_delay: Some(100_000),
        queue_wait: 5,
        failed: false,
    }
}

fn devices() -> Vec<String> {
    vec!["a".into(), "b".into()]
}

#[test]
fn counters_follow_the_slices() {
    type Expected = &'static [(f64, i64)];
    let table: [(Vec<Job>, Expected, Expected); 4] = [
        (vec![], &[], &[]),
        (
            vec![job(0, 0.0, 10.0, "m")],
            &[(0.0, 1), (10_000.0, 0)],
            &[],
        ),
        // back to back: the end and the next start at one instant are no change
        (
            vec![job(0, 0.0, 10.0, "m"), job(0, 10.0, 20.0, "m")],
            &[(0.0, 1), (20_000.0, 0)],
            &[],
        ),
        (
            vec![
                job(0, 0.0, 10.0, "m"),
                job(0, 5.0, 15.0, "m"),
                job(1, 2.0, 3.0, "m"),
            ],
            &[(0.0, 1), (5_000.0, 2), (10_000.0, 1), (15_000.0, 0)],
            &[(2_000.0, 1), (3_000.0, 0)],
        ),
    ];
    for (jobs, a, b) in table {
        let trace = chrome_trace(&jobs, &devices(), 0, 7, Map::new());
        let text = serde_json::to_string(&trace).unwrap();
        let events = check_schema(&serde_json::from_str(&text).unwrap());
        let slices = events.iter().filter(|e| e["ph"] == "X").count();
        assert_eq!(slices, jobs.len());
        for (device, expected) in [("a", a), ("b", b)] {
            assert_eq!(counters(&events, device), expected, "{device}: {jobs:?}");
            assert_eq!(counters(&events, device), replay(&events, device));
        }
    }
}

#[test]
fn a_slice_carries_its_job_in_ms_and_a_failure_is_marked() {
    let mut failed = job(1, 1.5, 4.0, "ocr");
    failed.failed = true;
    let trace = chrome_trace(&[failed], &devices(), 500_000, 42, Map::new());
    let events = check_schema(&trace);
    let slice = events.iter().find(|e| e["ph"] == "X").unwrap();
    assert_eq!(
        *slice,
        json!({
            "name": "ocr", "cat": "job", "ph": "X", "ts": 1000.0, "dur": 2500.0, "pid": 42,
            "tid": 1,
            "args": {"model": "ocr", "batch_size": 2, "requests": 1, "estimated_ms": 1.0,
                     "measured_ms": 0.9, "cpu_ms": 0.7, "run_delay_ms": 0.1,
                     "queue_wait_ms": 5e-6,
                     "failed": true},
        })
    );
    let names: Vec<_> = events
        .iter()
        .filter(|e| e["ph"] == "M")
        .map(|e| {
            (
                e["name"].as_str().unwrap(),
                e["tid"].as_u64().unwrap(),
                e["args"].clone(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("process_name", 0, json!({"name": "lanes serve"})),
            ("thread_name", 0, json!({"name": "a"})),
            ("thread_sort_index", 0, json!({"sort_index": 0})),
            ("thread_name", 1, json!({"name": "b"})),
            ("thread_sort_index", 1, json!({"sort_index": 1})),
        ]
    );
}

#[test]
fn a_call_whose_clocks_were_not_read_has_no_cpu_ms_or_run_delay_ms() {
    let mut unread = job(0, 1.0, 2.0, "ocr");
    unread.cpu = None;
    unread.run_delay = None;
    let trace = chrome_trace(&[unread], &devices(), 0, 42, Map::new());
    let slice = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["ph"] == "X")
        .unwrap()
        .clone();
    assert!(slice["args"].get("cpu_ms").is_none(), "{slice}");
    assert!(slice["args"].get("run_delay_ms").is_none(), "{slice}");
    assert_eq!(slice["args"]["measured_ms"], 0.9);
}

fn meta() -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert("policy".into(), json!("fifo"));
    meta
}

#[test]
fn the_ring_keeps_the_newest_jobs_and_windows_by_completion() {
    let timeline = Timeline::new(3, vec!["a".into()], meta(), 0.0);
    for i in 0..5 {
        let t = f64::from(i) * 10.0;
        timeline.record(job(0, t, t + 5.0, &format!("m{i}")));
    }
    let models = |jobs: Vec<Job>| jobs.iter().map(|j| j.model.to_string()).collect::<Vec<_>>();
    assert_eq!(models(timeline.window(None, 0)), ["m2", "m3", "m4"]);
    assert_eq!(models(timeline.window(Some(0.012), 50_000_000)), ["m4"]);
    // A window longer than the clock's age holds everything kept.
    assert_eq!(models(timeline.window(Some(60.0), 50_000_000)).len(), 3);
    let other = &timeline.trace(&timeline.window(None, 0), None)["otherData"];
    assert_eq!(
        (&other["jobs"], &other["dropped"], &other["capacity"]),
        (&json!(3), &json!(2), &json!(3))
    );
    assert_eq!(other["policy"], "fifo");
    assert_eq!(other["devices"], json!(["a"]));
    assert_eq!(other["window_s"], Value::Null);
}

#[test]
fn seconds_accepted() {
    let table = [
        (None, 10.0),
        (Some("1"), 1.0),
        (Some("0.5"), 0.5),
        (Some("86400"), 86400.0),
        (Some(" 2e1 "), 20.0),
        (Some(".5"), 0.5),
        (Some("+3."), 3.0),
        (Some("1E-1"), 0.1),
    ];
    for (text, seconds) in table {
        assert_eq!(parse_seconds(text).unwrap(), seconds, "{text:?}");
    }
}

#[test]
fn seconds_refused() {
    let table = [
        ("0", "'0'"),
        ("-1", "'-1'"),
        ("abc", "'abc'"),
        ("nan", "'nan'"),
        ("inf", "'inf'"),
        ("86401", "'86401'"),
        ("", "''"),
        ("1_0", "'1_0'"),
        ("\u{661}", "'\u{661}'"),
        ("0x10", "'0x10'"),
        ("1e", "'1e'"),
        ("1e400", "'1e400'"),
        ("it's", "\"it's\""),
        ("a\tb", "'a\\tb'"),
    ];
    for (text, repr) in table {
        let error = parse_seconds(Some(text)).unwrap_err();
        assert_eq!((error.code(), error.http_status()), ("bad_argument", 400));
        assert_eq!(
            error.to_string(),
            format!("seconds = {repr}: must be a number of seconds in (0, 86400] (default 10)")
        );
    }
}

#[test]
fn the_trace_file_is_written_whole_and_nothing_else_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.json");
    let timeline = Timeline::new(4, vec!["a".into()], meta(), 1.5);
    for i in 0..6 {
        let t = f64::from(i) * 10.0;
        timeline.record(job(0, t, t + 5.0, "m"));
    }
    check_trace_path(&path).unwrap();
    timeline.write(&path).unwrap();
    let trace: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let events = check_schema(&trace);
    assert_eq!(events.iter().filter(|e| e["ph"] == "X").count(), 4);
    let other = &trace["otherData"];
    assert_eq!((&other["jobs"], &other["dropped"]), (&json!(4), &json!(2)));
    assert_eq!(other["origin_unix_s"], 1.5);
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "no temporary file is left");
}

#[test]
fn a_trace_file_in_a_missing_folder_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nowhere").join("trace.json");
    let error = check_trace_path(&path).unwrap_err();
    assert_eq!(error.code(), "bad_argument");
    assert_eq!(
        error.to_string(),
        format!(
            "trace = '{}': folder '{}' does not exist (see --trace)",
            path.display(),
            path.parent().unwrap().display()
        )
    );
    let timeline = Timeline::new(1, vec![], Map::new(), 0.0);
    let error = timeline.write(&path).unwrap_err();
    assert_eq!(error.code(), "output_failed");
    assert_eq!(
        error.to_string(),
        format!(
            "trace = '{}': cannot write: No such file or directory",
            path.display()
        )
    );
}
