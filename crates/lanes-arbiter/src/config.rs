//! The one typed configuration of a daemon run, as the Python side passes it
//! (a dict, deserialized), checked by [`ArbiterSpec::state_config`] with
//! messages that name the option, the value and what is allowed.

use std::net::SocketAddr;
use std::path::PathBuf;

use lanes_policy::{DeviceSet, Policy};
use serde::Deserialize;

use crate::error::ArbiterError;
use crate::state::StateConfig;

/// Options of `lanes arbiter` (docs/arbiter.md).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ArbiterSpec {
    /// The Unix socket path.
    pub socket: PathBuf,
    /// Device names (labels; index = device number).
    pub devices: Vec<String>,
    /// Jobs per device at once.
    pub capacity: u32,
    /// A policy name of crates/lanes-policy.
    pub policy: String,
    /// Hold limit of a grant, milliseconds.
    pub max_hold_ms: Option<f64>,
    /// Take back grants held past the limit.
    pub revoke: bool,
    /// Most acquires queued at once.
    pub queue_limit: usize,
    /// Permission bits of the socket file.
    pub mode: u32,
    /// Owner and group of the socket file (numeric; the CLI resolves names).
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    /// Where the Prometheus endpoint listens, if anywhere.
    pub metrics: Option<SocketAddr>,
    /// Timeline file written at exit.
    pub trace: Option<PathBuf>,
    /// Timeline events kept (the newest).
    pub trace_events: usize,
    /// Runtime worker threads: 1 = a current-thread runtime.
    pub threads: usize,
}

impl Default for ArbiterSpec {
    fn default() -> Self {
        Self {
            socket: PathBuf::new(),
            devices: Vec::new(),
            capacity: 1,
            policy: "sjf".into(),
            max_hold_ms: None,
            revoke: false,
            queue_limit: 100_000,
            mode: 0o660,
            uid: None,
            gid: None,
            metrics: None,
            trace: None,
            trace_events: 200_000,
            threads: 1,
        }
    }
}

fn bad(message: String) -> ArbiterError {
    ArbiterError::BadArgument(message)
}

impl ArbiterSpec {
    /// The checked state configuration.
    pub fn state_config(&self) -> Result<StateConfig, ArbiterError> {
        if self.socket.as_os_str().is_empty() {
            return Err(bad("--socket is empty: give a path".into()));
        }
        let n = self.devices.len();
        if n == 0 || n > DeviceSet::MAX_DEVICES {
            return Err(bad(format!("--devices: {n} devices: must be 1..=64")));
        }
        if let Some(d) = self.devices.iter().find(|d| d.is_empty() || d.len() > 255) {
            return Err(bad(format!("--devices: name '{d}': must be 1..=255 bytes")));
        }
        if self.capacity == 0 {
            return Err(bad("--capacity 0: must be at least 1".into()));
        }
        let policy: Policy = self
            .policy
            .parse()
            .map_err(|e: lanes_policy::PolicyError| bad(format!("--policy: {e}")))?;
        let max_hold = match self.max_hold_ms {
            None => None,
            Some(ms) if ms.is_finite() && ms > 0.0 => Some((ms * 1e6) as u64),
            Some(ms) => return Err(bad(format!("--max-hold {ms}: must be milliseconds > 0"))),
        };
        if self.revoke && max_hold.is_none() {
            return Err(bad("--revoke needs --max-hold MS".into()));
        }
        if self.queue_limit == 0 {
            return Err(bad("--queue-limit 0: must be at least 1".into()));
        }
        if self.mode > 0o777 {
            return Err(bad(format!(
                "--mode {:o}: must be octal 000..777",
                self.mode
            )));
        }
        if self.threads == 0 || self.threads > 64 {
            return Err(bad(format!("--threads {}: must be 1..=64", self.threads)));
        }
        Ok(StateConfig {
            devices: self.devices.clone(),
            policy,
            capacity: self.capacity,
            max_hold,
            revoke: self.revoke,
            queue_limit: self.queue_limit,
            trace_events: if self.trace.is_some() {
                self.trace_events.max(1)
            } else {
                0
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ArbiterSpec {
        ArbiterSpec {
            socket: "/tmp/a.sock".into(),
            devices: vec!["sim:0".into()],
            ..ArbiterSpec::default()
        }
    }

    #[test]
    fn bad_values_name_the_option_and_what_is_allowed() {
        let cases: Vec<(ArbiterSpec, &str)> = vec![
            (
                ArbiterSpec {
                    socket: PathBuf::new(),
                    ..spec()
                },
                "--socket",
            ),
            (
                ArbiterSpec {
                    devices: vec![],
                    ..spec()
                },
                "1..=64",
            ),
            (
                ArbiterSpec {
                    capacity: 0,
                    ..spec()
                },
                "--capacity 0",
            ),
            (
                ArbiterSpec {
                    policy: "lifo".into(),
                    ..spec()
                },
                "unknown policy 'lifo'",
            ),
            (
                ArbiterSpec {
                    max_hold_ms: Some(-1.0),
                    ..spec()
                },
                "--max-hold -1",
            ),
            (
                ArbiterSpec {
                    revoke: true,
                    ..spec()
                },
                "--revoke needs",
            ),
            (
                ArbiterSpec {
                    queue_limit: 0,
                    ..spec()
                },
                "--queue-limit 0",
            ),
            (
                ArbiterSpec {
                    mode: 0o1777,
                    ..spec()
                },
                "--mode 1777",
            ),
            (
                ArbiterSpec {
                    threads: 0,
                    ..spec()
                },
                "--threads 0",
            ),
        ];
        for (s, fragment) in cases {
            let e = s.state_config().unwrap_err();
            assert_eq!(e.code(), "bad_argument");
            assert!(e.to_string().contains(fragment), "{e}");
        }
        let ok = ArbiterSpec {
            max_hold_ms: Some(2.5),
            revoke: true,
            ..spec()
        };
        assert_eq!(ok.state_config().unwrap().max_hold, Some(2_500_000));
    }
}
