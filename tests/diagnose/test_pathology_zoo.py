"""The pathology zoo (issue 16's acceptance test): the lab names each planted fault.

Each case runs ``lanes bench run`` on a one-variant experiment against one service of
``tests/diagnose/zoo/`` (each with exactly one planted fault; see each file's docstring) under
real load on loopback, with ``[profile]`` on its one level, and reads the run file's
``diagnosis``. The expected finding must be there; the clean service must give none. The wave
case drives the clean service with a client that sends synchronised waves (``constant``
arrivals from many generator clones started at the same instant, each a ticker in phase with
the others: the field's home-made client of ../shared/background/agent-load-test.txt).

Where a profiler is not permitted here (a ``skipped`` line of the diagnosis names the part a
finding rests on: ``stacks`` for py-spy, ``syscalls`` for perf/strace), the case checks the rest
of the run and is skipped with that line, unless ``LANES_REQUIRE_PROFILERS=1``, where it fails.
Findings that rest on /proc and the client alone (threads, per-core CPU, arrivals) are always
checked, with one exception said in the skip: on a shared host whose other work keeps every
core busy, "others idle" cannot be seen, so ``one_core`` is skipped when the server's CPU did
run on one core but no core was idle. Other findings than the expected one are printed, not
failed (the clean service must have none). Each case takes a few seconds: 1 s of warm-up
(3 s for the waves), 3 s measured.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# each case reads where the server's CPU went, and `one_core` needs the other core idle
pytestmark = pytest.mark.alone

ZOO = Path(__file__).parent / "zoo"
CORPUS = ZOO / "request.jsonl"
RUN_TIMEOUT_S = 90


def one_core_cpu_s() -> float:
    """``one_core.py``'s ``CPU_S`` (thread CPU time per request), read from its source: the
    module imports ``common`` from beside it and cannot be imported from here as it is."""
    tree = ast.parse((ZOO / "one_core.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "CPU_S":
            return float(ast.literal_eval(node.value))
    raise AssertionError("one_core.py has no CPU_S")


@dataclass(frozen=True)
class Case:
    """A service, the load that shows its fault, the finding expected (None: no finding) and
    the profilers that finding rests on."""

    service: str
    rate: int
    expect: str | None
    needs: tuple[str, ...] = ()
    arrival: str = "poisson"
    generators: int = 1
    connections: int = 64
    warmup_s: float = 1.0
    trace: str | None = None
    segment_s: float = 1.0


CASES = {
    "clean": Case("clean.py", 150, None),
    "blocking_loop": Case("blocking_loop.py", 150, "loop_blocked", ("stacks",)),
    "log_lock": Case("log_lock.py", 150, "lock_contention", ("stacks", "syscalls")),
    "thread_pools": Case("thread_pools.py", 40, "threads_excess"),
    "one_core": Case("one_core.py", 110, "core_saturated"),
    # A trace of waves: 50 sends within 20 ms at the top of every second. The lab's segments of
    # 62.5 ms (16 a second; Poisson within each) keep the waves: at 10 ms bins the index of
    # dispersion is about 9 (Poisson about 1). Until 4de1cfd this case planted 10 constant
    # generators in phase; the lab now interleaves constant streams, so they send no waves.
    "waves": Case(
        "clean.py",
        50,
        "arrivals_clumped",
        arrival="trace",
        trace="waves.trace",
        segment_s=0.0625,
    ),
}


def experiment(name: str, case: Case) -> str:
    """The case's experiment file: one variant, one level, profiled."""
    command = [sys.executable, str(ZOO / case.service), "--port", "{port}"]
    trace = (
        f"trace = {json.dumps(str(ZOO / case.trace))}\nsegment_s = {case.segment_s:g}\n"
        if case.trace
        else ""
    )
    return f"""\
name = "zoo-{name}"
[[variant]]
name = "{name}"
command = {json.dumps(command)}
ready_timeout_s = 30

[workload]
mix = [{{ model = "zoo", weight = 1, corpus = {json.dumps(str(CORPUS))} }}]
arrival = "{case.arrival}"
levels = [{case.rate}]
warmup_s = {case.warmup_s:g}
measure_s = 3
repeats = 1
slo_ms = 1000
generators = {case.generators}
connections = {case.connections}
timeout_s = 10
{trace}
[stability]
max_extensions = 0

[profile]
levels = [{case.rate}]
"""


