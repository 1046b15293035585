//! The one typed configuration of a run, and the spec it is built from.
//!
//! [`RunSpec`] is what callers give (the CLI and `lanes.bench.run` pass it as
//! a dict; every field optional but `url`). [`RunSpec::build`] checks every
//! field, applies the defaults, resolves the target and loads the corpus, so a
//! [`RunConfig`] is always runnable.
//!
//! Defaults: closed loop with 10 connections when no rate is given, open loop
//! with 64 connections when one is; threads = min(2, cores, connections);
//! 10 s when neither `duration_s` nor `requests` bounds the run; a 10 s
//! request timeout; a send counts as late when it leaves more than 1 ms after
//! its intended time; method GET, or POST when a body or a corpus folder is
//! given. Frame targets may add a hello frame per connection and send
//! sequences of frames per exchange ([`FrameOptions`]); both are refused on
//! HTTP targets. gRPC targets spread the calls over `grpc_connections` HTTP/2
//! connections per sender thread (default 1), and send KServe REST requests as
//! `ModelInferRequest`s ([`crate::kserve`]); both options are refused on other
//! targets.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::Method;
use serde::Deserialize;

use crate::corpus::{Corpus, Order, Template};
use crate::error::LoadError;
use crate::pacer::Arrival;
use crate::sender::{split_frames, FrameOptions};
use crate::target::{Protocol, Target};

/// Most connections a run may open.
pub const MAX_CONNECTIONS: usize = 100_000;
/// Most sender threads.
pub const MAX_THREADS: usize = 256;
/// Highest open-loop rate, requests per second.
pub const MAX_RATE: f64 = 10_000_000.0;

/// A run as callers describe it; see the module docs for defaults.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    /// Target URL: `http://…`, `unix:PATH[:/http/path]` or `frame+unix:PATH`.
    pub url: String,
    /// Open loop at this many requests per second; closed loop when absent.
    pub rate: Option<f64>,
    /// Open-loop inter-arrival law.
    #[serde(default)]
    pub arrival: Arrival,
    /// Connections (closed loop: the concurrency; open loop: the most in flight).
    pub connections: Option<usize>,
    /// Sender threads.
    pub threads: Option<usize>,
    /// Stop issuing after this many seconds.
    pub duration_s: Option<f64>,
    /// Stop after this many requests.
    pub requests: Option<u64>,
    /// Per-request timeout, seconds.
    pub timeout_s: Option<f64>,
    /// HTTP method.
    pub method: Option<String>,
    /// Extra headers, each `"Name: value"`.
    #[serde(default)]
    pub headers: Vec<String>,
    /// Request body.
    pub body: Option<String>,
    /// Request body read from a file.
    pub body_file: Option<PathBuf>,
    /// Corpus: a folder of bodies or a JSONL file.
    pub corpus: Option<PathBuf>,
    /// How corpus entries are picked.
    #[serde(default)]
    pub corpus_order: Order,
    /// Seed of the schedule and of corpus picks.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Sends leaving later than this after their intended time count as late, seconds.
    pub late_after_s: Option<f64>,
    /// Write `index intended_ns sent_ns` per send to this file.
    pub send_log: Option<PathBuf>,
    /// Frame targets: a file whose bytes are one payload, sent once on each
    /// new connection; its reply is read and not recorded.
    pub frame_hello: Option<PathBuf>,
    /// Frame targets: each body is a sequence of whole length-prefixed
    /// frames, sent one after another's reply; one exchange is the sequence.
    #[serde(default)]
    pub frame_seq: bool,
    /// gRPC targets: HTTP/2 connections per sender thread (default 1).
    pub grpc_connections: Option<usize>,
    /// gRPC targets: the model of KServe REST bodies whose path does not name
    /// one (a single `body`/`body_file`); they are sent as `ModelInferRequest`s.
    pub kserve_model: Option<String>,
}

fn default_seed() -> u64 {
    1
}

/// Open or closed loop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    /// Sends follow the seeded schedule at `rate`, whatever the replies do.
    Open {
        /// Requests per second.
        rate: f64,
        /// Inter-arrival law.
        arrival: Arrival,
    },
    /// Each connection sends its next request when the previous reply ends.
    Closed,
}

