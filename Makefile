# Thin wrapper over CMake for the README's two commands. `make demo` and `make check` install what is
# missing (Debian packages), configure, build, then run an example or the whole test suite.
BUILD ?= build
PREFIX ?= /usr/local
JOBS ?= 2
PYTHON ?= /usr/bin/python3

.PHONY: all deps configure build demo check check-sanitize bench install clean

all: build

deps:
	@bash .ci/install-deps

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

build: configure
	@cmake --build $(BUILD) -j$(JOBS)

demo: build
	$(BUILD)/bin/pyflow run --python $(PYTHON) examples/alloc_mix.py

# A failing test runs once more before it fails the suite: many cases check sampled estimates against
# ground truth on a loaded 2-core machine, where a tolerance is exceeded now and then by chance. A fault
# that repeats still fails; every retry shows in the log as a failed attempt.
check: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS) --repeat until-pass:2
	@$(MAKE) --no-print-directory check-sanitize

# The unit tests again, built with AddressSanitizer and UndefinedBehaviorSanitizer.
check-sanitize: deps
	@cmake -S . -B $(BUILD)-sanitize -DCMAKE_BUILD_TYPE=Debug -DPYFLOW_SANITIZE=ON >/dev/null
	@cmake --build $(BUILD)-sanitize -j$(JOBS)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    ctest --test-dir $(BUILD)-sanitize --output-on-failure -j$(JOBS) -L unit

# The peers compared against: Scalene and heaptrack from Debian (tracemalloc comes with Python).
BENCH_PEERS = python3-scalene heaptrack
bench: build
	@dpkg-query -W $(BENCH_PEERS) >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && apt-get install -y -qq $(BENCH_PEERS) >/dev/null || sudo apt-get install -y -qq $(BENCH_PEERS) >/dev/null; } || true
	$(PYTHON) bench/run_bench.py --pyflow $(BUILD)/bin/pyflow --all --runs 3 --readme README.md

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)
