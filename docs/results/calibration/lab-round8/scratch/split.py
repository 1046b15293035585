"""Each request's latency split at the scheduler's path: the lab's (tails.py's rebuilt inside, each run's p50/p99, mean over the quiet runs) beside the scratch simulator's (LANES_LAT=inside/outside). Run from bench/calibrate."""
import sys, json, os, subprocess, statistics
from pathlib import Path
sys.path.insert(0, '.')
from compare import scenario_rate, DEFAULT_SCENARIO, load_runs, others_cores
from lanes.sim.scenario import Scenario
from tails import read_level, quantile
sc = Scenario.load(DEFAULT_SCENARIO); per = scenario_rate(sc)
rates = [200, 400, 600, 800]; pols = ['fifo', 'sjf', 'independent']
pts = [(p, r / per, s) for p in pols for r in rates for s in (1, 2, 3)]
Path('/tmp/cal8/diag-sc.json').write_text(json.dumps(sc.to_core())); Path('/tmp/cal8/diag-pts.json').write_text(json.dumps(pts))
def simq(mode):
    env = dict(os.environ, LANES_LAT=mode)
    res = json.loads(subprocess.run(['/tmp/simwt/target/release/examples/diag', '/tmp/cal8/diag-sc.json', '/tmp/cal8/diag-pts.json', '40000'], env=env, capture_output=True, text=True, check=True).stdout)
    out = {}
    for x, (p, l, s) in zip(res, pts):
        out.setdefault((p, round(l * per)), []).append(x)
    return {k: {q: statistics.fmean(x['latency_ms'][q] for x in v) for q in ('p50', 'p90', 'p99')} | {(m, q): statistics.fmean(x['services'][m][q] for x in v) for m in sc.service_names for q in ('p50', 'p99')} for k, v in out.items()}
tot, ins, outs = simq('total'), simq('inside'), simq('outside')
R = Path('/tmp/cal8/grid'); runs = [r for r in load_runs(R) if others_cores(r) <= 0.2]
print("| variant | req/s | lab: measured p50 / p99 | lab: inside p50 / p99 | lab: measured - inside, p50 / p99 | sim: total p50 / p99 | sim: inside p50 / p99 | sim: total - inside, p50 / p99 | sim: outside alone p50 / p99 | line_rnn_zh, measured - inside p50 / p99: lab; sim | char_cnn, the same |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
def runq(these, model=None):
    """Mean over runs of each run's measured and inside p50, p99."""
    rows = []
    for r in these:
        lv = read_level(R, [r])
        xs = sorted(x['total'] for m, v in lv.inside.items() if model in (None, m) for x in v)
        ld = r['load'] if model is None else r['load']['models'][model]
        rows.append((ld['latency_ms']['p50'], ld['latency_ms']['p99'], quantile(xs, .5), quantile(xs, .99)))
    return [statistics.fmean(c) for c in zip(*rows)]
for pol in pols:
    for rate in rates:
        these = [r for r in runs if r['variant'] == pol and r['offered']['rate_rps'] == rate]
        m50, m99, i50, i99 = runq(these)
        z = runq(these, 'line_rnn_zh'); c = runq(these, 'char_cnn')
        t, i, o = tot[(pol, rate)], ins[(pol, rate)], outs[(pol, rate)]
        zs = (t[('line_rnn_zh', 'p50')] - i[('line_rnn_zh', 'p50')], t[('line_rnn_zh', 'p99')] - i[('line_rnn_zh', 'p99')])
        cs = (t[('char_cnn', 'p50')] - i[('char_cnn', 'p50')], t[('char_cnn', 'p99')] - i[('char_cnn', 'p99')])
        print(f"| {pol} | {rate} | {m50:.2f} / {m99:.1f} | {i50:.2f} / {i99:.1f} | {m50 - i50:.2f} / {m99 - i99:.1f} | {t['p50']:.2f} / {t['p99']:.1f} | {i['p50']:.2f} / {i['p99']:.1f} | {t['p50'] - i['p50']:.2f} / {t['p99'] - i['p99']:.1f} | {o['p50']:.2f} / {o['p99']:.2f} | {z[0] - z[2]:.2f} / {z[1] - z[3]:.1f}; {zs[0]:.2f} / {zs[1]:.1f} | {c[0] - c[2]:.2f} / {c[1] - c[3]:.1f}; {cs[0]:.2f} / {cs[1]:.1f} |", flush=True)
