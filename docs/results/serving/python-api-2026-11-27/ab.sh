#!/bin/bash
# Interleaved A/B: the Python-API model with lanes-py's stacked rule (HEAD) and without (a copy
# of python/ with "stacked": False), the race's capacity search, char_cnn_top1, 2 rounds.
cd /work/main
run() { # $1 label, $2 round, $3 PYTHONPATH
  echo "== $1 round $2 $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  PYTHONPATH=$3 timeout 600 .venv/bin/python bench/serve/peers/run.py race --servers lanes-py --models char_cnn_top1 --repeats 1 --out /tmp/pyab/$1-$2 2>&1 | grep -E "added|capacity|FAIL|pass" | tail -20
}
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then run stacked $r ""; run unstacked $r /tmp/unstacked/python
  else run unstacked $r /tmp/unstacked/python; run stacked $r ""; fi
done
date -u; uptime
