//! Senders: how a request reaches the target and its reply comes back, one
//! connection at a time. Pluggable: the engine is generic over [`Connect`],
//! and each protocol is one implementation.
//!
//! - [`HttpConnector`]: HTTP/1.1 keep-alive over TCP or a Unix socket, one
//!   request in flight per connection. Written for the hot path, like wrk's
//!   client: each corpus entry's request head is encoded once before the run
//!   ([`encode_head`]), a request is one write (head and body together), and
//!   the reply is parsed from the connection's own buffer by [`Decoder`]
//!   (httparse for the head; `Content-Length`, chunked, or read to the close
//!   for the body). A connection the server closed between requests — a
//!   `Connection: close` reply, an HTTP/1.0 reply without keep-alive, or a
//!   close noticed while idle — is reopened without counting an error; one
//!   that fails while a request is out is an error of that request (`write`
//!   when writing failed, else `read`).
//! - [`FrameConnector`]: length-prefixed frames over a Unix socket (a `u32`
//!   big-endian length, then the payload), the arbiter protocol's framing.
//!   Two options make it speak session protocols ([`FrameOptions`]): a
//!   *hello* frame sent once on each new connection, whose reply is read and
//!   not recorded (a failed hello is a failed connect); and *sequences*, where
//!   an entry's body is several whole frames (each with its length prefix),
//!   sent one at a time, each after the previous frame's reply — the exchange
//!   (and its recorded latency) is the whole sequence.

use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::task::Poll;

use bytes::Bytes;
use http::header::{HeaderValue, CONTENT_LENGTH, HOST, TRANSFER_ENCODING};
use http::Method;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};

use crate::corpus::{Corpus, Entry};
use crate::recorder::Failure;
use crate::target::{Endpoint, Protocol, Target};

/// Largest reply frame accepted (64 MiB).
pub const MAX_FRAME: usize = 64 << 20;
/// Largest HTTP reply head (status line and headers) accepted.
pub const MAX_HEAD: usize = 64 << 10;
/// Most headers in an HTTP reply head.
const MAX_HEADERS: usize = 100;
/// Longest chunk-size or trailer line of a chunked body.
const MAX_LINE: usize = 4096;
/// A connection's read buffer, to start with (grown only for long heads).
const READ_BUFFER: usize = 16 << 10;
/// Bodies up to this size are copied behind the head, so a request is one
/// plain write; longer ones go out with vectored writes.
const COPY_BODY: usize = 16 << 10;

/// A reply's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// HTTP status (0 for frames).
    pub status: u16,
    /// Body or payload bytes read.
    pub bytes: u64,
    /// gRPC replies: the `grpc-status` code (`status` is then its HTTP equivalent).
    pub grpc: Option<u8>,
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
    /// Sends `entry` (the corpus's entry number `index`) and reads its whole reply.
    fn exchange(
        &mut self,
        index: usize,
        entry: &Entry,
    ) -> impl Future<Output = Result<Reply, Failure>>;
}

/// HTTP/1.1 keep-alive connections over TCP or a Unix socket.
#[derive(Debug, Clone)]
pub struct HttpConnector {
    endpoint: Endpoint,
    /// Each corpus entry's request head, by entry number.
    heads: Arc<[Bytes]>,
}

impl HttpConnector {
    /// A connector for an HTTP target sending `corpus`'s requests.
    pub fn new(target: &Target, corpus: &Corpus) -> Self {
        debug_assert_eq!(target.protocol, Protocol::Http1);
        let host = HeaderValue::from_str(&target.host)
            .unwrap_or_else(|_| HeaderValue::from_static("localhost"));
        Self {
            endpoint: target.endpoint.clone(),
            heads: corpus
                .entries()
                .iter()
                .map(|e| encode_head(e, &host))
                .collect(),
        }
    }
}

