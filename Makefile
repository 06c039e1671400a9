# topocoll: `make build`, `make test`, `make demo`.  Each installs what it
# needs on a fresh Debian machine and is safe to run twice.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
BUILD := build
APT_PACKAGES := build-essential cmake ninja-build pkg-config libyaml-dev python3 python3-venv python3-dev \
	libopenmpi-dev openmpi-bin libmpich-dev mpich python3-mpi4py libsimgrid-dev libns3-dev \
	iproute2 ethtool util-linux clang libclang-rt-14-dev llvm
PYTHON ?= python3

.PHONY: all build deps test test-c test-san test-py fuzz fuzz-build fuzz-coverage demo bench clean

all: build

# Debian packages, installed only when one is missing (needs root, as CI is).
deps: $(BUILD)/.deps-ok
$(BUILD)/.deps-ok: Makefile
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:" $$missing; \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi
	@mkdir -p $(BUILD) && touch $@

$(VENV)/.ok: pyproject.toml | deps
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@touch $@

build: deps $(VENV)/.ok
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_INSTALL_PREFIX=$(abspath $(VENV)) >/dev/null
	cmake --build $(BUILD)
	cmake --install $(BUILD) >/dev/null
	@$(VENV)/bin/topocoll --version

test: build test-san
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(FUZZ_TEST_SECONDS) FUZZ_SEED=1
	cd $(BUILD) && ctest --output-on-failure
	@# two at a time, then the tests that launch MPI jobs or the emulated cluster
	@# (marked mpi: they take both cores) one at a time; both parts always run
	$(VENV)/bin/pytest -q -n 2 -m "not mpi" --durations=10 tests; a=$$?; \
	$(VENV)/bin/pytest -q -m mpi --durations=10 tests; b=$$?; \
	exit $$(( a || b ))

# The C unit tests and a small MPI integrity run, built with AddressSanitizer
# and UndefinedBehaviorSanitizer (any report fails them).
SAN_BUILD := build-san
C_TESTS := $(basename $(notdir $(wildcard core/tests/test_*.c)))
test-san: deps
	cmake -S . -B $(SAN_BUILD) -G Ninja -DTOPOCOLL_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build $(SAN_BUILD) --target topocoll $(C_TESTS) topocoll_pmpi alltoall_check
	cd $(SAN_BUILD) && ctest --output-on-failure

# libFuzzer over every reader of the core (core/fuzz/fuzz_parsers.c), with
# ASan and UBSan: `make fuzz FUZZ_SECONDS=600`.  New inputs go to
# build/fuzz/new-corpus; the kept corpus is core/fuzz/corpus.  A finding
# leaves its input as build/fuzz/crash-* and fails.  `make test` runs it with
# a fixed seed (the same inputs every time); FUZZ_SEED=0 draws one.
FUZZ_SECONDS ?= 60
FUZZ_TEST_SECONDS ?= 30
FUZZ_SEED ?= 0
FUZZ := $(BUILD)/fuzz/fuzz_parsers
FUZZ_SOURCES := $(wildcard core/src/*.c) core/fuzz/fuzz_parsers.c
$(FUZZ): $(FUZZ_SOURCES) $(wildcard core/src/*.h core/src/*.def core/include/topocoll/*.h) | deps
	@mkdir -p $(dir $@)
	clang -g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -Icore/include -Icore/src $(FUZZ_SOURCES) $$(pkg-config --cflags --libs yaml-0.1) -lm -o $@
fuzz-build: $(FUZZ)
fuzz: $(FUZZ)
	@mkdir -p $(BUILD)/fuzz/new-corpus
	cd $(BUILD)/fuzz && ASAN_OPTIONS=detect_leaks=1 ./fuzz_parsers -max_total_time=$(FUZZ_SECONDS) -seed=$(FUZZ_SEED) -timeout=10 \
	  -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 new-corpus $(abspath core/fuzz/corpus)

# Line coverage of core/src by the kept corpus and what the last runs found.
fuzz-coverage: deps
	@mkdir -p $(BUILD)/fuzz
	clang -O1 -std=gnu11 -fprofile-instr-generate -fcoverage-mapping -fsanitize=fuzzer -Icore/include -Icore/src \
	  $(FUZZ_SOURCES) $$(pkg-config --cflags --libs yaml-0.1) -lm -o $(BUILD)/fuzz/fuzz_coverage
	cd $(BUILD)/fuzz && LLVM_PROFILE_FILE=cov.profraw ./fuzz_coverage -runs=0 new-corpus $(abspath core/fuzz/corpus) >/dev/null 2>&1
	cd $(BUILD)/fuzz && llvm-profdata merge -sparse cov.profraw -o cov.profdata && \
	  llvm-cov report ./fuzz_coverage -instr-profile=cov.profdata $(abspath core/src) | tail -n 40

demo: build
	$(VENV)/bin/topocoll demo

bench: build
	$(PY) benchmarks/plan_scaling.py
	$(PY) benchmarks/rank_planning.py --whole-up-to 1024
	$(PY) benchmarks/alltoallv_planning.py
	$(PY) benchmarks/capacitated_planning.py

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(VENV) src/*.egg-info
