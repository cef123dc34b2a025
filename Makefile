# meshc — the README's two entry points, `make demo` and `make test`, and the
# steps they are made of. Both run scripts/bootstrap.sh first, so they work on a
# fresh Debian 12 machine.
#
#   make demo       set up, build, run meshc's main job on the bundled model
#   make test       set up, build, run the lit suites and the unit tests
#   make build      set up and build only
#   make sanitize   the suites again in a build with AddressSanitizer + UBSan
#                   (build-sanitize/; meshc, the runtime and the rank executables)
#   make fuzz       build the front end's libFuzzer harness (clang, ASan + UBSan,
#                   build-fuzz/) and run it for FUZZ_SECONDS (default 600)
#   make format     clang-format the C++ sources
#   make clean      remove the build folder
#
# Variables: BUILD_DIR (default build), JOBS (default: number of cores),
# CMAKE_FLAGS (extra flags for the CMake configure step), SANITIZE_BUILD_DIR
# (default build-sanitize), FUZZ_BUILD_DIR (default build-fuzz), FUZZ_SECONDS.

BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
SANITIZE_BUILD_DIR ?= build-sanitize
FUZZ_BUILD_DIR ?= build-fuzz
FUZZ_SECONDS ?= 600
# Leak reports from inside OpenMPI, OpenBLAS and oneDNN are theirs, not
# meshc's (test/sanitizers/lsan.supp); a report stops the process.
SANITIZER_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  LSAN_OPTIONS=suppressions=$(CURDIR)/test/sanitizers/lsan.supp:print_suppressions=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

.PHONY: all bootstrap configure build test demo sanitize fuzz format clean

all: build

bootstrap:
	@bash scripts/bootstrap.sh

configure: bootstrap
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release \
	  -DMESHC_WERROR=ON $(CMAKE_FLAGS) >/dev/null
	@echo "configure: $(BUILD_DIR)/ ready"

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# Both runners always run, so that both summaries are visible; the target
# fails if either does.
test: build
	@status=0; \
	echo "== lit + FileCheck ($(BUILD_DIR)/test)"; \
	cmake --build $(BUILD_DIR) --target check-meshc-lit || status=1; \
	echo "== GoogleTest (ctest)"; \
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) || status=1; \
	if [ $$status -eq 0 ]; then echo "make test: all suites passed"; \
	else echo "make test: FAILED (see above)"; fi; \
	exit $$status

demo: build
	@bash scripts/demo.sh $(BUILD_DIR)

sanitize:
	@$(SANITIZER_ENV) $(MAKE) --no-print-directory test \
	  BUILD_DIR=$(SANITIZE_BUILD_DIR) \
	  CMAKE_FLAGS="-DMESHC_SANITIZE=address,undefined $(CMAKE_FLAGS)"

# clang's warnings differ from g++'s, which the main build holds to -Werror.
fuzz:
	@bash scripts/bootstrap.sh --fuzz
	@cmake -S . -B $(FUZZ_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
	  -DMESHC_SANITIZE=address,undefined -DMESHC_FUZZ=ON -DMESHC_WERROR=OFF \
	  $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(FUZZ_BUILD_DIR) -j $(JOBS) --target meshc-fuzz-frontend
	@bash scripts/fuzz.sh $(FUZZ_BUILD_DIR) $(FUZZ_SECONDS)

format:
	@git ls-files '*.cpp' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR) $(SANITIZE_BUILD_DIR) $(FUZZ_BUILD_DIR)
