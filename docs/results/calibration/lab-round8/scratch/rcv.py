"""The in-situ calls' robust cv per model and batch size (fifo/sjf runs up to 800 req/s, <= 0.2 other cores, each run's cell), beside the scenario's device time without the cores' sharing (and with gpu cv 0); the per-batch cv net of the scenario's own spread. Run from bench/calibrate: rcv.py GRID_WITH_TRACES."""
import sys, json, statistics, random, math
from dataclasses import replace
from pathlib import Path
sys.path.insert(0, '.')
from compare import load_runs, others_cores, DEFAULT_SCENARIO
from tails import batches, scenario_device
from lanes.sim.scenario import Scenario
R = Path(sys.argv[1])
def rcv(xs):
    m = statistics.median(xs); mad = statistics.median(abs(x - m) for x in xs)
    return 1.4826 * mad / m
def pcv(xs):
    xs = sorted(xs); lo, hi = xs[int(.1 * len(xs))], xs[int(.9 * len(xs))]
    return (hi - lo) / 2.563 / statistics.median(xs)
cells = {}
for r in load_runs(R):
    if r['variant'] not in ('fifo', 'sjf') or r['offered']['rate_rps'] > 800 or others_cores(r) > 0.2: continue
    rid = r['id'].split('/')[-1]
    for b in batches(json.loads((R / 'runs' / r['variant'] / f'{rid}.trace.json').read_text())):
        cells.setdefault((r['id'], b.model, b.size), []).append(b.call)
sc = Scenario.load(DEFAULT_SCENARIO); svc = {s.name: s for s in sc.services}
rng = random.Random(1)
sc0 = replace(sc, services=tuple(replace(s, gpu=replace(s.gpu, cv=0.0)) for s in sc.services))
svc0 = {s.name: s for s in sc0.services}
rule = {}
for model in ('char_cnn', 'line_rnn_zh', 'line_rnn_en'):
    for n in range(1, 9):
        cs = [xs for (rid, m, k), xs in cells.items() if m == model and k == n and len(xs) >= 10]
        if len(cs) < 3: continue
        lab_r = statistics.median(rcv(xs) for xs in cs); lab_p = statistics.median(pcv(xs) for xs in cs)
        d = [scenario_device(svc[model], sc, n, rng) for _ in range(20000)]
        d0 = [scenario_device(svc0[model], sc0, n, rng) for _ in range(20000)]
        rule.setdefault(model, []).append(math.sqrt(max(0.0, lab_r ** 2 - rcv(d0) ** 2)))
        print(f"net {rule[model][-1]:.3f}", end=' ')
        print(f"{model} {n}: cells {len(cs)}; lab call robust cv {lab_r:.3f}, p10-p90 cv {lab_p:.3f}; scenario device robust cv {rcv(d):.3f} / {pcv(d):.3f}; with gpu cv 0: {rcv(d0):.3f} / {pcv(d0):.3f}")
print({m: round(statistics.median(v), 3) for m, v in rule.items()})
