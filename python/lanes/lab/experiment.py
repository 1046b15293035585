"""The experiment file: a typed, validated description of one lab experiment.

An experiment (TOML, docs/lab.md has every key) names the **variants** to compare (each a
command that starts a server, or the URL of one already running), one **workload** (a weighted
mix of models and their request corpora, an arrival law, load levels, windows, repeats, SLO) and
the **stability** rule. :func:`load_experiment` parses a file into an :class:`Experiment`; the
runner never sees raw TOML.

Validation rule: every table accepts only its known keys; each problem raises
``LanesError("experiment_invalid", ...)`` with one line ``FILE: KEY.PATH = VALUE: problem;
allowed: ...``, and the first problem found is the one reported. Mix weights are relative: they
are divided by their sum. Paths (a corpus, a trace) are relative to the experiment file's folder.
A request deadline (``deadline_ms``: the workload's, a variant's own in its place, or a mix
entry's own for its model) is at most ``timeout_s`` x 1000: the client would give up before it.
"""

from __future__ import annotations

import itertools
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lanes.diagnose.config import PROFILE_KEYS, ProfileConfig
from lanes.errors import EXPERIMENT_INVALID, LanesError
from lanes.lab.capacity import MAX_STEPS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

ARRIVALS = ("constant", "poisson", "bursty", "trace")
TRACE_FITS = ("rate", "time")
"""How a trace meets a level: ``rate`` scales its per-segment counts to the level's mean rate on
its own time axis; ``time`` compresses its time axis to the level's rate first, as ``lanes sim``
does (:func:`lanes.lab.generators.segments`)."""
"""Arrival laws of an open-loop workload."""
ORDERS = ("rotate", "fixed")
"""How a repeat orders the variants (:func:`lanes.lab.runner.plan`): ``rotate`` starts repeat r
at the file's variant (r-1) mod n, so each variant takes each place in turn and a drift within a
repeat falls on every variant alike; ``fixed`` keeps the file's order in every repeat."""
_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_TOP_KEYS = (
    "name",
    "description",
    "baseline",
    "order",
    "variant",
    "workload",
    "stability",
    "profile",
    "cluster",
)
_VARIANT_KEYS = (
    "name",
    "command",
    "url",
    "load_url",
    "metrics_url",
    "ready_url",
    "env",
    "ready_timeout_s",
    "deadline_ms",
)
_WORKLOAD_KEYS = (
    "mix",
    "arrival",
    "cv",
    "trace",
    "trace_fit",
    "segment_s",
    "levels",
    "concurrency",
    "warmup_s",
    "measure_s",
    "repeats",
    "slo_ms",
    "generators",
    "connections",
    "timeout_s",
    "deadline_ms",
    "seed",
    "capacity_search",
)
_SEARCH_KEYS = ("steps",)
_MIX_KEYS = (
    "model",
    "weight",
    "corpus",
    "input",
    "arrival",
    "cv",
    "trace",
    "trace_fit",
    "deadline_ms",
)
_STABILITY_KEYS = ("tolerance", "latency_tolerance", "windows", "max_extensions")
_CLUSTER_KEYS = ("ray", "machines", "max_late_sends", "max_clock_offset_ms")


@dataclass(frozen=True)
class Variant:
    """One server configuration under test: a ``command`` to start, or a running ``url``.

    In ``command``, ``url``, ``load_url``, ``metrics_url`` and ``ready_url``, ``{port}``,
    ``{metrics_port}`` and ``{grpc_port}`` stand for free ports the runner picks at each start.
    ``url`` is the server's KServe v2 REST root: readiness, model statistics and the device
    timeline are read there. ``load_url`` is where the load goes, when not ``url``: a
    ``grpc://HOST:PORT`` sends every request as a KServe v2 gRPC ``ModelInfer`` call (the
    corpus's REST bodies converted, docs/bench.md), so one server is measured over gRPC.
    """

    name: str
    command: tuple[str, ...] | None = None
    url: str = "http://127.0.0.1:{port}"
    load_url: str | None = None
    metrics_url: str | None = "http://127.0.0.1:{metrics_port}/metrics"
    ready_url: str = "{url}/v2/health/ready"
    env: Mapping[str, str] = field(default_factory=dict)
    ready_timeout_s: float = 120.0
    deadline_ms: float | None = None
    """This variant's requests' deadline in place of ``workload.deadline_ms`` (None: the
    workload's), so that one experiment measures a policy with and without deadlines, its runs
    interleaved; a mix entry's own ``deadline_ms`` still wins for its model."""


