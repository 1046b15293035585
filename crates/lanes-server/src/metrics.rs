//! Prometheus metrics of the data plane (names, types, labels and buckets:
//! docs/metrics.md, a contract), kept in a [`prometheus_client`] registry and
//! encoded as OpenMetrics text 1.0.0 ([`Metrics::render`]), served by
//! [`lanes_metrics_http`] (`Observer::serve_metrics`).
//!
//! The serving path only does cheap updates: counters and histograms are
//! series handles cached per model ([`ModelSeries`]: an atomic add, or a
//! histogram's short lock), fed by [`crate::observe`] beside the model's
//! statistics. Everything else is read at scrape time by `Scrape`, a
//! collector, from values the driver publishes ([`Snapshot`]): queue depths
//! and cost estimates (atomics the driver stores), device accounts
//! ([`crate::occupancy`], extended to the scrape's clock), host CPU time from
//! `/proc/stat` (as node_exporter's `node_cpu_seconds_total`; absent without
//! it) and the process' own figures from `/proc/self`. A scrape never locks
//! the driver's state.
//!
//! Counters are registered without `_total`, which the encoder appends.
//! Where the page differs from the Python server's (prometheus_client): no
//! `_created` samples; of the process collector only `process_cpu_seconds`,
//! `process_resident_memory_bytes`, `process_virtual_memory_bytes` and
//! `process_open_fds`; `le` values written as `0.00005`, not `5e-05` (the
//! same numbers to a parser).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{text, DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::clock::Clock;
use crate::occupancy::DeviceAccount;
use crate::stats::Outcome;

/// Duration buckets, seconds: 50 µs .. 10 s, about three a decade (+Inf is added).
pub const DURATION_BUCKETS: [f64; 17] = [
    50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3,
    1.0, 2.5, 5.0, 10.0,
];
/// `/proc/stat` columns, in order, as `lanes_host_cpu_seconds_total{mode}`.
pub const CPU_MODES: [&str; 8] = [
    "user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal",
];
/// Clock ticks per second of `/proc` times (Linux' `USER_HZ`, 100 on every
/// architecture it supports).
const USER_HZ: f64 = 100.0;

/// 1, 2, 4, … up to `top` (`top` itself last when it is not a power of two).
pub fn powers_of_two(top: u32) -> Vec<u32> {
    let mut sizes = vec![1u32];
    while let Some(next) = sizes.last().unwrap().checked_mul(2).filter(|&n| n <= top) {
        sizes.push(next);
    }
    if top > 1 && *sizes.last().unwrap() != top {
        sizes.push(top);
    }
    sizes
}

/// What `lanes_info` says about the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Info {
    pub version: String,
    pub policy: String,
}

/// One model's cached series.
#[derive(Debug, Clone)]
pub struct ModelSeries {
    /// `lanes_requests_total` by [`Outcome`] (its discriminant).
    pub outcomes: [Counter; 7],
    pub request: Histogram,
    pub queue: Histogram,
    pub preprocess: Histogram,
    pub device: Histogram,
    pub postprocess: Histogram,
    pub batch_size: Histogram,
}

/// A model's values the driver publishes for scrapes.
#[derive(Debug)]
pub struct ModelGauges {
    pub name: String,
    /// Rows queued now.
    pub depth: AtomicU64,
    /// Batch sizes the estimates are for: [`powers_of_two`] of `max_batch_size`.
    pub sizes: Vec<u32>,
    /// The current estimate of each size, ns.
    pub estimates: Vec<AtomicU64>,
}

impl ModelGauges {
    /// Zeroed gauges of model `name`, estimates for sizes up to `max_batch_size`.
    pub fn new(name: &str, max_batch_size: u32) -> Self {
        let sizes = powers_of_two(max_batch_size.max(1));
        Self {
            name: name.to_owned(),
            depth: AtomicU64::new(0),
            estimates: sizes.iter().map(|_| AtomicU64::new(0)).collect(),
            sizes,
        }
    }

    /// `(batch size, ns)` of every estimate, as published last.
    pub fn estimates(&self) -> Vec<(u32, u64)> {
        self.sizes
            .iter()
            .zip(&self.estimates)
            .map(|(&b, ns)| (b, ns.load(Ordering::Relaxed)))
            .collect()
    }
}

