//! Per-model statistics in Triton's shape (`GET /v2/models/{m}/stats`), as
//! `python/lanes/serving/stats.py` keeps them today.
//!
//! Counters only grow. Durations are nanoseconds, summed, with counts, as in
//! Triton's `inference_stats` (`success`, `fail`, `queue`, `compute_input`,
//! `compute_infer`, `compute_output`) and `batch_stats` (per batch size:
//! count and summed infer time). The split: *queue* is the time from a
//! request's arrival to its batch's start on a device, *compute_infer* the
//! device time of the batch, *compute_input* / *compute_output* the pre- and
//! post-processing time (the front end's, reported by it). lanes adds counts
//! by outcome (`rejected` 429, `expired` 504, `cancelled` gone clients).
//! [`ModelStats::outcomes`] (not in the JSON; Prometheus'
//! `lanes_requests_total`) counts every request that named the model once,
//! in exactly one of [`Outcome::ALL`].
//!
//! [`ModelStats`] is plain data; [`crate::observe`] keeps one per model
//! behind a lock and feeds Prometheus beside it.

use std::collections::BTreeMap;

use lanes_policy::Nanos;
use serde::Serialize;

/// Where a request that names a served model ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// 200.
    Success = 0,
    /// 429: the model's queue bound.
    RejectedQueueFull = 1,
    /// 504: expired in the queue, before queueing, or refused by `edf`.
    DeadlineExceeded = 2,
    /// The client went away before the answer.
    Cancelled = 3,
    /// 400 or 413.
    BadRequest = 4,
    /// 500: the model failed (or a server bug).
    ModelError = 5,
    /// 503: not ready yet, or draining.
    Unavailable = 6,
}

impl Outcome {
    /// Every outcome, in the order of `OUTCOMES` in stats.py.
    pub const ALL: [Outcome; 7] = [
        Self::Success,
        Self::RejectedQueueFull,
        Self::DeadlineExceeded,
        Self::Cancelled,
        Self::BadRequest,
        Self::ModelError,
        Self::Unavailable,
    ];

    /// The label value of `lanes_requests_total{outcome}`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::RejectedQueueFull => "rejected_queue_full",
            Self::DeadlineExceeded => "deadline_exceeded",
            Self::Cancelled => "cancelled",
            Self::BadRequest => "bad_request",
            Self::ModelError => "model_error",
            Self::Unavailable => "unavailable",
        }
    }

    /// The outcome of a request answered with HTTP `status`: below 400
    /// success, 429 rejected, 504 deadline, 503 unavailable, any other 5xx a
    /// model error, any other 4xx a bad request.
    pub fn of_status(status: u16) -> Self {
        match status {
            s if s < 400 => Self::Success,
            429 => Self::RejectedQueueFull,
            504 => Self::DeadlineExceeded,
            503 => Self::Unavailable,
            s if s >= 500 => Self::ModelError,
            _ => Self::BadRequest,
        }
    }
}

/// A summed duration and how many were added.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Duration {
    pub count: u64,
    pub ns: u64,
}

impl Duration {
    /// Adds one duration.
    pub fn add(&mut self, ns: Nanos) {
        self.count += 1;
        self.ns += ns;
    }
}

/// The durations of `inference_stats` (see the module docs for each).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Durations {
    pub success: Duration,
    pub fail: Duration,
    pub queue: Duration,
    pub compute_input: Duration,
    pub compute_infer: Duration,
    pub compute_output: Duration,
}

/// One model's counters (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelStats {
    pub name: String,
    pub version: String,
    /// Rows run (Triton's `inference_count`).
    pub inference_count: u64,
    /// Batches run (Triton's `execution_count`).
    pub execution_count: u64,
    /// Wall time of the last batch, milliseconds since the Unix epoch (0: none yet).
    pub last_inference_ms: u64,
    pub durations: Durations,
    /// Per batch size (rows): batches and their summed infer time.
    pub batches: BTreeMap<u32, Duration>,
    pub rejected: u64,
    pub expired: u64,
    pub cancelled: u64,
    /// By [`Outcome`] (its discriminant).
    pub outcomes: [u64; 7],
}

