//! The gRPC sender against a real HTTP/2 server on loopback (hyper's): call
//! counts, streams over pooled connections, `grpc-status` from trailers and
//! from trailers-only replies, HTTP errors, and timeouts that reset a stream
//! and keep the connection. Asserts behaviour, never speed.

mod common;

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use lanes_load::report::Report;
use lanes_load::{Run, RunSpec};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// A gRPC-speaking server: each call's reply depends on the request header
/// `x-reply`: absent, a 3-byte message and `grpc-status: 0` in trailers; `code
/// N`, a trailers-only reply with `grpc-status: N`; `http N`, HTTP status N;
/// `stall`, never answered. Counts TCP connections and calls (with the byte
/// length of the last call's body, framing included). `server.requests`
/// counts the calls; dropping it stops the server.
struct GrpcServer {
    server: common::Server,
    connections: Arc<AtomicU64>,
    last_body: Arc<AtomicU64>,
}

/// A reply body: a trailers-only reply's empty one, or a message with trailers.
type Body = BoxBody<Bytes, Infallible>;

async fn call(
    req: Request<Incoming>,
    calls: Arc<AtomicU64>,
    last_body: Arc<AtomicU64>,
) -> Result<Response<Body>, Infallible> {
    let reply = req
        .headers()
        .get("x-reply")
        .map(|v| v.to_str().unwrap().to_owned());
    let ok = req.headers().get("content-type").map(|v| v.as_bytes()) == Some(b"application/grpc")
        && req.headers().get("te").map(|v| v.as_bytes()) == Some(b"trailers");
    let body = req.into_body().collect().await.unwrap().to_bytes();
    calls.fetch_add(1, Ordering::Relaxed);
    last_body.store(body.len() as u64, Ordering::Relaxed);
    let trailers_only = |code: &str| {
        let mut r = Response::new(Empty::new().boxed());
        r.headers_mut()
            .insert("grpc-status", HeaderValue::from_str(code).unwrap());
        r
    };
    if !ok {
        return Ok(trailers_only("3"));
    }
    Ok(match reply.as_deref() {
        None => {
            let mut trailers = HeaderMap::new();
            trailers.insert("grpc-status", HeaderValue::from_static("0"));
            let message = Full::new(Bytes::from_static(&[0, 0, 0, 0, 3, 1, 2, 3]));
            let mut r = Response::new(message.with_trailers(async { Some(Ok(trailers)) }).boxed());
            r.headers_mut()
                .insert("content-type", HeaderValue::from_static("application/grpc"));
            r
        }
        Some("stall") => {
            std::future::pending::<()>().await;
            unreachable!()
        }
        Some(other) => match other.split_once(' ') {
            Some(("code", n)) => trailers_only(n),
            Some(("http", n)) => {
                let mut r = Response::new(Empty::new().boxed());
                *r.status_mut() = StatusCode::from_u16(n.parse().unwrap()).unwrap();
                r
            }
            _ => panic!("bad x-reply {other}"),
        },
    })
}

fn grpc_server() -> GrpcServer {
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    std_listener.set_nonblocking(true).unwrap();
    let addr = std_listener.local_addr().unwrap();
    let (connections, calls, last_body) = (Arc::default(), Arc::default(), Arc::default());
    let counts = (
        Arc::clone(&connections),
        Arc::clone(&calls),
        Arc::clone(&last_body),
    );
    let (stop, stopped) = oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let (connections, calls, last_body): (Arc<AtomicU64>, Arc<AtomicU64>, Arc<AtomicU64>) =
            counts;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = TcpListener::from_std(std_listener).unwrap();
            tokio::pin!(stopped);
            loop {
                let stream = tokio::select! {
                    _ = &mut stopped => return,
                    accepted = listener.accept() => accepted.unwrap().0,
                };
                connections.fetch_add(1, Ordering::Relaxed);
                let (calls, last_body) = (calls.clone(), last_body.clone());
                tokio::spawn(async move {
                    let service =
                        service_fn(move |req| call(req, calls.clone(), last_body.clone()));
                    let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
    });
    GrpcServer {
        server: common::Server::running(addr, calls, stop, thread),
        connections,
        last_body,
    }
}

fn run(spec: RunSpec) -> Report {
    let config = spec.build().expect("valid spec");
    let run = Run::start(config.clone()).expect("the run starts");
    Report::new(&config, &run.join())
}

fn spec(server: &GrpcServer) -> RunSpec {
    RunSpec {
        url: format!("grpc://{}", server.server.addr),
        seed: 1,
        threads: Some(2),
        body: Some("hello".into()),
        ..RunSpec::default()
    }
}

#[test]
fn calls_share_each_threads_connections_and_count_grpc_codes() {
    let server = grpc_server();
    let r = run(RunSpec {
        connections: Some(16),
        requests: Some(600),
        grpc_connections: Some(2),
        ..spec(&server)
    });
    assert_eq!((r.requests, r.sent, r.errors.total()), (600, 600, 0));
    assert_eq!(r.status_codes["200"], 600);
    assert_eq!(r.grpc_codes["OK"], 600);
    assert_eq!(r.bytes.received, 600 * 8);
    assert_eq!(server.server.requests.load(Ordering::Relaxed), 600);
    // "hello" framed: 5 bytes of prefix and 5 of message.
    assert_eq!(server.last_body.load(Ordering::Relaxed), 10);
    // Two sender threads with two connections each, plus the preflight's one.
    assert_eq!(server.connections.load(Ordering::Relaxed), 5);
}

#[test]
fn grpc_codes_and_http_errors_are_counted_apart() {
    let server = grpc_server();
    for (reply, status, code) in [
        ("code 8", "429", Some("RESOURCE_EXHAUSTED")),
        ("code 4", "504", Some("DEADLINE_EXCEEDED")),
        ("code 99", "500", Some("CODE_99")),
        ("http 503", "503", None),
    ] {
        let r = run(RunSpec {
            connections: Some(2),
            requests: Some(20),
            headers: vec![format!("x-reply: {reply}")],
            ..spec(&server)
        });
        assert_eq!((r.requests, r.errors.status), (20, 20), "{reply}");
        assert_eq!(r.status_codes[status], 20, "{reply}");
        match code {
            Some(name) => assert_eq!(r.grpc_codes[name], 20, "{reply}"),
            None => assert!(r.grpc_codes.is_empty(), "{reply}"),
        }
    }
}

#[test]
fn a_timed_out_call_resets_its_stream_and_keeps_the_connection() {
    let server = grpc_server();
    let r = run(RunSpec {
        connections: Some(4),
        threads: Some(1),
        requests: Some(8),
        timeout_s: Some(0.2),
        headers: vec!["x-reply: stall".into()],
        ..spec(&server)
    });
    assert_eq!((r.sent, r.errors.timeout), (8, 8));
    // One connection for the preflight, one for the sender thread: the
    // timeouts reset streams, not connections.
    assert_eq!(server.connections.load(Ordering::Relaxed), 2);
}

#[test]
fn grpc_options_are_refused_on_other_targets() {
    let err = RunSpec {
        url: "http://127.0.0.1:1/".into(),
        grpc_connections: Some(2),
        ..RunSpec::default()
    }
    .build()
    .unwrap_err();
    assert!(err.to_string().contains("need a grpc:// target"), "{err}");
}
