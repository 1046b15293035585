//! The driver: the one task that owns the serving state (TGI's handle → task
//! → `State`).
//!
//! **Rule.** Everything that changes the state goes through the task's one
//! channel as a `Command`: a request submitted, a request withdrawn (its
//! [`Pending`] reply was dropped: the client went away), a batch finished
//! (from a device executor), a drain. The task applies each to the
//! [`ServingState`] with `now` from its [`Clock`] and carries out the actions
//! the state returns — a batch to a device's executors, a failure to its
//! client — and sleeps until the next command or the state's
//! [`ServingState::next_wake`], whichever is first, when it polls the state.
//! Inputs wait in the task's table beside the state (which holds only ids and
//! rows) until their batch starts.
//!
//! **Grants** come from the policy engine in the state, or (`--arbiter`) from
//! the host's `lanes arbiter` daemon through the [`crate::arbiter`] link: the
//! state's asks go out on it, its grants and refusals come back as events
//! beside the commands, and a finished batch is released after the asks its
//! completion produced.
//!
//! **Inline rule.** On an idle server — no batch running on any device, and
//! none finished within the last [`INLINE_AFTER_IDLE`] — the first batch a
//! command starts, if its estimated run time is at most
//! `inline_max`, runs on the driver's own thread once the other actions of
//! its round were carried out (a batch started beside it goes to its
//! executor undelayed), when the backend allows it ([`Backend::inline`]:
//! a native engine on the CPU: no GIL, no per-thread state), instead of
//! waking the device's executor thread and then being woken by it. Those two wake-ups of sleeping threads are
//! where a lone request's tail came from (docs/results/serving.md: identity
//! at 100 req/s, p99 0.73–0.84 ms inline against 1.06–4.1 ms handed over).
//! Only when idle: nothing else waits for the driver but requests arriving
//! during the run (at most `inline_max` later than otherwise); one batch per
//! command at most, so a queue never runs on the driver batch after batch;
//! and under load, when batches follow each other, every batch goes to its
//! executor: a batch run on the driver's thread is front-end work not done
//! meanwhile, which cost `char_cnn_top1` a tenth of its capacity at the knee
//! when the rule looked only at the batches running.
//! The state is not told anything different: the batch holds its device from
//! its start to its completion, so what overlaps is the same.
//!
//! **Drain.** [`Handle::drain`] stops admission (new requests get
//! [`ServerError::ShuttingDown`], 503), lets every queued and running request
//! finish or expire, then stops the executors and the task.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use lanes_policy::{CostConfig, JobId, Nanos, Policy};
use lanes_serving::{
    Action, DeadlineRule, Grants, ModelConfig, ModelIx, Queued, RequestId, ServingState,
};
use rustc_hash::FxHashMap;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::arbiter::{self, ArbiterConfig, Link};
use crate::backend::{Backend, BatchInfo};
use crate::clock::{sleep_until, Clock};
use crate::device::{self, Executors, Finished, Item, Work};
use crate::error::{ServerError, StartError};
use crate::observe::{ObserveConfig, Observer};
use crate::probe::Probe;

/// What the driver serves, checked at start.
#[derive(Debug, Clone)]
pub struct DriverConfig {
    /// Where device grants come from (`External`: from `arbiter`).
    pub grants: Grants,
    /// The `lanes arbiter` daemon granting devices (exactly under `Grants::External`).
    pub arbiter: Option<ArbiterConfig>,
    /// Devices, ids `0..devices`.
    pub devices: usize,
    /// The run-time estimator's settings.
    pub cost: CostConfig,
    /// The models, in index order.
    pub models: Vec<ModelConfig>,
    /// A batch estimated to run at most this long runs on the driver's
    /// thread (the inline rule; 0: never).
    pub inline_max: Nanos,
    /// Whether a request must start or finish by its deadline (`--deadline-rule`).
    pub deadline_rule: DeadlineRule,
}

/// One inference request as a front end hands it in (already validated).
#[derive(Debug)]
pub struct Request<I> {
    pub model: ModelIx,
    /// Rows (the leading batch dimension), at least 1.
    pub rows: u32,
    /// Hard deadline on the driver's clock: past it the request is failed, never run.
    pub deadline: Option<Nanos>,
    /// Soft target (`sjf`'s slack rule); the deadline when none is given.
    pub target: Option<Nanos>,
    pub input: I,
}

