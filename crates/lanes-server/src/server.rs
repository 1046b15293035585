//! A whole server: models on devices behind the REST, gRPC and metrics
//! listeners, on its own tokio runtime, with the lifecycle `lanes serve`
//! drives (`loading` → `warming` → `ready` → `draining` → `stopped`).
//!
//! - [`build`] assembles the [`App`] from one [`ServerSpec`]: the driver
//!   (grants from the policy engine, per model, or the host's `lanes
//!   arbiter`), every model's
//!   [`ModelRunner`], the devices (real or simulated).
//! - [`Running::start`] binds the listeners first (live at once, not ready:
//!   503 naming the phase), then builds the app inside its runtime; the
//!   caller loads and warms, and sets the phase.
//! - [`Running::drain`] (**rule**): the phase turns `draining` and the
//!   listeners close (new connections are refused; a request on an open
//!   keep-alive connection answers 503); requests in flight (from their
//!   head read to their answer built, [`crate::app::InFlight`]) get up to
//!   the timeout to finish, then whatever is left answers 503 with the cut
//!   message at once (a batch still running is not waited for).
//!   [`Running::stop`] then closes connections and the runtime.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use lanes_kserve::CodecConfig;
use lanes_policy::{CostConfig, DeviceSet, Nanos, Policy, Prior};
use lanes_serving::{DeadlineRule, Grants, ModelConfig};
use tokio::net::TcpListener;
use tokio::runtime::Runtime;
use tokio::sync::watch;

use crate::app::{App, Cut, DeviceEntry, Limits, ModelEntry, Phase, PhaseCell};
use crate::arbiter::ArbiterConfig;
use crate::driver::{DriverConfig, Handle};
use crate::error::StartError;
use crate::observe::ObserveConfig;
use crate::runner::{Hooks, ModelRunner, Runners, SimCost};

/// After a cut (the drain's timeout, a stop): how long the requests cut get
/// to be answered before connections close. Running batches are not waited for.
pub const CUT_GRACE: Duration = Duration::from_millis(200);

/// After the last answer is built: the time its connection gets to write it
/// before the runtime stops.
pub const WRITE_GRACE: Duration = Duration::from_millis(20);

/// One model to serve.
#[derive(Clone)]
pub struct ServedModel {
    /// What the front ends show (its `devices` are device names).
    pub entry: ModelEntry,
    /// Indexes of the devices holding a replica.
    pub devices: Vec<usize>,
    /// The configured cost curve (`fixed_ms + per_item_ms × rows`): the
    /// scheduler's prior, and the modelled time on simulated devices.
    pub cost: SimCost,
    pub runner: Arc<dyn ModelRunner>,
    /// Its per-request `preprocess`/`postprocess` (None: none).
    pub hooks: Option<Arc<dyn Hooks>>,
}

impl std::fmt::Debug for ServedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServedModel")
            .field("entry", &self.entry)
            .field("devices", &self.devices)
            .finish_non_exhaustive()
    }
}

/// Everything a server is built from.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// `independent`, or a policy of the engine (`fifo`, `sjf`, `limit:K`, …).
    pub policy: String,
    /// Grants from this `lanes arbiter` daemon instead (`policy` is then only shown).
    pub arbiter: Option<ArbiterConfig>,
    pub devices: Vec<DeviceEntry>,
    pub models: Vec<ServedModel>,
    pub codec: CodecConfig,
    pub limits: Limits,
    /// Jobs the timeline keeps.
    pub trace_events: usize,
    /// Request spans the timeline keeps ([`crate::spans`]; 0: none).
    pub trace_requests: usize,
    /// A batch estimated to run at most this long runs on the driver's
    /// thread (the driver's inline rule; zero: never).
    pub inline_max: Duration,
    /// The server's version (`GET /v2`, `lanes_info`).
    pub version: String,
    /// Model hooks running at once, at most (`--workers`).
    pub hook_workers: usize,
    /// One log record per request (`--access-log`); 500s are always logged.
    pub access_log: bool,
    /// Whether a request must start or finish by its deadline (`--deadline-rule`).
    pub deadline_rule: DeadlineRule,
}

/// Where a server listens; port 0 is any free port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listen {
    pub host: String,
    pub port: u16,
    /// KServe gRPC (None: off).
    pub grpc_port: Option<u16>,
    /// Prometheus `/metrics` (None: off).
    pub metrics_port: Option<u16>,
    /// The runtime's worker threads.
    pub workers: usize,
}

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeStartError {
    #[error("policy = '{0}': {1}")]
    Policy(String, String),
    /// A port that could not be bound.
    #[error("cannot listen on {addr}: {reason} (see --host, --{flag})")]
    Listen {
        addr: String,
        flag: &'static str,
        reason: String,
    },
    /// The metrics port could not be bound.
    #[error(
        "cannot serve metrics on {addr}: {reason} (see --metrics-port; off: --metrics-port off)"
    )]
    Metrics { addr: String, reason: String },
    #[error("starting the server's runtime: {0}")]
    Runtime(std::io::Error),
    #[error(transparent)]
    Start(#[from] StartError),
}

