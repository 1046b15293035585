"""The experiment runner: variants x levels x repeats, one JSON file per run, resumable.

Order (:func:`plan`): for each repeat, for each variant: start the variant's server, run every
level in ascending order, stop the server. Variants are thus interleaved once per repeat, so
slow drift of a shared machine (other jobs, thermal state) falls on every variant alike;
interleaving per level instead would restart servers for every run, which on a 2-core machine
costs more time than the demo's budget allows. With the experiment's ``order = "rotate"`` (the
default) repeat r starts at the file's variant (r-1) mod n (A B C, B C A, C A B, ...), so each
variant takes each place within a repeat equally often over n repeats: a drift within a repeat,
or a server that runs slower for following others, does not fall on the same variant every
time (a second run of one variant, third in every repeat, measured 1.21-1.23x the first's p99
at 530 req/s on the 2-core host: docs/results/sim.md). ``order = "fixed"`` keeps the file's
order. Levels ascend within a server's life so a saturated level never leaves a backlog in
front of a lighter one.

One run (:func:`measure`): the load generators (:mod:`lanes.lab.generators`, one process per mix
entry and clone) start together, warm up for ``warmup_s``, then measure for ``measure_s``
without a pause; the runner samples ``/metrics``, ``/v2/models/stats`` and ``/proc`` at the
measurement's start and end and fetches the device timeline, whose calls' clocks it splits
into running, waiting for a core and stopped (the run's ``calls`` block,
:mod:`lanes.lab.call_clocks`). Stability (perf_analyzer's rule, :func:`stable`): the
measurement's per-second series is cut into ``windows`` equal windows;
throughput and p99 of each must lie within the tolerances of their means. An unstable run is
measured again (warm-up and window) up to ``max_extensions`` times, unless the level is
overloaded (achieved below 90 % of offered), where a longer wait cannot settle anything; the
last measurement is the one kept, marked ``stable`` or not.

SLO attainment = 2xx replies within ``slo_ms`` of their intended send / requests scheduled
(open loop; sent in closed loop): replies within the SLO are counted from the latency
histogram, and non-2xx replies are assumed fast (all counted within it, then taken out), which
makes the figure a lower bound. With a request deadline (``deadline_ms``, sent with every
request: :mod:`lanes.lab.generators`), a request the server drops at it is a 504 (within the SLO
or not, never goodput) and one of the server's ``expired``; the run file's ``offered`` records
the deadline (:func:`offered_deadlines`).

Capacity search (:func:`pending_probe`, :mod:`lanes.lab.capacity`): with
``capacity_search.steps`` K > 0, after a (repeat, variant)'s grid levels the same server
measures up to K probes, each bisecting the bracket between the repeat's highest load that met
the SLO and the lowest above it that missed, each a normal run (``S<step>-r<repeat>.json``).
Before a probe the runner waits, at most ``timeout_s``, for the server's queues to empty: a probe
usually follows an overloaded level.

Resume: a run whose file exists is skipped, a search is replayed from its files, and a server is
not started for a (repeat, variant) whose runs all exist and whose search is over.
"""

from __future__ import annotations

import functools
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from lanes.bench.result import Result, merge
from lanes.diagnose.session import Session, check_pid
from lanes.errors import BAD_ARGUMENT, EXPERIMENT_INVALID, OUTPUT_FAILED, LanesError
from lanes.files import write_text_atomic
from lanes.lab import call_clocks, capacity, generators, host_noise, scrape, speed_probe
from lanes.lab.aggregate import machine
from lanes.lab.experiment import Experiment, MixEntry, Variant, Workload

if TYPE_CHECKING:
    from lanes.lab.cluster import Pool

_OVERLOADED = 0.9
"""A level is overloaded when its achieved rate is below this share of the offered one."""
_STOP_TIMEOUT_S = 20.0


class _Named(ABC):
    """A run's names, from its ``variant`` and file ``stem``: ``id`` and result file path."""

    variant: str

    @property
    @abstractmethod
    def stem(self) -> str:
        """The result file's name without ``.json``, e.g. ``L2-r1``."""

    @property
    def id(self) -> str:
        return f"{self.variant}/{self.stem}"

    def path(self, out: Path) -> Path:
        return out / "runs" / self.variant / f"{self.stem}.json"


@dataclass(frozen=True)
class RunKey(_Named):
    """A cell of the plan: ``variant`` at level index ``level`` (0-based), ``repeat`` (1-based)."""

    variant: str
    level: int
    repeat: int

    @property
    def stem(self) -> str:
        return f"L{self.level}-r{self.repeat}"