impl ModelStats {
    /// Zeroed statistics of model `name`, version `version`.
    pub fn new(name: &str, version: &str) -> Self {
        Self {
            name: name.to_owned(),
            version: version.to_owned(),
            inference_count: 0,
            execution_count: 0,
            last_inference_ms: 0,
            durations: Durations::default(),
            batches: BTreeMap::new(),
            rejected: 0,
            expired: 0,
            cancelled: 0,
            outcomes: [0; 7],
        }
    }

    /// A request that named this model ended as `outcome`.
    pub fn outcome(&mut self, outcome: Outcome) {
        self.outcomes[outcome as usize] += 1;
    }

    /// How many requests ended as `outcome`.
    pub fn outcomes(&self, outcome: Outcome) -> u64 {
        self.outcomes[outcome as usize]
    }

    /// A batch of `rows` rows ran for `infer_ns`, ending at `now_ms` (Unix ms).
    pub fn batch(&mut self, rows: u32, infer_ns: Nanos, now_ms: u64) {
        self.execution_count += 1;
        self.inference_count += u64::from(rows);
        self.batches.entry(rows).or_default().add(infer_ns);
        self.last_inference_ms = now_ms;
    }

    /// The JSON of `GET /v2/models/{m}/stats` for this model, with the
    /// scheduler's current estimates `(batch size, ns)`.
    pub fn json(&self, estimates: &[(u32, Nanos)]) -> StatsJson<'_> {
        let none = Duration::default();
        StatsJson {
            name: &self.name,
            version: &self.version,
            last_inference: self.last_inference_ms,
            inference_count: self.inference_count,
            execution_count: self.execution_count,
            inference_stats: InferenceStats {
                durations: self.durations,
                cache_hit: none,
                cache_miss: none,
            },
            batch_stats: self
                .batches
                .iter()
                .map(|(&batch_size, &d)| BatchStats {
                    batch_size,
                    compute_input: none,
                    compute_infer: d,
                    compute_output: none,
                })
                .collect(),
            lanes: LanesCounts {
                rejected: self.rejected,
                expired: self.expired,
                cancelled: self.cancelled,
            },
            cost_estimates: estimates
                .iter()
                .map(|&(batch_size, ns)| CostEstimate { batch_size, ns })
                .collect(),
        }
    }
}

/// One model's entry of `{"model_stats": [...]}`.
#[derive(Debug, Serialize)]
pub struct StatsJson<'a> {
    pub name: &'a str,
    pub version: &'a str,
    pub last_inference: u64,
    pub inference_count: u64,
    pub execution_count: u64,
    pub inference_stats: InferenceStats,
    pub batch_stats: Vec<BatchStats>,
    pub lanes: LanesCounts,
    /// The scheduler's estimate per batch size (lanes.client balances by them).
    pub cost_estimates: Vec<CostEstimate>,
}

/// Triton's `inference_stats`: lanes' durations, and no cache.
#[derive(Debug, Serialize)]
pub struct InferenceStats {
    #[serde(flatten)]
    pub durations: Durations,
    pub cache_hit: Duration,
    pub cache_miss: Duration,
}

/// One entry of Triton's `batch_stats`.
#[derive(Debug, Serialize)]
pub struct BatchStats {
    pub batch_size: u32,
    pub compute_input: Duration,
    pub compute_infer: Duration,
    pub compute_output: Duration,
}

/// lanes' own counts.
#[derive(Debug, Serialize)]
pub struct LanesCounts {
    pub rejected: u64,
    pub expired: u64,
    pub cancelled: u64,
}

/// One `cost_estimates` entry.
#[derive(Debug, Serialize)]
pub struct CostEstimate {
    pub batch_size: u32,
    pub ns: Nanos,
}

