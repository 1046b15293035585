//! The recorder: what each sender thread measured, kept in histograms so that
//! memory does not grow with the run's length, and merged exactly across
//! threads (and, serialized, across processes).
//!
//! Per send it keeps three times, all in nanoseconds from the run's start:
//! `intended` (the schedule's time; equal to `sent` in closed loop), `sent`
//! (when the request left) and `done` (when the reply ended). Then
//! - latency = `done - intended`: what a user arriving on schedule waited,
//!   free of coordinated omission;
//! - service time = `done - sent`: what the server took once asked;
//! - send delay = `sent - intended`; a send is *late* when its delay exceeds
//!   the `late_after` threshold.
//!
//! Histograms hold microseconds with 3 significant digits (HdrHistogram,
//! auto-resizing). The per-second series keeps one coarser histogram
//! (2 significant digits) per second of completion time. The sends series
//! counts the requests that actually left in each [`SEND_BIN_NS`] bin of
//! their `sent` time (4 bytes a bin: 400 bytes per second of run).

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

/// Significant digits of the run-wide histograms.
pub const SIGFIG: u8 = 3;
/// Significant digits of the per-second histograms.
pub const SIGFIG_SECOND: u8 = 2;
/// Width of a bin of the sends series, ns (10 ms).
pub const SEND_BIN_NS: u64 = 10_000_000;

/// Why a request produced no reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The connection could not be opened.
    Connect,
    /// Reading the reply failed or the peer closed or reset the connection.
    Read,
    /// Writing the request failed.
    Write,
    /// No complete reply within the request timeout.
    Timeout,
}

/// Counts of failed requests by class; `status` counts replies with status >= 400.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Errors {
    /// Connections that could not be opened.
    pub connect: u64,
    /// Read failures, resets and early closes.
    pub read: u64,
    /// Write failures.
    pub write: u64,
    /// Replies with status >= 400.
    pub status: u64,
    /// Requests without a complete reply within the timeout.
    pub timeout: u64,
}

impl Errors {
    /// All errors together.
    pub fn total(&self) -> u64 {
        self.connect + self.read + self.write + self.status + self.timeout
    }

    fn add(&mut self, o: &Errors) {
        self.connect += o.connect;
        self.read += o.read;
        self.write += o.write;
        self.status += o.status;
        self.timeout += o.timeout;
    }
}

/// One second of completions.
#[derive(Debug, Clone)]
pub struct Second {
    /// Latency of the replies completed in this second (µs).
    pub latency: Histogram<u64>,
    /// Replies completed.
    pub requests: u64,
    /// Errors (of every class) that ended in this second.
    pub errors: u64,
}

impl Second {
    pub(crate) fn new() -> Self {
        Self {
            latency: new_histogram(SIGFIG_SECOND),
            requests: 0,
            errors: 0,
        }
    }
}

/// A new auto-resizing histogram of microseconds.
pub fn new_histogram(sigfig: u8) -> Histogram<u64> {
    let mut h = Histogram::new(sigfig).expect("sigfig is 2 or 3");
    h.auto(true);
    h
}

/// Records `value`, growing the histogram as needed. (`saturating_record`
/// would clamp to the current, small range instead of growing it.)
#[inline]
pub fn put(h: &mut Histogram<u64>, value: u64) {
    if h.record(value).is_err() {
        h.saturating_record(value);
    }
}

/// Everything one thread (or a whole merged run) measured.
#[derive(Debug, Clone)]
pub struct Recorder {
    /// Latency from the intended send time, µs.
    pub latency: Histogram<u64>,
    /// Service time from the actual send, µs.
    pub service: Histogram<u64>,
    /// Send delay (actual - intended), µs.
    pub send_delay: Histogram<u64>,
    /// Per-second series by completion time.
    pub seconds: Vec<Second>,
    /// Errors by class.
    pub errors: Errors,
    /// Replies by status code (frame replies count under 0).
    pub status_codes: BTreeMap<u16, u64>,
    /// gRPC replies by `grpc-status` code.
    pub grpc_codes: BTreeMap<u8, u64>,
    /// Requests that left (whatever became of them).
    pub sent: u64,
    /// Requests that left later than the threshold.
    pub late: u64,
    /// Request bytes written (bodies and frames; not HTTP headers).
    pub bytes_sent: u64,
    /// Reply bytes read (bodies and frames; not HTTP headers).
    pub bytes_received: u64,
    /// `(index, intended, sent)` per send, in ns, when asked for.
    pub send_log: Option<Vec<[u64; 3]>>,
    /// Requests sent in each [`SEND_BIN_NS`] bin from the run's start, by `sent` time.
    pub sends: Vec<u32>,
    late_after_ns: u64,
}

