//! The REST routes: KServe v2 plus lanes' extensions, with today's statuses
//! and `{"error": message}` bodies (python/lanes/serving/app.py is the
//! contract). Every GET route also answers HEAD; a known path with another
//! method is a 405 with `Allow`.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{header, HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use lanes_kserve::deadline::{timeout_ns, TIMEOUT_HEADER};
use lanes_kserve::rest::{decode_request, encode_response, parse_header_length, HEADER_LENGTH};
use lanes_kserve::{KserveError, ModelRef};
use serde_json::{json, Value};

use crate::app::{App, Failure};
use crate::backend::Backend;
use crate::runner::{Admitted, Produced};
use crate::signature::metadata;
use crate::spans::Stamps;
use crate::stats::Outcome;
use crate::timeline::parse_seconds;

/// The OpenAPI document of the REST API.
const OPENAPI: &[u8] = include_bytes!("../../../../python/lanes/serving/openapi.json");

type Reply = Response<Full<Bytes>>;

fn json_reply(status: StatusCode, value: &Value) -> Reply {
    let body = serde_json::to_vec(value).expect("a JSON value serialises");
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    r
}

/// An error reply's message, kept beside its body for the logs.
#[derive(Debug, Clone)]
struct ErrorMessage(String);

fn error(status: u16, message: &str) -> Reply {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = json_reply(status, &json!({ "error": message }));
    r.extensions_mut().insert(ErrorMessage(message.to_owned()));
    r
}

fn ok(value: &Value) -> Reply {
    json_reply(StatusCode::OK, value)
}

/// What a path names.
enum Target<'a> {
    Live,
    Ready,
    Server,
    OpenApi,
    AllStats,
    Trace,
    Model {
        name: &'a str,
        version: Option<&'a str>,
        action: Action,
    },
}

#[derive(Clone, Copy, PartialEq)]
enum Action {
    Metadata,
    Ready,
    Stats,
    Infer,
}

fn parse(path: &str) -> Option<Target<'_>> {
    let rest = path.strip_prefix("/v2")?;
    match rest {
        "" => return Some(Target::Server),
        "/health/live" => return Some(Target::Live),
        "/health/ready" => return Some(Target::Ready),
        "/openapi.json" => return Some(Target::OpenApi),
        "/models/stats" => return Some(Target::AllStats),
        "/trace" => return Some(Target::Trace),
        _ => {}
    }
    let parts: Vec<&str> = rest.strip_prefix("/models/")?.split('/').collect();
    let (name, version, tail) = match parts.as_slice() {
        [name, "versions", v, tail @ ..] => (*name, Some(*v), tail),
        [name, tail @ ..] => (*name, None, tail),
        [] => return None,
    };
    let action = match tail {
        [] => Action::Metadata,
        ["ready"] => Action::Ready,
        ["stats"] => Action::Stats,
        ["infer"] => Action::Infer,
        _ => return None,
    };
    (!name.is_empty() && version != Some("")).then_some(Target::Model {
        name,
        version,
        action,
    })
}

/// Answers one request, and hands its log record over ([`crate::access`]).
/// A request whose client went away before its answer (hyper drops this
/// future) is logged with status 499, as nginx does.
pub async fn route<B>(app: Arc<App<B>>, request: Request<Incoming>) -> Result<Reply, Infallible>
where
    B: Backend<Input = Admitted, Output = Produced>,
{
    let _in_flight = app.in_flight.enter();
    let mut line = AccessLine {
        access: Arc::clone(&app.access),
        method: request.method().to_string(),
        path: request.uri().path().to_owned(),
        t0: std::time::Instant::now(),
        answered: false,
    };
    let reply = answer(Arc::clone(&app), request).await?;
    let status = reply.status().as_u16();
    let error = if status == 500 {
        reply_error(&reply)
    } else {
        String::new()
    };
    line.send(status, error);
    Ok(reply)
}

/// A request's access-log line, sent once: with its status when answered,
/// or with 499 when dropped unanswered (the client went away).
struct AccessLine {
    access: Arc<crate::access::AccessLog>,
    method: String,
    path: String,
    t0: std::time::Instant,
    answered: bool,
}

impl AccessLine {
    fn send(&mut self, status: u16, error: String) {
        self.answered = true;
        if !self.access.wants(status) {
            return;
        }
        let model = match parse(&self.path) {
            Some(Target::Model { name, .. }) => Some(name.to_owned()),
            _ => None,
        };
        self.access.send(crate::access::LogRecord {
            method: std::mem::take(&mut self.method),
            path: std::mem::take(&mut self.path),
            status,
            duration_ms: self.t0.elapsed().as_secs_f64() * 1e3,
            model,
            error,
        });
    }
}

impl Drop for AccessLine {
    fn drop(&mut self) {
        if !self.answered {
            self.send(CLIENT_GONE, String::new());
        }
    }
}

/// The status logged for a request whose client went away (nginx's 499).
pub const CLIENT_GONE: u16 = 499;

