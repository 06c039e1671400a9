# topocoll: `make build`, `make test`, `make demo`.  Each installs what it
# needs on a fresh Debian machine and is safe to run twice.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
BUILD := build
APT_PACKAGES := build-essential cmake ninja-build pkg-config libyaml-dev python3 python3-venv python3-dev \
	libopenmpi-dev openmpi-bin libmpich-dev mpich python3-mpi4py libsimgrid-dev \
	iproute2 ethtool util-linux
PYTHON ?= python3

.PHONY: all build deps test test-c test-py demo bench clean

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

test: build
	cd $(BUILD) && ctest --output-on-failure
	$(VENV)/bin/pytest -q tests

demo: build
	$(VENV)/bin/topocoll demo

bench: build
	$(PY) benchmarks/plan_scaling.py

clean:
	rm -rf $(BUILD) $(VENV) src/*.egg-info
