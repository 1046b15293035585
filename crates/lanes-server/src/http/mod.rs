//! The KServe v2 REST front end on hyper: the accept loop, one HTTP/1.1
//! connection task per client, and the [`App`] every route reads.
//!
//! A connection serves requests one after another (keep-alive); a client
//! that goes away mid-request drops its handler, and with it the request's
//! [`crate::Pending`] reply, which takes a still-queued request out of its
//! queue.

mod routes;

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use lanes_kserve::CodecConfig;
use lanes_serving::Batching;
use tokio::net::TcpListener;

use crate::backend::Backend;
use crate::driver::Handle;
use crate::signature::Signature;

pub use routes::route;

/// A served model as the routes see it.
#[derive(Debug, Clone)]
pub struct ModelEntry {
    pub name: String,
    pub version: String,
    /// `onnx`, `python`, …: KServe's `platform`.
    pub platform: String,
    pub signature: Signature,
    pub batching: Batching,
    /// The model's default deadline.
    pub timeout_ms: Option<f64>,
    /// Names of the devices holding it.
    pub devices: Vec<String>,
}

/// A device as `GET /v2` lists it.
#[derive(Debug, Clone)]
pub struct DeviceEntry {
    pub name: String,
    pub simulated: bool,
}

/// Everything the routes need; shared by every connection.
pub struct App<B: Backend> {
    pub handle: Handle<B>,
    /// By model index.
    pub models: Vec<ModelEntry>,
    pub devices: Vec<DeviceEntry>,
    pub policy: String,
    pub version: String,
    pub codec: CodecConfig,
    /// Ready once every model is loaded (and warmed up); false again while draining.
    pub ready: AtomicBool,
}

impl<B: Backend> std::fmt::Debug for App<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("models", &self.models)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl<B: Backend> App<B> {
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
}

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