@dataclass(frozen=True)
class Probe(_Named):
    """A capacity-search run: ``variant`` at load ``value`` (a rate, or a concurrency in
    closed loop), bisection step ``step`` (1-based) of ``repeat``."""

    variant: str
    repeat: int
    step: int
    value: float

    @property
    def stem(self) -> str:
        return f"S{self.step}-r{self.repeat}"


def plan(exp: Experiment) -> list[RunKey]:
    """Every run in execution order (see the module docstring)."""
    return [
        RunKey(v.name, level, repeat)
        for repeat in range(1, exp.workload.repeats + 1)
        for v in repeat_order(exp, repeat)
        for level in range(exp.workload.level_count)
    ]


def repeat_order(exp: Experiment, repeat: int) -> tuple[Variant, ...]:
    """The variants in the order ``repeat`` (1-based) runs them: the file's order, rotated left
    by ``repeat - 1`` places under ``order = "rotate"``."""
    v = exp.variants
    if exp.order == "fixed" or not v:
        return v
    k = (repeat - 1) % len(v)
    return v[k:] + v[:k]


def prepare(exp: Experiment, out: Path, experiment_text: str, *, resume: bool) -> list[RunKey]:
    """Create (or, with ``resume``, check) the results folder; write experiment.toml and
    plan.json; return the plan."""
    runs_dir = out / "runs"
    copied = out / "experiment.toml"
    if copied.exists():
        if not resume and any(runs_dir.rglob("*.json")):
            raise LanesError(
                BAD_ARGUMENT, f"--out {out}: holds results already; add --resume or pick another"
            )
        if resume and copied.read_text(encoding="utf-8") != experiment_text:
            raise LanesError(
                EXPERIMENT_INVALID,
                f"--out {out}: holds a different experiment.toml; resume needs the same file",
            )
    try:
        out.mkdir(parents=True, exist_ok=True)
        runs_dir.mkdir(exist_ok=True)
        write_text_atomic(copied, experiment_text)
    except OSError as err:
        raise LanesError(
            OUTPUT_FAILED, f"--out {out}: cannot write results there: {err.strerror or err}"
        ) from None
    keys = plan(exp)
    doc = {
        "runs": [
            {"id": k.id, "variant": k.variant, "level": k.level, "repeat": k.repeat} for k in keys
        ]
    }
    write_text_atomic(out / "plan.json", json.dumps(doc, indent=1) + "\n")
    return keys


def corpora(exp: Experiment, out: Path) -> dict[str, Path]:
    """Each mix model's corpus: the given file, or one built from the zoo's sample images."""
    from lanes.bench.corpus import kserve_requests, write_corpus
    from lanes.models.images import sample_images

    paths: dict[str, Path] = {}
    folder = out / "corpus"
    for entry in exp.workload.mix:
        if entry.corpus is not None:
            paths[entry.model] = entry.corpus
            continue
        folder.mkdir(exist_ok=True)
        if not (folder / "images").is_dir():
            sample_images(folder / "images", 8, seed=0)
        kind = "char" if entry.model in ("char_cnn", "misc_cls") else "line"
        path = folder / f"{entry.model}.jsonl"
        reqs = kserve_requests(entry.model, folder / "images" / kind, input_name=entry.input)
        write_corpus(reqs, path)
        paths[entry.model] = path
    return paths


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """A variant's server while it runs: its URLs and, when started here, its process."""

    url: str
    metrics_url: str | None
    process: subprocess.Popen[bytes] | None = None
    load_url: str = ""
    """Where the load goes (the variant's ``load_url``); empty: ``url``."""

    @property
    def target(self) -> str:
        """The load generators' target: ``load_url`` or ``url``, with a trailing ``/``."""
        return (self.load_url or self.url) + "/"

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid


_START_ATTEMPTS = 3
"""Starts of a variant whose server exits because one of its ports was taken before the
runner gives up (:func:`server`)."""
_PORT_TAKEN = "Address already in use"
"""What a server that lost its port says (``lanes serve``: ``cannot listen on ...: Address
already in use``; Python's OSError and most servers say the same)."""


