//! The KServe v2 REST front end on hyper: the accept loop, one HTTP/1.1
//! connection task per client; the routes read the shared [`App`].
//!
//! A connection serves requests one after another (keep-alive); a client
//! that goes away mid-request drops its handler, and with it the request's
//! [`crate::Pending`] reply, which takes a still-queued request out of its
//! queue.

mod routes;

use std::future::Future;
use std::sync::Arc;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use crate::app::App;
use crate::backend::Backend;

pub use routes::route;

/// Serves `listener` until `shutdown` resolves; connections already open
/// finish their current request.
pub async fn serve<B>(listener: TcpListener, app: Arc<App<B>>, shutdown: impl Future<Output = ()>)
where
    B: Backend<Input = lanes_kserve::InferRequest, Output = Vec<lanes_kserve::OutputTensor>>,
{
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(_) => continue, // EMFILE and the like: the listener stays up
            },
            () = &mut shutdown => return,
        };
        let _ = stream.set_nodelay(true);
        let app = Arc::clone(&app);
        tokio::spawn(async move {
            let service = service_fn(move |request| route(Arc::clone(&app), request));
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
