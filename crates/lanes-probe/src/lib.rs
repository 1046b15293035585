//! lanes-probe: half-open TCP health probing for a whole fleet, every second,
//! without losing replies — the engine behind `lanes probe`.
//!
//! The pieces, each a module named after its concept:
//! - [`targets`]: the targets file (`host:port [name]` per line) and its watch;
//! - [`state`]: the per-target state machine (up / down / refused, with
//!   hysteresis and flap damping), pure and table-tested;
//! - [`syn`]: half-open probes — SYNs from a raw socket ([`packet`], with
//!   sequence numbers from [`cookie`]), replies from a packet socket behind a
//!   kernel BPF [`filter`], drained completely at every wake-up, with a
//!   receive buffer sized for the fleet and kernel drop counts ([`sockets`]);
//! - [`connect`]: plain connects, for `connect` mode and the fallback when
//!   raw sockets are not allowed;
//! - [`engine`]: the round loop; [`monitor`]: the [`Monitor`] handle that runs it on a thread;
//!   [`message`]: what it reports; [`metrics`]: Prometheus counters and their text;
//! - [`config`]: the one typed configuration; [`error`]: errors with stable codes.
//!
//! ```no_run
//! use lanes_probe::{Monitor, ProbeSpec, Received};
//! let spec = ProbeSpec { targets: "fleet.txt".into(), rounds: Some(3), ..ProbeSpec::default() };
//! let monitor = Monitor::start(spec.build()?)?;
//! loop {
//!     match monitor.recv(std::time::Duration::from_secs(1)) {
//!         Received::Message(m) => println!("{m:?}"),
//!         Received::Empty => {}
//!         Received::Finished => break,
//!     }
//! }
//! monitor.join()?;
//! # Ok::<(), lanes_probe::ProbeError>(())
//! ```

pub mod config;
pub mod connect;
pub mod cookie;
pub mod engine;
pub mod error;
pub mod filter;
pub mod message;
pub mod metrics;
pub mod monitor;
pub mod packet;
pub mod sockets;
pub mod state;
pub mod syn;
pub mod targets;

pub use config::{Mode, ProbeConfig, ProbeSpec};
pub use error::ProbeError;
pub use message::{Event, Level, Message, Notice, RoundReport};
pub use monitor::{Monitor, Received};
pub use state::{Outcome, State};
