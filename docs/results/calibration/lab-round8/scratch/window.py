"""The simulator's p99 as the lab measures it: the mean over 40 windows of a 5 s run's requests against 3 x 40,000 requests (cpu-2core.toml). Run from bench/calibrate."""
import sys, statistics, time
sys.path.insert(0, '.')
from compare import scenario_rate, DEFAULT_SCENARIO
from lanes import sim
from lanes.sim.scenario import Scenario
sc = Scenario.load(DEFAULT_SCENARIO)
per = scenario_rate(sc)
for pol in ("fifo", "independent", "sjf"):
    for rate in (200, 400, 600, 800):
        load = rate / per
        t = time.time()
        long = sim.run(sc, [pol], [load], seeds=[1, 2, 3], requests=40000)
        lp = statistics.mean(p["latency_ms"]["p99"] for p in long.points)
        n = round(rate * 5 / 0.95)
        short = sim.run(sc, [pol], [load], seeds=list(range(1, 41)), requests=n)
        sp = [p["latency_ms"]["p99"] for p in short.points]
        s50 = statistics.mean(p["latency_ms"]["p50"] for p in short.points)
        print(f"{pol} {rate}: p99 3x40000 {lp:.1f}; mean of 40 windows of {n} req: {statistics.mean(sp):.1f} (median {statistics.median(sp):.1f}, sd {statistics.stdev(sp):.1f}); p50 {s50:.2f}  [{time.time()-t:.1f}s]", flush=True)
