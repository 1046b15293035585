//! The REST codec against the contract of `tests/serving/test_codec.py`: the
//! same inputs give the same status and the same message text.

use bytes::Bytes;
use half::f16;
use lanes_kserve::rest::{decode_request, encode_response, parse_header_length, HEADER_LENGTH};
use lanes_kserve::{
    CodecConfig, Datatype, InferRequest, InferResponse, KserveError, ModelRef, OutputChoice,
    OutputTensor, RequestedOutput, Tensor, MAX_BODY_BYTES,
};
use serde_json::{json, Value};

fn model() -> ModelRef {
    ModelRef {
        name: "m".into(),
        version: None,
    }
}

fn decode(body: &[u8], header_length: Option<i128>) -> Result<InferRequest, KserveError> {
    decode_request(
        model(),
        Bytes::copy_from_slice(body),
        header_length,
        &CodecConfig::default(),
    )
}

fn refused(body: &[u8], header_length: Option<i128>) -> KserveError {
    match decode(body, header_length) {
        Ok(r) => panic!("accepted {}: {r:?}", String::from_utf8_lossy(body)),
        Err(e) => e,
    }
}

fn json_body(inputs: Value, extra: Value) -> Vec<u8> {
    let mut body = json!({ "inputs": inputs });
    if let Value::Object(extra) = extra {
        body.as_object_mut().unwrap().extend(extra);
    }
    serde_json::to_vec(&body).unwrap()
}

/// The FP32 input `x` of shape [2] with data [1, 2], with `fields` replaced
/// (null removes a field), as test_codec.py's `input_json`.
fn input_json(fields: Value) -> Vec<u8> {
    let mut tensor = json!({"name": "x", "shape": [2], "datatype": "FP32", "data": [1, 2]});
    for (k, v) in fields.as_object().unwrap() {
        if v.is_null() {
            tensor.as_object_mut().unwrap().remove(k);
        } else {
            tensor[k] = v.clone();
        }
    }
    json_body(json!([tensor]), json!({}))
}

