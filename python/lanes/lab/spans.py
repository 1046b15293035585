"""Where each request's time went, from the request spans in a lab run's timelines.

A variant whose server runs ``lanes serve --trace-requests N`` leaves, in each run's timeline
(``runs/VARIANT/L*-r*.trace.json``), one span per successful request: its stages on the server's
threads (docs/metrics.md, "Request spans"). :func:`read` takes them out of a trace; :func:`parts`
splits one request into the parts the report shows; :func:`table` gives per model the p50 and
p99 of each part over a level's timelines (every repeat pooled).

The parts (ms) add up to ``total`` — the server's time, from the handler's start to the reply
built; what the client saw beyond it (its send and receive, the sockets) is not in the spans:

- ``batch wait``: from the request's arrival in the scheduler's state to its batch's start (the
  queue, the batch forming, the device busy);
- ``call``: the batch's run on its device;
- ``hooks``: decoding and the pre- and post-processing hooks' own run;
- ``hand-offs``: the rest — every wait for a thread between the stages (the hook pool, the
  driver, the device thread and back, the handler waking for its answer) and the encoding.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

PARTS = ("total", "batch wait", "call", "hooks", "hand-offs")


def read(trace: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The request spans of a Chrome trace from ``GET /v2/trace``: each request's outer ``b``
    event's args (model, stages in ms); empty when the server kept none."""
    return [
        e["args"]
        for e in trace.get("traceEvents", [])
        if e.get("ph") == "b" and e.get("cat") == "request" and "args" in e
    ]


def parts(span: Mapping[str, Any]) -> dict[str, float]:
    """One request's parts in ms (see the module docs); they add up to ``total``."""
    total = float(span["total_ms"])
    wait = float(span["batch_wait_ms"])
    call = float(span["run_ms"])
    hooks = float(span["decode_ms"]) + float(span["pre_ms"]) + float(span["post_ms"])
    return {
        "total": total,
        "batch wait": wait,
        "call": call,
        "hooks": hooks,
        "hand-offs": total - wait - call - hooks,
    }


def table(spans: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per model (sorted by name): ``requests`` and, per part, its ``(p50, p99)`` in ms."""
    by_model: dict[str, dict[str, list[float]]] = {}
    for s in spans:
        cols = by_model.setdefault(str(s["model"]), {p: [] for p in PARTS})
        for name, value in parts(s).items():
            cols[name].append(value)
    out: dict[str, dict[str, Any]] = {}
    for model in sorted(by_model):
        cols = by_model[model]
        row: dict[str, Any] = {"requests": len(cols["total"])}
        for name in PARTS:
            p50, p99 = np.quantile(cols[name], [0.5, 0.99])
            row[name] = (float(p50), float(p99))
        out[model] = row
    return out


def level_spans(root: Path, timelines: Iterable[str]) -> list[dict[str, Any]]:
    """Every span of the given timeline files (paths relative to ``root``); a file that is
    missing or not JSON is skipped (the report shows what there is)."""
    found: list[dict[str, Any]] = []
    for rel in timelines:
        try:
            trace = json.loads((root / rel).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        found.extend(read(trace))
    return found
