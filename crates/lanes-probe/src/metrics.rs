//! Prometheus metrics of a probe run, kept in a [`prometheus_client`] registry
//! and encoded as OpenMetrics text (`application/openmetrics-text;
//! version=1.0.0`), served by [`lanes_metrics_http::serve`] (`GET /metrics` or
//! `/`).
//!
//! | metric | type | what |
//! |---|---|---|
//! | `lanes_probe_info{mode}` | gauge | 1, labelled with the mode in use |
//! | `lanes_probe_targets{state}` | gauge | targets by state: up, down, refused, pending (no state yet) |
//! | `lanes_probe_rounds_total` | counter | rounds completed |
//! | `lanes_probe_round_duration_seconds` | histogram | first probe to last reply or timeout |
//! | `lanes_probe_probes_sent_total` | counter | SYNs sent and connects started |
//! | `lanes_probe_replies_total` | counter | answers to this round's probes |
//! | `lanes_probe_outcomes_total{outcome}` | counter | accepted, refused, timeout, unknown |
//! | `lanes_probe_unmatched_total{why}` | counter | late, duplicate, stray packets |
//! | `lanes_probe_errors_total` | counter | probes that failed on our side |
//! | `lanes_probe_kernel_packets_total` | counter | packets the filter passed (PACKET_STATISTICS) |
//! | `lanes_probe_kernel_drops_total` | counter | of those, dropped for want of buffer |
//! | `lanes_probe_receive_buffer_bytes` | gauge | the reply socket's effective buffer (syn mode only) |
//! | `lanes_probe_transitions_total{from,to}` | counter | state changes (`from="none"`: initial) |
//!
//! The structure: [`Metrics::new`] builds the registry once the mode is
//! known and keeps a handle on every series a round updates (a metric of the
//! crate is a shared handle: a clone counts into the registered series). The
//! probing loop records each round through those handles (atomics, no lock of
//! ours) and the endpoint encodes the registry; a scrape sees every round
//! recorded before it. Counters are registered without `_total`, which the
//! encoder appends; the series of a labelled metric come in no fixed order.

use std::fmt::Debug;

