//! Request spans: each inference request's way through the server's threads,
//! stamped on the driver's clock and kept in a bounded ring beside the
//! device timeline (`--trace-requests N`; 0, the default, keeps none).
//!
//! A front end stamps a request as it goes ([`Stamps`]):
//!
//! ```text
//! arrival   the handler starts (headers read)            I/O thread
//! decoded   the body is read and decoded                 I/O thread
//! pre       the preprocess hook starts and ends           blocking pool
//! queued    the request is handed to the driver           I/O thread
//! sent      the driver sends the batch's answers          driver task
//! resumed   the handler has its answer                    I/O thread
//! post      the postprocess hook starts and ends          blocking pool
//! encoded   the reply's body is built (hyper writes it)   I/O thread
//! ```
//!
//! and the driver's answer adds the batch's part ([`crate::Reply`]): the
//! wait from the request's arrival in the scheduler's state to its batch's
//! start, and the batch's measured run time. What lies between the stamps
//! and outside the batch is the hops between threads: the time a request
//! spends ready but waiting for a thread to take it up.
//!
//! **Rule.** Only a request answered with success is kept; the ring keeps
//! the last `capacity`, the oldest dropped first. A window of the last N
//! seconds holds the spans whose reply was built within it. Recording takes
//! the ring's lock once per request; with the ring off nothing is taken.
//!
//! Export ([`Spans::events`]): per span one async event pair (`"ph": "b"` /
//! `"e"`, `"cat": "request"`, the span's number as `id`) named after the
//! model, from arrival to encoded, whose `args` hold every stage in ms
//! ([`Span::args`]); nested in it three pairs of the same id: `front`
//! (arrival to queued), `scheduled` (queued to sent) and `back` (sent to
//! encoded). Perfetto and chrome://tracing draw them as one track per model.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use lanes_policy::Nanos;
use lanes_serving::ModelIx;
use serde_json::{json, Value};

/// One request's stamps (the driver's clock; see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stamps {
    pub arrival: Nanos,
    pub decoded: Nanos,
    /// The preprocess hook's start and end, if the model has one.
    pub pre: Option<(Nanos, Nanos)>,
    pub queued: Nanos,
    pub sent: Nanos,
    pub resumed: Nanos,
    /// The postprocess hook's start and end, if it ran.
    pub post: Option<(Nanos, Nanos)>,
    pub encoded: Nanos,
    /// From arrival in the scheduler's state to the batch's start.
    pub batch_wait: Nanos,
    /// The batch's measured run time.
    pub run: Nanos,
    /// Rows of the whole batch.
    pub batch_rows: u32,
}

/// A finished request: its model and stamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub model: ModelIx,
    pub stamps: Stamps,
}

fn ms(ns: i128) -> f64 {
    ns as f64 / 1e6
}

fn between(a: Nanos, b: Nanos) -> f64 {
    ms(b as i128 - a as i128)
}

/// A hook's three stages between `from` and `to` in `args`: with the hook
/// having `ran` (start, end), `{hook}_wait_ms` (from to start), `{hook}_ms`
/// and `{hook}_return_ms` (end to `to`); without it `{hook}_ms` 0 and the
/// whole of `from` to `to` in `{hook}_return_ms`.
fn hook_stages(args: &mut Value, hook: &str, from: Nanos, ran: Option<(Nanos, Nanos)>, to: Nanos) {
    let (run, back) = match ran {
        Some((start, end)) => {
            args[format!("{hook}_wait_ms")] = json!(between(from, start));
            (between(start, end), between(end, to))
        }
        None => (0.0, between(from, to)),
    };
    args[format!("{hook}_ms")] = json!(run);
    args[format!("{hook}_return_ms")] = json!(back);
}

