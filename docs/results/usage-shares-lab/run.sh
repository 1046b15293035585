#!/bin/bash
# issue 15, shares that follow use on CPU devices (2026-11-27)
cd /work/main
echo "start $(date -u +%FT%TZ) $(git rev-parse --short HEAD) load $(cut -d' ' -f1-3 /proc/loadavg)" > /tmp/lab-usage/times.txt
.venv/bin/lanes bench run examples/experiments/ocr-usage-shares.toml --out /tmp/lab-usage/bursts > /tmp/lab-usage/bursts.log 2>&1
echo "bursts done $(date -u +%FT%TZ)" >> /tmp/lab-usage/times.txt
.venv/bin/lanes bench run examples/experiments/ocr-usage-shares-steady.toml --out /tmp/lab-usage/steady > /tmp/lab-usage/steady.log 2>&1
echo "end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/lab-usage/times.txt