@dataclass(frozen=True)
class MixEntry:
    """One model of the mix: its share of the load and its requests."""

    model: str
    weight: float
    corpus: Path | None = None
    """A JSONL corpus (docs/bench.md); None: built from the demo zoo's sample images."""
    input: str = "image"
    """The input tensor name used when the corpus is built from images."""
    arrival: str | None = None
    """This model's own arrival law (open loop): its requests follow their own schedule at its
    share of each level, e.g. one model's production trace beside steady others; None: the
    workload's, shared with the other entries."""
    cv: float | None = None
    """``bursty`` only: this entry's coefficient of variation (None: the workload's)."""
    trace: Path | None = None
    """``trace`` only: this entry's file of timestamps (None: the workload's)."""
    trace_fit: str | None = None
    """``trace`` only: ``rate`` or ``time`` (:data:`TRACE_FITS`; None: the workload's)."""
    deadline_ms: float | None = None
    """This model's requests' deadline (None: the workload's)."""


@dataclass(frozen=True)
class Workload:
    """What load is offered, how long, how often and against which SLO."""

    mix: tuple[MixEntry, ...]
    levels: tuple[float, ...] = ()
    """Open loop: total offered rates in requests/s (ascending)."""
    concurrency: tuple[int, ...] = ()
    """Closed loop: total concurrencies (ascending); exactly one of levels/concurrency is set."""
    arrival: str = "poisson"
    cv: float = 3.0
    trace: Path | None = None
    trace_fit: str = "rate"
    segment_s: float = 1.0
    warmup_s: float = 2.0
    measure_s: float = 8.0
    repeats: int = 5
    slo_ms: float = 100.0
    generators: int = 1
    connections: int = 64
    timeout_s: float = 10.0
    deadline_ms: float | None = None
    """Every request's deadline in ms, sent with it (``lanes-timeout-ms``, or ``grpc-timeout``
    over gRPC: :func:`lanes.lab.generators.deadline_headers`); the server answers a request
    still queued at its deadline 504 and never runs it. None: no deadline sent (the model's
    default applies)."""
    seed: int = 1
    search_steps: int = 0
    """``capacity_search.steps``: bisection probes after the grid, per repeat and variant
    (:mod:`lanes.lab.capacity`); 0 reads the capacity off the grid alone."""

    @property
    def closed(self) -> bool:
        """True for a closed-loop workload (``concurrency`` levels)."""
        return bool(self.concurrency)

    @property
    def level_count(self) -> int:
        return len(self.concurrency) if self.closed else len(self.levels)

    def deadline_for(self, entry: MixEntry) -> float | None:
        """The deadline ``entry``'s requests carry: its own, else the workload's."""
        return entry.deadline_ms if entry.deadline_ms is not None else self.deadline_ms

    def for_variant(self, variant: Variant) -> Workload:
        """The workload as ``variant`` is measured: its own ``deadline_ms`` in place of the
        workload's when it has one."""
        if variant.deadline_ms is None:
            return self
        return replace(self, deadline_ms=variant.deadline_ms)


@dataclass(frozen=True)
class Stability:
    """perf_analyzer's rule: the last ``windows`` windows of a measurement agree.

    Throughput within ``tolerance`` and p99 within ``latency_tolerance`` of their means; else
    the run is measured again (warm-up and window), at most ``max_extensions`` times, unless the
    level is overloaded (achieved below 90 % of offered), where waiting cannot help.
    """

    tolerance: float = 0.1
    latency_tolerance: float = 0.3
    windows: int = 3
    max_extensions: int = 1


