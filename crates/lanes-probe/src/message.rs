//! What a running prober tells its caller, in order, through one channel:
//! transitions ([`Event`]), log lines ([`Notice`]) and one [`RoundReport`]
//! per round. Each serializes to a map with a `kind` field (`event`,
//! `notice`, `round`), which is how they cross into Python.

use serde::Serialize;

use crate::state::State;

/// A target changed state (or got its first state: `previous` is `None`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    /// The target as written in the file, `host:port`.
    pub target: String,
    /// Its name from the file.
    pub name: Option<String>,
    /// The new state.
    pub state: State,
    /// The state before; `None` for the initial state.
    pub previous: Option<State>,
    /// When the round that decided it ended, seconds since the Unix epoch.
    pub at: f64,
    /// That round (0 is the first).
    pub round: u64,
}

/// How much a notice matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// For the record (the mode, the buffer size, a reload).
    Info,
    /// Something an operator should act on (a fallback, a capped buffer, drops).
    Warning,
}

/// A log line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Notice {
    /// Info or warning.
    pub level: Level,
    /// One line.
    pub message: String,
}

impl Notice {
    /// An info line.
    pub fn info(message: impl Into<String>) -> Self {
        Self {
            level: Level::Info,
            message: message.into(),
        }
    }

    /// A warning.
    pub fn warning(message: impl Into<String>) -> Self {
        Self {
            level: Level::Warning,
            message: message.into(),
        }
    }
}

/// What one round did and found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RoundReport {
    /// The round (0 is the first).
    pub round: u64,
    /// From the first probe sent to the last reply or the timeout, seconds.
    pub duration_s: f64,
    /// Targets in the fleet.
    pub targets: u64,
    /// Probes sent (SYNs, and connects started).
    pub sent: u64,
    /// Answers to this round's probes: SYN-ACKs and RSTs, connects completed or refused.
    pub replies: u64,
    /// Outcomes of the round: accepted.
    pub accepted: u64,
    /// Outcomes: refused.
    pub refused: u64,
    /// Outcomes: no answer in time (or unreachable).
    pub timeouts: u64,
    /// Outcomes: nothing concluded (not sent, our-side error, or replies lost in the kernel).
    pub unknown: u64,
    /// Replies to the previous round's SYNs.
    pub late: u64,
    /// Second replies from one target.
    pub duplicates: u64,
    /// Packets through the filter that were no reply of ours.
    pub strays: u64,
    /// Probes that failed on our side (send errors, connect errors such as EMFILE).
    pub errors: u64,
    /// Packets the kernel passed to the reply socket since the previous round (PACKET_STATISTICS).
    pub kernel_packets: u64,
    /// Of those, packets the kernel dropped for want of receive buffer.
    pub kernel_drops: u64,
    /// Targets up after the round.
    pub up: u64,
    /// Targets down after the round.
    pub down: u64,
    /// Targets refused after the round.
    pub refused_targets: u64,
    /// Targets with no state yet.
    pub pending: u64,
    /// Transitions in the round (initial states included).
    pub transitions: u64,
}

/// One message of a running prober.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Message {
    /// A transition.
    Event(Event),
    /// A log line.
    Notice(Notice),
    /// A round's report.
    Round(RoundReport),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_serialize_with_their_kind() {
        let e = Message::Event(Event {
            target: "127.0.0.1:80".into(),
            name: None,
            state: State::Up,
            previous: None,
            at: 1.5,
            round: 0,
        });
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"kind":"event","target":"127.0.0.1:80","name":null,"state":"up","previous":null,"at":1.5,"round":0}"#
        );
        let n = Message::Notice(Notice::warning("w"));
        assert_eq!(
            serde_json::to_string(&n).unwrap(),
            r#"{"kind":"notice","level":"warning","message":"w"}"#
        );
    }
}
