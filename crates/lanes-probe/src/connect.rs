//! `connect` mode: a full TCP connect per probe, without privilege.
//!
//! Each probe is a non-blocking connect bounded by the probe timeout; at most
//! `concurrency` are in flight, the next starting as one ends. A connect that
//! completes is closed at once with a zero linger, so it ends with a reset and
//! leaves no `TIME_WAIT` behind (as HAProxy's checks do). How a result is
//! read, by [`classify`]:
//! - connected → accepted; `ECONNREFUSED` or `ECONNRESET` → refused;
//! - the timeout, `ETIMEDOUT`, `EHOSTUNREACH`, `ENETUNREACH`, `EHOSTDOWN`,
//!   `ENETDOWN` → timeout (the target or the path to it is gone);
//! - anything else (`EMFILE`, `EADDRNOTAVAIL`, `ENOBUFS`, ...) is our side's
//!   trouble, not the target's → unknown, and counted as an error.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use nix::libc;
use tokio::net::TcpStream;
use tokio::task::JoinSet;

use crate::state::Outcome;

/// What one `connect` round did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnectRound {
    /// Connects started.
    pub attempts: u64,
    /// Connected.
    pub accepted: u64,
    /// Refused or reset.
    pub refused: u64,
    /// Timed out or unreachable.
    pub timeouts: u64,
    /// Failed on our side.
    pub errors: u64,
    /// The first of those errors, for the log.
    pub first_error: Option<String>,
}

/// How a connect's result reads as a probe outcome (module docs).
pub fn classify(result: Option<io::Result<()>>) -> Outcome {
    match result {
        None => Outcome::Timeout,
        Some(Ok(())) => Outcome::Accepted,
        Some(Err(e)) => match e.raw_os_error() {
            Some(libc::ECONNREFUSED | libc::ECONNRESET) => Outcome::Refused,
            Some(
                libc::ETIMEDOUT
                | libc::EHOSTUNREACH
                | libc::ENETUNREACH
                | libc::EHOSTDOWN
                | libc::ENETDOWN,
            ) => Outcome::Timeout,
            _ => match e.kind() {
                io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionReset => {
                    Outcome::Refused
                }
                io::ErrorKind::TimedOut => Outcome::Timeout,
                _ => Outcome::Unknown,
            },
        },
    }
}

async fn probe(addr: SocketAddr, timeout: Duration) -> (Outcome, Option<String>) {
    match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
        Err(_) => (Outcome::Timeout, None),
        Ok(Ok(stream)) => {
            // Reset on drop: nothing lingers, no TIME_WAIT.
            let _ = stream.set_zero_linger();
            (Outcome::Accepted, None)
        }
        Ok(Err(e)) => {
            let text = e.to_string();
            let outcome = classify(Some(Err(e)));
            (outcome, (outcome == Outcome::Unknown).then_some(text))
        }
    }
}

/// Probes `targets` (`(index, address)`), writing each outcome at its index.
pub async fn round(
    targets: &[(usize, SocketAddr)],
    timeout: Duration,
    concurrency: usize,
    outcomes: &mut [Outcome],
) -> ConnectRound {
    let mut stats = ConnectRound::default();
    let mut tasks = JoinSet::new();
    let mut next = targets.iter();
    loop {
        while tasks.len() < concurrency.max(1) {
            let Some(&(index, addr)) = next.next() else {
                break;
            };
            stats.attempts += 1;
            tasks.spawn(async move { (index, probe(addr, timeout).await) });
        }
        let Some(joined) = tasks.join_next().await else {
            break;
        };
        let Ok((index, (outcome, error))) = joined else {
            stats.errors += 1;
            continue;
        };
        outcomes[index] = outcome;
        match outcome {
            Outcome::Accepted => stats.accepted += 1,
            Outcome::Refused => stats.refused += 1,
            Outcome::Timeout => stats.timeouts += 1,
            Outcome::Unknown => {
                stats.errors += 1;
                if stats.first_error.is_none() {
                    stats.first_error = error;
                }
            }
        }
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_table() {
        let os = |code| Some(Err(io::Error::from_raw_os_error(code)));
        let cases = [
            (None, Outcome::Timeout),
            (Some(Ok(())), Outcome::Accepted),
            (os(libc::ECONNREFUSED), Outcome::Refused),
            (os(libc::ECONNRESET), Outcome::Refused),
            (os(libc::ETIMEDOUT), Outcome::Timeout),
            (os(libc::EHOSTUNREACH), Outcome::Timeout),
            (os(libc::ENETUNREACH), Outcome::Timeout),
            (os(libc::EMFILE), Outcome::Unknown),
            (os(libc::EADDRNOTAVAIL), Outcome::Unknown),
            (Some(Err(io::Error::other("odd"))), Outcome::Unknown),
        ];
        for (result, want) in cases {
            let what = format!("{result:?}");
            assert_eq!(classify(result), want, "{what}");
        }
    }
}
