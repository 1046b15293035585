//! A native server assembled from ONNX files: the driver, the ONNX backend
//! and the REST front end on one tokio runtime. What `lanes serve` will run
//! for a repository of ONNX models; today it backs the data plane's tests and
//! benchmarks (examples/serve_onnx.rs).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use lanes_kserve::CodecConfig;
use lanes_onnx::{OnnxError, SessionConfig};
use lanes_serving::Batching;

use crate::app::{App, DeviceEntry, Limits, ModelEntry, Phase};
use crate::error::StartError;
use crate::onnx_backend::OnnxModel;
use crate::runner::{Runners, SimCost};
use crate::server::{self, ServeStartError, ServedModel, ServerSpec};

/// One ONNX model to serve.
#[derive(Debug, Clone)]
pub struct NativeModel {
    pub name: String,
    pub path: PathBuf,
    pub batching: Batching,
    pub timeout_ms: Option<f64>,
}

/// `lanes serve`'s default bound of the driver's inline rule
/// (`--inline-max-us 200`).
pub const DEFAULT_INLINE_MAX: Duration = Duration::from_micros(200);

/// The server's settings.
#[derive(Debug, Clone)]
pub struct NativeConfig {
    /// `fifo`, `sjf`, `limit:K`, … or `independent`.
    pub policy: String,
    /// CPU devices (`cpu:0` …), each one ONNX Runtime executor.
    pub devices: usize,
    /// Intra-op threads of every session.
    pub intra_op_threads: usize,
    pub models: Vec<NativeModel>,
    pub codec: CodecConfig,
    pub limits: Limits,
    /// The driver's inline rule's bound (`lanes serve --inline-max-us`).
    pub inline_max: Duration,
}

/// Why a native server could not be built.
#[derive(Debug, thiserror::Error)]
pub enum NativeError {
    #[error("policy '{0}': {1}")]
    Policy(String, String),
    #[error("model '{0}': {1}")]
    Model(String, OnnxError),
    #[error("model '{0}': its graph declares no tensors")]
    NoSignature(String),
    #[error(transparent)]
    Start(#[from] StartError),
}

/// Loads the models, starts the driver (on the current runtime) and returns
/// the front end's app, ready.
pub fn build(config: &NativeConfig) -> Result<Arc<App<Runners>>, NativeError> {
    server::grants(&config.policy).map_err(|e| match e {
        ServeStartError::Policy(p, m) => NativeError::Policy(p, m),
        other => NativeError::Policy(config.policy.clone(), other.to_string()),
    })?;
    let session = SessionConfig {
        intra_op_threads: config.intra_op_threads,
        ..SessionConfig::default()
    };
    let device_names: Vec<String> = (0..config.devices).map(|d| format!("cpu:{d}")).collect();
    let mut models = Vec::new();
    for m in &config.models {
        let sessions = vec![Some(session.clone()); config.devices];
        let loaded = OnnxModel::load(
            &m.name,
            &m.path,
            &sessions,
            m.batching.num_batch_threads,
            m.batching.max_batch_size > 0,
        )
        .map_err(|e| NativeError::Model(m.name.clone(), e))?;
        let signature = loaded
            .signature()
            .ok_or_else(|| NativeError::NoSignature(m.name.clone()))?;
        models.push(ServedModel {
            entry: ModelEntry {
                name: m.name.clone(),
                version: "1".into(),
                platform: "onnx".into(),
                signature,
                batching: m.batching,
                timeout_ms: m.timeout_ms,
                devices: device_names.clone(),
            },
            devices: (0..config.devices).collect(),
            cost: SimCost {
                fixed_ms: 1.0,
                per_item_ms: 0.0,
            },
            runner: Arc::new(loaded),
            hooks: None,
        });
    }
    let spec = ServerSpec {
        policy: config.policy.clone(),
        arbiter: None,
        devices: device_names
            .into_iter()
            .map(|name| DeviceEntry {
                name,
                simulated: false,
            })
            .collect(),
        models,
        codec: config.codec,
        limits: config.limits,
        trace_events: crate::timeline::DEFAULT_CAPACITY,
        trace_requests: 0,
        version: env!("CARGO_PKG_VERSION").into(),
        hook_workers: 1,
        inline_max: config.inline_max,
        access_log: false,
        deadline_rule: Default::default(),
    };
    server::build(spec, Phase::Ready).map_err(|e| match e {
        ServeStartError::Start(e) => NativeError::Start(e),
        other => NativeError::Policy(config.policy.clone(), other.to_string()),
    })
}
