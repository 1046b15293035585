//! The native REST front end end to end: a real server on loopback running a
//! real ONNX model (lanes-onnx's `affine` fixture: `x` FP32 `[N, 4]` → `y`
//! FP32 `[N, 3]`, `k` INT64 `[N]`) with real ONNX Runtime, driven over raw
//! HTTP/1.1. Outputs are checked against Python onnxruntime's, recorded in the
//! fixture.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{affine_config, fixtures, woken, Transitions};
use lanes_kserve::CodecConfig;
use lanes_server::app::Limits;
use lanes_server::native::build;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Starts a server on a free loopback port; returns its address.
async fn start() -> String {
    start_with(Limits::default()).await
}

/// [`start`] with `limits`.
async fn start_with(limits: Limits) -> String {
    let config = affine_config(CodecConfig::default(), limits);
    let app = build(&config).expect("the server builds (ONNX Runtime: ORT_DYLIB_PATH or .venv)");
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(lanes_server::http::serve(
        listener,
        app,
        std::future::pending(),
    ));
    address
}

/// One request on its own connection: (status, headers, body).
async fn call(address: &str, method: &str, path: &str, body: &[u8]) -> (u16, String, Vec<u8>) {
    let mut stream = TcpStream::connect(address).await.unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: test\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&answer[..split]).to_string();
    let status = head[9..12].parse().unwrap();
    (status, head, answer[split + 4..].to_vec())
}

fn json(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap()
}

fn floats(file: &Path) -> Vec<f32> {
    std::fs::read(file)
        .unwrap()
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_onnx_model_answers_as_python_onnxruntime_does() {
    let address = start().await;
    let case = fixtures().join("data/affine_batch1/0");
    let x = floats(&case.join("in_x.bin"));
    let y = floats(&case.join("out_y.bin"));
    let body = serde_json::json!({
        "id": "r1",
        "inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", "data": x}],
        "outputs": [{"name": "y"}],
    });
    let (status, _, answer) = call(
        &address,
        "POST",
        "/v2/models/affine/infer",
        body.to_string().as_bytes(),
    )
    .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
    let answer = json(&answer);
    assert_eq!(
        (answer["model_name"].as_str(), answer["id"].as_str()),
        (Some("affine"), Some("r1"))
    );
    let out = &answer["outputs"][0];
    assert_eq!(
        (out["name"].as_str(), out["shape"].clone()),
        (Some("y"), serde_json::json!([1, 3]))
    );
    let got: Vec<f32> = out["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap() as f32)
        .collect();
    assert_eq!(got.len(), y.len());
    for (g, w) in got.iter().zip(&y) {
        assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "{got:?} vs {y:?}");
    }
}

/// Reads one keep-alive response (head and `Content-Length` body); its status.
async fn read_response(stream: &mut TcpStream) -> u16 {
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).await.unwrap();
        got.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&got).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .and_then(|v| v.trim().parse().ok())
        .expect("a content-length");
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).await.unwrap();
    head[9..12].parse().unwrap()
}

