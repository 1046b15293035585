//! The KServe v2 REST front end on hyper: the accept loop, one HTTP/1.1
//! connection task per client; the routes read the shared [`App`].
//!
//! A connection serves requests one after another (keep-alive); a client
//! that goes away mid-request drops its handler, and with it the request's
//! [`crate::Pending`] reply, which takes a still-queued request out of its
//! queue.
//!
//! **Rule** (the head deadline): hyper's `header_read_timeout` runs from the
//! connection's start and again after each response. When it passes with
//! part of a head received (a slowloris client, a slow honest one), the
//! client gets `408` with the JSON error ([`Failure::HeadTimeout`]) and
//! `Connection: close`; an idle connection with nothing received is closed
//! silently, as an idle keep-alive connection is (a 408 there could race a
//! request the client is just sending).

mod routes;
mod slow;

use std::future::Future;
use std::sync::Arc;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

use crate::accept::Acceptor;
use crate::app::App;
use crate::backend::Backend;
use crate::repoll::Repoll;

pub use routes::route;

/// Serves `listener` until `shutdown` resolves; connections already open
/// finish their current request. The app's [`crate::app::Limits`] bound what
/// each client holds: a connection slot ([`Acceptor`]: waiting in the backlog
/// past `max_connections`), the time to send a head (408 and closed past it,
/// or closed silently when idle), the head's size (431, then a lingering
/// close so that the rest of the head does not reset the answer) and the
/// time to send a body (408).
pub async fn serve<B>(listener: TcpListener, app: Arc<App<B>>, shutdown: impl Future<Output = ()>)
where
    B: Backend<Input = crate::runner::Admitted, Output = crate::runner::Produced>,
{
    let acceptor = Acceptor::new(listener, app.limits.max_connections);
    tokio::pin!(shutdown);
    loop {
        let (stream, slot) = tokio::select! {
            accepted = acceptor.next() => accepted,
            () = &mut shutdown => return,
        };
        let app = Arc::clone(&app);
        tokio::spawn(async move {
            let limits = app.limits;
            // Boxed so that the connection is `Unpin` and can be polled
            // without shutting down: its socket is needed after a head timeout.
            let service = service_fn(move |request| Box::pin(route(Arc::clone(&app), request)));
            let mut connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_read_timeout)
                .max_buf_size(limits.max_header_bytes.max(8192))
                .serve_connection(TokioIo::new(stream), service);
            let served = Repoll::new(std::future::poll_fn(|cx| {
                connection.poll_without_shutdown(cx)
            }))
            .await;
            let parts = connection.into_parts();
            let mut stream = parts.io.into_inner();
            match served {
                Err(e) if e.is_timeout() && !parts.read_buf.is_empty() => {
                    slow::refuse(stream, limits.header_read_timeout).await;
                }
                Err(e) if e.is_parse_too_large() => {
                    slow::linger(stream, slow::LINGER_BYTES_TOO_LARGE).await;
                }
                _ => {
                    let _ = stream.shutdown().await;
                }
            }
            drop(slot);
        });
    }
}