/// The request line and headers of `entry`, ending with the blank line.
///
/// `Host` is added unless the entry has one; `Content-Length` is added when
/// the entry sets neither it nor `Transfer-Encoding` and has a body or a
/// method that carries one (`POST`, `PUT`, `PATCH`).
pub fn encode_head(entry: &Entry, host: &HeaderValue) -> Bytes {
    let mut h = Vec::with_capacity(96 + entry.headers.len() * 32);
    h.extend_from_slice(entry.method.as_str().as_bytes());
    h.push(b' ');
    h.extend_from_slice(entry.path.as_str().as_bytes());
    h.extend_from_slice(b" HTTP/1.1\r\n");
    if !entry.headers.contains_key(HOST) {
        h.extend_from_slice(b"host: ");
        h.extend_from_slice(host.as_bytes());
        h.extend_from_slice(b"\r\n");
    }
    for (name, value) in &entry.headers {
        h.extend_from_slice(name.as_str().as_bytes());
        h.extend_from_slice(b": ");
        h.extend_from_slice(value.as_bytes());
        h.extend_from_slice(b"\r\n");
    }
    let framed =
        entry.headers.contains_key(CONTENT_LENGTH) || entry.headers.contains_key(TRANSFER_ENCODING);
    let carries = matches!(entry.method, Method::POST | Method::PUT | Method::PATCH);
    if !framed && (carries || !entry.body.is_empty()) {
        h.extend_from_slice(format!("content-length: {}\r\n", entry.body.len()).as_bytes());
    }
    h.extend_from_slice(b"\r\n");
    Bytes::from(h)
}

/// The socket under an HTTP connection.
#[derive(Debug)]
enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Tcp(s) => s.read(buf).await,
            Self::Unix(s) => s.read(buf).await,
        }
    }

    async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Self::Tcp(s) => s.write_all(buf).await,
            Self::Unix(s) => s.write_all(buf).await,
        }
    }

    async fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Self::Tcp(s) => s.write_vectored(bufs).await,
            Self::Unix(s) => s.write_vectored(bufs).await,
        }
    }

    /// True when the socket has something to read (data, or the peer's
    /// close) as far as the event loop knows; no system call.
    async fn read_ready(&self) -> bool {
        std::future::poll_fn(|cx| {
            Poll::Ready(match self {
                Self::Tcp(s) => s.poll_read_ready(cx).is_ready(),
                Self::Unix(s) => s.poll_read_ready(cx).is_ready(),
            })
        })
        .await
    }

    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Tcp(s) => s.try_read(buf),
            Self::Unix(s) => s.try_read(buf),
        }
    }
}

/// One HTTP/1.1 connection.
#[derive(Debug)]
pub struct HttpConn {
    stream: Stream,
    heads: Arc<[Bytes]>,
    /// Read buffer; `buf[lo..hi]` is read and not yet decoded.
    buf: Vec<u8>,
    lo: usize,
    hi: usize,
    /// Head and short body of the request being written.
    out: Vec<u8>,
    /// The connection takes no more requests.
    closed: bool,
}

impl Connect for HttpConnector {
    type Conn = HttpConn;

    async fn connect(&self) -> io::Result<HttpConn> {
        let stream = match &self.endpoint {
            Endpoint::Tcp(addr) => {
                let stream = TcpStream::connect(addr).await?;
                stream.set_nodelay(true)?;
                Stream::Tcp(stream)
            }
            Endpoint::Unix(path) => Stream::Unix(UnixStream::connect(path).await?),
        };
        Ok(HttpConn {
            stream,
            heads: self.heads.clone(),
            buf: vec![0; READ_BUFFER],
            lo: 0,
            hi: 0,
            out: Vec::new(),
            closed: false,
        })
    }
}

impl HttpConn {
    async fn send(&mut self, head: &[u8], body: &[u8]) -> io::Result<()> {
        if body.is_empty() {
            return self.stream.write_all(head).await;
        }
        if body.len() <= COPY_BODY {
            self.out.clear();
            self.out.extend_from_slice(head);
            self.out.extend_from_slice(body);
            let out = std::mem::take(&mut self.out);
            let written = self.stream.write_all(&out).await;
            self.out = out;
            return written;
        }
        let (mut h, mut b) = (head, body);
        while !h.is_empty() {
            let n = self
                .stream
                .write_vectored(&[io::IoSlice::new(h), io::IoSlice::new(b)])
                .await?;
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            let from_head = n.min(h.len());
            h = &h[from_head..];
            b = &b[n - from_head..];
        }
        self.stream.write_all(b).await
    }