/// Everything a scrape reads besides the registry's own series.
#[derive(Debug)]
pub struct Snapshot {
    pub models: Vec<ModelGauges>,
    pub devices: Arc<[DeviceAccount]>,
    /// The driver's clock (device accounts are extended to its now).
    pub clock: Clock,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelLabel {
    model: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    model: String,
    outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct InfoLabels {
    version: String,
    policy: String,
}

/// Makes a family's histograms with its bounds.
#[derive(Debug, Clone)]
struct Bounds(Arc<[f64]>);

impl MetricConstructor<Histogram> for Bounds {
    fn new_metric(&self) -> Histogram {
        Histogram::new(self.0.iter().copied())
    }
}

type Histograms = Family<ModelLabel, Histogram, Bounds>;

fn histograms(registry: &mut Registry, name: &str, help: &str, bounds: Vec<f64>) -> Histograms {
    let family = Family::new_with_constructor(Bounds(bounds.into()));
    registry.register(name, help, family.clone());
    family
}

/// The registry of one server (see the module docs).
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
}

impl Metrics {
    /// The registry for `snapshot`'s models (in index order) and devices, and
    /// each model's series; every outcome shows from the start, at 0.
    pub fn new(info: &Info, snapshot: Arc<Snapshot>) -> (Self, Vec<ModelSeries>) {
        let mut r = Registry::default();
        let requests = Family::<OutcomeLabels, Counter>::default();
        r.register("lanes_requests", "Requests by outcome", requests.clone());
        let seconds =
            |r: &mut Registry, name, help| histograms(r, name, help, DURATION_BUCKETS.to_vec());
        let request = seconds(
            &mut r,
            "lanes_request_duration_seconds",
            "End-to-end time of successful requests",
        );
        let queue = seconds(
            &mut r,
            "lanes_queue_duration_seconds",
            "Time from enqueue to the batch's dispatch",
        );
        let preprocess = seconds(
            &mut r,
            "lanes_preprocess_duration_seconds",
            "Pre-processing time per request",
        );
        let device = seconds(
            &mut r,
            "lanes_device_duration_seconds",
            "Device time per executed batch",
        );
        let postprocess = seconds(
            &mut r,
            "lanes_postprocess_duration_seconds",
            "Post-processing time per request",
        );
        let top = snapshot
            .models
            .iter()
            .map(|m| *m.sizes.last().unwrap())
            .max()
            .unwrap_or(1);
        let sizes = powers_of_two(top).into_iter().map(f64::from).collect();
        let batch_size = histograms(&mut r, "lanes_batch_size", "Rows per executed batch", sizes);
        let info_family = Family::<InfoLabels, Gauge>::default();
        info_family
            .get_or_create(&InfoLabels {
                version: info.version.clone(),
                policy: info.policy.clone(),
            })
            .set(1);
        r.register("lanes_info", "The server: version and policy", info_family);
        let series = snapshot
            .models
            .iter()
            .map(|m| {
                let model = ModelLabel {
                    model: m.name.clone(),
                };
                ModelSeries {
                    outcomes: Outcome::ALL.map(|o| {
                        requests.get_or_create_owned(&OutcomeLabels {
                            model: m.name.clone(),
                            outcome: o.as_str(),
                        })
                    }),
                    request: request.get_or_create_owned(&model),
                    queue: queue.get_or_create_owned(&model),
                    preprocess: preprocess.get_or_create_owned(&model),
                    device: device.get_or_create_owned(&model),
                    postprocess: postprocess.get_or_create_owned(&model),
                    batch_size: batch_size.get_or_create_owned(&model),
                }
            })
            .collect();
        r.register_collector(Box::new(Scrape { snapshot }));
        (Self { registry: r }, series)
    }

    /// The page a scrape gets: OpenMetrics text 1.0.0.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(16 * 1024);
        text::encode(&mut out, &self.registry).expect("writing to a String cannot fail");
        out
    }
}

/// The values read at scrape time (see the module docs).
#[derive(Debug)]
struct Scrape {
    snapshot: Arc<Snapshot>,
}

/// Writes one family of `name` with a series per `(labels, metric)`.
fn family<L, M>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    kind: MetricType,
    series: impl IntoIterator<Item = (L, M)>,
) -> fmt::Result
where
    L: EncodeLabelSet,
    M: EncodeMetric,
{
    let mut metric = encoder.encode_descriptor(name, help, None, kind)?;
    for (labels, m) in series {
        m.encode(metric.encode_family(&labels)?)?;
    }
    Ok(())
}

/// Writes one unlabelled metric of `name`.
fn single<M: EncodeMetric>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    m: M,
) -> fmt::Result {
    m.encode(encoder.encode_descriptor(name, help, None, m.metric_type())?)
}