/// A checked, runnable configuration.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Where the load goes.
    pub target: Target,
    /// Open or closed loop.
    pub load: Load,
    /// Connections.
    pub connections: usize,
    /// Sender threads.
    pub threads: usize,
    /// Issue no request after this long.
    pub duration: Option<Duration>,
    /// Issue at most this many requests.
    pub requests: Option<u64>,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Lateness threshold.
    pub late_after: Duration,
    /// Seed.
    pub seed: u64,
    /// The requests.
    pub corpus: Arc<Corpus>,
    /// Where to write the send log.
    pub send_log: Option<PathBuf>,
    /// Frame targets: hello and sequences.
    pub frames: FrameOptions,
    /// gRPC targets: HTTP/2 connections per sender thread.
    pub grpc_connections: usize,
}

fn seconds(what: &str, value: f64) -> Result<Duration, LoadError> {
    if value.is_finite() && value > 0.0 && value < 1e9 {
        Ok(Duration::from_secs_f64(value))
    } else {
        Err(LoadError::BadArgument(format!(
            "{what} must be a positive number of seconds, not {value}"
        )))
    }
}

fn parse_header(raw: &str) -> Result<(HeaderName, HeaderValue), LoadError> {
    let bad = |why: &str| LoadError::BadArgument(format!("header {raw:?}: {why}"));
    let (name, value) = raw
        .split_once(':')
        .ok_or_else(|| bad("expected 'Name: value'"))?;
    let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| bad("bad name"))?;
    let value = HeaderValue::from_str(value.trim()).map_err(|_| bad("bad value"))?;
    Ok((name, value))
}