#[inline]
fn us(ns: u64) -> u64 {
    (ns / 1_000).max(1)
}

impl Recorder {
    /// An empty recorder; sends delayed more than `late_after_ns` count as late.
    pub fn new(late_after_ns: u64, send_log: bool) -> Self {
        Self {
            latency: new_histogram(SIGFIG),
            service: new_histogram(SIGFIG),
            send_delay: new_histogram(SIGFIG),
            seconds: Vec::new(),
            errors: Errors::default(),
            status_codes: BTreeMap::new(),
            grpc_codes: BTreeMap::new(),
            sent: 0,
            late: 0,
            bytes_sent: 0,
            bytes_received: 0,
            send_log: send_log.then(Vec::new),
            sends: Vec::new(),
            late_after_ns,
        }
    }

    /// Notes that slot `index` left at `sent` (intended at `intended`).
    #[inline]
    pub fn on_send(&mut self, index: u64, intended: u64, sent: u64, bytes: u64) {
        self.sent += 1;
        self.bytes_sent += bytes;
        let delay = sent.saturating_sub(intended);
        if delay > self.late_after_ns {
            self.late += 1;
        }
        put(&mut self.send_delay, delay / 1_000);
        let bin = (sent / SEND_BIN_NS) as usize;
        if self.sends.len() <= bin {
            self.sends.resize(bin + 1, 0);
        }
        self.sends[bin] += 1;
        if let Some(log) = &mut self.send_log {
            log.push([index, intended, sent]);
        }
    }

    /// Counts a gRPC reply's `grpc-status` (besides [`Self::on_reply`]).
    #[inline]
    pub fn on_grpc(&mut self, code: u8) {
        *self.grpc_codes.entry(code).or_insert(0) += 1;
    }

    /// Records a reply with `status` (0 for frames) that ended at `done`.
    #[inline]
    pub fn on_reply(&mut self, intended: u64, sent: u64, done: u64, status: u16, bytes: u64) {
        let latency = us(done.saturating_sub(intended));
        put(&mut self.latency, latency);
        put(&mut self.service, us(done.saturating_sub(sent)));
        self.bytes_received += bytes;
        *self.status_codes.entry(status).or_insert(0) += 1;
        let second = self.second(done);
        second.requests += 1;
        put(&mut second.latency, latency);
        if status >= 400 {
            self.errors.status += 1;
            self.second(done).errors += 1;
        }
    }

    /// Records a request that ended at `done` without a reply.
    #[inline]
    pub fn on_failure(&mut self, failure: Failure, done: u64) {
        match failure {
            Failure::Connect => self.errors.connect += 1,
            Failure::Read => self.errors.read += 1,
            Failure::Write => self.errors.write += 1,
            Failure::Timeout => self.errors.timeout += 1,
        }
        self.second(done).errors += 1;
    }

    fn second(&mut self, done: u64) -> &mut Second {
        let i = (done / 1_000_000_000) as usize;
        if self.seconds.len() <= i {
            self.seconds.resize_with(i + 1, Second::new);
        }
        &mut self.seconds[i]
    }

    /// Replies received (any status).
    pub fn replies(&self) -> u64 {
        self.latency.len()
    }

    /// Adds `other` into `self`; the result equals one recorder that saw both.
    pub fn merge(&mut self, other: &Recorder) {
        let add = |a: &mut Histogram<u64>, b: &Histogram<u64>| {
            a.add(b)
                .expect("auto-resizing histograms of equal precision merge");
        };
        add(&mut self.latency, &other.latency);
        add(&mut self.service, &other.service);
        add(&mut self.send_delay, &other.send_delay);
        if self.seconds.len() < other.seconds.len() {
            self.seconds.resize_with(other.seconds.len(), Second::new);
        }
        for (mine, theirs) in self.seconds.iter_mut().zip(&other.seconds) {
            add(&mut mine.latency, &theirs.latency);
            mine.requests += theirs.requests;
            mine.errors += theirs.errors;
        }
        self.errors.add(&other.errors);
        for (code, n) in &other.status_codes {
            *self.status_codes.entry(*code).or_insert(0) += n;
        }
        for (code, n) in &other.grpc_codes {
            *self.grpc_codes.entry(*code).or_insert(0) += n;
        }
        self.sent += other.sent;
        self.late += other.late;
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        add_bins(&mut self.sends, &other.sends, 0);
        if let Some(theirs) = &other.send_log {
            self.send_log
                .get_or_insert_with(Vec::new)
                .extend_from_slice(theirs);
        }
    }
}