#[test]
fn malformed_json_requests_are_400() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let x = json!({"name": "x", "shape": [1], "datatype": "FP32", "data": [1]});
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"{not json".to_vec(), "request body is not valid JSON"),
        (b"\xff\xfe\x00garbage".to_vec(), "request body is not valid JSON"),
        (deep.into_bytes(), "request body is not valid JSON"),
        (b"[1, 2]".to_vec(), "must be a JSON object"),
        (b"{}".to_vec(), "request has no 'inputs'"),
        (br#"{"inputs": {}}"#.to_vec(), "'inputs' must be a JSON array"),
        (br#"{"inputs": [3]}"#.to_vec(), "inputs[0] must be a JSON object"),
        (json_body(json!([{"shape": [1], "datatype": "FP32", "data": [1]}]), json!({})), "'name'"),
        (json_body(json!([x, x]), json!({})), "more than once"),
        (input_json(json!({"datatype": "FLOAT"})), "datatype 'FLOAT' is not a KServe datatype"),
        (input_json(json!({"datatype": null})), "datatype None"),
        (input_json(json!({"shape": [1.5]})), "dimensions must be integers"),
        (input_json(json!({"shape": ["2"]})), "dimensions must be integers"),
        (input_json(json!({"shape": [true]})), "dimensions must be integers"),
        (input_json(json!({"shape": null})), "'shape' must be an array"),
        (input_json(json!({"shape": [-1, 2]})), "dimensions must be between 0"),
        (input_json(json!({"shape": [1_000_000_000_000u64]})), "dimensions must be between 0"),
        (input_json(json!({"shape": [60000, 60000]})), "elements, more than a body"),
        (input_json(json!({"shape": vec![1; 65], "data": [1]})), "shape has 65 dimensions; at most 32"),
        (input_json(json!({"shape": vec![0; 33], "data": []})), "shape has 33 dimensions; at most 32"),
        (input_json(json!({"shape": [3]})), "'data' has 2 elements; shape [3] needs 3"),
        (input_json(json!({"shape": [1]})), "'data' has 2 elements; shape [1] needs 1"),
        (input_json(json!({"data": [[1, 2], [3]], "shape": [3]})), "nested arrays of equal lengths"),
        (input_json(json!({"data": ["1.5", "2"]})), "FP32 data must be numbers, got strings"),
        (input_json(json!({"data": [true, false]})), "FP32 data must be numbers, got booleans"),
        (input_json(json!({"data": [null, 1]})), "FP32 data must be numbers"),
        (input_json(json!({"data": [{"a": 1}, 1]})), "FP32 data must be numbers"),
        (input_json(json!({"data": [1e300, 1]})), "out of the type's range"),
        (input_json(json!({"data": 7})), "'data' must be a JSON array, got a number"),
        (input_json(json!({"data": null})), "neither 'data' nor a binary_data_size"),
        (input_json(json!({"datatype": "INT64", "data": [1.5, 2]})), "INT64 data must be integers"),
        (input_json(json!({"datatype": "INT64", "data": [1.0, 2]})), "INT64 data must be integers"),
        (
            br#"{"inputs":[{"name":"x","shape":[2],"datatype":"INT64","data":[18446744073709551616,2]}]}"#
                .to_vec(),
            "INT64 data must be integers",
        ),
        (
            input_json(json!({"datatype": "INT64", "data": [9223372036854775808u64, 2]})),
            "between -9223372036854775808",
        ),
        (
            input_json(json!({"datatype": "UINT8", "data": [300, 2]})),
            "UINT8 data must be integers between 0 and 255",
        ),
        (input_json(json!({"datatype": "UINT8", "data": [-1, 2]})), "between 0 and 255"),
        (
            input_json(json!({"datatype": "BOOL", "data": [1, 0]})),
            "BOOL data must be true or false, got integers",
        ),
        (
            input_json(json!({"datatype": "BYTES", "data": ["a", 2]})),
            "BYTES data must be strings, got a number",
        ),
        (input_json(json!({"datatype": "BYTES", "data": ["a", "b", "c"]})), "more than the 2 elements"),
        (
            input_json(json!({"datatype": "BYTES", "data": ["a"]})),
            "'data' has 1 elements; shape [2] needs 2",
        ),
        (
            br#"{"inputs":[{"name":"x","shape":[2],"datatype":"BYTES","data":["\ud800","b"]}]}"#
                .to_vec(),
            // orjson's text says "no low surrogate in string"; serde_json's names the
            // hex escape. Both are the parser's words after the codec's own prefix.
            "request body is not valid JSON: unexpected end of hex escape",
        ),
        (input_json(json!({"parameters": {"binary_data_size": 8}})), "both 'data' and a binary_data_size"),
        (input_json(json!({"parameters": [1]})), "'parameters' must be a JSON object"),
        (
            input_json(json!({"parameters": {"shared_memory_region": "r"}})),
            "shared memory is not supported",
        ),
        (json_body(json!([]), json!({"id": 5})), "'id' must be a string"),
        (json_body(json!([]), json!({"parameters": "x"})), "'parameters' must be a JSON object"),
        (
            json_body(json!([]), json!({"parameters": {"binary_data_output": 1}})),
            "'binary_data_output' must be true",
        ),
        (json_body(json!([]), json!({"parameters": {"timeout": -1}})), "'timeout' -1"),
        (json_body(json!([]), json!({"parameters": {"timeout": "5"}})), "'timeout' '5'"),
        (json_body(json!([]), json!({"outputs": {}})), "'outputs' must be a JSON array"),
        (json_body(json!([]), json!({"outputs": [1]})), "outputs[0] must be a JSON object"),
        (json_body(json!([]), json!({"outputs": [{"name": ""}]})), "outputs[0]: 'name'"),
        (
            json_body(json!([]), json!({"outputs": [{"name": "y"}, {"name": "y"}]})),
            "output 'y' is requested more",
        ),
        (
            json_body(json!([]), json!({"outputs": [{"name": "y", "parameters": {"binary_data": "yes"}}]})),
            "'binary_data'",
        ),
        (
            json_body(json!([]), json!({"outputs": [{"name": "y", "parameters": {"classification": 3}}]})),
            "classification",
        ),
    ];
    for (body, needle) in cases {
        let error = refused(&body, None);
        assert_eq!(error.http_status(), 400, "{error}");
        assert!(
            error.to_string().contains(needle),
            "{:?}: {error} lacks {needle:?}",
            String::from_utf8_lossy(&body[..body.len().min(200)])
        );
    }
}

