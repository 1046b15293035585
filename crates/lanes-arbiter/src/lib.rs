//! lanes-arbiter: the per-host daemon behind `lanes arbiter` — one policy
//! engine (crates/lanes-policy) granting device slots to every process of a
//! host over a Unix stream socket, so services in any language share GPUs
//! without overlapping work on a device.
//!
//! The pieces, each a module named after its concept:
//! - [`protocol`]: the wire protocol's messages and pure codec (docs/arbiter-protocol.md);
//! - [`state`]: every decision — acquire, grant, release, disconnect, revoke,
//!   deadline expiry — as methods of a plain [`State`], tested without async;
//! - [`metrics`]: counters and their OpenMetrics text; [`timeline`]: the
//!   Chrome-trace device timeline;
//! - [`daemon`]: the socket, the actor task that owns the `State`, the
//!   connection tasks; [`handle`]: the [`Arbiter`] handle that runs them on a thread;
//! - [`config`]: the one typed configuration; [`error`]: errors with stable codes.
//!
//! The user guide is docs/arbiter.md.

pub mod config;
pub mod daemon;
pub mod error;
pub mod handle;
pub mod metrics;
pub mod protocol;
pub mod state;
pub mod timeline;

pub use config::ArbiterSpec;
pub use error::ArbiterError;
pub use handle::Arbiter;
pub use protocol::{decode, encode, encode_frame, frame_len, Message, ProtocolError};
pub use state::State;
