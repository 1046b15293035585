//! What both front ends serve: the models, the devices, readiness, and the
//! one inference path from a validated request to its outputs.
//!
//! **Rule** ([`App::infer`]): a decoded request is checked against its
//! model's signature (rows from the batch dimension), given its deadline
//! (the request's `timeout`, else the front end's deadline — REST's
//! `lanes-timeout-ms` header, gRPC's `grpc-timeout` — else the model's
//! default, cut to [`MAX_TIMEOUT_NS`]), handed to the driver and awaited.
//! Every refusal is a [`Failure`], which maps to an HTTP status and a gRPC
//! code in one place.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lanes_kserve::{CodecConfig, InferRequest, InferResponse, KserveError, OutputChoice};
use lanes_policy::Nanos;
use lanes_serving::Batching;
use thiserror::Error;
use tokio::sync::Semaphore;
use tonic::Code;

use crate::backend::Backend;
use crate::driver::{Handle, Request};
use crate::error::ServerError;
use crate::runner::{Admitted, HookError, Hooks, Produced};
use crate::signature::Signature;
use crate::spans::{Span, Stamps};

/// The longest deadline a request can ask for (~31 years).
pub const MAX_TIMEOUT_NS: Nanos = 1_000_000_000_000_000_000;

/// A served model as the front ends see it.
#[derive(Debug, Clone)]
pub struct ModelEntry {
    pub name: String,
    pub version: String,
    /// `onnx`, `python`, …: KServe's `platform`.
    pub platform: String,
    pub signature: Signature,
    pub batching: Batching,
    /// The model's default deadline.
    pub timeout_ms: Option<f64>,
    /// Names of the devices holding it.
    pub devices: Vec<String>,
}

/// A device as `GET /v2` lists it.
#[derive(Debug, Clone)]
pub struct DeviceEntry {
    pub name: String,
    pub simulated: bool,
}

/// Bounds on what a client may hold of the server (slow and hostile clients);
/// `lanes serve`'s `--max-connections`, `--header-timeout`, `--body-timeout`,
/// `--max-header-kb` and `--grpc-keepalive`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// A connection must send a request's head (on gRPC: HTTP/2's preface)
    /// within this time: a head begun gets 408, an idle connection (slowloris,
    /// idle keep-alive) is closed.
    pub header_read_timeout: Duration,
    /// A request's body must arrive within this time: 408 otherwise.
    pub body_read_timeout: Duration,
    /// Open connections at most; past it new ones wait in the listen backlog.
    pub max_connections: usize,
    /// The largest request head (request line and headers): 431 past it.
    pub max_header_bytes: usize,
    /// A gRPC connection is pinged this often; a peer that does not answer
    /// within 20 s (`grpc::KEEPALIVE_TIMEOUT`) is closed.
    pub keepalive_interval: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(30),
            body_read_timeout: Duration::from_secs(60),
            max_connections: 16_384,
            max_header_bytes: 64 * 1024,
            keepalive_interval: Duration::from_secs(30),
        }
    }
}

