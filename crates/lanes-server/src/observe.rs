//! The driver's observability: per-model statistics ([`crate::stats`]),
//! Prometheus metrics ([`crate::metrics`]), device accounts
//! ([`crate::occupancy`]) and the timeline ([`crate::timeline`]), fed from
//! three places:
//!
//! - the **driver task**, through its [`crate::probe`] (owned by the task, plain
//!   `&mut` calls): requests refused at admission (`rejected` 429, `expired`
//!   504 under `edf`), expired in the queue or dropped at the cut as
//!   estimated to end late (`expired`), withdrawn by a gone
//!   client (`cancelled`); every batch's start and completion (device
//!   accounts, the timeline job, the cost estimates after a measured batch);
//!   and at the end of each of its steps a *decision point*, which publishes
//!   the queue depths it changed and opens or closes the idle-while-waiting
//!   intervals;
//! - the **executors**, on [`Observer`], before they answer a batch's
//!   clients (so a client that reads the statistics after its answer sees
//!   its batch): per request its `queue` time (arrival to the batch's start)
//!   and `compute_infer` (the batch's device time), per batch the batch
//!   statistics and the device-time and batch-size histograms; on a model
//!   failure per request its `fail` time (arrival to the batch's end);
//! - the **front end**, through a [`RequestRecord`] per request: its one
//!   outcome (`lanes_requests_total`; dropped unfinished it counts as
//!   `cancelled`, or `unavailable` while the driver drains), its pre- and
//!   post-processing time, its end-to-end time on success.
//!
//! The idle-while-waiting rule is [`crate::probe`]'s.
//!
//! The device accounts and the timeline see a batch when the driver handles
//! its completion, just after its clients were answered: a scrape right after
//! an answer may not count that batch yet (after [`crate::Handle::drain`] it
//! does).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use lanes_policy::Nanos;
use lanes_serving::{Grants, ModelIx};
use serde_json::{json, Map};

use crate::backend::BatchInfo;
use crate::clock::Clock;
use crate::driver::DriverConfig;
use crate::error::ServerError;
use crate::metrics::{Info, Metrics, ModelGauges, ModelSeries, Snapshot};
use crate::occupancy::Occupancy;
use crate::stats::{ModelStats, Outcome, StatsReply};
use crate::timeline::{Timeline, DEFAULT_CAPACITY};

/// What the observability needs beyond the [`DriverConfig`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObserveConfig {
    /// The server's version (`lanes_info`, the timeline's `otherData`).
    pub version: String,
    /// Device names by index (`cpu:0`, `sim:1`); a device without one is `device:<i>`.
    pub devices: Vec<String>,
    /// Model versions by index; a model without one is version `1`.
    pub model_versions: Vec<String>,
    /// Jobs the timeline keeps (`--trace-events`).
    pub trace_events: usize,
    /// Request spans the timeline keeps (`--trace-requests`; 0: none).
    pub trace_requests: usize,
}

impl Default for ObserveConfig {
    fn default() -> Self {
        Self {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            devices: Vec::new(),
            model_versions: Vec::new(),
            trace_events: DEFAULT_CAPACITY,
            trace_requests: 0,
        }
    }
}

