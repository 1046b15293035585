"""cpu-2core.toml (optionally other gpu cvs) on the scratch simulator (lanes-sim-diag.patch, built to /tmp/simwt; --one: LANES_BATCH_DRAW=one), counted against the grid by compare.py's rule. Run from bench/calibrate."""
import sys, json, os, subprocess, statistics, argparse
from dataclasses import replace
from pathlib import Path
sys.path.insert(0, '.')
from compare import scenario_rate, DEFAULT_SCENARIO, load_runs, measured, others_cores, KNEE
from lanes.sim.scenario import Scenario
ap = argparse.ArgumentParser()
ap.add_argument('--one', action='store_true')
ap.add_argument('--cv', default='')  # char_cnn,zh,en
ap.add_argument('--max-others', type=float, default=99)
ap.add_argument('--grid', default='/tmp/cal8/grid')
ap.add_argument('--seeds', type=int, default=3)
ap.add_argument('--scenario', default=str(DEFAULT_SCENARIO))
ap.add_argument('--quiet', action='store_true')
a = ap.parse_args()
sc = Scenario.load(a.scenario)
if a.cv:
    cvs = dict(zip(('char_cnn', 'line_rnn_zh', 'line_rnn_en'), map(float, a.cv.split(','))))
    sc = replace(sc, services=tuple(replace(s, gpu=replace(s.gpu, cv=cvs[s.name])) for s in sc.services))
per = scenario_rate(sc)
rates = [200, 400, 600, 800, 1000]
pols = ['fifo', 'independent', 'sjf']
pts = [(p, r / per, s) for p in pols for r in rates for s in range(1, a.seeds + 1)]
Path('/tmp/cal8/diag-sc.json').write_text(json.dumps(sc.to_core()))
Path('/tmp/cal8/diag-pts.json').write_text(json.dumps(pts))
env = dict(os.environ, LANES_BATCH_DRAW='one' if a.one else 'mean')
out = subprocess.run(['/tmp/simwt/target/release/examples/diag', '/tmp/cal8/diag-sc.json', '/tmp/cal8/diag-pts.json', '40000'], env=env, capture_output=True, text=True, check=True).stdout
res = json.loads(out)
runs = [r for r in load_runs(Path(a.grid)) if others_cores(r) <= a.max_others]
meas = measured(runs)
tot = 0; cnt = {}
lines = []
for pol in pols:
    for rate in rates:
        m = meas.get((pol, float(rate)))
        if m is None or m['goodput'] < KNEE * rate: continue
        ps = [x for x, (pp, l, s) in zip(res, pts) if pp == pol and abs(l * per - rate) < 1e-6]
        cells = []
        for k, get in (('p50', lambda p: p['latency_ms']['p50']), ('p99', lambda p: p['latency_ms']['p99']), ('goodput', lambda p: p['goodput_rps'])):
            pr = statistics.fmean(get(p) for p in ps); e = (pr - m[k]) / m[k] * 100; ok = abs(e) <= 15
            tot += ok; cnt[(pol, k)] = cnt.get((pol, k), 0) + ok
            cells.append(f"{k} {m[k]:.1f}/{pr:.1f} {e:+.0f}%{'*' if ok else ''}")
        lines.append(f"{pol} {rate}: " + '; '.join(cells))
if not a.quiet: print('\n'.join(lines))
print(f"one={a.one} cv={a.cv or 'committed'} grid={a.grid} max_others={a.max_others}: {tot} within 15 % ", ' '.join(f"{p}:{k}={v}" for (p, k), v in sorted(cnt.items())))