impl Collector for Scrape {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let s = &*self.snapshot;
        let now = s.clock.now();
        let totals: Vec<_> = s.devices.iter().map(|d| (d, d.read(now))).collect();
        let device = |d: &&DeviceAccount| [("device", d.name.clone())];
        let secs = |ns: u64| ConstCounter::new(ns as f64 / 1e9);
        let counter = MetricType::Counter;
        family(
            &mut encoder,
            "lanes_device_busy_seconds",
            "Time with at least one job on the device.",
            counter,
            totals.iter().map(|(d, t)| (device(d), secs(t.busy))),
        )?;
        family(
            &mut encoder,
            "lanes_device_jobs",
            "Jobs completed.",
            counter,
            totals
                .iter()
                .map(|(d, t)| (device(d), ConstCounter::new(t.jobs))),
        )?;
        family(
            &mut encoder,
            "lanes_device_idle_while_waiting_seconds",
            "Time the device had a free slot while a ready job eligible for it waited.",
            counter,
            totals.iter().map(|(d, t)| (device(d), secs(t.idle_wait))),
        )?;
        family(
            &mut encoder,
            "lanes_device_overlap_seconds",
            "Time with more than one job on the device.",
            counter,
            totals.iter().map(|(d, t)| (device(d), secs(t.overlap))),
        )?;
        family(
            &mut encoder,
            "lanes_queue_depth",
            "Rows queued now.",
            MetricType::Gauge,
            s.models.iter().map(|m| {
                let depth = m.depth.load(Ordering::Relaxed);
                ([("model", m.name.clone())], ConstGauge::new(depth as i64))
            }),
        )?;
        family(
            &mut encoder,
            "lanes_cost_estimate_seconds",
            "The engine's current estimated run time of a batch.",
            MetricType::Gauge,
            s.models.iter().flat_map(|m| {
                m.estimates().into_iter().map(|(size, ns)| {
                    let labels = [("model", m.name.clone()), ("batch_size", size.to_string())];
                    (labels, ConstGauge::new(ns as f64 / 1e9))
                })
            }),
        )?;
        if let Ok(stat) = std::fs::read_to_string("/proc/stat") {
            family(
                &mut encoder,
                "lanes_host_cpu_seconds",
                "Host CPU time per core and mode.",
                counter,
                host_cpu(&stat).into_iter().flat_map(|(cpu, modes)| {
                    CPU_MODES.iter().zip(modes).map(move |(mode, s)| {
                        (
                            [("cpu", cpu.clone()), ("mode", (*mode).to_owned())],
                            secs_of(s),
                        )
                    })
                }),
            )?;
        }
        if let Some(p) = process_stats() {
            single(
                &mut encoder,
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds.",
                ConstCounter::new(p.cpu_seconds),
            )?;
            let gauges = [
                (
                    "process_resident_memory_bytes",
                    "Resident memory size in bytes.",
                    p.resident_bytes,
                ),
                (
                    "process_virtual_memory_bytes",
                    "Virtual memory size in bytes.",
                    p.virtual_bytes,
                ),
                (
                    "process_open_fds",
                    "Number of open file descriptors.",
                    p.open_fds,
                ),
            ];
            for (name, help, value) in gauges {
                single(&mut encoder, name, help, ConstGauge::new(value as i64))?;
            }
        }
        Ok(())
    }
}

fn secs_of(seconds: f64) -> ConstCounter<f64> {
    ConstCounter::new(seconds)
}

/// Per core (`cpu0` → `"0"`), seconds in each of [`CPU_MODES`], from the
/// text of `/proc/stat` (the all-cores `cpu` line is left out; a missing
/// column is 0).
pub fn host_cpu(stat: &str) -> Vec<(String, [f64; 8])> {
    stat.lines()
        .filter_map(|line| {
            let mut fields = line.split_ascii_whitespace();
            let cpu = fields.next()?.strip_prefix("cpu")?;
            if cpu.is_empty() {
                return None;
            }
            let mut modes = [0.0; 8];
            for (m, value) in modes.iter_mut().zip(fields) {
                *m = value.parse::<u64>().ok()? as f64 / USER_HZ;
            }
            Some((cpu.to_owned(), modes))
        })
        .collect()
}

/// The process' own figures (prometheus_client's process collector's names).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcessStats {
    pub cpu_seconds: f64,
    pub resident_bytes: u64,
    pub virtual_bytes: u64,
    pub open_fds: u64,
}

/// Reads [`ProcessStats`] from `/proc/self` (None where there is none).
pub fn process_stats() -> Option<ProcessStats> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let open_fds = std::fs::read_dir("/proc/self/fd").ok()?.count() as u64;
    parse_process(&stat, &status, open_fds)
}

/// [`ProcessStats`] from the texts of `/proc/self/stat` (utime and stime,
/// the 14th and 15th fields, in ticks) and `/proc/self/status` (`VmRSS`,
/// `VmSize` in kB).
pub fn parse_process(stat: &str, status: &str, open_fds: u64) -> Option<ProcessStats> {
    // The command name (field 2) may hold blanks: count from its closing ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
    let cpu_seconds = (ticks(11)? + ticks(12)?) as f64 / USER_HZ;
    let kb = |key: &str| {
        status.lines().find_map(|l| {
            let value = l.strip_prefix(key)?.strip_prefix(':')?;
            value.split_ascii_whitespace().next()?.parse::<u64>().ok()
        })
    };
    Some(ProcessStats {
        cpu_seconds,
        resident_bytes: kb("VmRSS")? * 1024,
        virtual_bytes: kb("VmSize")? * 1024,
        open_fds,
    })
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
pub(crate) mod tests;