/// Why a request got no output: the one error both front ends answer with.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum Failure {
    /// A malformed request, a body over the limit, an output not encodable.
    #[error(transparent)]
    Wire(#[from] KserveError),
    /// Refused or failed by the driver (queue full, deadline, model failure, draining).
    #[error(transparent)]
    Server(#[from] ServerError),
    /// No such model or version.
    #[error("{0}")]
    NotFound(String),
    /// A request the front end refuses before decoding (a bad header).
    #[error("{0}")]
    BadRequest(String),
    /// Not ready (draining).
    #[error("{0}")]
    NotReady(String),
    /// The client did not send its request's body in time (408).
    #[error("{0}")]
    Timeout(String),
    /// The client began a request head but did not finish it in time (408,
    /// then the connection is closed).
    #[error("{0}")]
    HeadTimeout(String),
    /// A model's `preprocess` or `postprocess` hook refused (400) or failed (500).
    #[error("{}", .0.message)]
    Hook(HookError),
    /// The deadline passed before the request was queued (after its `preprocess`).
    #[error("{0}")]
    Expired(String),
}

impl Failure {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Wire(e) => e.code(),
            Self::Server(e) => e.code(),
            Self::NotFound(_) => "model_not_found",
            Self::BadRequest(_) => "bad_request",
            Self::NotReady(_) => "not_ready",
            Self::Timeout(_) => "request_timeout",
            Self::HeadTimeout(_) => "header_timeout",
            Self::Hook(e) if e.status == 400 => "bad_input",
            Self::Hook(_) => "model_error",
            Self::Expired(_) => "deadline_exceeded",
        }
    }

    /// The REST status.
    pub fn http_status(&self) -> u16 {
        match self {
            Self::Wire(e) => e.http_status(),
            Self::Server(e) => e.http_status(),
            Self::NotFound(_) => 404,
            Self::BadRequest(_) => 400,
            Self::NotReady(_) => 503,
            Self::Timeout(_) | Self::HeadTimeout(_) => 408,
            Self::Hook(e) => e.status,
            Self::Expired(_) => 504,
        }
    }

    /// The gRPC status code.
    pub fn grpc_code(&self) -> Code {
        match self {
            Self::Wire(e) => e.grpc_code(),
            Self::Server(ServerError::Serve(e)) => KserveError::Serve(e.clone()).grpc_code(),
            Self::Server(ServerError::ModelFailed { .. } | ServerError::OutputFailed { .. }) => {
                Code::Internal
            }
            Self::Server(ServerError::BadArgument { .. }) => Code::InvalidArgument,
            Self::Server(ServerError::ShuttingDown) | Self::NotReady(_) => Code::Unavailable,
            Self::NotFound(_) => Code::NotFound,
            Self::BadRequest(_) => Code::InvalidArgument,
            Self::Timeout(_) | Self::HeadTimeout(_) | Self::Expired(_) => Code::DeadlineExceeded,
            Self::Hook(e) if e.status == 400 => Code::InvalidArgument,
            Self::Hook(_) => Code::Internal,
        }
    }
}

/// The deadline `ns` nanoseconds after `arrival`, the wait cut to
/// [`MAX_TIMEOUT_NS`].
pub fn deadline_after(arrival: Nanos, ns: f64) -> Nanos {
    arrival.saturating_add(ns.min(MAX_TIMEOUT_NS as f64) as Nanos)
}

/// A server's lifecycle, in order: only `Ready` serves inferences; the
/// others answer readiness and inference with 503 naming the phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Phase {
    Loading = 0,
    Warming = 1,
    Ready = 2,
    Draining = 3,
    Stopped = 4,
}

impl Phase {
    /// `loading`, `warming`, `ready`, `draining`, `stopped`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Loading => "loading",
            Self::Warming => "warming",
            Self::Ready => "ready",
            Self::Draining => "draining",
            Self::Stopped => "stopped",
        }
    }

    /// The phase named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            Self::Loading,
            Self::Warming,
            Self::Ready,
            Self::Draining,
            Self::Stopped,
        ]
        .into_iter()
        .find(|p| p.name() == name)
    }

    fn from_u8(v: u8) -> Self {
        match v {
            0 => Self::Loading,
            1 => Self::Warming,
            2 => Self::Ready,
            3 => Self::Draining,
            _ => Self::Stopped,
        }
    }
}

/// The current [`Phase`], shared by the front ends and whoever drives the lifecycle.
#[derive(Debug)]
pub struct PhaseCell(AtomicU8);

impl PhaseCell {
    pub fn new(phase: Phase) -> Self {
        Self(AtomicU8::new(phase as u8))
    }

    pub fn get(&self) -> Phase {
        Phase::from_u8(self.0.load(Ordering::Acquire))
    }

    pub fn set(&self, phase: Phase) {
        self.0.store(phase as u8, Ordering::Release);
    }
}

/// The drain's cut: once given a message, every request still awaiting its
/// answer is answered 503 with it (and a queued one is withdrawn).
#[derive(Debug)]
pub struct Cut {
    message: tokio::sync::watch::Sender<Option<String>>,
    answered: AtomicUsize,
}

impl Default for Cut {
    fn default() -> Self {
        Self {
            message: tokio::sync::watch::channel(None).0,
            answered: AtomicUsize::new(0),
        }
    }
}

impl Cut {
    /// Cuts every request waiting now or later with `message`.
    pub fn cut(&self, message: String) {
        self.message.send_replace(Some(message));
    }

    /// Requests answered with the cut's message so far.
    pub fn answered(&self) -> usize {
        self.answered.load(Ordering::Relaxed)
    }

