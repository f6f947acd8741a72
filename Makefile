# Thin wrapper over CMake for the README's two commands. `make demo` and `make check` install what is
# missing (Debian packages), configure, build, then run an example or the whole test suite.
BUILD ?= build
PREFIX ?= /usr/local
JOBS ?= 2
PYTHON ?= /usr/bin/python3

.PHONY: all deps configure build demo check bench install clean

all: build

deps:
	@bash .ci/install-deps

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

build: configure
	@cmake --build $(BUILD) -j$(JOBS)

demo: build
	$(BUILD)/bin/pyflow run --python $(PYTHON) examples/alloc_mix.py

check: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

bench: build
	$(PYTHON) bench/run_bench.py --pyflow $(BUILD)/bin/pyflow

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)
