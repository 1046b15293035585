//! Senders: how a request reaches the target and its reply comes back, one
//! connection at a time. Pluggable: the engine is generic over [`Connect`],
//! and each protocol is one implementation.
//!
//! - [`HttpConnector`]: HTTP/1.1 keep-alive over TCP or a Unix socket, with
//!   hyper's client connection (one connection, one request in flight). The
//!   connection's I/O is driven inside the task that sends, not by a task of
//!   its own, so a request costs no extra task wake-ups. A connection the
//!   server closed between requests (keep-alive limit, idle close) is reopened
//!   without counting an error; one that fails while a request is out is an
//!   error of that request.
//! - [`FrameConnector`]: length-prefixed frames over a Unix socket (a `u32`
//!   big-endian length, then the payload), the arbiter protocol's framing.
//!   Two options make it speak session protocols ([`FrameOptions`]): a
//!   *hello* frame sent once on each new connection, whose reply is read and
//!   not recorded (a failed hello is a failed connect); and *sequences*, where
//!   an entry's body is several whole frames (each with its length prefix),
//!   sent one at a time, each after the previous frame's reply — the exchange
//!   (and its recorded latency) is the whole sequence.
//!
//! Errors are classified as `write` when the failing I/O was a write, else
//! `read` (resets, early closes, malformed replies); a wrapper around the
//! socket notes which side failed first.

use std::cell::Cell;
use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::{HeaderValue, HOST};
use http::{Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpStream, UnixStream};

use crate::corpus::Entry;
use crate::recorder::Failure;
use crate::target::{Endpoint, Protocol, Target};

/// Largest reply frame accepted (64 MiB).
pub const MAX_FRAME: usize = 64 << 20;

/// A reply's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// HTTP status (0 for frames).
    pub status: u16,
    /// Body or payload bytes read.
    pub bytes: u64,
}

/// Opens connections to one target.
pub trait Connect: Clone + Send + 'static {
    /// A connection, used by one task on one thread.
    type Conn: Exchange;
    /// Opens a connection.
    fn connect(&self) -> impl Future<Output = io::Result<Self::Conn>>;
}

/// A connection that exchanges one request for one reply at a time.
pub trait Exchange: 'static {
    /// False when the connection can take no more requests (closed by the
    /// peer between requests); the engine then reconnects, counting nothing.
    fn usable(&mut self) -> impl Future<Output = bool>;
    /// Sends `entry` and reads its whole reply.
    fn exchange(&mut self, entry: &Entry) -> impl Future<Output = Result<Reply, Failure>>;
}

/// Which side of a socket failed first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    None,
    Read,
    Write,
}

/// A stream that notes the first failing side (an error, or EOF on read).
#[derive(Debug)]
struct Tracked<S> {
    inner: S,
    side: Rc<Cell<Side>>,
}

impl<S> Tracked<S> {
    fn note(&self, side: Side) {
        if self.side.get() == Side::None {
            self.side.set(side);
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Tracked<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        match &poll {
            Poll::Ready(Err(_)) => self.note(Side::Read),
            Poll::Ready(Ok(())) if buf.filled().len() == before && buf.remaining() > 0 => {
                self.note(Side::Read)
            }
            _ => {}
        }
        poll
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Tracked<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Err(_)) = &poll {
            self.note(Side::Write);
        }
        poll
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Err(_)) = &poll {
            self.note(Side::Write);
        }
        poll
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// HTTP/1.1 keep-alive connections over TCP or a Unix socket.
#[derive(Debug, Clone)]
pub struct HttpConnector {
    endpoint: Endpoint,
    host: HeaderValue,
}

impl HttpConnector {
    /// A connector for an HTTP target.
    pub fn new(target: &Target) -> Self {
        debug_assert_eq!(target.protocol, Protocol::Http1);
        Self {
            endpoint: target.endpoint.clone(),
            host: HeaderValue::from_str(&target.host)
                .unwrap_or_else(|_| HeaderValue::from_static("localhost")),
        }
    }
}

/// hyper's connection future: drives the socket; ends when the connection does.
type Driver = Pin<Box<dyn Future<Output = hyper::Result<()>>>>;

/// One HTTP/1.1 connection, driven by whichever call is using it.
pub struct HttpConn {
    tx: http1::SendRequest<Full<Bytes>>,
    /// `None` once the connection has closed.
    driver: Option<Driver>,
    host: HeaderValue,
    side: Rc<Cell<Side>>,
}

impl std::fmt::Debug for HttpConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConn")
            .field("closed", &self.driver.is_none())
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}

