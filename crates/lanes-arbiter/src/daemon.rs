//! The running daemon: the socket, one actor task that owns the [`State`],
//! and a task per connection.
//!
//! - **Socket.** `bind` creates the Unix socket with the configured mode
//!   (0660 by default) and owner/group. An existing path is refused unless it
//!   is a socket nobody listens on (a stale socket of a dead daemon), which is
//!   replaced; a live daemon's socket is never touched.
//! - **Connections** read whatever bytes are ready, cut them into frames,
//!   decode each and forward it to the actor; a bad length or body is
//!   answered ERROR there and the connection closed. Replies come back on the
//!   connection's own channel; everything waiting is encoded into one buffer
//!   and written with one `write` per wake-up. A reply ERROR closes it too.
//! - **Actor.** Takes every event waiting (up to 1024) per wake-up, applies
//!   them to the state in order, then checks hold limits and dispatches once,
//!   and routes the replies. It sleeps until the next event or the next hold
//!   limit / deadline the state names.
//! - **Stop.** The socket file is removed and no connection is accepted, every
//!   queued acquire is answered REJECT(shutting_down), each connection writes
//!   what it has and closes (waited for up to 2 s).

use std::io::ErrorKind;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustc_hash::FxHashMap;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, Notify};

use crate::error::ArbiterError;
use crate::protocol::{decode, encode_frame, frame_len, ErrorCode, Message, MAX_FRAME};
use crate::state::{ConnId, Out, State};

/// What the actor hears.
#[derive(Debug)]
pub(crate) enum Event {
    Open {
        conn: ConnId,
        replies: mpsc::UnboundedSender<Message>,
    },
    Frame {
        conn: ConnId,
        msg: Message,
    },
    Closed {
        conn: ConnId,
        error: Option<ErrorCode>,
    },
    Metrics(flume::Sender<String>),
    Stats(flume::Sender<String>),
    Stop,
}

/// Creates the socket at `path` (module docs); the notices to log.
pub(crate) fn bind(
    path: &Path,
    mode: u32,
    uid: Option<u32>,
    gid: Option<u32>,
) -> Result<(std::os::unix::net::UnixListener, Vec<String>), ArbiterError> {
    let shown = path.display();
    let mut notices = Vec::new();
    match std::fs::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_socket() => {
            return Err(ArbiterError::SocketInUse(format!(
                "--socket {shown}: exists and is not a socket; remove it or choose another path"
            )));
        }
        Ok(_) => match std::os::unix::net::UnixStream::connect(path) {
            Ok(_) => {
                return Err(ArbiterError::SocketInUse(format!(
                    "--socket {shown}: a live arbiter is listening there; stop it or choose another path"
                )));
            }
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                std::fs::remove_file(path).map_err(|e| {
                    ArbiterError::Socket(format!(
                        "--socket {shown}: cannot remove the stale socket: {e}"
                    ))
                })?;
                notices.push(format!(
                    "replaced the stale socket {shown} (no daemon listened on it)"
                ));
            }
            Err(e) => {
                return Err(ArbiterError::Socket(format!(
                    "--socket {shown}: exists and cannot be probed ({e})"
                )));
            }
        },
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(ArbiterError::Socket(format!("--socket {shown}: {e}"))),
    }
    let listener = std::os::unix::net::UnixListener::bind(path)
        .map_err(|e| ArbiterError::Socket(format!("--socket {shown}: cannot bind: {e}")))?;
    let setup = || -> std::io::Result<()> {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
        if uid.is_some() || gid.is_some() {
            std::os::unix::fs::chown(path, uid, gid)?;
        }
        listener.set_nonblocking(true)
    };
    if let Err(e) = setup() {
        let _ = std::fs::remove_file(path);
        return Err(ArbiterError::Socket(format!(
            "--socket {shown}: cannot set mode {mode:o} / owner: {e}"
        )));
    }
    Ok((listener, notices))
}

/// Nanoseconds since the daemon started.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock(Instant);

impl Clock {
    pub(crate) fn new() -> Self {
        Self(Instant::now())
    }

    pub(crate) fn now(&self) -> u64 {
        self.0.elapsed().as_nanos() as u64
    }

    fn instant(&self, at: u64) -> tokio::time::Instant {
        tokio::time::Instant::from_std(self.0 + Duration::from_nanos(at))
    }
}

