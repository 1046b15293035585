//! Real loopback servers for the engine's tests: a tiny HTTP/1.1 keep-alive
//! server whose behaviour a test picks (answer, fail with a status, reset,
//! stall, close after each reply), and a frame echo server on a Unix socket.
//! Each runs on a thread of its own with its own runtime and stops when the
//! handle drops.

#![allow(dead_code)]
// A zero linger resets the connection on close: exactly what the tests want, and it never blocks.
#![allow(deprecated)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixListener};
use tokio::sync::oneshot;

/// What the server does with each request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// `200` with a 2-byte body, keep-alive.
    Ok,
    /// This status with a 2-byte body.
    Status(u16),
    /// Read the request, then reset the connection (RST).
    Reset,
    /// Read the request and never answer.
    Stall,
    /// Answer `200` with `Connection: close`, then close.
    CloseEach,
    /// Read a little of the request, then reset while the client still writes.
    ResetWhileReading,
    /// Sleep this many ms before each answer.
    Slow(u64),
    /// `200` with a chunked body of 2 bytes in two chunks and a trailer.
    Chunked,
    /// `200` with a 2-byte body and keep-alive implied, then close while idle.
    CloseIdle,
}

/// A running server; stops on drop.
#[derive(Debug)]
pub struct Server {
    pub addr: SocketAddr,
    pub requests: Arc<AtomicU64>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// A server already running on `thread` at `addr`, counting into
    /// `requests`; dropping it sends `stop` and joins the thread.
    pub fn running(
        addr: SocketAddr,
        requests: Arc<AtomicU64>,
        stop: oneshot::Sender<()>,
        thread: std::thread::JoinHandle<()>,
    ) -> Self {
        Self {
            addr,
            requests,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Reads one request head (and its Content-Length body): `Some(true)` for a
/// HEAD request, `Some(false)` for another, `None` at EOF.
async fn read_request<S: AsyncRead + Unpin>(
    s: &mut S,
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<bool>> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap_or(0));
            let total = end + 4 + len;
            while buf.len() < total {
                let mut chunk = [0u8; 65536];
                let n = s.read(&mut chunk).await?;
                if n == 0 {
                    return Ok(None);
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            let head_only = buf.starts_with(b"HEAD ");
            buf.drain(..total);
            return Ok(Some(head_only));
        }
        let mut chunk = [0u8; 65536];
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// A reply with a 2-byte body (announced but not sent to a HEAD request).
async fn answer<S: AsyncWrite + Unpin>(
    s: &mut S,
    status: u16,
    close: bool,
    head_only: bool,
) -> std::io::Result<()> {
    let conn = if close { "Connection: close\r\n" } else { "" };
    let body = if head_only { "" } else { "ok" };
    let reply = format!("HTTP/1.1 {status} X\r\nContent-Length: 2\r\n{conn}\r\n{body}");
    s.write_all(reply.as_bytes()).await
}

async fn serve_tcp(mut s: TcpStream, how: Behaviour, count: Arc<AtomicU64>) {
    let _ = s.set_nodelay(true);
    let mut buf = Vec::new();
    if how == Behaviour::ResetWhileReading {
        let mut chunk = [0u8; 1024];
        let _ = s.read(&mut chunk).await;
        let _ = s.set_linger(Some(Duration::ZERO));
        return;
    }
    while let Ok(Some(head_only)) = read_request(&mut s, &mut buf).await {
        count.fetch_add(1, Ordering::Relaxed);
        match how {
            Behaviour::Ok => {
                if answer(&mut s, 200, false, head_only).await.is_err() {
                    return;
                }
            }
            Behaviour::Status(code) => {
                if answer(&mut s, code, false, head_only).await.is_err() {
                    return;
                }
            }
            Behaviour::Slow(ms) => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                if answer(&mut s, 200, false, head_only).await.is_err() {
                    return;
                }
            }
            Behaviour::Reset => {
                let _ = s.set_linger(Some(Duration::ZERO));
                return;
            }
            Behaviour::Stall => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
            Behaviour::CloseEach => {
                let _ = answer(&mut s, 200, true, head_only).await;
                return;
            }
            Behaviour::CloseIdle => {
                let _ = answer(&mut s, 200, false, head_only).await;
                return;
            }
            Behaviour::Chunked => {
                let reply = "HTTP/1.1 200 X\r\nTransfer-Encoding: chunked\r\n\r\n\
                             1\r\no\r\n1;ext=1\r\nk\r\n0\r\nX-Trailer: 1\r\n\r\n";
                if s.write_all(reply.as_bytes()).await.is_err() {
                    return;
                }
            }
            Behaviour::ResetWhileReading => unreachable!(),
        }
    }
}

/// Starts an HTTP server on 127.0.0.1 with `how`.
pub fn http(how: Behaviour) -> Server {
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    std_listener.set_nonblocking(true).unwrap();
    let addr = std_listener.local_addr().unwrap();
    let requests = Arc::new(AtomicU64::new(0));
    let count = requests.clone();
    let (stop, mut stopped) = oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let rt = runtime();
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async move {
            let listener = TcpListener::from_std(std_listener).unwrap();
            loop {
                tokio::select! {
                    _ = &mut stopped => return,
                    accepted = listener.accept() => {
                        if let Ok((s, _)) = accepted {
                            tokio::task::spawn_local(serve_tcp(s, how, count.clone()));
                        }
                    }
                }
            }
        });
    });
    Server {
        addr,
        requests,
        stop: Some(stop),
        thread: Some(thread),
    }
}

/// A closed port: bound once, then released.
pub fn closed_port() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// A Unix-socket server: HTTP (`frames = false`, answering 200) or frame
/// echo (`frames = true`: replies with the payload it got).
#[derive(Debug)]
pub struct UnixServer {
    pub path: PathBuf,
    /// Frames received (frame echo only).
    pub frames: Arc<AtomicU64>,
    _dir: tempfile::TempDir,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for UnixServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

pub fn unix(frames: bool) -> UnixServer {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sock");
    let std_listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    std_listener.set_nonblocking(true).unwrap();
    let (stop, mut stopped) = oneshot::channel::<()>();
    let frames_seen = Arc::new(AtomicU64::new(0));
    let counter = frames_seen.clone();
    let thread = std::thread::spawn(move || {
        let rt = runtime();
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async move {
            let listener = UnixListener::from_std(std_listener).unwrap();
            loop {
                tokio::select! {
                    _ = &mut stopped => return,
                    accepted = listener.accept() => {
                        let Ok((mut s, _)) = accepted else { continue };
                        let counter = counter.clone();
                        tokio::task::spawn_local(async move {
                            if frames {
                                loop {
                                    let mut head = [0u8; 4];
                                    if s.read_exact(&mut head).await.is_err() { return; }
                                    let mut payload = vec![0u8; u32::from_be_bytes(head) as usize];
                                    if s.read_exact(&mut payload).await.is_err() { return; }
                                    counter.fetch_add(1, Ordering::Relaxed);
                                    if s.write_all(&head).await.is_err() { return; }
                                    if s.write_all(&payload).await.is_err() { return; }
                                }
                            } else {
                                let mut buf = Vec::new();
                                while let Ok(Some(head_only)) = read_request(&mut s, &mut buf).await {
                                    if answer(&mut s, 200, false, head_only).await.is_err() { return; }
                                }
                            }
                        });
                    }
                }
            }
        });
    });
    UnixServer {
        path,
        frames: frames_seen,
        _dir: dir,
        stop: Some(stop),
        thread: Some(thread),
    }
}
