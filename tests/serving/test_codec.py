"""The wire codec against tritonclient: request bodies built by tritonclient's own
``generate_request_body`` decode to the same arrays, and response bodies parse with
``InferResult.from_response_body`` to the same arrays — the compatibility contract of
``lanes serve``. Plus every way a request can be refused."""

from __future__ import annotations

import json
import random
import struct

import numpy as np
import pytest
import tritonclient.http as triton

from lanes.models.base import TensorSpec
from lanes.serving.codec import (
    HEADER_LENGTH,
    MAX_BODY_BYTES,
    InferRequest,
    RequestedOutput,
    WireError,
    check_inputs,
    check_outputs,
    decode_request,
    encode_response,
    parse_header_length,
)

ARRAYS = {
    "FP32": np.array([[1.5, -2.25, 3e30], [0.0, -0.0, 7.0]], dtype=np.float32),
    "FP16": np.array([[0.5, -1.0], [65504.0, 2.0]], dtype=np.float16),
    "FP64": np.array([1e-300, 2.5, -3.0], dtype=np.float64),
    "INT64": np.array([[-(2**63), 2**63 - 1, 0]], dtype=np.int64),
    "INT8": np.array([-128, 127], dtype=np.int8),
    "UINT8": np.arange(12, dtype=np.uint8).reshape(2, 3, 2),
    "UINT64": np.array([0, 2**64 - 1], dtype=np.uint64),
    "BOOL": np.array([[True, False, True]], dtype=np.bool_),
    "BYTES": np.array([[b"hello", b""], ["h\u00e9llo \u2603".encode(), b"x" * 300]], dtype=object),
}


def triton_body(tensors, binary, outputs=None, **kwargs):
    """A request body and header length exactly as tritonclient's HTTP client makes them."""
    inputs = []
    for name, array in tensors.items():
        datatype = "BYTES" if array.dtype == object else triton_dtype(array)
        tensor = triton.InferInput(name, list(array.shape), datatype)
        tensor.set_data_from_numpy(
            array, binary_data=binary[name] if isinstance(binary, dict) else binary
        )
        inputs.append(tensor)
    return triton.InferenceServerClient.generate_request_body(inputs, outputs=outputs, **kwargs)


def triton_dtype(array):
    from tritonclient.utils import np_to_triton_dtype

    return np_to_triton_dtype(array.dtype)


def json_body(inputs, **extra):
    return json.dumps({"inputs": inputs, **extra}).encode()


def refused(body, header_length=None, status=400, **kwargs):
    with pytest.raises(WireError) as info:
        decode_request(body, header_length, **kwargs)
    assert info.value.status == status
    return info.value.message


def parse(body, headers):
    length = headers.get(HEADER_LENGTH)
    return triton.InferResult.from_response_body(
        body, header_length=None if length is None else int(length)
    )


# -- requests ---------------------------------------------------------------------------------


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
@pytest.mark.parametrize("datatype", list(ARRAYS))
def test_tritonclient_request_round_trip(datatype, binary):
    array = ARRAYS[datatype]
    body, header_length = triton_body({"x": array}, binary, request_id="req-7")
    assert (header_length is not None) == binary
    request = decode_request(body, header_length)
    got = request.inputs["x"]
    assert got.dtype == array.dtype
    assert got.shape == array.shape
    assert got.tolist() == array.tolist()
    assert not got.flags.writeable
    assert request.id == "req-7"
    # tritonclient asks for binary outputs when it names none.
    assert request.outputs is None
    assert request.binary_output_default is True


def test_many_inputs_mixed_binary_and_json_keep_their_order():
    tensors = {k: ARRAYS[k] for k in ("UINT8", "FP32", "BYTES", "BOOL", "INT64")}
    binary = {"UINT8": True, "FP32": True, "BYTES": True, "BOOL": False, "INT64": True}
    body, header_length = triton_body(tensors, binary)
    request = decode_request(body, header_length)
    assert list(request.inputs) == list(tensors)
    for name, array in tensors.items():
        assert request.inputs[name].tolist() == array.tolist()
        assert request.inputs[name].dtype == array.dtype


