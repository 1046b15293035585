//! The fast lane's shape: how many fast slots a device has and what a fast
//! job may run beside.
//!
//! As first built (`lanes`, `fair:...,fast=MS`), a device's one fast slot is
//! *open* while all its regular slots are taken, at least one by a long job,
//! and no fast job runs there: a short job overlaps only a long one, and a
//! device runs at most one fast job at a time. Two keys widen that rule, each
//! at its first setting by default:
//!
//! - **Width** (`width=K`, 1–8, default 1). A device has K fast slots; one
//!   is open while fewer than K fast jobs run there (and the `beside` rule
//!   below holds). A long job is then slowed by at most `K·fast`
//!   of overlapping fast work at a time, not `fast`.
//! - **Beside** (`beside=long|any`, default `long`). With `any`, a fast slot
//!   opens once all the device's regular slots are taken by any jobs, short
//!   ones included; with `long`, only when at least one of them runs a long
//!   job. So with `any` a short job never waits for another short job to end,
//!   as long as a fast slot is free — which is what one runtime per model
//!   (`independent`) gives the lightest model on a host whose devices time-slice.
//!
//! Long jobs never take a fast slot either way, so a job that is never short
//! sees the fast lane only through the overlap's cost.

use std::fmt;

/// What a fast job may run beside (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Beside {
    /// Only beside a long job in a regular slot (the first rule).
    #[default]
    Long,
    /// Beside any job that fills the regular slots.
    Any,
}

impl fmt::Display for Beside {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Long => "long",
            Self::Any => "any",
        })
    }
}

/// The fast lane's shape (module docs). The default is one fast slot per
/// device, beside a long job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastShape {
    /// Fast slots per device (>= 1).
    pub width: u32,
    /// What a fast job may run beside.
    pub beside: Beside,
}

impl Default for FastShape {
    fn default() -> Self {
        Self {
            width: 1,
            beside: Beside::Long,
        }
    }
}

impl FastShape {
    /// Whether a device with all regular slots taken, `long` of them by long
    /// jobs and `fast` fast jobs running, has an open fast slot.
    pub fn open(&self, long: u32, fast: u32) -> bool {
        fast < self.width && (long > 0 || self.beside == Beside::Any)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_rule_is_the_default() {
        let shape = FastShape::default();
        assert!(shape.open(1, 0));
        assert!(!shape.open(0, 0), "no long job runs");
        assert!(!shape.open(1, 1), "the one fast slot is taken");
    }

    #[test]
    fn width_counts_fast_jobs() {
        let shape = FastShape {
            width: 2,
            beside: Beside::Long,
        };
        assert!(shape.open(1, 1));
        assert!(!shape.open(1, 2));
        assert!(!shape.open(0, 1));
    }

    #[test]
    fn beside_any_opens_without_a_long_job() {
        let shape = FastShape {
            width: 1,
            beside: Beside::Any,
        };
        assert!(shape.open(0, 0));
        assert!(!shape.open(0, 1));
    }
}