/// Runs `work` while driving the connection. When the driver ends (the
/// connection closed) it is dropped at once, which fails anything still
/// waiting on the connection (`ready`, a pending response) instead of leaving
/// it waiting forever; `work` then finishes on its own.
async fn driven<T>(driver: &mut Option<Driver>, work: impl Future<Output = T>) -> T {
    tokio::pin!(work);
    std::future::poll_fn(|cx| {
        if let Some(d) = driver.as_mut() {
            if d.as_mut().poll(cx).is_ready() {
                *driver = None;
            }
        }
        work.as_mut().poll(cx)
    })
    .await
}

async fn handshake<S>(stream: S, host: HeaderValue) -> io::Result<HttpConn>
where
    S: AsyncRead + AsyncWrite + Unpin + 'static,
{
    let side = Rc::new(Cell::new(Side::None));
    let io = TokioIo::new(Tracked {
        inner: stream,
        side: side.clone(),
    });
    let (tx, conn) = http1::handshake(io).await.map_err(io::Error::other)?;
    Ok(HttpConn {
        tx,
        driver: Some(Box::pin(conn)),
        host,
        side,
    })
}

impl Connect for HttpConnector {
    type Conn = HttpConn;

    async fn connect(&self) -> io::Result<HttpConn> {
        match &self.endpoint {
            Endpoint::Tcp(addr) => {
                let stream = TcpStream::connect(addr).await?;
                stream.set_nodelay(true)?;
                handshake(stream, self.host.clone()).await
            }
            Endpoint::Unix(path) => {
                handshake(UnixStream::connect(path).await?, self.host.clone()).await
            }
        }
    }
}

impl Exchange for HttpConn {
    async fn usable(&mut self) -> bool {
        let Self { tx, driver, .. } = self;
        if driver.is_none() {
            return false;
        }
        // Driving first lets a close that arrived while idle be seen now.
        let ready = driven(driver, tx.ready()).await.is_ok();
        ready && driver.is_some() && !tx.is_closed()
    }

    async fn exchange(&mut self, entry: &Entry) -> Result<Reply, Failure> {
        let mut req = Request::new(Full::new(entry.body.clone()));
        *req.method_mut() = entry.method.clone();
        *req.uri_mut() = Uri::from(entry.path.clone());
        *req.headers_mut() = entry.headers.clone();
        if !req.headers().contains_key(HOST) {
            req.headers_mut().insert(HOST, self.host.clone());
        }
        let failed = |side: &Rc<Cell<Side>>| match side.get() {
            Side::Write => Failure::Write,
            _ => Failure::Read,
        };
        let Self {
            tx, driver, side, ..
        } = self;
        let work = async {
            let resp = tx.send_request(req).await.map_err(|_| failed(side))?;
            let status = resp.status().as_u16();
            let mut body = resp.into_body();
            let mut bytes = 0u64;
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|_| failed(side))?;
                if let Some(data) = frame.data_ref() {
                    bytes += data.len() as u64;
                }
            }
            Ok(Reply { status, bytes })
        };
        driven(driver, work).await
    }
}

/// How frame connections open and what an exchange is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrameOptions {
    /// Payload sent once on each new connection; its reply is read, not recorded.
    pub hello: Option<Bytes>,
    /// Bodies are sequences of whole frames (length prefixes included), each
    /// sent after the previous frame's reply; else a body is one payload.
    pub seq: bool,
}

/// Splits `wire` into whole frames (each a `u32` big-endian length of 1 or
/// more, then that many bytes), returning each frame with its prefix.
/// `Err` names the offset of the first frame that is empty or cut short.
pub fn split_frames(wire: &[u8]) -> Result<Vec<&[u8]>, String> {
    let mut frames = Vec::new();
    let mut at = 0usize;
    while at < wire.len() {
        let Some(head) = wire.get(at..at + 4) else {
            return Err(format!(
                "a frame length at byte {at} is cut short ({} of 4 bytes)",
                wire.len() - at
            ));
        };
        let len = u32::from_be_bytes(head.try_into().expect("4 bytes")) as usize;
        if len == 0 {
            return Err(format!("the frame at byte {at} is empty (length 0)"));
        }
        let end = at + 4 + len;
        if end > wire.len() {
            return Err(format!(
                "the frame at byte {at} says {len} bytes but {} follow",
                wire.len() - at - 4
            ));
        }
        frames.push(&wire[at..end]);
        at = end;
    }
    if frames.is_empty() {
        return Err("no frames".into());
    }
    Ok(frames)
}

