# TGC's two commands: `make run` and `make test`. Each installs what is missing
# (scripts/setup.sh), configures with CMake + Ninja, and builds.
BUILD   ?= build
JOBS    ?= 2
CMAKE_FLAGS ?=

.PHONY: all setup configure build test run bench clean

all: build

setup:
	@bash scripts/setup.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

configure: setup $(BUILD)/build.ninja

build: configure
	ninja -C $(BUILD) -j$(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

run: build
	@bash scripts/run-example.sh $(BUILD)

bench: build
	@TGC_SETUP_BENCH=1 bash scripts/setup.sh
	@bash bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD)