    /// Reads more into the buffer (making room first); the bytes read, 0 at EOF.
    async fn fill(&mut self) -> io::Result<usize> {
        if self.lo == self.hi {
            (self.lo, self.hi) = (0, 0);
        } else if self.hi == self.buf.len() {
            if self.lo > 0 {
                self.buf.copy_within(self.lo..self.hi, 0);
                (self.lo, self.hi) = (0, self.hi - self.lo);
            } else {
                // A head (or line) longer than the buffer; the decoder bounds it.
                self.buf.resize(self.buf.len() * 2, 0);
            }
        }
        let n = self.stream.read(&mut self.buf[self.hi..]).await?;
        self.hi += n;
        Ok(n)
    }

    async fn receive(&mut self, head_only: bool) -> Result<Reply, Failure> {
        let mut decoder = Decoder::new(head_only);
        loop {
            if self.lo < self.hi {
                let used = decoder
                    .decode(&self.buf[self.lo..self.hi])
                    .map_err(|_| Failure::Read)?;
                self.lo += used;
                if decoder.is_done() {
                    break;
                }
            }
            match self.fill().await {
                Ok(0) if decoder.ends_at_close() => {
                    self.closed = true;
                    break;
                }
                Ok(0) | Err(_) => return Err(Failure::Read),
                Ok(_) => {}
            }
        }
        // Bytes beyond the reply were never asked for: do not reuse the connection.
        if decoder.close || self.lo != self.hi {
            self.closed = true;
        }
        Ok(Reply {
            status: decoder.status,
            bytes: decoder.body_bytes,
            grpc: None,
        })
    }
}

impl Exchange for HttpConn {
    async fn usable(&mut self) -> bool {
        if self.closed {
            return false;
        }
        // A close that arrived while idle marks the socket readable; a reply
        // read to its end left it not readable, so this costs no system call.
        if !self.stream.read_ready().await {
            return true;
        }
        let mut probe = [0u8; 1];
        match self.stream.try_read(&mut probe) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => true,
            _ => {
                // EOF, an error, or bytes nobody asked for.
                self.closed = true;
                false
            }
        }
    }

    async fn exchange(&mut self, index: usize, entry: &Entry) -> Result<Reply, Failure> {
        let head = self.heads[index].clone();
        if self.send(&head, &entry.body).await.is_err() {
            self.closed = true;
            return Err(Failure::Write);
        }
        let reply = self.receive(entry.method == Method::HEAD).await;
        if reply.is_err() {
            self.closed = true;
        }
        reply
    }
}

/// A reply that does not parse as HTTP/1.x.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

/// Where the decoder is in a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    /// This many body bytes still to come.
    Length(u64),
    ChunkSize,
    /// This many bytes of the current chunk still to come.
    ChunkData(u64),
    /// The CRLF after a chunk's data.
    ChunkEnd,
    Trailers,
    /// The body runs to the connection's close.
    UntilClose,
    Done,
}

/// Decodes one HTTP/1.x reply from the bytes of a connection, as they come:
/// the head with httparse, then a body framed by `Content-Length`, by chunked
/// transfer coding, or by the close (RFC 9112 section 6.3). Informational
/// (1xx) heads before the reply are skipped; replies to `HEAD`, 204 and 304
/// have no body. Body bytes are counted, not kept.
#[derive(Debug)]
pub struct Decoder {
    state: State,
    head_only: bool,
    /// The reply's status, once its head is decoded.
    pub status: u16,
    /// Body bytes (payload bytes of a chunked body).
    pub body_bytes: u64,
    /// The server closes the connection after this reply.
    pub close: bool,
}

/// The position of the first CRLF in `data`.
fn crlf(data: &[u8]) -> Option<usize> {
    data.windows(2).position(|w| w == b"\r\n")
}

