//! Policies: the order in which ready jobs get devices, chosen by name.
//!
//! | name | rule |
//! |---|---|
//! | `fifo` | arrival order; each device runs up to its capacity (1 by default) |
//! | `limit:K` | arrival order; every device runs up to `K` jobs at once |
//! | `sjf` | shortest estimated cost first, with aging and slack (below) |
//! | `edf` | earliest deadline first; jobs that can no longer finish by their deadline are dropped |
//!
//! Every policy drops a job whose hard deadline has passed before it is
//! dispatched; `edf` drops it as soon as `now + cost > deadline`.
//!
//! ## The `sjf` rule
//!
//! **Aging.** Jobs are ordered by `cost − α·wait`, lowest first. Because every
//! queued job's wait grows at the same rate, this order never changes while jobs
//! wait, and equals the order of the static key `cost + α·arrival` — so the
//! queue is a heap, not a scan. `α = 0` is pure shortest-first; `α → ∞` is FIFO.
//!
//! *Starvation bound.* A job J (cost `c`, arrival `a`) goes before every job K
//! with `c_K + α·a_K > c + α·a`; any job arriving after `a + c/α` has such a key.
//! So J can be overtaken only by jobs already queued at `a` and jobs arriving in
//! the window `[a, a + c/α)`: its wait is at most the work of those jobs divided
//! by the devices' capacity — finite whenever the load is below 1, however many
//! short jobs keep arriving.
//!
//! **Slack.** A job with a target (its SLO) becomes *urgent* once its slack
//! `target − now − cost` is at most `slack`, and stays urgent while the slack
//! is >= 0 — while running it now can still meet the target. Urgent jobs go
//! before all others, least latest-start (`target − cost`) first. A job whose
//! slack has gone negative is past saving and returns to the aging order, so
//! hopeless jobs never crowd out savable ones (the bound above still holds for
//! them). With `slack=off` only aging applies. Shortest-first keeps the mean
//! low; slack stops it from pushing a long job past its SLO when a little
//! priority would have saved it.
//!
//! Arguments: `sjf:alpha=A,slack=MS` (`slack` in milliseconds, or `off`).

use std::fmt;
use std::str::FromStr;

use crate::{Nanos, PolicyError, NANOS_PER_MS};

/// The allowed policy names, for error messages.
pub const ALLOWED: &str = "fifo, limit:K (K >= 1), sjf[:alpha=A,slack=MS|off], edf";

/// `sjf`'s default aging rate α (cost-nanoseconds forgiven per nanosecond
/// waited), chosen by simulation: docs/results/sim.md.
pub const DEFAULT_SJF_ALPHA: f64 = 4.0;
/// `sjf`'s default slack margin, chosen by simulation: docs/results/sim.md.
pub const DEFAULT_SJF_SLACK: Option<Nanos> = Some(80_000_000);

/// A scheduling policy. Parse one from its name with [`str::parse`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Policy {
    /// Arrival order, device capacity as configured.
    Fifo,
    /// Arrival order, `K` jobs at once on every device.
    Limit(u32),
    /// Shortest first with aging rate `alpha` and an optional slack margin.
    Sjf { alpha: f64, slack: Option<Nanos> },
    /// Earliest deadline first, dropping jobs that cannot finish in time.
    Edf,
}

impl Policy {
    /// `sjf` with the default aging and slack.
    pub fn sjf() -> Self {
        Self::Sjf {
            alpha: DEFAULT_SJF_ALPHA,
            slack: DEFAULT_SJF_SLACK,
        }
    }

    /// Jobs a device may run at once under this policy, given its configured
    /// capacity.
    pub fn slots(&self, device_capacity: u32) -> u32 {
        match self {
            Self::Limit(k) => *k,
            _ => device_capacity,
        }
    }
}

fn bad(policy: &str, key: &str, value: &str, allowed: &str) -> PolicyError {
    PolicyError::BadPolicyArgument {
        policy: policy.to_string(),
        key: key.to_string(),
        value: value.to_string(),
        allowed: allowed.to_string(),
    }
}