/// Accepts connections until `stop` is notified.
async fn accept(
    listener: UnixListener,
    events: mpsc::UnboundedSender<Event>,
    stop: Arc<Notify>,
    done: mpsc::Sender<()>,
) {
    let mut next: ConnId = 1;
    loop {
        let stream = tokio::select! {
            () = stop.notified() => return,
            r = listener.accept() => match r {
                Ok((s, _)) => s,
                Err(_) => {
                    // Out of descriptors and the like: wait a little rather than spin.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let conn = next;
        next += 1;
        let (tx, rx) = mpsc::unbounded_channel();
        if events.send(Event::Open { conn, replies: tx }).is_err() {
            return;
        }
        tokio::spawn(connection(stream, conn, events.clone(), rx, done.clone()));
    }
}

/// One connection's task (module docs).
async fn connection(
    mut stream: UnixStream,
    conn: ConnId,
    events: mpsc::UnboundedSender<Event>,
    mut replies: mpsc::UnboundedReceiver<Message>,
    _done: mpsc::Sender<()>,
) {
    let (mut rd, mut wr) = stream.split();
    let mut rbuf: Vec<u8> = Vec::with_capacity(8192);
    let mut wbuf: Vec<u8> = Vec::with_capacity(4096);
    let mut batch: Vec<Message> = Vec::with_capacity(64);
    let mut error = None;
    'outer: loop {
        if rbuf.capacity() - rbuf.len() < 4096 {
            rbuf.reserve(8192);
        }
        tokio::select! {
            n = replies.recv_many(&mut batch, 256) => {
                let mut closing = n == 0;
                for m in batch.drain(..) {
                    closing |= matches!(m, Message::Error { .. });
                    encode_frame(&m, &mut wbuf);
                }
                if !wbuf.is_empty() && wr.write_all(&wbuf).await.is_err() {
                    break;
                }
                wbuf.clear();
                if closing {
                    break;
                }
            }
            r = rd.read_buf(&mut rbuf) => {
                if !matches!(r, Ok(n) if n > 0) {
                    break;
                }
                let mut pos = 0;
                while rbuf.len() - pos >= 4 {
                    let prefix = [rbuf[pos], rbuf[pos + 1], rbuf[pos + 2], rbuf[pos + 3]];
                    let decoded = frame_len(prefix).and_then(|len| {
                        if rbuf.len() - pos - 4 < len {
                            return Ok(None);
                        }
                        let m = decode(&rbuf[pos + 4..pos + 4 + len])?;
                        pos += 4 + len;
                        Ok(Some(m))
                    });
                    match decoded {
                        Ok(Some(msg)) => {
                            if events.send(Event::Frame { conn, msg }).is_err() {
                                break 'outer;
                            }
                        }
                        Ok(None) => break,
                        Err(e) => {
                            error = Some(e.code());
                            let m = Message::Error { code: e.code(), message: e.to_string() };
                            encode_frame(&m, &mut wbuf);
                            let _ = wr.write_all(&wbuf).await;
                            break 'outer;
                        }
                    }
                }
                rbuf.drain(..pos);
                debug_assert!(rbuf.len() < MAX_FRAME + 4);
            }
        }
    }
    let _ = wr.shutdown().await;
    let _ = events.send(Event::Closed { conn, error });
}

/// The actor: owns the state until stopped; returns it (for the timeline).
pub(crate) async fn run(
    mut state: State,
    listener: UnixListener,
    socket: PathBuf,
    clock: Clock,
    events_tx: mpsc::UnboundedSender<Event>,
    mut events: mpsc::UnboundedReceiver<Event>,
    notices: flume::Sender<String>,
) -> State {
    let stop_accept = Arc::new(Notify::new());
    let (done_tx, mut done_rx) = mpsc::channel::<()>(1);
    tokio::spawn(accept(listener, events_tx, stop_accept.clone(), done_tx));
    let mut conns: FxHashMap<ConnId, mpsc::UnboundedSender<Message>> = FxHashMap::default();
    let mut batch: Vec<Event> = Vec::with_capacity(1024);
    let mut out: Vec<Out> = Vec::with_capacity(1024);
    let mut stopping = false;
    while !stopping {
        let wake = state.next_wake().map(|at| clock.instant(at));
        let n = tokio::select! {
            n = events.recv_many(&mut batch, 1024) => n,
            () = async { tokio::time::sleep_until(wake.expect("guarded")).await }, if wake.is_some() => 0,
        };
        let now = clock.now();
        if n == 0 && batch.is_empty() && events.is_closed() {
            stopping = true;
        }
        for ev in batch.drain(..) {
            match ev {
                Event::Open { conn, replies } => {
                    state.connect(conn);
                    conns.insert(conn, replies);
                }
                Event::Frame { conn, msg } => state.on_message(conn, msg, now, &mut out),
                Event::Closed { conn, error } => {
                    state.disconnect(conn, error, now);
                    conns.remove(&conn);
                }
                Event::Metrics(tx) => {
                    let _ = tx.send(state.render_metrics(now));
                }
                Event::Stats(tx) => {
                    let _ = tx.send(state.stats_json(now));
                }
                Event::Stop => stopping = true,
            }
        }
        state.tick(now, &mut out);
        if stopping {
            stop_accept.notify_one();
            let _ = std::fs::remove_file(&socket);
            state.shutdown(&mut out);
        } else {
            state.dispatch(now, &mut out);
        }
        for o in out.drain(..) {
            let closing = matches!(o.msg, Message::Error { .. });
            if let Some(tx) = conns.get(&o.conn) {
                let _ = tx.send(o.msg);
            }
            if closing {
                conns.remove(&o.conn);
            }
        }
        for line in state.take_notices() {
            let _ = notices.send(line);
        }
    }
    // Closing every reply channel ends each connection after it wrote its replies.
    conns.clear();
    let _ = tokio::time::timeout(Duration::from_secs(2), done_rx.recv()).await;
    state
}
