//! Errors of the load engine: each has a stable code (the `code` field of
//! `lanes.errors.LanesError` on the Python side) and a one-line message that
//! names the problem.

use thiserror::Error;

/// A run that cannot start, or an input that cannot be used.
#[derive(Debug, Error)]
pub enum LoadError {
    /// The target URL cannot be parsed or uses an unsupported scheme.
    #[error("{0}")]
    BadUrl(String),
    /// An option is out of range or inconsistent with another.
    #[error("{0}")]
    BadArgument(String),
    /// A corpus file, line or entry is unusable.
    #[error("{0}")]
    Corpus(String),
    /// The target does not accept connections.
    #[error("{0}")]
    Connect(String),
    /// Reading or writing a local file failed.
    #[error("{0}")]
    Io(String),
    /// A result cannot be decoded or merged.
    #[error("{0}")]
    Result(String),
}

impl LoadError {
    /// The stable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::BadUrl(_) => "bad_url",
            Self::BadArgument(_) => "bad_argument",
            Self::Corpus(_) => "corpus_invalid",
            Self::Connect(_) => "connect_failed",
            Self::Io(_) => "io_error",
            Self::Result(_) => "result_invalid",
        }
    }
}
