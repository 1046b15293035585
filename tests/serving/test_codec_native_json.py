"""The native fast path of the codec's JSON inputs (``lanes._core.pack_numbers``, numeric
``data`` read without numpy's type inference) against the pure numpy path: for every body,
``decode_request`` must give the same arrays (dtype, shape, bytes) and request fields, or the
same error (status and message), whichever path reads it."""

from __future__ import annotations

import json
import random
import struct
from typing import Any

import numpy as np
import orjson
import pytest

from lanes._core import pack_numbers
from lanes.serving import codec
from lanes.serving.codec import WireError, decode_request

DATATYPES = ["FP16", "FP32", "FP64", "INT8", "INT32", "INT64", "UINT8", "UINT64", "BOOL", "BYTES"]

DATA = [
    "[1.5, 2.5, 3.5, 4.5]",
    "[1, 2, 3, 4]",
    "[1, 2.0, 3, 4]",
    "[[1, 2], [3, 4]]",
    "[[1.5, 2], [3, 4.25]]",
    "[[[1.5], [2]], [[3], [4]]]",
    "[[1, 2], [3]]",
    "[1, [2, 3], 4]",
    "[[1, 2], 3, 4]",
    "[1, true, 3, 4]",
    "[true, false, true, false]",
    '[1, "2", 3, 4]',
    '["NaN", 1, 2, 3]',
    '["a", "b", "c", "d"]',
    "[null, 1, 2, 3]",
    "[{}, 1, 2, 3]",
    "[[], 1, 2, 3]",
    "[]",
    "[[], []]",
    "[[[]]]",
    "[-0, -0.0, 0.0, 0]",
    "[-0.0, -0.0, -0.0, -0.0]",
    "[1e400, 1, 2, 3]",
    "[-1e400, 1, 2, 3]",
    "[1e-400, 1E+2, 2.5e-3, -7E5]",
    "[1e22, 1e23, 123456789012345678901234567890, 0.1e-22]",
    "[9223372036854775807, -9223372036854775808, 0, 1]",
    "[9223372036854775808, 1, 2, 3]",
    "[18446744073709551615, 1, 2, 3]",
    "[18446744073709551616, 1, 2, 3]",
    "[-9223372036854775809, 1, 2, 3]",
    "[1.5, 18446744073709551615, 2, 3]",
    "[1.5, 9223372036854775807, 2, 3]",
    "[3.4028235e38, 3.5e38, 1, 2]",
    "[65504, 65520, 1, 2]",
    "[65504.0, 65519.99, 1e-8, 2]",
    "[0.1, 0.2, 0.30000000000000004, 1e-7]",
    "[255, 256, -1, 0]",
    "[-129, 127, 128, 0]",
    "[0.6370000243186951, 0.27000001072883606, 2.2250738585072011e-308, 5e-324]",
    "[1.7976931348623157e308, -1.7976931348623157e308, 4.9e-324, 1e-310]",
    "[123456789012345678, 1234567890123456789, 99999999999999999, 1]",
    "[0.00000000000000000000000001, 100000000000000000000000.0, 1e0, 1E-0]",
    "[1, 2, 3, 4, 5]",
    "[[1, 2, 3], [4, 5, 6]]",
    "1.5",
    '"abc"',
    "null",
    "true",
    '{"a": 1}',
]

SHAPES = [[4], [2, 2], [1, 4], [3], [0], [2, 3], [], [1, 1, 2, 2]]


def _outcome(body: bytes, header_length: int | None = None) -> tuple[Any, ...]:
    """What decode_request makes of a body: the error, or every field of the request with the
    arrays as (dtype, shape, bytes or elements, writeable)."""
    try:
        request = decode_request(body, header_length)
    except WireError as e:
        return ("error", e.status, e.message)
    arrays = {
        name: (
            a.dtype.str,
            a.shape,
            a.tolist() if a.dtype == object else a.tobytes(),
            a.flags.writeable,
        )
        for name, a in request.inputs.items()
    }
    return (
        "ok",
        request.id,
        arrays,
        repr(request.parameters),
        repr(request.outputs),
        request.binary_output_default,
    )