@contextmanager
def server(variant: Variant, log: Path) -> Iterator[Server]:
    """Start ``variant`` (or reach its URL), wait until ready (bounded), stop it at the end.

    Port rule: ``{port}``, ``{metrics_port}`` and ``{grpc_port}`` are ports the kernel gave a
    socket bound to port 0 and released, so another socket can take one before the server
    binds it (a load generator's connections take their local ports from the same ephemeral
    range). A server that exits before it is ready saying its address is in use is started
    again on fresh ports, at most :data:`_START_ATTEMPTS` times in all; any other failure is
    raised at once (measured: one start in a lab of 54 runs lost its metrics port, 2026-12-04).
    """
    for attempt in range(1, _START_ATTEMPTS + 1):
        started = _start(variant, log)
        try:
            _wait_ready(variant, started.ready_url, started.server.process, log)
        except LanesError as err:
            started.stop()
            if started.server.process is None or _PORT_TAKEN not in err.message:
                raise
            if attempt == _START_ATTEMPTS:
                raise LanesError(
                    err.code, f"{err.message} ({_START_ATTEMPTS} starts, each on fresh ports)"
                ) from None
            continue
        except BaseException:  # interrupted while waiting: nothing may outlive the runner
            started.stop()
            raise
        try:
            yield started.server
        finally:
            started.stop()
        return


@dataclass
class _Started:
    """A variant's server as started, not yet known to be ready."""

    server: Server
    ready_url: str
    log_file: IO[bytes] | None

    def stop(self) -> None:
        if self.server.process is not None:
            stop_process_group(self.server.process)
        if self.log_file is not None:
            self.log_file.close()


def _start(variant: Variant, log: Path) -> _Started:
    """Start ``variant``'s command (if it has one) on fresh free ports, its output to ``log``."""
    ports = {k: str(_free_port()) for k in ("port", "metrics_port", "grpc_port")}

    def fill(text: str) -> str:
        for k, v in ports.items():
            text = text.replace("{" + k + "}", v)
        return text

    url = fill(variant.url).rstrip("/")
    load_url = fill(variant.load_url).rstrip("/") if variant.load_url else ""
    metrics_url = fill(variant.metrics_url) if variant.metrics_url else None
    ready_url = fill(variant.ready_url.replace("{url}", url))
    proc = None
    log_file: IO[bytes] | None = None
    if variant.command is not None:
        argv = [fill(a) for a in variant.command]
        if argv[0] == "lanes":  # this installation's lanes, whatever PATH says
            argv = [sys.executable, "-m", "lanes", *argv[1:]]
        elif argv[0] == "python":  # this installation's interpreter, likewise
            argv = [sys.executable, *argv[1:]]
        elif shutil.which(argv[0]) is None:
            raise LanesError(BAD_ARGUMENT, f"variant {variant.name}: command {argv[0]!r} not found")
        log.parent.mkdir(parents=True, exist_ok=True)
        log_file = open(log, "ab")  # noqa: SIM115 - closed by _Started.stop
        env = {**os.environ, **variant.env}
        try:
            proc = subprocess.Popen(
                argv, stdout=log_file, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        except BaseException:
            log_file.close()
            raise
    return _Started(Server(url, metrics_url, proc, load_url), ready_url, log_file)


def _wait_ready(
    variant: Variant, ready_url: str, proc: subprocess.Popen[bytes] | None, log: Path
) -> None:
    deadline = time.monotonic() + variant.ready_timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["(no output)"]
            raise LanesError(
                BAD_ARGUMENT,
                f"variant {variant.name}: the server exited ({proc.returncode}): {tail[0]}",
            )
        if scrape.fetch(ready_url, timeout=2.0) is not None:
            return
        time.sleep(0.2)  # polling a condition with a deadline
    raise LanesError(
        BAD_ARGUMENT,
        f"variant {variant.name}: {ready_url} not ready within {variant.ready_timeout_s:g} s "
        "(raise ready_timeout_s)",
    )


def stop_process_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server's whole process group (it was started in a session of its own), wait
    at most ``_STOP_TIMEOUT_S``, then SIGKILL the group: a server's worker processes (LitServe's,
    a pre-fork server's) must not outlive it and load the next variant's runs."""
    if proc.poll() is None:
        _signal_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGKILL)
            proc.wait()
    _signal_group(proc, signal.SIGKILL)  # children left behind by a leader that exited


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def unloaded_p50(srv: Server, corpus: dict[str, Path]) -> dict[str, float]:
    """Each model's p50 latency alone (one connection, 20 requests): the slowdown's base."""
    from lanes.bench import engine

    out: dict[str, float] = {}
    for model, path in corpus.items():
        r = engine.run(srv.target, corpus=path, connections=1, threads=1, requests=20)
        if r.requests:
            out[model] = r.latency_ms["p50"]
    return out


def within_slo(result: Result, slo_ms: float) -> int:
    """Replies (any status) with latency <= ``slo_ms``, read from the latency histogram."""
    if not result.requests:
        return 0
    count = 0
    for line in result.percentile_distribution("latency").splitlines():
        parts = line.split()
        if len(parts) != 4:
            continue
        try:
            value, n = float(parts[0]), int(parts[2])
        except ValueError:
            continue
        if value > slo_ms:
            break
        count = n
    return count


def load_block(result: Result, offered: int, measure_s: float, slo_ms: float) -> dict[str, Any]:
    """The run file's load figures for one result (a model's or the merged total)."""
    codes = {k: int(v) for k, v in result.data.get("status_codes", {}).items()}
    ok = codes.get("200", 0)
    errors = sum(int(v) for v in result.errors.values()) + int(result.data.get("unfinished", 0))
    good = max(0, within_slo(result, slo_ms) - (result.requests - ok))
    lat = result.latency_ms
    block: dict[str, Any] = {
        "requests": result.requests,
        "achieved_rps": ok / measure_s,
        "latency_ms": {k: lat[k] for k in ("p50", "p90", "p99", "p999", "mean", "max")},
        "errors": errors,
        "status_codes": codes,
        "slo_ms": slo_ms,
        "slo_attainment": good / offered if offered else 0.0,
        "goodput_rps": good / measure_s,
    }
    grpc = result.data.get("grpc_codes")
    if grpc:  # a gRPC target: the calls by grpc-status (status_codes holds their HTTP mapping)
        block["grpc_codes"] = {k: int(v) for k, v in grpc.items()}
    if result.mode == "open" and "late_sends_fraction" in result.data:
        # open loop: how far the generator kept its schedule (every connection busy, or its CPU)
        block["late_sends_fraction"] = result.late_sends_fraction
        delay = result.data.get("send_delay_ms") or {}
        if all(k in delay for k in ("p50", "p99", "max")):
            block["send_delay_ms"] = {k: float(delay[k]) for k in ("p50", "p99", "max")}
    return block


def _offered(result: Result) -> int:
    d = result.data
    return int(d.get("scheduled") or d.get("sent") or result.requests)


def stable(
    result: Result, measure_s: float, windows: int, tolerance: float, latency_tolerance: float
) -> bool:
    """perf_analyzer's check on the whole seconds of the window (see the module docstring)."""
    per: dict[int, tuple[int, list[float]]] = {}
    for p in result.data.get("timeseries", []):
        if int(p["second"]) >= int(measure_s):
            continue  # the drain after the window: replies, not load
        n, p99s = per.get(int(p["second"]), (0, []))
        per[int(p["second"])] = (n + int(p["requests"]), [*p99s, float(p.get("p99_ms") or 0.0)])
    seconds = sorted(per)
    if len(seconds) < windows:
        return False
    size = len(seconds) // windows
    tputs, p99s = [], []
    for w in range(windows):
        chunk = seconds[
            len(seconds) - (windows - w) * size : len(seconds) - (windows - w - 1) * size
        ]
        tputs.append(sum(per[s][0] for s in chunk) / len(chunk))
        p99s.append(max(max(per[s][1]) for s in chunk))
    return _agree(tputs, tolerance) and _agree(p99s, latency_tolerance)


