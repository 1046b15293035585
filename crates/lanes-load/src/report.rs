//! Reports of a run: the JSON result, HdrHistogram's percentile-distribution
//! text, and the exact merge of results from several processes.
//!
//! The JSON result carries the figures people read (`latency_ms`,
//! `service_time_ms`, errors by class, a per-second series) and, under
//! `histograms`, every histogram in HdrHistogram's V2 compressed encoding
//! (base64), so results of generator processes merge exactly: [`merge`]
//! decodes them, adds them, and recomputes every figure. The sends series
//! (`sends_10ms`) adds bin by bin, aligned by each result's run start.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::config::{Load, RunConfig};
use crate::engine::Outcome;
use crate::error::LoadError;
use crate::recorder::{add_bins, Errors, Recorder, Second, SEND_BIN_NS};

/// The latest second a result's time series may name (a week): a bound on
/// what a malformed or hostile result file can make a merge allocate.
const MAX_SECONDS: usize = 7 * 24 * 3600;

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 75th percentile.
    pub p75: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest.
    pub max: f64,
}

fn ms(us: u64) -> f64 {
    us as f64 / 1e3
}

impl Percentiles {
    /// Percentiles of a histogram of microseconds (all zero when empty).
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self {
                mean: 0.0,
                p50: 0.0,
                p75: 0.0,
                p90: 0.0,
                p99: 0.0,
                p999: 0.0,
                max: 0.0,
            };
        }
        let q = |q: f64| ms(h.value_at_quantile(q));
        Self {
            mean: h.mean() / 1e3,
            p50: q(0.5),
            p75: q(0.75),
            p90: q(0.9),
            p99: q(0.99),
            p999: q(0.999),
            max: ms(h.max()),
        }
    }
}

/// One second of the time series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Seconds since the start (the point covers `[second, second + 1)`).
    pub second: u64,
    /// Replies completed in this second.
    pub requests: u64,
    /// Errors that ended in this second.
    pub errors: u64,
    /// Median latency of this second's replies, ms.
    pub p50_ms: f64,
    /// 99th percentile latency of this second's replies, ms.
    pub p99_ms: f64,
}

/// Bytes moved (bodies and frame payloads).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ByteCounts {
    /// Written.
    pub sent: u64,
    /// Read.
    pub received: u64,
}

/// Encoded histograms, for exact merges.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Encoded {
    /// Latency from the intended send.
    pub latency: String,
    /// Service time from the actual send.
    pub service_time: String,
    /// Send delay.
    pub send_delay: String,
    /// One latency histogram per second.
    pub per_second: Vec<String>,
}

/// Requests actually sent (by `sent` time, not intended) per bin of time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sends {
    /// Width of a bin, ms (10).
    pub bin_ms: u64,
    /// Offset of bin 0 from the run's start, ns (0 for one run).
    pub start_ns: u64,
    /// Requests sent in each bin, from bin 0.
    pub counts: Vec<u32>,
}

impl Default for Sends {
    fn default() -> Self {
        Self {
            bin_ms: SEND_BIN_NS / 1_000_000,
            start_ns: 0,
            counts: Vec::new(),
        }
    }
}

/// Adds sends series bin by bin, each placed by its `start_ns` (to the
/// nearest bin); the sum starts at the earliest. All bins must be 10 ms.
pub fn merge_sends<'a>(series: impl IntoIterator<Item = &'a Sends>) -> Result<Sends, LoadError> {
    let series: Vec<&Sends> = series.into_iter().collect();
    let bin_ns = SEND_BIN_NS;
    if let Some(s) = series.iter().find(|s| s.bin_ms * 1_000_000 != bin_ns) {
        return Err(LoadError::Result(format!(
            "sends_10ms has bins of {} ms, not {}",
            s.bin_ms,
            bin_ns / 1_000_000
        )));
    }
    let start_ns = series.iter().map(|s| s.start_ns).min().unwrap_or(0);
    let mut counts = Vec::new();
    for s in &series {
        let offset = (s.start_ns - start_ns + bin_ns / 2) / bin_ns;
        add_bins(&mut counts, &s.counts, offset as usize);
    }
    Ok(Sends {
        bin_ms: bin_ns / 1_000_000,
        start_ns,
        counts,
    })
}