/// A request's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply<O> {
    pub output: O,
    /// Nanoseconds from arrival to the start of its batch.
    pub queued: Nanos,
    /// The batch's measured run time.
    pub run: Nanos,
    /// Rows of the whole batch it ran in.
    pub batch_rows: u32,
    /// When the driver sent this answer (its clock).
    pub sent: Nanos,
}

pub(crate) type Answer<O> = Result<Reply<O>, ServerError>;

/// A request's answer and where it goes.
pub(crate) type Answered<O> = (oneshot::Sender<Answer<O>>, Answer<O>);

/// Messages to the driver task.
pub(crate) enum Command<B: Backend> {
    Submit {
        id: RequestId,
        arrival: Nanos,
        request: Request<B::Input>,
        reply: oneshot::Sender<Answer<B::Output>>,
    },
    Withdraw {
        model: ModelIx,
        id: RequestId,
    },
    /// A batch an executor ran.
    Finished(Finished<B::Output>),
    Drain {
        done: oneshot::Sender<()>,
    },
    /// Run `call` once on each executor thread of `device`; `threads` gets
    /// how many will.
    Call {
        device: usize,
        call: device::Call,
        threads: oneshot::Sender<usize>,
    },
    /// A run time measured outside serving (warm-up) for the estimator.
    Observe {
        model: ModelIx,
        rows: u32,
        run: Nanos,
    },
}

/// The inline rule's quiet time: no batch may have finished within it.
pub const INLINE_AFTER_IDLE: Nanos = 1_000_000;

/// A front end's way into the driver; cheap to clone.
pub struct Handle<B: Backend> {
    tx: mpsc::UnboundedSender<Command<B>>,
    clock: Clock,
    next_id: Arc<AtomicU64>,
    models: Arc<[Arc<str>]>,
    observer: Arc<Observer>,
}

impl<B: Backend> Clone for Handle<B> {
    fn clone(&self) -> Self {
        Self {
            tx: self.tx.clone(),
            clock: self.clock,
            next_id: Arc::clone(&self.next_id),
            models: Arc::clone(&self.models),
            observer: Arc::clone(&self.observer),
        }
    }
}

impl<B: Backend> std::fmt::Debug for Handle<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("models", &self.models)
            .finish_non_exhaustive()
    }
}

impl<B: Backend> Handle<B> {
    /// Starts the executors and the driver task (on the current tokio
    /// runtime); the task ends after [`Handle::drain`].
    pub fn start(config: DriverConfig, backend: B) -> Result<(Self, JoinHandle<()>), StartError> {
        Self::start_observed(config, ObserveConfig::default(), backend)
    }

    /// [`Handle::start`] with the observability's settings (device names,
    /// versions, the timeline's size).
    pub fn start_observed(
        config: DriverConfig,
        observe: ObserveConfig,
        backend: B,
    ) -> Result<(Self, JoinHandle<()>), StartError> {
        let slots = device_slots(&config)?;
        let mut state = ServingState::new(config.grants, config.devices, config.cost)?;
        state.set_deadline_rule(config.deadline_rule);
        let mut models = Vec::with_capacity(config.models.len());
        for model in &config.models {
            models.push(Arc::<str>::from(model.name.as_str()));
            state.add_model(model.clone())?;
        }
        let clock = Clock::start();
        let link = match (&config.grants, &config.arbiter) {
            (Grants::External, Some(a)) => {
                let names = match observe.devices.len() == config.devices {
                    true => observe.devices.clone(),
                    false => (0..config.devices).map(|d| format!("device:{d}")).collect(),
                };
                Some(Link::start(a.clone(), names, clock))
            }
            (Grants::External, None) | (_, Some(_)) => return Err(StartError::ExternalGrants),
            _ => None,
        };
        let probe = Probe::start(&config, observe, &state, clock);
        let observer = Arc::clone(probe.observer());
        let (tx, rx) = mpsc::unbounded_channel();
        let backend = Arc::new(backend);
        let executors = Executors::start(&slots, &backend, &tx, &observer)?;
        let models: Arc<[Arc<str>]> = models.into();
        let task = Task {
            state,
            clock,
            rx,
            executors,
            backend,
            inline_max: config.inline_max,
            inline: None,
            idle_since: None,
            waiting: FxHashMap::default(),
            running: 0,
            models: Arc::clone(&models),
            draining: Vec::new(),
            actions: Vec::new(),
            probe,
            link,
            releases: Vec::new(),
        };
        let join = tokio::spawn(task.run());
        let handle = Self {
            tx,
            clock,
            next_id: Arc::new(AtomicU64::new(1)),
            models,
            observer,
        };
        Ok((handle, join))
    }

