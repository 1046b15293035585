//! The engine: runs a [`RunConfig`] on sender threads and returns what they
//! recorded.
//!
//! Structure (wrk's, with an open-loop pacer beside it):
//! - `threads` OS threads, each a single-threaded tokio runtime that owns
//!   `connections / threads` connections, one task per connection, and a
//!   [`Recorder`] of its own (no locks on the hot path; merged at the end);
//! - open loop: a pacer task on each thread claims the next slot of the one
//!   global schedule whenever the thread has a free connection, waits for its
//!   time on a precise timer, and hands it to that connection (see
//!   [`crate::pacer`]);
//! - closed loop: each connection sends its next request as soon as the
//!   previous reply ends; slot indices come from one shared counter; a task
//!   on each thread keeps it polling between replies rather than sleeping
//!   (see [`crate::spin`]).
//!
//! Lifecycle: [`Run::start`] checks that the target accepts a connection
//! (else `connect_failed`), opens every connection, then starts the clock for
//! all threads at once. The run issues requests until `duration` or
//! `requests`, lets requests in flight finish (each bounded by the timeout),
//! and ends. [`Run::stop`] ends it early: nothing more is sent and requests in
//! flight are abandoned (counted as unfinished). A run always ends by itself.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Condvar, Mutex, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio::task::LocalSet;

use crate::config::{Load, RunConfig};
use crate::error::LoadError;
use crate::grpc::GrpcConnector;
use crate::pacer::{Claims, Slot, Timer};
use crate::recorder::{Failure, Recorder};
use crate::sender::{Connect, Exchange, FrameConnector, HttpConnector};
use crate::spin::{self, Replies};
use crate::target::Protocol;

/// Pause after a failed connect in closed loop, so a dead target is not spun on.
const RECONNECT_PAUSE: Duration = Duration::from_millis(10);

/// Live counts for a progress line.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Progress {
    /// Seconds since the clock started.
    pub elapsed_s: f64,
    /// Requests sent.
    pub sent: u64,
    /// Replies received.
    pub replies: u64,
    /// Failures and replies with status >= 400.
    pub errors: u64,
    /// True once every thread has ended.
    pub finished: bool,
}

#[derive(Debug, Default)]
#[repr(align(128))]
struct Counters {
    sent: AtomicU64,
    replies: AtomicU64,
    errors: AtomicU64,
}

#[derive(Debug)]
struct Shared {
    start: OnceLock<Instant>,
    stop: AtomicBool,
    /// Stop was asked for while threads were still running.
    interrupted: AtomicBool,
    stop_tx: watch::Sender<bool>,
    next_slot: AtomicU64,
    counters: Vec<Counters>,
    running: AtomicUsize,
    done: (Mutex<bool>, Condvar),
    ended_ns: AtomicU64,
    claims: Option<Claims>,
}

impl Shared {
    fn now_ns(&self) -> u64 {
        self.start
            .get()
            .map_or(0, |s| s.elapsed().as_nanos() as u64)
    }

    fn request_stop(&self) {
        if self.running.load(Ordering::Acquire) > 0 {
            self.interrupted.store(true, Ordering::Relaxed);
        }
        self.stop.store(true, Ordering::Relaxed);
        self.stop_tx.send_replace(true);
    }

    fn thread_ended(&self) {
        if self.running.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.ended_ns.store(self.now_ns(), Ordering::Relaxed);
            let (lock, cvar) = &self.done;
            *lock.lock().expect("done lock") = true;
            cvar.notify_all();
        }
    }
}

/// What a finished run measured.
#[derive(Debug)]
pub struct Outcome {
    /// Every thread's recorder, merged.
    pub recorder: Recorder,
    /// Slots the open-loop schedule released (None in closed loop).
    pub scheduled: Option<u64>,
    /// From the clock's start to the last thread's end.
    pub elapsed: Duration,
    /// True when [`Run::stop`] ended the run early.
    pub interrupted: bool,
}

