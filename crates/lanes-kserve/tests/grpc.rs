//! The gRPC mapping: typed `contents` and `raw_input_contents` to the validated
//! request with the REST rules and messages, and responses in
//! `raw_output_contents`.

use std::collections::HashMap;

use bytes::Bytes;
use lanes_kserve::proto::infer_parameter::ParameterChoice;
use lanes_kserve::proto::model_infer_request::{InferInputTensor, InferRequestedOutputTensor};
use lanes_kserve::proto::{InferParameter, InferTensorContents, ModelInferRequest};
use lanes_kserve::{
    grpc, CodecConfig, InferRequest, InferResponse, KserveError, OutputChoice, OutputTensor, Tensor,
};
use serde_json::json;
use tonic::Code;

fn input(
    name: &str,
    datatype: &str,
    shape: &[i64],
    contents: Option<InferTensorContents>,
) -> InferInputTensor {
    InferInputTensor {
        name: name.into(),
        datatype: datatype.into(),
        shape: shape.to_vec(),
        parameters: HashMap::new(),
        contents,
    }
}

fn request(inputs: Vec<InferInputTensor>, raw: Vec<Bytes>) -> ModelInferRequest {
    ModelInferRequest {
        model_name: "m".into(),
        model_version: String::new(),
        id: String::new(),
        parameters: HashMap::new(),
        inputs,
        outputs: vec![],
        raw_input_contents: raw,
    }
}

fn decode(message: ModelInferRequest) -> Result<InferRequest, KserveError> {
    grpc::decode_request(message, &CodecConfig::default())
}

fn param(choice: ParameterChoice) -> InferParameter {
    InferParameter {
        parameter_choice: Some(choice),
    }
}

#[test]
fn typed_contents_of_every_datatype() {
    let c = InferTensorContents::default;
    let message = request(
        vec![
            input(
                "b",
                "BOOL",
                &[2],
                Some(InferTensorContents {
                    bool_contents: vec![true, false],
                    ..c()
                }),
            ),
            input(
                "i8",
                "INT8",
                &[2],
                Some(InferTensorContents {
                    int_contents: vec![-128, 127],
                    ..c()
                }),
            ),
            input(
                "i32",
                "INT32",
                &[1],
                Some(InferTensorContents {
                    int_contents: vec![i32::MIN],
                    ..c()
                }),
            ),
            input(
                "i64",
                "INT64",
                &[1],
                Some(InferTensorContents {
                    int64_contents: vec![i64::MAX],
                    ..c()
                }),
            ),
            input(
                "u16",
                "UINT16",
                &[1],
                Some(InferTensorContents {
                    uint_contents: vec![65535],
                    ..c()
                }),
            ),
            input(
                "u64",
                "UINT64",
                &[1],
                Some(InferTensorContents {
                    uint64_contents: vec![u64::MAX],
                    ..c()
                }),
            ),
            input(
                "f32",
                "FP32",
                &[2, 1],
                Some(InferTensorContents {
                    fp32_contents: vec![1.5, -0.0],
                    ..c()
                }),
            ),
            input(
                "f64",
                "FP64",
                &[1],
                Some(InferTensorContents {
                    fp64_contents: vec![1e-300],
                    ..c()
                }),
            ),
            input(
                "s",
                "BYTES",
                &[2],
                Some(InferTensorContents {
                    bytes_contents: vec![Bytes::from("a"), Bytes::new()],
                    ..c()
                }),
            ),
            input("e", "FP16", &[0, 3], None),
        ],
        vec![],
    );
    let r = decode(message).unwrap();
    assert_eq!(
        r.input("b").unwrap().values::<bool>(),
        Some(vec![true, false])
    );
    assert_eq!(r.input("i8").unwrap().values::<i8>(), Some(vec![-128, 127]));
    assert_eq!(
        r.input("i32").unwrap().values::<i32>(),
        Some(vec![i32::MIN])
    );
    assert_eq!(
        r.input("i64").unwrap().values::<i64>(),
        Some(vec![i64::MAX])
    );
    assert_eq!(r.input("u16").unwrap().values::<u16>(), Some(vec![65535]));
    assert_eq!(
        r.input("u64").unwrap().values::<u64>(),
        Some(vec![u64::MAX])
    );
    assert_eq!(
        r.input("f32").unwrap().values::<f32>(),
        Some(vec![1.5, -0.0])
    );
    assert_eq!(r.input("f32").unwrap().shape(), [2, 1]);
    assert_eq!(r.input("f64").unwrap().values::<f64>(), Some(vec![1e-300]));
    assert_eq!(
        r.input("s").unwrap().bytes_elements().unwrap(),
        [Bytes::from("a"), Bytes::new()]
    );
    assert_eq!(r.input("e").unwrap().len(), 0);
    assert_eq!((r.id, r.model.version, r.outputs), (None, None, None));
}

