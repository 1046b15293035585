//! The device timeline: finished jobs in a ring, exported as Chrome
//! trace-event JSON (`python/lanes/serving/timeline.py`'s format).
//!
//! The driver records every finished job (one batch on one device): the
//! device, the model, its rows and requests, when it was dispatched and when
//! it completed (the driver's clock), the estimated cost at dispatch, the
//! measured device time, and the queue wait of its oldest request. The ring
//! keeps at most `capacity` jobs, the oldest dropped first.
//!
//! Export ([`chrome_trace`]) follows the Trace Event Format that Perfetto and
//! chrome://tracing open: `{"traceEvents": [...], "displayTimeUnit": "ms",
//! "otherData": {...}}` with
//!
//! - metadata events (`"ph": "M"`): the process is named `lanes serve`, and
//!   each device is one thread track (`tid` = the device's index) named after
//!   it (`cpu:0`, `sim:1`, `cuda:0`) and sorted by its index;
//! - one complete event (`"ph": "X"`, `ts`/`dur` in µs from the timeline's
//!   origin, the driver's clock zero) per job, named after the model, with
//!   args `model`, `batch_size`, `requests`, `estimated_ms`, `measured_ms`,
//!   `cpu_ms` (the CPU time the runtime call ran on its thread, where read),
//!   `run_delay_ms` (the time its thread waited for a core in the call, where
//!   read: `measured_ms` less both is the time the call was blocked or stopped
//!   by the hypervisor, [`crate::thread_clocks`]), `queue_wait_ms` (and
//!   `failed` when the model failed);
//! - counter events (`"ph": "C"`, name `jobs <device>`, args `{"jobs": n}`)
//!   at every instant a device's number of concurrent jobs changes, derived
//!   from the jobs' intervals (at equal times ends count before starts), so
//!   they agree with the slices by construction.
//!
//! A window of the last N seconds (`GET /v2/trace?seconds=N`,
//! [`parse_seconds`]) holds the jobs that completed within it. Copying the
//! ring holds its lock; building and encoding the JSON does not (a front end
//! runs [`Timeline::export`] on a blocking thread). `--trace FILE` is
//! [`Timeline::write`]: a temporary file beside it, then a rename, so a
//! reader never sees half a file.

use lanes_kserve::deadline::parse_decimal;
use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use lanes_policy::Nanos;
use serde_json::{json, Map, Value};

use crate::error::{ServerError, StartError};
use crate::spans::Spans;

/// `seconds` when `GET /v2/trace` names none.
pub const DEFAULT_SECONDS: f64 = 10.0;
/// The longest window, seconds.
pub const MAX_SECONDS: f64 = 86_400.0;
/// Jobs the ring keeps by default (`--trace-events`).
pub const DEFAULT_CAPACITY: usize = 200_000;

/// One finished job: a batch of one model on one device.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub device: usize,
    pub model: Arc<str>,
    pub rows: u32,
    pub requests: u32,
    /// Dispatched (the driver's clock).
    pub start: Nanos,
    /// Completed.
    pub end: Nanos,
    pub estimated: Nanos,
    pub measured: Nanos,
    /// The CPU time the call ran on its thread (`None`: not read).
    pub cpu: Option<Nanos>,
    /// The time its thread waited for a core in the call (`None`: not read).
    pub run_delay: Option<Nanos>,
    pub queue_wait: Nanos,
    pub failed: bool,
}

#[derive(Debug)]
struct Ring {
    jobs: VecDeque<Job>,
    capacity: usize,
    recorded: u64,
}

/// A bounded ring of finished jobs (see the module docs).
#[derive(Debug)]
pub struct Timeline {
    ring: Mutex<Ring>,
    devices: Vec<String>,
    /// `otherData`'s server fields (`version`, `policy`).
    meta: Map<String, Value>,
    /// The wall time of the driver's clock zero, seconds since the Unix epoch.
    origin_unix_s: f64,
    /// The request spans (`--trace-requests`; off unless [`Timeline::with_spans`]).
    spans: Spans,
    /// Model names by index, for the spans.
    models: Vec<String>,
}

impl Timeline {
    /// An empty ring of at most `capacity` jobs (at least 1) on `devices`.
    pub fn new(
        capacity: usize,
        devices: Vec<String>,
        meta: Map<String, Value>,
        origin_unix_s: f64,
    ) -> Self {
        let capacity = capacity.max(1);
        Self {
            ring: Mutex::new(Ring {
                jobs: VecDeque::with_capacity(capacity.min(1 << 12)),
                capacity,
                recorded: 0,
            }),
            devices,
            meta,
            origin_unix_s,
            spans: Spans::new(0),
            models: Vec::new(),
        }
    }