/// True when the comma-separated header `value` lists `token`.
fn lists(value: &[u8], token: &str) -> bool {
    value
        .split(|b| *b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
}

impl Decoder {
    /// A decoder for the reply to a request; `head_only` for `HEAD`.
    pub fn new(head_only: bool) -> Self {
        Self {
            state: State::Head,
            head_only,
            status: 0,
            body_bytes: 0,
            close: false,
        }
    }

    /// True once the whole reply is decoded.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// True when the connection's close ends the reply (a body without framing).
    pub fn ends_at_close(&self) -> bool {
        self.state == State::UntilClose
    }

    /// Decodes what it can of `data`; returns the bytes used. Stops at the
    /// reply's end (later bytes are left unused) or when it needs more.
    pub fn decode(&mut self, data: &[u8]) -> Result<usize, Malformed> {
        let mut at = 0;
        loop {
            let rest = &data[at..];
            match self.state {
                State::Done => return Ok(at),
                State::Head => match self.head(rest)? {
                    Some(n) => at += n,
                    None => return Ok(at),
                },
                State::Length(left) | State::ChunkData(left) => {
                    if rest.is_empty() {
                        return Ok(at);
                    }
                    let n = left.min(rest.len() as u64);
                    self.body_bytes += n;
                    at += n as usize;
                    self.state = match (self.state, left - n) {
                        (State::Length(_), 0) => State::Done,
                        (State::Length(_), l) => State::Length(l),
                        (_, 0) => State::ChunkEnd,
                        (_, l) => State::ChunkData(l),
                    };
                }
                State::UntilClose => {
                    self.body_bytes += rest.len() as u64;
                    return Ok(data.len());
                }
                State::ChunkEnd => {
                    if rest.len() < 2 {
                        return Ok(at);
                    }
                    if &rest[..2] != b"\r\n" {
                        return Err(Malformed);
                    }
                    at += 2;
                    self.state = State::ChunkSize;
                }
                State::ChunkSize | State::Trailers => {
                    let Some(end) = crlf(rest) else {
                        return if rest.len() > MAX_LINE {
                            Err(Malformed)
                        } else {
                            Ok(at)
                        };
                    };
                    at += end + 2;
                    if self.state == State::Trailers {
                        if end == 0 {
                            self.state = State::Done;
                        }
                        continue;
                    }
                    let line = &rest[..end];
                    let digits = line
                        .split(|b| *b == b';')
                        .next()
                        .unwrap_or_default()
                        .trim_ascii();
                    let size = std::str::from_utf8(digits)
                        .ok()
                        .filter(|d| !d.is_empty())
                        .and_then(|d| u64::from_str_radix(d, 16).ok())
                        .ok_or(Malformed)?;
                    self.state = if size == 0 {
                        State::Trailers
                    } else {
                        State::ChunkData(size)
                    };
                }
            }
        }
    }

    /// Decodes a head at the start of `data`: its length, or None when incomplete.
    fn head(&mut self, data: &[u8]) -> Result<Option<usize>, Malformed> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut reply = httparse::Response::new(&mut headers);
        let n = match reply.parse(data) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) if data.len() <= MAX_HEAD => return Ok(None),
            _ => return Err(Malformed),
        };
        let status = reply.code.ok_or(Malformed)?;
        if (100..200).contains(&status) && status != 101 {
            return Ok(Some(n)); // informational: the reply follows
        }
        self.status = status;
        let mut keep_alive = reply.version == Some(1);
        let (mut length, mut chunked, mut coded) = (None, false, false);
        for h in reply.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                let text = std::str::from_utf8(h.value).map_err(|_| Malformed)?;
                let v: u64 = text.trim().parse().map_err(|_| Malformed)?;
                if length.is_some_and(|l| l != v) {
                    return Err(Malformed);
                }
                length = Some(v);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                coded = true;
                chunked = h
                    .value
                    .split(|b| *b == b',')
                    .next_back()
                    .is_some_and(|t| t.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            } else if h.name.eq_ignore_ascii_case("connection") {
                if lists(h.value, "close") {
                    keep_alive = false;
                } else if lists(h.value, "keep-alive") {
                    keep_alive = true;
                }
            }
        }
        self.close = !keep_alive || status == 101;
        self.state = if self.head_only || status == 204 || status == 304 || status == 101 {
            State::Done
        } else if chunked {
            State::ChunkSize
        } else if coded {
            State::UntilClose
        } else {
            match length {
                Some(0) => State::Done,
                Some(l) => State::Length(l),
                None => State::UntilClose,
            }
        };
        if self.state == State::UntilClose {
            self.close = true;
        }
        Ok(Some(n))
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

    async fn exchange(&mut self, _index: usize, entry: &Entry) -> Result<Reply, Failure> {
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
        Ok(Reply {
            status: 0,
            bytes,
            grpc: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{encode_head, split_frames, Decoder, Malformed};
    use crate::corpus::Entry;
    use bytes::Bytes;
    use http::header::{HeaderMap, HeaderValue};
    use http::Method;

    /// Feeds `wire` to a decoder `step` bytes at a time, as reads would bring
    /// it; returns the decoder and the bytes it left unused at the end.
    fn decode_in_steps(wire: &[u8], step: usize, head_only: bool) -> (Decoder, usize) {
        let mut d = Decoder::new(head_only);
        let mut pending: Vec<u8> = Vec::new();
        for chunk in wire.chunks(step) {
            pending.extend_from_slice(chunk);
            let used = d.decode(&pending).expect("well-formed");
            pending.drain(..used);
        }
        (d, pending.len())
    }

    #[test]
    fn replies_decode_whatever_the_read_sizes() {
        let cases: [(&[u8], bool, u16, u64, bool); 9] = [
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", false, 200, 5, false),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n10\r\n0123456789abcdef\r\n0\r\nX-T: 1\r\n\r\n",
                false,
                200,
                21,
                false,
            ),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", true, 200, 0, false),
            (b"HTTP/1.1 204 No Content\r\n\r\n", false, 204, 0, false),
            (b"HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n", false, 304, 0, false),
            (
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 X\r\ncontent-length: 2\r\nConnection: close\r\n\r\nno",
                false,
                503,
                2,
                true,
            ),
            (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", false, 200, 2, true),
            (
                b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok",
                false,
                200,
                2,
                false,
            ),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false, 200, 0, false),
        ];
        for (wire, head_only, status, bytes, close) in cases {
            for step in [1, 2, 7, wire.len()] {
                // A second reply behind the first is left unused.
                let mut two = wire.to_vec();
                two.extend_from_slice(b"HTTP/1.1 200 OK\r\n\r\n");
                let (d, left) = decode_in_steps(&two, step, head_only);
                let what = String::from_utf8_lossy(wire);
                assert!(d.is_done(), "{what} in steps of {step}");
                assert_eq!(
                    (d.status, d.body_bytes, d.close),
                    (status, bytes, close),
                    "{what}"
                );
                assert_eq!(left, 19, "{what} in steps of {step}");
            }
        }
    }

    #[test]
    fn a_body_without_framing_runs_to_the_close() {
        let (d, left) = decode_in_steps(b"HTTP/1.1 200 OK\r\n\r\nsome bytes", 3, false);
        assert!(!d.is_done() && d.ends_at_close() && d.close);
        assert_eq!((d.body_bytes, left), (10, 0));
        let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzz";
        let (d, _) = decode_in_steps(wire, 4, false);
        assert!(d.ends_at_close());
    }

    #[test]
    fn malformed_replies_are_refused() {
        let long_head = [&b"HTTP/1.1 200 OK\r\nX: "[..], &[b'a'; 70_000]].concat();
        for wire in [
            &b"HTTP/1.1 abc OK\r\n\r\n"[..],
            b"SMTP ready\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXX",
            &long_head,
        ] {
            let mut d = Decoder::new(false);
            assert_eq!(
                d.decode(wire),
                Err(Malformed),
                "{}",
                String::from_utf8_lossy(&wire[..wire.len().min(80)])
            );
        }
    }

    #[test]
    fn request_heads_carry_host_and_length() {
        let host = HeaderValue::from_static("127.0.0.1:8080");
        let mut entry = Entry {
            method: Method::GET,
            path: "/a?b=1".parse().unwrap(),
            headers: HeaderMap::new(),
            body: Bytes::new(),
            weight: 1.0,
        };
        assert_eq!(
            &encode_head(&entry, &host)[..],
            b"GET /a?b=1 HTTP/1.1\r\nhost: 127.0.0.1:8080\r\n\r\n"
        );
        entry.method = Method::POST;
        entry.body = Bytes::from_static(b"xyz");
        entry
            .headers
            .insert("content-type", HeaderValue::from_static("text/plain"));
        assert_eq!(
            &encode_head(&entry, &host)[..],
            &b"POST /a?b=1 HTTP/1.1\r\nhost: 127.0.0.1:8080\r\ncontent-type: text/plain\r\ncontent-length: 3\r\n\r\n"[..]
        );
        // The entry's own Host and Content-Length win; an empty POST says 0.
        entry.headers.insert("host", HeaderValue::from_static("h"));
        entry.body = Bytes::new();
        let head = encode_head(&entry, &host);
        let has = |needle: &[u8]| head.windows(needle.len()).any(|w| w == needle);
        assert!(has(b"\r\nhost: h\r\n") && !has(b"127.0.0.1"));
        assert!(head.ends_with(b"content-length: 0\r\n\r\n"));
    }

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
