//! The handle of a running daemon.
//!
//! [`Arbiter::start`] checks the configuration, creates the socket and binds
//! the metrics endpoint (errors are returned at once, before any client can
//! connect); then one tokio runtime — current-thread by default, or
//! `threads` workers — on a thread of its own runs the actor, the
//! connections and the endpoint. [`Arbiter::stop`] shuts down as
//! [`crate::daemon`] describes; the timeline is written when the run ends.
//! Dropping the handle stops the run.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::config::ArbiterSpec;
use crate::daemon::{self, Clock, Event};
use crate::error::ArbiterError;
use crate::state::State;

/// A running daemon (module docs).
#[derive(Debug)]
pub struct Arbiter {
    events: mpsc::UnboundedSender<Event>,
    notices: flume::Receiver<String>,
    done: flume::Receiver<()>,
    thread: Mutex<Option<JoinHandle<Result<(), ArbiterError>>>>,
    socket: PathBuf,
    metrics_addr: Option<SocketAddr>,
}

impl Arbiter {
    /// Checks `spec`, creates the socket, starts serving.
    pub fn start(spec: ArbiterSpec) -> Result<Self, ArbiterError> {
        let state = State::new(&spec.state_config()?)?;
        let runtime = if spec.threads > 1 {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(spec.threads)
                .enable_all()
                .build()
        } else {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
        }
        .map_err(|e| ArbiterError::Socket(format!("event loop: {e}")))?;
        let metrics_listener = match spec.metrics {
            None => None,
            Some(addr) => {
                let l = std::net::TcpListener::bind(addr)
                    .and_then(|l| l.set_nonblocking(true).map(|()| l))
                    .map_err(|e| {
                        ArbiterError::Metrics(format!("--metrics-port: {addr}: cannot listen: {e}"))
                    })?;
                Some(l)
            }
        };
        let metrics_addr = metrics_listener.as_ref().and_then(|l| l.local_addr().ok());
        let (std_listener, notices) = daemon::bind(&spec.socket, spec.mode, spec.uid, spec.gid)?;
        let (notice_tx, notice_rx) = flume::unbounded();
        for n in notices {
            let _ = notice_tx.send(n);
        }
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let (done_tx, done) = flume::bounded::<()>(1);
        let socket = spec.socket.clone();
        let trace = spec.trace.clone();
        let actor_events = events_tx.clone();
        let actor_notices = notice_tx.clone();
        let thread = std::thread::Builder::new()
            .name("lanes-arbiter".into())
            .spawn(move || {
                let _done = done_tx; // dropped when the run ends, however it ends
                let state = runtime.block_on(async move {
                    let listener = tokio::net::UnixListener::from_std(std_listener)
                        .map_err(|e| ArbiterError::Socket(format!("--socket: {e}")))?;
                    if let Some(l) = metrics_listener {
                        let l = tokio::net::TcpListener::from_std(l)
                            .map_err(|e| ArbiterError::Metrics(format!("--metrics-port: {e}")))?;
                        let ask = actor_events.clone();
                        tokio::spawn(lanes_metrics_http::serve(l, move || {
                            let (tx, rx) = flume::bounded(1);
                            let sent = ask.send(Event::Metrics(tx)).is_ok();
                            async move {
                                if sent {
                                    rx.recv_async().await.ok()
                                } else {
                                    None
                                }
                            }
                        }));
                    }
                    let sock = socket.clone();
                    Ok::<_, ArbiterError>(
                        daemon::run(
                            state,
                            listener,
                            sock,
                            Clock::new(),
                            actor_events,
                            events_rx,
                            actor_notices,
                        )
                        .await,
                    )
                });
                runtime.shutdown_timeout(Duration::from_millis(100));
                let state = state?;
                if let Some(path) = trace {
                    let json = state.timeline_json().unwrap_or_default();
                    // A temporary file beside it, then a rename: never half a file.
                    let tmp = path.with_extension("tmp");
                    std::fs::write(&tmp, json)
                        .and_then(|()| std::fs::rename(&tmp, &path))
                        .map_err(|e| {
                            ArbiterError::Output(format!(
                                "--trace {}: cannot write: {e}",
                                path.display()
                            ))
                        })?;
                    let _ = notice_tx.send(format!("timeline written to {}", path.display()));
                }
                Ok(())
            })
            .map_err(|e| ArbiterError::Socket(format!("arbiter thread: {e}")))?;
        Ok(Self {
            events: events_tx,
            notices: notice_rx,
            done,
            thread: Mutex::new(Some(thread)),
            socket: spec.socket,
            metrics_addr,
        })
    }

    /// Starts the shutdown (module docs of [`crate::daemon`]).
    pub fn stop(&self) {
        let _ = self.events.send(Event::Stop);
    }

    /// Waits up to `timeout`; true once the run has ended.
    pub fn wait(&self, timeout: Duration) -> bool {
        matches!(
            self.done.recv_timeout(timeout),
            Err(flume::RecvTimeoutError::Disconnected)
        )
    }

    /// Waits for the end; the error, if the run failed.
    pub fn join(&self) -> Result<(), ArbiterError> {
        let thread = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        match thread.map(JoinHandle::join) {
            None => Ok(()),
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(ArbiterError::Socket("the arbiter thread panicked".into())),
        }
    }

    /// The next log line, waiting up to `timeout`; `None` if none came.
    pub fn notice(&self, timeout: Duration) -> Option<String> {
        self.notices.recv_timeout(timeout).ok()
    }

    fn ask(&self, make: impl FnOnce(flume::Sender<String>) -> Event) -> Option<String> {
        let (tx, rx) = flume::bounded(1);
        self.events.send(make(tx)).ok()?;
        rx.recv_timeout(Duration::from_secs(5)).ok()
    }

    /// The metrics as OpenMetrics text; `None` once stopped.
    pub fn metrics(&self) -> Option<String> {
        self.ask(Event::Metrics)
    }

    /// The STATS_REPLY document; `None` once stopped.
    pub fn stats(&self) -> Option<String> {
        self.ask(Event::Stats)
    }

    /// The socket path.
    pub fn socket(&self) -> &std::path::Path {
        &self.socket
    }

    /// Where the metrics endpoint listens.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }
}

impl Drop for Arbiter {
    fn drop(&mut self) {
        self.stop();
        let _ = self.join();
    }
}
