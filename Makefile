# qfx — the README's two commands (`make demo`, `make test`) and the build
# between them. Every target installs missing Debian packages first.

BUILD_DIR ?= build
JOBS ?= $(shell nproc)

.PHONY: all deps configure build test demo clean

all: build

deps:
	@./scripts/install-deps.sh

configure: deps
	@test -f $(BUILD_DIR)/CMakeCache.txt || cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

demo: build
	./examples/demo/run.sh $(BUILD_DIR)/bin/qfx $(BUILD_DIR)/demo

clean:
	rm -rf $(BUILD_DIR)