def run_case(name: str, case: Case, tmp_path: Path) -> tuple[dict[str, Any], Path]:
    """Run the case's experiment with ``lanes bench run``; its one run file and the results
    folder."""
    path = tmp_path / f"zoo-{name}.toml"
    path.write_text(experiment(name, case), encoding="utf-8")
    out = tmp_path / "results"
    done = subprocess.run(
        [sys.executable, "-m", "lanes", "bench", "run", str(path), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:] or done.stdout[-3000:]
    doc: dict[str, Any] = json.loads((out / "runs" / name / "L0-r1.json").read_text())
    return doc, out


def describe(diagnosis: dict[str, Any]) -> str:
    """The findings and skipped lines, one a line, for an assertion message."""
    lines = [f"{f['code']}: {f['message']}" for f in diagnosis.get("findings", [])]
    lines += [f"skipped: {s}" for s in diagnosis.get("skipped", [])]
    lines.append(
        "evidence: "
        + json.dumps({k: diagnosis.get(k) for k in ("core_busy", "threads", "dispersion_10ms")})
    )
    lines.append(f"syscalls per request: {json.dumps(diagnosis.get('syscalls_per_request'))}")
    return "\n".join(lines) or "(none)"


def not_permitted(diagnosis: dict[str, Any], parts: tuple[str, ...]) -> list[str]:
    """The skipped lines that concern ``parts`` (``stacks``, ``syscalls``)."""
    return [s for s in diagnosis.get("skipped", []) if s.split(":", 1)[0] in parts]


def hidden_idle_core(diagnosis: dict[str, Any], out: Path) -> str | None:
    """Why "one core saturated while others idle" could not be seen although the fault is
    there, or None: the server's CPU ran on one core, yet every core was busy (work that is
    not the lab's own, since on a quiet host the lab's load and recorders keep the idle core
    near 30 % busy)."""
    busy = diagnosis.get("core_busy") or []
    folder = diagnosis.get("profile")
    if not busy or min(busy) <= 0.5 or not folder:
        return None
    profile = json.loads((out / folder / "profile.json").read_text())
    by_core: dict[str, float] = {}
    for proc in (profile.get("processes") or {}).values():
        for sample in proc["samples"]:
            for core, secs in sample.get("cpu_by_core_s", {}).items():
                by_core[core] = by_core.get(core, 0.0) + secs
    total = sum(by_core.values())
    hot = max(by_core, key=by_core.__getitem__, default=None)
    if hot is None or total <= 0 or by_core[hot] / total < 0.9:
        return None
    return (
        f"{by_core[hot] / total:.0%} of the server's CPU ran on core {hot}, but every core was "
        f"busy (core busy {busy}): other work on this host hides the idle core"
    )


def descheduled_core(diagnosis: dict[str, Any], load: dict[str, Any]) -> str | None:
    """Why "one core saturated" could not be seen although the fault is there, or None.

    Rule: the service's processes all run on core 0 and each request costs them ``CPU_S`` of
    their own thread CPU time (``one_core.py``), so ``achieved_rps x CPU_S`` is the core time
    the service itself used. When that, or the loop thread's on-CPU share that py-spy saw, is
    at least the busy share the finding needs while no core's figure reached it, the host's
    per-core figures lost time: this VM's core was taken from it without the kernel counting
    steal (seen here: the thread on CPU 97-100 %, core 0 busy 73.7-74.9 %, steal 0)."""
    from lanes.diagnose.findings import CORE_BUSY

    busy = diagnosis.get("core_busy") or []
    if not busy or max(busy) >= CORE_BUSY:
        return None
    used = float(load.get("achieved_rps", 0.0)) * one_core_cpu_s()
    loop = next((f for f in diagnosis.get("findings", []) if f["code"] == "loop_saturated"), None)
    share = float(loop["evidence"].get("busy_share", 0.0)) if loop else 0.0
    if used < CORE_BUSY and share < 0.95:
        return None
    seen = f", its loop thread on CPU {share:.0%} of wall time" if loop else ""
    return (
        f"the service used {used:.2f} cores of its own thread CPU on core 0{seen}, but the "
        f"core showed {max(busy):.1%} busy (the rule needs {CORE_BUSY:.0%}): the host took "
        "part of this VM's core without reporting steal"
    )


@pytest.mark.parametrize("name", list(CASES))
def test_the_lab_names_the_planted_fault(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    doc, out = run_case(name, case, tmp_path)
    load = doc["load"]
    assert load["status_codes"].get("200", 0) > 0, load
    diagnosis = doc.get("diagnosis")
    assert diagnosis is not None, "the profiled run has no diagnosis block"
    codes = [f["code"] for f in diagnosis["findings"]]
    print(f"{name}:\n{describe(diagnosis)}")  # shown by pytest on failure
    require = os.environ.get("LANES_REQUIRE_PROFILERS") == "1"
    if require:
        assert not diagnosis["skipped"], describe(diagnosis)
    if case.expect is None:
        assert codes == [], describe(diagnosis)
        return
    if case.expect not in codes:
        missing = not_permitted(diagnosis, case.needs)
        if missing and not require:
            pytest.skip(f"{name}: {case.expect} rests on a profiler not permitted here: {missing}")
        if case.expect == "core_saturated" and (why := hidden_idle_core(diagnosis, out)):
            pytest.skip(f"{name}: shared host: {why}")
        if case.expect == "core_saturated" and (why := descheduled_core(diagnosis, load)):
            pytest.skip(f"{name}: shared host: {why}")
    assert case.expect in codes, describe(diagnosis)