#[test]
fn parameters_become_json_values_and_timeout_is_read() {
    let mut message = request(vec![], vec![]);
    message
        .parameters
        .insert("timeout".into(), param(ParameterChoice::Int64Param(2500)));
    message
        .parameters
        .insert("priority".into(), param(ParameterChoice::Uint64Param(3)));
    message
        .parameters
        .insert("k".into(), param(ParameterChoice::StringParam("v".into())));
    message
        .parameters
        .insert("d".into(), param(ParameterChoice::DoubleParam(f64::NAN)));
    message.parameters.insert(
        "unset".into(),
        InferParameter {
            parameter_choice: None,
        },
    );
    let r = decode(message).unwrap();
    assert_eq!(r.timeout_us, Some(2500));
    assert_eq!(
        json!(r.parameters),
        json!({"timeout": 2500, "priority": 3, "k": "v", "d": null, "unset": null})
    );
}

#[test]
fn refusals_name_the_problem_as_rest_does() {
    let c = InferTensorContents::default;
    let fp32 = |v: Vec<f32>| {
        Some(InferTensorContents {
            fp32_contents: v,
            ..c()
        })
    };
    let with_params = |mut i: InferInputTensor, key: &str| {
        i.parameters
            .insert(key.into(), param(ParameterChoice::StringParam("r".into())));
        i
    };
    let out = |name: &str, key: Option<&str>| InferRequestedOutputTensor {
        name: name.into(),
        parameters: key
            .map(|k| HashMap::from([(k.to_owned(), param(ParameterChoice::BoolParam(true)))]))
            .unwrap_or_default(),
    };
    let mut timeout = request(vec![], vec![]);
    timeout
        .parameters
        .insert("timeout".into(), param(ParameterChoice::Int64Param(-1)));
    let mut outputs_dup = request(vec![], vec![]);
    outputs_dup.outputs = vec![out("y", None), out("y", None)];
    let mut classification = request(vec![], vec![]);
    classification.outputs = vec![out("y", Some("classification"))];
    let mut unnamed = request(vec![], vec![]);
    unnamed.outputs = vec![out("", None)];
    let cases: Vec<(ModelInferRequest, &str)> = vec![
        (request(vec![input("", "FP32", &[1], fp32(vec![1.0]))], vec![]), "inputs[0]: 'name' must be a non-empty string"),
        (
            request(vec![input("x", "FP32", &[1], fp32(vec![1.0])), input("x", "FP32", &[1], fp32(vec![1.0]))], vec![]),
            "input 'x' appears more than once",
        ),
        (request(vec![input("x", "FLOAT", &[1], None)], vec![]), "input 'x': datatype 'FLOAT' is not a KServe datatype"),
        (request(vec![input("x", "FP32", &[-1, 2], None)], vec![]), "input 'x': shape [-1, 2]: dimensions must be between 0 and 67108864"),
        (request(vec![input("x", "FP32", &[1; 33], None)], vec![]), "input 'x': shape has 33 dimensions; at most 32"),
        (
            request(vec![input("x", "FP32", &[60000, 60000], None)], vec![]),
            "input 'x': shape [60000, 60000] has 3600000000 elements, more than a body of at most 67108864 bytes can carry",
        ),
        (request(vec![with_params(input("x", "FP32", &[0], None), "shared_memory_region")], vec![]), "input 'x': shared memory is not supported"),
        (request(vec![input("x", "FP32", &[3], fp32(vec![1.0, 2.0]))], vec![]), "input 'x': contents has 2 elements; shape [3] needs 3"),
        (request(vec![input("x", "FP32", &[2], None)], vec![]), "input 'x' has neither contents nor raw_input_contents"),
        (
            request(vec![input("x", "FP64", &[1], fp32(vec![1.0]))], vec![]),
            "input 'x': FP64 contents go in fp64_contents, not fp32_contents",
        ),
        (request(vec![input("x", "FP16", &[1], fp32(vec![1.0]))], vec![]), "input 'x': FP16 has no typed contents; send it in raw_input_contents"),
        (
            request(vec![input("x", "UINT8", &[2], Some(InferTensorContents { uint_contents: vec![300, 2], ..c() }))], vec![]),
            "input 'x': UINT8 data must be integers between 0 and 255",
        ),
        (
            request(vec![input("x", "INT16", &[1], Some(InferTensorContents { int_contents: vec![-40000], ..c() }))], vec![]),
            "input 'x': INT16 data must be integers between -32768 and 32767",
        ),
        (
            request(vec![input("x", "FP32", &[2], None), input("y", "FP32", &[2], None)], vec![Bytes::from(vec![0; 8])]),
            "raw_input_contents has 1 entries but the request has 2 inputs; it must have one per input or none",
        ),
        (
            request(vec![input("x", "FP32", &[2], fp32(vec![1.0, 2.0]))], vec![Bytes::from(vec![0; 8])]),
            "input 'x' has both contents and raw_input_contents",
        ),
        (
            request(vec![input("x", "FP32", &[2], None)], vec![Bytes::from(vec![0; 4])]),
            "input 'x': raw_input_contents[0] of 4 bytes does not match shape [2] of FP32, which needs 8 bytes",
        ),
        (request(vec![input("x", "BOOL", &[2], None)], vec![Bytes::from_static(&[1, 2])]), "input 'x': BOOL bytes must be 0 or 1"),
        (
            request(vec![input("x", "BYTES", &[1], None)], vec![Bytes::from_static(b"\x05\0\0\0ab")]),
            "input 'x': BYTES element 0 of 5 bytes runs past the tensor's raw_input_contents[0] of 6 bytes",
        ),
        (
            request(vec![input("x", "BYTES", &[3], None)], vec![Bytes::from_static(b"\x01\0\0\0a\x01\0\0\0b")]),
            "input 'x': the BYTES data holds 2 elements; shape [3] needs 3",
        ),
        (timeout, "request parameter 'timeout' -1: must be an integer >= 0 (µs)"),
        (outputs_dup, "output 'y' is requested more than once"),
        (classification, "output 'y': the classification extension is not supported"),
        (unnamed, "outputs[0]: 'name' must be a non-empty string"),
    ];
    for (message, want) in cases {
        let error = decode(message).unwrap_err();
        assert!(
            error.to_string().starts_with(want),
            "{error} is not {want:?}"
        );
        assert_eq!(error.grpc_code(), Code::InvalidArgument);
        assert_eq!(error.http_status(), 400);
    }
}

