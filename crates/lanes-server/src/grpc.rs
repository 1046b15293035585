//! The KServe v2 gRPC front end (`inference.GRPCInferenceService`, the
//! published proto vendored in lanes-kserve): tonic's generated service on
//! hyper's HTTP/2 server, what `tritonclient.grpc` and other KServe clients
//! call on port 8001.
//!
//! Each RPC answers as its REST route does, through the same [`App`]: the
//! same model lookup, readiness, inference path and errors ([`Failure`]'s
//! gRPC code). A request's deadline is its `timeout` parameter, else the
//! call's `grpc-timeout` (the client's per-call timeout), else the model's
//! default. A call whose `grpc-timeout` passes answers `DEADLINE_EXCEEDED`;
//! one the client cancels (`RST_STREAM`) is dropped by hyper. Either way the
//! request's reply goes with it: a still-queued request leaves its queue.
//! Every call that names a served model counts one outcome in the model's
//! metrics and statistics, as a REST request does (`cancelled` when
//! dropped).
//! Messages over the codec's `max_body_bytes` are refused by
//! tonic with `OUT_OF_RANGE` ("decoded message length too large").
//!
//! Connections are bounded as REST's are ([`crate::accept`]): at most
//! `max_connections` open, the HTTP/2 preface within `header_read_timeout`,
//! and a keep-alive ping every `keepalive_interval` that a peer must answer
//! within [`KEEPALIVE_TIMEOUT`], or its connection is closed.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::server::conn::http2;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use lanes_kserve::grpc;
use lanes_kserve::proto::grpc_inference_service_server::{
    GrpcInferenceService, GrpcInferenceServiceServer,
};
use lanes_kserve::proto::{
    model_metadata_response::TensorMetadata, ModelInferRequest, ModelInferResponse,
    ModelMetadataRequest, ModelMetadataResponse, ModelReadyRequest, ModelReadyResponse,
    ServerLiveRequest, ServerLiveResponse, ServerMetadataRequest, ServerMetadataResponse,
    ServerReadyRequest, ServerReadyResponse,
};
use tokio::net::TcpListener;
use tonic::codegen::Service;
use tonic::{Request, Response, Status};

use crate::accept::{Acceptor, Connection};
use crate::app::{deadline_after, App, Failure};
use crate::backend::Backend;
use crate::repoll::Repoll;
use crate::runner::{Admitted, Produced};
use crate::signature::Spec;
use crate::spans::Stamps;
use crate::stats::Outcome;
use crate::streams::{Streams, WithStreams};

/// The gRPC service over an [`App`].
pub struct GrpcFront<B: Backend> {
    app: Arc<App<B>>,
}

impl<B: Backend> std::fmt::Debug for GrpcFront<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcFront").field("app", &self.app).finish()
    }
}

fn status(e: &Failure) -> Status {
    Status::new(e.grpc_code(), e.to_string())
}

/// `grpc-timeout` in nanoseconds: up to 8 ASCII digits and a unit (`H`, `M`,
/// `S`, `m`, `u`, `n`), as the gRPC HTTP/2 protocol spells it; None otherwise.
pub fn grpc_timeout_ns(value: &str) -> Option<f64> {
    let unit = value.chars().last()?;
    let digits = &value[..value.len() - unit.len_utf8()];
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: f64 = digits.parse().ok()?;
    let per = match unit {
        'H' => 3_600e9,
        'M' => 60e9,
        'S' => 1e9,
        'm' => 1e6,
        'u' => 1e3,
        'n' => 1.0,
        _ => return None,
    };
    Some(n * per)
}

fn metadata(specs: &[Spec]) -> Vec<TensorMetadata> {
    specs
        .iter()
        .map(|s| TensorMetadata {
            name: s.name.clone(),
            datatype: s.datatype.name().to_owned(),
            shape: s.shape.clone(),
        })
        .collect()
}

fn version(v: &str) -> Option<&str> {
    (!v.is_empty()).then_some(v)
}