/// Full messages the Python codec states, character for character.
#[test]
fn messages_read_as_the_python_codec_writes_them() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            input_json(json!({"datatype": "FLOAT"})),
            "input 'x': datatype 'FLOAT' is not a KServe datatype; allowed are BOOL, UINT8, \
             UINT16, UINT32, UINT64, INT8, INT16, INT32, INT64, FP16, FP32, FP64, BYTES",
        ),
        (
            input_json(json!({"shape": [1.5]})),
            "input 'x': shape [1.5]: dimensions must be integers",
        ),
        (
            input_json(json!({"shape": ["2", true]})),
            "input 'x': shape ['2', True]: dimensions must be integers",
        ),
        (
            input_json(json!({"shape": [60000, 60000]})),
            "input 'x': shape [60000, 60000] has 3600000000 elements, more than a body of at \
             most 67108864 bytes can carry",
        ),
        (
            input_json(json!({"shape": [-1, 2]})),
            "input 'x': shape [-1, 2]: dimensions must be between 0 and 67108864",
        ),
        (
            json_body(json!([]), json!({"parameters": {"timeout": 1.5}})),
            "request parameter 'timeout' 1.5: must be an integer >= 0 (µs)",
        ),
        (
            input_json(json!({"data": ["a", null]})),
            "input 'x': FP32 data must be numbers, got null, objects or out-of-range numbers",
        ),
        (
            input_json(json!({"datatype": "INT8", "data": [1.5, 2]})),
            "input 'x': INT8 data must be integers, got non-integer numbers",
        ),
        (
            input_json(json!({"datatype": "INT8", "data": [1, 200]})),
            "input 'x': INT8 data must be integers between -128 and 127",
        ),
        // Found by comparing with the Python codec on the fuzz corpus: an integer past 64
        // bits is a float, parsed correctly rounded (serde_json's float_roundtrip).
        (
            br#"{"inputs":[{"name":"x","shape":[32222222222222222222222222],"datatype":"FP32","data":[]}]}"#
                .to_vec(),
            "input 'x': shape [3.222222222222222e+25]: dimensions must be integers",
        ),
    ];
    for (body, message) in cases {
        let error = refused(&body, None);
        assert_eq!(error.to_string(), message);
    }
    // A boolean among integers counts as 0/1, as numpy reads it.
    let ok = decode(
        &input_json(json!({"datatype": "INT8", "data": [true, 2]})),
        None,
    )
    .unwrap();
    assert_eq!(ok.input("x").unwrap().values::<i8>(), Some(vec![1, 2]));
}

fn binary_input(datatype: &str, shape: &[u64], size: Value, name: &str) -> Value {
    json!({"name": name, "shape": shape, "datatype": datatype, "parameters": {"binary_data_size": size}})
}

fn fp32(size: Value) -> Value {
    binary_input("FP32", &[2], size, "x")
}

fn bytes_blob(items: &[&[u8]]) -> Vec<u8> {
    items
        .iter()
        .flat_map(|i| [&(i.len() as u32).to_le_bytes()[..], i].concat())
        .collect()
}

