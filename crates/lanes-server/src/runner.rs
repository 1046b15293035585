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
//! on the CPU as anywhere else, and the executor holds the device until the
//! model's modelled work (`fixed_ms + per_item_ms × rows` of solo time) is
//! done, counted from the batch's start under processor sharing
//! ([`SimShare`]): k batches on the device each progress at 1/k speed, so
//! overlapping work only waits, as on a GPU.

use std::any::Any;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rustc_hash::FxHashMap;

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

    /// Warm-up: runs one batch of `rows` rows of zeros on `device` and
    /// returns its time; None for a runner that is warmed elsewhere (a
    /// Python model: by its replicas) or cannot make zeros.
    fn warm(&self, _device: usize, _rows: u32) -> Result<Option<Duration>, String> {
        Ok(None)
    }

    /// Whether a tiny batch of this model on `device` may run on the
    /// driver's thread ([`Backend::inline`]): a native engine, no GIL, no
    /// per-thread state. No by default.
    fn inline(&self, _device: usize) -> bool {
        false
    }
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

/// Processor sharing on one simulated device: whenever a batch joins or
/// leaves, every remaining work is reduced by the time elapsed divided by
/// the number of batches that shared it; a batch leaves when its work is 0.
#[derive(Debug, Default)]
pub struct SimShare {
    state: Mutex<ShareState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct ShareState {
    /// Ticket → remaining solo work, in seconds.
    jobs: FxHashMap<u64, f64>,
    last: Option<Instant>,
    next: u64,
}

impl ShareState {
    fn advance(&mut self, now: Instant) {
        let k = self.jobs.len();
        if let (Some(last), true) = (self.last, k > 0) {
            let done = now.duration_since(last).as_secs_f64() / k as f64;
            for rem in self.jobs.values_mut() {
                *rem -= done;
            }
        }
        self.last = Some(now);
    }
}

impl SimShare {
    /// A batch of `work` solo time joins the device now; returns its ticket.
    pub fn enter(&self, work: Duration) -> u64 {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        st.advance(Instant::now());
        let ticket = st.next;
        st.next += 1;
        st.jobs.insert(ticket, work.as_secs_f64());
        drop(st);
        self.changed.notify_all();
        ticket
    }

    /// Blocks until the batch `ticket` has had its work, then leaves.
    pub fn wait(&self, ticket: u64) {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            st.advance(Instant::now());
            let rem = st.jobs.get(&ticket).copied().unwrap_or(0.0);
            if rem <= 0.0 {
                st.jobs.remove(&ticket);
                drop(st);
                self.changed.notify_all();
                return;
            }
            let k = st.jobs.len() as f64;
            let until = Duration::from_secs_f64(rem * k);
            st = self
                .changed
                .wait_timeout(st, until)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

/// A batch on a simulated device: dropping it waits out the batch's work.
struct Held<'a>(&'a SimShare, u64);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.wait(self.1);
    }
}

/// Every model's runner, by model index, and which devices are simulated.
pub struct Runners {
    models: Vec<Arc<dyn ModelRunner>>,
    costs: Vec<SimCost>,
    simulated: Vec<bool>,
    /// Per device, its processor sharing (simulated devices only).
    shares: Vec<SimShare>,
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
        let shares = simulated.iter().map(|_| SimShare::default()).collect();
        Self {
            models,
            costs,
            simulated,
            shares,
        }
    }
}

impl Backend for Runners {
    type Input = Admitted;
    type Output = Produced;

    fn run(&self, batch: &BatchInfo, inputs: Vec<Admitted>) -> Result<Vec<Produced>, String> {
        let model = batch.model as usize;
        if !self.simulated.get(batch.device).copied().unwrap_or(false) {
            return self.models[model].run(batch, inputs);
        }
        let share = &self.shares[batch.device];
        // Held until its work is done, also when the model panics.
        let _held = Held(share, share.enter(self.costs[model].time(batch.rows)));
        self.models[model].run(batch, inputs)
    }

    /// Never on a simulated device (its batch holds the device for the
    /// modelled time); elsewhere as the model's runner says.
    fn inline(&self, batch: &BatchInfo) -> bool {
        !self.simulated.get(batch.device).copied().unwrap_or(true)
            && self.models[batch.model as usize].inline(batch.device)
    }
}
