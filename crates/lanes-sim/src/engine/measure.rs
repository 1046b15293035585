//! The measurement window and a run's result.
//!
//! **Rule.** The window opens at the arrival of the first measured request
//! (after [`super::WARMUP_FRACTION`] of all arrivals), when the GPUs' and
//! the CPU pool's busy counters are noted, and closes at the last measured
//! completion or drop. Rates are per second of window, except goodput; GPU
//! busy is the mean over GPUs of their busy time in the window, imbalance is
//! (max − min) / mean; CPU idle is 1 − CPU time used in the window / (cores ×
//! window). Goodput is per second of the *sending* window, from the first to
//! the last measured arrival, as a load generator counts it (the lab's `good
//! / measure_s`): past the knee the window above also holds the backlog's
//! drain, and goodput per second of it would fall for the same attainment.

use super::Sim;
use crate::stats::{GpuTime, PointResult, Recorder};

/// Busy counters when the measurement window opens.
#[derive(Debug, Default)]
pub(super) struct Snapshot {
    gpu_busy: Vec<u64>,
    cpu_busy: u64,
}

/// GPU time of measured requests, nanoseconds (see [`GpuTime`]).
#[derive(Debug, Default)]
pub(super) struct GpuTimeNs {
    pub(super) effective: u64,
    pub(super) overlap: u64,
    pub(super) queue: u64,
}

impl Sim<'_> {
    /// The first measured request arrives: the window opens now.
    pub(super) fn open_window(&mut self) {
        self.window_start = self.now;
        self.at_window_start = Snapshot {
            gpu_busy: self.gpus.iter().map(|g| g.busy(self.now)).collect(),
            cpu_busy: self.cpu_busy(),
        };
    }

    pub(super) fn result(&self, load: f64, seed: u64) -> PointResult {
        let end = self.last_done.max(self.window_start + 1);
        let window = end - self.window_start;
        let window_s = window as f64 / 1e9;
        let sending_s = self.last_arrival.saturating_sub(self.window_start).max(1) as f64 / 1e9;
        let busy: Vec<u64> = self
            .gpus
            .iter()
            .zip(&self.at_window_start.gpu_busy)
            .map(|(g, start)| g.busy(self.now) - start)
            .collect();
        let mean_busy = busy.iter().sum::<u64>() as f64 / busy.len() as f64;
        let (lo, hi) = (
            busy.iter().min().copied().unwrap_or(0),
            busy.iter().max().copied().unwrap_or(0),
        );
        let cpu_used = (self.cpu_busy() - self.at_window_start.cpu_busy) as f64;
        let services = self
            .sc
            .services
            .iter()
            .zip(&self.per_service)
            .map(|(s, rec)| (s.name.clone(), rec.service_result(window_s)))
            .collect();
        let all = &Recorder::merged(&self.per_service);
        let (call_ms, call_cost_ms) = all.call_ms();
        PointResult {
            policy: self.mode.to_string(),
            load,
            seed,
            requests: all.completed() + all.dropped(),
            offered_rps: self.sc.rate_for_load(load),
            throughput_rps: all.completed() as f64 / window_s,
            goodput_rps: all.within_slo() as f64 / sending_s,
            latency_ms: all.latency(),
            slo_attainment: all.attainment(),
            dropped: all.dropped(),
            max_wait_ms: all.max_wait_ms(),
            p99_slowdown: all.p99_slowdown(),
            gpu_busy: (mean_busy / window as f64).min(1.0),
            gpu_imbalance: if mean_busy > 0.0 {
                (hi - lo) as f64 / mean_busy
            } else {
                0.0
            },
            cpu_idle: (1.0 - cpu_used / (self.sc.host.cpu_cores as f64 * window as f64))
                .clamp(0.0, 1.0),
            mean_batch_size: all.mean_batch_size(),
            call_ms,
            call_cost_ms,
            gpu_time_s: GpuTime {
                effective: self.gpu_time.effective as f64 / 1e9,
                overlap: self.gpu_time.overlap as f64 / 1e9,
                queue: self.gpu_time.queue as f64 / 1e9,
            },
            services,
        }
    }
}