/// The message of an error reply (empty for any other).
fn reply_error(reply: &Reply) -> String {
    reply
        .extensions()
        .get::<ErrorMessage>()
        .map(|m| m.0.clone())
        .unwrap_or_default()
}

async fn answer<B>(app: Arc<App<B>>, request: Request<Incoming>) -> Result<Reply, Infallible>
where
    B: Backend<Input = Admitted, Output = Produced>,
{
    let path = request.uri().path().to_owned();
    let Some(target) = parse(&path) else {
        return Ok(error(404, &format!("no route {path}")));
    };
    let post = matches!(
        target,
        Target::Model {
            action: Action::Infer,
            ..
        }
    );
    let method = request.method().clone();
    let allowed = if post { "POST" } else { "GET, HEAD" };
    let method_ok = if post {
        method == Method::POST
    } else {
        method == Method::GET || method == Method::HEAD
    };
    if !method_ok {
        let mut r = error(
            405,
            &format!("method {method} not allowed on {path}: {allowed}"),
        );
        r.headers_mut()
            .insert(header::ALLOW, header::HeaderValue::from_static(allowed));
        return Ok(r);
    }
    let mut reply = match target {
        Target::Live => ok(&json!({"live": true})),
        Target::Ready if app.is_ready() => ok(&json!({"ready": true})),
        Target::Ready => failure(&app.not_ready()),
        Target::Server => ok(&server_metadata(&app)),
        Target::AllStats => json_bytes(app.handle.observer().stats_json(None)),
        Target::Trace => trace(&app, request.uri().query()).await,
        Target::OpenApi => {
            let mut r = Response::new(Full::new(Bytes::from_static(OPENAPI)));
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static("application/json"),
            );
            r
        }
        Target::Model {
            name,
            version,
            action,
        } => match app.find(name, version) {
            Err(e) => failure(&e),
            Ok(ix) => match action {
                Action::Metadata => ok(&model_metadata(&app, ix)),
                Action::Stats => json_bytes(app.handle.observer().stats_json(Some(ix as u32))),
                Action::Ready if app.is_ready() => ok(&json!({"name": name, "ready": true})),
                Action::Ready => error(
                    503,
                    &format!("model '{name}' not ready: {}", app.phase.get().name()),
                ),
                Action::Infer => infer(&app, ix, version, request).await,
            },
        },
    };
    if method == Method::HEAD {
        *reply.body_mut() = Full::new(Bytes::new());
    }
    Ok(reply)
}

fn server_metadata<B: Backend>(app: &App<B>) -> Value {
    let devices: Vec<Value> = app
        .devices
        .iter()
        .map(|d| json!({"name": d.name, "simulated": d.simulated}))
        .collect();
    json!({
        "name": "lanes",
        "version": app.version,
        "extensions": ["binary_tensor_data", "statistics"],
        "policy": app.policy,
        "devices": devices,
    })
}

fn model_metadata<B: Backend>(app: &App<B>, ix: usize) -> Value {
    let m = &app.models[ix];
    let b = &m.batching;
    json!({
        "name": m.name,
        "versions": [m.version],
        "platform": m.platform,
        "inputs": m.signature.inputs.iter().map(metadata).collect::<Vec<_>>(),
        "outputs": m.signature.outputs.iter().map(metadata).collect::<Vec<_>>(),
        "parameters": {
            "max_batch_size": b.max_batch_size,
            "batch_timeout_micros": b.batch_timeout / 1000,
            "num_batch_threads": b.num_batch_threads,
            "max_enqueued_batches": b.max_enqueued_batches,
            "timeout_ms": m.timeout_ms,
            "devices": m.devices,
        },
    })
}

fn json_bytes(body: Vec<u8>) -> Reply {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    r
}

/// `GET /v2/trace?seconds=N`, built on a blocking thread (the ring may be large).
/// The first value of `key` in a query string (form encoding: `+` is a space,
/// `%XX` a byte; a key without `=` has the empty value).
fn query_value(query: &str, key: &str) -> Option<String> {
    let decode = |text: &str| {
        percent_encoding::percent_decode_str(&text.replace('+', " "))
            .decode_utf8_lossy()
            .into_owned()
    };
    query
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| kv.split_once('=').unwrap_or((kv, "")))
        .find(|(k, _)| decode(k) == key)
        .map(|(_, v)| decode(v))
}

async fn trace<B: Backend>(app: &App<B>, query: Option<&str>) -> Reply {
    let seconds = query_value(query.unwrap_or(""), "seconds");
    let seconds = match parse_seconds(seconds.as_deref()) {
        Ok(s) => s,
        Err(e) => return error(e.http_status(), &e.to_string()),
    };
    let observer = std::sync::Arc::clone(app.handle.observer());
    match tokio::task::spawn_blocking(move || observer.trace_json(Some(seconds))).await {
        Ok(body) => json_bytes(body),
        Err(e) => error(500, &format!("internal error: the trace failed: {e}")),
    }
}

