//! The gRPC sender: unary calls over HTTP/2 with prior knowledge (no TLS),
//! as ghz or grpc-go's benchmark client send them.
//!
//! **Connections and streams.** HTTP/2 carries many calls on one connection,
//! so the engine's connections (`-c`: the most calls in flight) are streams
//! here, spread over `grpc_connections` TCP connections *per sender thread*
//! (default 1, as ghz's default of one connection). Each sender thread keeps
//! its own pool, so a call and its connection live on one thread's runtime:
//! the engine's "connect" takes the next pooled connection in turn, opening it
//! first while the pool is short, and replaces one that has closed. A call that
//! timed out resets its stream (`RST_STREAM`) and leaves the connection open.
//!
//! **A call** is a POST to the method's path with `content-type:
//! application/grpc` and `te: trailers`, the entry's headers on top (e.g.
//! `grpc-timeout`), and the entry's body as one length-prefixed message
//! (framed once, before the run). The reply's data is counted, not decoded.
//! Its outcome is the `grpc-status` of the trailers (or of the headers of a
//! trailers-only reply); a reply without one is `UNKNOWN`, as gRPC's
//! clients read it. For the report's classes the code is also given the
//! HTTP status that gRPC's own HTTP mapping gives it ([`http_status`]:
//! `OK` 200, `RESOURCE_EXHAUSTED` 429, `DEADLINE_EXCEEDED` 504, …), and a
//! reply whose HTTP status is not 200 keeps that status with no gRPC code.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use bytes::{BufMut, Bytes, BytesMut};
use http::header::{HeaderValue, CONTENT_TYPE, TE};
use http::{Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpStream;

use crate::corpus::{Corpus, Entry};
use crate::recorder::Failure;
use crate::sender::{Connect, Exchange, Reply};
use crate::target::{Endpoint, Protocol, Target};

/// The names of gRPC's status codes, by code.
pub const CODE_NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// The name of gRPC status `code` (`"CODE_n"` past the known ones).
pub fn code_name(code: u8) -> String {
    CODE_NAMES
        .get(usize::from(code))
        .map_or_else(|| format!("CODE_{code}"), |n| (*n).to_owned())
}

/// The code named `name` (as [`code_name`] writes it).
pub fn code_of(name: &str) -> Option<u8> {
    match CODE_NAMES.iter().position(|n| *n == name) {
        Some(i) => u8::try_from(i).ok(),
        None => name.strip_prefix("CODE_")?.parse().ok(),
    }
}

/// The HTTP status of a gRPC code, by the mapping of gRPC's HTTP gateways
/// (google.rpc.Code's documented HTTP equivalents; 499 for `CANCELLED`).
pub fn http_status(code: u8) -> u16 {
    match code {
        0 => 200,
        1 => 499,
        3 | 9 | 11 => 400,
        4 => 504,
        5 => 404,
        6 | 10 => 409,
        7 => 403,
        8 => 429,
        12 => 501,
        14 => 503,
        16 => 401,
        _ => 500, // UNKNOWN, INTERNAL, DATA_LOSS and codes past the known ones
    }
}

type Sender = http2::SendRequest<Full<Bytes>>;

/// Opens gRPC call slots to one target.
#[derive(Debug, Clone)]
pub struct GrpcConnector {
    addr: SocketAddr,
    /// Each corpus entry's request without its body: method, URI, headers.
    heads: Arc<[http::request::Parts]>,
    /// Each corpus entry's body as one length-prefixed gRPC message.
    messages: Arc<[Bytes]>,
    /// HTTP/2 connections per sender thread.
    per_thread: usize,
    pools: Arc<Mutex<HashMap<ThreadId, Arc<tokio::sync::Mutex<Pool>>>>>,
}

#[derive(Debug, Default)]
struct Pool {
    conns: Vec<Sender>,
    next: usize,
}

/// One call slot: a stream at a time on a pooled connection.
#[derive(Debug)]
pub struct GrpcConn {
    send: Sender,
    heads: Arc<[http::request::Parts]>,
    messages: Arc<[Bytes]>,
}

/// `message` framed as gRPC sends it: a zero compression flag, its length as
/// a big-endian `u32`, then the message.
pub fn frame(message: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(message.len() + 5);
    out.put_u8(0);
    // Corpus bodies are read from files and checked below 4 GiB at build.
    out.put_u32(u32::try_from(message.len()).unwrap_or(u32::MAX));
    out.put_slice(message);
    out.freeze()
}

impl GrpcConnector {
    /// A connector for a `grpc://` target sending `corpus`'s messages over
    /// `per_thread` connections per sender thread.
    pub fn new(target: &Target, corpus: &Corpus, per_thread: usize) -> io::Result<Self> {
        debug_assert_eq!(target.protocol, Protocol::Grpc);
        let Endpoint::Tcp(addr) = target.endpoint else {
            return Err(io::Error::other("gRPC targets are TCP"));
        };
        let heads = corpus
            .entries()
            .iter()
            .map(|e| head(e, &target.host))
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Self {
            addr,
            heads: heads.into(),
            messages: corpus.entries().iter().map(|e| frame(&e.body)).collect(),
            per_thread: per_thread.max(1),
            pools: Arc::default(),
        })
    }

    async fn open(&self) -> io::Result<Sender> {
        let stream = TcpStream::connect(self.addr).await?;
        stream.set_nodelay(true)?;
        let (send, conn) = http2::Builder::new(TokioExecutor::new())
            .handshake(TokioIo::new(stream))
            .await
            .map_err(io::Error::other)?;
        tokio::spawn(async move {
            // The connection ends when every sender is dropped or the peer
            // closes it; a call on it then fails and is counted there.
            let _ = conn.await;
        });
        Ok(send)
    }
}