/// The result of one run (or of several merged).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// `"open"` (open loop) or `"closed"` (closed loop).
    pub mode: String,
    /// The target.
    pub url: String,
    /// Replies received (any status).
    pub requests: u64,
    /// From the start to the last reply or abandonment, seconds.
    pub duration_s: f64,
    /// Replies per second.
    pub rps: f64,
    /// Latency from the intended send time.
    pub latency_ms: Percentiles,
    /// Service time from the actual send time.
    pub service_time_ms: Percentiles,
    /// Delay of sends behind their schedule.
    pub send_delay_ms: Percentiles,
    /// Share of sends that left later than `late_after_ms`.
    pub late_sends_fraction: f64,
    /// Sends that left late.
    pub late_sends: u64,
    /// Lateness threshold, ms.
    pub late_after_ms: f64,
    /// Errors by class.
    pub errors: Errors,
    /// Replies by status code (`"0"`: frame replies).
    pub status_codes: BTreeMap<String, u64>,
    /// gRPC targets: replies by `grpc-status` name (`"OK"`, `"RESOURCE_EXHAUSTED"`, …);
    /// `status_codes` then holds each code's HTTP equivalent.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub grpc_codes: BTreeMap<String, u64>,
    /// Per-second series.
    pub timeseries: Vec<Point>,
    /// Requests actually sent per 10 ms bin (absent from older results: empty).
    #[serde(default)]
    pub sends_10ms: Sends,
    /// Open loop: the rate asked for.
    pub rate: Option<f64>,
    /// Open loop: `poisson` or `constant`.
    pub arrival: Option<String>,
    /// Open loop: slots the schedule released inside the bounds.
    pub scheduled: Option<u64>,
    /// Requests that left.
    pub sent: u64,
    /// Sent requests without a reply or a failure when the run ended.
    pub unfinished: u64,
    /// Connections.
    pub connections: usize,
    /// Sender threads.
    pub threads: usize,
    /// Processes merged into this result.
    pub processes: usize,
    /// Seed.
    pub seed: u64,
    /// True when the run was stopped early.
    pub interrupted: bool,
    /// Bytes moved.
    pub bytes: ByteCounts,
    /// Encoded histograms.
    pub histograms: Encoded,
}

fn encode(h: &Histogram<u64>) -> String {
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .expect("serializing into memory does not fail");
    base64::engine::general_purpose::STANDARD.encode(buf)
}

fn decode(s: &str) -> Result<Histogram<u64>, LoadError> {
    let raw = base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_err(|e| LoadError::Result(format!("histogram is not base64: {e}")))?;
    let mut h: Histogram<u64> = Deserializer::new()
        .deserialize(&mut raw.as_slice())
        .map_err(|e| LoadError::Result(format!("histogram cannot be decoded: {e:?}")))?;
    h.auto(true);
    Ok(h)
}

struct Info {
    mode: String,
    url: String,
    rate: Option<f64>,
    arrival: Option<String>,
    scheduled: Option<u64>,
    connections: usize,
    threads: usize,
    processes: usize,
    seed: u64,
    interrupted: bool,
    duration_s: f64,
    late_after_ms: f64,
}