def _agree(values: Sequence[float], tolerance: float) -> bool:
    mean = sum(values) / len(values)
    return mean > 0 and all(abs(v - mean) <= tolerance * mean for v in values)


def _sample(srv: Server, local_load: bool = True) -> dict[str, Any]:
    """The counters now; ``local_load`` False when the generators run on a Ray cluster, whose
    local workers are not under the runner, so the host's rest cannot be told from them."""
    return {
        "t": time.monotonic(),
        "metrics": scrape.metrics(srv.metrics_url),
        "stats": scrape.model_stats(srv.url),
        "cpu": scrape.cpu_sample(srv.pid),
        "host": host_noise.host_sample(srv.pid, lab=local_load),
    }


def measure(
    exp: Experiment,
    key: RunKey | Probe,
    srv: Server,
    corpus: dict[str, Path],
    base_p50: dict[str, float],
    out: Path,
    trace_times: Sequence[float] | None,
    pool: Pool | None = None,
) -> dict[str, Any]:
    """Run one cell of the plan (or one capacity probe) and return its run document
    (docs/lab.md); with a ``pool`` (``[cluster]``) the generators run on its Ray actors."""
    variant = next(v for v in exp.variants if v.name == key.variant)
    w = exp.workload.for_variant(variant)
    if isinstance(key, Probe):
        rate = None if w.closed else key.value
        conc = int(key.value) if w.closed else None
    else:
        rate = None if w.closed else w.levels[key.level]
        conc = w.concurrency[key.level] if w.closed else None
    st = exp.stability
    attempt = 0
    session: Session | None = None
    cluster_block: dict[str, Any] | None = None
    while True:
        start = generators.start_time()
        if session is not None:  # an unstable attempt's profile: measured again below
            session.finish(requests=0, dispersion=None, arrival=None)
        session = _profile_session(exp, key, srv, out, rate if conc is None else conc)
        if session is not None:
            session.window(start + w.warmup_s, w.measure_s)
        machines = 1 if pool is None else len(pool.nodes)
        seed = w.seed + 7919 * (key.repeat + 101 * attempt)
        load = _load(exp, rate, conc, trace_times, seed)
        specs, models = _specs(w, srv, corpus, load, machines, start)
        window = (start + w.warmup_s, start + w.warmup_s + w.measure_s)
        sampler = _Sampler(srv, *window, local_load=pool is None)
        deadline = 10.0 + w.warmup_s + w.measure_s + 2 * w.timeout_s
        if pool is None:
            results = generators.launch([spec for _, spec in specs], deadline)
        else:
            results, cluster_block = pool.launch(specs, deadline, closed=conc is not None)
        before, after, probe = sampler.before(), sampler.after(), sampler.probe()
        total = merge(results)
        achieved = total.data.get("status_codes", {}).get("200", 0) / w.measure_s
        ok = stable(total, w.measure_s, st.windows, st.tolerance, st.latency_tolerance)
        overloaded = rate is not None and achieved < _OVERLOADED * rate
        if ok or overloaded or attempt >= st.max_extensions:
            break
        attempt += 1
    load = load_block(total, _offered(total), w.measure_s, w.slo_ms)
    per_model: dict[str, list[Result]] = {}
    for model, r in zip(models, results, strict=True):
        per_model.setdefault(model, []).append(r)
    load["models"] = {}
    for model, rs in per_model.items():
        r = rs[0] if len(rs) == 1 else merge(rs)
        b = load_block(r, _offered(r), w.measure_s, w.slo_ms)
        base = base_p50.get(model)
        load["models"][model] = {
            "requests": b["requests"],
            "achieved_rps": b["achieved_rps"],
            "latency_ms": b["latency_ms"],
            "slo_attainment": b["slo_attainment"],
            "slowdown": b["latency_ms"]["p50"] / base if base else None,
        }
        if "grpc_codes" in b:
            load["models"][model]["grpc_codes"] = b["grpc_codes"]
        if "late_sends_fraction" in b:
            load["models"][model]["late_sends_fraction"] = b["late_sends_fraction"]
    diagnosis = None
    if session is not None:
        diagnosis = session.finish(
            requests=total.requests,
            dispersion=total.dispersion(10),
            arrival="closed loop" if w.closed else w.arrival,
            late_sends=None if w.closed else total.late_sends_fraction,
        )
        if diagnosis.get("profile"):
            diagnosis["profile"] = f"runs/{key.variant}/{diagnosis['profile']}"
    trace_rel = None
    window_start = start + w.warmup_s
    trace = scrape.timeline(srv.url, w.measure_s, (window_start, window_start + w.measure_s))
    calls = None
    if trace is not None:
        trace_rel = f"runs/{key.variant}/{key.stem}.trace.json"
        write_text_atomic(out / trace_rel, json.dumps(trace))
        calls = call_clocks.summary(trace)
    where: dict[str, int | None] = (
        {"level": None, "probe": key.step} if isinstance(key, Probe) else {"level": key.level}
    )
    return {
        "id": key.id,
        "variant": key.variant,
        **where,
        "repeat": key.repeat,
        "offered": {"rate_rps": rate, "concurrency": conc, **offered_deadlines(w)},
        "started_unix": start + w.warmup_s,
        "measure_s": w.measure_s,
        "stable": ok,
        "extensions": attempt,
        "load": load,
        "server": scrape.server_block(before, after, w.measure_s),
        "speed_probe": probe,
        "timeline": trace_rel,
        **({"calls": calls} if calls is not None else {}),
        **({"diagnosis": diagnosis} if diagnosis is not None else {}),
        **({"cluster": cluster_block} if cluster_block is not None else {}),
    }


