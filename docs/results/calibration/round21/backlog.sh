#!/bin/sh
# The twenty-first round, part 7, from the repository root (2026-11-29), under the lab lock:
# experiment-backlog.toml run with lanes serve as it was (tokio's listen backlog, 128; the build
# in .venv before this change) and again after rebuilding it with accept.rs's backlog (1,024);
# the host's TcpExtListenOverflows read before and after each, and gaps.py on each grid.
set -e
ROOT=$PWD; D=$ROOT/docs/results/calibration/round21; O=$D/out; P=$ROOT/.venv/bin/python
export PATH=$ROOT/.venv/bin:$PATH
overflows() { nstat -az TcpExtListenOverflows | awk '/ListenOverflows/ {print $2}'; }
run() {  # name
  rm -rf /tmp/r21/backlog-$1
  a=$(overflows)
  lanes bench run $D/experiment-backlog.toml --variants fifo,independent \
    --out /tmp/r21/backlog-$1 > /dev/null
  b=$(overflows)
  echo "$1: ListenOverflows +$((b - a)) over the grid" >> $O/backlog.txt
  $P $D/gaps.py /tmp/r21/backlog-$1 | tail -1 | sed "s/^/$1: /" >> $O/backlog.txt
}
date -u > $O/backlog.txt
[ "$1" = after ] || run before-128
if [ "$1" != before ]; then
  .venv/bin/maturin develop --release --quiet --extras dev,ray > /dev/null 2>&1
  run after-1024
fi
date -u >> $O/backlog.txt