/// On an idle server a `POST` with a body wakes only the I/O thread that
/// reads it. hyper's dispatcher wakes its own task on every request with a
/// body; tokio reschedules a self-woken task as a yield and unparks an idle
/// sibling worker for it, which finds nothing and parks again — two more
/// park/unpark transitions per request, unless the connection is polled
/// again in place (lanes_server::repoll).
#[test]
fn a_request_with_a_body_does_not_wake_the_idle_io_thread() {
    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let address = server.block_on(start());
    // Refused at the edge after its body is read (no such input): the
    // driver and the device's executor thread, whose hand-offs wake workers
    // of their own, stay out of the count.
    let body = serde_json::json!({
        "inputs": [{"name": "nope", "shape": [1, 4], "datatype": "FP32", "data": [1.0, 2.0, 3.0, 4.0]}],
    })
    .to_string();
    let request = format!(
        "POST /v2/models/affine/infer HTTP/1.1\r\nHost: test\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let client = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let requests = 60;
    let counts = client.block_on(async {
        let mut stream = TcpStream::connect(&address).await.unwrap();
        stream.set_nodelay(true).unwrap();
        for _ in 0..5 {
            stream.write_all(request.as_bytes()).await.unwrap();
            assert_eq!(read_response(&mut stream).await, 400);
        }
        let count = Transitions(server.metrics());
        let mut counts = Vec::with_capacity(requests);
        for _ in 0..requests {
            counts.push(
                count
                    .idle(async {
                        stream.write_all(request.as_bytes()).await.unwrap();
                        assert_eq!(read_response(&mut stream).await, 400);
                    })
                    .await,
            );
        }
        counts
    });
    if let Some(failure) = woken(&counts, "request") {
        panic!("{failure}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_answer_with_todays_statuses_and_json_errors() {
    let address = start().await;
    let x = r#"{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}"#;
    let x64 = r#"{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP64","data":[1,2,3,4]}]}"#;
    let table: &[(&str, &str, &str, u16, &str)] = &[
        ("GET", "/v2/health/live", "", 200, r#"{"live":true}"#),
        ("GET", "/v2/health/ready", "", 200, r#"{"ready":true}"#),
        (
            "GET",
            "/v2/models/affine/ready",
            "",
            200,
            r#"{"name":"affine","ready":true}"#,
        ),
        (
            "GET",
            "/v2/models/nope",
            "",
            404,
            r#"{"error":"unknown model 'nope'; this server has: affine"}"#,
        ),
        (
            "GET",
            "/v2/models/affine/versions/2",
            "",
            404,
            r#"{"error":"model 'affine' has no version '2' (it has 1)"}"#,
        ),
        (
            "GET",
            "/v2/nowhere",
            "",
            404,
            r#"{"error":"no route /v2/nowhere"}"#,
        ),
        (
            "GET",
            "/v2/models/affine/infer",
            "",
            405,
            r#"{"error":"method GET not allowed on /v2/models/affine/infer: POST"}"#,
        ),
        (
            "POST",
            "/v2/models/affine/infer",
            x64,
            400,
            r#"{"error":"input 'x': datatype FP64, expected FP32"}"#,
        ),
        ("POST", "/v2/models/affine/infer", "{", 400, ""),
    ];
    for (method, path, body, status, expected) in table {
        let (got, head, answer) = call(&address, method, path, body.as_bytes()).await;
        assert_eq!(
            got,
            *status,
            "{method} {path}: {}",
            String::from_utf8_lossy(&answer)
        );
        if !expected.is_empty() {
            assert_eq!(json(&answer), json(expected.as_bytes()), "{method} {path}");
        } else {
            assert!(json(&answer)["error"].is_string());
        }
        if *status == 405 {
            assert!(head.to_ascii_lowercase().contains("allow: post"), "{head}");
        }
    }
    let (status, _, meta) = call(&address, "GET", "/v2/models/affine", b"").await;
    assert_eq!(status, 200);
    let meta = json(&meta);
    assert_eq!(
        meta["inputs"],
        serde_json::json!([{"name": "x", "datatype": "FP32", "shape": [-1, 4]}])
    );
    assert_eq!(meta["platform"], "onnx");
    // The server keeps serving after every refusal.
    let (status, _, _) = call(&address, "POST", "/v2/models/affine/infer", x.as_bytes()).await;
    assert_eq!(status, 200);
    // Every infer above counted once, by its outcome; the batches are on the timeline.
    let (status, _, stats) = call(&address, "GET", "/v2/models/affine/stats", b"").await;
    assert_eq!(status, 200);
    let stats = &json(&stats)["model_stats"][0];
    assert_eq!(stats["name"], "affine");
    assert_eq!(stats["inference_stats"]["success"]["count"], 1);
    let (status, _, all) = call(&address, "GET", "/v2/models/stats", b"").await;
    assert_eq!(
        (status, json(&all)["model_stats"].as_array().map(Vec::len)),
        (200, Some(1))
    );
    let (status, _, trace) = call(&address, "GET", "/v2/trace?seconds=60", b"").await;
    assert_eq!(status, 200);
    assert!(json(&trace)["traceEvents"].is_array());
    let (status, _, refused) = call(&address, "GET", "/v2/trace?seconds=1_0", b"").await;
    assert_eq!(status, 400);
    assert!(json(&refused)["error"]
        .as_str()
        .unwrap()
        .starts_with("seconds = '1_0': must be a number"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_output_comes_with_its_header_length() {
    let address = start().await;
    let body = r#"{"inputs":[{"name":"x","shape":[2,4],"datatype":"FP32","data":[1,2,3,4,5,6,7,8]}],"parameters":{"binary_data_output":true}}"#;
    let (status, head, answer) =
        call(&address, "POST", "/v2/models/affine/infer", body.as_bytes()).await;
    assert_eq!(status, 200);
    let head = head.to_ascii_lowercase();
    assert!(
        head.contains("content-type: application/octet-stream"),
        "{head}"
    );
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("inference-header-content-length: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let header = json(&answer[..length]);
    // y: 2 x 3 FP32 = 24 bytes, then k: 2 INT64 = 16 bytes.
    assert_eq!(header["outputs"][0]["parameters"]["binary_data_size"], 24);
    assert_eq!(header["outputs"][1]["parameters"]["binary_data_size"], 16);
    assert_eq!(answer.len() - length, 40);
}

/// Short limits, so that the hostile clients below are cut within the test.
fn short() -> Limits {
    Limits {
        header_read_timeout: Duration::from_millis(300),
        body_read_timeout: Duration::from_millis(300),
        max_connections: 2_000,
        max_header_bytes: 16 * 1024,
        ..Limits::default()
    }
}

const X: &str = r#"{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}"#;

/// Reads until the server closes the connection (bounded: a server that never
/// closes fails the test).
async fn until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut answer));
    read.await.expect("the server closes the connection").ok();
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_hostile_clients_are_cut_and_others_served_throughout() {
    let address = start_with(short()).await;
    // slowloris: a request head that never ends
    let mut slow = TcpStream::connect(&address).await.unwrap();
    slow.write_all(b"POST /v2/models/affine/infer HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    // a body that never finishes
    let mut stalled = TcpStream::connect(&address).await.unwrap();
    let head = "POST /v2/models/affine/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{";
    stalled.write_all(head.as_bytes()).await.unwrap();
    // 1,000 idle connections
    let mut idle = Vec::new();
    for _ in 0..1_000 {
        idle.push(TcpStream::connect(&address).await.unwrap());
    }
    // others are served meanwhile
    for _ in 0..5 {
        assert_eq!(
            call(&address, "POST", "/v2/models/affine/infer", X.as_bytes())
                .await
                .0,
            200
        );
    }
    let answer = until_closed(&mut slow).await;
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(
        text.ends_with(r#"{"error":"request head not received within 0.3 s"}"#),
        "{text}"
    );
    let answer = until_closed(&mut stalled).await;
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(
        text.contains("request body not received within 0.3 s"),
        "{text}"
    );
    for stream in &mut idle {
        assert!(
            until_closed(stream).await.is_empty(),
            "an idle connection closes silently"
        );
    }
    // a head over the limit: 431, and the rest of the head is drained (a
    // lingering close), so the answer is not lost to a reset; 8 MiB, more
    // than loopback's socket buffers hold, so that closing with the rest
    // unread would reset the client's write
    let mut big = TcpStream::connect(&address).await.unwrap();
    let header = format!(
        "GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "a".repeat(8 << 20)
    );
    big.write_all(header.as_bytes()).await.unwrap();
    let answer = until_closed(&mut big).await;
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 431"), "{text}");
    assert_eq!(
        call(&address, "POST", "/v2/models/affine/infer", X.as_bytes())
            .await
            .0,
        200
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_begun_on_a_kept_alive_connection_gets_408_an_idle_one_nothing() {
    let address = start_with(short()).await;
    let mut half = TcpStream::connect(&address).await.unwrap();
    let mut idle = TcpStream::connect(&address).await.unwrap();
    for stream in [&mut half, &mut idle] {
        stream
            .write_all(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut answer = Vec::new();
        while !answer.ends_with(b"\r\n\r\n") {
            let mut byte = [0u8; 1];
            stream.read_exact(&mut byte).await.unwrap();
            answer.push(byte[0]);
        }
        assert!(answer.starts_with(b"HTTP/1.1 200"));
        let text = String::from_utf8_lossy(&answer).to_ascii_lowercase();
        let length: usize = text
            .split("content-length: ")
            .nth(1)
            .and_then(|v| v.split("\r\n").next())
            .map_or(0, |v| v.parse().unwrap());
        let mut body = vec![0u8; length];
        stream.read_exact(&mut body).await.unwrap();
    }
    half.write_all(b"POST /v2/models/affine/infer HTTP/1.1\r\n")
        .await
        .unwrap();
    let text = String::from_utf8(until_closed(&mut half).await).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 408 Request Timeout"), "{head}");
    assert!(head.contains("connection: close"), "{head}");
    assert_eq!(
        json(body.as_bytes()),
        serde_json::json!({"error": "request head not received within 0.3 s"})
    );
    assert!(until_closed(&mut idle).await.is_empty());
}

#[test]
fn only_a_cpu_sessions_batch_may_run_on_the_drivers_thread() {
    use lanes_onnx::SessionConfig;
    use lanes_server::onnx_backend::OnnxModel;
    use lanes_server::runner::ModelRunner;
    // A replica on device 0 (CPU), none on device 1.
    let configs = [Some(SessionConfig::default()), None];
    let path = common::fixtures().join("affine.onnx");
    let model = OnnxModel::load("affine", &path, &configs, 1, true).expect("loads");
    assert!(model.inline(0));
    assert!(!model.inline(1));
    assert!(!model.inline(7));
}

/// The rule behind the two idle-wake tests: a reading worker that parks a
/// second time while its batch runs is not a sibling woken; a sibling's
/// unpark and park on most calls is.
#[test]
fn the_wake_rule_tells_a_sibling_from_a_second_park() {
    let parked_twice = vec![vec![4, 0]; 60];
    assert_eq!(woken(&parked_twice, "call"), None);
    let mut sibling = vec![vec![2, 2]; 45];
    sibling.extend(vec![vec![2, 0]; 15]);
    assert!(
        woken(&sibling, "call").is_some(),
        "a sibling on 3 calls in 4"
    );
    let mut noisy = vec![vec![2, 0]; 30];
    noisy.extend(vec![vec![2, 2]; 30]);
    assert_eq!(woken(&noisy, "call"), None, "a shared host's wakes on half");
}
