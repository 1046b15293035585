//! Writes Rust-encoded responses for tritonclient to read back
//! (`tests/fixtures/check_responses.py`): every golden request of
//! `tests/fixtures/` is decoded and its inputs sent back as outputs of the
//! same names — REST responses in JSON and in binary form, gRPC as a
//! serialized `ModelInferResponse` — into the folder given as the argument,
//! with `responses.json` listing each file, its header length and the fixture
//! whose values it must hold.
//!
//! ```text
//! cargo run -p lanes-kserve --example echo_fixtures -- OUT
//! /work/main/.venv/bin/python crates/lanes-kserve/tests/fixtures/check_responses.py OUT
//! ```

use std::path::{Path, PathBuf};

use bytes::Bytes;
use lanes_kserve::proto::ModelInferRequest;
use lanes_kserve::{grpc, rest, CodecConfig, InferResponse, ModelRef, OutputChoice, OutputTensor};
use prost::Message;
use serde_json::{json, Value};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(std::env::args().nth(1).ok_or("usage: echo_fixtures OUT")?);
    std::fs::create_dir_all(&out)?;
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let manifest: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(fixtures.join("manifest.json"))?)?;
    let config = CodecConfig::default();
    let mut written = Vec::new();
    for case in &manifest {
        let file = case["file"].as_str().ok_or("a file name")?;
        let bytes = Bytes::from(std::fs::read(fixtures.join(file))?);
        let stem = file.replace(['/', '.'], "-");
        let request = if file.starts_with("grpc/") {
            grpc::decode_request(ModelInferRequest::decode(bytes)?, &config)?
        } else {
            let length = case["header_length"].as_i64().map(i128::from);
            rest::decode_request(ModelRef::default(), bytes, length, &config)?
        };
        let response = InferResponse {
            model_name: "m".into(),
            model_version: "1".into(),
            id: request.id.clone(),
            outputs: request
                .inputs
                .iter()
                .map(|i| OutputTensor {
                    name: i.name.clone(),
                    tensor: i.tensor.clone(),
                })
                .collect(),
        };
        if file.starts_with("grpc/") {
            let message = grpc::encode_response(&response, &OutputChoice::new(None, false))?;
            let name = format!("{stem}.pb");
            std::fs::write(out.join(&name), message.encode_to_vec())?;
            written.push(
                json!({"file": name, "protocol": "grpc", "header_length": null, "fixture": file}),
            );
            continue;
        }
        for binary in [false, true] {
            let encoded = rest::encode_response(&response, &OutputChoice::new(None, binary))?;
            let name = format!("{stem}-{}.resp", if binary { "binary" } else { "json" });
            std::fs::write(out.join(&name), encoded.to_vec())?;
            written.push(json!({
                "file": name,
                "protocol": "rest",
                "header_length": encoded.header_length,
                "content_type": encoded.content_type,
                "fixture": file,
            }));
        }
    }
    std::fs::write(
        out.join("responses.json"),
        serde_json::to_vec_pretty(&written)?,
    )?;
    println!("wrote {} responses to {}", written.len(), out.display());
    Ok(())
}
