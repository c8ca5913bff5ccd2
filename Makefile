# qfx — the README's two commands (`make demo`, `make test`) and the build
# between them. Every target installs missing Debian packages first.

BUILD_DIR ?= build
JOBS ?= $(shell nproc)

SANITIZE_DIR ?= build-sanitize
# The tests the sanitizer build runs (ctest adds the fixtures they need).
SANITIZE_TESTS ?= ^(unit|cli|cli_errors|cli_outputs|campaign)$$

FUZZ_DIR ?= build-fuzz
# make fuzz: seconds each target runs; FUZZ_TARGETS: a subset (default all)
SECONDS ?= 60
FUZZ_TARGETS ?=

.PHONY: all deps configure build test test-pt2 sanitize-build test-sanitize fuzz fuzz-merge demo clean

all: build

deps:
	@./scripts/install-deps.sh

configure: deps
	@test -f $(BUILD_DIR)/CMakeCache.txt || cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

# The PyTorch 2 door against PyTorch 2 itself (docs/pt2.md), apart from `make test`: the venv of
# scripts/install-pt2.sh (PyPI, about 2.8 GB to download, 4.8 GB installed), the coverage run (torchvision,
# transformers and other models exported by torch.export, read by qfx, checked against ep.module() and
# quantized: the table of docs/pt2.md, each row as tests/pt2/coverage_expected.json says) and the README's
# Python example.
PT2_VENV ?= /opt/qfx-pt2
test-pt2: build
	python=$$(./scripts/install-pt2.sh $(PT2_VENV)) && \
	  $$python tests/pt2/coverage.py $(BUILD_DIR)/bin/qfx $(BUILD_DIR)/pt2-coverage --check tests/pt2/coverage_expected.json && \
	  bash tests/cli/readme_test.sh $(BUILD_DIR)/bin/qfx $(BUILD_DIR)/bin/api_tour $(CURDIR) /usr/bin/python3 $$python

# The unit and CLI tests on a build with AddressSanitizer (LeakSanitizer
# included) and UndefinedBehaviorSanitizer, -O1; any report fails the test.
# They read the oracle fixtures `make test` made in $(BUILD_DIR).
sanitize-build: deps
	@test -f $(SANITIZE_DIR)/CMakeCache.txt || cmake -S . -B $(SANITIZE_DIR) -DCMAKE_BUILD_TYPE=None \
	  -DCMAKE_CXX_FLAGS=-O1 -DQFX_SANITIZE=address,undefined -DQFX_TCMALLOC=OFF -DQFX_BUILD_BENCH=OFF \
	  -DQFX_FIXTURES=$(CURDIR)/$(BUILD_DIR)/fixtures
	cmake --build $(SANITIZE_DIR) -j $(JOBS) --target qfx_tests qfx-cli

test-sanitize: sanitize-build
	cd $(SANITIZE_DIR) && ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitize/lsan.supp:print_suppressions=0 \
	  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=$(CURDIR)/tests/sanitize/ubsan.supp ctest --output-on-failure -j $(JOBS) -R '$(SANITIZE_TESTS)'

# The libFuzzer targets of tests/fuzz, built by clang with ASan and UBSan,
# each run SECONDS (JOBS at once); crashes land in $(FUZZ_DIR)/fuzz/artifacts.
fuzz: deps
	@test -f $(FUZZ_DIR)/CMakeCache.txt || CXX=clang++-14 cmake -S . -B $(FUZZ_DIR) -DCMAKE_BUILD_TYPE=None \
	  -DCMAKE_CXX_FLAGS="-O1 -g" -DQFX_SANITIZE=fuzzer-no-link,address,undefined -DQFX_FUZZ=ON \
	  -DQFX_TCMALLOC=OFF -DQFX_BUILD_BENCH=OFF -DQFX_BUILD_TESTS=OFF
	cmake --build $(FUZZ_DIR) -j $(JOBS) --target fuzz_targets
	./scripts/fuzz.sh run $(FUZZ_DIR) $(SECONDS) $(JOBS) $(FUZZ_TARGETS)

# What the fuzz runs found, minimized into the committed corpora (tests/fuzz/corpus).
fuzz-merge:
	./scripts/fuzz.sh merge $(FUZZ_DIR) $(FUZZ_TARGETS)

demo: build
	./examples/demo/run.sh $(BUILD_DIR)/bin/qfx $(BUILD_DIR)/demo

clean:
	rm -rf $(BUILD_DIR)