/// A run in progress.
#[derive(Debug)]
pub struct Run {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<Recorder>>,
}

impl Run {
    /// Checks the target, opens the connections and starts the clock.
    pub fn start(config: RunConfig) -> Result<Self, LoadError> {
        match config.target.protocol {
            Protocol::Http1 => {
                Self::start_with(HttpConnector::new(&config.target, &config.corpus), config)
            }
            Protocol::Frame => Self::start_with(
                FrameConnector::new(&config.target, config.frames.clone()),
                config,
            ),
            Protocol::Grpc => {
                let connector =
                    GrpcConnector::new(&config.target, &config.corpus, config.grpc_connections)
                        .map_err(|e| LoadError::BadUrl(format!("{}: {e}", config.target.url)))?;
                Self::start_with(connector, config)
            }
        }
    }

    fn start_with<C: Connect>(connector: C, config: RunConfig) -> Result<Self, LoadError> {
        preflight(&connector, &config)?;
        let config = Arc::new(config);
        let (stop_tx, _) = watch::channel(false);
        let shared = Arc::new(Shared {
            start: OnceLock::new(),
            stop: AtomicBool::new(false),
            interrupted: AtomicBool::new(false),
            stop_tx,
            next_slot: AtomicU64::new(0),
            counters: (0..config.threads).map(|_| Counters::default()).collect(),
            running: AtomicUsize::new(config.threads),
            done: (Mutex::new(false), Condvar::new()),
            ended_ns: AtomicU64::new(0),
            claims: match config.load {
                Load::Open { rate, arrival } => Some(Claims::for_run(
                    rate,
                    arrival,
                    config.seed,
                    config.duration.map(|d| d.as_nanos() as u64),
                    config.requests,
                )?),
                Load::Closed => None,
            },
        });
        let barrier = Arc::new(Barrier::new(config.threads + 1));
        let mut workers = Vec::with_capacity(config.threads);
        for t in 0..config.threads {
            let share = config.connections / config.threads
                + usize::from(t < config.connections % config.threads);
            let worker = Worker {
                index: t,
                connections: share,
                config: config.clone(),
                shared: shared.clone(),
                barrier: barrier.clone(),
            };
            let connector = connector.clone();
            let handle = thread::Builder::new()
                .name(format!("lanes-load-{t}"))
                .spawn(move || worker.run(connector))
                .map_err(|e| LoadError::Io(format!("cannot start a sender thread: {e}")))?;
            workers.push(handle);
        }
        barrier.wait(); // every connection is open (or failed)
        shared
            .start
            .set(Instant::now())
            .expect("the clock starts once");
        barrier.wait();
        Ok(Self { shared, workers })
    }

    /// Live counts.
    pub fn progress(&self) -> Progress {
        let finished = self.is_finished();
        let elapsed_ns = if finished {
            self.shared.ended_ns.load(Ordering::Relaxed)
        } else {
            self.shared.now_ns()
        };
        let mut p = Progress {
            elapsed_s: elapsed_ns as f64 / 1e9,
            finished,
            ..Progress::default()
        };
        for c in &self.shared.counters {
            p.sent += c.sent.load(Ordering::Relaxed);
            p.replies += c.replies.load(Ordering::Relaxed);
            p.errors += c.errors.load(Ordering::Relaxed);
        }
        p
    }

    /// Ends the run now: nothing more is sent, requests in flight are abandoned.
    /// The result is marked interrupted unless the run had already ended.
    pub fn stop(&self) {
        self.shared.request_stop();
    }

    /// True once every sender thread has ended.
    pub fn is_finished(&self) -> bool {
        *self.shared.done.0.lock().expect("done lock")
    }

