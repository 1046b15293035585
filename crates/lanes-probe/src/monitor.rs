//! The handle of a running prober.
//!
//! [`Monitor::start`] loads the targets (errors are returned at once), opens
//! the prober (see [`crate::engine`]) and binds the metrics endpoint; then
//! one tokio current-thread runtime on one thread of its own runs the rounds
//! and the endpoint. The caller reads [`Message`]s in order with
//! [`Monitor::recv`], and may ask for a reload or a stop; dropping the handle
//! stops the run.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::config::{Mode, ProbeConfig};
use crate::engine::{open, plan, Control, Loop, Prober};
use crate::error::ProbeError;
use crate::message::{Message, Notice};
use crate::metrics::Metrics;
use crate::targets::{self, Watch};

/// What [`Monitor::recv`] got.
#[derive(Debug)]
pub enum Received {
    /// The next message.
    Message(Message),
    /// Nothing within the timeout.
    Empty,
    /// The run has ended and every message was read.
    Finished,
}

/// A running prober (module docs).
#[derive(Debug)]
pub struct Monitor {
    messages: flume::Receiver<Message>,
    done: flume::Receiver<()>,
    control: Arc<Control>,
    thread: Mutex<Option<JoinHandle<Result<(), ProbeError>>>>,
    mode: Mode,
    metrics: Arc<Metrics>,
    metrics_addr: Option<SocketAddr>,
}

impl Monitor {
    /// Loads the targets, opens the prober and the metrics endpoint, starts the loop.
    pub fn start(config: ProbeConfig) -> Result<Self, ProbeError> {
        let watch = Watch::new(&config.targets);
        let loaded = targets::load(&config.targets)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ProbeError::Socket(format!("event loop: {e}")))?;
        let (tx, messages) = flume::unbounded();
        let enter = runtime.enter();
        let listener =
            match config.metrics {
                None => None,
                Some(addr) => {
                    let bind = || {
                        let l = std::net::TcpListener::bind(addr)?;
                        l.set_nonblocking(true)?;
                        tokio::net::TcpListener::from_std(l)
                    };
                    Some(bind().map_err(|e| {
                        ProbeError::Metrics(format!("metrics endpoint on {addr}: {e}"))
                    })?)
                }
            };
        let metrics_addr = listener.as_ref().and_then(|l| l.local_addr().ok());
        let (prober, notices) = open(&config, loaded.len())?;
        drop(enter);
        let (mode, buffer) = match prober {
            Prober::Syn(ref p) => (Mode::Syn, Some(p.buffer().effective)),
            Prober::Connect => (Mode::Connect, None),
        };
        let metrics = Arc::new(Metrics::new(mode, buffer));
        for n in notices {
            let _ = tx.send(Message::Notice(n));
        }
        let fleet = plan(loaded, mode);
        if mode == Mode::Syn && !fleet.connect.is_empty() {
            let _ = tx.send(Message::Notice(Notice::info(format!(
                "{} targets (IPv6, or no IPv4 route) are probed with connects",
                fleet.connect.len()
            ))));
        }
        let control = Arc::new(Control::default());
        let (done_tx, done) = flume::bounded::<()>(1);
        let lp = Loop {
            config,
            mode,
            prober,
            fleet,
            watch,
            control: control.clone(),
            metrics: metrics.clone(),
            tx,
        };
        let served = metrics.clone();
        let thread = std::thread::Builder::new()
            .name("lanes-probe".into())
            .spawn(move || {
                let _done = done_tx; // dropped when the loop ends, however it ends
                runtime.block_on(async move {
                    if let Some(l) = listener {
                        tokio::spawn(lanes_metrics_http::serve(l, move || {
                            std::future::ready(Some(served.render()))
                        }));
                    }
                    lp.run().await
                })
            })
            .map_err(|e| ProbeError::Socket(format!("probe thread: {e}")))?;
        Ok(Self {
            messages,
            done,
            control,
            thread: Mutex::new(Some(thread)),
            mode,
            metrics,
            metrics_addr,
        })
    }

    /// The next message, waiting up to `timeout`.
    pub fn recv(&self, timeout: Duration) -> Received {
        match self.messages.recv_timeout(timeout) {
            Ok(m) => Received::Message(m),
            Err(flume::RecvTimeoutError::Timeout) => Received::Empty,
            Err(flume::RecvTimeoutError::Disconnected) => Received::Finished,
        }
    }

    /// The next message if one is waiting.
    pub fn try_recv(&self) -> Received {
        match self.messages.try_recv() {
            Ok(m) => Received::Message(m),
            Err(flume::TryRecvError::Empty) => Received::Empty,
            Err(flume::TryRecvError::Disconnected) => Received::Finished,
        }
    }

    /// Ends the loop at once (a round in progress is abandoned).
    pub fn stop(&self) {
        self.control.stop.store(true, Ordering::SeqCst);
        self.control.wake.notify_one();
    }

    /// Reloads the targets file before the next round.
    pub fn reload(&self) {
        self.control.reload.store(true, Ordering::SeqCst);
    }

    /// Waits up to `timeout`; true once the loop has ended.
    pub fn wait(&self, timeout: Duration) -> bool {
        matches!(
            self.done.recv_timeout(timeout),
            Err(flume::RecvTimeoutError::Disconnected)
        )
    }

    /// Waits for the loop to end; its error, if it failed.
    pub fn join(&self) -> Result<(), ProbeError> {
        let thread = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        match thread.map(JoinHandle::join) {
            None => Ok(()),
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(ProbeError::Socket("the probe thread panicked".into())),
        }
    }

    /// The mode in use (`connect` after a fallback).
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Where the metrics endpoint listens.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.stop();
        let _ = self.join();
    }
}
