//! The device timeline, in the Chrome trace-event format of `lanes serve
//! --trace` (open it in Perfetto or chrome://tracing):
//! `{"traceEvents": [...], "displayTimeUnit": "ms"}` with the process named
//! `lanes arbiter`, one track (`tid` = device index) per device named by
//! `thread_name` and ordered by `thread_sort_index` metadata events, a
//! complete event (`"ph": "X"`, named after the model) per grant from GRANT
//! to its end (args `model`, `batch_size`, `service`, `id`, `end` = release /
//! disconnect / revoke), and a counter event (`"ph": "C"`, `jobs <device>`,
//! args `{"jobs": n}`) of the grants held on the device at each change. Times
//! are microseconds since the daemon started. The newest `capacity` events
//! are kept (a ring).

use std::collections::VecDeque;

use serde_json::{json, Value};

use crate::metrics::Cause;

#[derive(Debug, Clone)]
enum Event {
    Slice {
        device: usize,
        start: u64,
        end: u64,
        model: String,
        service: String,
        id: u64,
        batch: u32,
        cause: Cause,
    },
    Count {
        device: usize,
        at: u64,
        running: u32,
    },
}

/// Timeline events of one daemon run.
#[derive(Debug)]
pub struct Timeline {
    events: VecDeque<Event>,
    capacity: usize,
    devices: usize,
}

impl Timeline {
    /// An empty timeline over `devices` keeping at most `capacity` events.
    pub fn new(devices: usize, capacity: usize) -> Self {
        Self {
            events: VecDeque::with_capacity(capacity.min(1 << 16)),
            capacity: capacity.max(1),
            devices,
        }
    }

    fn push(&mut self, e: Event) {
        if self.events.len() == self.capacity {
            self.events.pop_front();
        }
        self.events.push_back(e);
    }

    /// A grant held on `device` from `start` to `end` (ns).
    #[allow(clippy::too_many_arguments)]
    pub fn slice(
        &mut self,
        device: usize,
        start: u64,
        end: u64,
        model: &str,
        service: &str,
        id: u64,
        batch: u32,
        cause: Cause,
    ) {
        self.push(Event::Slice {
            device,
            start,
            end,
            model: model.to_owned(),
            service: service.to_owned(),
            id,
            batch,
            cause,
        });
    }

    /// `running` jobs on `device` from `at` (ns).
    pub fn count(&mut self, device: usize, at: u64, running: u32) {
        self.push(Event::Count {
            device,
            at,
            running,
        });
    }

    /// Events kept.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether no event is kept.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The trace document; `names` labels the device tracks.
    pub fn to_json(&self, names: &[String]) -> String {
        let us = |ns: u64| ns as f64 / 1e3;
        let mut events: Vec<Value> = vec![json!({
            "name": "process_name", "ph": "M", "pid": 1, "tid": 0,
            "args": {"name": "lanes arbiter"},
        })];
        for d in 0..self.devices {
            events.push(json!({
                "name": "thread_name", "ph": "M", "pid": 1, "tid": d,
                "args": {"name": names.get(d).map_or("?", String::as_str)},
            }));
            events.push(json!({
                "name": "thread_sort_index", "ph": "M", "pid": 1, "tid": d,
                "args": {"sort_index": d},
            }));
        }
        for e in &self.events {
            events.push(match e {
                Event::Slice {
                    device,
                    start,
                    end,
                    model,
                    service,
                    id,
                    batch,
                    cause,
                } => json!({
                    "name": model, "cat": "grant", "ph": "X", "pid": 1, "tid": device,
                    "ts": us(*start), "dur": us(end.saturating_sub(*start)),
                    "args": {
                        "model": model, "batch_size": batch, "service": service, "id": id,
                        "end": cause.as_str(),
                    },
                }),
                Event::Count {
                    device,
                    at,
                    running,
                } => json!({
                    "name": format!("jobs {}", names.get(*device).map_or("?", String::as_str)),
                    "ph": "C", "pid": 1, "tid": device, "ts": us(*at),
                    "args": {"jobs": running},
                }),
            });
        }
        json!({"traceEvents": events, "displayTimeUnit": "ms"}).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_events_and_renders_tracks() {
        let mut t = Timeline::new(2, 3);
        t.count(0, 1000, 1);
        t.slice(0, 1000, 5000, "m", "svc", 7, 4, Cause::Release);
        t.count(0, 5000, 0);
        t.count(1, 6000, 1);
        assert_eq!(t.len(), 3);
        let names = vec!["sim:0".to_string(), "sim:1".to_string()];
        let doc: Value = serde_json::from_str(&t.to_json(&names)).unwrap();
        assert_eq!(doc["displayTimeUnit"], "ms");
        let events = doc["traceEvents"].as_array().unwrap();
        assert_eq!(events.len(), 5 + 3);
        assert_eq!(events[1]["args"]["name"], "sim:0");
        let slice = &events[5];
        assert_eq!(slice["ph"], "X");
        assert_eq!(slice["ts"], 1.0);
        assert_eq!(slice["dur"], 4.0);
        assert_eq!(slice["args"]["end"], "release");
        assert_eq!(events[7]["name"], "jobs sim:1");
        assert_eq!(events[7]["args"]["jobs"], 1);
    }
}