/// The `policy` label of a grant source.
fn policy_name(grants: Grants) -> String {
    match grants {
        Grants::Engine(policy) => policy.to_string(),
        Grants::Independent => "independent".to_owned(),
        Grants::External => "external".to_owned(),
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn seconds(ns: Nanos) -> f64 {
    ns as f64 / 1e9
}

/// One model's statistics and metric series.
#[derive(Debug)]
pub struct ModelObs {
    pub(crate) stats: Mutex<ModelStats>,
    series: ModelSeries,
}

impl ModelObs {
    /// A copy of the statistics now.
    pub fn stats(&self) -> ModelStats {
        lock(&self.stats).clone()
    }

    /// A request ended as `outcome`.
    pub fn outcome(&self, outcome: Outcome) {
        lock(&self.stats).outcome(outcome);
        self.series.outcomes[outcome as usize].inc();
    }

    /// Pre-processing of one request took `ns`.
    pub fn compute_input(&self, ns: Nanos) {
        lock(&self.stats).durations.compute_input.add(ns);
        self.series.preprocess.observe(seconds(ns));
    }

    /// Post-processing (and encoding) of one request took `ns`.
    pub fn compute_output(&self, ns: Nanos) {
        lock(&self.stats).durations.compute_output.add(ns);
        self.series.postprocess.observe(seconds(ns));
    }

    /// A request succeeded `ns` after its arrival.
    pub fn success(&self, ns: Nanos) {
        lock(&self.stats).durations.success.add(ns);
        self.series.request.observe(seconds(ns));
    }

    /// A request failed with a 500 `ns` after its arrival.
    pub fn fail(&self, ns: Nanos) {
        lock(&self.stats).durations.fail.add(ns);
    }

    /// A request expired outside the driver (its deadline passed before the
    /// front end could queue it): 504.
    pub fn expired(&self) {
        lock(&self.stats).expired += 1;
    }
}

/// A server event worth one log line (the arbiter link's: the daemon down,
/// back, a refusal), for the host's logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// A warning (else information).
    pub warning: bool,
    pub message: String,
}

/// Notices kept until the host's logger takes them; past it they are dropped.
const NOTICES: usize = 256;

/// The shared side: read by front ends and scrapes, fed by executors and
/// front ends (see the module docs).
#[derive(Debug)]
pub struct Observer {
    pub(crate) models: Vec<ModelObs>,
    /// Events for the host's logs (the arbiter link's), bounded.
    notices: (flume::Sender<Notice>, flume::Receiver<Notice>),
    pub(crate) snapshot: Arc<Snapshot>,
    metrics: Metrics,
    pub(crate) timeline: Timeline,
    clock: Clock,
    pub(crate) draining: AtomicBool,
}

impl Observer {
    /// Keeps `notice` for the host's logs (dropped when [`NOTICES`] wait).
    pub fn notice(&self, notice: Notice) {
        let _ = self.notices.0.try_send(notice);
    }

    /// The notices kept so far, oldest first.
    pub fn take_notices(&self) -> Vec<Notice> {
        self.notices.1.try_iter().collect()
    }

    /// The observability of a driver serving `config`, on devices named
    /// `devices` whose accounts are `occupancy`'s, on `clock`.
    pub(crate) fn new(
        config: &DriverConfig,
        observe: &ObserveConfig,
        devices: Vec<String>,
        occupancy: &Occupancy,
        clock: Clock,
    ) -> Self {
        let gauges = config
            .models
            .iter()
            .map(|m| ModelGauges::new(&m.name, m.batching.max_batch_size))
            .collect();
        let snapshot = Arc::new(Snapshot {
            models: gauges,
            devices: Arc::clone(occupancy.accounts()),
            clock,
        });
        let policy = policy_name(config.grants);
        let info = Info {
            version: observe.version.clone(),
            policy: policy.clone(),
        };
        let (metrics, series) = Metrics::new(&info, Arc::clone(&snapshot));
        let models = config
            .models
            .iter()
            .zip(series)
            .enumerate()
            .map(|(i, (m, series))| {
                let version = observe.model_versions.get(i).map_or("1", String::as_str);
                ModelObs {
                    stats: Mutex::new(ModelStats::new(&m.name, version)),
                    series,
                }
            })
            .collect();
        let mut meta = Map::new();
        meta.insert("version".into(), json!(observe.version));
        meta.insert("policy".into(), json!(policy));
        let origin_unix_s = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64())
            - seconds(clock.now());
        let names = config.models.iter().map(|m| m.name.clone()).collect();
        let timeline = Timeline::new(observe.trace_events, devices, meta, origin_unix_s)
            .with_spans(observe.trace_requests, names);
        Self {
            notices: flume::bounded(NOTICES),
            models,
            snapshot,
            metrics,
            timeline,
            clock,
            draining: AtomicBool::new(false),
        }
    }

    /// The model at index `model` (a served model's: [`crate::Handle::model`]).
    pub fn model(&self, model: ModelIx) -> &ModelObs {
        &self.models[model as usize]
    }

    /// A record of one request of `model` that arrived at `arrival` (the
    /// driver's clock); it counts exactly one outcome.
    pub fn request(self: &Arc<Self>, model: ModelIx, arrival: Nanos) -> RequestRecord {
        RequestRecord {
            observer: Arc::clone(self),
            model,
            arrival,
            finished: false,
        }
    }

    /// The scheduler's estimates of `model` as last published: `(batch size, ns)`.
    pub fn estimates(&self, model: ModelIx) -> Vec<(u32, Nanos)> {
        self.snapshot.models[model as usize].estimates()
    }

    /// Rows of `model` queued, as last published.
    pub fn queue_depth(&self, model: ModelIx) -> u64 {
        self.snapshot.models[model as usize]
            .depth
            .load(Ordering::Relaxed)
    }

    /// The body of `GET /v2/models/{m}/stats` (`Some(m)`, a served model's
    /// index: [`crate::Handle::model`]) or `GET /v2/models/stats` (`None`:
    /// every model, in index order).
    pub fn stats_json(&self, model: Option<ModelIx>) -> Vec<u8> {
        let ixs: Vec<ModelIx> = match model {
            Some(m) => vec![m],
            None => (0..self.models.len() as ModelIx).collect(),
        };
        let stats: Vec<_> = ixs
            .iter()
            .map(|&m| (self.model(m).stats(), self.estimates(m)))
            .collect();
        let reply = StatsReply {
            model_stats: stats.iter().map(|(s, e)| s.json(e)).collect(),
        };
        serde_json::to_vec(&reply).expect("statistics encode")
    }

    /// The metrics page (OpenMetrics text).
    pub fn metrics_text(&self) -> String {
        self.metrics.render()
    }

    /// Serves the metrics page on `listener` (`GET /metrics` or `/`, by
    /// [`lanes_metrics_http::serve`]) until the runtime stops.
    pub async fn serve_metrics(self: Arc<Self>, listener: tokio::net::TcpListener) {
        lanes_metrics_http::serve(listener, move || {
            let observer = Arc::clone(&self);
            async move { Some(observer.metrics_text()) }
        })
        .await;
    }

    /// The body of `GET /v2/trace?seconds=N`: the jobs that completed in the
    /// last `seconds` (None: the whole ring) as Chrome trace-event JSON.
    /// Building it takes time in the ring's size (a front end runs it on a
    /// blocking thread, not on the runtime's workers).
    pub fn trace_json(&self, seconds: Option<f64>) -> Vec<u8> {
        self.timeline.export(seconds, self.clock.now())
    }

    /// `--trace FILE`: the whole ring, written atomically (at shutdown).
    pub fn write_trace(&self, path: &Path) -> Result<(), ServerError> {
        self.timeline.write(path)
    }

    /// The timeline itself.
    pub fn timeline(&self) -> &Timeline {
        &self.timeline
    }

    /// Executor: a batch ran for `run`; `queued` holds each request's wait
    /// from arrival to the batch's start.
    pub(crate) fn batch_ran(
        &self,
        info: &BatchInfo,
        queued: impl Iterator<Item = Nanos> + Clone,
        run: Nanos,
    ) {
        let m = self.model(info.model);
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        {
            let mut s = lock(&m.stats);
            s.batch(info.rows, run, now_ms);
            for q in queued.clone() {
                s.durations.queue.add(q);
                s.durations.compute_infer.add(run);
            }
        }
        for q in queued {
            m.series.queue.observe(seconds(q));
        }
        m.series.device.observe(seconds(run));
        m.series.batch_size.observe(f64::from(info.rows));
    }

    /// Executor: the model failed on a batch after `run`.
    pub(crate) fn batch_failed(
        &self,
        info: &BatchInfo,
        queued: impl Iterator<Item = Nanos>,
        run: Nanos,
    ) {
        let mut s = lock(&self.model(info.model).stats);
        for q in queued {
            s.durations.fail.add(q + run);
        }
    }
}