impl Span {
    /// Every stage in ms, the export's `args`: `decode_ms` (arrival to
    /// decoded); with a preprocess hook `pre_wait_ms` (decoded to the hook's
    /// start: the blocking pool taking it up), `pre_ms` (the hook) and
    /// `pre_return_ms` (the hook's end to queued: the handler taking it back),
    /// else `pre_ms` 0 and the rest to queued in `pre_return_ms`;
    /// `scheduled_ms` (queued to sent), of which `batch_wait_ms` and
    /// `run_ms` are the batch's and `handoff_ms` the rest (the hops to the
    /// driver, to the device thread and back); `answer_wake_ms` (sent to
    /// resumed); with a postprocess hook `post_wait_ms`, `post_ms`, and
    /// `post_return_ms` (the hook's end to encoded, the encoding included),
    /// else `post_return_ms` from resumed; `total_ms` (arrival to encoded);
    /// `batch_size`.
    pub fn args(&self, name: &str) -> Value {
        let s = &self.stamps;
        let scheduled = s.sent as i128 - s.queued as i128;
        let mut args = json!({
            "model": name,
            "decode_ms": between(s.arrival, s.decoded),
            "scheduled_ms": ms(scheduled),
            "batch_wait_ms": ms(s.batch_wait as i128),
            "run_ms": ms(s.run as i128),
            "handoff_ms": ms(scheduled - s.batch_wait as i128 - s.run as i128),
            "answer_wake_ms": between(s.sent, s.resumed),
            "total_ms": between(s.arrival, s.encoded),
            "batch_size": s.batch_rows,
        });
        hook_stages(&mut args, "pre", s.decoded, s.pre, s.queued);
        hook_stages(&mut args, "post", s.resumed, s.post, s.encoded);
        args
    }
}

#[derive(Debug)]
struct Ring {
    spans: VecDeque<Span>,
    recorded: u64,
}

/// The bounded ring of spans (see the module docs).
#[derive(Debug)]
pub struct Spans {
    ring: Mutex<Ring>,
    capacity: usize,
}

impl Spans {
    /// A ring of at most `capacity` spans; 0: off.
    pub fn new(capacity: usize) -> Self {
        Self {
            ring: Mutex::new(Ring {
                spans: VecDeque::with_capacity(capacity.min(1 << 12)),
                recorded: 0,
            }),
            capacity,
        }
    }

    /// Whether spans are kept.
    pub fn on(&self) -> bool {
        self.capacity > 0
    }

    fn ring(&self) -> std::sync::MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps `span` (dropping the oldest past the capacity); nothing when off.
    pub fn record(&self, span: Span) {
        if !self.on() {
            return;
        }
        let mut ring = self.ring();
        if ring.spans.len() == self.capacity {
            ring.spans.pop_front();
        }
        ring.spans.push_back(span);
        ring.recorded += 1;
    }

    /// The spans whose reply was built in the `seconds` before `now` (None:
    /// all), each with its number (spans are numbered from 1 as recorded:
    /// the export's `id`), oldest first. Front ends record
    /// concurrently, so the ring is only nearly in `encoded` order: the
    /// whole ring is filtered.
    pub fn window(&self, seconds: Option<f64>, now: Nanos) -> Vec<(u64, Span)> {
        let ring = self.ring();
        let first = ring.recorded - ring.spans.len() as u64 + 1;
        let cutoff = seconds.map_or(0, |s| now.saturating_sub((s * 1e9) as Nanos));
        ring.spans
            .iter()
            .enumerate()
            .filter(|(_, s)| s.stamps.encoded >= cutoff)
            .map(|(i, s)| (first + i as u64, *s))
            .collect()
    }

    /// `(recorded, kept, capacity)`.
    pub fn counts(&self) -> (u64, u64, usize) {
        let ring = self.ring();
        (ring.recorded, ring.spans.len() as u64, self.capacity)
    }

