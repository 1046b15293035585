//! What the state reports about itself: per-device queue lengths, the
//! STATS_REPLY document, the OpenMetrics text and the timeline.

use lanes_policy::{DeviceSet, Nanos};

use super::State;
use crate::protocol::VERSION;

impl State {
    /// Jobs queued on each device (a job eligible for several counts on each).
    pub fn queued_per_device(&self) -> Vec<usize> {
        let mut q = vec![0; self.devices.len()];
        for (&set, &n) in &self.queued_by_set {
            for d in DeviceSet(set).iter() {
                q[d] += n;
            }
        }
        q
    }

    /// The STATS_REPLY document.
    pub fn stats_json(&self, now: Nanos) -> String {
        let queued = self.queued_per_device();
        let devices: Vec<serde_json::Value> = self
            .devices
            .iter()
            .enumerate()
            .map(|(d, name)| {
                serde_json::json!({
                    "name": name,
                    "running": self.sched.running_on(d),
                    "queued": queued[d],
                    "busy_s": self.sched.busy_time(d, now) as f64 / 1e9,
                })
            })
            .collect();
        serde_json::json!({
            "version": VERSION,
            "policy": self.sched.policy().to_string(),
            "uptime_s": now as f64 / 1e9,
            "devices": devices,
            "clients": self.conns.len(),
            "queued": self.sched.queued(),
            "running": self.sched.running(),
            "counters": self.counters.to_json(),
        })
        .to_string()
    }

    /// The daemon's metrics at `now`, as OpenMetrics text.
    pub fn render_metrics(&self, now: Nanos) -> String {
        let busy: Vec<f64> = (0..self.devices.len())
            .map(|d| self.sched.busy_time(d, now) as f64 / 1e9)
            .collect();
        let running: Vec<u32> = (0..self.devices.len())
            .map(|d| self.sched.running_on(d))
            .collect();
        self.counters.render(&crate::metrics::Gauges {
            busy_s: &busy,
            running: &running,
            queued: &self.queued_per_device(),
            clients: self.conns.len(),
        })
    }

    /// The timeline as Chrome trace-event JSON, if one is kept.
    pub fn timeline_json(&self) -> Option<String> {
        self.timeline.as_ref().map(|t| t.to_json(&self.devices))
    }
}
