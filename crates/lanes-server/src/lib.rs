//! The live data plane of `lanes serve`, below its front ends: TGI's
//! handle → task → `State`, with lanes-serving's [`ServingState`] as the state.
//!
//! - [`driver`]: the one task that owns the state. Front ends talk to it through
//!   a cloneable [`Handle`]: [`Handle::infer`] admits a request and returns a
//!   [`Pending`] reply; dropping that reply before it resolves takes the
//!   request out of its queue (a client that disconnects or cancels).
//! - [`device`]: every device's executor threads — as many as jobs the device
//!   may run at once — which run batches through the [`Backend`] and answer
//!   the batch's clients directly, then report the measured run time.
//! - [`arbiter`]: device grants from the host's `lanes arbiter` daemon
//!   (`--arbiter`), with the fail-open / fail-closed fallback.
//! - [`access`]: request log records (access log, 500s) on a bounded channel.
//! - [`app`]: what both front ends serve (models, readiness) and the one
//!   inference path; [`app::Failure`] maps every refusal to HTTP and gRPC.
//! - [`backend`]: what runs a batch of one model on one device (native ONNX,
//!   a Python model, …): an input per request in, an output per request out.
//! - [`clock`]: the driver's clock (tokio's, so tests can pause it).
//! - [`error`]: [`ServerError`], the coded errors a client can get back.
//! - [`grpc`]: the KServe v2 gRPC front end: tonic's service on hyper's HTTP/2 (`tritonclient.grpc`).
//! - [`http`]: the KServe v2 REST front end on hyper (routes, statuses and
//!   error bodies of today's server).
//! - [`repoll`]: a connection woken during its own poll is polled again at
//!   once instead of yielding to tokio (which would wake an idle I/O thread).
//! - [`streams`]: a gRPC connection's calls run on the connection's own task.
//! - [`signature`]: a model's declared tensors and the edge's check of a
//!   request against them.
//! - [`runner`]: one [`runner::ModelRunner`] per model behind the one backend
//!   (engines mixed in a server; simulated devices hold for the modelled time).
//! - [`onnx_backend`]: ONNX models run natively (lanes-onnx), no Python.
//! - [`zoo`]: the demo zoo's image pre- and post-processing around its ONNX
//!   graph, natively.
//! - [`server`]: a whole server on its own runtime (listeners, lifecycle,
//!   drain) from one [`server::ServerSpec`] — what `lanes serve` runs.
//! - [`native`]: a server assembled from ONNX files (tests and benchmarks).
//! - [`observe`]: the driver's observability, fed by the task ([`probe`]),
//!   the executors and the front end ([`Handle::observer`]): [`stats`]
//!   (Triton-style per-model statistics), [`metrics`] (Prometheus, docs/metrics.md's
//!   names), [`occupancy`] (device accounts) and [`timeline`] (the Chrome
//!   trace of executed batches) — the same JSON, names and rules as the
//!   Python server's.
//!
//! [`ServingState`]: lanes_serving::ServingState

pub mod accept;
pub mod access;
pub mod app;
pub mod arbiter;
pub mod backend;
pub mod clock;
pub mod device;
pub mod driver;
pub mod error;
pub mod grpc;
pub mod http;
pub mod metrics;
pub mod native;
pub mod observe;
pub mod occupancy;
pub mod onnx_backend;
pub mod probe;
pub mod repoll;
pub mod runner;
pub mod server;
pub mod signature;
pub mod spans;
pub mod stats;
pub mod streams;
pub mod thread_clocks;
pub mod timeline;
pub mod zoo;

pub use backend::{Backend, BatchInfo};
pub use clock::Clock;
pub use driver::{DriverConfig, Handle, Pending, Reply, Request};
pub use error::ServerError;
pub use observe::{ObserveConfig, Observer, RequestRecord};
pub use stats::Outcome;

#[cfg(test)]
mod arbiter_driver_tests;
#[cfg(test)]
mod driver_tests;