    /// Waits up to `timeout` for the run to end; true when it has.
    pub fn wait(&self, timeout: Duration) -> bool {
        let (lock, cvar) = &self.shared.done;
        let guard = lock.lock().expect("done lock");
        let (guard, _) = cvar
            .wait_timeout_while(guard, timeout, |done| !*done)
            .expect("done lock");
        *guard
    }

    /// Waits for the end and merges what every thread recorded.
    pub fn join(self) -> Outcome {
        let mut recorder: Option<Recorder> = None;
        for w in self.workers {
            let r = w.join().expect("sender threads do not panic");
            match &mut recorder {
                None => recorder = Some(r),
                Some(m) => m.merge(&r),
            }
        }
        let interrupted = self.shared.interrupted.load(Ordering::Relaxed);
        let scheduled = self.shared.claims.as_ref().map(Claims::claimed);
        Outcome {
            recorder: recorder.expect("at least one thread"),
            scheduled,
            elapsed: Duration::from_nanos(self.shared.ended_ns.load(Ordering::Relaxed)),
            interrupted,
        }
    }
}

/// Opens and closes one connection, so an unreachable target fails fast.
fn preflight<C: Connect>(connector: &C, config: &RunConfig) -> Result<(), LoadError> {
    let rt = runtime()?;
    let local = LocalSet::new();
    let timeout = config.timeout.min(Duration::from_secs(5));
    local.block_on(&rt, async {
        match tokio::time::timeout(timeout, connector.connect()).await {
            Ok(Ok(_conn)) => Ok(()),
            Ok(Err(e)) => Err(LoadError::Connect(format!(
                "cannot connect to {}: {e}",
                config.target.url
            ))),
            Err(_) => Err(LoadError::Connect(format!(
                "cannot connect to {}: no answer within {timeout:?}",
                config.target.url
            ))),
        }
    })
}

fn runtime() -> Result<tokio::runtime::Runtime, LoadError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| LoadError::Io(format!("cannot start a runtime: {e}")))
}

struct Worker {
    index: usize,
    connections: usize,
    config: Arc<RunConfig>,
    shared: Arc<Shared>,
    barrier: Arc<Barrier>,
}

/// What every connection task of one thread shares.
struct Context<C> {
    connector: C,
    config: Arc<RunConfig>,
    shared: Arc<Shared>,
    recorder: Rc<RefCell<Recorder>>,
    thread: usize,
    /// Open loop: slots this thread's pacer released, for its connections.
    slots: flume::Receiver<Slot>,
    /// Open loop: this thread's free connections.
    idle: tokio::sync::Semaphore,
    /// Closed loop: replies ended on this thread, watched by its spinner.
    replies: Replies,
}