fn head(entry: &Entry, authority: &str) -> io::Result<http::request::Parts> {
    let uri = Uri::builder()
        .scheme("http")
        .authority(authority)
        .path_and_query(entry.path.clone())
        .build()
        .map_err(io::Error::other)?;
    let (mut parts, ()) = Request::builder()
        .method(Method::POST)
        .uri(uri)
        .body(())
        .map_err(io::Error::other)?
        .into_parts();
    parts.headers = entry.headers.clone();
    parts
        .headers
        .entry(CONTENT_TYPE)
        .or_insert(HeaderValue::from_static("application/grpc"));
    parts
        .headers
        .insert(TE, HeaderValue::from_static("trailers"));
    Ok(parts)
}

impl Connect for GrpcConnector {
    type Conn = GrpcConn;

    async fn connect(&self) -> io::Result<GrpcConn> {
        let pool = {
            let mut pools = self.pools.lock().unwrap_or_else(|e| e.into_inner());
            pools
                .entry(std::thread::current().id())
                .or_default()
                .clone()
        };
        let mut pool = pool.lock().await;
        pool.conns.retain(|c| !c.is_closed());
        let send = if pool.conns.len() < self.per_thread {
            let send = self.open().await?;
            pool.conns.push(send.clone());
            send
        } else {
            pool.next = (pool.next + 1) % pool.conns.len();
            pool.conns[pool.next].clone()
        };
        Ok(GrpcConn {
            send,
            heads: self.heads.clone(),
            messages: self.messages.clone(),
        })
    }
}

fn grpc_status(headers: &http::HeaderMap) -> Option<u8> {
    headers
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}

impl Exchange for GrpcConn {
    async fn usable(&mut self) -> bool {
        !self.send.is_closed()
    }

    async fn exchange(&mut self, index: usize, _entry: &Entry) -> Result<Reply, Failure> {
        self.send.ready().await.map_err(|_| Failure::Write)?;
        let request = Request::from_parts(
            self.heads[index].clone(),
            Full::new(self.messages[index].clone()),
        );
        let response = self
            .send
            .send_request(request)
            .await
            .map_err(|_| Failure::Read)?;
        let status = response.status().as_u16();
        let mut code = grpc_status(response.headers());
        let mut body = response.into_body();
        let mut bytes = 0u64;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|_| Failure::Read)?;
            match frame.into_data() {
                Ok(data) => bytes += data.len() as u64,
                Err(frame) => {
                    if let Some(trailers) = frame.trailers_ref() {
                        code = grpc_status(trailers).or(code);
                    }
                }
            }
        }
        if status != 200 {
            return Ok(Reply {
                status,
                bytes,
                grpc: None,
            });
        }
        let code = code.unwrap_or(2); // no status: UNKNOWN
        Ok(Reply {
            status: http_status(code),
            bytes,
            grpc: Some(code),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_to_names_and_http_statuses() {
        assert_eq!(code_name(0), "OK");
        assert_eq!(code_name(8), "RESOURCE_EXHAUSTED");
        assert_eq!(code_name(16), "UNAUTHENTICATED");
        assert_eq!(code_name(40), "CODE_40");
        for code in 0..=40 {
            assert_eq!(code_of(&code_name(code)), Some(code));
        }
        assert_eq!(code_of("NOPE"), None);
        let statuses: Vec<u16> = (0..=17).map(http_status).collect();
        assert_eq!(
            statuses,
            [
                200, 499, 500, 400, 504, 404, 409, 403, 429, 400, 409, 400, 501, 500, 503, 500,
                401, 500
            ]
        );
    }

    #[test]
    fn messages_are_length_prefixed() {
        assert_eq!(&frame(b"")[..], &[0, 0, 0, 0, 0]);
        assert_eq!(&frame(b"ab")[..], &[0, 0, 0, 0, 2, b'a', b'b']);
    }
}
