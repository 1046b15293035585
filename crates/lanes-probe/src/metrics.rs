//! Prometheus metrics of a probe run (text format 0.0.4), served by
//! [`lanes_metrics_http::serve`] (`GET /metrics` or `/`).
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
//! | `lanes_probe_receive_buffer_bytes` | gauge | the reply socket's effective buffer |
//! | `lanes_probe_transitions_total{from,to}` | counter | state changes (`from="none"`: initial) |

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

use crate::config::Mode;
use crate::message::RoundReport;
use crate::state::{State, Transition};

/// Upper bounds of the round-duration histogram, seconds.
pub const ROUND_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.5, 5.0, 10.0,
];

#[derive(Debug, Default)]
struct Inner {
    mode: Option<Mode>,
    buffer: Option<usize>,
    last: RoundReport,
    rounds: u64,
    buckets: [u64; ROUND_BUCKETS.len()],
    duration_sum: f64,
    sent: u64,
    replies: u64,
    accepted: u64,
    refused: u64,
    timeouts: u64,
    unknown: u64,
    late: u64,
    duplicates: u64,
    strays: u64,
    errors: u64,
    kernel_packets: u64,
    kernel_drops: u64,
    transitions: BTreeMap<(&'static str, &'static str), u64>,
}

/// The counters, shared by the probing loop and the endpoint.
#[derive(Debug, Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

impl Metrics {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records the mode in use and the reply socket's buffer (syn mode).
    pub fn set_setup(&self, mode: Mode, buffer: Option<usize>) {
        let mut m = self.lock();
        m.mode = Some(mode);
        m.buffer = buffer;
    }

    /// Adds one round.
    pub fn record(&self, r: &RoundReport, transitions: &[Transition]) {
        let mut m = self.lock();
        m.rounds += 1;
        for (bucket, bound) in m.buckets.iter_mut().zip(ROUND_BUCKETS) {
            if r.duration_s <= bound {
                *bucket += 1;
            }
        }
        m.duration_sum += r.duration_s;
        m.sent += r.sent;
        m.replies += r.replies;
        m.accepted += r.accepted;
        m.refused += r.refused;
        m.timeouts += r.timeouts;
        m.unknown += r.unknown;
        m.late += r.late;
        m.duplicates += r.duplicates;
        m.strays += r.strays;
        m.errors += r.errors;
        m.kernel_packets += r.kernel_packets;
        m.kernel_drops += r.kernel_drops;
        for t in transitions {
            let from = t.from.map_or("none", State::as_str);
            *m.transitions.entry((from, t.to.as_str())).or_default() += 1;
        }
        m.last = r.clone();
    }

