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

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use lanes_kserve::{
    CodecConfig, InferRequest, InferResponse, KserveError, OutputChoice, OutputTensor,
};
use lanes_policy::Nanos;
use lanes_serving::Batching;
use thiserror::Error;
use tonic::Code;

use crate::backend::Backend;
use crate::driver::{Handle, Request};
use crate::error::ServerError;
use crate::signature::Signature;

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

/// Bounds on what a client may hold of the server (slow and hostile clients).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// A connection must send a request's headers within this time (slowloris,
    /// idle keep-alive connections): it is closed otherwise.
    pub header_read_timeout: Duration,
    /// A request's body must arrive within this time: 408 otherwise.
    pub body_read_timeout: Duration,
    /// Open connections at most; past it new ones wait in the listen backlog.
    pub max_connections: usize,
    /// The largest request head (request line and headers): 431 past it.
    pub max_header_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(30),
            body_read_timeout: Duration::from_secs(60),
            max_connections: 16_384,
            max_header_bytes: 64 * 1024,
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
    /// The client did not send its request in time (408).
    #[error("{0}")]
    Timeout(String),
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
            Self::Timeout(_) => 408,
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
            Self::Timeout(_) => Code::DeadlineExceeded,
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
    /// Ready once every model is loaded (and warmed up); false again while draining.
    pub ready: AtomicBool,
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
        self.ready.load(Ordering::Acquire)
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
    B: Backend<Input = InferRequest, Output = Vec<OutputTensor>>,
{
    /// Runs `request` on model `ix` (the module's rule); `edge_deadline_ns`
    /// is the front end's deadline in nanoseconds after `arrival`.
    pub async fn infer(
        &self,
        ix: usize,
        request: InferRequest,
        edge_deadline_ns: Option<f64>,
        arrival: Nanos,
    ) -> Result<(InferResponse, OutputChoice), Failure> {
        let entry = &self.models[ix];
        if !self.is_ready() {
            return Err(Failure::NotReady("not ready: draining".into()));
        }
        let rows = entry
            .signature
            .check(&request, entry.batching.max_batch_size > 0)?;
        let after = |ns: f64| arrival.saturating_add(ns.min(MAX_TIMEOUT_NS as f64) as Nanos);
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
        let reply = self
            .handle
            .infer(Request {
                model: ix as u32,
                rows,
                deadline,
                target: None,
                input: request,
            })
            .await?;
        let response = InferResponse {
            model_name: entry.name.clone(),
            model_version: entry.version.clone(),
            id,
            outputs: reply.output,
        };
        Ok((response, choice))
    }
}