    /// The driver's clock (deadlines are on it).
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// Statistics, metrics and the timeline ([`crate::observe`]).
    pub fn observer(&self) -> &Arc<Observer> {
        &self.observer
    }

    /// The index of the model named `name`.
    pub fn model(&self, name: &str) -> Option<ModelIx> {
        self.models
            .iter()
            .position(|m| &**m == name)
            .map(|i| i as ModelIx)
    }

    /// Submits a request; the reply resolves when it is answered. Dropping
    /// the reply first withdraws the request if it is still queued.
    pub fn infer(&self, request: Request<B::Input>) -> Pending<B> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let model = request.model;
        let (reply, rx) = oneshot::channel();
        let sent = self.tx.send(Command::Submit {
            id,
            arrival: self.clock.now(),
            request,
            reply,
        });
        Pending {
            rx,
            withdraw: sent.is_ok().then(|| (self.tx.clone(), model, id)),
        }
    }

    /// Feeds the estimator a run time measured outside serving (warm-up):
    /// `run` nanoseconds for a batch of `rows` of `model`.
    pub fn observe(&self, model: ModelIx, rows: u32, run: Nanos) {
        let _ = self.tx.send(Command::Observe { model, rows, run });
    }

    /// Runs `f` once on each executor thread of `device` (warm-up: an
    /// engine's per-thread state is made where batches will run); resolves
    /// to each thread's result, or a panic's message. Empty for no such
    /// device or once the executors stopped.
    pub fn on_executors<R: Send + 'static>(
        &self,
        device: usize,
        f: impl Fn() -> R + Send + Sync + 'static,
    ) -> impl Future<Output = Vec<Result<R, String>>> + Send + 'static {
        let (tx, rx) = flume::unbounded();
        let call: device::Call = Arc::new(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(&f))
                .map_err(|p| format!("panicked: {}", device::panic_message(&*p)));
            let _ = tx.send(result);
        });
        let (threads, n) = oneshot::channel();
        let sent = self.tx.send(Command::Call {
            device,
            call,
            threads,
        });
        async move {
            let n = match sent {
                Ok(()) => n.await.unwrap_or(0),
                Err(_) => 0,
            };
            let mut results = Vec::with_capacity(n);
            for _ in 0..n {
                match rx.recv_async().await {
                    Ok(result) => results.push(result),
                    Err(_) => break,
                }
            }
            results
        }
    }

    /// Stops admission now; the returned future resolves when every admitted
    /// request is answered and the executors have stopped.
    pub fn drain(&self) -> impl Future<Output = ()> + Send + 'static {
        let (done, rx) = oneshot::channel();
        let sent = self.tx.send(Command::Drain { done }).is_ok();
        async move {
            if sent {
                let _ = rx.await;
            }
        }
    }
}

/// A request's reply; dropping it before it resolves withdraws the request.
#[must_use = "dropping the reply withdraws the request"]
pub struct Pending<B: Backend> {
    rx: oneshot::Receiver<Answer<B::Output>>,
    withdraw: Option<(mpsc::UnboundedSender<Command<B>>, ModelIx, RequestId)>,
}

impl<B: Backend> std::fmt::Debug for Pending<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("request", &self.withdraw.as_ref().map(|w| w.2))
            .finish_non_exhaustive()
    }
}

impl<B: Backend> Future for Pending<B> {
    type Output = Answer<B::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let answer = match Pin::new(&mut self.rx).poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(answer) => answer.unwrap_or(Err(ServerError::ShuttingDown)),
        };
        self.withdraw = None;
        Poll::Ready(answer)
    }
}

impl<B: Backend> Drop for Pending<B> {
    fn drop(&mut self) {
        if let Some((tx, model, id)) = self.withdraw.take() {
            let _ = tx.send(Command::Withdraw { model, id });
        }
    }
}

/// Executor threads per device (see [`crate::device`]).
fn device_slots(config: &DriverConfig) -> Result<Vec<u32>, StartError> {
    match config.grants {
        Grants::Engine(policy) => Ok(vec![engine_slots(&policy); config.devices]),
        // Each model runs up to its own limit; the grant source decides overlap.
        Grants::Independent | Grants::External => Ok((0..config.devices)
            .map(|d| {
                config
                    .models
                    .iter()
                    .filter(|m| m.devices.contains(d))
                    .map(|m| m.batching.num_batch_threads.max(1))
                    .sum()
            })
            .collect()),
    }
}

