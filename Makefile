# The two commands of the README: `make demo` and `make test`. Each sets
# itself up from nothing but the toolchains (Python 3.11, Rust stable).
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
PIP   := $(VENV)/bin/pip
STAMP := $(VENV)/.deps-stamp

.PHONY: demo test bench build setup cargo-test pytest test-deps clean golden golden-accept

$(STAMP): pyproject.toml Makefile
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "maturin>=1.7,<2" "pydantic>=2.6" "pyyaml>=6" "polars>=1.0" "numpy>=1.26" "matplotlib>=3.8" "rich>=13" "duckdb>=1.1" "pyarrow>=18" "dask[distributed]>=2024.1" "pyroute2>=0.7" "pytest>=8" "pytest-xdist>=3.5" "selenium>=4.10" "hypothesis>=6" "fastapi>=0.110" "uvicorn>=0.29" "uvloop>=0.19" "httptools>=0.6" "orjson>=3.9" "sqlalchemy>=2" "alembic>=1.13" "psycopg[binary]>=3.1" "pydantic-settings>=2.2" "httpx>=0.27" "ruff>=0.6"
	touch $(STAMP)

setup: $(STAMP)

# Release build of the engine, installed into the venv in place (editable),
# and of the circuit emulator (target/release/alphaqos-emu, `alphaqos emulate`).
# Every release build takes $(RELEASE_RUSTFLAGS): the engine's profile
# (below) when there is one, so that all of them share one set of flags and
# cargo never rebuilds one build's crates for another.
build: setup pgo
	. $(VENV)/bin/activate && RUSTFLAGS="$(RELEASE_RUSTFLAGS)" maturin develop --release -q
	RUSTFLAGS="$(RELEASE_RUSTFLAGS)" cargo build --release -p alphaqos-emu -p alphaqos-xfer -q

