//! Request log records, off the hot path: the REST front end hands one
//! [`LogRecord`] per request (with the access log on) and one per 500 (a
//! model failure, always) to a bounded channel; whoever owns the server's
//! logging (`lanes serve`'s Python logging) drains it on its own thread.
//!
//! **Rule.** A request never waits on a log: when the channel is full the
//! record is dropped and counted ([`AccessLog::dropped`]).

use std::sync::atomic::{AtomicU64, Ordering};

/// The records the channel holds before new ones are dropped.
pub const CAPACITY: usize = 10_000;

/// One request as the logs see it.
#[derive(Debug, Clone, PartialEq)]
pub struct LogRecord {
    pub method: String,
    pub path: String,
    pub status: u16,
    pub duration_ms: f64,
    /// The model the path names, if any.
    pub model: Option<String>,
    /// A 500's error message (empty otherwise).
    pub error: String,
}

/// The sending side, held by the front end.
#[derive(Debug)]
pub struct AccessLog {
    /// One line per request (`--access-log`); 500s are always sent.
    pub every_request: bool,
    tx: flume::Sender<LogRecord>,
    rx: flume::Receiver<LogRecord>,
    dropped: AtomicU64,
}

impl AccessLog {
    pub fn new(every_request: bool) -> Self {
        let (tx, rx) = flume::bounded(CAPACITY);
        Self {
            every_request,
            tx,
            rx,
            dropped: AtomicU64::new(0),
        }
    }

    /// Whether a request answered `status` is logged.
    pub fn wants(&self, status: u16) -> bool {
        self.every_request || status == 500
    }

    /// Hands `record` over, or drops and counts it when the channel is full.
    pub fn send(&self, record: LogRecord) {
        if self.tx.try_send(record).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Up to `max` records, waiting up to `wait` for the first.
    pub fn take(&self, max: usize, wait: std::time::Duration) -> Vec<LogRecord> {
        let mut out = Vec::new();
        if let Ok(first) = self.rx.recv_timeout(wait) {
            out.push(first);
            while out.len() < max {
                match self.rx.try_recv() {
                    Ok(r) => out.push(r),
                    Err(_) => break,
                }
            }
        }
        out
    }
}