fn build(rec: &Recorder, info: Info) -> Report {
    let requests = rec.replies();
    let failures = rec.errors.read + rec.errors.write + rec.errors.timeout;
    Report {
        mode: info.mode,
        url: info.url,
        requests,
        duration_s: info.duration_s,
        rps: if info.duration_s > 0.0 {
            requests as f64 / info.duration_s
        } else {
            0.0
        },
        latency_ms: Percentiles::of(&rec.latency),
        service_time_ms: Percentiles::of(&rec.service),
        send_delay_ms: Percentiles::of(&rec.send_delay),
        late_sends_fraction: if rec.sent > 0 {
            rec.late as f64 / rec.sent as f64
        } else {
            0.0
        },
        late_sends: rec.late,
        late_after_ms: info.late_after_ms,
        errors: rec.errors,
        status_codes: rec
            .status_codes
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
        grpc_codes: rec
            .grpc_codes
            .iter()
            .map(|(k, v)| (crate::grpc::code_name(*k), *v))
            .collect(),
        timeseries: rec
            .seconds
            .iter()
            .enumerate()
            .map(|(i, s)| Point {
                second: i as u64,
                requests: s.requests,
                errors: s.errors,
                p50_ms: if s.latency.is_empty() {
                    0.0
                } else {
                    ms(s.latency.value_at_quantile(0.5))
                },
                p99_ms: if s.latency.is_empty() {
                    0.0
                } else {
                    ms(s.latency.value_at_quantile(0.99))
                },
            })
            .collect(),
        sends_10ms: Sends {
            counts: rec.sends.clone(),
            ..Sends::default()
        },
        rate: info.rate,
        arrival: info.arrival,
        scheduled: info.scheduled,
        sent: rec.sent,
        unfinished: rec.sent.saturating_sub(requests + failures),
        connections: info.connections,
        threads: info.threads,
        processes: info.processes,
        seed: info.seed,
        interrupted: info.interrupted,
        bytes: ByteCounts {
            sent: rec.bytes_sent,
            received: rec.bytes_received,
        },
        histograms: Encoded {
            latency: encode(&rec.latency),
            service_time: encode(&rec.service),
            send_delay: encode(&rec.send_delay),
            per_second: rec.seconds.iter().map(|s| encode(&s.latency)).collect(),
        },
    }
}

impl Report {
    /// The report of a finished run.
    pub fn new(config: &RunConfig, outcome: &Outcome) -> Self {
        let (mode, rate, arrival) = match config.load {
            Load::Open { rate, arrival } => (
                "open",
                Some(rate),
                Some(format!("{arrival:?}").to_lowercase()),
            ),
            Load::Closed => ("closed", None, None),
        };
        build(
            &outcome.recorder,
            Info {
                mode: mode.into(),
                url: config.target.url.clone(),
                rate,
                arrival,
                scheduled: outcome.scheduled,
                connections: config.connections,
                threads: config.threads,
                processes: 1,
                seed: config.seed,
                interrupted: outcome.interrupted,
                duration_s: outcome.elapsed.as_secs_f64(),
                late_after_ms: config.late_after.as_secs_f64() * 1e3,
            },
        )
    }

    /// Rebuilds the recorder this report was made from (without a send log).
    fn recorder(&self) -> Result<Recorder, LoadError> {
        let mut r = Recorder::new((self.late_after_ms * 1e6) as u64, false);
        r.latency = decode(&self.histograms.latency)?;
        r.service = decode(&self.histograms.service_time)?;
        r.send_delay = decode(&self.histograms.send_delay)?;
        if self.histograms.per_second.len() != self.timeseries.len() {
            return Err(LoadError::Result(
                "the per-second histograms do not match the time series".into(),
            ));
        }
        // Each point lands at its own `second`, not at its index: a run placed
        // later in a sequence of runs (the lab's segments) carries shifted seconds.
        for (h, p) in self.histograms.per_second.iter().zip(&self.timeseries) {
            let i = usize::try_from(p.second)
                .ok()
                .filter(|&i| i <= MAX_SECONDS)
                .ok_or_else(|| LoadError::Result(format!("second {} is out of range", p.second)))?;
            let latency = decode(h)?;
            if r.seconds.len() <= i {
                r.seconds.resize_with(i, Second::new);
                r.seconds.push(Second {
                    latency,
                    requests: p.requests,
                    errors: p.errors,
                });
            } else {
                let s = &mut r.seconds[i];
                s.latency
                    .add(latency)
                    .map_err(|e| LoadError::Result(format!("histogram cannot be merged: {e:?}")))?;
                s.requests += p.requests;
                s.errors += p.errors;
            }
        }
        r.errors = self.errors;
        for (code, n) in &self.status_codes {
            let code = code
                .parse()
                .map_err(|_| LoadError::Result(format!("status code {code:?} is not a number")))?;
            r.status_codes.insert(code, *n);
        }
        for (name, n) in &self.grpc_codes {
            let code = crate::grpc::code_of(name).ok_or_else(|| {
                LoadError::Result(format!("gRPC status {name:?} is not a gRPC code name"))
            })?;
            r.grpc_codes.insert(code, *n);
        }
        r.sent = self.sent;
        r.sends = self.sends_10ms.counts.clone();
        r.late = self.late_sends;
        r.bytes_sent = self.bytes.sent;
        r.bytes_received = self.bytes.received;
        Ok(r)
    }
}

