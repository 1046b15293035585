//! The one typed configuration of a probe run, and the spec it is built from.
//!
//! [`ProbeSpec`] is what callers give (the CLI passes it as a dict; every
//! field optional but `targets`). [`ProbeSpec::build`] checks every field
//! (messages name the key, the value and the allowed range) and applies the
//! defaults, so a [`ProbeConfig`] is always runnable.
//!
//! Defaults: `syn` mode; a round every second; a probe timeout of
//! min(0.8 × interval, 1 s); down after 3 consecutive failures, up after 2
//! consecutive accepts; flaps remembered for 60 rounds; the receive buffer
//! sized for the fleet (see [`crate::syn`]); at most 1,000 connects in flight
//! in `connect` mode; no round bound; no metrics endpoint (host 127.0.0.1
//! when a port is given).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::ProbeError;
use crate::state::Thresholds;

/// How probes are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Half-open: a SYN from a raw socket, the reply read from a packet
    /// socket. Needs `CAP_NET_RAW`; falls back to `connect` without it.
    #[default]
    Syn,
    /// A non-blocking connect with a timeout, reset at once when it completes.
    Connect,
}

impl Mode {
    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Syn => "syn",
            Mode::Connect => "connect",
        }
    }
}

/// A probe run as callers describe it; see the module docs for defaults.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeSpec {
    /// The targets file (`host:port [name]` per line).
    pub targets: PathBuf,
    /// Seconds between round starts.
    pub interval_s: Option<f64>,
    /// Seconds a probe waits for its answer.
    pub timeout_s: Option<f64>,
    /// `syn` or `connect`.
    #[serde(default)]
    pub mode: Mode,
    /// Consecutive failures that take an up target down.
    pub down_after: Option<u32>,
    /// Consecutive accepts that bring a target back up (before flap damping).
    pub up_after: Option<u32>,
    /// Rounds a flap is remembered by the damping rule.
    pub flap_window: Option<u32>,
    /// Stop after this many rounds.
    pub rounds: Option<u64>,
    /// Receive buffer of the reply socket, bytes (default: sized for the fleet).
    pub recv_buffer: Option<usize>,
    /// Most connects in flight at once (`connect` mode, and IPv6 targets in `syn` mode).
    pub connect_concurrency: Option<usize>,
    /// Serve Prometheus metrics on this port (0: any free port).
    pub metrics_port: Option<u16>,
    /// Address the metrics endpoint listens on.
    pub metrics_host: Option<String>,
    /// Behave as if `CAP_NET_RAW` were missing (tests of the fallback).
    #[serde(default)]
    pub simulate_no_raw: bool,
}

/// Shortest interval between rounds.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);
/// Longest interval between rounds.
pub const MAX_INTERVAL: Duration = Duration::from_secs(3600);
/// Smallest receive buffer that may be asked for, bytes.
pub const MIN_RECV_BUFFER: usize = 4096;
/// Largest receive buffer that may be asked for, bytes.
pub const MAX_RECV_BUFFER: usize = 1 << 30;

/// A checked, runnable configuration.
#[derive(Debug, Clone)]
pub struct ProbeConfig {
    /// The targets file.
    pub targets: PathBuf,
    /// Time between round starts.
    pub interval: Duration,
    /// Time a probe waits for its answer.
    pub timeout: Duration,
    /// The mode asked for.
    pub mode: Mode,
    /// The state machine's thresholds.
    pub thresholds: Thresholds,
    /// Stop after this many rounds.
    pub rounds: Option<u64>,
    /// Receive buffer asked for, bytes (`None`: sized for the fleet).
    pub recv_buffer: Option<usize>,
    /// Most connects in flight.
    pub connect_concurrency: usize,
    /// Where the metrics endpoint listens.
    pub metrics: Option<SocketAddr>,
    /// Behave as if `CAP_NET_RAW` were missing.
    pub simulate_no_raw: bool,
}

fn bad(message: String) -> ProbeError {
    ProbeError::BadArgument(message)
}

fn in_range<T: PartialOrd + std::fmt::Display + Copy>(
    key: &str,
    value: Option<T>,
    default: T,
    lo: T,
    hi: T,
) -> Result<T, ProbeError> {
    let v = value.unwrap_or(default);
    if v < lo || v > hi {
        return Err(bad(format!("{key} must be in {lo}..={hi}, not {v}")));
    }
    Ok(v)
}

fn seconds(key: &str, value: f64, lo: Duration, hi: Duration) -> Result<Duration, ProbeError> {
    if value.is_finite() && value >= lo.as_secs_f64() && value <= hi.as_secs_f64() {
        Ok(Duration::from_secs_f64(value))
    } else {
        Err(bad(format!(
            "{key} must be a number of seconds in [{}, {}], not {value}",
            lo.as_secs_f64(),
            hi.as_secs_f64()
        )))
    }
}