fn binary_request(tensors: Value, blob: &[u8]) -> (Vec<u8>, i128) {
    let mut body = serde_json::to_vec(&json!({ "inputs": tensors })).unwrap();
    let head = body.len() as i128;
    body.extend_from_slice(blob);
    (body, head)
}

#[test]
fn malformed_binary_requests_are_400() {
    let len5 = 5u32.to_le_bytes();
    let cases: Vec<(Value, Vec<u8>, &str)> = vec![
        (
            json!([binary_input("FP32", &[2], json!(4), "x")]),
            vec![0; 4],
            "binary_data_size 4 does not match shape [2] of FP32, which needs 8",
        ),
        (
            json!([binary_input("FP32", &[2], json!(12), "x")]),
            vec![0; 12],
            "needs 8 bytes",
        ),
        (
            json!([fp32(json!(8))]),
            vec![0; 12],
            "binary data after the JSON header but the inputs' binary_data_size add up to 8",
        ),
        (
            json!([fp32(json!(8))]),
            vec![0; 6],
            "runs past the end of the body (6 bytes left)",
        ),
        (
            json!([fp32(json!(8)), binary_input("FP32", &[2], json!(8), "y")]),
            vec![0; 12],
            "input 'y': binary_data_size 8 runs past",
        ),
        (
            json!([fp32(json!(-8))]),
            vec![],
            "binary_data_size -8 must be an integer >= 0",
        ),
        (
            json!([fp32(json!(8.0))]),
            vec![0; 8],
            "binary_data_size 8.0 must be an integer",
        ),
        (json!([fp32(json!(true))]), vec![0], "must be an integer"),
        (json!([]), vec![0, 0], "add up to 0"),
        (
            json!([binary_input("BOOL", &[2], json!(2), "x")]),
            vec![1, 2],
            "BOOL bytes must be 0 or 1",
        ),
        (
            json!([binary_input("BYTES", &[2], json!(9), "x")]),
            [bytes_blob(&[b"abc"]), vec![1, 0]].concat(),
            "truncated length",
        ),
        (
            json!([binary_input("BYTES", &[1], json!(6), "x")]),
            [&len5[..], b"ab"].concat(),
            "element 0 of 5 bytes runs past",
        ),
        (
            json!([binary_input("BYTES", &[1], json!(12), "x")]),
            bytes_blob(&[b"ab", b"cd"]),
            "more than the 1 elements",
        ),
        (
            json!([binary_input("BYTES", &[3], json!(12), "x")]),
            bytes_blob(&[b"ab", b"cd"]),
            "holds 2 elements; shape [3] needs 3",
        ),
        (
            json!([binary_input("BYTES", &[1], json!(4), "x")]),
            u32::MAX.to_le_bytes().to_vec(),
            "runs past",
        ),
    ];
    for (tensors, blob, needle) in cases {
        let (body, head) = binary_request(tensors, &blob);
        let error = refused(&body, Some(head));
        assert_eq!(error.http_status(), 400);
        assert!(
            error.to_string().contains(needle),
            "{error} lacks {needle:?}"
        );
    }
}

#[test]
fn header_length_must_fit_the_body() {
    let (body, head) = binary_request(json!([fp32(json!(8))]), &[0; 8]);
    let len = body.len() as i128;
    for h in [len + 1, -3] {
        let e = refused(&body, Some(h));
        assert_eq!(
            e.to_string(),
            format!("{HEADER_LENGTH} {h}: must be between 0 and the body length ({len} bytes)")
        );
    }
    assert!(refused(&body, Some(head - 1))
        .to_string()
        .contains("not valid JSON"));
    assert!(refused(&body, None).to_string().contains("not valid JSON"));
    let body = serde_json::to_vec(&json!({"inputs": [binary_input("FP32", &[0], json!(0), "x")]}))
        .unwrap();
    assert!(refused(&body, None)
        .to_string()
        .contains(&format!("no {HEADER_LENGTH} header")));
}