fn engine_slots(policy: &Policy) -> u32 {
    policy.slots(1) + policy.fast_slots()
}

/// A request waiting in the task's table for its batch.
struct Waiting<B: Backend> {
    input: B::Input,
    reply: oneshot::Sender<Answer<B::Output>>,
    arrival: Nanos,
}

/// The driver task's own state.
struct Task<B: Backend> {
    state: ServingState,
    clock: Clock,
    rx: mpsc::UnboundedReceiver<Command<B>>,
    executors: Executors<B>,
    /// The backend the executors share, for batches run inline.
    backend: Arc<B>,
    /// The inline rule's bound (0: never).
    inline_max: Nanos,
    /// The batch started by the actions being applied, to run inline.
    inline: Option<Work<B>>,
    /// When the last batch finished leaving no batch running (None: none yet).
    idle_since: Option<Nanos>,
    /// Queued requests' inputs and reply channels, by id.
    waiting: FxHashMap<RequestId, Waiting<B>>,
    /// Batches on devices now.
    running: usize,
    models: Arc<[Arc<str>]>,
    /// Drain callers to answer once everything is done (draining when non-empty).
    draining: Vec<oneshot::Sender<()>>,
    actions: Vec<Action>,
    /// Statistics, device accounts and the timeline: the hook calls below.
    probe: Probe,
    /// The arbiter (`Grants::External`).
    link: Option<Link>,
    /// Finished batches to release at the arbiter, after the next asks.
    releases: Vec<(JobId, Nanos)>,
}

impl<B: Backend> Task<B> {
    async fn run(mut self) {
        loop {
            if !self.draining.is_empty() && self.waiting.is_empty() && self.running == 0 {
                break;
            }
            let wake = self.state.next_wake().map(|t| self.clock.instant(t));
            let events = async {
                match self.link.as_mut() {
                    Some(link) => link.rx.recv().await,
                    None => std::future::pending().await,
                }
            };
            let command = tokio::select! {
                command = self.rx.recv() => command,
                Some(event) = events => {
                    self.event(event);
                    continue;
                }
                () = sleep_until(wake) => {
                    self.state.poll(self.clock.now(), &mut self.actions);
                    self.apply();
                    continue;
                }
            };
            // The task holds no sender, but executors do: None means every
            // handle and executor is gone.
            let Some(command) = command else { break };
            self.handle(command);
            while let Ok(command) = self.rx.try_recv() {
                self.handle(command);
            }
        }
        self.executors.stop();
        for done in self.draining.drain(..) {
            let _ = done.send(());
        }
    }

    fn handle(&mut self, command: Command<B>) {
        let now = self.clock.now();
        match command {
            Command::Submit {
                id,
                arrival,
                request,
                reply,
            } => self.submit(now, id, arrival, request, reply),
            Command::Withdraw { model, id } => {
                if self.state.withdraw(now, model, id, &mut self.actions) {
                    self.waiting.remove(&id);
                    self.probe.withdrawn(model);
                }
            }
            Command::Finished(done) => self.finished(now, done),
            Command::Drain { done } => {
                self.probe.draining();
                self.draining.push(done);
            }
            Command::Observe { model, rows, run } => self.state.observe(model, rows, run),
            Command::Call {
                device,
                call,
                threads,
            } => {
                let _ = threads.send(self.executors.call_each(device, &call));
            }
        }
        self.apply();
    }

    /// A batch done (on an executor or inline): into the state, the device
    /// accounts and the timeline, then its answers out.
    fn finished(&mut self, now: Nanos, done: Finished<B::Output>) {
        let Finished {
            job,
            clocks,
            failed,
            answers,
        } = done;
        let run = clocks.wall;
        self.running -= 1;
        if self.running == 0 {
            self.idle_since = Some(now);
        }
        let measured = (!failed).then_some(run);
        self.state.complete(now, job, measured, &mut self.actions);
        if self.link.is_some() {
            self.releases.push((job, measured.unwrap_or(0)));
        }
        self.probe.finished(now, job, clocks, failed, &self.state);
        for (reply, mut answer) in answers {
            if let Ok(r) = &mut answer {
                r.sent = now;
            }
            let _ = reply.send(answer);
        }
    }

