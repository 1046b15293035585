"""The diagnosis's real case (docs/results/diagnosis.md): `lanes serve` and LitServe under load,
profiled by the lab.

Both serve the same ONNX `char_cnn` (bench/serve/peers: the same repository, request body,
batching and one intra-op thread per session) and are driven by the same open-loop Poisson load
at a few rates; the lab profiles each at every level in the first repeat (`[profile]`), the
other repeats measure unprofiled, which gives the cost of profiling. Needs the peers' venv
(`bench/serve/peers/run.py setup`). Writes the experiment, the results and the report under
``--out`` and prints the findings.

    .venv/bin/python bench/diagnose/real_case.py --out /tmp/real-case --levels 300,600,900
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "bench" / "serve" / "peers"))

import run as peers  # noqa: E402

READY = {"lanes": "{url}/v2/health/ready", "litserve": "{url}/health"}
"""Each server's readiness URL (LitServe answers /health once its workers are up)."""


def experiment(out: Path, levels: list[float], repeats: int, variants: list[str]) -> str:
    model = "char_cnn"
    repo = peers.repository(out, model)
    body = peers.body_file(out, model).read_text()
    corpus = out / "char_cnn.jsonl"
    line = {
        "method": "POST",
        "path": f"/v2/models/{model}/infer",
        "headers": {"Content-Type": "application/json"},
        "body": body,
    }
    corpus.write_text(json.dumps(line) + "\n")
    parts = [f'name = "real-case"\nbaseline = "{variants[0]}"\n']
    for server in variants:
        argv = peers.server_command(server, repo, model)
        argv = [a if a != str(peers.PORTS[server]) else "{port}" for a in argv]
        parts.append(
            f"[[variant]]\nname = {json.dumps(server)}\ncommand = {json.dumps(argv)}\n"
            f"ready_url = {json.dumps(READY[server])}\nready_timeout_s = 120\n"
        )
    parts.append(
        f"""[workload]
mix = [{{ model = "{model}", weight = 1, corpus = {json.dumps(str(corpus))} }}]
levels = {json.dumps(levels)}
warmup_s = 2
measure_s = 6
repeats = {repeats}
slo_ms = 100
connections = 64
timeout_s = 5

[stability]
max_extensions = 0

[profile]
repeats = [1]
"""
    )
    return "\n".join(parts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--levels", default="300,600,900")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--variants", default="lanes,litserve")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    levels = [float(x) for x in args.levels.split(",")]
    text = experiment(args.out, levels, args.repeats, args.variants.split(","))
    path = args.out / "real-case.toml"
    path.write_text(text)
    lanes = str(ROOT / ".venv" / "bin" / "lanes")
    subprocess.run(
        [lanes, "bench", "run", str(path), "--out", str(args.out / "results")], check=True
    )
    subprocess.run([lanes, "report", str(args.out / "results")], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
