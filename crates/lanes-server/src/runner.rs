//! What runs each model: one [`ModelRunner`] per model behind the one
//! [`Backend`] the driver holds, so a server can mix engines (native ONNX,
//! Python models through PyO3) and device kinds; and a model's per-request
//! [`Hooks`], which the front end runs off the device.
//!
//! A request reaches its runner as an [`Admitted`]: the validated wire
//! request and, for a model with a `preprocess` hook, the hook's [`Item`].
//! The runner answers each with a [`Produced`]: output tensors, or an
//! [`Item`] for the model's `postprocess` hook to turn into tensors.
//!
//! **Rule** ([`Runners::run`]): a batch goes to its model's runner. On a
//! *simulated* device (`sim:N`, a stand-in for a GPU) the batch is computed
//! on the CPU as anywhere else, and the executor then holds the device until
//! the model's modelled run time (`fixed_ms + per_item_ms × rows`) has passed
//! since the batch started, so the scheduler sees the GPU's timing.

use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lanes_kserve::{InferRequest, OutputTensor};

use crate::backend::{Backend, BatchInfo};

/// A value one engine's hooks and runner pass between them (a Python object).
pub type Item = Box<dyn Any + Send>;

/// A request as its runner gets it.
pub struct Admitted {
    pub request: InferRequest,
    /// What the model's `preprocess` hook made of it (None: no hook).
    pub item: Option<Item>,
}

impl std::fmt::Debug for Admitted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admitted")
            .field("request", &self.request)
            .field("item", &self.item.is_some())
            .finish()
    }
}

impl From<InferRequest> for Admitted {
    fn from(request: InferRequest) -> Self {
        Self {
            request,
            item: None,
        }
    }
}

/// A request's result as its runner returns it.
pub enum Produced {
    Tensors(Vec<OutputTensor>),
    /// For the model's `postprocess` hook.
    Item(Item),
}

impl std::fmt::Debug for Produced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Tensors(t) => f.debug_tuple("Tensors").field(t).finish(),
            Self::Item(_) => f.write_str("Item(..)"),
        }
    }
}

/// Why a hook refused a request: the status it answers with and its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookError {
    /// 400 (bad input) or 500 (the hook failed).
    pub status: u16,
    pub message: String,
}

/// A model's per-request work beside the device: `preprocess` before the
/// request is queued, `postprocess` after its batch ran. Both run on the
/// front end's bounded blocking pool.
pub trait Hooks: Send + Sync + 'static {
    /// Whether the model has a `preprocess` hook.
    fn has_preprocess(&self) -> bool;
    fn preprocess(&self, request: &InferRequest) -> Result<Item, HookError>;
    /// Turns a runner's [`Produced::Item`] into the response's tensors.
    fn postprocess(&self, item: Item) -> Result<Vec<OutputTensor>, HookError>;
}

/// Runs batches of one model, on whichever device the batch names.
pub trait ModelRunner: Send + Sync + 'static {
    /// One output per input, in order, or why the model failed.
    fn run(&self, batch: &BatchInfo, inputs: Vec<Admitted>) -> Result<Vec<Produced>, String>;
}

/// A model's modelled run time on a simulated device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimCost {
    pub fixed_ms: f64,
    pub per_item_ms: f64,
}

impl SimCost {
    /// The modelled time of a batch of `rows`.
    pub fn time(&self, rows: u32) -> Duration {
        Duration::from_secs_f64((self.fixed_ms + self.per_item_ms * f64::from(rows)).max(0.0) / 1e3)
    }
}

/// Every model's runner, by model index, and which devices are simulated.
pub struct Runners {
    models: Vec<Arc<dyn ModelRunner>>,
    costs: Vec<SimCost>,
    simulated: Vec<bool>,
}

impl std::fmt::Debug for Runners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runners")
            .field("models", &self.models.len())
            .field("simulated", &self.simulated)
            .finish()
    }
}

impl Runners {
    /// `models[i]` runs model `i`; `costs[i]` is its modelled time where
    /// `simulated[d]` marks device `d` simulated.
    pub fn new(
        models: Vec<Arc<dyn ModelRunner>>,
        costs: Vec<SimCost>,
        simulated: Vec<bool>,
    ) -> Self {
        assert_eq!(models.len(), costs.len(), "a cost per model");
        Self {
            models,
            costs,
            simulated,
        }
    }
}

impl Backend for Runners {
    type Input = Admitted;
    type Output = Produced;

    fn run(&self, batch: &BatchInfo, inputs: Vec<Admitted>) -> Result<Vec<Produced>, String> {
        let t0 = Instant::now();
        let model = batch.model as usize;
        let result = self.models[model].run(batch, inputs);
        if self.simulated.get(batch.device).copied().unwrap_or(false) {
            let hold = self.costs[model].time(batch.rows);
            let spent = t0.elapsed();
            if hold > spent {
                std::thread::sleep(hold - spent);
            }
        }
        result
    }
}