def offered_deadlines(w: Workload) -> dict[str, Any]:
    """The run file's record of the requests' deadlines (``offered``): ``deadline_ms``, the
    workload's (None: none), and ``deadline_ms_models``, each model's, only when a mix entry's
    own deadline differs from it."""
    out: dict[str, Any] = {"deadline_ms": w.deadline_ms}
    if any(w.deadline_for(e) != w.deadline_ms for e in w.mix):
        out["deadline_ms_models"] = {e.model: w.deadline_for(e) for e in w.mix}
    return out


def _load(
    exp: Experiment,
    rate: float | None,
    conc: int | None,
    trace_times: Sequence[float] | None,
    seed: int,
) -> dict[str, Any]:
    """The run's whole load, as :func:`lanes.lab.generators.split` takes it."""
    w = exp.workload
    return {
        "rate": rate,
        "concurrency": conc,
        "arrival": w.arrival,
        "cv": w.cv,
        "trace": trace_times,
        "trace_fit": w.trace_fit,
        "segment_s": w.segment_s,
        "warmup_s": w.warmup_s,
        "measure_s": w.measure_s,
        "seed": seed,
    }


def _specs(
    w: Workload,
    srv: Server,
    corpus: dict[str, Path],
    load: dict[str, Any],
    machines: int,
    start: float,
) -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    """The run's generator specs ``(stream, spec)`` and each one's model.

    Streams: for each machine (one without ``[cluster]``), each mix entry, each clone — stream
    ``k = (machine x entries + entry) x clones + clone`` at share weight / (machines x clones)
    of the run's one schedule (:func:`lanes.lab.generators.split`); an entry with an arrival
    law of its own has its own schedule at its share of the rate (:func:`_laws`). A stream
    left with no measured send (a low rate cut many ways) is not started.
    """
    entries = [e for _ in range(machines) for e in w.mix for _ in range(w.generators)]
    shares = [e.weight / (machines * w.generators) for e in entries]
    streams: list[list[dict[str, Any]]] = [[] for _ in entries]
    groups = _laws(entries)
    for g, (slots, law) in enumerate(groups):
        own = {**load, **law, "seed": load["seed"] + 1_000_003 * g}
        if own["rate"] is not None and len(groups) > 1:
            own["rate"] = load["rate"] * sum(shares[k] for k in slots)
        cut = generators.split(own, [shares[k] for k in slots], w.connections)
        for k, stream in zip(slots, cut, strict=True):
            streams[k] = stream
    specs, models = [], []
    for k, (entry, stream) in enumerate(zip(entries, streams, strict=True)):
        if not any(seg["phase"] == "measure" for seg in stream):
            continue
        spec = generators.spec_for(
            url=srv.target,
            model=entry.model,
            corpus=str(corpus[entry.model]),
            stream=stream,
            arrival=entry.arrival or w.arrival,
            timeout_s=w.timeout_s,
            warmup_s=w.warmup_s,
            start_unix=start,
            deadline_ms=w.deadline_for(entry),
        )
        specs.append((k, spec))
        models.append(entry.model)
    return specs, models