def test_binary_numeric_input_is_a_read_only_view_copied_only_when_unaligned():
    # UINT8 of 3 bytes first: the FP32 data then starts at an odd offset.
    odd = np.array([1, 2, 3], dtype=np.uint8)
    f = np.array([1.0, 2.0], dtype=np.float32)
    body, header_length = triton_body({"a": odd, "b": f}, True)
    request = decode_request(body, header_length)
    assert request.inputs["b"].flags.aligned
    assert request.inputs["b"].tolist() == [1.0, 2.0]
    body, header_length = triton_body({"b": f}, True)
    view = decode_request(body, header_length).inputs["b"]
    assert not view.flags.owndata  # zero-copy view of the body
    with pytest.raises(ValueError):
        view[0] = 5.0


def test_requested_outputs_and_parameters_come_through():
    outputs = [
        triton.InferRequestedOutput("y", binary_data=False),
        triton.InferRequestedOutput("z", binary_data=True),
    ]
    body, header_length = triton_body(
        {"x": ARRAYS["FP32"]}, True, outputs=outputs, timeout=2500, parameters={"k": "v"}
    )
    request = decode_request(body, header_length)
    assert request.outputs is not None
    assert [(o.name, o.binary_data) for o in request.outputs] == [("y", False), ("z", True)]
    assert request.binary_output_default is False
    assert request.timeout_us == 2500
    assert request.parameters["k"] == "v"


def test_output_without_binary_data_takes_the_request_default():
    body = json_body(
        [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}],
        outputs=[{"name": "y"}, {"name": "z", "parameters": {"binary_data": False}}],
        parameters={"binary_data_output": True},
    )
    request = decode_request(body, None)
    assert request.outputs == [
        RequestedOutput("y", True, {}),
        RequestedOutput("z", False, {"binary_data": False}),
    ]
    assert request.id is None
    assert request.timeout_us is None


def test_nested_json_data_is_read_row_major():
    body = json_body(
        [
            {"name": "a", "shape": [2, 2], "datatype": "FP32", "data": [[1, 2], [3, 4.5]]},
            {"name": "b", "shape": [4], "datatype": "INT32", "data": [[1, 2], [3, 4]]},
            {"name": "c", "shape": [2, 1], "datatype": "BYTES", "data": [["p"], ["q"]]},
            {"name": "d", "shape": [1, 2], "datatype": "BOOL", "data": [[True, False]]},
            {"name": "e", "shape": [0, 3], "datatype": "FP16", "data": []},
            {"name": "f", "shape": [2], "datatype": "FP16", "data": [1, 0.5]},
        ]
    )
    inputs = decode_request(body, None).inputs
    assert inputs["a"].tolist() == [[1.0, 2.0], [3.0, 4.5]]
    assert inputs["b"].dtype == np.int32
    assert inputs["b"].tolist() == [1, 2, 3, 4]
    assert inputs["c"].tolist() == [[b"p"], [b"q"]]
    assert inputs["c"].dtype == object
    assert inputs["d"].tolist() == [[True, False]]
    assert inputs["e"].shape == (0, 3)
    assert inputs["e"].dtype == np.float16
    assert inputs["f"].tolist() == [1.0, 0.5]


def test_empty_binary_tensors():
    body, header_length = triton_body(
        {"a": np.zeros((0, 4), np.float32), "b": np.empty((0,), object)}, True
    )
    inputs = decode_request(body, header_length).inputs
    assert inputs["a"].shape == (0, 4)
    assert inputs["b"].shape == (0,)


