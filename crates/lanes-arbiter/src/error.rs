//! Errors of the arbiter: each has a stable code (the `code` field of
//! `lanes.errors.LanesError` on the Python side) and a one-line message that
//! names the bad value and what is allowed.

use thiserror::Error;

/// An arbiter that cannot start, or that failed while running.
#[derive(Debug, Error)]
pub enum ArbiterError {
    /// An option is out of range or inconsistent with another.
    #[error("{0}")]
    BadArgument(String),
    /// The socket path is taken by a live daemon, or is not a socket.
    #[error("{0}")]
    SocketInUse(String),
    /// The socket could not be created, bound or given its mode and owner.
    #[error("{0}")]
    Socket(String),
    /// The metrics endpoint could not listen on its port.
    #[error("{0}")]
    Metrics(String),
    /// The timeline file could not be written.
    #[error("{0}")]
    Output(String),
}

impl ArbiterError {
    /// The stable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::BadArgument(_) => "bad_argument",
            Self::SocketInUse(_) => "socket_in_use",
            Self::Socket(_) => "socket_failed",
            Self::Metrics(_) => "metrics_bind_failed",
            Self::Output(_) => "output_failed",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable() {
        let cases = [
            (ArbiterError::BadArgument(String::new()), "bad_argument"),
            (ArbiterError::SocketInUse(String::new()), "socket_in_use"),
            (ArbiterError::Socket(String::new()), "socket_failed"),
            (ArbiterError::Metrics(String::new()), "metrics_bind_failed"),
            (ArbiterError::Output(String::new()), "output_failed"),
        ];
        for (error, code) in cases {
            assert_eq!(error.code(), code);
        }
    }
}