#[test]
fn body_over_the_limit_is_413() {
    let (body, head) = binary_request(
        json!([binary_input("FP32", &[1000], json!(4000), "x")]),
        &[0; 4000],
    );
    let config = CodecConfig {
        max_body_bytes: 1000,
    };
    let e = decode_request(model(), body.clone().into(), Some(head), &config).unwrap_err();
    assert_eq!(e.http_status(), 413);
    assert_eq!(
        e.to_string(),
        format!("request body is {} bytes; the limit is 1000", body.len())
    );
    const { assert!(MAX_BODY_BYTES >= 1 << 20) };
    let config = CodecConfig {
        max_body_bytes: body.len(),
    };
    decode_request(model(), body.into(), Some(head), &config).unwrap();
}

#[test]
fn parse_header_length_takes_only_decimal_integers() {
    assert_eq!(parse_header_length(None).unwrap(), None);
    assert_eq!(parse_header_length(Some(b" 42 ")).unwrap(), Some(42));
    assert_eq!(parse_header_length(Some(b"-1")).unwrap(), Some(-1));
    assert_eq!(parse_header_length(Some(b"+7")).unwrap(), Some(7));
    for bad in [
        "abc",
        "",
        "4.5",
        &"1".repeat(30),
        "\u{b2}",
        "1_0",
        "0x10",
        "+",
        "+-5",
    ] {
        let e = parse_header_length(Some(bad.as_bytes())).unwrap_err();
        assert_eq!(e.http_status(), 400);
        assert!(e.to_string().contains(HEADER_LENGTH), "{e}");
    }
    let e = parse_header_length(Some(b"1_0")).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{HEADER_LENGTH} '1_0': must be an integer")
    );
    // Bytes that are not UTF-8 read as aiohttp reads them (surrogateescape); found by
    // comparing with the Python codec on the fuzz corpus.
    let e = parse_header_length(Some(b"\xb1\x11'7")).unwrap_err();
    let want = format!("{HEADER_LENGTH} \"\\udcb1\\x11'7\": must be an integer");
    assert_eq!(e.to_string(), want);
}

#[test]
fn output_without_binary_data_takes_the_request_default() {
    let body = json_body(
        json!([{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}]),
        json!({
            "outputs": [{"name": "y"}, {"name": "z", "parameters": {"binary_data": false}}],
            "parameters": {"binary_data_output": true}
        }),
    );
    let request = decode(&body, None).unwrap();
    let outputs = request.outputs.unwrap();
    assert_eq!(
        outputs
            .iter()
            .map(|o| (o.name.as_str(), o.binary_data))
            .collect::<Vec<_>>(),
        [("y", true), ("z", false)]
    );
    assert_eq!(
        outputs[1].parameters.get("binary_data"),
        Some(&json!(false))
    );
    assert_eq!(request.id, None);
    assert_eq!(request.timeout_us, None);
    assert!(request.binary_data_output);
}

#[test]
fn timeout_and_custom_parameters_come_through() {
    let cases = [
        (json!(2500), Some(2500)),
        (json!(null), None),
        (json!(1e19), Some(u64::MAX)),
    ];
    for (timeout, want) in cases {
        let body = json_body(
            json!([]),
            json!({"parameters": {"timeout": timeout, "k": "v"}}),
        );
        let request = decode(&body, None).unwrap();
        assert_eq!(request.timeout_us, want);
        assert_eq!(request.parameters["k"], json!("v"));
    }
    let body = json_body(json!([]), json!({"outputs": []}));
    assert_eq!(decode(&body, None).unwrap().outputs, None);
}