/// Adds `theirs` into `mine` element-wise, `theirs[0]` onto `mine[offset]`.
pub fn add_bins(mine: &mut Vec<u32>, theirs: &[u32], offset: usize) {
    if mine.len() < offset + theirs.len() {
        mine.resize(offset + theirs.len(), 0);
    }
    for (m, t) in mine[offset..].iter_mut().zip(theirs) {
        *m += t;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg64Mcg;

    /// Feeds the same random events to one recorder and to `parts` recorders.
    fn split_run(parts: usize) -> (Recorder, Recorder) {
        let mut rng = Pcg64Mcg::seed_from_u64(5);
        let mut whole = Recorder::new(1_000_000, true);
        let mut split: Vec<Recorder> = (0..parts).map(|_| Recorder::new(1_000_000, true)).collect();
        for i in 0..50_000u64 {
            let intended = i * 100_000;
            let sent = intended + rng.random_range(0..3_000_000);
            let done = sent + rng.random_range(10_000..900_000_000);
            let part = &mut split[rng.random_range(0..parts)];
            for r in [&mut whole, part] {
                r.on_send(i, intended, sent, 10);
                match i % 50 {
                    0 => r.on_failure(Failure::Timeout, done),
                    1 => r.on_failure(Failure::Read, done),
                    2 => r.on_reply(intended, sent, done, 503, 7),
                    _ => r.on_reply(intended, sent, done, 200, 7),
                }
            }
        }
        let mut merged = Recorder::new(1_000_000, false);
        for r in &split {
            merged.merge(r);
        }
        (whole, merged)
    }

    #[test]
    fn merging_thread_recorders_equals_one_recorder() {
        let (whole, merged) = split_run(3);
        assert_eq!(whole.latency, merged.latency);
        assert_eq!(whole.service, merged.service);
        assert_eq!(whole.send_delay, merged.send_delay);
        for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(
                whole.latency.value_at_quantile(q),
                merged.latency.value_at_quantile(q)
            );
        }
        assert_eq!(whole.errors, merged.errors);
        assert_eq!(whole.status_codes, merged.status_codes);
        assert_eq!((whole.sent, whole.late), (merged.sent, merged.late));
        assert_eq!(whole.sends, merged.sends);
        assert_eq!(
            whole.sends.iter().map(|&n| u64::from(n)).sum::<u64>(),
            whole.sent
        );
        assert_eq!(whole.seconds.len(), merged.seconds.len());
        for (a, b) in whole.seconds.iter().zip(&merged.seconds) {
            assert_eq!((a.requests, a.errors), (b.requests, b.errors));
            assert_eq!(a.latency, b.latency);
        }
        let mut log = merged.send_log.clone().unwrap();
        log.sort();
        assert_eq!(Some(log), whole.send_log);
    }

    #[test]
    fn classes_latency_and_lateness_are_kept_apart() {
        let mut r = Recorder::new(1_000_000, false);
        r.on_send(0, 0, 2_000_000, 5); // 2 ms late
        r.on_reply(0, 2_000_000, 12_000_000, 200, 9);
        r.on_send(1, 5_000_000, 5_100_000, 5); // on time
        r.on_reply(5_000_000, 5_100_000, 1_500_000_000, 500, 9);
        r.on_failure(Failure::Connect, 1_600_000_000);
        r.on_failure(Failure::Write, 1_700_000_000);
        assert_eq!((r.sent, r.late, r.replies()), (2, 1, 2));
        // Both left in the first 10 ms; one more at 25 ms lands in bin 2.
        assert_eq!(r.sends, [2]);
        r.on_send(2, 20_000_000, 25_000_000, 0);
        assert_eq!(r.sends, [2, 0, 1]);
        assert_eq!(r.latency.max(), r.latency.highest_equivalent(1_495_000));
        assert_eq!(r.service.min(), r.service.lowest_equivalent(10_000));
        assert_eq!(
            r.errors,
            Errors {
                connect: 1,
                read: 0,
                write: 1,
                status: 1,
                timeout: 0
            }
        );
        assert_eq!(r.status_codes, BTreeMap::from([(200, 1), (500, 1)]));
        assert_eq!(r.seconds.len(), 2);
        assert_eq!((r.seconds[0].requests, r.seconds[0].errors), (1, 0));
        assert_eq!((r.seconds[1].requests, r.seconds[1].errors), (1, 3));
        assert_eq!((r.bytes_sent, r.bytes_received), (10, 18));
        assert_eq!(r.sent, 3);
    }
}