/// Merges the results of runs made side by side (e.g. several generator
/// processes against one target): histograms and counts add exactly; rates,
/// connections, threads and processes add; the duration is the longest.
pub fn merge(reports: &[Report]) -> Result<Report, LoadError> {
    let first = reports
        .first()
        .ok_or_else(|| LoadError::Result("nothing to merge".into()))?;
    let mut rec = first.recorder()?;
    for r in &reports[1..] {
        if r.mode != first.mode {
            return Err(LoadError::Result(format!(
                "cannot merge a {} loop run with a {} loop run",
                first.mode, r.mode
            )));
        }
        rec.merge(&r.recorder()?);
    }
    let sum_opt = |f: fn(&Report) -> Option<f64>| -> Option<f64> {
        reports.iter().map(f).sum::<Option<f64>>()
    };
    let mut merged = build(
        &rec,
        Info {
            mode: first.mode.clone(),
            url: first.url.clone(),
            rate: sum_opt(|r| r.rate),
            arrival: first.arrival.clone(),
            scheduled: reports.iter().map(|r| r.scheduled).sum(),
            connections: reports.iter().map(|r| r.connections).sum(),
            threads: reports.iter().map(|r| r.threads).sum(),
            processes: reports.iter().map(|r| r.processes).sum(),
            seed: first.seed,
            interrupted: reports.iter().any(|r| r.interrupted),
            duration_s: reports.iter().map(|r| r.duration_s).fold(0.0, f64::max),
            late_after_ms: first.late_after_ms,
        },
    );
    merged.unfinished = reports.iter().map(|r| r.unfinished).sum();
    merged.sends_10ms = merge_sends(reports.iter().map(|r| &r.sends_10ms))?;
    Ok(merged)
}

/// Which histogram of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// Latency from the intended send.
    Latency,
    /// Service time from the actual send.
    ServiceTime,
}

/// HdrHistogram's percentile-distribution text (as Java's
/// `outputPercentileDistribution` with 5 ticks per half distance, values in
/// milliseconds), which HdrHistogram's plotter reads.
pub fn percentile_distribution(report: &Report, which: Which) -> Result<String, LoadError> {
    let h = decode(match which {
        Which::Latency => &report.histograms.latency,
        Which::ServiceTime => &report.histograms.service_time,
    })?;
    Ok(format_distribution(&h, 1e3))
}

