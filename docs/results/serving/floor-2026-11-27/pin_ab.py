"""A/B: lanes serve char_cnn_top1 over REST, race capacity search, executor thread pinned to
core 1 and I/O threads to core 0 (taskset after start) vs unpinned. Interleaved rounds."""
from __future__ import annotations
import json, subprocess, sys, time
from pathlib import Path
sys.path.insert(0, "/work/main/bench/serve/peers")
import run

OUT = Path("/tmp/pin")
MODEL = "char_cnn_top1"
repo = run.repository(OUT, MODEL)
body = run.body_file(OUT, MODEL)
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
records = []

def pin(pid: int) -> dict[str, list[int]]:
    placed: dict[str, list[int]] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        comm = (task / "comm").read_text().strip()
        core = "1" if comm.startswith("lanes-device") else "0" if comm.startswith("lanes-serve-io") else None
        if core is not None:
            subprocess.run(["taskset", "-p", "-c", core, task.name], check=True, capture_output=True)
            placed.setdefault(comm, []).append(int(task.name))
    return placed

for r in range(rounds):
    order = ["plain", "pinned"] if r % 2 == 0 else ["pinned", "plain"]
    for variant in order:
        log = OUT / f"serve-{variant}-{r}.log"
        with run.running("lanes", repo, MODEL, body, log) as pid:
            placed = pin(pid) if variant == "pinned" else {}
            t0 = time.time()
            cap, steps = run.capacity(run.infer_url("lanes", MODEL), body, 6, OUT)
        rec = {"round": r, "variant": variant, "capacity": cap, "placed": placed,
               "started": t0, "steps": [{"rate": s.get("rate"), "p99": s["latency_ms"]["p99"], "pass": s["pass"]} for s in steps]}
        records.append(rec)
        print(f"round {r} {variant:7} capacity {cap:.0f}", flush=True)
        (OUT / "pin_ab.json").write_text(json.dumps(records, indent=1))