/// Length-prefixed frame connections over a Unix socket.
#[derive(Debug, Clone)]
pub struct FrameConnector {
    path: PathBuf,
    options: FrameOptions,
}

impl FrameConnector {
    /// A connector for a `frame+unix:` target.
    pub fn new(target: &Target, options: FrameOptions) -> Self {
        let path = match &target.endpoint {
            Endpoint::Unix(p) => p.clone(),
            Endpoint::Tcp(a) => PathBuf::from(a.to_string()),
        };
        Self { path, options }
    }
}

/// One frame connection.
#[derive(Debug)]
pub struct FrameConn {
    stream: UnixStream,
    buf: Vec<u8>,
    seq: bool,
}

impl Connect for FrameConnector {
    type Conn = FrameConn;

    async fn connect(&self) -> io::Result<FrameConn> {
        let mut conn = FrameConn {
            stream: UnixStream::connect(&self.path).await?,
            buf: Vec::new(),
            seq: self.options.seq,
        };
        if let Some(hello) = &self.options.hello {
            conn.one(None, hello).await.map_err(|f| {
                io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    format!("the hello frame failed ({f:?})"),
                )
            })?;
        }
        Ok(conn)
    }
}

impl FrameConn {
    /// Writes one frame — `prefixed` as is, or `payload` behind its length —
    /// and reads one reply frame; returns the reply's payload length.
    async fn one(&mut self, prefixed: Option<&[u8]>, payload: &[u8]) -> Result<u64, Failure> {
        let wire = match prefixed {
            Some(frame) => frame,
            None => {
                let len = u32::try_from(payload.len()).map_err(|_| Failure::Write)?;
                self.buf.clear();
                self.buf.extend_from_slice(&len.to_be_bytes());
                self.buf.extend_from_slice(payload);
                &self.buf
            }
        };
        self.stream
            .write_all(wire)
            .await
            .map_err(|_| Failure::Write)?;
        let mut head = [0u8; 4];
        self.stream
            .read_exact(&mut head)
            .await
            .map_err(|_| Failure::Read)?;
        let len = u32::from_be_bytes(head) as usize;
        if len > MAX_FRAME {
            return Err(Failure::Read);
        }
        self.buf.resize(len, 0);
        self.stream
            .read_exact(&mut self.buf)
            .await
            .map_err(|_| Failure::Read)?;
        Ok(len as u64)
    }
}

impl Exchange for FrameConn {
    async fn usable(&mut self) -> bool {
        true
    }

    async fn exchange(&mut self, entry: &Entry) -> Result<Reply, Failure> {
        let bytes = if self.seq {
            // Whole frames, checked by `split_frames` when the run was configured.
            let body = &entry.body[..];
            let (mut at, mut bytes) = (0usize, 0u64);
            while at + 4 <= body.len() {
                let len = u32::from_be_bytes(body[at..at + 4].try_into().expect("4 bytes"));
                let end = (at + 4 + len as usize).min(body.len());
                bytes += self.one(Some(&body[at..end]), &[]).await?;
                at = end;
            }
            bytes
        } else {
            self.one(None, &entry.body).await?
        };
        Ok(Reply { status: 0, bytes })
    }
}

#[cfg(test)]
mod tests {
    use super::split_frames;

    fn frame(payload: &[u8]) -> Vec<u8> {
        let mut f = (payload.len() as u32).to_be_bytes().to_vec();
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn whole_frames_split_with_their_prefixes() {
        let wire = [frame(b"a"), frame(b"bcd"), frame(&[0; 300])].concat();
        let frames = split_frames(&wire).unwrap();
        assert_eq!(frames.len(), 3);
        assert_eq!(frames[0], &frame(b"a")[..]);
        assert_eq!(frames[1], &frame(b"bcd")[..]);
        assert_eq!(frames[2].len(), 304);
    }

    #[test]
    fn broken_sequences_name_the_offset() {
        let one = frame(b"xy");
        for (wire, needle) in [
            (Vec::new(), "no frames".to_string()),
            (
                [one.clone(), vec![0, 0]].concat(),
                "at byte 6 is cut short".into(),
            ),
            (
                [one.clone(), vec![0, 0, 0, 0]].concat(),
                "at byte 6 is empty".into(),
            ),
            (
                [one.clone(), vec![0, 0, 0, 9, 1]].concat(),
                "at byte 6 says 9 bytes but 1 follow".into(),
            ),
        ] {
            let err = split_frames(&wire).unwrap_err();
            assert!(err.contains(&needle), "{wire:?}: {err}");
        }
    }
}