    /// The Prometheus text.
    pub fn render(&self) -> String {
        let m = self.lock();
        let mut out = String::with_capacity(4096);
        let head = |out: &mut String, name: &str, kind: &str, help: &str| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        };
        head(
            &mut out,
            "lanes_probe_info",
            "gauge",
            "The prober; its mode in use.",
        );
        let mode = m.mode.map_or("starting", Mode::as_str);
        let _ = writeln!(out, "lanes_probe_info{{mode=\"{mode}\"}} 1");
        head(
            &mut out,
            "lanes_probe_targets",
            "gauge",
            "Targets by state after the last round (pending: no state yet).",
        );
        for (state, n) in [
            ("up", m.last.up),
            ("down", m.last.down),
            ("refused", m.last.refused_targets),
            ("pending", m.last.pending),
        ] {
            let _ = writeln!(out, "lanes_probe_targets{{state=\"{state}\"}} {n}");
        }
        head(
            &mut out,
            "lanes_probe_rounds_total",
            "counter",
            "Rounds completed.",
        );
        let _ = writeln!(out, "lanes_probe_rounds_total {}", m.rounds);
        head(
            &mut out,
            "lanes_probe_round_duration_seconds",
            "histogram",
            "Time from a round's first probe to its last reply or its timeout.",
        );
        for (n, bound) in m.buckets.iter().zip(ROUND_BUCKETS) {
            let _ = writeln!(
                out,
                "lanes_probe_round_duration_seconds_bucket{{le=\"{bound}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "lanes_probe_round_duration_seconds_bucket{{le=\"+Inf\"}} {}",
            m.rounds
        );
        let _ = writeln!(
            out,
            "lanes_probe_round_duration_seconds_sum {}",
            m.duration_sum
        );
        let _ = writeln!(out, "lanes_probe_round_duration_seconds_count {}", m.rounds);
        head(
            &mut out,
            "lanes_probe_probes_sent_total",
            "counter",
            "Probes sent: SYNs, and connects started.",
        );
        let _ = writeln!(out, "lanes_probe_probes_sent_total {}", m.sent);
        head(&mut out, "lanes_probe_replies_total", "counter", "Answers to probes of their own round: SYN-ACKs and RSTs, connects completed or refused.");
        let _ = writeln!(out, "lanes_probe_replies_total {}", m.replies);
        head(
            &mut out,
            "lanes_probe_outcomes_total",
            "counter",
            "Probe outcomes.",
        );
        for (outcome, n) in [
            ("accepted", m.accepted),
            ("refused", m.refused),
            ("timeout", m.timeouts),
            ("unknown", m.unknown),
        ] {
            let _ = writeln!(
                out,
                "lanes_probe_outcomes_total{{outcome=\"{outcome}\"}} {n}"
            );
        }
        head(
            &mut out,
            "lanes_probe_unmatched_total",
            "counter",
            "Packets through the filter that answer no probe of their round.",
        );
        for (why, n) in [
            ("late", m.late),
            ("duplicate", m.duplicates),
            ("stray", m.strays),
        ] {
            let _ = writeln!(out, "lanes_probe_unmatched_total{{why=\"{why}\"}} {n}");
        }
        head(
            &mut out,
            "lanes_probe_errors_total",
            "counter",
            "Probes that failed on our side (not sent, local connect errors).",
        );
        let _ = writeln!(out, "lanes_probe_errors_total {}", m.errors);
        head(
            &mut out,
            "lanes_probe_kernel_packets_total",
            "counter",
            "Packets the kernel passed to the reply socket (PACKET_STATISTICS tp_packets).",
        );
        let _ = writeln!(out, "lanes_probe_kernel_packets_total {}", m.kernel_packets);
        head(
            &mut out,
            "lanes_probe_kernel_drops_total",
            "counter",
            "Replies the kernel dropped for want of receive buffer (PACKET_STATISTICS tp_drops).",
        );
        let _ = writeln!(out, "lanes_probe_kernel_drops_total {}", m.kernel_drops);
        if let Some(bytes) = m.buffer {
            head(
                &mut out,
                "lanes_probe_receive_buffer_bytes",
                "gauge",
                "Effective receive buffer of the reply socket (SO_RCVBUF as read back).",
            );
            let _ = writeln!(out, "lanes_probe_receive_buffer_bytes {bytes}");
        }
        head(
            &mut out,
            "lanes_probe_transitions_total",
            "counter",
            "State changes (from=\"none\": a target's initial state).",
        );
        for ((from, to), n) in &m.transitions {
            let _ = writeln!(
                out,
                "lanes_probe_transitions_total{{from=\"{from}\",to=\"{to}\"}} {n}"
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_histogram() {
        let m = Metrics::default();
        m.set_setup(Mode::Syn, Some(1 << 20));
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
            "lanes_probe_info{mode=\"syn\"} 1",
            "lanes_probe_targets{state=\"up\"} 6",
            "lanes_probe_targets{state=\"pending\"} 1",
            "lanes_probe_rounds_total 2",
            "lanes_probe_round_duration_seconds_bucket{le=\"0.05\"} 0",
            "lanes_probe_round_duration_seconds_bucket{le=\"0.1\"} 2",
            "lanes_probe_round_duration_seconds_bucket{le=\"+Inf\"} 2",
            "lanes_probe_round_duration_seconds_count 2",
            "lanes_probe_probes_sent_total 20",
            "lanes_probe_replies_total 18",
            "lanes_probe_outcomes_total{outcome=\"unknown\"} 2",
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
        // Every sample line belongs to a declared metric.
        let declared: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .filter_map(|l| l.split(' ').next())
            .collect();
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let name = l.split(['{', ' ']).next().unwrap();
            assert!(declared.iter().any(|d| name.starts_with(d)), "{l}");
        }
    }
}
