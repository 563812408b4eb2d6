# TGC's two commands: `make run` and `make test`. Each installs what is missing
# (scripts/setup.sh), configures with CMake + Ninja, and builds.
BUILD   ?= build
JOBS    ?= 2
CMAKE_FLAGS ?=

# The runtime, frontend and evaluator tests again, built with ASan + UBSan
# in their own tree (TGC_SANITIZE, docs/hardening.md "Sanitizers"): only
# what those tests need, so it adds minutes, not the whole build.
ASAN_BUILD ?= build-asan
ASAN_TESTS  = tg-runtime-tests tg-frontend-tests tg-reference-tests tg-dialect-tests \
              tg-emulator-tests
ASAN_TOOLS  = tg-run tg-eval tgc tg-opt
# allow_user_poisoning=0: LLVM's BumpPtrAllocator, inlined into our
# instrumented code, poisons its slabs, while the uninstrumented libMLIR
# writes into them without unpoisoning: a false use-after-poison.
ASAN_ENV    = ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:print_stacktrace=1:strict_string_checks=1:allow_user_poisoning=0 \
              UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

.PHONY: all setup configure build test test-asan run bench clean

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
	@$(MAKE) --no-print-directory test-asan

$(ASAN_BUILD)/build.ninja:
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release \
	  -DTGC_SANITIZE=address,undefined $(CMAKE_FLAGS)

test-asan: setup $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD) -j$(JOBS) $(ASAN_TESTS) $(ASAN_TOOLS)
	cd $(ASAN_BUILD) && env $(ASAN_ENV) ctest --output-on-failure -j$(JOBS) \
	  -R '^($(shell echo $(ASAN_TESTS) | tr ' ' '|')):|^attack-sample$$'
	lit=$$(sed -n 's/^TGC_LIT:FILEPATH=//p' $(ASAN_BUILD)/CMakeCache.txt) && \
	  env $(ASAN_ENV) $$lit -sv --succinct --param sanitized=1 \
	  $(addprefix $(ASAN_BUILD)/lit-tests/,frontend reference runtime)

run: build
	@bash scripts/run-example.sh $(BUILD)

bench: build
	@TGC_SETUP_BENCH=1 bash scripts/setup.sh
	@bash bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