/// One request's outcome, pre/post-processing and end-to-end time, as a
/// front end reports them (see the module docs). Dropped without
/// [`RequestRecord::finish`] (the client went away, the handler was cut) it
/// counts `cancelled`, or `unavailable` once the driver drains.
#[derive(Debug)]
#[must_use = "a request record counts its outcome when finished or dropped"]
pub struct RequestRecord {
    observer: Arc<Observer>,
    model: ModelIx,
    arrival: Nanos,
    finished: bool,
}

impl RequestRecord {
    fn obs(&self) -> &ModelObs {
        self.observer.model(self.model)
    }

    /// Pre-processing took `ns`.
    pub fn preprocessed(&self, ns: Nanos) {
        self.obs().compute_input(ns);
    }

    /// Post-processing and encoding took `ns`.
    pub fn postprocessed(&self, ns: Nanos) {
        self.obs().compute_output(ns);
    }

    /// The front end's own post-processing failed after the batch ran (a
    /// 500): counts the request's `fail` time. (A model failure on the batch
    /// is counted by the executor.)
    pub fn postprocess_failed(&self) {
        let now = self.observer.clock.now();
        self.obs().fail(now.saturating_sub(self.arrival));
    }

    /// The request ends as `outcome` (a success also counts its end-to-end time).
    pub fn finish(mut self, outcome: Outcome) {
        self.finished = true;
        if outcome == Outcome::Success {
            let now = self.observer.clock.now();
            self.obs().success(now.saturating_sub(self.arrival));
        }
        self.obs().outcome(outcome);
    }

    /// The request ends with the driver's answer `error`.
    pub fn finish_error(self, error: &ServerError) {
        self.finish(Outcome::of_status(error.http_status()));
    }
}

impl Drop for RequestRecord {
    fn drop(&mut self) {
        if !self.finished {
            let outcome = if self.observer.draining.load(Ordering::Relaxed) {
                Outcome::Unavailable
            } else {
                Outcome::Cancelled
            };
            self.obs().outcome(outcome);
        }
    }
}

#[cfg(test)]
#[path = "observe_tests.rs"]
mod tests;