impl ServeStartError {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Policy(..) | Self::Listen { .. } | Self::Metrics { .. } => "bad_argument",
            Self::Runtime(_) => "threads_failed",
            Self::Start(e) => e.code(),
        }
    }
}

/// The grant source `policy` names.
pub fn grants(policy: &str) -> Result<Grants, ServeStartError> {
    if policy == "independent" {
        return Ok(Grants::Independent);
    }
    policy
        .parse::<Policy>()
        .map(Grants::Engine)
        .map_err(|e| ServeStartError::Policy(policy.to_owned(), e.to_string()))
}

/// Starts the driver (on the current runtime) and returns the app, in phase `phase`.
pub fn build(spec: ServerSpec, phase: Phase) -> Result<Arc<App<Runners>>, ServeStartError> {
    let grants = match spec.arbiter {
        Some(_) => Grants::External,
        None => grants(&spec.policy)?,
    };
    let configs = spec
        .models
        .iter()
        .map(|m| ModelConfig {
            name: m.entry.name.clone(),
            batching: m.entry.batching,
            devices: m.devices.iter().copied().collect::<DeviceSet>(),
            prior: Some(Prior {
                fixed: m.cost.fixed_ms * 1e6,
                per_item: m.cost.per_item_ms * 1e6,
            }),
        })
        .collect();
    let driver = DriverConfig {
        grants,
        arbiter: spec.arbiter.clone(),
        devices: spec.devices.len(),
        cost: CostConfig::default(),
        models: configs,
        inline_max: spec.inline_max.as_nanos() as Nanos,
        deadline_rule: spec.deadline_rule,
    };
    let observe = ObserveConfig {
        version: spec.version.clone(),
        devices: spec.devices.iter().map(|d| d.name.clone()).collect(),
        model_versions: spec
            .models
            .iter()
            .map(|m| m.entry.version.clone())
            .collect(),
        trace_events: spec.trace_events,
        trace_requests: spec.trace_requests,
    };
    let runners = Runners::new(
        spec.models.iter().map(|m| Arc::clone(&m.runner)).collect(),
        spec.models.iter().map(|m| m.cost).collect(),
        spec.devices.iter().map(|d| d.simulated).collect(),
    );
    let (handle, _task) = Handle::start_observed(driver, observe, runners)?;
    let hooks = spec.models.iter().map(|m| m.hooks.clone()).collect();
    Ok(Arc::new(App {
        handle,
        hooks,
        hook_slots: Arc::new(tokio::sync::Semaphore::new(spec.hook_workers.max(1))),
        access: Arc::new(crate::access::AccessLog::new(spec.access_log)),
        in_flight: crate::app::InFlight::default(),
        models: spec.models.into_iter().map(|m| m.entry).collect(),
        devices: spec.devices,
        policy: spec.policy,
        version: spec.version,
        codec: spec.codec,
        limits: spec.limits,
        phase: PhaseCell::new(phase),
        cut: Cut::default(),
    }))
}

/// A server running on its own runtime.
pub struct Running {
    runtime: std::sync::Mutex<Option<Runtime>>,
    /// Every model's runner, for warm-up.
    runners: Vec<Arc<dyn ModelRunner>>,
    app: Arc<App<Runners>>,
    /// Closes the listeners (the drain).
    close: watch::Sender<bool>,
    pub port: u16,
    pub grpc_port: Option<u16>,
    pub metrics_port: Option<u16>,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("port", &self.port)
            .field("grpc_port", &self.grpc_port)
            .field("metrics_port", &self.metrics_port)
            .finish_non_exhaustive()
    }
}

async fn bind(host: &str, port: u16, flag: &'static str) -> Result<TcpListener, ServeStartError> {
    crate::accept::listen(host, port)
        .await
        .map_err(|e| ServeStartError::Listen {
            addr: format!("{host}:{port}"),
            flag,
            reason: reason(&e),
        })
}

/// The OS's words for a bind error, without Rust's "(os error N)".
fn reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(cut) => text[..cut].to_owned(),
        None => text,
    }
}

fn port_of(listener: &TcpListener) -> u16 {
    listener.local_addr().map_or(0, |a: SocketAddr| a.port())
}

