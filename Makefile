# lanes — every entry point a developer or CI needs.  `make help` lists them.
#
# Every target sets up what it needs on a fresh clone: a virtual environment in
# .venv, the Python tools and dependencies from PyPI, and the native extension
# (lanes._core) built by maturin from the Rust workspace.

SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(abspath $(BIN)):$(PATH)
# Cargo and the tests share the machine's two cores; no thread explosion.
export CARGO_TERM_COLOR ?= never

RUST_SOURCES := $(shell find crates -name '*.rs' -o -name 'Cargo.toml') Cargo.toml
PY_STAMP := $(VENV)/.tools
EXT_STAMP := $(VENV)/.extension
PROFILERS_STAMP := $(VENV)/.profilers

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

$(PY_STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet 'maturin>=1.7,<2'
	@touch $@

$(EXT_STAMP): $(PY_STAMP) $(RUST_SOURCES) pyproject.toml
	$(BIN)/maturin develop --release --quiet --extras dev,ray
	@touch $@

# perf and strace for lanes diagnose, from Debian's archive when missing (py-spy is a PyPI
# dependency). Best effort: what cannot be installed is said in one line, and this runs again
# on the next make until everything is there.
$(PROFILERS_STAMP): $(PY_STAMP) bench/setup_tools.py
	@$(PY) bench/setup_tools.py --stamp $@

.PHONY: setup
setup: $(EXT_STAMP) $(PROFILERS_STAMP) ## create .venv, install dependencies and profilers, build the extension

.PHONY: demo
demo: setup ## compare independent, fifo and sjf serving the demo zoo on this host (lanes demo, ~10 min)
	$(BIN)/lanes demo

# lanes-onnx opens ONNX Runtime at run time (crates/lanes-onnx/src/library.rs): its tests get the
# library of the onnxruntime wheel in .venv, computed once setup has made it. An ORT_DYLIB_PATH
# already set (a GPU host's onnxruntime-gpu library) wins; none found leaves it empty, and the
# tests fail saying where they looked.
ORT_DYLIB = $(shell $(PY) -c 'import glob, os, onnxruntime; print(sorted(glob.glob(os.path.join(os.path.dirname(onnxruntime.__file__), "capi", "libonnxruntime.so*")))[-1])' 2>/dev/null)
ONNX_FIXTURES := crates/lanes-onnx/tests/fixtures

# The demo zoo's char_cnn and its reference outputs from Python onnxruntime, for lanes-onnx's
# tests and speed check (6 MB: generated, not committed; the small fixtures are committed).
$(ONNX_FIXTURES)/generated/cases.json: $(EXT_STAMP) $(ONNX_FIXTURES)/make_fixtures.py python/lanes/models/zoo.py
	$(PY) $(ONNX_FIXTURES)/make_fixtures.py --zoo $(ONNX_FIXTURES)/generated

.PHONY: onnx-fixtures
onnx-fixtures: $(ONNX_FIXTURES)/generated/cases.json ## write lanes-onnx's generated test models (char_cnn)

.PHONY: test
# setup installs the profilers, so a missing one fails its tests here instead of skipping them
# (LANES_REQUIRE_PROFILERS=0 make test to let them skip).
test: export LANES_REQUIRE_PROFILERS ?= 1
# setup installs the ray extra too: the fleet and cluster tests fail, not skip, without it.
test: export LANES_REQUIRE_RAY ?= 1
test: export ORT_DYLIB_PATH ?= $(ORT_DYLIB)
# pytest's workers for the tests not marked `alone` (0: all in one process, one after another).
TEST_WORKERS ?= 2
test: setup lint onnx-fixtures ## every test and lint: cargo test, pytest (tests/ and the bench kits' checks), clippy, fmt, ruff, stubtest
	@# lanes-py is a cdylib with no Rust tests: pytest exercises it through the built module
	@# (its test binary would also need libpython to link, absent on a bare Debian).
	cargo test --workspace --exclude lanes-py --quiet
	@# pytest in two parts: the tests that do not time this host on TEST_WORKERS processes
	@# (pytest-xdist; one of them starts the Ray clusters), then those marked `alone` (they time
	@# this host or need a core idle) one after another, with the host to themselves.
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup -m "not alone" --durations=15
	$(PY) -m pytest -q -m alone --durations=5
	@# the benchmark kits' own checks, one run each (both files are named test_kit.py)
	$(PY) -m pytest -q bench/load/test_kit.py
	$(PY) -m pytest -q bench/serve/peers/test_kit.py

.PHONY: lint
lint: setup ## cargo fmt --check, clippy -D warnings, ruff (python, tests, bench), mypy --strict, stubtest of lanes._core
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --quiet -- -D warnings
	$(BIN)/ruff check python tests bench
	$(BIN)/ruff format --check python tests bench
	$(PY) -m mypy
	$(PY) -m mypy.stubtest lanes._core

.PHONY: fmt
fmt: setup ## format Rust and Python sources in place
	cargo fmt --all
	$(BIN)/ruff format python tests
	$(BIN)/ruff check --fix python tests

.PHONY: bench-onnx
bench-onnx: onnx-fixtures ## lanes-onnx vs Python onnxruntime: char_cnn, batch 16, 1 thread, interleaved (~1 min)
	cargo build --release --quiet -p lanes-onnx --example char_cnn_speed
	ORT_DYLIB_PATH="$${ORT_DYLIB_PATH:-$(ORT_DYLIB)}" $(PY) bench/serve/onnx_native.py \
		--example "$${CARGO_TARGET_DIR:-target}/release/examples/char_cnn_speed" \
		--repeats 10 --iters 200 --out docs/results/serving/onnx-native.json

.PHONY: bench
bench: setup ## benchmarks: policy dispatch latency, a call's clocks, simulator speed, zoo model costs (figures for docs/results)
	cargo bench -p lanes-policy --bench dispatch
	cargo bench -p lanes-server --bench call_clocks
	cargo bench -p lanes-sim --bench speed
	$(PY) bench/serve/zoo_cost.py

.PHONY: bench-load
bench-load: setup ## load-engine benchmarks vs wrk and nginx on loopback (bench/load; installs nginx and wrk)
	$(PY) bench/load/run.py all

.PHONY: bench-serve
bench-serve: setup ## lanes serve vs LitServe and Ray Serve, same ONNX models (bench/serve/peers; ~22 min, own venv)
	$(PY) bench/serve/peers/run.py all

.PHONY: bench-probe
bench-probe: setup ## SYN prober: 10,000 loopback targets for 60 s, and a forced-small buffer (bench/probe; needs CAP_NET_RAW)
	$(PY) bench/probe/run.py all --seconds 60

.PHONY: bench-arbiter
bench-arbiter: setup ## lanes arbiter on one core: cycles/s at 64 clients, grant latency; two lanes serve sharing sim:2 (bench/arbiter; needs taskset)
	$(PY) bench/arbiter/run.py --repeats 3 --seconds 10
	$(PY) bench/arbiter/serve_pair.py --repeats 5 --seconds 15

.PHONY: clean
clean: ## remove build outputs and the virtual environment
	cargo clean
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache
