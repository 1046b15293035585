//! What a run measures, and its result record.
//!
//! Requests in the first 5 % of arrivals warm the host up and are not
//! counted. For the others:
//! - latency: arrival → end of post-processing; *own work* is the request's
//!   solo pre + GPU + post cost; *wait* = latency − own work; *slowdown* =
//!   latency ÷ own work;
//! - SLO attainment: completed within the service's SLO ÷ (completed +
//!   dropped); goodput: completions within SLO per second;
//! - throughput is over the measurement window, from the first counted
//!   arrival to the last counted completion; goodput over the sending window,
//!   from the first counted arrival to the last (as a load generator counts
//!   it: past the knee the backlog's drain does not dilute it);
//! - GPU time: *effective* = solo GPU work; *overlap* = time GPU phases spent
//!   on a device beyond their solo work (sharing); *queue* = time waiting for
//!   GPU access (engine queue, or worker and semaphore queues);
//! - GPU busy = time a GPU had any job ÷ window (mean over GPUs); imbalance =
//!   (max − min busy time) ÷ mean busy time; CPU idle = 1 − core time used ÷
//!   (cores × window);
//! - runtime calls: a measured batch's call runs from when it asks for its
//!   device's runtime (after any hold) to when it leaves it; *call* is its
//!   mean wall time, *call cost* its mean solo cost, so `call / cost - 1` is
//!   how long a call waited (shared cores or a shared GPU) per ms of cost.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::Serialize;

/// Latency summary, milliseconds.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Latency {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

/// One service's figures.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ServiceResult {
    pub requests: u64,
    pub throughput_rps: f64,
    pub latency_ms: Latency,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub p99_slowdown: f64,
    pub max_wait_ms: f64,
    pub slo_attainment: f64,
    pub dropped: u64,
    /// Mean requests per GPU batch of measured requests (1 without batching).
    pub mean_batch_size: f64,
    /// Mean wall time of a measured batch's runtime call, ms (0: none).
    pub call_ms: f64,
    /// Mean solo cost of those calls, ms (0: none).
    pub call_cost_ms: f64,
    /// Per batch size (the key, as a decimal string), the measured batches
    /// of that size and their runtime calls' mean wall time and cost.
    pub batches: BTreeMap<String, BatchSizeResult>,
}

/// One batch size's measured batches of a service.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct BatchSizeResult {
    /// Measured batches of this size that started.
    pub batches: u64,
    /// Mean wall time of their runtime calls that ended, ms (0: none).
    pub call_ms: f64,
    /// Mean solo cost of those calls, ms (0: none).
    pub call_cost_ms: f64,
}

/// GPU time accounting, seconds.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct GpuTime {
    pub effective: f64,
    pub overlap: f64,
    pub queue: f64,
}

/// Everything one simulated point reports.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PointResult {
    pub policy: String,
    pub load: f64,
    pub seed: u64,
    pub requests: u64,
    pub offered_rps: f64,
    pub throughput_rps: f64,
    pub goodput_rps: f64,
    pub latency_ms: Latency,
    pub slo_attainment: f64,
    pub dropped: u64,
    pub max_wait_ms: f64,
    pub p99_slowdown: f64,
    pub gpu_busy: f64,
    pub gpu_imbalance: f64,
    pub cpu_idle: f64,
    pub gpu_time_s: GpuTime,
    /// Mean requests per GPU batch over all services.
    pub mean_batch_size: f64,
    /// Mean wall time of a measured runtime call over all services, ms.
    pub call_ms: f64,
    /// Mean solo cost of those calls, ms.
    pub call_cost_ms: f64,
    pub services: BTreeMap<String, ServiceResult>,
}

/// Slowdowns are recorded in thousandths.
const SLOWDOWN_SCALE: f64 = 1000.0;

/// Accumulates one group of requests (a service, or all).
#[derive(Debug)]
pub struct Recorder {
    latency: Histogram<u64>,
    slowdown: Histogram<u64>,
    within_slo: u64,
    dropped: u64,
    max_wait: u64,
    batches: u64,
    batched: u64,
    /// Runtime calls ended, their wall time and cost summed, ns.
    calls: u64,
    call_wall: u64,
    call_cost: u64,
    /// Per batch size: batches started, calls ended, their wall and cost, ns.
    by_size: BTreeMap<u32, SizeTally>,
}

/// A batch size's running sums in a [`Recorder`].
#[derive(Debug, Clone, Copy, Default)]
struct SizeTally {
    batches: u64,
    calls: u64,
    call_wall: u64,
    call_cost: u64,
}

impl SizeTally {
    fn result(&self) -> BatchSizeResult {
        let mean = |ns: u64| {
            if self.calls == 0 {
                0.0
            } else {
                ns as f64 / self.calls as f64 / 1e6
            }
        };
        BatchSizeResult {
            batches: self.batches,
            call_ms: mean(self.call_wall),
            call_cost_ms: mean(self.call_cost),
        }
    }
}

impl Recorder {
    pub fn new() -> Self {
        Self {
            latency: Histogram::new(3).expect("3 significant digits"),
            slowdown: Histogram::new(3).expect("3 significant digits"),
            within_slo: 0,
            dropped: 0,
            max_wait: 0,
            batches: 0,
            batched: 0,
            calls: 0,
            call_wall: 0,
            call_cost: 0,
            by_size: BTreeMap::new(),
        }
    }