#[test]
fn responses_carry_every_chosen_output_in_raw_output_contents() {
    let response = InferResponse {
        model_name: "m".into(),
        model_version: "2".into(),
        id: Some("req-9".into()),
        outputs: vec![
            OutputTensor {
                name: "y".into(),
                tensor: Tensor::from_values(vec![2], &[1.5f32, 2.0]).unwrap(),
            },
            OutputTensor {
                name: "z".into(),
                tensor: Tensor::from_bytes_elements(vec![1], vec![Bytes::from("ab")]).unwrap(),
            },
        ],
    };
    let message = grpc::encode_response(&response, &OutputChoice::new(None, false)).unwrap();
    assert_eq!(
        (message.id.as_str(), message.model_version.as_str()),
        ("req-9", "2")
    );
    let names: Vec<(&str, &str, &[i64])> = message
        .outputs
        .iter()
        .map(|o| (o.name.as_str(), o.datatype.as_str(), o.shape.as_slice()))
        .collect();
    assert_eq!(names, [("y", "FP32", &[2][..]), ("z", "BYTES", &[1][..])]);
    assert_eq!(
        message.raw_output_contents[0],
        [&1.5f32.to_le_bytes()[..], &2f32.to_le_bytes()].concat()
    );
    assert_eq!(message.raw_output_contents[1], &b"\x02\0\0\0ab"[..]);

    let one = [lanes_kserve::RequestedOutput {
        name: "z".into(),
        binary_data: false,
        parameters: Default::default(),
    }];
    let message = grpc::encode_response(&response, &OutputChoice::new(Some(&one), false)).unwrap();
    assert_eq!(message.outputs.len(), 1);
    assert_eq!(message.raw_output_contents.len(), 1);
    let missing = [lanes_kserve::RequestedOutput {
        name: "w".into(),
        binary_data: false,
        parameters: Default::default(),
    }];
    let e =
        grpc::encode_response(&response, &OutputChoice::new(Some(&missing), false)).unwrap_err();
    assert_eq!(e.to_status().code(), Code::InvalidArgument);
}