#[test]
fn nested_json_data_is_read_row_major() {
    let body = json_body(
        json!([
            {"name": "a", "shape": [2, 2], "datatype": "FP32", "data": [[1, 2], [3, 4.5]]},
            {"name": "b", "shape": [4], "datatype": "INT32", "data": [[1, 2], [3, 4]]},
            {"name": "c", "shape": [2, 1], "datatype": "BYTES", "data": [["p"], ["q"]]},
            {"name": "d", "shape": [1, 2], "datatype": "BOOL", "data": [[true, false]]},
            {"name": "e", "shape": [0, 3], "datatype": "FP16", "data": []},
            {"name": "f", "shape": [2], "datatype": "FP16", "data": [1, 0.5]},
            {"name": "g", "shape": [2], "datatype": "UINT64", "data": [18446744073709551615u64, true]},
            {"name": "h", "shape": [2], "datatype": "FP64", "data": [0.1, 1.7976931348623157e308]},
        ]),
        json!({}),
    );
    let r = decode(&body, None).unwrap();
    assert_eq!(
        r.input("a").unwrap().values::<f32>(),
        Some(vec![1.0, 2.0, 3.0, 4.5])
    );
    assert_eq!(
        r.input("b").unwrap().values::<i32>(),
        Some(vec![1, 2, 3, 4])
    );
    let c = r.input("c").unwrap();
    assert_eq!(
        c.bytes_elements().unwrap(),
        [Bytes::from("p"), Bytes::from("q")]
    );
    assert_eq!(c.shape(), [2, 1]);
    assert_eq!(
        r.input("d").unwrap().values::<bool>(),
        Some(vec![true, false])
    );
    let e = r.input("e").unwrap();
    assert_eq!(
        (e.shape(), e.datatype(), e.len()),
        (&[0, 3][..], Datatype::Fp16, 0)
    );
    assert_eq!(
        r.input("f").unwrap().values::<f16>(),
        Some(vec![f16::ONE, f16::from_f32(0.5)])
    );
    assert_eq!(
        r.input("g").unwrap().values::<u64>(),
        Some(vec![u64::MAX, 1])
    );
    // Correctly rounded parses (as Python's float()), not the fast approximate path.
    let h = r.input("h").unwrap().values::<f64>().unwrap();
    assert_eq!(h, ["0.1".parse::<f64>().unwrap(), f64::MAX]);
    let big: Value = serde_json::from_str("[32222222222222222222222222]").unwrap();
    let want = "32222222222222222222222222".parse::<f64>().unwrap();
    assert_eq!(big[0].as_f64(), Some(want));
    assert_eq!(
        r.inputs.iter().map(|i| i.name.as_str()).collect::<String>(),
        "abcdefgh"
    );
}

#[test]
fn binary_numeric_input_is_a_zero_copy_slice_of_the_body() {
    let (body, head) = binary_request(
        json!([
            binary_input("UINT8", &[3], json!(3), "a"),
            binary_input("FP32", &[2], json!(8), "b")
        ]),
        &[
            [1u8, 2, 3].as_slice(),
            &1f32.to_le_bytes(),
            &2f32.to_le_bytes(),
        ]
        .concat(),
    );
    let body = Bytes::from(body);
    let r = decode_request(model(), body.clone(), Some(head), &CodecConfig::default()).unwrap();
    let b = r.input("b").unwrap();
    assert_eq!(b.values::<f32>(), Some(vec![1.0, 2.0]));
    let lanes_kserve::TensorData::Fixed(buf) = b.data() else {
        panic!("fixed")
    };
    let start = buf.as_ptr() as usize - body.as_ptr() as usize;
    assert_eq!(start, head as usize + 3, "a slice of the body, not a copy");
}

fn outputs() -> Vec<OutputTensor> {
    let out = |name: &str, tensor: Tensor| OutputTensor {
        name: name.into(),
        tensor,
    };
    vec![
        out(
            "FP32",
            Tensor::from_values(vec![2, 2], &[1.5f32, f32::NAN, f32::INFINITY, -0.1]).unwrap(),
        ),
        out(
            "INT64",
            Tensor::from_values(vec![2], &[i64::MIN, i64::MAX]).unwrap(),
        ),
        out(
            "BOOL",
            Tensor::from_values(vec![1, 2], &[true, false]).unwrap(),
        ),
        out(
            "BYTES",
            Tensor::from_bytes_elements(
                vec![2],
                vec![Bytes::from("h\u{e9}"), Bytes::from_static(b"\xff\x00")],
            )
            .unwrap(),
        ),
    ]
}

