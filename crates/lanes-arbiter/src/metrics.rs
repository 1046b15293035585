//! The daemon's metrics, kept in a [`prometheus_client`] registry and encoded
//! as OpenMetrics text (`application/openmetrics-text; version=1.0.0`), served
//! by [`lanes_metrics_http::serve`] (`GET /metrics` or `/`; `503` while the
//! daemon stops).
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
//!
//! The structure: [`Counters::new`] builds the registry once and keeps a
//! handle on every series it updates (a metric of the crate is a shared
//! handle: a clone counts into the registered series). The state owns it and
//! is alone to touch it, on the actor: events increment counters and observe
//! waits as they happen; [`Counters::render`] sets the gauges and the busy
//! seconds from the state, then encodes the registry. Counters are atomics and
//! the locks inside families and histograms are never contended. Counters are
//! registered without `_total`, which the encoder appends; the series of a
//! labelled metric come in no fixed order.

use std::sync::atomic::{AtomicU64, Ordering};

use prometheus_client::encoding::{text, EncodeLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
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

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DeviceLabel {
    device: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelLabel {
    model: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CauseLabel {
    cause: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabel {
    code: &'static str,
}

/// A counter of seconds whose value is set from the state at render time.
type Seconds = Counter<f64, AtomicU64>;

fn wait_histogram() -> Histogram {
    Histogram::new(WAIT_BUCKETS)
}

/// The registry and the handles the state updates (see the module docs).
#[derive(Debug)]
pub struct Counters {
    registry: Registry,
    busy: Vec<Seconds>,
    running: Vec<Gauge>,
    queued: Vec<Gauge>,
    clients: Gauge,
    connections: Counter,
    waits: Family<ModelLabel, Histogram, fn() -> Histogram>,
    /// `waits`' series by model id.
    model_waits: Vec<Histogram>,
    grants: Counter,
    rejects: Family<ReasonLabel, Counter>,
    /// By [`Cause`].
    releases: [Counter; 3],
    hold_exceeded: Counter,
    protocol_errors: Family<CodeLabel, Counter>,
}

/// The gauges read from the state at render time, by device index.
#[derive(Debug)]
pub struct Gauges<'a> {
    pub busy_s: &'a [f64],
    pub running: &'a [u32],
    pub queued: &'a [usize],
    pub clients: usize,
}

/// A family's series for each of `labels`, created now so that they show as 0.
fn series<S, M, C>(family: &Family<S, M, C>, labels: impl IntoIterator<Item = S>) -> Vec<M>
where
    S: Clone + std::hash::Hash + Eq,
    M: Clone,
    C: prometheus_client::metrics::family::MetricConstructor<M>,
{
    labels
        .into_iter()
        .map(|l| family.get_or_create_owned(&l))
        .collect()
}

impl Counters {
    /// Zeroed metrics for `devices`, registered.
    pub fn new(devices: &[String]) -> Self {
        let busy = Family::<DeviceLabel, Seconds>::default();
        let running = Family::<DeviceLabel, Gauge>::default();
        let queued = Family::<DeviceLabel, Gauge>::default();
        let waits = Family::new_with_constructor(wait_histogram as fn() -> Histogram);
        let rejects = Family::<ReasonLabel, Counter>::default();
        let releases = Family::<CauseLabel, Counter>::default();
        let protocol_errors = Family::<CodeLabel, Counter>::default();
        let by_device = || devices.iter().map(|d| DeviceLabel { device: d.clone() });
        let mut c = Self {
            busy: series(&busy, by_device()),
            running: series(&running, by_device()),
            queued: series(&queued, by_device()),
            clients: Gauge::default(),
            connections: Counter::default(),
            waits: waits.clone(),
            model_waits: Vec::new(),
            grants: Counter::default(),
            rejects: rejects.clone(),
            releases: Cause::ALL
                .map(|c| releases.get_or_create_owned(&CauseLabel { cause: c.as_str() })),
            hold_exceeded: Counter::default(),
            protocol_errors: protocol_errors.clone(),
            registry: Registry::default(),
        };
        series(
            &rejects,
            RejectReason::ALL
                .iter()
                .map(|r| ReasonLabel { reason: r.as_str() }),
        );
        series(
            &protocol_errors,
            ErrorCode::ALL
                .iter()
                .map(|e| CodeLabel { code: e.as_str() }),
        );
        let registry = &mut c.registry;
        registry.register(
            "lanes_arbiter_device_busy_seconds",
            "Time with at least one grant held on the device",
            busy,
        );
        registry.register(
            "lanes_arbiter_device_running",
            "Grants held on the device now",
            running,
        );
        registry.register(
            "lanes_arbiter_device_queued",
            "Queued acquires the device could take (one eligible for several devices counts on each)",
            queued,
        );
        registry.register(
            "lanes_arbiter_clients",
            "Connections open now",
            c.clients.clone(),
        );
        registry.register(
            "lanes_arbiter_connections",
            "Connections accepted",
            c.connections.clone(),
        );
        registry.register(
            "lanes_arbiter_grant_wait_seconds",
            "Time from ACQUIRE to GRANT, by model",
            waits,
        );
        registry.register("lanes_arbiter_grants", "GRANTs sent", c.grants.clone());
        registry.register("lanes_arbiter_rejects", "REJECTs sent, by reason", rejects);
        registry.register(
            "lanes_arbiter_releases",
            "Grants ended, by cause: release, disconnect, revoke",
            releases,
        );
        registry.register(
            "lanes_arbiter_hold_exceeded",
            "Grants held past --max-hold",
            c.hold_exceeded.clone(),
        );
        registry.register(
            "lanes_arbiter_protocol_errors",
            "Connections closed with ERROR, by code",
            protocol_errors,
        );
        c
    }

    /// The grant-wait series of the next model id.
    pub fn add_model(&mut self, name: &str) {
        let label = ModelLabel {
            model: name.to_owned(),
        };
        self.model_waits
            .push(self.waits.get_or_create_owned(&label));
    }

    /// One connection accepted.
    pub fn connection(&self) {
        self.connections.inc();
    }

    /// One GRANT after `wait_ns` queued.
    pub fn grant(&self, model: u32, wait_ns: u64) {
        self.grants.inc();
        if let Some(h) = self.model_waits.get(model as usize) {
            h.observe(wait_ns as f64 / 1e9);
        }
    }

    /// One REJECT.
    pub fn reject(&self, reason: RejectReason) {
        self.rejects
            .get_or_create(&ReasonLabel {
                reason: reason.as_str(),
            })
            .inc();
    }

    /// One grant ended.
    pub fn release(&self, cause: Cause) {
        self.releases[cause as usize].inc();
    }

    /// One grant held past `--max-hold`.
    pub fn hold_exceeded(&self) {
        self.hold_exceeded.inc();
    }

    /// One connection closed with ERROR.
    pub fn protocol_error(&self, code: ErrorCode) {
        self.protocol_errors
            .get_or_create(&CodeLabel {
                code: code.as_str(),
            })
            .inc();
    }

    /// Connections accepted.
    pub fn connections_total(&self) -> u64 {
        self.connections.get()
    }

    /// GRANTs sent.
    pub fn grants_total(&self) -> u64 {
        self.grants.get()
    }

    /// Grants held past `--max-hold`.
    pub fn hold_exceeded_total(&self) -> u64 {
        self.hold_exceeded.get()
    }

    /// Grants ended by `cause`.
    pub fn releases(&self, cause: Cause) -> u64 {
        self.releases[cause as usize].get()
    }

    /// REJECTs sent for `reason`.
    pub fn rejects(&self, reason: RejectReason) -> u64 {
        self.rejects
            .get_or_create(&ReasonLabel {
                reason: reason.as_str(),
            })
            .get()
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
            "connections": self.connections_total(),
            "grants": self.grants_total(),
            "rejects": rejects,
            "releases": releases,
            "hold_exceeded": self.hold_exceeded_total(),
        })
    }

    /// The OpenMetrics text, with the gauges set from `g` first.
    pub fn render(&self, g: &Gauges<'_>) -> String {
        for (counter, &seconds) in self.busy.iter().zip(g.busy_s) {
            // The state's busy time only grows, as a counter must (see `Counter::inner`).
            counter.inner().store(seconds.to_bits(), Ordering::Relaxed);
        }
        for (gauge, &n) in self.running.iter().zip(g.running) {
            gauge.set(i64::from(n));
        }
        for (gauge, &n) in self.queued.iter().zip(g.queued) {
            gauge.set(n as i64);
        }
        self.clients.set(g.clients as i64);
        let mut out = String::with_capacity(4096);
        text::encode(&mut out, &self.registry).expect("writing to a String cannot fail");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_labels_and_cumulative_buckets() {
        let mut c = Counters::new(&["sim:0".into()]);
        c.add_model("m\"1");
        c.grant(0, 20_000); // 20 µs
        c.grant(0, 2_000_000_000); // past every bound
        c.reject(RejectReason::Overload);
        c.release(Cause::Disconnect);
        c.protocol_error(ErrorCode::TooLarge);
        let text = c.render(&Gauges {
            busy_s: &[1.5],
            running: &[1],
            queued: &[3],
            clients: 2,
        });
        for line in [
            "# TYPE lanes_arbiter_device_busy_seconds counter",
            "lanes_arbiter_device_busy_seconds_total{device=\"sim:0\"} 1.5",
            "lanes_arbiter_device_running{device=\"sim:0\"} 1",
            "lanes_arbiter_device_queued{device=\"sim:0\"} 3",
            "lanes_arbiter_clients 2",
            "lanes_arbiter_connections_total 0",
            "# TYPE lanes_arbiter_grant_wait_seconds histogram",
            "lanes_arbiter_grant_wait_seconds_bucket{le=\"0.00001\",model=\"m\\\"1\"} 0",
            "lanes_arbiter_grant_wait_seconds_bucket{le=\"0.000025\",model=\"m\\\"1\"} 1",
            "lanes_arbiter_grant_wait_seconds_bucket{le=\"1.0\",model=\"m\\\"1\"} 1",
            "lanes_arbiter_grant_wait_seconds_bucket{le=\"+Inf\",model=\"m\\\"1\"} 2",
            "lanes_arbiter_grant_wait_seconds_count{model=\"m\\\"1\"} 2",
            "lanes_arbiter_grants_total 2",
            "lanes_arbiter_rejects_total{reason=\"overload\"} 1",
            "lanes_arbiter_rejects_total{reason=\"deadline\"} 0",
            "lanes_arbiter_releases_total{cause=\"disconnect\"} 1",
            "lanes_arbiter_releases_total{cause=\"revoke\"} 0",
            "lanes_arbiter_hold_exceeded_total 0",
            "lanes_arbiter_protocol_errors_total{code=\"too_large\"} 1",
            "lanes_arbiter_protocol_errors_total{code=\"malformed\"} 0",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line}\n{text}");
        }
        assert!(text.ends_with("\n# EOF\n"), "{text}");
        assert_eq!(c.rejects(RejectReason::Overload), 1);
        assert_eq!(c.releases(Cause::Disconnect), 1);
    }

    #[test]
    fn busy_seconds_follow_the_state() {
        let c = Counters::new(&["a".into(), "b".into()]);
        let gauges = |busy_s| Gauges {
            busy_s,
            running: &[0, 0],
            queued: &[0, 0],
            clients: 0,
        };
        c.render(&gauges(&[0.25, 0.0]));
        let text = c.render(&gauges(&[0.5, 2.0]));
        for line in [
            "lanes_arbiter_device_busy_seconds_total{device=\"a\"} 0.5",
            "lanes_arbiter_device_busy_seconds_total{device=\"b\"} 2.0",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line}\n{text}");
        }
    }
}
