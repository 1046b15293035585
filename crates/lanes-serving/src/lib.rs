//! The serving state of lanes: one pure type that decides everything a
//! server does with a request between its edge and a device.
//!
//! - [`queue`]: one model's queue — the admission bound, readiness, late
//!   batch formation, expiry and `edf`'s unreachable requests.
//! - [`state`]: [`ServingState`] — the models' queues, the one job standing
//!   for each ready model's next batch, grants from the policy engine (shared
//!   or per model) or from an external arbiter, and the [`Action`]s a driver
//!   carries out: start batch B on device D, fail request R with error E,
//!   ask for or give back a grant. [`ServingState::next_wake`] says when time
//!   alone will have something to do.
//! - [`deadline_rule`]: [`DeadlineRule`] — whether a request must start or
//!   finish by its deadline.
//! - [`error`]: [`ServeError`], the one coded error type, with its HTTP status.
//!
//! Like `lanes-policy`, it never reads a clock: every method takes `now`, so
//! the live server (tokio), the simulator (virtual clock) and the tests
//! (tables) run the same decisions.

pub mod deadline_rule;
pub mod error;
pub mod queue;
pub mod state;

pub use deadline_rule::DeadlineRule;
pub use error::ServeError;
pub use queue::{Batching, ModelQueue, Queued, RequestId};
pub use state::{Action, Batch, Grants, ModelConfig, ModelIx, Refusal, ServingState};
