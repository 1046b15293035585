"""The host's stops: how long and how often a core of this guest is taken away whole, read by a
spinning probe (the thirty-sixth round, docs/results/calibration.md).

Round 35 found the short models' slow runs go with the hypervisor's steal (a run's log p99 with
its steal, r 0.55-0.94), and the file carries steal only as an even share of the cores
(``busy_cores``, ``busy_run_cores``): 1 ms slices that queue like any phase. A hypervisor does
not share a core that way: it stops the vCPU, and whatever ran on it waits for the whole stop.
A model of such stops needs their lengths and their rate, which /proc/stat's steal counters
cannot give (they count whole 10 ms ticks per CPU).

**Rule.** One process per core, pinned to it, reads the monotonic clock in a tight loop for
``--seconds``. Two readings further apart than ``--gap-us`` are a *gap*, its length their
difference. A gap is the core taken from the probe, by one of two:

- the guest's own scheduler, which ran another task on the core: the probe's run-queue wait
  (``/proc/self/schedstat``, its second field) grows by about the gap;
- the hypervisor, which stopped the vCPU: the probe's wait does not grow, since to the guest the
  probe was running all along, and the core's steal in /proc/stat grows instead.

So after each gap the probe reads its wait: a gap whose wait grew by less than half its length is
a *stop*, the others are *waits* (:func:`classify`). The wait is read only at gaps, so waits
too short to make a gap count into the next gap's (on an idle host they are rare). Per core it
reports both kinds' count, rate, total and length quantiles, beside the core's steal from
/proc/stat over the same interval; on a guest whose stops are the steal the stops' total comes
close to the steal (within its 10 ms ticks).

**Cost.** It keeps every core it probes busy: run it on an idle host, not beside a run.

Run:  python bench/calibrate/stops.py [--seconds 60] [--gap-us 100] [--cpus 0,1] [--json FILE]
      python bench/calibrate/stops.py --from FILE   (the table of a --json file)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

GAP_US = 100.0
"""Default shortest gap, µs: far above the loop's step (about 0.1 µs in CPython) and a guest
timer interrupt (a few µs), below a hypervisor's shortest slice."""
STOP_WAIT_SHARE = 0.5
"""A gap is a stop when the probe's run-queue wait grew by less than this share of it."""
QUANTILES = (0.5, 0.9, 0.99)


def classify(gaps: Sequence[tuple[float, float, float]]) -> list[str]:
    """``stop`` or ``wait`` for each gap ``(at_s, length_us, waited_us)`` (rule above)."""
    return ["stop" if w < STOP_WAIT_SHARE * n else "wait" for _, n, w in gaps]


def _wait_ns() -> int:
    """This process's run-queue wait so far, ns (schedstat's second field)."""
    with open("/proc/self/schedstat") as f:
        return int(f.read().split()[1])


def spin(cpu: int, seconds: float, gap_us: float) -> dict[str, Any]:
    """Pin to ``cpu``, read the clock for ``seconds``: the gaps ``(at_s, length_us, waited_us)``
    and the loop's readings."""
    os.sched_setaffinity(0, {cpu})
    now = time.perf_counter_ns
    gap_ns = int(gap_us * 1e3)
    gaps: list[tuple[float, float, float]] = []
    start = prev = now()
    end = start + int(seconds * 1e9)
    waited = _wait_ns()
    readings = 0
    while prev < end:
        t = now()
        readings += 1
        if t - prev > gap_ns:
            w = _wait_ns()
            gaps.append(((prev - start) / 1e9, (t - prev) / 1e3, (w - waited) / 1e3))
            waited = w
            t = now()
        prev = t
    return {"cpu": cpu, "seconds": (prev - start) / 1e9, "readings": readings, "gaps": gaps}


def steal_s() -> dict[int, float]:
    """Each CPU's steal so far, s (/proc/stat, USER_HZ ticks)."""
    hz = os.sysconf("SC_CLK_TCK")
    out = {}
    for line in Path("/proc/stat").read_text().splitlines():
        name, *fields = line.split()
        if name.startswith("cpu") and name != "cpu" and len(fields) >= 8:
            out[int(name[3:])] = int(fields[7]) / hz
    return out


def _quantiles(lengths: list[float]) -> dict[str, float]:
    if not lengths:
        return {}
    ordered = sorted(lengths)
    out = {
        f"p{round(q * 100)}": ordered[min(len(ordered) - 1, int(q * len(ordered)))]
        for q in QUANTILES
    }
    return out | {"max": ordered[-1], "mean": statistics.fmean(ordered)}


