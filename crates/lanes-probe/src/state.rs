//! The per-target state machine: probe outcomes in, state transitions out.
//! Pure (no clock, no I/O): a round number is passed in.
//!
//! The rule, with N = `down_after`, M = `up_after`, W = `flap_window` rounds:
//! - [`Outcome::Unknown`] — the probe could not be sent, or the kernel dropped
//!   replies in that round so silence proves nothing — changes nothing, not
//!   even the consecutive counts.
//! - The first definitive outcome sets the initial state at once, with no
//!   previous state: accepted → `up`, refused → `refused`, timeout → `down`.
//! - `up` → after N consecutive failures (refusals or timeouts): `refused` if
//!   all N were refusals, else `down`. Such a transition is a *flap*,
//!   remembered by its round.
//! - `down` or `refused` → `up` after R consecutive accepts, where
//!   R = M × 2^min(f, 3) and f is the number of flaps within the last W rounds
//!   (the current round included) minus one. One outage: M; a second one
//!   within W rounds: 2M; a third: 4M; after that 8M at most. Flaps older than
//!   W rounds are forgotten, so a target that stays stable earns back the
//!   quick recovery. Going down is never delayed beyond N: damping only holds
//!   a flapping target down, which quiets its events without hiding outages.
//! - `down` → `refused` after N consecutive refusals; `refused` → `down` after
//!   N consecutive timeouts.
//!
//! Consecutive counts run across state changes: an accept resets the failure
//! counts, a failure resets the accept count, a refusal resets the timeout
//! count and a timeout the refusal count.

use std::collections::VecDeque;
use std::fmt;

use serde::Serialize;

/// Most doublings of the recovery requirement (R ≤ M × 2^3).
pub const MAX_DAMPING_SHIFT: u32 = 3;

/// What one probe of one target found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// SYN-ACK, or a connect that completed.
    Accepted,
    /// RST, or a connect refused.
    Refused,
    /// No answer in time, or the network said the host is unreachable.
    Timeout,
    /// Nothing can be concluded: the probe was not sent, or replies were lost on our side.
    Unknown,
}

/// A target's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Accepts connections.
    Up,
    /// Does not answer.
    Down,
    /// Answers with a reset: the host is there, the port is closed.
    Refused,
}

impl State {
    /// All states, in the order metrics list them.
    pub const ALL: [State; 3] = [State::Up, State::Down, State::Refused];

    /// The lower-case name used in events and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Up => "up",
            State::Down => "down",
            State::Refused => "refused",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The thresholds of the rule (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// N: consecutive failures that take an `up` target down.
    pub down_after: u32,
    /// M: consecutive accepts that bring a target back up, before damping.
    pub up_after: u32,
    /// W: rounds a flap is remembered.
    pub flap_window: u32,
}

/// A change of state; `from` is `None` for a target's initial state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    /// The state before, if any.
    pub from: Option<State>,
    /// The state after.
    pub to: State,
}

/// One target's state and counts.
#[derive(Debug, Clone, Default)]
pub struct Tracker {
    state: Option<State>,
    accepts: u32,
    failures: u32,
    refusals: u32,
    timeouts: u32,
    /// Rounds of recent flaps, oldest first; at most MAX_DAMPING_SHIFT + 1 kept.
    flaps: VecDeque<u64>,
}

impl Tracker {
    /// The current state; `None` before the first definitive outcome.
    pub fn state(&self) -> Option<State> {
        self.state
    }

    /// Accepts needed now to recover (the damped R of the module docs).
    pub fn needed_to_recover(&self, round: u64, th: &Thresholds) -> u32 {
        let recent = self
            .flaps
            .iter()
            .filter(|&&r| round.saturating_sub(r) < u64::from(th.flap_window))
            .count() as u32;
        let shift = recent.saturating_sub(1).min(MAX_DAMPING_SHIFT);
        th.up_after.saturating_mul(1 << shift)
    }

    /// Applies one round's outcome; returns the transition it causes, if any.
    pub fn observe(&mut self, round: u64, outcome: Outcome, th: &Thresholds) -> Option<Transition> {
        let sat = |n: u32| n.saturating_add(1);
        match outcome {
            Outcome::Unknown => return None,
            Outcome::Accepted => {
                self.accepts = sat(self.accepts);
                (self.failures, self.refusals, self.timeouts) = (0, 0, 0);
            }
            Outcome::Refused => {
                (self.accepts, self.timeouts) = (0, 0);
                self.failures = sat(self.failures);
                self.refusals = sat(self.refusals);
            }
            Outcome::Timeout => {
                (self.accepts, self.refusals) = (0, 0);
                self.failures = sat(self.failures);
                self.timeouts = sat(self.timeouts);
            }
        }
        let next = match self.state {
            None => Some(match outcome {
                Outcome::Accepted => State::Up,
                Outcome::Refused => State::Refused,
                _ => State::Down,
            }),
            Some(State::Up) if self.failures >= th.down_after => {
                self.flaps.push_back(round);
                if self.flaps.len() > MAX_DAMPING_SHIFT as usize + 1 {
                    self.flaps.pop_front();
                }
                Some(if self.refusals >= th.down_after {
                    State::Refused
                } else {
                    State::Down
                })
            }
            Some(State::Down | State::Refused)
                if self.accepts >= self.needed_to_recover(round, th) =>
            {
                Some(State::Up)
            }
            Some(State::Down) if self.refusals >= th.down_after => Some(State::Refused),
            Some(State::Refused) if self.timeouts >= th.down_after => Some(State::Down),
            _ => None,
        };
        let to = next?;
        let from = self.state.replace(to);
        Some(Transition { from, to })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(c: char) -> Outcome {
        match c {
            'A' => Outcome::Accepted,
            'R' => Outcome::Refused,
            'T' => Outcome::Timeout,
            '?' => Outcome::Unknown,
            other => panic!("bad outcome {other:?}"),
        }
    }

    fn name(s: Option<State>) -> &'static str {
        s.map_or("-", State::as_str)
    }

