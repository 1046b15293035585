"""Each run's speed: its median in-situ call of a batch of one per model; per level its spread and its correlation with the run's p99 and p50; writes ../speed.json. Run from bench/calibrate."""
import sys, json, statistics
sys.path.insert(0, '.')
from pathlib import Path
from compare import load_runs, others_cores
from tails import batches
R = Path('/tmp/cal8/grid')
runs = load_runs(R)
rows = []
for r in runs:
    rid = r['id'].split('/')[-1]
    bs = batches(json.loads((R / 'runs' / r['variant'] / f'{rid}.trace.json').read_text()))
    med = {}
    for m in ('char_cnn', 'line_rnn_zh', 'line_rnn_en'):
        xs = [b.call for b in bs if b.model == m and b.size == 1]
        med[m] = statistics.median(xs) if xs else float('nan')
    busy = sum(b.done - b.dispatched for b in bs) / (r['measure_s'] * 1000 * 2)
    rows.append((r['variant'], r['offered']['rate_rps'], r['repeat'], med, r['load']['latency_ms']['p50'], r['load']['latency_ms']['p99'], others_cores(r), busy))
json.dump([[v, rate, rep, med, p50, p99, o, busy] for v, rate, rep, med, p50, p99, o, busy in rows], open(Path(__file__).resolve().parent.parent / 'speed.json', 'w'))
def corr(a, b):
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    sa = sum((x - ma) ** 2 for x in a) ** .5; sb = sum((y - mb) ** 2 for y in b) ** .5
    return sum((x - ma) * (y - mb) for x, y in zip(a, b)) / (sa * sb)
for v in ('fifo', 'sjf', 'independent'):
    for rate in (200, 400, 600, 800):
        g = sorted([x for x in rows if x[0] == v and x[1] == rate], key=lambda x: x[2])
        cc = [x[3]['char_cnn'] for x in g]; zh = [x[3]['line_rnn_zh'] for x in g]; en = [x[3]['line_rnn_en'] for x in g]
        p99 = [x[5] for x in g]; p50 = [x[4] for x in g]
        # speed index: mean of calls relative to the level mean
        ok = lambda xs: [x for x in xs if x == x]
        idx = [statistics.fmean([v / statistics.fmean(ok(xs)) for v, xs in ((a, cc), (b, zh), (c, en)) if v == v]) for a, b, c in zip(cc, zh, en)]
        print(f"{v:11s} {rate}: speed idx {min(idx):.2f}-{max(idx):.2f} cv {statistics.pstdev([float(x) for x in idx]):.3f}; corr(idx,p99) {corr(idx, p99):+.2f} corr(idx,p50) {corr(idx, p50):+.2f}")
