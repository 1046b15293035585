"""The text report of a run, in the manner of wrk: what was run, latency percentiles from the
intended send time and from the actual send, throughput, lateness and errors by class."""

from __future__ import annotations

from lanes.bench.result import ERROR_CLASSES, Result

_COLUMNS = (
    ("mean", "mean"),
    ("p50", "p50"),
    ("p75", "p75"),
    ("p90", "p90"),
    ("p99", "p99"),
    ("p999", "p99.9"),
    ("max", "max"),
)


def describe(result: Result) -> str:
    """One line: the target, the loop and its parameters."""
    d = result.data
    if d["mode"] == "open":
        loop = (
            f"open loop, {d['rate']:g} req/s {d['arrival']}, up to {d['connections']} connections"
        )
    else:
        loop = f"closed loop, {d['connections']} connections"
    merged = f", {d['processes']} processes" if d.get("processes", 1) > 1 else ""
    return f"{d['url']} — {loop}, {d['threads']} threads{merged}"


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def render(result: Result) -> str:
    """The whole report, ending with a newline."""
    d = result.data
    lines = [f"lanes bench {describe(result)}"]
    if result.interrupted:
        lines.append("  (interrupted: the run was stopped before its bound)")
    header = "  Latency (ms)   " + "".join(f"{label:>9}" for _, label in _COLUMNS)
    lines.append(header)
    rows = (("from schedule", "latency_ms"), ("service time", "service_time_ms"))
    for name, key in rows:
        values = d[key]
        lines.append(f"    {name:<13}" + "".join(f"{values[k]:9.3f}" for k, _ in _COLUMNS))
    if d["mode"] == "closed":
        lines.append(
            "    (closed loop: each send waits for the previous reply, so both rows agree)"
        )
    lines.append(
        f"  {d['requests']:,} requests in {d['duration_s']:.2f} s, "
        f"{_size(d['bytes']['received'])} read"
    )
    lines.append(f"  Requests/sec: {d['rps']:,.2f}")
    if d["mode"] == "open":
        scheduled = d.get("scheduled")
        lines.append(
            f"  Sent {d['sent']:,} of {scheduled:,} scheduled; late sends "
            f"{100 * d['late_sends_fraction']:.2f} % (> {d['late_after_ms']:g} ms behind), "
            f"send delay p99 {d['send_delay_ms']['p99']:.3f} ms"
        )
    errors = d["errors"]
    total = sum(errors[c] for c in ERROR_CLASSES)
    lines.append(
        f"  Errors: {total:,}"
        + (" (" + ", ".join(f"{c} {errors[c]:,}" for c in ERROR_CLASSES) + ")")
    )
    codes = ", ".join(f"{code}: {n:,}" for code, n in d["status_codes"].items() if code != "0")
    if codes:
        lines.append(f"  Status codes: {codes}")
    grpc = ", ".join(f"{name}: {n:,}" for name, n in d.get("grpc_codes", {}).items())
    if grpc:
        lines.append(f"  gRPC status: {grpc}")
    if d.get("unfinished"):
        lines.append(f"  Unfinished when the run ended: {d['unfinished']:,}")
    return "\n".join(lines) + "\n"
