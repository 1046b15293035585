"""From ../speed.json: each run's speed index (each model's median call / the level's mean, averaged over the models) per level, the models' correlation and the index's cv on the quiet runs."""
from pathlib import Path
import json, statistics, math
rows = json.load(open(Path(__file__).resolve().parent.parent / 'speed.json'))
# speed index per run: each model's batch-of-one median call / the mean of that model's over the level's runs, averaged over models
by = {}
for v, rate, rep, med, p50, p99, o, busy in rows:
    by.setdefault((v, rate), []).append((rep, med, p50, p99, o))
allidx = {}
for (v, rate), g in sorted(by.items()):
    ms = {m: statistics.fmean([x[1][m] for x in g if not math.isnan(x[1][m])]) for m in ('char_cnn', 'line_rnn_zh', 'line_rnn_en')}
    for rep, med, p50, p99, o in g:
        vals = [med[m] / ms[m] for m in ms if not math.isnan(med[m])]
        allidx[(v, rate, rep)] = (statistics.fmean(vals), vals, o, p99)
for rate in (200, 400, 600, 800, 1000):
    for v in ('fifo', 'sjf', 'independent'):
        xs = [allidx[(v, rate, r)][0] for r in range(1, 9)]
        print(f"{v} {rate}: " + " ".join(f"{x:.2f}" for x in xs) + f"  cv {statistics.stdev(xs):.3f}")
# per-model agreement: correlation of char_cnn and zh index across runs
import itertools
a = [x[1][0] for x in allidx.values() if len(x[1]) == 3]; b = [x[1][1] for x in allidx.values() if len(x[1]) == 3]; c = [x[1][2] for x in allidx.values() if len(x[1]) == 3]
def corr(a, b):
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    return sum((x - ma) * (y - mb) for x, y in zip(a, b)) / (sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b)) ** .5
print("corr char_cnn/zh", round(corr(a, b), 2), "char_cnn/en", round(corr(a, c), 2), "zh/en", round(corr(b, c), 2))
for rates in ((200, 400), (200, 400, 600, 800)):
    for vs in (('fifo', 'sjf'), ('fifo', 'sjf', 'independent')):
        xs = [x[0] for k, x in allidx.items() if k[1] in rates and k[0] in vs and x[2] <= 0.2]
        print(rates, vs, f"n {len(xs)} cv {statistics.stdev(xs):.3f}", "p10/p50/p90", [round(q, 3) for q in statistics.quantiles(xs, n=10)[::4]])
