"""lanes bench: the load engine's Python face.

- :func:`run` / :func:`start` drive the native engine (crates/lanes-load): open loop from one
  seeded schedule or closed loop, latency from the intended send time, HdrHistograms.
- :class:`Result` is a run's result; :func:`merge` adds results of side-by-side runs exactly.
- :mod:`lanes.bench.corpus` builds request corpora (KServe v2 infer requests).
"""

from lanes.bench.engine import Handle, Progress, run, spec, start
from lanes.bench.result import Result, merge

__all__ = ["Handle", "Progress", "Result", "merge", "run", "spec", "start"]
