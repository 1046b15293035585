//! The native gRPC front end end to end: a real server on loopback running a
//! real ONNX model (lanes-onnx's `affine` fixture: `x` FP32 `[N, 4]` → `y`
//! FP32 `[N, 3]`, `k` INT64 `[N]`), called through the generated KServe v2
//! client over HTTP/2, as `tritonclient.grpc` calls it (raw contents).

mod common;

use bytes::Bytes;
use common::{affine_config, fixtures, woken, Transitions};
use lanes_kserve::proto::grpc_inference_service_client::GrpcInferenceServiceClient;
use lanes_kserve::proto::model_infer_request::InferInputTensor;
use lanes_kserve::proto::{
    ModelInferRequest, ModelMetadataRequest, ModelReadyRequest, ServerLiveRequest,
};
use lanes_kserve::CodecConfig;
use lanes_server::app::Limits;
use lanes_server::native::build;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tonic::transport::Channel;
use tonic::Code;

async fn start() -> GrpcInferenceServiceClient<Channel> {
    start_with(Limits::default()).await.0
}

/// A client on its own connection, and the server's address.
async fn start_with(limits: Limits) -> (GrpcInferenceServiceClient<Channel>, SocketAddr) {
    let codec = CodecConfig {
        max_body_bytes: 1 << 16,
    };
    let config = affine_config(codec, limits);
    let app = build(&config).expect("the server builds (ONNX Runtime: ORT_DYLIB_PATH or .venv)");
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(lanes_server::grpc::serve(
        listener,
        app,
        std::future::pending(),
    ));
    let channel = Channel::from_shared(format!("http://{address}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let client = GrpcInferenceServiceClient::new(channel).max_decoding_message_size(1 << 20);
    (client, address)
}

fn le(values: &[f32]) -> Bytes {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn infer(x: &[f32], datatype: &str) -> ModelInferRequest {
    ModelInferRequest {
        model_name: "affine".into(),
        id: "g1".into(),
        inputs: vec![InferInputTensor {
            name: "x".into(),
            datatype: datatype.into(),
            shape: vec![(x.len() / 4) as i64, 4],
            ..InferInputTensor::default()
        }],
        raw_input_contents: vec![le(x)],
        ..ModelInferRequest::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kserve_grpc_service_answers_as_python_onnxruntime_does() {
    let mut client = start().await;
    assert!(
        client
            .server_live(ServerLiveRequest {})
            .await
            .unwrap()
            .into_inner()
            .live
    );
    let ready = ModelReadyRequest {
        name: "affine".into(),
        version: String::new(),
    };
    assert!(client.model_ready(ready).await.unwrap().into_inner().ready);
    let meta = ModelMetadataRequest {
        name: "affine".into(),
        version: String::new(),
    };
    let meta = client.model_metadata(meta).await.unwrap().into_inner();
    assert_eq!(
        (meta.inputs[0].name.as_str(), meta.inputs[0].shape.clone()),
        ("x", vec![-1, 4])
    );

    let case = fixtures().join("data/affine_batch1/0");
    let x: Vec<f32> = std::fs::read(case.join("in_x.bin"))
        .unwrap()
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let y = std::fs::read(case.join("out_y.bin")).unwrap();
    let reply = client
        .model_infer(infer(&x, "FP32"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (reply.model_name.as_str(), reply.id.as_str()),
        ("affine", "g1")
    );
    let names: Vec<&str> = reply.outputs.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["y", "k"]);
    assert_eq!(reply.outputs[0].shape, vec![1, 3]);
    let got: Vec<f32> = reply.raw_output_contents[0]
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let want: Vec<f32> = y
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    for (g, w) in got.iter().zip(&want) {
        assert!(
            (g - w).abs() <= 1e-5 * w.abs().max(1.0),
            "{got:?} vs {want:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_carry_the_rest_messages_and_canonical_codes() {
    let (mut client, address) = start_with(Limits::default()).await;
    let mut unknown = infer(&[1.0; 4], "FP32");
    unknown.model_name = "nope".into();
    let mut fp64 = infer(&[1.0; 8], "FP64"); // 32 bytes: 4 FP64 values
    fp64.inputs[0].shape = vec![1, 4];
    let table = [
        (
            unknown,
            Code::NotFound,
            "unknown model 'nope'; this server has: affine",
        ),
        (
            fp64,
            Code::InvalidArgument,
            "input 'x': datatype FP64, expected FP32",
        ),
        (
            infer(&[1.0; 4], "FP64"),
            Code::InvalidArgument,
            "input 'x': raw_input_contents[0] of 16 bytes does not match shape [1, 4] of FP64, \
             which needs 32 bytes",
        ),
    ];
    for (request, code, message) in table {
        let status = client.model_infer(request).await.unwrap_err();
        assert_eq!(status.code(), code, "{}", status.message());
        assert_eq!(status.message(), message);
    }
    // A message over the limit (64 KiB here) is refused; the server keeps serving.
    let big = client
        .model_infer(infer(&vec![0.5; 20_000], "FP32"))
        .await
        .unwrap_err();
    assert_eq!(big.code(), Code::OutOfRange, "{}", big.message());
    assert!(
        big.message().contains("message length too large"),
        "{}",
        big.message()
    );
    // A call whose grpc-timeout passes before it is answered gets the spec's
    // DEADLINE_EXCEEDED from the server (tonic's own server said CANCELLED).
    // Sent raw: tonic's client enforces the header itself, with CANCELLED.
    for _ in 0..20 {
        let (code, message) = raw_call(address, &infer(&[1.0; 4], "FP32"), "1n").await;
        assert_eq!(code, Code::DeadlineExceeded as i32, "{message}");
        assert!(
            message.starts_with("model 'affine': deadline exceeded")
                || message == "model 'affine': the call's grpc-timeout passed",
            "{message}"
        );
    }
    let mut roomy = tonic::Request::new(infer(&[1.0; 4], "FP32"));
    roomy.set_timeout(Duration::from_secs(5));
    assert!(client.model_infer(roomy).await.is_ok());
    assert!(client.model_infer(infer(&[1.0; 4], "FP32")).await.is_ok());
}

/// One unary `ModelInfer` call over a fresh HTTP/2 connection, framed by
/// hand, with `grpc-timeout: timeout`: its `grpc-status` and `grpc-message`.
/// Checks that the answer has no `Date` header (gRPC servers send none).
async fn raw_call(
    address: SocketAddr,
    request: &ModelInferRequest,
    timeout: &str,
) -> (i32, String) {
    use http_body_util::{BodyExt, Full};
    use prost::Message;
    let stream = TcpStream::connect(address).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .unwrap();
    tokio::spawn(connection);
    let message = request.encode_to_vec();
    let mut frame = vec![0u8];
    frame.extend_from_slice(&(message.len() as u32).to_be_bytes());
    frame.extend_from_slice(&message);
    let call = http::Request::post(format!(
        "http://{address}/inference.GRPCInferenceService/ModelInfer"
    ))
    .header("content-type", "application/grpc")
    .header("te", "trailers")
    .header("grpc-timeout", timeout)
    .body(Full::new(Bytes::from(frame)))
    .unwrap();
    let response = sender.send_request(call).await.unwrap();
    let head = response.headers().clone();
    assert!(head.get("date").is_none(), "{head:?}");
    let body = response.into_body().collect().await.unwrap();
    let trailers = body.trailers().cloned().unwrap_or_default();
    let field = |name: &str| {
        let value = trailers.get(name).or_else(|| head.get(name))?;
        Some(value.to_str().unwrap().to_string())
    };
    let code = field("grpc-status")
        .expect("a grpc-status")
        .parse()
        .unwrap();
    let message = percent_decode(&field("grpc-message").unwrap_or_default());
    (code, message)
}

/// gRPC's percent-encoding of `grpc-message` undone.
fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

/// Whether the server has closed `stream` (EOF or reset) within `within`.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 256];
    loop {
        match tokio::time::timeout(within, stream.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => {} // a SETTINGS frame or a GOAWAY: read on
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_connections_are_cut_and_bounded_while_others_are_served() {
    let limits = Limits {
        header_read_timeout: Duration::from_millis(300),
        max_connections: 2,
        ..Limits::default()
    };
    let (mut client, address) = start_with(limits).await; // one slot
    let mut silent = TcpStream::connect(address).await.unwrap(); // the other
                                                                 // A new connection waits for a slot: its call is answered once the silent
                                                                 // connection, which never sent the HTTP/2 preface, has been cut.
    let channel = Channel::from_shared(format!("http://{address}")).unwrap();
    let mut late = GrpcInferenceServiceClient::new(channel.connect_lazy());
    let answered = late.model_infer(infer(&[1.0; 4], "FP32")).await;
    assert!(answered.is_ok(), "{answered:?}");
    assert!(
        closed_within(&mut silent, Duration::from_millis(50)).await,
        "answered while the silent connection held the last slot"
    );
    // The first client was served throughout.
    assert!(client.model_infer(infer(&[1.0; 4], "FP32")).await.is_ok());
}

/// On an idle server a call wakes no idle I/O thread: its stream runs on its
/// connection's task (lanes_server::streams), so the hops connection → call →
/// driver → call → connection stay on the thread that read it. With a task
/// per call the chain outran tokio's LIFO slot (3 polls per tick) and
/// unparked the sibling worker on every call.
#[test]
fn a_call_does_not_wake_the_idle_io_thread() {
    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // The batch runs on the driver's thread even in a debug build (its
    // bound at `--inline-max-us`'s largest): an executor's hand-off back to
    // the driver wakes a worker of its own.
    let mut config = affine_config(CodecConfig::default(), Limits::default());
    config.inline_max = Duration::from_millis(1);
    let app = server.block_on(async { build(&config).expect("the server builds") });
    let listener = server.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let address = listener.local_addr().unwrap();
    server.spawn(lanes_server::grpc::serve(
        listener,
        app,
        std::future::pending(),
    ));
    let client = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let calls = 60;
    let counts = client.block_on(async {
        let channel = Channel::from_shared(format!("http://{address}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut client = GrpcInferenceServiceClient::new(channel);
        for _ in 0..5 {
            client.model_infer(infer(&[1.0; 4], "FP32")).await.unwrap();
        }
        let count = Transitions(server.metrics());
        let mut counts = Vec::with_capacity(calls);
        for _ in 0..calls {
            counts.push(
                count
                    .idle(async {
                        client.model_infer(infer(&[1.0; 4], "FP32")).await.unwrap();
                    })
                    .await,
            );
        }
        counts
    });
    if let Some(failure) = woken(&counts, "call") {
        panic!("{failure}");
    }
}
