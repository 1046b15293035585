//! The daemon's counters and their Prometheus text (text format 0.0.4),
//! served by [`lanes_metrics_http::serve`] (`GET /metrics` or `/`; `503`
//! while the daemon stops).
//!
//! | metric | type | what |
//! |---|---|---|
//! | `lanes_arbiter_device_busy_seconds_total{device}` | counter | time with at least one grant held on the device |
//! | `lanes_arbiter_device_running{device}` | gauge | grants held on the device now |
//! | `lanes_arbiter_device_queued{device}` | gauge | queued acquires the device could take (one eligible for several devices counts on each) |
//! | `lanes_arbiter_clients` | gauge | connections open now |
//! | `lanes_arbiter_connections_total` | counter | connections accepted |
//! | `lanes_arbiter_grant_wait_seconds{model}` | histogram | time from ACQUIRE to GRANT |
//! | `lanes_arbiter_grants_total` | counter | GRANTs sent |
//! | `lanes_arbiter_rejects_total{reason}` | counter | REJECTs sent, by reason |
//! | `lanes_arbiter_releases_total{cause}` | counter | grants ended: `release`, `disconnect`, `revoke` |
//! | `lanes_arbiter_hold_exceeded_total` | counter | grants held past `--max-hold` |
//! | `lanes_arbiter_protocol_errors_total{code}` | counter | connections closed with ERROR, by code |

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::protocol::{ErrorCode, RejectReason};

/// Upper bounds of the grant-wait histogram, seconds.
pub const WAIT_BUCKETS: [f64; 14] = [
    10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 0.01, 0.05, 0.1, 0.5, 1.0,
];

/// How a grant ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// The client sent RELEASE.
    Release = 0,
    /// The client's connection closed.
    Disconnect = 1,
    /// Held past `--max-hold` with `--revoke`.
    Revoke = 2,
}

impl Cause {
    pub const ALL: [Cause; 3] = [Cause::Release, Cause::Disconnect, Cause::Revoke];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Release => "release",
            Self::Disconnect => "disconnect",
            Self::Revoke => "revoke",
        }
    }
}

#[derive(Debug, Clone, Default)]
struct Histogram {
    buckets: [u64; WAIT_BUCKETS.len()],
    count: u64,
    sum_ns: u128,
}

/// Counters kept by the state (no locks: the actor owns them).
#[derive(Debug, Clone)]
pub struct Counters {
    pub connections: u64,
    pub grants: u64,
    pub hold_exceeded: u64,
    rejects: [u64; 7],
    releases: [u64; 3],
    protocol_errors: [u64; 6],
    waits: Vec<Histogram>,
}

/// The gauges read from the state at render time.
#[derive(Debug)]
pub struct Gauges<'a> {
    pub devices: &'a [String],
    pub busy_s: &'a [f64],
    pub running: &'a [u32],
    pub queued: &'a [usize],
    pub clients: usize,
    pub models: &'a [String],
}

fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Counters {
    /// Zeroed counters.
    pub fn new(_devices: usize) -> Self {
        Self {
            connections: 0,
            grants: 0,
            hold_exceeded: 0,
            rejects: [0; 7],
            releases: [0; 3],
            protocol_errors: [0; 6],
            waits: Vec::new(),
        }
    }

    /// A histogram for the next model id.
    pub fn add_model(&mut self) {
        self.waits.push(Histogram::default());
    }

    /// One GRANT after `wait_ns` queued.
    pub fn grant(&mut self, model: u32, wait_ns: u64) {
        self.grants += 1;
        if let Some(h) = self.waits.get_mut(model as usize) {
            let s = wait_ns as f64 / 1e9;
            if let Some(i) = WAIT_BUCKETS.iter().position(|&b| s <= b) {
                h.buckets[i] += 1;
            }
            h.count += 1;
            h.sum_ns += u128::from(wait_ns);
        }
    }

    /// One REJECT.
    pub fn reject(&mut self, reason: RejectReason) {
        self.rejects[reason.code() as usize] += 1;
    }

    /// One grant ended.
    pub fn release(&mut self, cause: Cause) {
        self.releases[cause as usize] += 1;
    }

    /// One connection closed with ERROR.
    pub fn protocol_error(&mut self, code: ErrorCode) {
        self.protocol_errors[code.code() as usize] += 1;
    }

    /// Grants ended by `cause`.
    pub fn releases(&self, cause: Cause) -> u64 {
        self.releases[cause as usize]
    }

    /// REJECTs sent for `reason`.
    pub fn rejects(&self, reason: RejectReason) -> u64 {
        self.rejects[reason.code() as usize]
    }

    /// The counters for STATS_REPLY.
    pub fn to_json(&self) -> Value {
        let rejects: serde_json::Map<String, Value> = RejectReason::ALL
            .iter()
            .map(|r| (r.as_str().to_string(), json!(self.rejects(*r))))
            .collect();
        let releases: serde_json::Map<String, Value> = Cause::ALL
            .iter()
            .map(|c| (c.as_str().to_string(), json!(self.releases(*c))))
            .collect();
        json!({
            "connections": self.connections,
            "grants": self.grants,
            "rejects": rejects,
            "releases": releases,
            "hold_exceeded": self.hold_exceeded,
        })
    }

    /// The Prometheus text.
    pub fn render(&self, g: &Gauges<'_>) -> String {
        let mut out = String::with_capacity(4096);
        let head = |out: &mut String, name: &str, kind: &str, help: &str| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        };
        head(
            &mut out,
            "lanes_arbiter_device_busy_seconds_total",
            "counter",
            "Time with at least one grant held on the device.",
        );
        for (d, name) in g.devices.iter().enumerate() {
            let _ = writeln!(
                out,
                "lanes_arbiter_device_busy_seconds_total{{device=\"{}\"}} {}",
                label(name),
                g.busy_s[d]
            );
        }
        head(
            &mut out,
            "lanes_arbiter_device_running",
            "gauge",
            "Grants held on the device now.",
        );
        for (d, name) in g.devices.iter().enumerate() {
            let _ = writeln!(
                out,
                "lanes_arbiter_device_running{{device=\"{}\"}} {}",
                label(name),
                g.running[d]
            );
        }
        head(&mut out, "lanes_arbiter_device_queued", "gauge", "Queued acquires the device could take (one eligible for several devices counts on each).");
        for (d, name) in g.devices.iter().enumerate() {
            let _ = writeln!(
                out,
                "lanes_arbiter_device_queued{{device=\"{}\"}} {}",
                label(name),
                g.queued[d]
            );
        }
        head(
            &mut out,
            "lanes_arbiter_clients",
            "gauge",
            "Connections open now.",
        );
        let _ = writeln!(out, "lanes_arbiter_clients {}", g.clients);
        head(
            &mut out,
            "lanes_arbiter_connections_total",
            "counter",
            "Connections accepted.",
        );
        let _ = writeln!(out, "lanes_arbiter_connections_total {}", self.connections);
        head(
            &mut out,
            "lanes_arbiter_grant_wait_seconds",
            "histogram",
            "Time from ACQUIRE to GRANT, by model.",
        );
        for (m, h) in self.waits.iter().enumerate() {
            let model = label(g.models.get(m).map_or("?", String::as_str));
            let mut cumulative = 0;
            for (n, bound) in h.buckets.iter().zip(WAIT_BUCKETS) {
                cumulative += n;
                let _ = writeln!(out, "lanes_arbiter_grant_wait_seconds_bucket{{model=\"{model}\",le=\"{bound}\"}} {cumulative}");
            }
            let _ = writeln!(
                out,
                "lanes_arbiter_grant_wait_seconds_bucket{{model=\"{model}\",le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "lanes_arbiter_grant_wait_seconds_sum{{model=\"{model}\"}} {}",
                h.sum_ns as f64 / 1e9
            );
            let _ = writeln!(
                out,
                "lanes_arbiter_grant_wait_seconds_count{{model=\"{model}\"}} {}",
                h.count
            );
        }
        head(
            &mut out,
            "lanes_arbiter_grants_total",
            "counter",
            "GRANTs sent.",
        );
        let _ = writeln!(out, "lanes_arbiter_grants_total {}", self.grants);
        head(
            &mut out,
            "lanes_arbiter_rejects_total",
            "counter",
            "REJECTs sent, by reason.",
        );
        for r in RejectReason::ALL {
            let _ = writeln!(
                out,
                "lanes_arbiter_rejects_total{{reason=\"{r}\"}} {}",
                self.rejects(*r)
            );
        }
        head(
            &mut out,
            "lanes_arbiter_releases_total",
            "counter",
            "Grants ended, by cause: release, disconnect, revoke.",
        );
        for c in Cause::ALL {
            let _ = writeln!(
                out,
                "lanes_arbiter_releases_total{{cause=\"{}\"}} {}",
                c.as_str(),
                self.releases(c)
            );
        }
        head(
            &mut out,
            "lanes_arbiter_hold_exceeded_total",
            "counter",
            "Grants held past --max-hold.",
        );
        let _ = writeln!(
            out,
            "lanes_arbiter_hold_exceeded_total {}",
            self.hold_exceeded
        );
        head(
            &mut out,
            "lanes_arbiter_protocol_errors_total",
            "counter",
            "Connections closed with ERROR, by code.",
        );
        for c in ErrorCode::ALL {
            let _ = writeln!(
                out,
                "lanes_arbiter_protocol_errors_total{{code=\"{c}\"}} {}",
                self.protocol_errors[c.code() as usize]
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_labels_and_cumulative_buckets() {
        let mut c = Counters::new(1);
        c.add_model();
        c.grant(0, 20_000); // 20 µs
        c.grant(0, 2_000_000_000); // past every bound
        c.reject(RejectReason::Overload);
        c.release(Cause::Disconnect);
        c.protocol_error(ErrorCode::TooLarge);
        let text = c.render(&Gauges {
            devices: &["sim:0".into()],
            busy_s: &[1.5],
            running: &[1],
            queued: &[3],
            clients: 2,
            models: &["m\"1".into()],
        });
        for line in [
            "lanes_arbiter_device_busy_seconds_total{device=\"sim:0\"} 1.5",
            "lanes_arbiter_device_queued{device=\"sim:0\"} 3",
            "lanes_arbiter_clients 2",
            "lanes_arbiter_grant_wait_seconds_bucket{model=\"m\\\"1\",le=\"0.00001\"} 0",
            "lanes_arbiter_grant_wait_seconds_bucket{model=\"m\\\"1\",le=\"0.000025\"} 1",
            "lanes_arbiter_grant_wait_seconds_bucket{model=\"m\\\"1\",le=\"1\"} 1",
            "lanes_arbiter_grant_wait_seconds_bucket{model=\"m\\\"1\",le=\"+Inf\"} 2",
            "lanes_arbiter_grants_total 2",
            "lanes_arbiter_rejects_total{reason=\"overload\"} 1",
            "lanes_arbiter_releases_total{cause=\"disconnect\"} 1",
            "lanes_arbiter_protocol_errors_total{code=\"too_large\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line}\n{text}");
        }
    }
}