def summary(run: dict[str, Any], steal: float) -> dict[str, Any]:
    """One core's figures: per kind the count, the rate (per s), the total (ms), the share of the
    window and the lengths' quantiles (ms); the core's steal (s and share) beside them."""
    seconds = run["seconds"]
    kinds = classify(run["gaps"])
    out: dict[str, Any] = {"cpu": run["cpu"], "seconds": seconds, "readings": run["readings"]}
    for kind in ("stop", "wait"):
        ms = [g[1] / 1e3 for g, k in zip(run["gaps"], kinds, strict=True) if k == kind]
        out[kind + "s"] = {
            "count": len(ms),
            "per_s": len(ms) / seconds,
            "total_ms": sum(ms),
            "share": sum(ms) / 1e3 / seconds,
            "length_ms": _quantiles(ms),
        }
    out["steal_s"] = steal
    out["steal_share"] = steal / seconds
    return out


def probe(cpus: Sequence[int], seconds: float, gap_us: float = GAP_US) -> dict[str, Any]:
    """Spin on every one of ``cpus`` at once for ``seconds``: each core's :func:`summary`, the
    gaps themselves, and the settings."""
    if seconds <= 0 or gap_us <= 0:
        raise ValueError(f"--seconds and --gap-us must be positive (got {seconds}, {gap_us})")
    allowed = os.sched_getaffinity(0)
    if bad := sorted(set(cpus) - allowed):
        raise ValueError(f"CPU {bad} is not one this process may run on ({sorted(allowed)})")
    before = steal_s()
    with ProcessPoolExecutor(len(cpus)) as pool:
        runs = list(pool.map(spin, cpus, [seconds] * len(cpus), [gap_us] * len(cpus)))
    after = steal_s()
    return {
        "gap_us": gap_us,
        "stop_wait_share": STOP_WAIT_SHARE,
        "cores": [summary(r, after[r["cpu"]] - before[r["cpu"]]) for r in runs],
        "gaps": {str(r["cpu"]): r["gaps"] for r in runs},
    }


def table(result: dict[str, Any]) -> str:
    """Markdown: one row per core and kind."""
    rows = [
        "| core | kind | count | per s | total ms | share | p50 ms | p90 ms | p99 ms | max ms "
        "| steal (/proc/stat) |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in result["cores"]:
        for kind in ("stops", "waits"):
            k, q = c[kind], c[kind]["length_ms"]
            lengths = " | ".join(
                f"{q[p]:.2f}" if p in q else "-" for p in ("p50", "p90", "p99", "max")
            )
            rows.append(
                f"| {c['cpu']} | {kind} | {k['count']} | {k['per_s']:.2f} | {k['total_ms']:.1f} "
                f"| {k['share']:.4f} | {lengths} | {c['steal_share']:.4f} |"
            )
    return "\n".join(rows)


def _write(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as JSON through a temporary file renamed into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def _cpus(text: str) -> list[int]:
    try:
        cpus = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError as e:
        raise argparse.ArgumentTypeError(
            f"--cpus wants numbers separated by commas, got {text!r}"
        ) from e
    if not cpus:
        raise argparse.ArgumentTypeError("--cpus is empty")
    return cpus


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="how long to spin (default 60)")
    ap.add_argument(
        "--gap-us", type=float, default=GAP_US, help=f"shortest gap, µs (default {GAP_US:g})"
    )
    ap.add_argument(
        "--cpus",
        type=_cpus,
        default=None,
        help="cores to probe, e.g. 0,1 (default: every core allowed)",
    )
    ap.add_argument("--json", type=Path, help="write the figures and every gap here")
    ap.add_argument("--from", dest="source", type=Path, help="print the table of a --json file")
    args = ap.parse_args(argv)
    if args.source:
        try:
            print(table(json.loads(args.source.read_text())))
        except (OSError, ValueError, KeyError) as e:
            print(
                f"stops.py: {args.source}: not a --json file of this script ({e})", file=sys.stderr
            )
            return 2
        return 0
    cpus = args.cpus or sorted(os.sched_getaffinity(0))
    try:
        result = probe(cpus, args.seconds, args.gap_us)
    except ValueError as e:
        print(f"stops.py: {e}", file=sys.stderr)
        return 2
    print(table(result))
    if args.json:
        _write(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