/// A REST body decoded, written as a `ModelInferRequest`, sent through the
/// protobuf wire form and decoded again gives the same request.
fn round_trip(body: serde_json::Value, version: Option<&str>) -> (InferRequest, InferRequest) {
    use prost::Message;
    let model = lanes_kserve::ModelRef {
        name: "m".into(),
        version: version.map(str::to_owned),
    };
    let rest = lanes_kserve::rest::decode_request(
        model,
        Bytes::from(body.to_string()),
        None,
        &CodecConfig::default(),
    )
    .unwrap();
    let wire = grpc::encode_request(&rest).unwrap().encode_to_vec();
    let back = decode(ModelInferRequest::decode(Bytes::from(wire)).unwrap()).unwrap();
    (rest, back)
}

#[test]
fn encoded_requests_decode_to_the_same_request() {
    let (rest, back) = round_trip(
        json!({
            "id": "r1",
            "parameters": {"timeout": 20000, "priority": -3, "big": 18446744073709551615u64,
                           "w": 0.5, "tag": "x", "flag": true},
            "inputs": [
                {"name": "x", "shape": [2, 2], "datatype": "FP32", "data": [1.0, -2.5, 3.0, 4.0]},
                {"name": "s", "shape": [2], "datatype": "BYTES", "data": ["ab", ""]},
                {"name": "b", "shape": [1], "datatype": "BOOL", "data": [true]},
                {"name": "e", "shape": [0, 3], "datatype": "INT64", "data": []}
            ],
            "outputs": [{"name": "y", "parameters": {"note": "k"}}, {"name": "z"}]
        }),
        Some("3"),
    );
    assert_eq!(back, rest);
    assert_eq!(back.model.version.as_deref(), Some("3"));
    assert_eq!(back.timeout_us, Some(20_000));
    let (rest, back) = round_trip(
        json!({"inputs": [{"name": "x", "shape": [1], "datatype": "UINT8", "data": [7]}]}),
        None,
    );
    assert_eq!(back, rest);
    assert!(back.outputs.is_none() && back.id.is_none());
}

#[test]
fn parameters_without_a_grpc_form_are_refused_by_name() {
    let rest = lanes_kserve::rest::decode_request(
        lanes_kserve::ModelRef::default(),
        Bytes::from(
            json!({"parameters": {"shape": [1, 2]},
                   "inputs": [{"name": "x", "shape": [1], "datatype": "INT32", "data": [1]}]})
            .to_string(),
        ),
        None,
        &CodecConfig::default(),
    )
    .unwrap();
    let err = grpc::encode_request(&rest).unwrap_err();
    assert_eq!(err.grpc_code(), Code::InvalidArgument);
    assert!(
        err.to_string().contains("parameter 'shape' is an array"),
        "{err}"
    );
}

#[test]
fn an_empty_id_and_no_outputs_are_grpc_defaults_and_read_back_as_none() {
    // Found by the rest_json fuzz target's round-trip check.
    let (rest, back) = round_trip(json!({"id": "", "outputs": [], "inputs": []}), None);
    assert_eq!(rest.id.as_deref(), Some(""));
    assert_eq!(back.id, None);
    assert!(back.outputs.is_none());
    assert_eq!(back.inputs, rest.inputs);
}