impl Worker {
    fn run<C: Connect>(self, connector: C) -> Recorder {
        let recorder = Rc::new(RefCell::new(Recorder::new(
            self.config.late_after.as_nanos() as u64,
            self.config.send_log.is_some(),
        )));
        let Ok(rt) = runtime() else {
            self.barrier.wait();
            self.barrier.wait();
            self.shared.thread_ended();
            return Rc::try_unwrap(recorder).expect("sole owner").into_inner();
        };
        let local = LocalSet::new();
        let (slots_tx, slots_rx) = flume::bounded::<Slot>(self.connections.max(1));
        let ctx = Rc::new(Context {
            connector,
            config: self.config.clone(),
            shared: self.shared.clone(),
            recorder: recorder.clone(),
            thread: self.index,
            slots: slots_rx,
            idle: tokio::sync::Semaphore::new(self.connections),
            replies: Replies::default(),
        });
        // Open every connection before the clock starts.
        let conns: Vec<Option<C::Conn>> = local.block_on(&rt, async {
            let mut opening = Vec::with_capacity(self.connections);
            for _ in 0..self.connections {
                let ctx = ctx.clone();
                opening.push(tokio::task::spawn_local(async move {
                    let timeout = ctx.config.timeout;
                    tokio::time::timeout(timeout, ctx.connector.connect())
                        .await
                        .ok()
                        .and_then(Result::ok)
                }));
            }
            let mut conns = Vec::with_capacity(opening.len());
            for h in opening {
                conns.push(h.await.ok().flatten());
            }
            conns
        });
        self.barrier.wait();
        self.barrier.wait();
        let hard_end = hard_end(&self.config);
        local.block_on(&rt, async {
            let mut tasks = Vec::with_capacity(conns.len() + 1);
            if self.shared.claims.is_some() {
                let ctx = ctx.clone();
                tasks.push(spawn_until_stopped(ctx.clone(), async move {
                    pace(&ctx, slots_tx).await
                }));
            } else {
                drop(slots_tx);
                // Not among `tasks`: it never ends, and goes with the others.
                let ctx = ctx.clone();
                tokio::task::spawn_local(async move {
                    spin::spin(&ctx.replies, spin::WINDOW_NS, || ctx.shared.now_ns()).await
                });
            }
            for conn in conns {
                let ctx = ctx.clone();
                tasks.push(spawn_until_stopped(ctx.clone(), async move {
                    connection(&ctx, conn).await
                }));
            }
            let all = async {
                for t in tasks {
                    let _ = t.await;
                }
            };
            match hard_end {
                Some(d) => {
                    let deadline = tokio::time::Instant::from_std(
                        *self.shared.start.get().expect("started") + d,
                    );
                    tokio::select! {
                        _ = all => {}
                        _ = tokio::time::sleep_until(deadline) => {}
                    }
                }
                None => all.await,
            }
        });
        drop(local); // abandons what the hard end cut off
        drop(ctx);
        self.shared.thread_ended();
        Rc::try_unwrap(recorder)
            .expect("every task has ended")
            .into_inner()
    }
}

/// Spawns `work` on this thread's task set; it is dropped (abandoning what it
/// was doing) as soon as the run is asked to stop.
fn spawn_until_stopped<C: Connect>(
    ctx: Rc<Context<C>>,
    work: impl std::future::Future<Output = ()> + 'static,
) -> tokio::task::JoinHandle<()> {
    tokio::task::spawn_local(async move {
        let mut stop = ctx.shared.stop_tx.subscribe();
        tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => {}
            _ = work => {}
        }
    })
}

/// When a thread abandons requests still in flight: the issuing window plus
/// one timeout (closed loop bounded by count alone needs none: every request
/// is bounded by the timeout).
fn hard_end(config: &RunConfig) -> Option<Duration> {
    let window = match (config.duration, config.load) {
        (Some(d), _) => Some(d),
        (None, Load::Open { rate, .. }) => config
            .requests
            .map(|n| Duration::from_secs_f64(n as f64 / rate * 1.5 + 1.0)),
        (None, Load::Closed) => None,
    };
    window.map(|w| w + config.timeout)
}

/// Open loop: claims a slot of the global schedule for each free connection
/// of this thread, waits for its time, and hands it over; ends with the
/// schedule (dropping `slots` then lets the connections finish).
async fn pace<C: Connect>(ctx: &Context<C>, slots: flume::Sender<Slot>) {
    let claims = ctx.shared.claims.as_ref().expect("open loop");
    let start = *ctx.shared.start.get().expect("started");
    // Without a timerfd, fall back to tokio's millisecond timer.
    let timer = Timer::new(start).ok();
    loop {
        let Ok(permit) = ctx.idle.acquire().await else {
            return;
        };
        permit.forget(); // given back by the connection when its request ends
        let Some(slot) = claims.claim() else {
            return;
        };
        let waited = match &timer {
            Some(t) => t.until(slot.at).await.is_ok(),
            None => false,
        };
        if !waited {
            tokio::time::sleep_until(tokio::time::Instant::from_std(
                start + Duration::from_nanos(slot.at),
            ))
            .await;
        }
        if slots.send_async(slot).await.is_err() {
            return;
        }
    }
}