    /// The trace events of `spans` (see the module docs), times in µs from
    /// `origin`, in process `pid`, each model named by `names`.
    pub fn events(spans: &[(u64, Span)], names: &[String], origin: Nanos, pid: u32) -> Vec<Value> {
        let us = |ns: Nanos| (ns as f64 - origin as f64) / 1e3;
        let mut events = Vec::with_capacity(spans.len() * 8);
        for (id, span) in spans {
            let name = names.get(span.model as usize).map_or("?", String::as_str);
            let s = &span.stamps;
            let pair = |events: &mut Vec<Value>, stage: &str, from: Nanos, to: Nanos, args| {
                let mut begin = json!({
                    "name": stage, "cat": "request", "ph": "b", "id": id,
                    "ts": us(from), "pid": pid, "tid": 0,
                });
                if let Some(args) = args {
                    begin["args"] = args;
                }
                events.push(begin);
                events.push(json!({
                    "name": stage, "cat": "request", "ph": "e", "id": id,
                    "ts": us(to.max(from)), "pid": pid, "tid": 0,
                }));
            };
            pair(
                &mut events,
                name,
                s.arrival,
                s.encoded,
                Some(span.args(name)),
            );
            pair(&mut events, "front", s.arrival, s.queued, None);
            pair(&mut events, "scheduled", s.queued, s.sent, None);
            pair(&mut events, "back", s.sent, s.encoded, None);
        }
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(model: ModelIx, encoded: Nanos) -> Span {
        Span {
            model,
            stamps: Stamps {
                arrival: 1_000,
                decoded: 3_000,
                pre: Some((5_000, 9_000)),
                queued: 10_000,
                sent: 60_000,
                resumed: 61_000,
                post: None,
                encoded,
                batch_wait: 20_000,
                run: 25_000,
                batch_rows: 2,
            },
        }
    }

    #[test]
    fn args_split_the_request_into_its_stages() {
        let a = span(0, 70_000).args("m");
        let got = |k: &str| a[k].as_f64().unwrap();
        assert_eq!(got("decode_ms"), 0.002);
        assert_eq!(got("pre_wait_ms"), 0.002);
        assert_eq!(got("pre_ms"), 0.004);
        assert_eq!(got("pre_return_ms"), 0.001);
        assert_eq!(got("scheduled_ms"), 0.05);
        assert_eq!(got("handoff_ms"), 0.005);
        assert_eq!(got("answer_wake_ms"), 0.001);
        assert_eq!(got("post_ms"), 0.0);
        assert_eq!(got("post_return_ms"), 0.009);
        assert_eq!(got("total_ms"), 0.069);
        assert!(a.get("post_wait_ms").is_none());
        // The stages add up to the total.
        let parts = [
            "decode_ms",
            "pre_wait_ms",
            "pre_ms",
            "pre_return_ms",
            "scheduled_ms",
            "answer_wake_ms",
            "post_ms",
            "post_return_ms",
        ];
        let sum: f64 = parts.iter().map(|k| got(k)).sum();
        assert!((sum - got("total_ms")).abs() < 1e-9, "{sum}");
    }

    #[test]
    fn the_ring_keeps_the_last_capacity_and_windows_by_encoded() {
        let spans = Spans::new(3);
        for i in 1..=5 {
            spans.record(span(0, i * 1_000_000_000));
        }
        assert_eq!(spans.counts(), (5, 3, 3));
        let all = spans.window(None, 0);
        assert_eq!(all.iter().map(|(id, _)| *id).collect::<Vec<_>>(), [3, 4, 5]);
        // The last 1.5 s before 5 s: encoded at 4 s and 5 s.
        let recent = spans.window(Some(1.5), 5_000_000_000);
        assert_eq!(recent.iter().map(|(id, _)| *id).collect::<Vec<_>>(), [4, 5]);
    }

    #[test]
    fn an_off_ring_keeps_nothing() {
        let spans = Spans::new(0);
        spans.record(span(0, 1));
        assert!(!spans.on());
        assert_eq!(spans.counts(), (0, 0, 0));
    }

    #[test]
    fn events_nest_three_stages_in_each_request() {
        let events = Spans::events(&[(7, span(1, 70_000))], &["a".into(), "b".into()], 0, 9);
        assert_eq!(events.len(), 8);
        let names: Vec<&str> = events.iter().map(|e| e["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "b",
                "b",
                "front",
                "front",
                "scheduled",
                "scheduled",
                "back",
                "back"
            ]
        );
        assert!(events.iter().all(|e| e["id"] == 7 && e["cat"] == "request"));
        assert_eq!(events[0]["args"]["model"], "b");
        assert_eq!(events[0]["ts"], 1.0);
        assert_eq!(events[1]["ts"], 70.0);
    }
}