fn response(id: Option<&str>) -> InferResponse {
    InferResponse {
        model_name: "m".into(),
        model_version: "3".into(),
        id: id.map(Into::into),
        outputs: outputs(),
    }
}

#[test]
fn json_response_writes_every_output_in_order() {
    let encoded =
        encode_response(&response(Some("req-1")), &OutputChoice::new(None, false)).unwrap();
    assert_eq!(encoded.content_type, "application/json");
    assert_eq!(encoded.header_length, None);
    let text = String::from_utf8(encoded.to_vec()).unwrap();
    assert_eq!(
        text,
        concat!(
            r#"{"model_name":"m","model_version":"3","id":"req-1","outputs":["#,
            r#"{"name":"FP32","datatype":"FP32","shape":[2,2],"data":[1.5,NaN,Infinity,-0.1]},"#,
            r#"{"name":"INT64","datatype":"INT64","shape":[2],"data":[-9223372036854775808,9223372036854775807]},"#,
            r#"{"name":"BOOL","datatype":"BOOL","shape":[1,2],"data":[true,false]},"#,
            "{\"name\":\"BYTES\",\"datatype\":\"BYTES\",\"shape\":[2],\"data\":[\"h\u{e9}\",\"\u{fffd}\\u0000\"]}]}"
        )
    );
}