/// Gives a connection back to its thread's pacer when dropped (also when a
/// request ends by an error or a `continue`).
struct FreeAgain<'a>(&'a tokio::sync::Semaphore);

impl Drop for FreeAgain<'_> {
    fn drop(&mut self) {
        self.0.add_permits(1);
    }
}

/// One connection's loop until the run's bound.
async fn connection<C: Connect>(ctx: &Context<C>, mut conn: Option<C::Conn>) {
    let counters = &ctx.shared.counters[ctx.thread];
    let end_ns = ctx.config.duration.map(|d| d.as_nanos() as u64);
    let max = ctx.config.requests.unwrap_or(u64::MAX);
    let closed = ctx.config.load == Load::Closed;
    let start = *ctx.shared.start.get().expect("started");
    // One timer per connection, moved on at each request: moving a deadline
    // later touches no timer wheel (a fresh timeout per request would).
    let deadline = tokio::time::sleep(ctx.config.timeout);
    tokio::pin!(deadline);
    loop {
        let slot = if closed {
            if end_ns.is_some_and(|end| ctx.shared.now_ns() >= end) {
                return;
            }
            let index = ctx.shared.next_slot.fetch_add(1, Ordering::Relaxed);
            if index >= max {
                return;
            }
            Slot { index, at: 0 }
        } else {
            match ctx.slots.recv_async().await {
                Ok(slot) => slot,
                Err(_) => return, // the schedule has ended
            }
        };
        let _free_again = (!closed).then_some(FreeAgain(&ctx.idle));
        let number = ctx.config.corpus.pick_index(slot.index);
        let entry = &ctx.config.corpus.entries()[number];
        // Reopen a connection the server closed between requests.
        let usable = match &mut conn {
            Some(c) => c.usable().await,
            None => false,
        };
        if !usable {
            conn = None;
            match tokio::time::timeout(ctx.config.timeout, ctx.connector.connect()).await {
                Ok(Ok(c)) => conn = Some(c),
                _ => {
                    ctx.recorder
                        .borrow_mut()
                        .on_failure(Failure::Connect, ctx.shared.now_ns());
                    counters.errors.fetch_add(1, Ordering::Relaxed);
                    if closed {
                        tokio::time::sleep(RECONNECT_PAUSE).await;
                    }
                    continue;
                }
            }
        }
        let c = conn.as_mut().expect("connected above");
        let sent = ctx.shared.now_ns();
        let intended = if closed { sent } else { slot.at };
        ctx.recorder
            .borrow_mut()
            .on_send(slot.index, intended, sent, entry.body.len() as u64);
        counters.sent.fetch_add(1, Ordering::Relaxed);
        let due = start + Duration::from_nanos(sent) + ctx.config.timeout;
        deadline.as_mut().reset(tokio::time::Instant::from_std(due));
        let result = tokio::select! {
            biased;
            reply = c.exchange(number, entry) => Ok(reply),
            () = &mut deadline => Err(()),
        };
        let done = ctx.shared.now_ns();
        ctx.replies.count();
        let mut rec = ctx.recorder.borrow_mut();
        match result {
            Ok(Ok(reply)) => {
                rec.on_reply(intended, sent, done, reply.status, reply.bytes);
                if let Some(code) = reply.grpc {
                    rec.on_grpc(code);
                }
                counters.replies.fetch_add(1, Ordering::Relaxed);
                if reply.status >= 400 {
                    counters.errors.fetch_add(1, Ordering::Relaxed);
                }
            }
            Ok(Err(failure)) => {
                rec.on_failure(failure, done);
                counters.errors.fetch_add(1, Ordering::Relaxed);
                conn = None;
            }
            Err(_) => {
                rec.on_failure(Failure::Timeout, done);
                counters.errors.fetch_add(1, Ordering::Relaxed);
                conn = None;
            }
        }
    }
}
