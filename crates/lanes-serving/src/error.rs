//! The one coded error type of serving: why a request is refused or failed.
//!
//! Each variant has a stable machine-readable [`ServeError::code`] and one
//! HTTP status ([`ServeError::http_status`]); the front ends map statuses to
//! their protocol in one place from these, never from message text.

use thiserror::Error;

use lanes_policy::Nanos;

/// A request the server answers with an error.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ServeError {
    /// The model's queue holds its bound of rows (queued or admitted).
    #[error(
        "model '{model}': queue full ({bound} rows = max_enqueued_batches {max_enqueued_batches} \
         x max_batch_size {max_batch_size}); retry later"
    )]
    QueueFull {
        model: String,
        bound: u64,
        max_enqueued_batches: u32,
        max_batch_size: u32,
    },
    /// The request's deadline passed while it was queued; it never ran.
    #[error("model '{model}': deadline exceeded after {waited_ms:.1} ms in the queue; not run")]
    DeadlineExceeded { model: String, waited_ms: f64 },
    /// The request cannot finish by its deadline: refused at admission
    /// (`edf`, `queued` false) or dropped from the queue (`edf`, or the
    /// `finish` deadline rule when its batch was cut; `queued` true).
    #[error("model '{model}': predicted to miss its deadline; {}", if *.queued { "dropped, not run" } else { "not queued" })]
    DeadlineUnreachable { model: String, queued: bool },
    /// (`External`) the grant source refused the request's batch.
    #[error("model '{model}': {reason}")]
    Refused { model: String, reason: String },
    /// A model the state cannot serve (no device holds it, or too many models).
    #[error("model '{model}': {reason}")]
    BadModel { model: String, reason: String },
    /// A request for a model index the state does not have.
    #[error("no model with index {model}")]
    UnknownModel { model: u32 },
    /// A request with no rows, or more than the queue can ever hold.
    #[error("model '{model}': a request of {rows} rows; {allowed}")]
    BadRows {
        model: String,
        rows: u32,
        allowed: &'static str,
    },
}

impl ServeError {
    /// The stable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::QueueFull { .. } => "queue_full",
            Self::DeadlineExceeded { .. } => "deadline_exceeded",
            Self::DeadlineUnreachable { .. } => "deadline_unreachable",
            Self::Refused { .. } => "grant_refused",
            Self::BadModel { .. } => "bad_model",
            Self::UnknownModel { .. } => "model_not_found",
            Self::BadRows { .. } => "bad_request",
        }
    }

    /// The HTTP status the front ends answer with (design.md §3).
    pub fn http_status(&self) -> u16 {
        match self {
            Self::QueueFull { .. } => 429,
            Self::DeadlineExceeded { .. } | Self::DeadlineUnreachable { .. } => 504,
            Self::UnknownModel { .. } => 404,
            Self::Refused { .. } => 503,
            Self::BadRows { .. } => 400,
            Self::BadModel { .. } => 500,
        }
    }

    pub(crate) fn expired(model: &str, arrival: Nanos, now: Nanos) -> Self {
        Self::DeadlineExceeded {
            model: model.to_owned(),
            waited_ms: now.saturating_sub(arrival) as f64 / 1e6,
        }
    }
}
