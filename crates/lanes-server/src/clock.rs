//! The driver's clock: nanoseconds since the driver started, on tokio's clock
//! (so `tokio::time::pause` drives it in tests). The serving state never reads
//! a clock; the driver reads this one and passes `now` in.

use std::time::Duration;

use lanes_policy::Nanos;
use tokio::time::Instant;

/// Nanoseconds since an epoch taken at creation.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    epoch: Instant,
}

impl Clock {
    /// A clock whose zero is now.
    pub fn start() -> Self {
        Self {
            epoch: Instant::now(),
        }
    }

    /// Nanoseconds since the epoch.
    pub fn now(&self) -> Nanos {
        self.epoch.elapsed().as_nanos() as Nanos
    }

    /// The instant `t` nanoseconds after the epoch.
    pub fn instant(&self, t: Nanos) -> Instant {
        self.epoch + Duration::from_nanos(t)
    }
}

/// Sleeps until `at`; forever when there is no `at` (a `select!` arm for an
/// optional wake-up).
pub(crate) async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