impl ProbeSpec {
    /// Checks the spec and builds the configuration.
    pub fn build(&self) -> Result<ProbeConfig, ProbeError> {
        if self.targets.as_os_str().is_empty() {
            return Err(bad("targets: give the path of a targets file".into()));
        }
        let interval = seconds(
            "interval",
            self.interval_s.unwrap_or(1.0),
            MIN_INTERVAL,
            MAX_INTERVAL,
        )?;
        let default_timeout = (interval.as_secs_f64() * 0.8).min(1.0);
        let timeout = seconds(
            "timeout",
            self.timeout_s.unwrap_or(default_timeout),
            Duration::from_millis(1),
            interval,
        )
        .map_err(|e| bad(format!("{e} (at most the interval)")))?;
        let thresholds = Thresholds {
            down_after: in_range("down_after", self.down_after, 3, 1, 1000)?,
            up_after: in_range("up_after", self.up_after, 2, 1, 1000)?,
            flap_window: in_range("flap_window", self.flap_window, 60, 1, 1_000_000)?,
        };
        if self.rounds == Some(0) {
            return Err(bad("rounds must be at least 1".into()));
        }
        let recv_buffer = self
            .recv_buffer
            .map(|b| in_range("recv_buffer", Some(b), b, MIN_RECV_BUFFER, MAX_RECV_BUFFER))
            .transpose()?;
        let connect_concurrency = in_range(
            "connect_concurrency",
            self.connect_concurrency,
            1000,
            1,
            65_536,
        )?;
        let metrics = match self.metrics_port {
            None => None,
            Some(port) => {
                let host = self.metrics_host.as_deref().unwrap_or("127.0.0.1");
                let ip: IpAddr = host.parse().map_err(|_| {
                    bad(format!("metrics_host must be an IP address, not {host:?}"))
                })?;
                Some(SocketAddr::new(ip, port))
            }
        };
        Ok(ProbeConfig {
            targets: self.targets.clone(),
            interval,
            timeout,
            mode: self.mode,
            thresholds,
            rounds: self.rounds,
            recv_buffer,
            connect_concurrency,
            metrics,
            simulate_no_raw: self.simulate_no_raw,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ProbeSpec {
        ProbeSpec {
            targets: "t".into(),
            ..ProbeSpec::default()
        }
    }

    #[test]
    fn defaults() {
        let c = spec().build().unwrap();
        assert_eq!(c.interval, Duration::from_secs(1));
        assert_eq!(c.timeout, Duration::from_millis(800));
        assert_eq!(c.mode, Mode::Syn);
        assert_eq!(
            c.thresholds,
            Thresholds {
                down_after: 3,
                up_after: 2,
                flap_window: 60
            }
        );
        assert_eq!((c.rounds, c.recv_buffer, c.metrics), (None, None, None));
        let slow = ProbeSpec {
            interval_s: Some(10.0),
            metrics_port: Some(9100),
            ..spec()
        };
        let c = slow.build().unwrap();
        assert_eq!(c.timeout, Duration::from_secs(1));
        assert_eq!(c.metrics, Some("127.0.0.1:9100".parse().unwrap()));
    }

    #[test]
    fn errors_name_key_value_and_range() {
        let cases: Vec<(ProbeSpec, &str)> = vec![
            (ProbeSpec::default(), "targets: give the path"),
            (
                ProbeSpec {
                    interval_s: Some(0.001),
                    ..spec()
                },
                "interval must be a number of seconds in [0.01, 3600], not 0.001",
            ),
            (
                ProbeSpec {
                    timeout_s: Some(2.0),
                    ..spec()
                },
                "timeout must be a number of seconds in [0.001, 1], not 2 (at most the interval)",
            ),
            (
                ProbeSpec {
                    down_after: Some(0),
                    ..spec()
                },
                "down_after must be in 1..=1000, not 0",
            ),
            (
                ProbeSpec {
                    up_after: Some(1001),
                    ..spec()
                },
                "up_after must be in 1..=1000, not 1001",
            ),
            (
                ProbeSpec {
                    rounds: Some(0),
                    ..spec()
                },
                "rounds must be at least 1",
            ),
            (
                ProbeSpec {
                    recv_buffer: Some(100),
                    ..spec()
                },
                "recv_buffer must be in 4096..=1073741824, not 100",
            ),
            (
                ProbeSpec {
                    metrics_port: Some(1),
                    metrics_host: Some("localhost".into()),
                    ..spec()
                },
                "metrics_host must be an IP address, not \"localhost\"",
            ),
        ];
        for (spec, want) in cases {
            let e = spec.build().unwrap_err();
            assert_eq!(e.code(), "bad_argument");
            assert!(e.to_string().starts_with(want), "{e} / {want}");
        }
    }

    #[test]
    fn unknown_fields_are_refused() {
        let e = serde_json::from_str::<ProbeSpec>(r#"{"targets": "t", "intervall_s": 1}"#);
        assert!(e
            .unwrap_err()
            .to_string()
            .contains("unknown field `intervall_s`"));
        let ok: ProbeSpec = serde_json::from_str(r#"{"targets": "t", "mode": "connect"}"#).unwrap();
        assert_eq!(ok.mode, Mode::Connect);
    }
}