fn parse_sjf(name: &str, args: &str) -> Result<Policy, PolicyError> {
    let (mut alpha, mut slack) = (DEFAULT_SJF_ALPHA, DEFAULT_SJF_SLACK);
    for pair in args.split(',') {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(bad(
                name,
                "argument",
                pair,
                "expected KEY=VALUE with KEY alpha or slack",
            ));
        };
        match key.trim() {
            "alpha" => {
                alpha = value
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|a| a.is_finite() && *a >= 0.0)
                    .ok_or_else(|| bad(name, "alpha", value, "must be a number >= 0"))?;
            }
            "slack" => {
                slack = match value.trim() {
                    "off" | "none" => None,
                    v => Some(
                        v.parse::<f64>()
                            .ok()
                            .filter(|s| s.is_finite() && *s >= 0.0)
                            .map(|ms| (ms * NANOS_PER_MS) as Nanos)
                            .ok_or_else(|| {
                                bad(name, "slack", value, "must be milliseconds >= 0 or off")
                            })?,
                    ),
                };
            }
            other => return Err(bad(name, "argument", other, "allowed are alpha, slack")),
        }
    }
    Ok(Policy::Sjf { alpha, slack })
}

impl FromStr for Policy {
    type Err = PolicyError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        let (head, args) = match name.split_once(':') {
            Some((h, a)) => (h, Some(a)),
            None => (name, None),
        };
        match (head, args) {
            ("fifo", None) => Ok(Self::Fifo),
            ("edf", None) => Ok(Self::Edf),
            ("sjf", None) => Ok(Self::sjf()),
            ("sjf", Some(a)) => parse_sjf(name, a),
            ("limit", Some(k)) => k
                .parse::<u32>()
                .ok()
                .filter(|k| *k >= 1)
                .map(Self::Limit)
                .ok_or_else(|| bad(name, "K", k, "must be an integer >= 1")),
            ("limit", None) => Err(bad(name, "K", "", "must be an integer >= 1, as in limit:2")),
            ("fifo" | "edf", Some(a)) => Err(bad(name, "argument", a, "this policy takes none")),
            _ => Err(PolicyError::UnknownPolicy {
                name: name.to_string(),
                allowed: ALLOWED,
            }),
        }
    }
}

impl fmt::Display for Policy {
    /// The canonical name; parsing it gives the same policy back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Fifo => f.write_str("fifo"),
            Self::Edf => f.write_str("edf"),
            Self::Limit(k) => write!(f, "limit:{k}"),
            Self::Sjf { alpha, slack } => {
                if *alpha == DEFAULT_SJF_ALPHA && *slack == DEFAULT_SJF_SLACK {
                    return f.write_str("sjf");
                }
                write!(f, "sjf:alpha={alpha}")?;
                match slack {
                    None => f.write_str(",slack=off"),
                    Some(ns) => write!(f, ",slack={}", *ns as f64 / NANOS_PER_MS),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_round_trip() {
        let cases = [
            ("fifo", "fifo"),
            ("edf", "edf"),
            ("limit:3", "limit:3"),
            ("sjf", "sjf"),
            ("sjf:alpha=0", "sjf:alpha=0,slack=80"),
            ("sjf:alpha=0.25,slack=off", "sjf:alpha=0.25,slack=off"),
            ("sjf:slack=5", "sjf:alpha=4,slack=5"),
        ];
        for (name, canonical) in cases {
            let p: Policy = name.parse().unwrap();
            assert_eq!(p.to_string(), canonical, "{name}");
            assert_eq!(canonical.parse::<Policy>().unwrap(), p, "{name}");
        }
    }

    #[test]
    fn bad_names_name_the_value_and_what_is_allowed() {
        let cases = [
            ("lifo", "unknown_policy", "lifo"),
            ("limit:0", "bad_policy_argument", "'0'"),
            ("limit", "bad_policy_argument", "limit:2"),
            ("limit:x", "bad_policy_argument", "'x'"),
            ("sjf:alpha=-1", "bad_policy_argument", "'-1'"),
            ("sjf:beta=1", "bad_policy_argument", "alpha, slack"),
            ("sjf:slack=soon", "bad_policy_argument", "'soon'"),
            ("fifo:2", "bad_policy_argument", "takes none"),
        ];
        for (name, code, fragment) in cases {
            let err = name.parse::<Policy>().unwrap_err();
            assert_eq!(err.code(), code, "{name}");
            let msg = err.to_string();
            assert!(msg.contains(fragment), "{name}: {msg}");
            assert!(!msg.contains('\n'), "{name}: one line");
        }
    }

    #[test]
    fn limit_overrides_capacity() {
        assert_eq!(Policy::Limit(3).slots(1), 3);
        assert_eq!(Policy::Fifo.slots(2), 2);
    }
}
