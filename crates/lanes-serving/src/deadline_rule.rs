//! When a request's deadline is held against its batch: at the batch's start
//! or at its estimated end (`lanes serve --deadline-rule`, the simulator's
//! `host.deadline_rule`).
//!
//! **Rule.** Under [`DeadlineRule::Start`] (the default, Triton's queue
//! policy) a request must *start* by its deadline: one still queued when the
//! deadline passes is failed (504 `deadline_exceeded`) and never runs, and a
//! batch cut just before it runs to the end, however late that is. Under
//! [`DeadlineRule::Finish`] the same holds, and when a batch is cut each of
//! its requests must also be estimated to *finish* by its deadline: one whose
//! deadline falls before `now + the batch's estimated run time` is failed
//! (504 `deadline_unreachable`) instead of run, and the batch runs without
//! it. The estimate is the server's online cost estimate for the batch as cut
//! (before the late requests leave it, so a request on the edge may be
//! dropped that the smaller batch would have carried in time), and the batch
//! is not refilled from the queue after a drop: the requests behind it wait
//! for the model's next batch.
//!
//! Why: past the knee, a request that starts just before a deadline equal to
//! its SLO still ends past the SLO, and the devices spend their time on late
//! answers (docs/results/deadlines.md: a deadline of the SLO less the longest
//! batch carried 1.26–1.36x the goodput of the SLO itself). `edf` refuses
//! such work by itself; this rule gives the other policies the same, so that a
//! client can send its SLO as the deadline.

use std::fmt;
use std::str::FromStr;

/// When a request's deadline is held against its batch (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeadlineRule {
    /// The batch must start by the deadline (Triton's queue policy).
    #[default]
    Start,
    /// The batch must also be estimated to end by it.
    Finish,
}

impl DeadlineRule {
    /// The names [`FromStr`] takes, for messages.
    pub const ALLOWED: &'static str = "start, finish";
}

impl FromStr for DeadlineRule {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "start" => Ok(Self::Start),
            "finish" => Ok(Self::Finish),
            _ => Err(format!(
                "unknown deadline rule '{s}': allowed are {}",
                Self::ALLOWED
            )),
        }
    }
}

impl fmt::Display for DeadlineRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Start => "start",
            Self::Finish => "finish",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::DeadlineRule;

    #[test]
    fn names_round_trip_and_a_wrong_one_names_the_allowed() {
        for rule in [DeadlineRule::Start, DeadlineRule::Finish] {
            assert_eq!(rule.to_string().parse::<DeadlineRule>(), Ok(rule));
        }
        assert_eq!(DeadlineRule::default(), DeadlineRule::Start);
        let err = "end".parse::<DeadlineRule>().unwrap_err();
        assert!(
            err.contains("'end'") && err.contains("start, finish"),
            "{err}"
        );
    }
}