def input_json(**fields):
    tensor = {"name": "x", "shape": [2], "datatype": "FP32", "data": [1, 2]}
    tensor.update(fields)
    return json_body([{k: v for k, v in tensor.items() if v is not None}])


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"{not json", "request body is not valid JSON"),
        (b"\xff\xfe\x00garbage", "request body is not valid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "request body is not valid JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (b"{}", "request has no 'inputs'"),
        (b'{"inputs": {}}', "'inputs' must be a JSON array"),
        (b'{"inputs": [3]}', "inputs[0] must be a JSON object"),
        (json_body([{"shape": [1], "datatype": "FP32", "data": [1]}]), "'name'"),
        (
            json_body([{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}] * 2),
            "more than once",
        ),
        (input_json(datatype="FLOAT"), "datatype 'FLOAT' is not a KServe datatype"),
        (input_json(datatype=None), "datatype None"),
        (input_json(shape=[1.5]), "dimensions must be integers"),
        (input_json(shape=["2"]), "dimensions must be integers"),
        (input_json(shape=[True]), "dimensions must be integers"),
        (input_json(shape=None), "'shape' must be an array"),
        (input_json(shape=[-1, 2]), "dimensions must be between 0"),
        (input_json(shape=[10**12]), "dimensions must be between 0"),
        (input_json(shape=[60000, 60000]), "elements, more than a body"),
        (input_json(shape=[1] * 65, data=[1]), "shape has 65 dimensions; at most 32"),
        (input_json(shape=[0] * 33, data=[]), "shape has 33 dimensions; at most 32"),
        (input_json(shape=[3]), "'data' has 2 elements; shape [3] needs 3"),
        (input_json(shape=[1]), "'data' has 2 elements; shape [1] needs 1"),
        (input_json(data=[[1, 2], [3]], shape=[3]), "nested arrays of equal lengths"),
        (input_json(data=["1.5", "2"]), "FP32 data must be numbers, got strings"),
        (input_json(data=[True, False]), "FP32 data must be numbers, got booleans"),
        (input_json(data=[None, 1]), "FP32 data must be numbers"),
        (input_json(data=[{"a": 1}, 1]), "FP32 data must be numbers"),
        (input_json(data=[1e300, 1]), "out of the type's range"),
        (input_json(data=7), "'data' must be a JSON array, got a number"),
        (input_json(data=None), "neither 'data' nor a binary_data_size"),
        (input_json(datatype="INT64", data=[1.5, 2]), "INT64 data must be integers"),
        (input_json(datatype="INT64", data=[1.0, 2]), "INT64 data must be integers"),
        (input_json(datatype="INT64", data=[2**64, 2]), "INT64 data must be integers"),
        (input_json(datatype="INT64", data=[2**63, 2]), "between -9223372036854775808"),
        (
            input_json(datatype="UINT8", data=[300, 2]),
            "UINT8 data must be integers between 0 and 255",
        ),
        (input_json(datatype="UINT8", data=[-1, 2]), "between 0 and 255"),
        (input_json(datatype="BOOL", data=[1, 0]), "BOOL data must be true or false, got integers"),
        (input_json(datatype="BYTES", data=["a", 2]), "BYTES data must be strings, got a number"),
        (input_json(datatype="BYTES", data=["a", "b", "c"]), "more than the 2 elements"),
        (input_json(datatype="BYTES", data=["a"]), "'data' has 1 elements; shape [2] needs 2"),
        (input_json(datatype="BYTES", data=["\ud800", "b"]), "surrogate"),
        (input_json(parameters={"binary_data_size": 8}), "both 'data' and a binary_data_size"),
        (input_json(parameters=[1]), "'parameters' must be a JSON object"),
        (input_json(parameters={"shared_memory_region": "r"}), "shared memory is not supported"),
        (json_body([], id=5), "'id' must be a string"),
        (json_body([], parameters="x"), "'parameters' must be a JSON object"),
        (json_body([], parameters={"binary_data_output": 1}), "'binary_data_output' must be true"),
        (json_body([], parameters={"timeout": -1}), "'timeout' -1"),
        (json_body([], parameters={"timeout": "5"}), "'timeout' '5'"),
        (json_body([], outputs={}), "'outputs' must be a JSON array"),
        (json_body([], outputs=[1]), "outputs[0] must be a JSON object"),
        (json_body([], outputs=[{"name": ""}]), "outputs[0]: 'name'"),
        (json_body([], outputs=[{"name": "y"}, {"name": "y"}]), "output 'y' is requested more"),
        (
            json_body([], outputs=[{"name": "y", "parameters": {"binary_data": "yes"}}]),
            "'binary_data'",
        ),
        (
            json_body([], outputs=[{"name": "y", "parameters": {"classification": 3}}]),
            "classification",
        ),
    ],
)
def test_malformed_json_requests_are_400(body, needle):
    assert needle in refused(body)


def binary_request(tensors, blob, header_length_delta=0):
    """A hand-made binary body: ``tensors`` are JSON header inputs, ``blob`` the data after."""
    head = json.dumps({"inputs": tensors}).encode()
    return head + blob, len(head) + header_length_delta


def binary_input(datatype="FP32", shape=(2,), size=8, name="x"):
    return {
        "name": name,
        "shape": list(shape),
        "datatype": datatype,
        "parameters": {"binary_data_size": size},
    }


def bytes_blob(*items):
    return b"".join(struct.pack("<I", len(i)) + i for i in items)