@dataclass(frozen=True)
class Cluster:
    """``[cluster]``: the generators as Ray actors over a cluster's nodes (docs/lab.md).

    ``machines`` nodes each run every mix entry's ``workload.generators`` clones
    (:mod:`lanes.lab.cluster`); a run whose generators fell behind — a node's late sends
    above ``max_late_sends`` of its sends, or its clock possibly further than
    ``max_clock_offset_ms`` from the driver's — is flagged, and left out of the means.
    """

    ray: str = "auto"
    """``"auto"`` (the cluster this host belongs to) or a Ray address (``HOST:PORT``)."""
    machines: int | None = None
    """How many nodes generate load; None: every alive node."""
    max_late_sends: float = 0.05
    max_clock_offset_ms: float = 10.0


@dataclass(frozen=True)
class Experiment:
    """A validated experiment file."""

    name: str
    variants: tuple[Variant, ...]
    workload: Workload
    stability: Stability = Stability()
    baseline: str | None = None
    description: str = ""
    source: Path | None = None
    profile: ProfileConfig | None = None
    """``[profile]``: diagnosis under load at chosen levels and repeats (docs/diagnosis.md)."""
    cluster: Cluster | None = None
    """``[cluster]``: load from many machines on Ray; None: generator processes on this host."""
    order: str = "rotate"
    """How each repeat orders the variants: one of :data:`ORDERS`."""

    def quick(self) -> Experiment:
        """One repeat, three levels (the lowest, the middle, the highest)."""
        w = self.workload
        pick = sorted({0, w.level_count // 2, w.level_count - 1})
        levels = tuple(w.levels[i] for i in pick) if w.levels else ()
        conc = tuple(w.concurrency[i] for i in pick) if w.concurrency else ()
        return replace(self, workload=replace(w, levels=levels, concurrency=conc, repeats=1))

    def with_repeats(self, repeats: int) -> Experiment:
        return replace(self, workload=replace(self.workload, repeats=repeats))

    def with_order(self, order: str) -> Experiment:
        """The variants ordered by ``order`` in each repeat (``lanes bench run --order``)."""
        if order not in ORDERS:
            raise LanesError(EXPERIMENT_INVALID, f"--order {order}: allowed: {', '.join(ORDERS)}")
        return replace(self, order=order)

    def with_variants(self, names: Sequence[str]) -> Experiment:
        """Only the variants ``names`` (``lanes bench run --variants``), in the file's order; an
        unknown name is one error listing the variants there are."""
        have = [v.name for v in self.variants]
        wanted = [n.strip() for n in names if n.strip()]
        unknown = [n for n in wanted if n not in have]
        if unknown or not wanted:
            raise LanesError(
                EXPERIMENT_INVALID,
                f"--variants {','.join(names)}: "
                + (f"no variant {unknown[0]!r}" if unknown else "names no variant")
                + f" (have: {', '.join(have)})",
            )
        return replace(self, variants=tuple(v for v in self.variants if v.name in wanted))

    def with_ray(self, address: str) -> Experiment:
        """The experiment on the Ray cluster at ``address`` (``lanes bench run --ray``)."""
        if not address.strip():
            raise LanesError(EXPERIMENT_INVALID, "--ray: allowed: auto or a Ray address")
        return replace(self, cluster=replace(self.cluster or Cluster(), ray=address.strip()))


class _Checker:
    """Reads typed values out of the parsed TOML, raising one clear line per problem."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, key: str, value: object, problem: str) -> LanesError:
        return LanesError(EXPERIMENT_INVALID, f"{self.source}: {key} = {value!r}: {problem}")

    def keys(self, table: Mapping[str, Any], path: str, allowed: Sequence[str]) -> None:
        for key in table:
            if key not in allowed:
                where = f"{path}.{key}" if path else key
                raise LanesError(
                    EXPERIMENT_INVALID,
                    f"{self.source}: {where}: unknown key; allowed: {', '.join(allowed)}",
                )

    def missing(self, key: str, what: str) -> LanesError:
        return LanesError(EXPERIMENT_INVALID, f"{self.source}: {key}: missing; {what}")

    def table(self, value: object, key: str) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(key, value, "not a table")
        return value

    def string(self, value: object, key: str, *, name: bool = False) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(key, value, "allowed: a non-empty string")
        if name and not _NAME.fullmatch(value):
            raise self.fail(key, value, "allowed: letters, digits, '_', '.', '-'")
        return value

    def number(
        self, value: object, key: str, *, low: float, high: float = float("inf"), open_low: bool
    ) -> float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok:
            v = float(value)  # type: ignore[arg-type]
            ok = (v > low if open_low else v >= low) and v <= high
        if not ok:
            lo = f"> {low:g}" if open_low else f">= {low:g}"
            hi = "" if high == float("inf") else f" and <= {high:g}"
            raise self.fail(key, value, f"allowed: a number {lo}{hi}")
        return float(value)  # type: ignore[arg-type]

    def integer(self, value: object, key: str, *, low: int) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise self.fail(key, value, f"allowed: a whole number >= {low}")
        return value

    def path(self, value: object, key: str, base: Path) -> Path:
        text = self.string(value, key)
        p = Path(text)
        p = p if p.is_absolute() else base / p
        if not p.is_file():
            raise self.fail(key, value, f"no such file ({p})")
        return p


def load_experiment(path: Path) -> Experiment:
    """Parse and validate the experiment file at ``path``."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise LanesError(EXPERIMENT_INVALID, f"{path}: {err.strerror or err}") from err
    except UnicodeDecodeError as err:
        raise LanesError(EXPERIMENT_INVALID, f"{path}: not UTF-8 text ({err.reason})") from err
    return parse_experiment(text, source=path)


def parse_experiment(
    text: str, *, source: Path | None = None, base: Path | None = None
) -> Experiment:
    """Parse and validate experiment TOML ``text``; ``source`` names it in messages and paths
    are relative to ``base`` (default: the source's folder, else the working directory)."""
    name = str(source) if source is not None else "experiment"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise LanesError(EXPERIMENT_INVALID, f"{name}: not valid TOML: {err}") from None
    root = base if base is not None else (source.parent if source is not None else Path("."))
    c = _Checker(name)
    c.keys(data, "", _TOP_KEYS)
    if "name" not in data:
        raise c.missing("name", "the experiment's name is required")
    exp_name = c.string(data["name"], "name", name=True)
    description = c.string(data["description"], "description") if "description" in data else ""
    variants = _variants(c, data.get("variant"))
    workload = _workload(c, data.get("workload"), root)
    for i, v in enumerate(variants):
        if v.deadline_ms is not None:  # the value as written, for the message
            raw = data["variant"][i]["deadline_ms"]
            _deadline(c, raw, f"variant[{i}].deadline_ms", workload.timeout_s)
    stability = _stability(c, data.get("stability", {}))
    baseline = None
    if "baseline" in data:
        baseline = c.string(data["baseline"], "baseline")
        names = [v.name for v in variants]
        if baseline not in names:
            raise c.fail("baseline", baseline, f"not a variant; allowed: {', '.join(names)}")
    profile = _profile(c, data["profile"], workload) if "profile" in data else None
    cluster = _cluster(c, data["cluster"]) if "cluster" in data else None
    order = data.get("order", "rotate")
    if order not in ORDERS:
        raise c.fail("order", order, f"allowed: {', '.join(ORDERS)}")
    return Experiment(
        exp_name,
        variants,
        workload,
        stability,
        baseline,
        description,
        source,
        profile,
        cluster,
        order,
    )


def _variants(c: _Checker, raw: object) -> tuple[Variant, ...]:
    if raw is None:
        raise c.missing("variant", "at least one [[variant]] is required")
    if not isinstance(raw, list) or not raw:
        raise c.fail("variant", raw, "allowed: one or more [[variant]] tables")
    out: list[Variant] = []
    for i, item in enumerate(raw):
        where = f"variant[{i}]"
        t = c.table(item, where)
        c.keys(t, where, _VARIANT_KEYS)
        if "name" not in t:
            raise c.missing(f"{where}.name", "each variant needs a name")
        vname = c.string(t["name"], f"{where}.name", name=True)
        if any(v.name == vname for v in out):
            raise c.fail(f"{where}.name", vname, "a second variant of this name")
        has_cmd, has_url = "command" in t, "url" in t
        if has_cmd == has_url:
            raise LanesError(
                EXPERIMENT_INVALID,
                f"{c.source}: {where}: give exactly one of command (start a server) or url "
                "(one already running)",
            )
        kw: dict[str, Any] = {"name": vname}
        if has_cmd:
            cmd = t["command"]
            if (
                not isinstance(cmd, list)
                or not cmd
                or not all(isinstance(a, str) and a for a in cmd)
            ):
                raise c.fail(f"{where}.command", cmd, "allowed: a non-empty list of strings")
            kw["command"] = tuple(cmd)
        else:
            kw["url"] = _url(c, t["url"], f"{where}.url").rstrip("/")
            kw["metrics_url"] = None
        for key in ("metrics_url", "ready_url"):
            if key in t:
                kw[key] = _url(c, t[key], f"{where}.{key}")
        if "load_url" in t:
            kw["load_url"] = _url(c, t["load_url"], f"{where}.load_url", grpc=True).rstrip("/")
        if "env" in t:
            env = c.table(t["env"], f"{where}.env")
            for k, v in env.items():
                if not isinstance(v, str):
                    raise c.fail(f"{where}.env.{k}", v, "allowed: a string")
            kw["env"] = dict(env)
        if "ready_timeout_s" in t:
            kw["ready_timeout_s"] = c.number(
                t["ready_timeout_s"], f"{where}.ready_timeout_s", low=0, high=3600, open_low=True
            )
        if "deadline_ms" in t:  # its bound, timeout_s, is checked with the workload's
            kw["deadline_ms"] = c.number(
                t["deadline_ms"], f"{where}.deadline_ms", low=0, open_low=True
            )
        out.append(Variant(**kw))
    return tuple(out)


def _url(c: _Checker, value: object, key: str, grpc: bool = False) -> str:
    text = c.string(value, key)
    if text.startswith(("http://", "{url}")) or (grpc and text.startswith("grpc://")):
        return text
    raise c.fail(
        key, value, "allowed: an http:// or grpc:// URL" if grpc else "allowed: an http:// URL"
    )


def _workload(c: _Checker, raw: object, root: Path) -> Workload:
    if raw is None:
        raise c.missing("workload", "a [workload] table is required")
    t = c.table(raw, "workload")
    c.keys(t, "workload", _WORKLOAD_KEYS)
    kw: dict[str, Any] = {}
    floats = {
        "segment_s": (0.05, 60.0, True),
        "warmup_s": (0.0, 3600.0, False),
        "measure_s": (0.0, 3600.0, True),
        "slo_ms": (0.0, 1e7, True),
        "timeout_s": (0.0, 600.0, True),
    }
    for key, (low, high, open_low) in floats.items():
        if key in t:
            kw[key] = c.number(t[key], f"workload.{key}", low=low, high=high, open_low=open_low)
    timeout_s = kw.get("timeout_s", Workload.timeout_s)
    kw["mix"] = _mix(c, t.get("mix"), root, timeout_s)
    if "deadline_ms" in t:
        kw["deadline_ms"] = _deadline(c, t["deadline_ms"], "workload.deadline_ms", timeout_s)
    arrival = t.get("arrival", "poisson")
    if arrival not in ARRIVALS:
        raise c.fail("workload.arrival", arrival, f"allowed: {', '.join(ARRIVALS)}")
    kw["arrival"] = arrival
    if "cv" in t:
        if arrival != "bursty":
            raise c.fail("workload.cv", t["cv"], "only with arrival = 'bursty'")
        kw["cv"] = c.number(t["cv"], "workload.cv", low=0, high=20, open_low=True)
    if arrival == "trace":
        if "trace" not in t:
            raise c.missing("workload.trace", "arrival = 'trace' needs a file of timestamps")
        kw["trace"] = c.path(t["trace"], "workload.trace", root)
        _check_trace(c, kw["trace"])
        if "trace_fit" in t:
            kw["trace_fit"] = _trace_fit(c, t["trace_fit"], "workload.trace_fit")
    elif "trace" in t:
        raise c.fail("workload.trace", t["trace"], "only with arrival = 'trace'")
    elif "trace_fit" in t:
        raise c.fail("workload.trace_fit", t["trace_fit"], "only with arrival = 'trace'")
    has_levels, has_conc = "levels" in t, "concurrency" in t
    if has_levels == has_conc:
        raise LanesError(
            EXPERIMENT_INVALID,
            f"{c.source}: workload: give exactly one of levels (open loop, requests/s) or "
            "concurrency (closed loop)",
        )
    if has_levels:
        kw["levels"] = _ascending(c, t["levels"], "workload.levels", integer=False)
    else:
        if arrival != "poisson" and "arrival" in t:
            raise c.fail("workload.arrival", arrival, "closed loop (concurrency) has no arrival")
        for i, e in enumerate(kw["mix"]):
            if e.arrival is not None:
                raise c.fail(
                    f"workload.mix[{i}].arrival",
                    e.arrival,
                    "closed loop (concurrency) has no arrival",
                )
        kw["concurrency"] = tuple(
            int(x) for x in _ascending(c, t["concurrency"], "workload.concurrency", integer=True)
        )
    if "slo_ms" not in t:
        raise c.missing("workload.slo_ms", "the latency SLO in milliseconds is required")
    for key, low in (("repeats", 1), ("generators", 1), ("connections", 1), ("seed", 0)):
        if key in t:
            kw[key] = c.integer(t[key], f"workload.{key}", low=low)
    if "capacity_search" in t:
        search = c.table(t["capacity_search"], "workload.capacity_search")
        c.keys(search, "workload.capacity_search", _SEARCH_KEYS)
        steps = c.integer(search.get("steps", 0), "workload.capacity_search.steps", low=0)
        if steps > MAX_STEPS:
            raise c.fail(
                "workload.capacity_search.steps", steps, f"allowed: 0 to {MAX_STEPS} steps"
            )
        kw["search_steps"] = steps
    return Workload(**kw)


def _mix(c: _Checker, raw: object, root: Path, timeout_s: float) -> tuple[MixEntry, ...]:
    if raw is None:
        raise c.missing("workload.mix", "a list of {model, weight} is required")
    if not isinstance(raw, list) or not raw:
        raise c.fail("workload.mix", raw, "allowed: a non-empty list of {model, weight, corpus}")
    entries: list[MixEntry] = []
    for i, item in enumerate(raw):
        where = f"workload.mix[{i}]"
        t = c.table(item, where)
        c.keys(t, where, _MIX_KEYS)
        if "model" not in t:
            raise c.missing(f"{where}.model", "each mix entry names a model")
        model = c.string(t["model"], f"{where}.model", name=True)
        if any(e.model == model for e in entries):
            raise c.fail(f"{where}.model", model, "a second mix entry for this model")
        weight = c.number(t.get("weight", 1.0), f"{where}.weight", low=0, open_low=True)
        corpus = c.path(t["corpus"], f"{where}.corpus", root) if "corpus" in t else None
        if corpus is None:
            from lanes.models.zoo import ZOO_NAMES

            if model not in ZOO_NAMES:
                raise c.fail(
                    f"{where}.model",
                    model,
                    f"not a demo zoo model, so a corpus is needed; zoo: {', '.join(ZOO_NAMES)}",
                )
        name = c.string(t["input"], f"{where}.input") if "input" in t else "image"
        own = _own_arrival(c, t, where, root)
        deadline = None
        if "deadline_ms" in t:
            deadline = _deadline(c, t["deadline_ms"], f"{where}.deadline_ms", timeout_s)
        entries.append(MixEntry(model, weight, corpus, name, *own, deadline_ms=deadline))
    total = sum(e.weight for e in entries)
    return tuple(replace(e, weight=e.weight / total) for e in entries)


def _deadline(c: _Checker, value: object, key: str, timeout_s: float) -> float:
    """A request deadline in ms: a number > 0 and at most ``timeout_s`` x 1000, since past its
    own timeout the client has given up and never sees the server's 504."""
    ms = c.number(value, key, low=0, open_low=True)
    if ms > timeout_s * 1000:
        limit = f"{timeout_s * 1000:g}"
        raise c.fail(
            key, value, f"allowed: a number > 0 and <= {limit} (workload.timeout_s x 1000)"
        )
    return ms


def _trace_fit(c: _Checker, value: object, key: str) -> str:
    if value not in TRACE_FITS:
        raise c.fail(key, value, f"allowed: {', '.join(TRACE_FITS)}")
    return str(value)


def _own_arrival(
    c: _Checker, t: Mapping[str, Any], where: str, root: Path
) -> tuple[str | None, float | None, Path | None, str | None]:
    """A mix entry's own ``arrival``, ``cv``, ``trace`` and ``trace_fit`` (None where it has
    none), with the rules of the workload's keys."""
    arrival = t.get("arrival")
    if arrival is not None and arrival not in ARRIVALS:
        raise c.fail(f"{where}.arrival", arrival, f"allowed: {', '.join(ARRIVALS)}")
    cv = None
    if "cv" in t:
        if arrival != "bursty":
            raise c.fail(f"{where}.cv", t["cv"], "only with this entry's arrival = 'bursty'")
        cv = c.number(t["cv"], f"{where}.cv", low=0, high=20, open_low=True)
    trace, fit = None, None
    if arrival == "trace":
        if "trace" not in t:
            raise c.missing(f"{where}.trace", "arrival = 'trace' needs a file of timestamps")
        trace = c.path(t["trace"], f"{where}.trace", root)
        _check_trace(c, trace, f"{where}.trace")
        if "trace_fit" in t:
            fit = _trace_fit(c, t["trace_fit"], f"{where}.trace_fit")
    else:
        for key in ("trace", "trace_fit"):
            if key in t:
                only = "only with this entry's arrival = 'trace'"
                raise c.fail(f"{where}.{key}", t[key], only)
    return arrival, cv, trace, fit


def _ascending(c: _Checker, raw: object, key: str, *, integer: bool) -> tuple[float, ...]:
    what = "whole numbers >= 1" if integer else "numbers > 0"
    if not isinstance(raw, list) or not raw:
        raise c.fail(key, raw, f"allowed: a non-empty ascending list of {what}")
    values: list[float] = []
    for i, v in enumerate(raw):
        if integer:
            values.append(c.integer(v, f"{key}[{i}]", low=1))
        else:
            values.append(c.number(v, f"{key}[{i}]", low=0, open_low=True))
    if any(b <= a for a, b in itertools.pairwise(values)):
        raise c.fail(key, raw, f"allowed: a strictly ascending list of {what}")
    return tuple(values)


def _check_trace(c: _Checker, path: Path, key: str = "workload.trace") -> None:
    from lanes.sim.trace import load_trace

    try:
        load_trace(path)
    except LanesError as err:
        raise LanesError(EXPERIMENT_INVALID, f"{c.source}: {key}: {err.message}") from None


def _stability(c: _Checker, raw: object) -> Stability:
    t = c.table(raw, "stability")
    c.keys(t, "stability", _STABILITY_KEYS)
    kw: dict[str, Any] = {}
    for key in ("tolerance", "latency_tolerance"):
        if key in t:
            kw[key] = c.number(t[key], f"stability.{key}", low=0, high=10, open_low=True)
    if "windows" in t:
        kw["windows"] = c.integer(t["windows"], "stability.windows", low=2)
    if "max_extensions" in t:
        kw["max_extensions"] = c.integer(t["max_extensions"], "stability.max_extensions", low=0)
    return Stability(**kw)


def _cluster(c: _Checker, raw: object) -> Cluster:
    t = c.table(raw, "cluster")
    c.keys(t, "cluster", _CLUSTER_KEYS)
    kw: dict[str, Any] = {}
    if "ray" in t:
        address = t["ray"]
        if not isinstance(address, str) or not address.strip() or " " in address.strip():
            raise c.fail("cluster.ray", address, "allowed: 'auto' or a Ray address (HOST:PORT)")
        kw["ray"] = address.strip()
    if "machines" in t:
        kw["machines"] = c.integer(t["machines"], "cluster.machines", low=1)
    if "max_late_sends" in t:
        kw["max_late_sends"] = c.number(
            t["max_late_sends"], "cluster.max_late_sends", low=0, high=1, open_low=False
        )
    if "max_clock_offset_ms" in t:
        kw["max_clock_offset_ms"] = c.number(
            t["max_clock_offset_ms"], "cluster.max_clock_offset_ms", low=0, open_low=True
        )
    return Cluster(**kw)


def _profile(c: _Checker, raw: object, w: Workload) -> ProfileConfig:
    t = c.table(raw, "profile")
    c.keys(t, "profile", PROFILE_KEYS)
    offered = w.concurrency if w.closed else w.levels
    levels: tuple[float, ...] | None = None
    if "levels" in t:
        raw_levels = t["levels"]
        if not isinstance(raw_levels, list) or not raw_levels:
            raise c.fail("profile.levels", raw_levels, "allowed: a list of the workload's levels")
        picked = []
        for v in raw_levels:
            value = c.number(v, "profile.levels", low=0, open_low=True)
            if not any(abs(value - o) <= 1e-9 * max(1.0, o) for o in offered):
                allowed = ", ".join(f"{o:g}" for o in offered)
                raise c.fail("profile.levels", v, f"not a workload level; allowed: {allowed}")
            picked.append(value)
        levels = tuple(picked)
    repeats: tuple[int, ...] = (1,)
    if "repeats" in t:
        raw_repeats = t["repeats"]
        if not isinstance(raw_repeats, list) or not raw_repeats:
            raise c.fail("profile.repeats", raw_repeats, "allowed: a list of repeat numbers")
        repeats = tuple(c.integer(r, "profile.repeats", low=1) for r in raw_repeats)
        for r in repeats:
            if r > w.repeats:
                raise c.fail("profile.repeats", r, f"allowed: 1 to workload.repeats = {w.repeats}")
    flags = {}
    for key in ("stacks", "syscalls", "syscall_time", "native"):
        if key in t:
            if not isinstance(t[key], bool):
                raise c.fail(f"profile.{key}", t[key], "allowed: true or false")
            flags[key] = t[key]
    rate = c.integer(t.get("rate_hz", 49), "profile.rate_hz", low=1)
    if rate > 1000:
        raise c.fail("profile.rate_hz", rate, "allowed: 1 to 1000 samples per second")
    interval = c.integer(t.get("interval_ms", 100), "profile.interval_ms", low=10)
    pid = c.integer(t["pid"], "profile.pid", low=1) if "pid" in t else None
    return ProfileConfig(
        levels=levels, repeats=repeats, rate_hz=rate, interval_ms=interval, pid=pid, **flags
    )
