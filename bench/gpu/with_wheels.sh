#!/usr/bin/env bash
# Run a command on a GPU host that has Python and PyTorch but no network and no lanes: install
# the wheels in WHEELS (default .whl/: a lanes wheel from `maturin build --release --out .whl`
# and the few it lacks there: orjson, tritonclient and its HTTP dependencies, brotli; see
# docs/results/gpu.md) into /tmp/site, put the working tree's python/ first on the path with
# the wheel's native module beside it, and run the command.
#
#   bench/gpu/with_wheels.sh bench/gpu/check.sh smoke OUT
#   LAB_OUT=/tmp/knee bench/gpu/with_wheels.sh bench/gpu/check.sh lab OUT
set -eu
wheels=${WHEELS:-.whl}
site=${SITE:-/tmp/site}
py=${PYTHON:-python3}
ls "$wheels"/lanes-*.whl > /dev/null  # one clear failure when the lanes wheel is missing
"$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target "$site" "$wheels"/*.whl
cp "$site"/lanes/_core*.so python/lanes/
export PYTHONPATH="$PWD/python:$site${PYTHONPATH:+:$PYTHONPATH}" PATH="$site/bin:$PATH"
export PYTHONUNBUFFERED=1
exec "$@"
