//! The lanes scheduling policy engine.
//!
//! One engine decides which batch runs next on which device, for the simulator
//! (`lanes-sim`, virtual clock), the arbiter daemon and the live server. It is
//! pure: no I/O, no threads, and it never reads a clock — every call that
//! depends on time takes `now` as an argument, so the same code runs on a live
//! and a virtual clock and every test is deterministic.
//!
//! - [`Job`]: one batch of one model — batch size, estimated cost, arrival,
//!   optional hard deadline and soft target, eligible devices.
//! - [`Policy`]: the order of ready jobs, chosen by name (`fifo`, `limit:K`,
//!   `sjf`, `fair`, `lanes`, `edf`); see [`policy`] for each rule.
//! - [`Scheduler`]: the ready queue plus the devices. It is work conserving: a
//!   job never waits while an eligible device has a free slot, and the device
//!   for each dispatch is chosen at that instant.
//! - [`CostModel`]: run-time estimates per (model, batch size), learned online.
//! - [`round_nanos`]: `f64::round` to whole nanoseconds, without its library call.
//!
//! Times and costs are integer nanoseconds ([`Nanos`]) on the caller's clock.

pub mod error;
pub mod estimator;
pub mod fast_shape;
pub mod gate;
pub mod job;
pub mod policy;
mod queue;
pub mod round;
pub mod scheduler;
mod share;

pub use error::PolicyError;
pub use estimator::{CostConfig, CostModel, Prior};
pub use fast_shape::{Beside, FastShape};
pub use gate::FastGate;
pub use job::{DeviceId, DeviceSet, Job, JobId, ModelId};
pub use policy::Policy;
pub use round::round_nanos;
pub use scheduler::{Completed, Decision, DeviceSpec, DropReason, Scheduler};

/// A point in time or a duration, in nanoseconds on the caller's clock.
pub type Nanos = u64;

/// Nanoseconds per millisecond, for converting user-facing values.
pub const NANOS_PER_MS: f64 = 1e6;