def _both(
    monkeypatch: pytest.MonkeyPatch, body: bytes, header_length: int | None = None
) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    native = _outcome(body, header_length)
    with monkeypatch.context() as m:
        m.setattr(codec, "_pack_numbers", None)
        pure = _outcome(body, header_length)
    return native, pure


def _body(datatype: str, shape: list[int], data: str, name: str = "x") -> bytes:
    return (
        f'{{"id": "r1", "inputs": [{{"name": {json.dumps(name)}, "shape": {json.dumps(shape)}, '
        f'"datatype": "{datatype}", "data": {data}}}]}}'
    ).encode()


def _nested_shape(data: str) -> list[int] | None:
    try:
        value = json.loads(data)
        return list(np.asarray(value).shape)
    except (ValueError, TypeError):
        return None


@pytest.mark.parametrize("datatype", DATATYPES)
@pytest.mark.parametrize("data", DATA)
def test_input_data_table(monkeypatch: pytest.MonkeyPatch, datatype: str, data: str) -> None:
    shapes = list(SHAPES)
    nested = _nested_shape(data)
    if nested is not None:
        shapes.append(nested)
    for shape in shapes:
        body = _body(datatype, shape, data)
        native, pure = _both(monkeypatch, body)
        assert native == pure, (body, native, pure)


def test_packed_data() -> None:
    packed = pack_numbers(orjson.loads("[[1.5, 2], [3, -0.0]]"))
    assert packed is not None
    buffer, kind, shape = packed
    assert (kind, shape) == ("f8", (2, 2))
    assert np.frombuffer(buffer, "<f8").tobytes() == np.array([[1.5, 2], [3, -0.0]]).tobytes()
    packed = pack_numbers([-1, 7, 2**63 - 1, -(2**63)])
    assert packed is not None
    buffer, kind, shape = packed
    assert (kind, shape) == ("i8", (4,))
    assert np.frombuffer(buffer, "<i8").tolist() == [-1, 7, 2**63 - 1, -(2**63)]
    nested = [1.5]
    for _ in range(31):
        nested = [nested]
    assert pack_numbers(nested) is not None
    for data in [
        [1, True],
        [True],
        ["1"],
        [None],
        [{}],
        [[1], [2, 3]],
        [1, [2]],
        [[1], 2],
        [[[1]], [[2], [3]]],
        [2**63],
        [1.5, -(2**63) - 1],
        [],
        [[]],
        [[], [1.5]],
        [np.float64(1.5)],
        [[nested]],
    ]:
        assert pack_numbers(data) is None, data


