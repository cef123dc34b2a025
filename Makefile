# meshc — the README's two entry points, `make demo` and `make test`, and the
# steps they are made of. Both run scripts/bootstrap.sh first, so they work on a
# fresh Debian 12 machine.
#
#   make demo       set up, build, run meshc's main job on the bundled model
#   make test       set up, build, run the lit suites and the unit tests
#   make build      set up and build only
#   make format     clang-format the C++ sources
#   make clean      remove the build folder
#
# Variables: BUILD_DIR (default build), JOBS (default: number of cores),
# CMAKE_FLAGS (extra flags for the CMake configure step).

BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all bootstrap configure build test demo format clean

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

format:
	@git ls-files '*.cpp' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR)