#[test]
fn requested_outputs_mixed_binary_and_json_in_requested_order() {
    let requested =
        [("BYTES", false), ("FP32", true), ("BOOL", false)].map(|(n, b)| RequestedOutput {
            name: n.into(),
            binary_data: b,
            parameters: Default::default(),
        });
    let encoded =
        encode_response(&response(None), &OutputChoice::new(Some(&requested), false)).unwrap();
    assert_eq!(encoded.content_type, "application/octet-stream");
    let body = encoded.to_vec();
    let head = encoded.header_length.unwrap();
    let header: Value = serde_json::from_slice(&body[..head]).unwrap_or_else(|_| {
        // NaN is not JSON proper; only the binary FP32 output holds one here.
        panic!("{}", String::from_utf8_lossy(&body[..head]))
    });
    assert!(header.get("id").is_none());
    let names: Vec<&str> = header["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["BYTES", "FP32", "BOOL"]);
    assert_eq!(
        header["outputs"][1]["parameters"]["binary_data_size"],
        json!(16)
    );
    assert!(header["outputs"][1].get("data").is_none());
    let fp32: Vec<f32> = body[head..]
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(fp32[0], 1.5);
    assert!(fp32[1].is_nan());

    let missing = [RequestedOutput {
        name: "nope".into(),
        binary_data: true,
        parameters: Default::default(),
    }];
    let e =
        encode_response(&response(None), &OutputChoice::new(Some(&missing), false)).unwrap_err();
    assert_eq!(e.http_status(), 400);
    assert_eq!(
        e.to_string(),
        "unknown output 'nope'; the outputs of model 'm' are: FP32, INT64, BOOL, BYTES"
    );
}

// -- validation against the model (check_inputs / check_outputs) ----------------------------

fn specs() -> Vec<lanes_kserve::TensorSpec> {
    vec![
        lanes_kserve::TensorSpec {
            name: "image".into(),
            datatype: Datatype::Uint8,
            shape: vec![-1, 4, -1],
        },
        lanes_kserve::TensorSpec {
            name: "scale".into(),
            datatype: Datatype::Fp32,
            shape: vec![-1],
        },
    ]
}

fn with_inputs(inputs: &[(&str, Tensor)]) -> InferRequest {
    InferRequest {
        model: model(),
        id: None,
        inputs: inputs
            .iter()
            .map(|(n, t)| lanes_kserve::InputTensor {
                name: (*n).into(),
                tensor: t.clone(),
            })
            .collect(),
        outputs: None,
        parameters: Default::default(),
        binary_data_output: false,
        timeout_us: None,
    }
}

fn zeros_u8(shape: Vec<u64>) -> Tensor {
    let n = shape.iter().product::<u64>() as usize;
    Tensor::from_values(shape, &vec![0u8; n]).unwrap()
}

fn ones_f32(n: u64) -> Tensor {
    Tensor::from_values(vec![n], &vec![1f32; n as usize]).unwrap()
}

#[test]
fn check_inputs_refusals_name_the_problem() {
    let image = zeros_u8(vec![2, 4, 9]);
    let scale = ones_f32(2);
    let ok = with_inputs(&[("image", image.clone()), ("scale", scale.clone())]);
    lanes_kserve::check_inputs(&ok, &specs(), true).unwrap();
    lanes_kserve::check_inputs(&ok, &specs(), false).unwrap();
    let scale64 = Tensor::from_values(vec![2], &[1f64, 1.0]).unwrap();
    let cases: Vec<(Vec<(&str, Tensor)>, &str)> = vec![
        (
            vec![
                ("image", image.clone()),
                ("scale", scale.clone()),
                ("extra", scale.clone()),
            ],
            "unknown input 'extra'; the model's inputs are: image, scale",
        ),
        (vec![("image", image.clone())], "missing input scale"),
        (vec![], "missing inputs image, scale"),
        (
            vec![("image", image.clone()), ("scale", scale64)],
            "input 'scale': datatype FP64, expected FP32",
        ),
        (
            vec![("image", zeros_u8(vec![2, 3, 9])), ("scale", scale.clone())],
            "input 'image': shape [2, 3, 9] does not match the declared shape [-1, 4, -1]",
        ),
        (
            vec![("image", zeros_u8(vec![2, 4])), ("scale", scale.clone())],
            "input 'image': shape [2, 4] does not match the declared shape [-1, 4, -1]",
        ),
        (
            vec![("image", zeros_u8(vec![0, 4, 9])), ("scale", ones_f32(0))],
            "input 'image': the batch dimension is 0; it must be >= 1",
        ),
        (
            vec![("image", image.clone()), ("scale", ones_f32(3))],
            "inputs disagree on the batch size: 'image' has 2 rows, 'scale' has 3",
        ),
    ];
    for (inputs, message) in cases {
        let e = lanes_kserve::check_inputs(&with_inputs(&inputs), &specs(), true).unwrap_err();
        assert_eq!((e.http_status(), e.to_string().as_str()), (400, message));
    }
    // Without batching, the first dimension is an ordinary -1 dimension.
    let unbatched = with_inputs(&[("image", zeros_u8(vec![0, 4, 9])), ("scale", ones_f32(3))]);
    lanes_kserve::check_inputs(&unbatched, &specs(), false).unwrap();
}

#[test]
fn check_outputs_names_unknown_outputs() {
    let specs = vec![
        lanes_kserve::TensorSpec {
            name: "y".into(),
            datatype: Datatype::Fp32,
            shape: vec![-1],
        },
        lanes_kserve::TensorSpec {
            name: "z".into(),
            datatype: Datatype::Fp32,
            shape: vec![-1],
        },
    ];
    let mut request = with_inputs(&[]);
    lanes_kserve::check_outputs(&request, &specs).unwrap();
    let named = |n: &str| RequestedOutput {
        name: n.into(),
        binary_data: true,
        parameters: Default::default(),
    };
    request.outputs = Some(vec![named("z")]);
    lanes_kserve::check_outputs(&request, &specs).unwrap();
    request.outputs = Some(vec![named("w")]);
    let e = lanes_kserve::check_outputs(&request, &specs).unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown output 'w'; the model's outputs are: y, z"
    );
}