def _laws(entries: Sequence[MixEntry]) -> list[tuple[list[int], dict[str, Any]]]:
    """The generator slots grouped by arrival law, in order of first appearance: the entries
    without a law of their own share the workload's one schedule; an entry with its own
    ``arrival`` gets its own, at its share of the rate (its clones and machines split it). Each
    group: its slots and the keys of the run's load its law replaces (none for the
    workload's)."""
    groups: dict[tuple[Any, ...], tuple[list[int], dict[str, Any]]] = {}
    for k, e in enumerate(entries):
        if e.arrival is None:
            key: tuple[Any, ...] = ()
            law: dict[str, Any] = {}
        else:
            key = (e.arrival, e.cv, str(e.trace) if e.trace else None, e.trace_fit)
            law = {"arrival": e.arrival}
            if e.cv is not None:
                law["cv"] = e.cv
            if e.trace is not None:
                law["trace"] = _trace_times(e.trace)
            if e.trace_fit is not None:
                law["trace_fit"] = e.trace_fit
        groups.setdefault(key, ([], law))[0].append(k)
    return list(groups.values())


@functools.lru_cache(maxsize=16)
def _trace_times(path: Path) -> tuple[float, ...]:
    """A mix entry's trace, read once per process."""
    from lanes.sim.trace import load_trace

    return tuple(load_trace(path))


def _profile_session(
    exp: Experiment, key: RunKey | Probe, srv: Server, out: Path, offered: float | None
) -> Session | None:
    """A profiling session for this run when ``[profile]`` asks for it (docs/diagnosis.md)."""
    prof = exp.profile
    if prof is None or offered is None:
        return None
    if not prof.wants(offered, key.repeat, probe=isinstance(key, Probe)):
        return None
    pid = prof.pid or srv.pid
    if pid is None:
        raise LanesError(
            BAD_ARGUMENT,
            f"variant {key.variant}: [profile] needs a process: the variant has no command "
            "(a running url); set profile.pid",
        )
    return Session(prof, pid, out / "runs" / key.variant / f"{key.stem}.profile")