@pytest.mark.parametrize(
    ("tensors", "blob", "needle"),
    [
        (
            [binary_input(size=4, shape=(2,))],
            b"\0" * 4,
            "binary_data_size 4 does not match shape [2] of FP32, which needs 8",
        ),
        ([binary_input(size=12, shape=(2,))], b"\0" * 12, "needs 8 bytes"),
        (
            [binary_input(size=8)],
            b"\0" * 12,
            "binary data after the JSON header but the inputs' binary_data_size add up to 8",
        ),
        ([binary_input(size=8)], b"\0" * 6, "runs past the end of the body (6 bytes left)"),
        (
            [binary_input(size=8), binary_input(name="y", size=8)],
            b"\0" * 12,
            "input 'y': binary_data_size 8 runs past",
        ),
        ([binary_input(size=-8)], b"", "binary_data_size -8 must be an integer >= 0"),
        ([binary_input(size=8.0)], b"\0" * 8, "binary_data_size 8.0 must be an integer"),
        ([binary_input(size=True)], b"\0", "must be an integer"),
        ([], b"\0\0", "add up to 0"),
        ([binary_input("BOOL", (2,), 2)], b"\x01\x02", "BOOL bytes must be 0 or 1"),
        ([binary_input("BYTES", (2,), 9)], bytes_blob(b"abc") + b"\x01\x00", "truncated length"),
        (
            [binary_input("BYTES", (1,), 6)],
            struct.pack("<I", 5) + b"ab",
            "element 0 of 5 bytes runs past",
        ),
        ([binary_input("BYTES", (1,), 12)], bytes_blob(b"ab", b"cd"), "more than the 1 elements"),
        (
            [binary_input("BYTES", (3,), 12)],
            bytes_blob(b"ab", b"cd"),
            "holds 2 elements; shape [3] needs 3",
        ),
        ([binary_input("BYTES", (1,), 4)], struct.pack("<I", 2**32 - 1), "runs past"),
    ],
)
def test_malformed_binary_requests_are_400(tensors, blob, needle):
    body, header_length = binary_request(tensors, blob)
    assert needle in refused(body, header_length)


def test_header_length_must_fit_the_body():
    body, header_length = triton_body({"x": ARRAYS["FP32"]}, True)
    assert "must be between 0 and the body length" in refused(body, len(body) + 1)
    assert "must be between 0 and the body length" in refused(body, -3)
    # A header length cutting the JSON short is malformed JSON.
    assert "not valid JSON" in refused(body, header_length - 1)
    # Binary data with no header length: the JSON parser sees trailing bytes.
    assert "not valid JSON" in refused(body, None)


def test_binary_data_size_without_header_length_is_named():
    body = json.dumps({"inputs": [binary_input(size=0, shape=(0,))]}).encode()
    assert f"no {HEADER_LENGTH} header" in refused(body, None)


def test_body_over_the_limit_is_413():
    body, header_length = triton_body({"x": np.zeros(1000, np.float32)}, True)
    message = refused(body, header_length, status=413, max_bytes=1000)
    assert f"request body is {len(body)} bytes; the limit is 1000" == message
    assert MAX_BODY_BYTES >= 1 << 20
    decode_request(body, header_length, max_bytes=len(body))


def test_parse_header_length():
    assert parse_header_length(None) is None
    assert parse_header_length(" 42 ") == 42
    assert parse_header_length("-1") == -1  # decode_request says it is out of range
    for bad in ("abc", "", "4.5", "1" * 30, "\u00b2", "1_0", "0x10", "+"):
        with pytest.raises(WireError) as info:
            parse_header_length(bad)
        assert info.value.status == 400
        assert HEADER_LENGTH in info.value.message


def test_mangled_bodies_raise_only_wire_errors():
    """Truncated and corrupted bodies of every kind: a WireError or a request, nothing else."""
    rng = random.Random(7)
    seeds = [triton_body({k: ARRAYS[k] for k in ARRAYS}, b) for b in (True, False)]
    seeds.append(triton_body({"x": ARRAYS["BYTES"], "y": ARRAYS["FP16"]}, True))
    for _ in range(400):
        body, header_length = rng.choice(seeds)
        data = bytearray(body)
        for _ in range(rng.randint(1, 4)):
            roll = rng.random()
            if roll < 0.3 and data:
                del data[rng.randrange(len(data)) :]
            elif roll < 0.8 and data:
                data[rng.randrange(len(data))] = rng.choice(b'0123456789-[]{}":,.e \x00\xff')
            else:
                data[rng.randrange(len(data) + 1) : 0] = rng.randbytes(rng.randint(1, 8))
        length = header_length if rng.random() < 0.8 else rng.choice([None, 0, len(data)])
        try:
            decode_request(bytes(data), length)
        except WireError as e:
            assert e.status == 400