    /// The same timeline keeping the last `capacity` request spans of the
    /// models named `models` (by index) too; 0: none.
    pub fn with_spans(mut self, capacity: usize, models: Vec<String>) -> Self {
        self.spans = Spans::new(capacity);
        self.models = models;
        self
    }

    /// The request spans.
    pub fn spans(&self) -> &Spans {
        &self.spans
    }

    fn ring(&self) -> std::sync::MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps a finished job (dropping the oldest past the capacity).
    pub fn record(&self, job: Job) {
        let mut ring = self.ring();
        if ring.jobs.len() == ring.capacity {
            ring.jobs.pop_front();
        }
        ring.jobs.push_back(job);
        ring.recorded += 1;
    }

    /// The jobs that completed in the `seconds` before `now` (None: all),
    /// oldest first. The ring is in completion order, so this walks back
    /// from its end.
    pub fn window(&self, seconds: Option<f64>, now: Nanos) -> Vec<Job> {
        let ring = self.ring();
        let Some(seconds) = seconds else {
            return ring.jobs.iter().cloned().collect();
        };
        let cutoff = now.saturating_sub((seconds * 1e9) as Nanos);
        let newer = ring
            .jobs
            .iter()
            .rev()
            .take_while(|j| j.end >= cutoff)
            .count();
        ring.jobs
            .range(ring.jobs.len() - newer..)
            .cloned()
            .collect()
    }

    /// The Chrome trace of `jobs` (a window of `seconds`, None: the ring).
    pub fn trace(&self, jobs: &[Job], seconds: Option<f64>) -> Value {
        let (recorded, kept, capacity) = {
            let ring = self.ring();
            (ring.recorded, ring.jobs.len() as u64, ring.capacity)
        };
        let mut other = self.meta.clone();
        other.insert("devices".into(), json!(self.devices));
        other.insert(
            "clock".into(),
            json!("monotonic; ts in µs from the timeline's origin"),
        );
        other.insert("origin_unix_s".into(), json!(self.origin_unix_s));
        other.insert("jobs".into(), json!(jobs.len()));
        other.insert("window_s".into(), json!(seconds));
        other.insert("dropped".into(), json!(recorded - kept));
        other.insert("capacity".into(), json!(capacity));
        chrome_trace(jobs, &self.devices, 0, std::process::id(), other)
    }

    /// The last `seconds` before `now` (None: the whole ring) as JSON bytes:
    /// the jobs, and with spans on the requests whose reply was built in
    /// the window ([`crate::spans`]; `otherData` counts them as `requests`,
    /// `requests_dropped`, `requests_capacity`).
    pub fn export(&self, seconds: Option<f64>, now: Nanos) -> Vec<u8> {
        let jobs = self.window(seconds, now);
        let mut trace = self.trace(&jobs, seconds);
        if self.spans.on() {
            let spans = self.spans.window(seconds, now);
            let (recorded, kept, capacity) = self.spans.counts();
            let other = &mut trace["otherData"];
            other["requests"] = json!(spans.len());
            other["requests_dropped"] = json!(recorded - kept);
            other["requests_capacity"] = json!(capacity);
            let events = Spans::events(&spans, &self.models, 0, std::process::id());
            if let Some(list) = trace["traceEvents"].as_array_mut() {
                list.extend(events);
            }
        }
        serde_json::to_vec(&trace).expect("a trace encodes")
    }

    /// Writes the whole ring to `path` atomically (a temporary file beside
    /// it, then a rename).
    pub fn write(&self, path: &Path) -> Result<(), ServerError> {
        write_atomically(path, &self.export(None, 0))
    }

    /// Jobs kept now.
    pub fn len(&self) -> usize {
        self.ring().jobs.len()
    }