    /// A grant or refusal from the arbiter.
    fn event(&mut self, event: arbiter::Event) {
        let now = self.clock.now();
        match event {
            arbiter::Event::Granted { job, device } => {
                if !self.state.grant(now, job, device, &mut self.actions) {
                    // The ask was withdrawn meanwhile: give the device back.
                    self.releases.push((job, 0));
                }
            }
            arbiter::Event::Refused { job, refusal } => {
                self.state.refuse(now, job, refusal, &mut self.actions);
            }
            arbiter::Event::Notice(notice) => self.probe.observer().notice(notice),
        }
        self.apply();
    }

    /// Sends a request to the arbiter (nothing without one).
    fn tell(&self, request: arbiter::Request) {
        if let Some(link) = &self.link {
            let _ = link.tx.send(request);
        }
    }

    fn submit(
        &mut self,
        now: Nanos,
        id: RequestId,
        arrival: Nanos,
        request: Request<B::Input>,
        reply: oneshot::Sender<Answer<B::Output>>,
    ) {
        if !self.draining.is_empty() {
            let _ = reply.send(Err(ServerError::ShuttingDown));
            return;
        }
        let Request {
            model,
            rows,
            deadline,
            target,
            input,
        } = request;
        if let Err(e) = self.state.admit(now, model, rows, deadline) {
            self.probe.refused(model, &e);
            let _ = reply.send(Err(e.into()));
            return;
        }
        self.waiting.insert(
            id,
            Waiting {
                input,
                reply,
                arrival,
            },
        );
        let queued = Queued {
            id,
            rows,
            arrival,
            enqueued: now,
            deadline,
            target,
        };
        self.state.enqueue(now, model, queued, &mut self.actions);
        self.probe.queued(model);
    }

    /// Carries out the state's actions, in order; then runs the batch they
    /// started inline (the inline rule), if any, and carries out the actions
    /// its completion brought (whose batches go to their executors).
    fn apply(&mut self) {
        self.apply_actions(true);
        if let Some(work) = self.inline.take() {
            let done = device::run_batch(&*self.backend, self.probe.observer(), work);
            self.finished(self.clock.now(), done);
            self.apply_actions(false);
        }
        for (job, run) in std::mem::take(&mut self.releases) {
            self.tell(arbiter::Request::Release { job, run });
        }
        self.probe.decision_point(self.clock.now(), &self.state);
    }

    /// The actions, in order; a batch they start may be kept in `inline`
    /// (at most one) when `may_inline`.
    fn apply_actions(&mut self, may_inline: bool) {
        let now = self.clock.now();
        for action in std::mem::take(&mut self.actions) {
            match action {
                Action::Start(batch) => {
                    self.probe.started(now, &batch);
                    let items = batch
                        .requests
                        .iter()
                        .filter_map(|q| self.waiting.remove(&q.id))
                        .map(|w| Item {
                            input: w.input,
                            reply: w.reply,
                            queued: now.saturating_sub(w.arrival),
                        })
                        .collect();
                    let info = BatchInfo {
                        job: batch.job,
                        model: batch.model,
                        device: batch.device,
                        rows: batch.rows,
                    };
                    let inline = may_inline
                        && self.inline.is_none()
                        && self.running == 0
                        && self
                            .idle_since
                            .is_none_or(|t| now.saturating_sub(t) >= INLINE_AFTER_IDLE)
                        && batch.estimate <= self.inline_max
                        && self.backend.inline(&info);
                    self.state.recycle(batch.requests);
                    self.running += 1;
                    let work = Work {
                        info,
                        model_name: Arc::clone(&self.models[info.model as usize]),
                        items,
                    };
                    match inline {
                        true => self.inline = Some(work),
                        false => self.executors.submit(work),
                    }
                }
                Action::Fail {
                    model,
                    request,
                    error,
                } => {
                    self.probe.expired(model);
                    if let Some(w) = self.waiting.remove(&request) {
                        let _ = w.reply.send(Err(ServerError::Serve(*error)));
                    }
                }
                Action::Ask {
                    job,
                    model,
                    rows,
                    cost,
                    deadline,
                    devices,
                } => self.tell(arbiter::Request::Ask {
                    job,
                    ask: arbiter::Ask {
                        model: Arc::clone(&self.models[model as usize]),
                        rows,
                        cost,
                        deadline,
                        devices,
                    },
                }),
                Action::Withdraw { job } => self.tell(arbiter::Request::Withdraw { job }),
                Action::Release { job, .. } => self.tell(arbiter::Request::Release { job, run: 0 }),
            }
        }
    }
}
