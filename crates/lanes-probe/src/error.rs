//! Errors of the prober: each has a stable code (the `code` field of
//! `lanes.errors.LanesError` on the Python side) and a one-line message that
//! names the problem — for a targets file, the file and the line.

use thiserror::Error;

/// A probe run that cannot start, or an input that cannot be used.
#[derive(Debug, Error)]
pub enum ProbeError {
    /// An option is out of range or inconsistent with another.
    #[error("{0}")]
    BadArgument(String),
    /// The targets file has a line that is not `host:port [name]`, a duplicate,
    /// a name that does not resolve, or no target at all.
    #[error("{0}")]
    Targets(String),
    /// Reading a local file failed.
    #[error("{0}")]
    Io(String),
    /// A socket the prober needs could not be opened or set up.
    #[error("{0}")]
    Socket(String),
    /// The metrics endpoint could not listen on its port.
    #[error("{0}")]
    Metrics(String),
}

impl ProbeError {
    /// The stable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::BadArgument(_) => "bad_argument",
            Self::Targets(_) => "targets_invalid",
            Self::Io(_) => "io_error",
            Self::Socket(_) => "socket_failed",
            Self::Metrics(_) => "metrics_bind_failed",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable() {
        let cases = [
            (ProbeError::BadArgument(String::new()), "bad_argument"),
            (ProbeError::Targets(String::new()), "targets_invalid"),
            (ProbeError::Io(String::new()), "io_error"),
            (ProbeError::Socket(String::new()), "socket_failed"),
            (ProbeError::Metrics(String::new()), "metrics_bind_failed"),
        ];
        for (error, code) in cases {
            assert_eq!(error.code(), code);
        }
    }
}