#[tonic::async_trait]
impl<B> GrpcInferenceService for GrpcFront<B>
where
    B: Backend<Input = Admitted, Output = Produced>,
{
    async fn server_live(
        &self,
        _: Request<ServerLiveRequest>,
    ) -> Result<Response<ServerLiveResponse>, Status> {
        Ok(Response::new(ServerLiveResponse { live: true }))
    }

    async fn server_ready(
        &self,
        _: Request<ServerReadyRequest>,
    ) -> Result<Response<ServerReadyResponse>, Status> {
        Ok(Response::new(ServerReadyResponse {
            ready: self.app.is_ready(),
        }))
    }

    async fn model_ready(
        &self,
        request: Request<ModelReadyRequest>,
    ) -> Result<Response<ModelReadyResponse>, Status> {
        let r = request.into_inner();
        self.app
            .find(&r.name, version(&r.version))
            .map_err(|e| status(&e))?;
        Ok(Response::new(ModelReadyResponse {
            ready: self.app.is_ready(),
        }))
    }

    async fn server_metadata(
        &self,
        _: Request<ServerMetadataRequest>,
    ) -> Result<Response<ServerMetadataResponse>, Status> {
        Ok(Response::new(ServerMetadataResponse {
            name: "lanes".into(),
            version: self.app.version.clone(),
            extensions: vec!["binary_tensor_data".into(), "statistics".into()],
        }))
    }

    async fn model_metadata(
        &self,
        request: Request<ModelMetadataRequest>,
    ) -> Result<Response<ModelMetadataResponse>, Status> {
        let r = request.into_inner();
        let ix = self
            .app
            .find(&r.name, version(&r.version))
            .map_err(|e| status(&e))?;
        let m = &self.app.models[ix];
        Ok(Response::new(ModelMetadataResponse {
            name: m.name.clone(),
            versions: vec![m.version.clone()],
            platform: m.platform.clone(),
            inputs: metadata(&m.signature.inputs),
            outputs: metadata(&m.signature.outputs),
            ..ModelMetadataResponse::default()
        }))
    }

    async fn model_infer(
        &self,
        request: Request<ModelInferRequest>,
    ) -> Result<Response<ModelInferResponse>, Status> {
        let _in_flight = self.app.in_flight.enter();
        let arrival = self.app.handle.clock().now();
        let edge_deadline = request
            .metadata()
            .get("grpc-timeout")
            .and_then(|v| v.to_str().ok())
            .and_then(grpc_timeout_ns);
        let message = request.into_inner();
        let ix = self
            .app
            .find(&message.model_name, version(&message.model_version))
            .map_err(|e| status(&e))?;
        // Counted as REST's calls are (`lanes_requests_total`, the model's
        // statistics): one outcome per call, `cancelled` when the client
        // goes away and drops it.
        let record = self.app.handle.observer().request(ix as u32, arrival);
        let run = async {
            let decoded = grpc::decode_request(message, &self.app.codec)?;
            let mut stamps = Stamps {
                arrival,
                decoded: self.app.handle.clock().now(),
                ..Stamps::default()
            };
            let (response, choice) = self
                .app
                .infer(ix, decoded, edge_deadline, arrival, &mut stamps)
                .await?;
            let encoded = grpc::encode_response(&response, &choice)?;
            self.app.record_span(ix, stamps);
            Ok::<_, Failure>(encoded)
        };
        // The call's deadline is the server's too (gRPC's rule): past it the
        // call answers DEADLINE_EXCEEDED, and dropping `run` takes a
        // still-queued request out of its queue.
        let answer = match edge_deadline {
            Some(ns) => {
                let cut = self.app.handle.clock().instant(deadline_after(arrival, ns));
                tokio::time::timeout_at(cut, run).await.unwrap_or_else(|_| {
                    Err(Failure::Expired(format!(
                        "model '{}': the call's grpc-timeout passed",
                        self.app.models[ix].name
                    )))
                })
            }
            None => run.await,
        };
        match answer {
            Ok(reply) => {
                record.finish(Outcome::Success);
                Ok(Response::new(reply))
            }
            Err(e) => {
                record.finish(Outcome::of_status(e.http_status()));
                Err(status(&e))
            }
        }
    }
}