# -- validation against the model -------------------------------------------------------------

SPECS = [
    TensorSpec("image", "UINT8", (-1, 4, -1)),
    TensorSpec("scale", "FP32", (-1,)),
]


def request_with(**inputs):
    return InferRequest(id=None, inputs=inputs)


def check_refused(request, specs=SPECS, batching=True):
    with pytest.raises(WireError) as info:
        check_inputs(request, specs, batching=batching)
    assert info.value.status == 400
    return info.value.message


def test_check_inputs_accepts_matching_request():
    request = request_with(image=np.zeros((2, 4, 9), np.uint8), scale=np.ones(2, np.float32))
    check_inputs(request, SPECS, batching=True)
    check_inputs(request, SPECS, batching=False)


def test_check_inputs_refusals_name_the_problem():
    image = np.zeros((2, 4, 9), np.uint8)
    scale = np.ones(2, np.float32)
    message = check_refused(request_with(image=image, scale=scale, extra=scale))
    assert message == "unknown input 'extra'; the model's inputs are: image, scale"
    assert check_refused(request_with(image=image)) == "missing input scale"
    assert check_refused(request_with()) == "missing inputs image, scale"
    message = check_refused(request_with(image=image, scale=scale.astype(np.float64)))
    assert message == "input 'scale': datatype FP64, expected FP32"
    message = check_refused(request_with(image=np.zeros((2, 3, 9), np.uint8), scale=scale))
    assert message == "input 'image': shape [2, 3, 9] does not match the declared shape [-1, 4, -1]"
    message = check_refused(request_with(image=np.zeros((2, 4), np.uint8), scale=scale))
    assert "does not match the declared shape" in message
    message = check_refused(request_with(image=np.zeros((0, 4, 9), np.uint8), scale=scale[:0]))
    assert message == "input 'image': the batch dimension is 0; it must be >= 1"
    message = check_refused(request_with(image=image, scale=np.ones(3, np.float32)))
    assert message == "inputs disagree on the batch size: 'image' has 2 rows, 'scale' has 3"
    # Without batching, the first dimension is an ordinary -1 dimension.
    check_inputs(
        request_with(image=np.zeros((0, 4, 9), np.uint8), scale=np.ones(3, np.float32)),
        SPECS,
        batching=False,
    )


def test_check_inputs_on_decoded_bytes_and_fixed_shapes():
    specs = [TensorSpec("text", "BYTES", (2,))]
    body = json_body([{"name": "text", "shape": [2], "datatype": "BYTES", "data": ["a", "b"]}])
    check_inputs(decode_request(body, None), specs, batching=False)
    body = json_body([{"name": "text", "shape": [2], "datatype": "FP32", "data": [1, 2]}])
    message = check_refused(decode_request(body, None), specs, batching=False)
    assert message == "input 'text': datatype FP32, expected BYTES"


def test_check_outputs():
    specs = [TensorSpec("y", "FP32", (-1,)), TensorSpec("z", "FP32", (-1,))]
    check_outputs(request_with(), specs)
    request = InferRequest(id=None, inputs={}, outputs=[RequestedOutput("z", True)])
    check_outputs(request, specs)
    request.outputs = [RequestedOutput("w", True)]
    with pytest.raises(WireError) as info:
        check_outputs(request, specs)
    assert info.value.message == "unknown output 'w'; the model's outputs are: y, z"


# -- responses --------------------------------------------------------------------------------

OUTPUTS = {k: ARRAYS[k] for k in ("FP32", "FP16", "INT64", "UINT8", "BOOL", "BYTES")}


def received(array, binary):
    """What tritonclient's ``as_numpy`` gives for ``array``: BYTES come back as ``bytes`` in
    binary form and as ``str`` in JSON form."""
    if binary or array.dtype != object:
        return array.tolist()
    return np.array([v.decode() for v in array.ravel()], dtype=object).reshape(array.shape).tolist()


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
def test_all_outputs_parse_with_tritonclient(binary):
    body, headers = encode_response("m", "3", "req-1", OUTPUTS, None, binary)
    assert (HEADER_LENGTH in headers) == binary
    assert headers["Content-Type"] == ("application/octet-stream" if binary else "application/json")
    result = parse(body, headers)
    response = result.get_response()
    assert response["model_name"] == "m"
    assert response["model_version"] == "3"
    assert response["id"] == "req-1"
    assert [o["name"] for o in response["outputs"]] == list(OUTPUTS)
    for name, array in OUTPUTS.items():
        got = result.as_numpy(name)
        assert got.shape == array.shape
        assert got.tolist() == received(array, binary)
        if name != "BYTES":
            assert got.dtype == array.dtype
        output = result.get_output(name)
        assert output["datatype"] == name
        assert ("data" in output) != binary