def test_whole_bodies(monkeypatch: pytest.MonkeyPatch) -> None:
    x = '{"name": "x", "shape": [2], "datatype": "FP32", "data": [1.5, 2]}'
    y = '{"name": "y", "shape": [2], "datatype": "INT32", "data": [1, 2]}'
    bodies = [
        "",
        "{",
        "[]",
        '{"inputs": [}',
        '{"inputs": [' + x + "]} x",
        '{"inputs": [' + x + '], "inputs": [' + y + "]}",
        '{"inputs": [' + x + ", " + x + "]}",
        '{"inputs": [' + x[:-1] + ', "data": [[1, 2]]}]}',
        '{"inputs": [' + x[:-1] + ', "data": ["a", 1]}]}',
        '{"inputs": [' + x[:-1] + ', "name": "z"}]}',
        '{"inputs": [' + x.replace('"x"', '"名前"') + "]}",
        '{"inputs": [' + x.replace('"x"', '"\\ud83d\\ude00"') + "]}",
        '{"inputs": [' + x.replace('"x"', '"\\ud83d"') + "]}",
        '{"inputs": [' + x.replace('"x"', '"\\u0000"') + "]}",
        '{"id": 5, "inputs": [' + x + "]}",
        '{"inputs": [' + x + '], "parameters": {"timeout": 99999999999999999999}}',
        '{"inputs": [' + x + '], "parameters": {"timeout": 1e400}}',
        '{"inputs": [' + x + '], "parameters": {"timeout": -0}}',
        '{"inputs": [' + x + '], "parameters": {"deep": ' + "[" * 200 + "]" * 200 + "}}",
        '{"inputs": [' + x + '], "parameters": {"deep": ' + "[" * 1100 + "]" * 1100 + "}}",
        '{"inputs": [' + x + '], "outputs": [{"name": "o", "parameters": {"binary_data": true}}]}',
        '{"inputs": [' + x + '], "outputs": [{"name": "o"}, {"name": "o"}]}',
        '{"inputs": [' + x[:-1] + ', "data": ' + "[" * 40 + "1.5" + "]" * 40 + "}]}",
        '{"inputs": [' + x[:-1] + ', "data": ' + "[" * 70 + "1.5" + "]" * 70 + "}]}",
        '{"inputs": [' + x[:-1] + ', "parameters": {"binary_data_size": 8}}]}',
        '{"inputs": 3}',
        '{"inputs": [3]}',
        '{"outputs": []}',
    ]
    for text in bodies:
        body = text.encode()
        native, pure = _both(monkeypatch, body)
        assert native == pure, (text[:200], native, pure)
    for body in [b"\xff", b"\xef\xbb\xbf{}", b'{"inputs": [], "id": "\xc3"}']:
        native, pure = _both(monkeypatch, body)
        assert native == pure, (body, native, pure)


def test_binary_extension(monkeypatch: pytest.MonkeyPatch) -> None:
    header = (
        b'{"inputs": [{"name": "a", "shape": [2], "datatype": "FP32", "data": [1.5, 2]}, '
        b'{"name": "b", "shape": [2], "datatype": "INT32", '
        b'"parameters": {"binary_data_size": 8}}]}'
    )
    body = header + struct.pack("<2i", 7, -3)
    native, pure = _both(monkeypatch, body, len(header))
    assert native == pure
    assert native[0] == "ok"
    for length in [len(header) - 1, len(header) + 1, 0]:
        assert _both(monkeypatch, body, length)[0] == _both(monkeypatch, body, length)[1]


def test_random_numbers_bit_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(16)
    texts: list[str] = []
    for _ in range(3000):
        bits = rng.getrandbits(64)
        (value,) = struct.unpack("<d", struct.pack("<Q", bits))
        if value != value or value in (float("inf"), float("-inf")):
            continue
        form = rng.randrange(6)
        if form == 0:
            texts.append(repr(value))
        elif form == 1:
            texts.append(f"{value:.17g}")
        elif form == 2:
            texts.append(f"{rng.uniform(-1, 1):.{rng.randrange(1, 25)}f}")
        elif form == 3:
            texts.append(f"{rng.randrange(1, 10 ** rng.randrange(1, 25))}e{rng.randrange(-40, 40)}")
        elif form == 4:
            texts.append(f"{rng.uniform(-1e6, 1e6):.{rng.randrange(1, 12)}e}".replace("e+", "E"))
        else:
            texts.append(str(rng.randrange(-(2**63), 2**63)))
    data = "[" + ", ".join(texts) + "]"
    for datatype in ["FP64", "FP32", "INT64"]:
        body = _body(datatype, [len(texts)], data)
        native, pure = _both(monkeypatch, body)
        assert native == pure, datatype
    values = orjson.loads(data)
    packed = pack_numbers(values)
    assert packed is not None
    buffer, kind, _ = packed
    assert kind == "f8"
    assert np.frombuffer(buffer, "<f8").tobytes() == np.asarray(values).tobytes()