/// The body without its `Content-Encoding` (gzip, deflate; identity or
/// none as it is), at most `max` bytes decoded.
fn decode_content(
    encoding: Option<&header::HeaderValue>,
    body: Bytes,
    max: usize,
) -> Result<Bytes, Failure> {
    use std::io::Read;
    let Some(encoding) = encoding else {
        return Ok(body);
    };
    let name = String::from_utf8_lossy(encoding.as_bytes())
        .trim()
        .to_ascii_lowercase();
    let unreadable = || {
        Failure::BadRequest(format!(
            "request body cannot be read: Can not decode content-encoding: {name}"
        ))
    };
    let mut out = Vec::new();
    let limit = max as u64 + 1;
    let read = match name.as_str() {
        "" | "identity" => return Ok(body),
        "gzip" | "x-gzip" => flate2::read::GzDecoder::new(&body[..])
            .take(limit)
            .read_to_end(&mut out),
        "deflate" => flate2::read::ZlibDecoder::new(&body[..])
            .take(limit)
            .read_to_end(&mut out),
        _ => return Err(unreadable()),
    };
    read.map_err(|_| unreadable())?;
    if out.len() > max {
        return Err(KserveError::BodyTooLarge(format!(
            "request body over the limit of {max} bytes"
        ))
        .into());
    }
    Ok(Bytes::from(out))
}

fn failure(e: &Failure) -> Reply {
    error(e.http_status(), &e.to_string())
}

/// The `lanes-timeout-ms` header in nanoseconds (None when absent).
fn header_deadline(headers: &HeaderMap) -> Result<Option<f64>, Failure> {
    let header = headers.get(TIMEOUT_HEADER).map(|v| v.as_bytes());
    Ok(timeout_ns(None, header)?.map(|ns| ns as f64))
}

async fn infer<B>(
    app: &App<B>,
    ix: usize,
    version: Option<&str>,
    request: Request<Incoming>,
) -> Reply
where
    B: Backend<Input = Admitted, Output = Produced>,
{
    let record = app
        .handle
        .observer()
        .request(ix as u32, app.handle.clock().now());
    match infer_body(app, ix, version, request).await {
        Ok(reply) => {
            record.finish(Outcome::Success);
            reply
        }
        Err(e) => {
            record.finish(Outcome::of_status(e.http_status()));
            failure(&e)
        }
    }
}

async fn infer_body<B>(
    app: &App<B>,
    ix: usize,
    version: Option<&str>,
    request: Request<Incoming>,
) -> Result<Reply, Failure>
where
    B: Backend<Input = Admitted, Output = Produced>,
{
    let arrival = app.handle.clock().now();
    if !app.is_ready() {
        return Err(app.not_ready());
    }
    let (parts, body) = request.into_parts();
    let header_length =
        parse_header_length(parts.headers.get(HEADER_LENGTH).map(|v| v.as_bytes()))?;
    let max = app.codec.max_body_bytes;
    let within = app.limits.body_read_timeout;
    let Ok(body) = tokio::time::timeout(within, Limited::new(body, max).collect()).await else {
        return Err(Failure::Timeout(format!(
            "request body not received within {} s",
            within.as_secs_f64()
        )));
    };
    let body = match body {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return Err(KserveError::BodyTooLarge(format!(
                "request body over the limit of {max} bytes"
            ))
            .into())
        }
        Err(e) => {
            return Err(Failure::BadRequest(format!(
                "request body cannot be read: {e}"
            )))
        }
    };
    let body = decode_content(parts.headers.get(header::CONTENT_ENCODING), body, max)?;
    let model = ModelRef {
        name: app.models[ix].name.clone(),
        version: version.map(str::to_owned),
    };
    let decoded = decode_request(model, body, header_length, &app.codec)?;
    let mut stamps = Stamps {
        arrival,
        decoded: app.handle.clock().now(),
        ..Stamps::default()
    };
    // The header is the deadline only for a request without a `timeout` parameter.
    let edge_deadline = match decoded.timeout_us {
        Some(_) => None,
        None => header_deadline(&parts.headers)?,
    };
    let (response, choice) = app
        .infer(ix, decoded, edge_deadline, arrival, &mut stamps)
        .await?;
    let encoded = encode_response(&response, &choice)?;
    app.record_span(ix, stamps);
    let body = match encoded.chunks.len() {
        1 => encoded.chunks.into_iter().next().expect("one chunk"),
        _ => Bytes::from(encoded.to_vec()),
    };
    let mut r = Response::new(Full::new(body));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(encoded.content_type),
    );
    if let Some(h) = encoded.header_length {
        r.headers_mut()
            .insert(HEADER_LENGTH, header::HeaderValue::from(h));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::query_value;

    #[test]
    fn query_values_are_form_decoded() {
        let table = [
            ("seconds=2.5", Some("2.5")),
            ("a=1&seconds=%31%30&seconds=3", Some("10")),
            ("seconds", Some("")),
            ("seconds=1+2", Some("1 2")),
            ("second=1&&", None),
            ("", None),
        ];
        for (query, want) in table {
            assert_eq!(query_value(query, "seconds").as_deref(), want, "{query}");
        }
    }
}