def test_requested_outputs_mixed_binary_and_json_in_requested_order():
    requested = [
        RequestedOutput("BYTES", False),
        RequestedOutput("FP32", True),
        RequestedOutput("BOOL", False),
        RequestedOutput("UINT8", True),
    ]
    body, headers = encode_response("m", "1", None, OUTPUTS, requested, False)
    result = parse(body, headers)
    response = result.get_response()
    assert "id" not in response
    assert [o["name"] for o in response["outputs"]] == ["BYTES", "FP32", "BOOL", "UINT8"]
    assert "data" in result.get_output("BYTES")
    assert result.get_output("FP32")["parameters"]["binary_data_size"] == 24
    for r in requested:
        assert result.as_numpy(r.name).tolist() == received(OUTPUTS[r.name], r.binary_data)


def test_request_id_is_echoed_end_to_end():
    body, header_length = triton_body(
        {"x": ARRAYS["FP32"]},
        True,
        outputs=[triton.InferRequestedOutput("y", binary_data=False)],
        request_id="abc-123",
    )
    request = decode_request(body, header_length)
    out, headers = encode_response(
        "m", "1", request.id, {"y": request.inputs["x"] * 2}, request.outputs, False
    )
    result = parse(out, headers)
    assert result.get_response()["id"] == "abc-123"
    assert result.as_numpy("y").tolist() == (ARRAYS["FP32"] * 2).tolist()


def test_string_outputs_become_bytes():
    outputs = {
        "u": np.array([["a\u00e9", "b"]]),  # numpy str array
        "o": np.array(["\u2603", b"\xff\x00", 7], dtype=object),  # mixed objects
        "s": np.array([b"x", b"yz"]),  # numpy bytes array
    }
    body, headers = encode_response("m", "1", None, outputs, None, True)
    result = parse(body, headers)
    assert result.as_numpy("u").tolist() == [["a\u00e9".encode(), b"b"]]
    assert result.as_numpy("o").tolist() == ["\u2603".encode(), b"\xff\x00", b"7"]
    assert result.as_numpy("s").tolist() == [b"x", b"yz"]
    # JSON output: strings; bytes that are not UTF-8 are decoded with replacement characters.
    body, headers = encode_response("m", "1", None, outputs, None, False)
    result = parse(body, headers)
    assert result.get_output("o")["data"] == ["\u2603", "\ufffd\x00", "7"]
    assert result.as_numpy("u").tolist() == [["a\u00e9", "b"]]


def test_odd_output_layouts():
    outputs = {
        "t": np.arange(6, dtype=np.float32).reshape(2, 3).T,  # not C-contiguous
        "be": np.arange(3, dtype=">i4"),  # big-endian
        "scalar": np.float64(2.5),
        "empty": np.zeros((0, 2), np.int32),
        "nan": np.array([np.nan, np.inf], dtype=np.float32),
    }
    for binary in (True, False):
        body, headers = encode_response("m", "1", None, outputs, None, binary)
        result = parse(body, headers)
        assert result.as_numpy("t").tolist() == outputs["t"].tolist()
        assert result.as_numpy("be").tolist() == [0, 1, 2]
        assert result.get_output("be")["datatype"] == "INT32"
        assert result.as_numpy("scalar").tolist() == 2.5
        assert result.as_numpy("empty").shape == (0, 2)
        got = result.as_numpy("nan")
        assert np.isnan(got[0])
        assert got[1] == np.inf


def test_unknown_requested_output_is_400_naming_it():
    with pytest.raises(WireError) as info:
        encode_response("m", "1", None, OUTPUTS, [RequestedOutput("nope", True)], False)
    assert info.value.status == 400
    assert "unknown output 'nope'" in info.value.message
    assert "FP32" in info.value.message


def test_output_dtype_without_datatype_is_500():
    with pytest.raises(WireError) as info:
        encode_response("m", "1", None, {"c": np.zeros(2, np.complex64)}, None, False)
    assert info.value.status == 500
    assert "output 'c'" in info.value.message
