//! Golden requests made by tritonclient's own builders (`tests/fixtures/make.py`):
//! REST bodies from `tritonclient.http` (binary and JSON forms) and serialized
//! `ModelInferRequest`s from `tritonclient.grpc` decode to the values the
//! manifest lists for them.

use std::path::Path;

use bytes::Bytes;
use half::f16;
use lanes_kserve::proto::ModelInferRequest;
use lanes_kserve::rest::{self, BINARY_CONTENT_TYPE};
use lanes_kserve::{grpc, CodecConfig, Datatype, InferRequest, ModelRef, Tensor};
use prost::Message;
use serde_json::{json, Value};

fn fixtures() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures"))
}

fn manifest() -> Vec<Value> {
    let text = std::fs::read_to_string(fixtures().join("manifest.json")).unwrap();
    serde_json::from_str::<Value>(&text)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// A tensor's values as the manifest writes them.
fn as_json(t: &Tensor) -> Vec<Value> {
    fn all<T: lanes_kserve::Element>(t: &Tensor, f: impl Fn(T) -> Value) -> Vec<Value> {
        t.values::<T>().unwrap().into_iter().map(f).collect()
    }
    match t.datatype() {
        Datatype::Bool => all::<bool>(t, Value::from),
        Datatype::Uint8 => all::<u8>(t, Value::from),
        Datatype::Uint16 => all::<u16>(t, Value::from),
        Datatype::Uint32 => all::<u32>(t, Value::from),
        Datatype::Uint64 => all::<u64>(t, Value::from),
        Datatype::Int8 => all::<i8>(t, Value::from),
        Datatype::Int16 => all::<i16>(t, Value::from),
        Datatype::Int32 => all::<i32>(t, Value::from),
        Datatype::Int64 => all::<i64>(t, Value::from),
        Datatype::Fp16 => all::<f16>(t, |v| Value::from(v.to_f64())),
        Datatype::Fp32 => all::<f32>(t, |v| Value::from(f64::from(v))),
        Datatype::Fp64 => all::<f64>(t, Value::from),
        Datatype::Bytes => t
            .bytes_elements()
            .unwrap()
            .iter()
            .map(|b| Value::from(b.iter().map(|x| format!("{x:02x}")).collect::<String>()))
            .collect(),
    }
}

fn check(case: &Value, request: &InferRequest, rest: bool) {
    let file = case["file"].as_str().unwrap();
    assert_eq!(request.id.as_deref(), case["id"].as_str(), "{file}");
    assert_eq!(request.timeout_us, case["timeout"].as_u64(), "{file}");
    let names: Vec<&str> = request.inputs.iter().map(|i| i.name.as_str()).collect();
    let want: Vec<&str> = case["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, want, "{file}");
    for expected in case["inputs"].as_array().unwrap() {
        let tensor = request.input(expected["name"].as_str().unwrap()).unwrap();
        assert_eq!(tensor.datatype().name(), expected["datatype"], "{file}");
        assert_eq!(json!(tensor.shape()), expected["shape"], "{file}");
        let got = as_json(tensor);
        let values = expected["values"].as_array().unwrap();
        assert_eq!(&got, values, "{file}");
        // Signed zeros compare equal as JSON numbers: check the sign too.
        for (g, w) in got.iter().zip(values) {
            if let (Some(g), Some(w)) = (g.as_f64(), w.as_f64()) {
                assert_eq!(g.is_sign_negative(), w.is_sign_negative(), "{file}");
            }
        }
    }
    match case["outputs"].as_array() {
        None => {
            assert_eq!(request.outputs, None, "{file}");
            // tritonclient.http asks for binary outputs when it names none.
            assert_eq!(request.binary_data_output, rest, "{file}");
        }
        Some(outputs) => {
            let got = request.outputs.as_ref().unwrap();
            assert_eq!(got.len(), outputs.len(), "{file}");
            for (g, w) in got.iter().zip(outputs) {
                assert_eq!(g.name, w[0].as_str().unwrap(), "{file}");
                if rest {
                    assert_eq!(g.binary_data, w[1].as_bool().unwrap(), "{file}");
                }
            }
        }
    }
}

/// The request written as a `ModelInferRequest` (what `lanes bench` sends for
/// a REST body) decodes back to itself.
fn grpc_form_round_trips(file: &str, request: &InferRequest) {
    let message = grpc::encode_request(request).unwrap_or_else(|e| panic!("{file}: {e}"));
    let wire = Bytes::from(message.encode_to_vec());
    let again = grpc::decode_request(
        ModelInferRequest::decode(wire).unwrap(),
        &CodecConfig::default(),
    )
    .unwrap_or_else(|e| panic!("{file}: {e}"));
    assert_eq!(&again, request, "{file}");
}

#[test]
fn tritonclient_bodies_decode_to_their_values() {
    let cases = manifest();
    assert!(
        cases.len() >= 40,
        "the manifest lists {} fixtures",
        cases.len()
    );
    let config = CodecConfig::default();
    for case in &cases {
        let file = case["file"].as_str().unwrap();
        let bytes = Bytes::from(std::fs::read(fixtures().join(file)).unwrap());
        if file.starts_with("rest/") {
            let header_length = case["header_length"].as_i64().map(i128::from);
            assert_eq!(
                header_length.is_some(),
                file.ends_with("-binary.body"),
                "{file}"
            );
            let model = ModelRef {
                name: "m".into(),
                version: None,
            };
            let request = rest::decode_request(model, bytes, header_length, &config)
                .unwrap_or_else(|e| panic!("{file}: {e}"));
            check(case, &request, true);
            grpc_form_round_trips(file, &request);
        } else {
            let message = ModelInferRequest::decode(bytes).unwrap();
            let request =
                grpc::decode_request(message, &config).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert_eq!(
                request.model,
                ModelRef {
                    name: "m".into(),
                    version: Some("1".into())
                }
            );
            check(case, &request, false);
            grpc_form_round_trips(file, &request);
        }
    }
}

#[test]
fn grpc_raw_inputs_are_slices_of_the_message() {
    let bytes = Bytes::from(std::fs::read(fixtures().join("grpc/fp32.pb")).unwrap());
    let message = ModelInferRequest::decode(bytes.clone()).unwrap();
    let request = grpc::decode_request(message, &CodecConfig::default()).unwrap();
    let lanes_kserve::TensorData::Fixed(buf) = request.inputs[0].tensor.data() else {
        panic!("fixed-size data")
    };
    let range = bytes.as_ptr() as usize..bytes.as_ptr() as usize + bytes.len();
    assert!(
        range.contains(&(buf.as_ptr() as usize)),
        "a copy, not a slice of the message"
    );
}

#[test]
fn rest_fixtures_round_trip_through_the_encoder() {
    // Decoded inputs sent back as outputs in binary form carry the same bytes.
    let bytes = Bytes::from(std::fs::read(fixtures().join("rest/mixed-binary.body")).unwrap());
    let model = ModelRef {
        name: "m".into(),
        version: None,
    };
    let header = manifest()
        .into_iter()
        .find(|c| c["file"] == "rest/mixed-binary.body")
        .unwrap();
    let length = header["header_length"].as_i64().map(i128::from);
    let request = rest::decode_request(model, bytes, length, &CodecConfig::default()).unwrap();
    let response = lanes_kserve::InferResponse {
        model_name: "m".into(),
        model_version: "1".into(),
        id: None,
        outputs: request
            .inputs
            .iter()
            .map(|i| lanes_kserve::OutputTensor {
                name: i.name.clone(),
                tensor: i.tensor.clone(),
            })
            .collect(),
    };
    let choice = lanes_kserve::OutputChoice::new(None, true);
    let encoded = rest::encode_response(&response, &choice).unwrap();
    assert_eq!(encoded.content_type, BINARY_CONTENT_TYPE);
    let head = encoded.header_length.unwrap();
    let raw: Vec<u8> = request
        .inputs
        .iter()
        .flat_map(|i| i.tensor.raw().to_vec())
        .collect();
    assert_eq!(&encoded.to_vec()[head..], &raw[..]);
}
