"""How a batch reaches a member: the :class:`Transport` seam, and KServe v2 REST over aiohttp.

The rest of the client sees only :class:`Transport`: ``infer`` sends one request (numpy arrays
in, numpy arrays out) and raises :class:`~lanes.client.errors.AttemptFailed` with one of its
kinds, which decide retrying and health (lanes.client.errors). ``lanes serve`` speaks REST only
today; a gRPC transport (KServe v2 ``GRPCInferenceService``) slots in as another implementation
of the same protocol, mapping ``UNAVAILABLE`` before the call was written to ``connect`` and
status codes to the HTTP statuses of design.md §3.

:class:`RestTransport` sends the binary tensor data extension both ways (``binary_data_output``:
true), so arrays travel as raw little-endian bytes with no JSON number formatting; the deadline
goes as the KServe ``timeout`` parameter in µs. Connection failures before anything was written
(aiohttp's ``ClientConnectorError``, a connect timeout) are ``connect``; a connection that breaks
afterwards is ``lost``; no answer in time is ``timeout``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any, Protocol

import aiohttp
import numpy as np
import numpy.typing as npt

from lanes.client.errors import CONNECT, HTTP, LOST, TIMEOUT, UNDECODABLE, AttemptFailed
from lanes.models.base import DATATYPES, datatype_of
from lanes.serving.codec import HEADER_LENGTH, WireError, _binary_output, _from_binary

Arrays = dict[str, npt.NDArray[Any]]
_CONNECT_TIMEOUT: tuple[type[BaseException], ...] = tuple(
    t for t in (getattr(aiohttp, "ConnectionTimeoutError", None),) if t is not None
)
"""aiohttp's connect timeout (3.10+): nothing was sent. Older versions cannot tell it from a
read timeout, so theirs counts as a timeout after sending (never retried)."""


class Transport(Protocol):
    """One way of talking to members (REST today; gRPC could be another)."""

    async def infer(
        self,
        member: str,
        model: str,
        inputs: Mapping[str, npt.NDArray[Any]],
        *,
        timeout_us: int | None,
        wait_s: float,
    ) -> Arrays:
        """Send one inference; its outputs. ``timeout_us``: the KServe deadline parameter;
        ``wait_s``: the longest wait for the answer."""
        ...

    async def get(self, member: str, path: str, wait_s: float) -> Any:
        """``GET path`` on a member: its decoded JSON body (any other status than 200 raises
        :class:`~lanes.client.errors.AttemptFailed`)."""
        ...

    async def close(self) -> None: ...


def encode_request(
    inputs: Mapping[str, npt.NDArray[Any]], timeout_us: int | None
) -> tuple[bytes, dict[str, str]]:
    """A KServe v2 REST infer body with binary tensor data, and its headers."""
    tensors: list[dict[str, Any]] = []
    buffers: list[bytes | memoryview] = []
    for name, value in inputs.items():
        array = np.asarray(value)
        if not array.dtype.isnative:
            array = array.astype(array.dtype.newbyteorder("="))
        datatype = datatype_of(array)
        raw = _binary_output(array, datatype)
        buffers.append(raw)
        tensors.append(
            {
                "name": name,
                "shape": list(array.shape),
                "datatype": datatype,
                "parameters": {"binary_data_size": len(raw)},
            }
        )
    parameters: dict[str, Any] = {"binary_data_output": True}
    if timeout_us is not None:
        parameters["timeout"] = timeout_us
    head = json.dumps({"inputs": tensors, "parameters": parameters}).encode()
    headers = {HEADER_LENGTH: str(len(head)), "Content-Type": "application/octet-stream"}
    return b"".join([head, *buffers]), headers


def decode_response(body: bytes, header_length: str | None) -> Arrays:
    """The outputs of an infer answer (binary or JSON tensors) as numpy arrays."""
    view = memoryview(body)
    try:
        size = len(body) if header_length is None else int(header_length)
        header = json.loads(bytes(view[:size]))
        outputs: Arrays = {}
        pos = size
        for t in header["outputs"]:
            name, datatype, shape = t["name"], t["datatype"], tuple(t["shape"])
            length = (t.get("parameters") or {}).get("binary_data_size")
            if length is not None:
                outputs[name] = _from_binary(name, datatype, shape, view[pos : pos + length])
                pos += length
            elif datatype == "BYTES":
                outputs[name] = np.array(t["data"], dtype=object).reshape(shape)
            else:
                outputs[name] = np.array(t["data"], dtype=DATATYPES[datatype]).reshape(shape)
        return outputs
    except (ValueError, KeyError, TypeError, WireError) as err:
        raise AttemptFailed(UNDECODABLE, f"undecodable answer: {err}") from None


def _error_message(body: bytes) -> str:
    try:
        return str(json.loads(body)["error"])
    except (ValueError, KeyError, TypeError):
        return body[:200].decode("utf-8", "replace")


class RestTransport:
    """KServe v2 REST over one aiohttp session (created on first use, on the running loop)."""

    def __init__(self, *, connect_timeout_s: float, max_connections: int) -> None:
        self._connect_timeout_s = connect_timeout_s
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=0, limit_per_host=self._max_connections)
            self._session = aiohttp.ClientSession(connector=connector)
        return self._session

    def _timeout(self, wait_s: float) -> aiohttp.ClientTimeout:
        connect = min(self._connect_timeout_s, wait_s)
        return aiohttp.ClientTimeout(total=wait_s, sock_connect=connect, connect=connect)

    async def infer(
        self,
        member: str,
        model: str,
        inputs: Mapping[str, npt.NDArray[Any]],
        *,
        timeout_us: int | None,
        wait_s: float,
    ) -> Arrays:
        body, headers = encode_request(inputs, timeout_us)
        url = f"{member}/v2/models/{model}/infer"
        connected = False
        try:
            async with self._open().post(
                url, data=body, headers=headers, timeout=self._timeout(wait_s)
            ) as r:
                connected = True
                payload = await r.read()
                if r.status != 200:
                    raise AttemptFailed(HTTP, _error_message(payload), r.status)
                return decode_response(payload, r.headers.get(HEADER_LENGTH))
        except aiohttp.ClientConnectorError as err:
            raise AttemptFailed(CONNECT, f"cannot connect: {err.os_error}") from None
        except _CONNECT_TIMEOUT:
            raise AttemptFailed(CONNECT, "connect timed out") from None
        except (asyncio.TimeoutError, aiohttp.ServerTimeoutError):
            where = "reading the answer" if connected else "after sending"
            raise AttemptFailed(TIMEOUT, f"no answer within {wait_s:.3f} s ({where})") from None
        except aiohttp.ClientError as err:
            raise AttemptFailed(LOST, f"connection lost: {type(err).__name__}: {err}") from None

    async def get(self, member: str, path: str, wait_s: float) -> Any:
        try:
            async with self._open().get(f"{member}{path}", timeout=self._timeout(wait_s)) as r:
                payload = await r.read()
                if r.status != 200:
                    raise AttemptFailed(HTTP, _error_message(payload), r.status)
                try:
                    return json.loads(payload)
                except ValueError:
                    raise AttemptFailed(UNDECODABLE, f"GET {path}: not JSON") from None
        except aiohttp.ClientConnectorError as err:
            raise AttemptFailed(CONNECT, f"cannot connect: {err.os_error}") from None
        except (asyncio.TimeoutError, aiohttp.ServerTimeoutError):
            raise AttemptFailed(TIMEOUT, f"GET {path}: no answer within {wait_s:.3f} s") from None
        except aiohttp.ClientError as err:
            raise AttemptFailed(LOST, f"connection lost: {type(err).__name__}: {err}") from None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