    /// Resolves with the message once cut (and counts the request answered).
    async fn wait(&self) -> String {
        let mut rx = self.message.subscribe();
        loop {
            if let Some(message) = rx.borrow_and_update().clone() {
                self.answered.fetch_add(1, Ordering::Relaxed);
                return message;
            }
            if rx.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

/// Requests a front end is handling (from its head read to its answer built):
/// what the drain waits for.
#[derive(Debug, Default)]
pub struct InFlight {
    count: AtomicUsize,
    idle: tokio::sync::Notify,
}

/// One request in flight; dropping it ends it.
#[derive(Debug)]
pub struct InFlightGuard<'a>(&'a InFlight);

impl InFlight {
    /// A request starts.
    pub fn enter(&self) -> InFlightGuard<'_> {
        self.count.fetch_add(1, Ordering::AcqRel);
        InFlightGuard(self)
    }

    /// Requests in flight now.
    pub fn count(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// Resolves once no request is in flight.
    pub async fn quiet(&self) {
        loop {
            let idle = self.idle.notified();
            if self.count() == 0 {
                return;
            }
            idle.await;
        }
    }
}

impl Drop for InFlightGuard<'_> {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// Counts an empty pre-processing when dropped (see [`App::infer`]).
struct IdentityInput<'a>(Option<&'a crate::observe::ModelObs>);

impl Drop for IdentityInput<'_> {
    fn drop(&mut self) {
        if let Some(obs) = self.0 {
            obs.compute_input(0);
        }
    }
}

/// Everything the front ends need; shared by every connection.
pub struct App<B: Backend> {
    pub handle: Handle<B>,
    /// By model index.
    pub models: Vec<ModelEntry>,
    pub devices: Vec<DeviceEntry>,
    pub policy: String,
    pub version: String,
    pub codec: CodecConfig,
    pub limits: Limits,
    /// Ready once every model is loaded and warmed up; draining after a stop.
    pub phase: PhaseCell,
    /// Set at the drain's timeout.
    pub cut: Cut,
    /// Per model, its per-request hooks (None: the model has none).
    pub hooks: Vec<Option<Arc<dyn Hooks>>>,
    /// Bounds the hooks running at once (`--workers`).
    pub hook_slots: Arc<Semaphore>,
    /// Request log records (the access log and 500s).
    pub access: Arc<crate::access::AccessLog>,
    /// Requests being handled (the drain waits for none).
    pub in_flight: InFlight,
}

impl<B: Backend> std::fmt::Debug for App<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("models", &self.models)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl<B: Backend> App<B> {
    pub fn is_ready(&self) -> bool {
        self.phase.get() == Phase::Ready
    }

    /// The 503 of a server that is not ready: `not ready: PHASE`.
    pub fn not_ready(&self) -> Failure {
        Failure::NotReady(format!("not ready: {}", self.phase.get().name()))
    }

    /// The model `name` (at `version` when one is named).
    pub fn find(&self, name: &str, version: Option<&str>) -> Result<usize, Failure> {
        let Some(ix) = self.models.iter().position(|m| m.name == name) else {
            let known: Vec<&str> = self.models.iter().map(|m| m.name.as_str()).collect();
            let known = if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            };
            return Err(Failure::NotFound(format!(
                "unknown model '{name}'; this server has: {known}"
            )));
        };
        let m = &self.models[ix];
        match version {
            Some(v) if v != m.version => Err(Failure::NotFound(format!(
                "model '{name}' has no version '{v}' (it has {})",
                m.version
            ))),
            _ => Ok(ix),
        }
    }
}