# Profile-guided optimisation of the engine (issue 25; benches/pgo.py):
# an instrumented build of the engine's runner (its own target directory)
# runs the bench cases in benches/pgo/, Debian's llvm-profdata-19 merges
# what they counted, and every release build then optimises with it: about
# 11.5 % fewer instructions on the bench cases, the same results. Remade when
# the engine's sources or the training runs change. Without llvm-profdata
# (not root, no apt, a profile format it cannot read) the build goes on
# without it, saying so. PGO=0 turns it off.
PGO          ?= 1
PGO_DIR      := target/pgo
# One line: the path of the merged profile, engine-HASH.profdata (below).
PGO_PROFILE  := $(PGO_DIR)/profile
PGO_TRAINING := $(sort $(wildcard benches/pgo/*.json))
ENGINE_SRC   := $(shell find crates/alphaqos-sim/src crates/alphaqos-sim/examples -name '*.rs') crates/alphaqos-sim/Cargo.toml Cargo.toml Cargo.lock
PROFDATA     := llvm-profdata-19
# The profile is used under a name that carries its hash (engine-HASH.profdata):
# a new profile changes the flags, so cargo rebuilds what was built with the
# old one (it does not watch the file itself).
RELEASE_RUSTFLAGS = $$(if [ "$(PGO)" = 1 ] && [ -s $(PGO_PROFILE) ]; then echo "-Cprofile-use=$$(cat $(PGO_PROFILE)) -Cllvm-args=-no-pgo-warn-mismatch"; fi)
.PHONY: pgo pgo-deps
pgo: pgo-deps
	@if [ "$(PGO)" != 1 ]; then echo "note: PGO=0: the engine is built without its profile"; \
	elif ! command -v $(PROFDATA) >/dev/null; then echo "note: $(PROFDATA) (Debian: llvm-19) not found: the engine is built without profile-guided optimisation"; rm -f $(PGO_PROFILE) $(PGO_DIR)/engine-*.profdata; \
	else $(MAKE) --no-print-directory $(PGO_PROFILE) || { echo "note: the engine's profile could not be made (above): built without it"; rm -f $(PGO_PROFILE) $(PGO_DIR)/engine-*.profdata; }; fi
pgo-deps:
	@if [ "$(PGO)" = 1 ] && ! command -v $(PROFDATA) >/dev/null && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing llvm-19 (Debian) for llvm-profdata-19"; \
		{ apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends llvm-19; } || true; \
	fi
# The engine's example runner (benches/instructions.py, benches/speed_ab.py),
# built as the release builds are.
.PHONY: run-config
run-config: pgo
	RUSTFLAGS="$(RELEASE_RUSTFLAGS)" cargo build --release -q -p alphaqos-sim --example run_config
$(PGO_PROFILE): $(ENGINE_SRC) $(PGO_TRAINING)
	@echo "profile-guided optimisation: an instrumented engine runs $(words $(PGO_TRAINING)) training configurations (benches/pgo/: the bench cases, the bundled scenarios)"
	@rm -rf $(PGO_DIR)/raw $@
	RUSTFLAGS="-Cprofile-generate=$(CURDIR)/$(PGO_DIR)/raw" cargo build --release -q -p alphaqos-sim --example run_config --target-dir $(PGO_DIR)/build
	@for f in $(PGO_TRAINING); do $(PGO_DIR)/build/release/examples/run_config $$f >/dev/null || exit 1; done
	$(PROFDATA) merge -o $(PGO_DIR)/merged.part $(PGO_DIR)/raw
	@rm -f $(PGO_DIR)/engine-*.profdata && p=$(CURDIR)/$(PGO_DIR)/engine-$$(sha256sum $(PGO_DIR)/merged.part | cut -c1-16).profdata && \
		mv $(PGO_DIR)/merged.part $$p && echo $$p > $@

# The first document's experiment 1: one shared FIFO, then the alpha flow in
# a queue of its own (compare the ping RTT in the two summaries and plots);
# then all three of its experiments, shortened, reported beside its tables.
demo: build
	$(VENV)/bin/alphaqos run scenarios/yan2013/exp1-1queue.yaml
	$(VENV)/bin/alphaqos run scenarios/yan2013/exp1-2queues.yaml
	@# Status 1 means a finding of the document did not come out of the model;
	@# the report says which. Anything else is a failure of the demo.
	$(VENV)/bin/alphaqos reproduce yan2013 --quick; test $$? -le 1
	@# A flows tour: a synthetic week of flow records from four exporters,
	@# alpha-flow identification into a DuckDB prefix table, the backtest, and
	@# the router and host configuration (Junos, Cisco, tc, nftables) it yields.
	@tour=runs/flows-tour-$$(date -u +%Y%m%dT%H%M%SZ) && set -x && \
	$(VENV)/bin/alphaqos flows synth --days 7 --out $$tour/store && \
	$(VENV)/bin/alphaqos flows identify $$tour/store --db $$tour/prefixes.duckdb && \
	$(VENV)/bin/alphaqos flows backtest $$tour/store --out $$tour/backtest && \
	$(VENV)/bin/alphaqos provision --prefixes $$tour/prefixes.duckdb --out $$tour/config

cargo-test:
	cargo test --profile ci-test -p alphaqos-sim -p alphaqos-emu -p alphaqos-xfer -q

# Two passes: the tests that measure real time or make network namespaces
# run alone (marked `serial` in tests/conftest.py), the rest on two workers,
# a file's tests on one worker (its module fixtures, e.g. a reproduction, run once).
# Both passes run even when the first fails; the status is the worse one.
pytest: build test-deps
	status=0; \
	$(VENV)/bin/pytest -q -n 2 --dist loadfile -m "not serial" || status=$$?; \
	$(VENV)/bin/pytest -q -m serial || status=$$?; \
	exit $$status

# What the tests need beyond the pip line, installed once before pytest and
# only when missing (tests install nothing; a test whose tool is missing
# fails naming this target). Debian: chromium and chromium-driver for the
# circuits web page's browser test; postgresql for the circuits service's
# API suite (a throw-away cluster per test session); tcpdump, iperf3 and
# iputils-ping for the emulator, tap and kernel cross-check tests; iproute2
# and softflowd for the flow exporter test; nftables for the provisioned
# rule sets; ns2 (ns-2.35, a 2.5 MB package) for the ns-2 cross-check's
# small case. PyPI: pyspark (not a dependency of alphaqos) for flows.spark.
DEBIAN_TEST_PACKAGES := chromium chromium-driver postgresql tcpdump iperf3 iputils-ping iproute2 softflowd nftables ns2
test-deps: setup
	@missing=$$(for p in $(DEBIAN_TEST_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing $$missing"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi
	@$(PY) -c "import pyspark" 2>/dev/null || { echo "installing pyspark"; $(PIP) install -q "pyspark==4.*"; }

test: build test-deps cargo-test pytest


# Golden summaries (tests/golden, checked by tests/test_golden.py): `golden`
# runs every bundled scenario and bench case and prints what moved;
# `golden-accept` writes the new results (say why in the commit).
golden: build
	$(PY) -m alphaqos.golden

golden-accept: build
	$(PY) -m alphaqos.golden --accept

bench: build
	$(PY) benches/run.py
	@command -v valgrind >/dev/null || { echo "installing valgrind (Debian) for the instruction count"; apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends valgrind; } || true
	$(PY) benches/instructions.py reference manyflows
	$(PY) benches/yan2013_exp2.py
	$(PY) benches/flows_identify.py
	$(PY) benches/flows_decode.py --realtime
	$(PY) benches/circuits.py
	$(PY) benches/kernel_crosscheck.py --out runs/kernel-crosscheck --unpaced --repeat 3
	$(PY) benches/validate_many.py --workloads 10000 --flows 10000
	$(PY) benches/scaling.py --realtime --plot docs/img --json runs/scaling.json
	$(PY) benches/transfer.py

clean:
	rm -rf $(VENV) target runs

# The base flow's congestion control in BPF, alphaqos_base (docs/transfer-bpf.md):
# target/bpf/alphaqos_base.bpf.o, compiled with Debian's clang against a
# vmlinux.h dumped from the running kernel's BTF. Part of `make build` where
# clang, bpftool and libbpf's headers are present (a note otherwise, and the
# tests that need it skip saying so); `make test` installs them first. The
# crate's helper binary (target/release/alphaqos-bpfcc) is built with it.
BPF_OBJ := target/bpf/alphaqos_base.bpf.o
BPF_DEBIAN_PACKAGES := clang libbpf-dev bpftool
.PHONY: bpf bpf-deps bpfcc
build: bpf bpfcc
pytest: bpf-deps
bpfcc: pgo
	RUSTFLAGS="$(RELEASE_RUSTFLAGS)" cargo build --release -p alphaqos-bpfcc -q
bpf:
	@if command -v clang >/dev/null && command -v bpftool >/dev/null && [ -e /usr/include/bpf/bpf_helpers.h ] && [ -r /sys/kernel/btf/vmlinux ]; then \
		$(MAKE) --no-print-directory $(BPF_OBJ); \
	else \
		echo "note: alphaqos_base (BPF) not built: needs clang, bpftool, libbpf-dev ($(BPF_DEBIAN_PACKAGES)) and /sys/kernel/btf/vmlinux; transfers fall back to pacing alone"; \
	fi
$(BPF_OBJ): bpf/alphaqos_base.bpf.c bpf/alphaqos_base.h
	@mkdir -p target/bpf
	bpftool btf dump file /sys/kernel/btf/vmlinux format c > target/bpf/vmlinux.h.tmp && mv target/bpf/vmlinux.h.tmp target/bpf/vmlinux.h
	clang -g -O2 -Wall -target bpf -D__TARGET_ARCH_x86 -I target/bpf -I bpf -c bpf/alphaqos_base.bpf.c -o $@.tmp && mv $@.tmp $@
bpf-deps:
	@missing=$$(for p in $(BPF_DEBIAN_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing $$missing"; \
		(apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing) \
			|| echo "note: could not install $$missing: alphaqos_base (BPF) is not built and its tests skip"; \
	fi
	@$(MAKE) --no-print-directory bpf
cargo-test: cargo-test-bpfcc
.PHONY: cargo-test-bpfcc
cargo-test-bpfcc:
	cargo test --profile ci-test -p alphaqos-bpfcc -q