class _Sampler:
    """Takes the 'before' sample at the measurement's start and the 'after' one at its end
    while the generators run, so the server's counters cover the client's window. (Taken when
    the generators have ended instead, the window ran up to a second long in half of a grid's
    runs on a 2-core host, and every per-second figure — devices busy, the process's CPU, the
    host's idle share — was diluted by it.) Between the two it runs the host speed probe
    (lanes.lab.speed_probe) on the same thread, so that the probe covers the same window."""

    def __init__(
        self, srv: Server, start_unix: float, end_unix: float, local_load: bool = True
    ) -> None:
        import threading

        self._srv = srv
        self._local_load = local_load
        self._values: list[dict[str, Any]] = [{}, {}]
        self._probe: dict[str, Any] | None = None
        self._work = speed_probe.Work() if srv.pid is not None else None  # before the window
        self._thread = threading.Thread(target=self._run, args=(start_unix, end_unix), daemon=True)
        self._thread.start()

    def _run(self, start_unix: float, end_unix: float) -> None:
        for i, at in enumerate((start_unix, end_unix)):
            delay = at - time.time()
            if delay > 0:
                time.sleep(delay)  # the window's start or end, not a test synchronisation
            self._values[i] = _sample(self._srv, self._local_load)
            if i == 0 and self._work is not None:
                # between the two samples, the speed of the host the server runs on (a url
                # variant's server may run elsewhere: no probe then)
                self._probe = speed_probe.run_until(end_unix, self._work)

    def probe(self) -> dict[str, Any] | None:
        """The window's speed probe (lanes.lab.speed_probe); None for a server that is not a
        process of ours, or if the probe could not run."""
        self._join()
        return self._probe

    def before(self) -> dict[str, Any]:
        """The sample at the window's start."""
        return self._join()[0]

    def after(self) -> dict[str, Any]:
        """The sample at the window's end (taken now if the thread could not)."""
        return self._join()[1] or _sample(self._srv, self._local_load)

    def _join(self) -> list[dict[str, Any]]:
        self._thread.join(timeout=30.0)
        return self._values


Progress = Callable[[str, int, int], None]
"""``progress(run_id, done, total)`` — called before each run and once at the end. ``total``
counts every capacity probe a search may still take (``steps`` per repeat and variant); it
shrinks when a search ends early."""


def run_experiment(
    exp: Experiment,
    out: Path,
    experiment_text: str,
    *,
    resume: bool = False,
    progress: Progress | None = None,
) -> list[RunKey | Probe]:
    """Run every pending cell of the plan and, after each (repeat, variant)'s grid, its
    capacity search (:func:`pending_probe`), writing ``runs/...json``; returns the runs done
    now."""
    if exp.profile is not None and exp.profile.pid is not None:
        check_pid(exp.profile.pid)  # before anything runs
    keys = prepare(exp, out, experiment_text, resume=resume)
    session = _Session(exp, out, progress)
    groups: dict[tuple[int, str], list[RunKey]] = {}
    for k in keys:
        groups.setdefault((k.repeat, k.variant), []).append(k)
    steps = exp.workload.search_steps
    work: list[tuple[int, str, list[RunKey], int]] = []
    for (repeat, name), group in groups.items():
        todo = [k for k in group if not k.path(out).exists()]
        probe = None if todo else pending_probe(exp, out, repeat, name)
        probes = steps if todo else (0 if probe is None else steps - probe.step + 1)
        if todo or probes:
            work.append((repeat, name, todo, probes))
            session.planned += len(todo) + probes
    variants = {v.name: v for v in exp.variants}
    if work and exp.cluster is not None:
        from lanes.lab.cluster import Pool

        w = exp.workload
        streams = [e.model for e in w.mix for _ in range(w.generators)]
        session.pool = Pool(exp.cluster, streams, session.corpus)
    try:
        for repeat, name, todo, probes in work:
            log = out / "runs" / name / f"server-r{repeat}.log"
            with server(variants[name], log) as srv:
                session.start(srv)
                for k in todo:
                    session.run(k)
                searched = 0
                while (probe := pending_probe(exp, out, repeat, name)) is not None:
                    _settle(srv, exp.workload.timeout_s)
                    session.run(probe)
                    searched += 1
                session.planned -= probes - searched
    finally:
        if session.pool is not None:
            session.pool.close()
    if progress is not None:
        progress("done", len(session.done), len(session.done))
    return session.done