/// The body of `GET /v2/models/stats` and `GET /v2/models/{m}/stats`.
#[derive(Debug, Serialize)]
pub struct StatsReply<'a> {
    pub model_stats: Vec<StatsJson<'a>>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn outcome_of_a_status() {
        let table = [
            (200, Outcome::Success),
            (204, Outcome::Success),
            (400, Outcome::BadRequest),
            (404, Outcome::BadRequest),
            (413, Outcome::BadRequest),
            (429, Outcome::RejectedQueueFull),
            (500, Outcome::ModelError),
            (502, Outcome::ModelError),
            (503, Outcome::Unavailable),
            (504, Outcome::DeadlineExceeded),
        ];
        for (status, outcome) in table {
            assert_eq!(Outcome::of_status(status), outcome, "{status}");
        }
        let names: Vec<_> = Outcome::ALL.iter().map(|o| o.as_str()).collect();
        assert_eq!(
            names,
            [
                "success",
                "rejected_queue_full",
                "deadline_exceeded",
                "cancelled",
                "bad_request",
                "model_error",
                "unavailable"
            ]
        );
        for (i, o) in Outcome::ALL.iter().enumerate() {
            assert_eq!(*o as usize, i);
        }
    }

    #[test]
    fn fresh_statistics_have_tritons_shape_at_zero() {
        let s = ModelStats::new("double", "1");
        let zero = json!({"count": 0, "ns": 0});
        let expected = json!({
            "name": "double",
            "version": "1",
            "last_inference": 0,
            "inference_count": 0,
            "execution_count": 0,
            "inference_stats": {
                "success": zero, "fail": zero, "queue": zero, "compute_input": zero,
                "compute_infer": zero, "compute_output": zero, "cache_hit": zero,
                "cache_miss": zero,
            },
            "batch_stats": [],
            "lanes": {"rejected": 0, "expired": 0, "cancelled": 0},
            "cost_estimates": [],
        });
        assert_eq!(serde_json::to_value(s.json(&[])).unwrap(), expected);
    }

    /// The same calls as on stats.py's ModelStats give the same JSON (batch
    /// sizes sorted; per-size infer time summed; durations summed with counts).
    #[test]
    fn batches_and_durations_add_up_as_in_stats_py() {
        let mut s = ModelStats::new("m", "2");
        // (rows, infer ns) per batch, in the order run.
        for (rows, ns) in [(4, 400), (1, 100), (4, 600), (2, 250)] {
            s.batch(rows, ns, 1_700_000_000_123);
            for _ in 0..rows {
                s.durations.queue.add(10);
                s.durations.compute_infer.add(ns);
            }
        }
        s.durations.success.add(1000);
        s.durations.success.add(3000);
        s.durations.fail.add(7);
        s.durations.compute_input.add(5);
        s.durations.compute_output.add(6);
        s.rejected += 1;
        s.expired += 2;
        s.cancelled += 3;
        s.outcome(Outcome::Success);
        s.outcome(Outcome::Success);
        s.outcome(Outcome::Cancelled);
        let v = serde_json::to_value(s.json(&[(1, 1_000_000), (2, 1_500_000), (4, 2_000_000)]))
            .unwrap();
        let d = |count: u64, ns: u64| json!({"count": count, "ns": ns});
        let zero = d(0, 0);
        let batch = |size: u32, count, ns| {
            json!({"batch_size": size, "compute_input": zero, "compute_infer": d(count, ns),
                   "compute_output": zero})
        };
        assert_eq!(v["last_inference"], 1_700_000_000_123u64);
        assert_eq!(
            (v["inference_count"].clone(), v["execution_count"].clone()),
            (json!(11), json!(4))
        );
        assert_eq!(
            v["inference_stats"],
            json!({
                "success": d(2, 4000), "fail": d(1, 7), "queue": d(11, 110),
                "compute_input": d(1, 5),
                "compute_infer": d(11, 4 * 400 + 100 + 4 * 600 + 2 * 250),
                "compute_output": d(1, 6), "cache_hit": zero, "cache_miss": zero,
            })
        );
        assert_eq!(
            v["batch_stats"],
            json!([batch(1, 1, 100), batch(2, 1, 250), batch(4, 2, 1000)])
        );
        assert_eq!(
            v["lanes"],
            json!({"rejected": 1, "expired": 2, "cancelled": 3})
        );
        assert_eq!(
            v["cost_estimates"],
            json!([{"batch_size": 1, "ns": 1_000_000}, {"batch_size": 2, "ns": 1_500_000},
                   {"batch_size": 4, "ns": 2_000_000}])
        );
        assert_eq!(s.outcomes(Outcome::Success), 2);
        assert_eq!(s.outcomes(Outcome::Cancelled), 1);
        assert_eq!(s.outcomes(Outcome::ModelError), 0);
    }
}