    /// A completed request.
    pub fn complete(&mut self, latency: u64, own: u64, slo: u64) {
        // Auto-resizing histograms: `record` grows them; it cannot fail for
        // values below u64::MAX / 2.
        self.latency
            .record(latency)
            .expect("latency fits the histogram");
        let own = own.max(1);
        self.slowdown
            .record((latency as f64 / own as f64 * SLOWDOWN_SCALE) as u64)
            .expect("slowdown fits the histogram");
        self.max_wait = self.max_wait.max(latency.saturating_sub(own));
        self.within_slo += u64::from(latency <= slo);
    }

    /// The union of several groups (histograms merge exactly).
    pub fn merged<'a>(parts: impl IntoIterator<Item = &'a Recorder>) -> Self {
        let mut all = Self::new();
        for p in parts {
            all.latency
                .add(&p.latency)
                .expect("auto-resizing histograms merge");
            all.slowdown
                .add(&p.slowdown)
                .expect("auto-resizing histograms merge");
            all.within_slo += p.within_slo;
            all.dropped += p.dropped;
            all.max_wait = all.max_wait.max(p.max_wait);
            all.batches += p.batches;
            all.batched += p.batched;
            all.calls += p.calls;
            all.call_wall += p.call_wall;
            all.call_cost += p.call_cost;
            for (&n, t) in &p.by_size {
                let sum = all.by_size.entry(n).or_default();
                sum.batches += t.batches;
                sum.calls += t.calls;
                sum.call_wall += t.call_wall;
                sum.call_cost += t.call_cost;
            }
        }
        all
    }

    /// A GPU batch of `n` requests started.
    pub fn batch(&mut self, n: usize) {
        self.batches += 1;
        self.batched += n as u64;
        self.by_size.entry(n as u32).or_default().batches += 1;
    }

    /// A measured batch of `n` requests: its runtime call ended after
    /// `wall` ns for a solo cost of `cost` ns.
    pub fn call(&mut self, n: usize, wall: u64, cost: u64) {
        self.calls += 1;
        self.call_wall += wall;
        self.call_cost += cost;
        let size = self.by_size.entry(n as u32).or_default();
        size.calls += 1;
        size.call_wall += wall;
        size.call_cost += cost;
    }

    /// The calls' mean wall time and mean cost, ms (0 when none ended).
    pub fn call_ms(&self) -> (f64, f64) {
        if self.calls == 0 {
            return (0.0, 0.0);
        }
        let mean = |ns: u64| ns as f64 / self.calls as f64 / 1e6;
        (mean(self.call_wall), mean(self.call_cost))
    }

    /// Mean requests per batch (1 when no batch was recorded).
    pub fn mean_batch_size(&self) -> f64 {
        if self.batches == 0 {
            1.0
        } else {
            self.batched as f64 / self.batches as f64
        }
    }

    /// A request dropped before it ran.
    pub fn drop_one(&mut self) {
        self.dropped += 1;
    }

    pub fn completed(&self) -> u64 {
        self.latency.len()
    }

    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    pub fn within_slo(&self) -> u64 {
        self.within_slo
    }

    /// Fraction of completed + dropped requests within SLO (1 if none).
    pub fn attainment(&self) -> f64 {
        let n = self.completed() + self.dropped;
        if n == 0 {
            1.0
        } else {
            self.within_slo as f64 / n as f64
        }
    }

    pub fn latency(&self) -> Latency {
        let ms = |ns: u64| ns as f64 / 1e6;
        let h = &self.latency;
        if h.is_empty() {
            return Latency {
                mean: 0.0,
                p50: 0.0,
                p90: 0.0,
                p99: 0.0,
                p999: 0.0,
                max: 0.0,
            };
        }
        Latency {
            mean: h.mean() / 1e6,
            p50: ms(h.value_at_quantile(0.5)),
            p90: ms(h.value_at_quantile(0.9)),
            p99: ms(h.value_at_quantile(0.99)),
            p999: ms(h.value_at_quantile(0.999)),
            max: ms(h.max()),
        }
    }

    pub fn p99_slowdown(&self) -> f64 {
        self.slowdown.value_at_quantile(0.99) as f64 / SLOWDOWN_SCALE
    }

    pub fn max_wait_ms(&self) -> f64 {
        self.max_wait as f64 / 1e6
    }

    /// This group's figures over a window of `window_s` seconds.
    pub fn service_result(&self, window_s: f64) -> ServiceResult {
        let l = self.latency();
        let (call_ms, call_cost_ms) = self.call_ms();
        ServiceResult {
            requests: self.completed() + self.dropped,
            throughput_rps: self.completed() as f64 / window_s,
            latency_ms: l,
            mean: l.mean,
            p50: l.p50,
            p90: l.p90,
            p99: l.p99,
            p999: l.p999,
            p99_slowdown: self.p99_slowdown(),
            max_wait_ms: self.max_wait_ms(),
            slo_attainment: self.attainment(),
            dropped: self.dropped,
            mean_batch_size: self.mean_batch_size(),
            call_ms,
            call_cost_ms,
            batches: self
                .by_size
                .iter()
                .map(|(n, t)| (n.to_string(), t.result()))
                .collect(),
        }
    }
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}
