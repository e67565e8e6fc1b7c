# ge-rs: `make demo` and `make test` are the two set-up commands (see README).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip

.PHONY: demo test conformance difftest fuzz venv build codegen check-codegen cargo-test bench-smoke pytest install-check bench lint clean

$(VENV)/.ready: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet "maturin>=1.5,<2" "numpy>=1.22" "pytest>=7" "hypothesis>=6.80" "onnx>=1.23,<1.24" "onnxruntime>=1.17" "setuptools>=70.1" "mypy>=1.18" "cmake>=3.20" "mpich>=4.2" "mpi4py>=4"
	touch $@

venv: $(VENV)/.ready

# Builds the extension (release) into the environment.
build: venv
	$(VENV)/bin/maturin develop --release --quiet

codegen:
	$(PYTHON) python/ge/codegen.py

# The generated stub python/ge/es/all.pyi must match the operator library (the op modules
# themselves are generated on import).
check-codegen:
	$(PYTHON) tools/check_codegen.py

demo: build
	$(PY) examples/quickstart.py

# No incremental cache: a one-off full test build does not reuse it, and it
# would double the debug build's size on disk.
# cmake (from the environment) lets es-capi's test build the C examples through its CMake package.
cargo-test: venv
	CMAKE=$(CURDIR)/$(VENV)/bin/cmake CARGO_INCREMENTAL=0 cargo test --workspace --exclude ge-py

bench-smoke:
	cargo bench -p es-core -p pass-bridge -p ge-runtime -p ge-acl -p ge-onnx -- --test

pytest: build
	$(PY) -m pytest -q tests

# ONNX conformance: every set, counts and failures (`--promote` adds newly passing cases).
conformance: build
	$(PY) tools/onnx_conformance.py --failures

# Differential testing against onnxruntime, the long profile (docs/reliability.md); `make test`
# runs a fixed-seed profile. MINUTES=N sets the duration.
difftest: build
	$(PY) tools/difftest.py --minutes $(or $(MINUTES),10)

# Whole-pipeline fuzzing: mutated ONNX/.ge/.air graphs loaded, compiled and run (docs/reliability.md);
# `make test` replays the kept seeds (tests/reliability/test_seeds.py). MINUTES=N sets the duration.
fuzz: build
	$(PY) tools/fuzz_pipeline.py --minutes $(or $(MINUTES),10)

# `pip install .` into a fresh environment and import it.
install-check:
	PYTHON=$(PYTHON) tools/check_install.sh

test: check-codegen cargo-test bench-smoke pytest install-check

bench: build
	$(PIP) install --quiet "onnx>=1.15" "torch>=2.1" "onnxscript>=0.5" "onnxruntime>=1.17" tract
	$(PY) benches/python/bench_build.py
	$(PY) benches/python/bench_rewrite.py
	$(PY) benches/python/bench_run.py
	$(PY) benches/python/bench_models.py
	$(PY) benches/python/bench_load.py

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

clean:
	rm -rf $(VENV) target