impl Running {
    /// Binds every listener, builds the app in phase `loading`, and serves.
    pub fn start(listen: &Listen, spec: ServerSpec) -> Result<Self, ServeStartError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(listen.workers.max(1))
            .thread_name("lanes-serve-io")
            .enable_all()
            .build()
            .map_err(ServeStartError::Runtime)?;
        let (close, closed) = watch::channel(false);
        let runners = spec.models.iter().map(|m| Arc::clone(&m.runner)).collect();
        let started = runtime.block_on(async {
            let rest = bind(&listen.host, listen.port, "port").await?;
            let grpc = match listen.grpc_port {
                Some(p) => Some(bind(&listen.host, p, "grpc-port").await?),
                None => None,
            };
            let metrics = match listen.metrics_port {
                Some(p) => Some(crate::accept::listen(&listen.host, p).await.map_err(|e| {
                    ServeStartError::Metrics {
                        addr: format!("{}:{p}", listen.host),
                        reason: reason(&e),
                    }
                })?),
                None => None,
            };
            let app = build(spec, Phase::Loading)?;
            let ports = (
                port_of(&rest),
                grpc.as_ref().map(port_of),
                metrics.as_ref().map(port_of),
            );
            tokio::spawn(crate::http::serve(
                rest,
                Arc::clone(&app),
                closed_signal(closed.clone()),
            ));
            if let Some(grpc) = grpc {
                tokio::spawn(crate::grpc::serve(
                    grpc,
                    Arc::clone(&app),
                    closed_signal(closed.clone()),
                ));
            }
            if let Some(metrics) = metrics {
                let observer = Arc::clone(app.handle.observer());
                tokio::spawn(observer.serve_metrics(metrics));
            }
            Ok::<_, ServeStartError>((app, ports))
        });
        let (app, (port, grpc_port, metrics_port)) = started?;
        Ok(Self {
            runtime: std::sync::Mutex::new(Some(runtime)),
            runners,
            app,
            close,
            port,
            grpc_port,
            metrics_port,
        })
    }

    /// The app both front ends serve.
    pub fn app(&self) -> &Arc<App<Runners>> {
        &self.app
    }

    /// Warms model `model` on `device` with a batch of `rows` zeros (see
    /// [`ModelRunner::warm`]), on the calling thread — warm-up calls it on
    /// each of the device's executor threads ([`Running::on_executors`]);
    /// its time, or None when the runner is warmed elsewhere.
    pub fn warm(&self, model: usize, device: usize, rows: u32) -> Result<Option<Duration>, String> {
        match self.runners.get(model) {
            Some(runner) => runner.warm(device, rows),
            None => Err(format!("no model {model}")),
        }
    }

    /// Sets the phase (`warming`, `ready`).
    pub fn set_phase(&self, phase: Phase) {
        self.app.phase.set(phase);
    }

    /// Drains (the module's rule); returns how many requests were cut, or
    /// None when everything finished within `timeout`.
    pub fn drain(&self, timeout: Duration, cut_message: String) -> Option<usize> {
        let phase = self.app.phase.get();
        if phase >= Phase::Draining {
            return None;
        }
        self.app.phase.set(Phase::Draining);
        self.close.send_replace(true);
        let handle = self.runtime_handle()?;
        let app = &self.app;
        handle.block_on(async {
            let quiet = tokio::time::timeout(timeout, app.in_flight.quiet()).await;
            if quiet.is_ok() {
                let _ = tokio::time::timeout(CUT_GRACE, app.handle.drain()).await;
                return None;
            }
            app.cut.cut(cut_message);
            // The waiting handlers answer at once; a running batch is not waited for.
            let _ = tokio::time::timeout(CUT_GRACE, app.in_flight.quiet()).await;
            Some(app.cut.answered())
        })
    }

    /// Runs `f` once on each executor thread of `device` and waits for all
    /// (see [`Handle::on_executors`]); each thread's result or a panic's
    /// message. Not from an executor thread (it would wait for itself).
    pub fn on_executors<R: Send + 'static>(
        &self,
        device: usize,
        f: impl Fn() -> R + Send + Sync + 'static,
    ) -> Vec<Result<R, String>> {
        match self.runtime_handle() {
            Some(handle) => handle.block_on(self.app.handle.on_executors(device, f)),
            None => Vec::new(),
        }
    }

    fn runtime_handle(&self) -> Option<tokio::runtime::Handle> {
        let runtime = self.runtime.lock().unwrap_or_else(|p| p.into_inner());
        runtime.as_ref().map(|r| r.handle().clone())
    }

    /// Closes every listener and connection and stops the runtime.
    pub fn stop(&self) {
        self.app.phase.set(Phase::Stopped);
        self.close.send_replace(true);
        let taken = self
            .runtime
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(runtime) = taken {
            self.app.cut.cut("not ready: stopped".to_owned());
            let app = &self.app;
            runtime.block_on(async {
                let _ = tokio::time::timeout(CUT_GRACE, app.in_flight.quiet()).await;
                let _ = tokio::time::timeout(CUT_GRACE, app.handle.drain()).await;
                // Answers built are written by their connections' tasks: a moment for that.
                tokio::time::sleep(WRITE_GRACE).await;
            });
            runtime.shutdown_timeout(CUT_GRACE);
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn closed_signal(mut closed: watch::Receiver<bool>) {
    let _ = closed.wait_for(|c| *c).await;
}