    /// Runs `outcomes` (spaces ignored; one char per round) and lists the
    /// transitions as `round:from>to`.
    fn run(outcomes: &str, down_after: u32, up_after: u32, flap_window: u32) -> String {
        let th = Thresholds {
            down_after,
            up_after,
            flap_window,
        };
        let mut t = Tracker::default();
        let mut out = Vec::new();
        for (round, c) in outcomes.chars().filter(|c| *c != ' ').enumerate() {
            if let Some(tr) = t.observe(round as u64, outcome(c), &th) {
                out.push(format!("{round}:{}>{}", name(tr.from), tr.to));
            }
        }
        out.join(" ")
    }

    #[test]
    fn the_rule_as_a_table() {
        // (outcomes, N, M, W, transitions)
        let table: &[(&str, u32, u32, u32, &str)] = &[
            // Initial states come from the first definitive outcome, at once.
            ("AAAA", 3, 2, 60, "0:->up"),
            ("R", 3, 2, 60, "0:->refused"),
            ("T", 3, 2, 60, "0:->down"),
            ("???A", 3, 2, 60, "3:->up"),
            // Down after N consecutive failures; refused only if all N were refusals.
            ("AA RRR", 3, 2, 60, "0:->up 4:up>refused"),
            ("AA RRT", 3, 2, 60, "0:->up 4:up>down"),
            ("AA TTT", 3, 2, 60, "0:->up 4:up>down"),
            // Fewer than N in a row never take a target down.
            ("A RRA TTA RTA RR", 3, 2, 60, "0:->up"),
            // Unknown neither counts nor breaks a run.
            ("A RR?R", 3, 2, 60, "0:->up 4:up>refused"),
            ("A R?R?", 3, 2, 60, "0:->up"),
            // Recovery after M consecutive accepts; an interruption restarts the count.
            ("TTT AA", 3, 2, 60, "0:->down 4:down>up"),
            ("T ATAA", 3, 2, 60, "0:->down 4:down>up"),
            ("R A?A", 3, 2, 60, "0:->refused 3:refused>up"),
            // Between the failing states: N consecutive of the other kind.
            ("TTT RRR", 3, 2, 60, "0:->down 5:down>refused"),
            ("RRR TTT", 3, 2, 60, "0:->refused 5:refused>down"),
            ("R TTRTT RTRT", 3, 2, 60, "0:->refused"),
            // Damping: the second flap within W doubles M, the third quadruples it.
            (
                "A TTT AA TTT AAAA TTT AAAAAAAA",
                3,
                2,
                60,
                "0:->up 3:up>down 5:down>up 8:up>down 12:down>up 15:up>down 23:down>up",
            ),
            (
                "A TTT AA TTT AAA",
                3,
                2,
                60,
                "0:->up 3:up>down 5:down>up 8:up>down",
            ),
            // ... capped at 8M, however many flaps.
            (
                "A T A T AA T AAAA T AAAAAAAA T AAAAAAAA",
                1,
                1,
                1000,
                "0:->up 1:up>down 2:down>up 3:up>down 5:down>up 6:up>down 10:down>up \
                 11:up>down 19:down>up 20:up>down 28:down>up",
            ),
            // Flaps older than W rounds are forgotten: a long outage recovers after M.
            (
                "A T A T TTTTTTTTTT AA",
                1,
                1,
                5,
                "0:->up 1:up>down 2:down>up 3:up>down 14:down>up",
            ),
            (
                "A T A T T AA",
                1,
                1,
                5,
                "0:->up 1:up>down 2:down>up 3:up>down 6:down>up",
            ),
            // A target alternating every round never leaves its state once N > 1.
            ("A TATATATATATATATA", 2, 1, 60, "0:->up"),
            ("T ATATATATATATATAT", 2, 2, 60, "0:->down"),
        ];
        for &(outcomes, n, m, w, want) in table {
            assert_eq!(
                run(outcomes, n, m, w),
                want,
                "{outcomes:?} N={n} M={m} W={w}"
            );
        }
    }

    #[test]
    fn needed_to_recover_doubles_then_caps() {
        let th = Thresholds {
            down_after: 1,
            up_after: 3,
            flap_window: 1000,
        };
        let mut t = Tracker::default();
        let mut round = 0;
        t.observe(round, Outcome::Accepted, &th);
        let mut needed = Vec::new();
        for _ in 0..6 {
            round += 1;
            let down = t.observe(round, Outcome::Timeout, &th).unwrap();
            assert_eq!(down.to, State::Down);
            let need = t.needed_to_recover(round + 1, &th);
            needed.push(need);
            for i in 1..=need {
                round += 1;
                let up = t.observe(round, Outcome::Accepted, &th).map(|tr| tr.to);
                assert_eq!(up, (i == need).then_some(State::Up));
            }
        }
        assert_eq!(needed, [3, 6, 12, 24, 24, 24]);
    }
}
