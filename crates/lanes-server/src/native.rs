//! A native server assembled from ONNX files: the driver, the ONNX backend
//! and the REST front end on one tokio runtime. What `lanes serve` will run
//! for a repository of ONNX models; today it backs the data plane's tests and
//! benchmarks (examples/serve_onnx.rs).

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use lanes_kserve::CodecConfig;
use lanes_onnx::{OnnxError, SessionConfig};
use lanes_policy::{CostConfig, DeviceSet, Policy};
use lanes_serving::{Batching, Grants, ModelConfig};

use crate::app::{App, DeviceEntry, Limits, ModelEntry};
use crate::driver::{DriverConfig, Handle};
use crate::error::StartError;
use crate::observe::ObserveConfig;
use crate::onnx_backend::{OnnxBackend, OnnxModel};

/// One ONNX model to serve.
#[derive(Debug, Clone)]
pub struct NativeModel {
    pub name: String,
    pub path: PathBuf,
    pub batching: Batching,
    pub timeout_ms: Option<f64>,
}

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
pub fn build(config: &NativeConfig) -> Result<Arc<App<OnnxBackend>>, NativeError> {
    let grants = if config.policy == "independent" {
        Grants::Independent
    } else {
        let policy = Policy::from_str(&config.policy)
            .map_err(|e| NativeError::Policy(config.policy.clone(), e.to_string()))?;
        Grants::Engine(policy)
    };
    let session = SessionConfig {
        intra_op_threads: config.intra_op_threads,
        ..SessionConfig::default()
    };
    let device_names: Vec<String> = (0..config.devices).map(|d| format!("cpu:{d}")).collect();
    let mut models = Vec::new();
    let mut entries = Vec::new();
    let mut configs = Vec::new();
    for m in &config.models {
        let sessions = vec![Some(session.clone()); config.devices];
        let slots = m.batching.num_batch_threads;
        let loaded = OnnxModel::load(
            &m.name,
            &m.path,
            &sessions,
            slots,
            m.batching.max_batch_size > 0,
        )
        .map_err(|e| NativeError::Model(m.name.clone(), e))?;
        let signature = loaded
            .signature()
            .ok_or_else(|| NativeError::NoSignature(m.name.clone()))?;
        entries.push(ModelEntry {
            name: m.name.clone(),
            version: "1".into(),
            platform: "onnx".into(),
            signature,
            batching: m.batching,
            timeout_ms: m.timeout_ms,
            devices: device_names.clone(),
        });
        configs.push(ModelConfig {
            name: m.name.clone(),
            batching: m.batching,
            devices: DeviceSet::all(config.devices),
            prior: None,
        });
        models.push(loaded);
    }
    let driver = DriverConfig {
        grants,
        devices: config.devices,
        cost: CostConfig::default(),
        models: configs,
    };
    let observe = ObserveConfig {
        devices: device_names.clone(),
        model_versions: entries.iter().map(|e| e.version.clone()).collect(),
        ..ObserveConfig::default()
    };
    let (handle, _task) = Handle::start_observed(driver, observe, OnnxBackend { models })?;
    Ok(Arc::new(App {
        handle,
        models: entries,
        devices: device_names
            .into_iter()
            .map(|name| DeviceEntry {
                name,
                simulated: false,
            })
            .collect(),
        policy: config.policy.clone(),
        version: env!("CARGO_PKG_VERSION").into(),
        codec: config.codec,
        limits: config.limits,
        ready: AtomicBool::new(true),
    }))
}