    /// Whether no job is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Trace-event JSON for `jobs` on `devices` (see the module docs), times
/// relative to `origin`, in process `pid`.
pub fn chrome_trace(
    jobs: &[Job],
    devices: &[String],
    origin: Nanos,
    pid: u32,
    other: Map<String, Value>,
) -> Value {
    let us = |ns: Nanos| (ns as f64 - origin as f64) / 1e3;
    let mut events = vec![json!({
        "name": "process_name", "ph": "M", "pid": pid, "tid": 0,
        "args": {"name": "lanes serve"},
    })];
    for (i, name) in devices.iter().enumerate() {
        events.push(json!({
            "name": "thread_name", "ph": "M", "pid": pid, "tid": i, "args": {"name": name},
        }));
        events.push(json!({
            "name": "thread_sort_index", "ph": "M", "pid": pid, "tid": i,
            "args": {"sort_index": i},
        }));
    }
    let mut changes = Vec::with_capacity(jobs.len() * 2);
    for j in jobs {
        let mut args = json!({
            "model": &*j.model,
            "batch_size": j.rows,
            "requests": j.requests,
            "estimated_ms": j.estimated as f64 / 1e6,
            "measured_ms": j.measured as f64 / 1e6,
            "queue_wait_ms": j.queue_wait as f64 / 1e6,
        });
        if let Some(cpu) = j.cpu {
            args["cpu_ms"] = json!(cpu as f64 / 1e6);
        }
        if let Some(delay) = j.run_delay {
            args["run_delay_ms"] = json!(delay as f64 / 1e6);
        }
        if j.failed {
            args["failed"] = json!(true);
        }
        events.push(json!({
            "name": &*j.model, "cat": "job", "ph": "X",
            "ts": us(j.start), "dur": j.end.saturating_sub(j.start) as f64 / 1e3,
            "pid": pid, "tid": j.device, "args": args,
        }));
        changes.push((j.device, j.start, 1i64));
        changes.push((j.device, j.end, -1i64));
    }
    // Per device, by time, ends first.
    changes.sort_unstable();
    let mut count = vec![0i64; devices.len()];
    let mut i = 0;
    while i < changes.len() {
        let (device, at, _) = changes[i];
        let before = count.get(device).copied().unwrap_or(0);
        let mut n = before;
        while i < changes.len() && changes[i].0 == device && changes[i].1 == at {
            n += changes[i].2;
            i += 1;
        }
        if let Some(c) = count.get_mut(device) {
            *c = n;
        }
        if n != before {
            let name = devices.get(device).map_or("?", String::as_str);
            events.push(json!({
                "name": format!("jobs {name}"), "ph": "C", "ts": us(at), "pid": pid,
                "tid": device, "args": {"jobs": n},
            }));
        }
    }
    json!({"traceEvents": events, "displayTimeUnit": "ms", "otherData": other})
}

/// `seconds` of `GET /v2/trace`: [`DEFAULT_SECONDS`] when absent, else a
/// plain ASCII decimal number ([`lanes_kserve::deadline::parse_decimal`]) in
/// (0, [`MAX_SECONDS`]].
pub fn parse_seconds(text: Option<&str>) -> Result<f64, ServerError> {
    let Some(text) = text else {
        return Ok(DEFAULT_SECONDS);
    };
    match parse_decimal(text) {
        Some(v) if v > 0.0 && v <= MAX_SECONDS => Ok(v),
        _ => Err(ServerError::BadArgument {
            message: format!(
                "seconds = {}: must be a number of seconds in (0, {MAX_SECONDS}] \
                 (default {DEFAULT_SECONDS})",
                lanes_kserve::pyrepr::string(text)
            ),
        }),
    }
}

fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Refuses a `--trace` file whose folder does not exist (checked at start,
/// not at exit).
pub fn check_trace_path(path: &Path) -> Result<(), StartError> {
    let folder = folder_of(path);
    if folder.is_dir() {
        return Ok(());
    }
    Err(StartError::TraceFolder {
        path: path.display().to_string(),
        folder: folder.display().to_string(),
    })
}

fn write_atomically(path: &Path, data: &[u8]) -> Result<(), ServerError> {
    let failed = |e: std::io::Error| {
        let text = e.to_string();
        let reason = text.split(" (os error").next().unwrap_or(&text).to_owned();
        ServerError::OutputFailed {
            message: format!("trace = '{}': cannot write: {reason}", path.display()),
        }
    };
    let folder = folder_of(path);
    let name = path
        .file_name()
        .map_or_else(|| "trace".into(), |n| n.to_string_lossy());
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let tmp = folder.join(format!(".{name}.{}.{n}.tmp", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| {
            let done = f.write_all(data).and_then(|()| std::fs::rename(&tmp, path));
            if done.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            done
        });
    written.map_err(failed)
}

#[cfg(test)]
#[path = "timeline_tests.rs"]
pub(crate) mod tests;
