//! lanes-metrics-http: the Prometheus scrape endpoint that `lanes probe` and
//! the `lanes arbiter` daemon both serve, built on hyper's HTTP/1.1 server.
//!
//! The rule, for each accepted connection (one request per connection, then
//! the connection closes):
//! - `GET /metrics` or `GET /` (any query string) asks `render` for the page:
//!   `Some(text)` is `200` with [`CONTENT_TYPE`], OpenMetrics text 1.0.0 (what
//!   `prometheus_client::encoding::text::encode` writes); `None` (the owner
//!   is stopping) is `503`;
//! - `GET` of any other path is `404`; any other method is `405` with
//!   `Allow: GET`. Neither calls `render`. These and the `503` are a line of
//!   [`ERROR_CONTENT_TYPE`];
//! - the request head must arrive within [`HEAD_TIMEOUT`] and fit in
//!   [`HEAD_LIMIT`] bytes, so a slow or silent client cannot hold a task:
//!   past the time the connection is closed, past the size hyper answers `431`.
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:9100").await?;
//! tokio::spawn(lanes_metrics_http::serve(listener, || async {
//!     Some("up 1\n# EOF\n".to_string())
//! }));
//! # Ok(())
//! # }
//! ```

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

/// How long a client may take to send its whole request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest request head accepted, bytes (hyper's smallest read buffer).
pub const HEAD_LIMIT: usize = 8192;
/// The OpenMetrics text exposition format, version 1.0.0, which Prometheus
/// asks for first.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The type of the one-line answers that are no page (`404`, `405`, `503`).
pub const ERROR_CONTENT_TYPE: &str = "text/plain; charset=utf-8";

/// Serves the page `render` produces on `listener` until the runtime stops
/// (see the module docs for the rule). `render` runs once per scrape, on the
/// runtime, and answers `None` when its owner is stopping.
pub async fn serve<F, Fut>(listener: TcpListener, render: F)
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<String>> + Send + 'static,
{
    serve_with(listener, render, HEAD_TIMEOUT).await;
}

/// [`serve`] with the head timeout given (tests use a short one).
async fn serve_with<F, Fut>(listener: TcpListener, render: F, head_timeout: Duration)
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<String>> + Send + 'static,
{
    let render = Arc::new(render);
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(head_timeout)
        .max_buf_size(HEAD_LIMIT)
        .keep_alive(false)
        .title_case_headers(true);
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of descriptors and the like: wait a little rather than spin.
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let render = render.clone();
        let service = service_fn(move |request| answer(request, render.clone()));
        let connection = http.serve_connection(TokioIo::new(stream), service);
        tokio::spawn(async move {
            // A client's error (bad head, timeout, reset) ends only its connection.
            let _ = connection.await;
        });
    }
}

/// Answers one request by the rule in the module docs.
async fn answer<F, Fut>(
    request: Request<Incoming>,
    render: Arc<F>,
) -> Result<Response<Full<Bytes>>, Infallible>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Option<String>>,
{
    let (status, text) = match (request.method(), request.uri().path()) {
        (&Method::GET, "/metrics" | "/") => match render().await {
            Some(text) => (StatusCode::OK, text),
            None => (StatusCode::SERVICE_UNAVAILABLE, "stopping\n".to_string()),
        },
        (&Method::GET, _) => (
            StatusCode::NOT_FOUND,
            "not found: try /metrics\n".to_string(),
        ),
        _ => (StatusCode::METHOD_NOT_ALLOWED, "GET only\n".to_string()),
    };
    let kind = if status == StatusCode::OK {
        CONTENT_TYPE
    } else {
        ERROR_CONTENT_TYPE
    };
    let mut response = Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, kind);
    if status == StatusCode::METHOD_NOT_ALLOWED {
        response = response.header(header::ALLOW, "GET");
    }
    Ok(response
        .body(Full::new(Bytes::from(text)))
        .expect("static status and headers are valid"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    const DEADLINE: Duration = Duration::from_secs(5);

    /// Starts an endpoint whose page is `page` (or `None`), counting renders.
    async fn start(page: Option<&'static str>) -> (std::net::SocketAddr, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        let render = move || {
            counted.fetch_add(1, Ordering::SeqCst);
            std::future::ready(page.map(str::to_string))
        };
        tokio::spawn(serve_with(listener, render, Duration::from_millis(200)));
        (addr, calls)
    }

    /// Writes `raw` and reads until the server closes the connection.
    async fn exchange(addr: std::net::SocketAddr, raw: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(raw).await.unwrap();
        let mut out = Vec::new();
        tokio::time::timeout(DEADLINE, s.read_to_end(&mut out))
            .await
            .expect("the server closes the connection")
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    #[tokio::test]
    async fn answers_by_method_and_path() {
        let (addr, calls) = start(Some("up 1\n# EOF\n")).await;
        for (request, status, body, renders) in [
            ("GET /metrics HTTP/1.1", "200 OK", "up 1\n# EOF\n", 1),
            ("GET /?name=x HTTP/1.1", "200 OK", "up 1\n# EOF\n", 2),
            (
                "GET /nope HTTP/1.1",
                "404 Not Found",
                "not found: try /metrics\n",
                2,
            ),
            (
                "POST /metrics HTTP/1.1",
                "405 Method Not Allowed",
                "GET only\n",
                2,
            ),
            ("HEAD /metrics HTTP/1.1", "405 Method Not Allowed", "", 2),
        ] {
            let page = exchange(addr, format!("{request}\r\nHost: x\r\n\r\n").as_bytes()).await;
            assert!(
                page.starts_with(&format!("HTTP/1.1 {status}\r\n")),
                "{request}: {page}"
            );
            let kind = if status == "200 OK" {
                "application/openmetrics-text; version=1.0.0; charset=utf-8"
            } else {
                "text/plain; charset=utf-8"
            };
            assert!(
                page.contains(&format!("\r\nContent-Type: {kind}\r\n")),
                "{page}"
            );
            assert!(page.contains("\r\nConnection: close\r\n"), "{page}");
            assert!(
                page.ends_with(&format!("\r\n\r\n{body}")),
                "{request}: {page}"
            );
            assert_eq!(
                page.contains("\r\nAllow: GET\r\n"),
                status.starts_with("405")
            );
            assert_eq!(calls.load(Ordering::SeqCst), renders, "{request}");
        }
    }

    #[tokio::test]
    async fn a_stopping_owner_is_503() {
        let (addr, _) = start(None).await;
        let page = exchange(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(
            page.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
            "{page}"
        );
        assert!(page.ends_with("\r\n\r\nstopping\n"), "{page}");
        assert!(
            page.contains("\r\nContent-Type: text/plain; charset=utf-8\r\n"),
            "{page}"
        );
    }

    #[tokio::test]
    async fn a_silent_or_slow_client_is_dropped() {
        let (addr, calls) = start(Some("up 1\n")).await;
        // Nothing at all, then half a head: both closed, unanswered, within the deadline.
        assert_eq!(exchange(addr, b"").await, "");
        assert_eq!(exchange(addr, b"GET /metrics HTTP/1.1\r\n").await, "");
        assert_eq!(calls.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn an_oversized_head_is_431() {
        let (addr, calls) = start(Some("up 1\n")).await;
        let big = format!(
            "GET /metrics HTTP/1.1\r\nX: {}\r\n\r\n",
            "a".repeat(HEAD_LIMIT)
        );
        let page = exchange(addr, big.as_bytes()).await;
        assert!(page.starts_with("HTTP/1.1 431 "), "{page}");
        assert_eq!(calls.load(Ordering::SeqCst), 0);
    }
}
