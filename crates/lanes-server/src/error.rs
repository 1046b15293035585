//! The coded errors a client of the driver gets back.
//!
//! Every variant has a stable machine-readable [`ServerError::code`] and one
//! HTTP status ([`ServerError::http_status`]); the serving state's own
//! refusals ([`ServeError`]) keep theirs.

use lanes_serving::ServeError;
use thiserror::Error;

/// Why a request was not answered with an output.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ServerError {
    /// Refused or failed by the serving state (queue full, deadline, …).
    #[error(transparent)]
    Serve(#[from] ServeError),
    /// The model failed on the request's batch (an error or a panic).
    #[error("model '{model}' failed: {message}")]
    ModelFailed { model: String, message: String },
    /// The server is draining or stopped: no new work is taken.
    #[error("the server is shutting down; retry on another")]
    ShuttingDown,
    /// A request argument outside its range (e.g. `GET /v2/trace?seconds=`).
    #[error("{message}")]
    BadArgument { message: String },
    /// A file the server writes (the `--trace` timeline) could not be written.
    #[error("{message}")]
    OutputFailed { message: String },
}

impl ServerError {
    /// The stable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Serve(e) => e.code(),
            Self::ModelFailed { .. } => "model_failed",
            Self::ShuttingDown => "shutting_down",
            Self::BadArgument { .. } => "bad_argument",
            Self::OutputFailed { .. } => "output_failed",
        }
    }

    /// The HTTP status the front ends answer with.
    pub fn http_status(&self) -> u16 {
        match self {
            Self::Serve(e) => e.http_status(),
            Self::ModelFailed { .. } => 500,
            Self::ShuttingDown => 503,
            Self::BadArgument { .. } => 400,
            Self::OutputFailed { .. } => 500,
        }
    }
}

/// Why the driver could not start.
#[derive(Debug, Error)]
pub enum StartError {
    /// The policy or the device list was refused.
    #[error(transparent)]
    Policy(#[from] lanes_policy::PolicyError),
    /// A model the serving state cannot serve.
    #[error(transparent)]
    Model(#[from] ServeError),
    /// The executor threads could not be started.
    #[error("starting the device executor threads: {0}")]
    Threads(#[from] std::io::Error),
    /// `Grants::External` without an arbiter to take grants from, or an
    /// arbiter with another grant source.
    #[error("grants come from an arbiter exactly when one is configured (DriverConfig.arbiter)")]
    ExternalGrants,
    /// The folder of the `--trace` file does not exist.
    #[error("trace = '{path}': folder '{folder}' does not exist (see --trace)")]
    TraceFolder { path: String, folder: String },
}

impl StartError {
    /// The stable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Policy(_) => "bad_policy",
            Self::Model(e) => e.code(),
            Self::Threads(_) => "threads_failed",
            Self::ExternalGrants => "bad_argument",
            Self::TraceFolder { .. } => "bad_argument",
        }
    }
}