use prometheus_client::encoding::{text, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::TypedMetric;
use prometheus_client::registry::Registry;

use crate::config::Mode;
use crate::message::RoundReport;
use crate::state::{State, Transition};

/// Upper bounds of the round-duration histogram, seconds.
pub const ROUND_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The unlabelled counters, in the order [`Metrics::new`] takes them: name
/// (without `_total`) and help.
const COUNTERS: [(&str, &str); 6] = [
    ("lanes_probe_rounds", "Rounds completed"),
    (
        "lanes_probe_probes_sent",
        "Probes sent: SYNs, and connects started",
    ),
    (
        "lanes_probe_replies",
        "Answers to probes of their own round: SYN-ACKs and RSTs, connects completed or refused",
    ),
    (
        "lanes_probe_errors",
        "Probes that failed on our side (not sent, local connect errors)",
    ),
    (
        "lanes_probe_kernel_packets",
        "Packets the kernel passed to the reply socket (PACKET_STATISTICS tp_packets)",
    ),
    (
        "lanes_probe_kernel_drops",
        "Replies the kernel dropped for want of receive buffer (PACKET_STATISTICS tp_drops)",
    ),
];

/// A label set of `N` fixed names and values.
type Labels<const N: usize> = [(&'static str, &'static str); N];

/// Registers a family labelled `key` and returns its series for `values`, in order
/// (created now, so that they show as 0).
fn family<M, const N: usize>(
    registry: &mut Registry,
    name: &str,
    help: &str,
    key: &'static str,
    values: [&'static str; N],
) -> [M; N]
where
    M: EncodeMetric + TypedMetric + Default + Clone + Debug + Send + Sync + 'static,
{
    let family = Family::<Labels<1>, M>::default();
    let series = values.map(|v| family.get_or_create_owned(&[(key, v)]));
    registry.register(name, help, family);
    series
}

/// Registers `metric` and returns a handle on it.
fn metric<M>(registry: &mut Registry, name: &str, help: &str, metric: M) -> M
where
    M: EncodeMetric + Clone + Debug + Send + Sync + 'static,
{
    registry.register(name, help, metric.clone());
    metric
}

/// The registry and the handles a round updates, shared by the probing loop
/// and the endpoint.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// up, down, refused, pending.
    targets: [Gauge; 4],
    rounds: Counter,
    round_duration: Histogram,
    sent: Counter,
    replies: Counter,
    /// accepted, refused, timeout, unknown.
    outcomes: [Counter; 4],
    /// late, duplicate, stray.
    unmatched: [Counter; 3],
    errors: Counter,
    kernel_packets: Counter,
    kernel_drops: Counter,
    transitions: Family<Labels<2>, Counter>,
}

impl Metrics {
    /// Zeroed metrics of a run in `mode`, with the reply socket's buffer (syn mode).
    pub fn new(mode: Mode, buffer: Option<usize>) -> Self {
        let mut r = Registry::default();
        let [info]: [Gauge; 1] = family(
            &mut r,
            "lanes_probe_info",
            "The prober; its mode in use",
            "mode",
            [mode.as_str()],
        );
        info.set(1);
        let targets = family(
            &mut r,
            "lanes_probe_targets",
            "Targets by state after the last round (pending: no state yet)",
            "state",
            ["up", "down", "refused", "pending"],
        );
        let [rounds, sent, replies, errors, kernel_packets, kernel_drops] =
            COUNTERS.map(|(name, help)| metric(&mut r, name, help, Counter::default()));
        let round_duration = metric(
            &mut r,
            "lanes_probe_round_duration_seconds",
            "Time from a round's first probe to its last reply or its timeout",
            Histogram::new(ROUND_BUCKETS),
        );
        let outcomes = family(
            &mut r,
            "lanes_probe_outcomes",
            "Probe outcomes",
            "outcome",
            ["accepted", "refused", "timeout", "unknown"],
        );
        let unmatched = family(
            &mut r,
            "lanes_probe_unmatched",
            "Packets through the filter that answer no probe of their round",
            "why",
            ["late", "duplicate", "stray"],
        );
        if let Some(bytes) = buffer {
            let gauge = metric(
                &mut r,
                "lanes_probe_receive_buffer_bytes",
                "Effective receive buffer of the reply socket (SO_RCVBUF as read back)",
                Gauge::<i64>::default(),
            );
            gauge.set(i64::try_from(bytes).unwrap_or(i64::MAX));
        }
        let transitions = metric(
            &mut r,
            "lanes_probe_transitions",
            "State changes (from=\"none\": a target's initial state)",
            Family::default(),
        );
        Self {
            registry: r,
            targets,
            rounds,
            round_duration,
            sent,
            replies,
            outcomes,
            unmatched,
            errors,
            kernel_packets,
            kernel_drops,
            transitions,
        }
    }

    /// Adds one round.
    pub fn record(&self, r: &RoundReport, transitions: &[Transition]) {
        self.rounds.inc();
        self.round_duration.observe(r.duration_s);
        self.sent.inc_by(r.sent);
        self.replies.inc_by(r.replies);
        for (c, n) in self
            .outcomes
            .iter()
            .zip([r.accepted, r.refused, r.timeouts, r.unknown])
        {
            c.inc_by(n);
        }
        for (c, n) in self.unmatched.iter().zip([r.late, r.duplicates, r.strays]) {
            c.inc_by(n);
        }
        self.errors.inc_by(r.errors);
        self.kernel_packets.inc_by(r.kernel_packets);
        self.kernel_drops.inc_by(r.kernel_drops);
        for t in transitions {
            let from = t.from.map_or("none", State::as_str);
            self.transitions
                .get_or_create(&[("from", from), ("to", t.to.as_str())])
                .inc();
        }
        for (g, n) in self
            .targets
            .iter()
            .zip([r.up, r.down, r.refused_targets, r.pending])
        {
            g.set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }

    /// The OpenMetrics text.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(4096);
        text::encode(&mut out, &self.registry).expect("writing to a String cannot fail");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_histogram() {
        let m = Metrics::new(Mode::Syn, Some(1 << 20));
        let r = RoundReport {
            duration_s: 0.07,
            sent: 10,
            replies: 9,
            accepted: 6,
            refused: 3,
            unknown: 1,
            kernel_packets: 9,
            kernel_drops: 1,
            up: 6,
            refused_targets: 3,
            pending: 1,
            ..RoundReport::default()
        };
        let initial = Transition {
            from: None,
            to: State::Up,
        };
        m.record(&r, &[initial; 6]);
        m.record(
            &r,
            &[Transition {
                from: Some(State::Up),
                to: State::Down,
            }],
        );
        let text = m.render();
        for line in [
            "# TYPE lanes_probe_info gauge",
            "lanes_probe_info{mode=\"syn\"} 1",
            "lanes_probe_targets{state=\"up\"} 6",
            "lanes_probe_targets{state=\"pending\"} 1",
            "# TYPE lanes_probe_rounds counter",
            "lanes_probe_rounds_total 2",
            "lanes_probe_round_duration_seconds_bucket{le=\"0.05\"} 0",
            "lanes_probe_round_duration_seconds_bucket{le=\"0.1\"} 2",
            "lanes_probe_round_duration_seconds_bucket{le=\"10.0\"} 2",
            "lanes_probe_round_duration_seconds_bucket{le=\"+Inf\"} 2",
            "lanes_probe_round_duration_seconds_count 2",
            "lanes_probe_probes_sent_total 20",
            "lanes_probe_replies_total 18",
            "lanes_probe_outcomes_total{outcome=\"unknown\"} 2",
            "lanes_probe_unmatched_total{why=\"stray\"} 0",
            "lanes_probe_kernel_drops_total 2",
            "lanes_probe_receive_buffer_bytes 1048576",
            "lanes_probe_transitions_total{from=\"none\",to=\"up\"} 6",
            "lanes_probe_transitions_total{from=\"up\",to=\"down\"} 1",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
        assert!(text.ends_with("\n# EOF\n"), "{text}");
    }

    #[test]
    fn connect_mode_has_no_receive_buffer() {
        let text = Metrics::new(Mode::Connect, None).render();
        assert!(
            text.contains("lanes_probe_info{mode=\"connect\"} 1\n"),
            "{text}"
        );
        assert!(!text.contains("lanes_probe_receive_buffer_bytes"), "{text}");
        assert!(!text.contains("lanes_probe_transitions_total"), "{text}");
    }
}