/// How long a peer has to answer a keep-alive ping (hyper's default, and tonic's).
pub const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// Serves gRPC on `listener` until `shutdown` resolves: one hyper HTTP/2
/// connection task per client, its calls run on that task
/// ([`crate::streams`]), each into the generated tonic service.
///
/// **Rule** (why not tonic's own server): tonic's transport answers a call
/// whose `grpc-timeout` passes with `CANCELLED` from its own timer, racing
/// the deadline this front end enforces; the gRPC spec asks for
/// `DEADLINE_EXCEEDED`. Served here, only [`GrpcFront::model_infer`]'s
/// deadline applies. At shutdown the listener closes, and each open
/// connection gets a GOAWAY and finishes its calls in flight.
pub async fn serve<B>(listener: TcpListener, app: Arc<App<B>>, shutdown: impl Future<Output = ()>)
where
    B: Backend<Input = Admitted, Output = Produced>,
{
    let limits = app.limits;
    let service = GrpcInferenceServiceServer::new(GrpcFront {
        app: Arc::clone(&app),
    })
    .max_decoding_message_size(app.codec.max_body_bytes)
    .max_encoding_message_size(usize::MAX);
    // One builder per connection: each connection's calls run on its own
    // task, through its own executor (crate::streams).
    let builder = |streams: Streams| {
        let mut builder = http2::Builder::new(streams);
        builder
            .timer(TokioTimer::new())
            .keep_alive_interval(limits.keepalive_interval)
            .keep_alive_timeout(KEEPALIVE_TIMEOUT)
            // gRPC servers send no `Date` (grpc-go and C-core do not); hyper would
            // format and HPACK-encode one on every response.
            .auto_date_header(false);
        builder
    };
    let acceptor = Acceptor::new(listener, limits.max_connections);
    let (closing, _) = tokio::sync::watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let (stream, slot) = tokio::select! {
            accepted = acceptor.next() => accepted,
            () = &mut shutdown => break,
        };
        let io = TokioIo::new(Connection::new(stream, slot, limits.header_read_timeout));
        let service = service.clone();
        let calls = service_fn(move |request: http::Request<Incoming>| {
            let mut service = service.clone();
            async move { service.call(request.map(tonic::body::Body::new)).await }
        });
        let streams = Streams::default();
        let connection = Box::pin(builder(streams.clone()).serve_connection(io, calls));
        let mut served = Repoll::new(WithStreams::new(connection, &streams));
        let mut closing = closing.subscribe();
        tokio::spawn(async move {
            tokio::select! {
                _ = &mut served => return,
                _ = closing.changed() => {
                    if let Some(connection) = served.get_mut().connection() {
                        connection.as_mut().graceful_shutdown();
                    }
                }
            }
            let _ = served.await;
        });
    }
    drop(acceptor); // the listener closes: new clients are refused, not left hanging
    let _ = closing.send(true);
    closing.closed().await;
}

#[cfg(test)]
mod tests {
    use super::grpc_timeout_ns;

    #[test]
    fn grpc_timeouts_parse_as_the_protocol_spells_them() {
        let table = [
            ("100m", Some(100e6)),
            ("5S", Some(5e9)),
            ("1H", Some(3_600e9)),
            ("2M", Some(120e9)),
            ("7u", Some(7e3)),
            ("9n", Some(9.0)),
            ("12345678S", Some(12_345_678e9)),
            ("123456789S", None),
            ("m", None),
            ("10", None),
            ("1.5S", None),
            ("10s", None),
            ("", None),
        ];
        for (text, want) in table {
            assert_eq!(grpc_timeout_ns(text), want, "{text}");
        }
    }
}