fn format_distribution(h: &Histogram<u64>, scale: f64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>12} {:>14} {:>10} {:>14}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    let mut total = 0u64;
    if !h.is_empty() {
        for v in h.iter_quantiles(5) {
            total += v.count_since_last_iteration();
            let value = h.highest_equivalent(v.value_iterated_to()) as f64 / scale;
            let q = v.quantile_iterated_to();
            if q < 1.0 {
                let _ = writeln!(
                    out,
                    "{value:12.3} {q:2.12} {total:10} {:14.2}",
                    1.0 / (1.0 - q)
                );
            } else {
                let _ = writeln!(out, "{value:12.3} {q:1.12} {total:10}");
            }
        }
    }
    let (mean, stdev) = if h.is_empty() {
        (0.0, 0.0)
    } else {
        (h.mean() / scale, h.stdev() / scale)
    };
    let _ = writeln!(
        out,
        "#[Mean    = {mean:12.3}, StdDeviation   = {stdev:12.3}]"
    );
    let _ = writeln!(
        out,
        "#[Max     = {:12.3}, Total count    = {:12}]",
        h.max() as f64 / scale,
        h.len()
    );
    let _ = writeln!(
        out,
        "#[Buckets = {:12}, SubBuckets     = {:12}]",
        h.buckets(),
        h.distinct_values()
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::Failure;

    /// A histogram's percentile-distribution text from raw microseconds.
    fn distribution_of(values_us: &[u64]) -> String {
        let mut h = crate::recorder::new_histogram(crate::recorder::SIGFIG);
        for v in values_us {
            crate::recorder::put(&mut h, *v);
        }
        format_distribution(&h, 1e3)
    }

    fn report_of(rec: &Recorder, processes: usize) -> Report {
        build(
            rec,
            Info {
                mode: "open".into(),
                url: "http://127.0.0.1:1/".into(),
                rate: Some(100.0),
                arrival: Some("poisson".into()),
                scheduled: Some(rec.sent),
                connections: 4,
                threads: 1,
                processes,
                seed: 1,
                interrupted: false,
                duration_s: 2.0,
                late_after_ms: 1.0,
            },
        )
    }

    fn recorder(seed: u64, n: u64) -> Recorder {
        let mut r = Recorder::new(1_000_000, false);
        for i in 0..n {
            let intended = i * 1_000_000 + seed * 7;
            let sent = intended + (i * seed) % 3_000_000;
            let done = sent + 1_000_000 + (i * 7919 * seed) % 300_000_000;
            r.on_send(i, intended, sent, 3);
            if i % 97 == 0 {
                r.on_failure(Failure::Timeout, done);
            } else {
                r.on_reply(intended, sent, done, if i % 13 == 0 { 500 } else { 200 }, 5);
                r.on_grpc(if i % 13 == 0 { 13 } else { 0 });
            }
        }
        r
    }

    #[test]
    fn merging_encoded_reports_equals_the_merged_recorders() {
        let (a, b) = (recorder(1, 1500), recorder(2, 900));
        let mut both = a.clone();
        both.merge(&b);
        let merged = merge(&[report_of(&a, 1), report_of(&b, 1)]).unwrap();
        let mut direct = report_of(&both, 2);
        direct.rate = Some(200.0);
        direct.connections = 8;
        direct.threads = 2;
        assert_eq!(merged, direct);
        assert_eq!(merged.requests, both.replies());
        assert_eq!(merged.errors.timeout, a.errors.timeout + b.errors.timeout);
        assert_eq!(merged.grpc_codes["INTERNAL"], merged.status_codes["500"]);
        assert_eq!(
            merged.grpc_codes["OK"] + merged.grpc_codes["INTERNAL"],
            merged.requests
        );
    }

    #[test]
    fn points_land_on_their_own_second() {
        // A run placed 3 s into a sequence carries shifted seconds; its points
        // land there, and points of two runs on one second add.
        let (a, b) = (recorder(1, 1500), recorder(2, 900));
        let (ra, mut rb) = (report_of(&a, 1), report_of(&b, 1));
        for p in &mut rb.timeseries {
            p.second += 3;
        }
        let merged = merge(&[ra.clone(), rb.clone()]).unwrap();
        assert_eq!(
            merged.timeseries.len(),
            ra.timeseries.len().max(rb.timeseries.len() + 3)
        );
        assert_eq!(merged.histograms.per_second.len(), merged.timeseries.len());
        for p in &merged.timeseries {
            let of = |r: &Report| {
                r.timeseries
                    .iter()
                    .filter(|q| q.second == p.second)
                    .map(|q| q.requests)
                    .sum::<u64>()
            };
            assert_eq!(p.requests, of(&ra) + of(&rb), "second {}", p.second);
        }
        let total: u64 = merged.timeseries.iter().map(|p| p.requests).sum();
        assert_eq!(total, merged.requests);
        rb.timeseries[0].second = u64::MAX;
        assert!(merge(&[ra, rb]).is_err());
    }

    #[test]
    fn sends_add_bin_by_bin_aligned_by_their_start() {
        let (a, b) = (recorder(1, 1500), recorder(2, 900));
        let (ra, mut rb) = (report_of(&a, 1), report_of(&b, 1));
        // One send per 1 ms slot: 10 per 10 ms bin; the last bin holds the rest.
        assert_eq!(ra.sends_10ms.counts.iter().sum::<u32>(), 1500);
        assert_eq!(ra.sends_10ms.bin_ms, 10);
        let side_by_side = merge(&[ra.clone(), rb.clone()]).unwrap();
        let mut expected = a.sends.clone();
        add_bins(&mut expected, &b.sends, 0);
        assert_eq!(side_by_side.sends_10ms.counts, expected);
        assert_eq!(side_by_side.sends_10ms.start_ns, 0);
        // A run that started 2 s later lands 200 bins on (offsets round to the nearest bin).
        rb.sends_10ms.start_ns = 2_000_000_000 + 4_000_000;
        let later = merge(&[rb.clone(), ra.clone()]).unwrap();
        let mut expected = a.sends.clone();
        add_bins(&mut expected, &b.sends, 200);
        assert_eq!(later.sends_10ms.counts, expected);
        assert_eq!(
            later.sends_10ms.counts.iter().sum::<u32>(),
            ra.sends_10ms.counts.iter().sum::<u32>() + rb.sends_10ms.counts.iter().sum::<u32>()
        );
        rb.sends_10ms.bin_ms = 5;
        assert_eq!(merge(&[ra, rb]).unwrap_err().code(), "result_invalid");
    }

    #[test]
    fn results_without_a_sends_series_still_read_and_merge() {
        let r = report_of(&recorder(1, 50), 1);
        let mut v = serde_json::to_value(&r).unwrap();
        v.as_object_mut().unwrap().remove("sends_10ms");
        let old: Report = serde_json::from_value(v).unwrap();
        assert!(old.sends_10ms.counts.is_empty());
        let merged = merge(&[old, r.clone()]).unwrap();
        assert_eq!(merged.sends_10ms, r.sends_10ms);
    }

    #[test]
    fn merge_refuses_mixed_modes_and_bad_histograms() {
        let a = report_of(&recorder(1, 10), 1);
        let mut b = a.clone();
        b.mode = "closed".into();
        assert!(merge(&[a.clone(), b])
            .unwrap_err()
            .to_string()
            .contains("cannot merge"));
        let mut c = a.clone();
        c.histograms.latency = "!!".into();
        assert_eq!(merge(&[a, c]).unwrap_err().code(), "result_invalid");
        assert_eq!(merge(&[]).unwrap_err().code(), "result_invalid");
    }

    #[test]
    fn the_percentile_distribution_has_hdrhistograms_layout() {
        let text = distribution_of(&(1..=1000).collect::<Vec<_>>());
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].trim_start().starts_with("Value"));
        assert_eq!(lines[1], "");
        let first: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(first, ["0.001", "0.000000000000", "1", "1.00"]);
        let last_row: Vec<&str> = lines[lines.len() - 4].split_whitespace().collect();
        assert_eq!(last_row[0], "1.000");
        assert_eq!(last_row[1], "1.000000000000");
        assert_eq!(last_row[2], "1000");
        assert!(lines[lines.len() - 3].starts_with("#[Mean    ="));
        assert!(lines[lines.len() - 2].contains("Total count    =         1000"));
        // Rows climb in value and percentile.
        let rows: Vec<(f64, f64)> = lines[2..lines.len() - 3]
            .iter()
            .map(|l| {
                let f: Vec<f64> = l
                    .split_whitespace()
                    .take(2)
                    .map(|x| x.parse().unwrap())
                    .collect();
                (f[0], f[1])
            })
            .collect();
        assert!(rows
            .windows(2)
            .all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
    }
}