class _Session:
    """What the runs of one :func:`run_experiment` call share: the corpora, the trace, the
    server running now and its models' unloaded p50, the runs done and the runs planned."""

    def __init__(self, exp: Experiment, out: Path, progress: Progress | None) -> None:
        self.exp, self.out, self.progress = exp, out, progress
        self.corpus = corpora(exp, out)
        self.trace_times: Sequence[float] | None = None
        if exp.workload.trace is not None:
            from lanes.sim.trace import load_trace

            self.trace_times = load_trace(exp.workload.trace)
        self.done: list[RunKey | Probe] = []
        self.planned = 0
        self.srv: Server | None = None
        self.base: dict[str, float] = {}
        self.pool: Pool | None = None
        """The generator actors on a Ray cluster (``[cluster]``); None: local processes."""
        self.machine = machine()
        """This host, recorded in every run file (the summary names it wherever it is made)."""

    def start(self, srv: Server) -> None:
        """A variant's server is ready: measure its models alone."""
        self.srv, self.base = srv, unloaded_p50(srv, self.corpus)

    def run(self, key: RunKey | Probe) -> None:
        """Measure ``key`` on the current server and write its run file."""
        assert self.srv is not None
        if self.progress is not None:
            self.progress(key.id, len(self.done), self.planned)
        doc = measure(
            self.exp,
            key,
            self.srv,
            self.corpus,
            self.base,
            self.out,
            self.trace_times,
            self.pool,
        )
        doc["machine"] = self.machine
        path = key.path(self.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(doc, indent=1) + "\n")
        self.done.append(key)


class _Unmeasured(Exception):
    """A probe the search asks for has no run file yet."""

    def __init__(self, probe: Probe) -> None:
        super().__init__(probe.id)
        self.probe = probe


def pending_probe(exp: Experiment, out: Path, repeat: int, variant: str) -> Probe | None:
    """The next capacity probe of ``variant`` in ``repeat`` that has no run file yet.

    The search (:func:`lanes.lab.capacity.search`, ``workload.capacity_search.steps`` probes
    at most) is replayed from the run files: the repeat's grid runs, then its probes
    ``S<step>-r<repeat>.json`` in order, a run meeting the SLO when its overall attainment is
    >= 99 %. Being a pure function of the files, it resumes where an interrupted search
    stopped. None when no search is asked for, the search is over, or a grid run of this
    repeat is missing.
    """
    w = exp.workload
    if not w.search_steps:
        return None
    points = []
    for level in range(w.level_count):
        doc = _read_run(RunKey(variant, level, repeat).path(out))
        if doc is None:
            return None
        points.append((_offered_value(doc), capacity.meets(doc["load"]["slo_attainment"])))
    steps: list[Probe] = []

    def recorded(value: float) -> bool:
        probe = Probe(variant, repeat, len(steps) + 1, value)
        steps.append(probe)
        doc = _read_run(probe.path(out))
        if doc is None:
            raise _Unmeasured(probe)
        if not math.isclose(_offered_value(doc), value, rel_tol=1e-9):
            raise LanesError(
                EXPERIMENT_INVALID,
                f"{probe.path(out)}: measured load {_offered_value(doc):g}, but the search now "
                f"asks for {value:g} there (the runs changed); remove runs/{variant}/S*-r{repeat}"
                ".json to search again",
            )
        return capacity.meets(doc["load"]["slo_attainment"])

    try:
        capacity.search(points, recorded, w.search_steps, integer=w.closed)
    except _Unmeasured as missing:
        return missing.probe
    return None


def _read_run(path: Path) -> dict[str, Any] | None:
    """A run file written by this runner, or None when it does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        doc: dict[str, Any] = json.loads(text)
    except json.JSONDecodeError as err:
        raise LanesError(OUTPUT_FAILED, f"{path}: not a run file ({err})") from None
    return doc


def _offered_value(doc: dict[str, Any]) -> float:
    offered = doc["offered"]
    rate = offered.get("rate_rps")
    return float(rate if rate is not None else offered["concurrency"])


def _settle(srv: Server, limit_s: float) -> None:
    """Wait, at most ``limit_s``, until the server's queues are empty (``lanes_queue_depth``).

    A probe usually follows an overloaded level; its backlog must not fall into the probe's
    window. Without a metrics endpoint this returns at once (the warm-up absorbs what is left).
    """
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        series = scrape.metrics(srv.metrics_url)
        if series is None or scrape.total(series, "lanes_queue_depth") == 0:
            return
        time.sleep(0.1)  # polling a condition with a deadline


def summarize(out: Path) -> Path | None:
    """Write summary.json with :mod:`lanes.lab.aggregate` when it is installed; its path."""
    try:
        from lanes.lab import aggregate
    except ImportError:
        return None
    return Path(aggregate.write_summary(out))
