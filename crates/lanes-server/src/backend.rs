//! What runs a batch: the seam between the driver and an execution engine.
//!
//! A [`Backend`] runs one batch of one model on one device, on that device's
//! executor thread. It gets the batch's request inputs in arrival order and
//! returns exactly one output per input, in the same order; an `Err` fails
//! every request of the batch (500), and so does a panic, which the executor
//! catches so that the device keeps serving. A batch whose estimate is
//! tiny may instead run on the driver's thread when [`Backend::inline`]
//! allows it.

use lanes_policy::{DeviceId, JobId};
use lanes_serving::ModelIx;

/// The batch being run, for the backend's own use (which session, which device).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchInfo {
    pub job: JobId,
    pub model: ModelIx,
    pub device: DeviceId,
    /// Rows of all requests together.
    pub rows: u32,
}

/// Runs batches; shared by every executor thread of every device.
pub trait Backend: Send + Sync + 'static {
    /// One request's input (decoded tensors).
    type Input: Send + 'static;
    /// One request's output.
    type Output: Send + 'static;

    /// Runs `inputs` (one per request, arrival order) as one batch; one output
    /// per input, in order, or a message saying why the model failed.
    fn run(&self, batch: &BatchInfo, inputs: Vec<Self::Input>)
        -> Result<Vec<Self::Output>, String>;

    /// Whether `batch` may run on the driver's own thread instead of its
    /// device's executor (see [`crate::driver`]'s inline rule): only for an
    /// engine that holds no lock another batch waits on (no GIL) and needs no
    /// per-thread state. No by default.
    fn inline(&self, _batch: &BatchInfo) -> bool {
        false
    }
}