impl RunSpec {
    /// Checks the spec and builds the run's configuration (loads the corpus).
    pub fn build(&self) -> Result<RunConfig, LoadError> {
        let target = Target::parse(&self.url)?;
        let load = match self.rate {
            None => Load::Closed,
            Some(rate) if rate.is_finite() && rate > 0.0 && rate <= MAX_RATE => Load::Open {
                rate,
                arrival: self.arrival,
            },
            Some(rate) => {
                return Err(LoadError::BadArgument(format!(
                    "rate must be a number of requests per second in (0, {MAX_RATE}], not {rate}"
                )))
            }
        };
        let connections = self.connections.unwrap_or(match load {
            Load::Open { .. } => 64,
            Load::Closed => 10,
        });
        if !(1..=MAX_CONNECTIONS).contains(&connections) {
            return Err(LoadError::BadArgument(format!(
                "connections must be in 1..={MAX_CONNECTIONS}, not {connections}"
            )));
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = self.threads.unwrap_or(2.min(cores)).min(connections);
        if !(1..=MAX_THREADS).contains(&threads) {
            return Err(LoadError::BadArgument(format!(
                "threads must be in 1..={MAX_THREADS}, not {threads}"
            )));
        }
        let mut duration = self
            .duration_s
            .map(|d| seconds("duration", d))
            .transpose()?;
        if self.requests == Some(0) {
            return Err(LoadError::BadArgument("requests must be at least 1".into()));
        }
        if duration.is_none() && self.requests.is_none() {
            duration = Some(Duration::from_secs(10));
        }
        let timeout = seconds("timeout", self.timeout_s.unwrap_or(10.0))?;
        let late_after = match self.late_after_s {
            None => Duration::from_millis(1),
            Some(v) if v.is_finite() && v >= 0.0 => Duration::from_secs_f64(v),
            Some(v) => {
                return Err(LoadError::BadArgument(format!(
                    "late-after must be a non-negative number of seconds, not {v}"
                )))
            }
        };
        if self.body.is_some() && self.body_file.is_some() {
            return Err(LoadError::BadArgument(
                "give a body or a body file, not both".into(),
            ));
        }
        let body =
            match (&self.body, &self.body_file) {
                (Some(b), _) => Bytes::from(b.clone()),
                (None, Some(f)) => Bytes::from(std::fs::read(f).map_err(|e| {
                    LoadError::BadArgument(format!("body file {}: {e}", f.display()))
                })?),
                (None, None) => Bytes::new(),
            };
        let corpus_is_dir = self.corpus.as_ref().is_some_and(|c| c.is_dir());
        let has_body = self.body.is_some() || self.body_file.is_some() || corpus_is_dir;
        let method = match &self.method {
            Some(m) => Method::from_bytes(m.to_ascii_uppercase().as_bytes())
                .map_err(|_| LoadError::BadArgument(format!("bad method {m:?}")))?,
            None if has_body => Method::POST,
            None => Method::GET,
        };
        let mut headers = HeaderMap::new();
        for raw in &self.headers {
            let (name, value) = parse_header(raw)?;
            headers.append(name, value);
        }
        if target.protocol == Protocol::Frame && self.corpus.is_none() && body.is_empty() {
            return Err(LoadError::BadArgument(
                "frame targets need a payload: give a body, a body file or a corpus".into(),
            ));
        }
        let template = Template {
            method,
            path: target.path.clone(),
            headers,
            body,
        };
        let corpus = match &self.corpus {
            Some(path) => Corpus::load(path, &template, self.corpus_order, self.seed)?,
            None => Corpus::single(template),
        };
        let frames = self.frame_options(target.protocol, &corpus)?;
        let grpc_connections = self.grpc_connections.unwrap_or(1);
        let corpus = if target.protocol == Protocol::Grpc {
            if !(1..=MAX_CONNECTIONS).contains(&grpc_connections) {
                return Err(LoadError::BadArgument(format!(
                    "grpc-connections must be in 1..={MAX_CONNECTIONS}, not {grpc_connections}"
                )));
            }
            let model = self.kserve_model.as_deref();
            if model.is_some_and(str::is_empty) {
                return Err(LoadError::BadArgument(
                    "kserve-model must not be empty".into(),
                ));
            }
            corpus.try_map(|entry, number| {
                crate::kserve::to_grpc(entry, number, &target.path, model)
            })?
        } else {
            if self.grpc_connections.is_some() || self.kserve_model.is_some() {
                return Err(LoadError::BadArgument(
                    "grpc-connections and kserve-model need a grpc:// target".into(),
                ));
            }
            corpus
        };
        if let Some((i, e)) = corpus
            .entries()
            .iter()
            .enumerate()
            .find(|(_, e)| u32::try_from(e.body.len()).is_err())
        {
            return Err(LoadError::Corpus(format!(
                "request {} has a body of {} bytes; the most is 4 GiB",
                i + 1,
                e.body.len()
            )));
        }
        Ok(RunConfig {
            target,
            load,
            connections,
            threads,
            duration,
            requests: self.requests,
            timeout,
            late_after,
            seed: self.seed,
            corpus: Arc::new(corpus),
            send_log: self.send_log.clone(),
            frames,
            grpc_connections,
        })
    }

    /// Checks the frame options: frame targets only; a hello file of 1 byte
    /// or more; with sequences, every body splits into whole frames.
    fn frame_options(
        &self,
        protocol: Protocol,
        corpus: &Corpus,
    ) -> Result<FrameOptions, LoadError> {
        if protocol != Protocol::Frame {
            if self.frame_hello.is_some() || self.frame_seq {
                return Err(LoadError::BadArgument(
                    "frame-hello and frame-seq need a frame+unix: target".into(),
                ));
            }
            return Ok(FrameOptions::default());
        }
        let hello = match &self.frame_hello {
            None => None,
            Some(f) => {
                let raw = std::fs::read(f).map_err(|e| {
                    LoadError::BadArgument(format!("frame-hello file {}: {e}", f.display()))
                })?;
                if raw.is_empty() || u32::try_from(raw.len()).is_err() {
                    return Err(LoadError::BadArgument(format!(
                        "frame-hello file {} must hold 1 byte to 4 GiB, not {}",
                        f.display(),
                        raw.len()
                    )));
                }
                Some(Bytes::from(raw))
            }
        };
        if self.frame_seq {
            for (i, entry) in corpus.entries().iter().enumerate() {
                split_frames(&entry.body).map_err(|why| {
                    LoadError::BadArgument(format!(
                        "frame-seq: body {} is not a sequence of whole frames: {why}",
                        i + 1
                    ))
                })?;
            }
        }
        Ok(FrameOptions {
            hello,
            seq: self.frame_seq,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(url: &str) -> RunSpec {
        RunSpec {
            url: url.into(),
            seed: 1,
            ..RunSpec::default()
        }
    }

    #[test]
    fn defaults_follow_the_loop() {
        let c = spec("http://127.0.0.1:1/").build().unwrap();
        assert_eq!(c.load, Load::Closed);
        assert_eq!(c.connections, 10);
        assert_eq!(c.duration, Some(Duration::from_secs(10)));
        assert_eq!(c.timeout, Duration::from_secs(10));
        assert_eq!(c.corpus.pick(0).method, Method::GET);
        let c = RunSpec {
            rate: Some(100.0),
            requests: Some(5),
            body: Some("x".into()),
            ..spec("http://127.0.0.1:1/")
        }
        .build()
        .unwrap();
        assert!(matches!(c.load, Load::Open { rate, arrival: Arrival::Poisson } if rate == 100.0));
        assert_eq!(c.connections, 64);
        assert_eq!(c.duration, None);
        assert_eq!(c.corpus.pick(0).method, Method::POST);
    }

    #[test]
    fn bad_values_are_refused_with_their_name() {
        let url = "http://127.0.0.1:1/";
        for (s, needle) in [
            (
                RunSpec {
                    rate: Some(0.0),
                    ..spec(url)
                },
                "rate must be",
            ),
            (
                RunSpec {
                    rate: Some(f64::NAN),
                    ..spec(url)
                },
                "rate must be",
            ),
            (
                RunSpec {
                    connections: Some(0),
                    ..spec(url)
                },
                "connections must be",
            ),
            (
                RunSpec {
                    threads: Some(0),
                    ..spec(url)
                },
                "threads must be",
            ),
            (
                RunSpec {
                    duration_s: Some(-1.0),
                    ..spec(url)
                },
                "duration must be",
            ),
            (
                RunSpec {
                    requests: Some(0),
                    ..spec(url)
                },
                "requests must be",
            ),
            (
                RunSpec {
                    timeout_s: Some(0.0),
                    ..spec(url)
                },
                "timeout must be",
            ),
            (
                RunSpec {
                    late_after_s: Some(-1.0),
                    ..spec(url)
                },
                "late-after",
            ),
            (
                RunSpec {
                    method: Some("G T".into()),
                    ..spec(url)
                },
                "bad method",
            ),
            (
                RunSpec {
                    headers: vec!["NoColon".into()],
                    ..spec(url)
                },
                "Name: value",
            ),
            (
                RunSpec {
                    body: Some("a".into()),
                    body_file: Some("f".into()),
                    ..spec(url)
                },
                "not both",
            ),
            (
                RunSpec {
                    body_file: Some("/no/such/file".into()),
                    ..spec(url)
                },
                "body file",
            ),
            (spec("frame+unix:/tmp/x.sock"), "need a payload"),
            (
                RunSpec {
                    frame_seq: true,
                    ..spec(url)
                },
                "need a frame+unix: target",
            ),
            (
                RunSpec {
                    frame_seq: true,
                    body: Some("\0\0\0\x05ab".into()),
                    ..spec("frame+unix:/tmp/x.sock")
                },
                "body 1 is not a sequence of whole frames: the frame at byte 0 says 5 bytes but 2 follow",
            ),
            (
                RunSpec {
                    frame_hello: Some("/no/such/hello".into()),
                    body: Some("x".into()),
                    ..spec("frame+unix:/tmp/x.sock")
                },
                "frame-hello file /no/such/hello",
            ),
        ] {
            let err = s.build().unwrap_err();
            assert_eq!(err.code(), "bad_argument", "{err}");
            assert!(err.to_string().contains(needle), "{err}");
        }
    }

    #[test]
    fn headers_are_parsed_and_threads_capped_by_connections() {
        let c = RunSpec {
            headers: vec!["X-A: 1".into(), "x-a:2".into()],
            connections: Some(1),
            threads: Some(8),
            ..spec("http://127.0.0.1:1/")
        }
        .build()
        .unwrap();
        let values: Vec<_> = c.corpus.pick(0).headers.get_all("x-a").iter().collect();
        assert_eq!(values, ["1", "2"]);
        assert_eq!(c.threads, 1);
    }
}