impl<B> App<B>
where
    B: Backend<Input = Admitted, Output = Produced>,
{
    /// Runs `request` on model `ix` (the module's rule); `edge_deadline_ns`
    /// is the front end's deadline in nanoseconds after `arrival`. Stamps
    /// `stamps` from the hooks to the answer ([`crate::spans`]: `pre`,
    /// `queued`, the driver's part, `resumed`, `post`).
    pub async fn infer(
        &self,
        ix: usize,
        request: InferRequest,
        edge_deadline_ns: Option<f64>,
        arrival: Nanos,
        stamps: &mut Stamps,
    ) -> Result<(InferResponse, OutputChoice), Failure> {
        let entry = &self.models[ix];
        if !self.is_ready() {
            return Err(self.not_ready());
        }
        let rows = entry
            .signature
            .check(&request, entry.batching.max_batch_size > 0)?;
        let after = |ns: f64| deadline_after(arrival, ns);
        let deadline = match request.timeout_us {
            Some(0) => {
                return Err(Failure::BadRequest(
                    "parameter timeout = 0: must be microseconds > 0".into(),
                ))
            }
            Some(us) => Some(after(us as f64 * 1e3)),
            None => edge_deadline_ns
                .or(entry.timeout_ms.map(|ms| ms * 1e6))
                .map(after),
        };
        let id = request.id.clone();
        let choice = OutputChoice::of(&request);
        let hooks = self.hooks.get(ix).cloned().flatten();
        let mut input = Admitted::from(request);
        if let Some(hooks) = hooks.as_ref().filter(|h| h.has_preprocess()) {
            let clock = self.handle.clock();
            let t0 = clock.now();
            let (hooks, request) = (Arc::clone(hooks), input.request);
            let (request, item, ran) = self
                .hook(move || {
                    let start = clock.now();
                    let item = hooks.preprocess(&request);
                    (request, item, (start, clock.now()))
                })
                .await?;
            stamps.pre = Some(ran);
            input = Admitted {
                request,
                item: Some(item.map_err(Failure::Hook)?),
            };
            let now = self.handle.clock().now();
            let obs = self.handle.observer().model(ix as u32);
            obs.compute_input(now.saturating_sub(t0));
            if deadline.is_some_and(|d| now >= d) {
                obs.expired();
                return Err(Failure::Expired(format!(
                    "model '{}': deadline exceeded before queueing",
                    entry.name
                )));
            }
        }
        // A model without a `preprocess` hook counts an empty pre-processing
        // for every request its queue admits (a client gone while it waits too).
        let mut identity = IdentityInput(
            (!hooks.as_ref().is_some_and(|h| h.has_preprocess()))
                .then(|| self.handle.observer().model(ix as u32)),
        );
        stamps.queued = self.handle.clock().now();
        let pending = self.handle.infer(Request {
            model: ix as u32,
            rows,
            deadline,
            target: None,
            input,
        });
        // Ok(the driver's answer) or Err(the drain's cut message).
        let reply: Result<Result<_, ServerError>, String> = tokio::select! {
            reply = pending => Ok(reply),
            message = self.cut.wait() => Err(message),
        };
        let obs = self.handle.observer().model(ix as u32);
        if matches!(&reply, Ok(Err(e)) if e.http_status() == 429) {
            identity.0 = None; // not admitted
        }
        drop(identity);
        let reply = match reply {
            Ok(answer) => answer?,
            Err(message) => return Err(Failure::NotReady(message)),
        };
        stamps.resumed = self.handle.clock().now();
        stamps.sent = reply.sent;
        stamps.batch_wait = reply.queued;
        stamps.run = reply.run;
        stamps.batch_rows = reply.batch_rows;
        let outputs = match reply.output {
            Produced::Tensors(outputs) => {
                obs.compute_output(0);
                outputs
            }
            Produced::Item(item) => {
                let Some(hooks) = hooks else {
                    return Err(Failure::Hook(HookError {
                        status: 500,
                        message: format!(
                            "model '{}': an output without a postprocess hook",
                            entry.name
                        ),
                    }));
                };
                let clock = self.handle.clock();
                let t0 = clock.now();
                let (outputs, ran) = self
                    .hook(move || {
                        let start = clock.now();
                        let outputs = hooks.postprocess(item);
                        (outputs, (start, clock.now()))
                    })
                    .await?;
                stamps.post = Some(ran);
                let outputs = outputs.map_err(Failure::Hook)?;
                let spent = clock.now().saturating_sub(t0);
                self.handle
                    .observer()
                    .model(ix as u32)
                    .compute_output(spent);
                outputs
            }
        };
        let response = InferResponse {
            model_name: entry.name.clone(),
            model_version: entry.version.clone(),
            id,
            outputs,
        };
        Ok((response, choice))
    }

    /// Keeps a successful request's span when spans are on
    /// ([`crate::spans`]), its reply built now (`encoded`).
    pub fn record_span(&self, ix: usize, mut stamps: Stamps) {
        let spans = self.handle.observer().timeline().spans();
        if spans.on() {
            stamps.encoded = self.handle.clock().now();
            spans.record(Span {
                model: ix as lanes_serving::ModelIx,
                stamps,
            });
        }
    }

    /// Runs `f` on the blocking pool, at most `hook_slots` at once.
    async fn hook<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Failure> {
        let _slot = Arc::clone(&self.hook_slots)
            .acquire_owned()
            .await
            .map_err(|_| Failure::NotReady("not ready: stopped".into()))?;
        tokio::task::spawn_blocking(f).await.map_err(|e| {
            Failure::Hook(HookError {
                status: 500,
                message: format!("a model hook panicked: {e}"),
            })
        })
    }
}
