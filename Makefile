# The two commands of the README's quick start, plus the pieces they use.
#   make demo   the main job: Swish on a built-in image, GPU and CPU side by side
#   make check  the everyday tier, at most 5 minutes from a built tree: the validated Swift suite
#               less its slowest suites (CHECK_SKIP), then the onnx package's backend tests
#   make test   the full tier, what CI runs: the whole suite under Khronos validation, the API
#               reference (docs), the docs' runnable snippets (check-doc-snippets), parity --all,
#               the onnx package's backend tests (Scripts/onnx-conformance), its node tests through
#               `layerkit run` (test-node-conformance), the op differential (test-op-differential),
#               the fuzzer, the C library with the shader checks (test-c), the onnxruntime op library
#               (test-ort), the Python package (test-python), the Triton repository (test-triton),
#               trained models in onnxruntime (test-train), valgrind, then
#               the suite under ASan less Tests/asan-skip.txt (test-asan-core). Both tiers end with a
#               table of where their time went.
#   make test-asan / test-tsan   the whole suite under AddressSanitizer+LeakSanitizer / ThreadSanitizer
#   make soak   10,000 mixed-size dispatches alone in a process: flat objects and RSS
#   make fuzz   every user-fed parser under the seeded fuzzer (SECONDS each, default 30)
#   make valgrind   the demo (both backends) under memcheck: no leak, no error
#   make test-models   the onnx wheel's light models (AlexNet ... VGG-19) with seeded weights, both backends
#               against onnxruntime (builds a venv; ~1.4 GB of models in .build; not in make test: minutes)
#   make test-node-conformance   onnx's 1,884 backend node tests, each through `layerkit run` on both
#               backends (Scripts/node-conformance: a venv and the cases in .build, made once)
#   make test-op-differential   single ops with seeded random attributes/shapes against onnxruntime,
#               both backends (Scripts/op_differential.py; OP_DIFFERENTIAL_SEED=n for another draw)
#   make test-c   the C library as installed (Scripts/test-c-package): ctest, install, a moved prefix,
#               Examples/c through find_package and pkg-config, the library's exports and NEEDED
#   make test-ort   liblayerkit_ort.so (the onnxruntime custom-op library) from Python onnxruntime 1.32
#               against float64 and LayerKit's own CPU result (venv in .build/test-venv; Docs/ONNXRUNTIME.md)
#   make test-python   the Python package: `pip install .` (timed) into a venv kept per requirement list, its unittests run
#               from outside the source tree, `auditwheel show` on the wheel (Docs/PYTHON.md)
#   make test-examples   Examples/ray (Ray Data and Ray Serve, two local workers each) and
#               Examples/triton (config.pbtxt parsed, the model run with liblayerkit_ort.so) in a venv
#               with ray (~1 GB in .build/examples-venv; not in make test)
#   make test-train   models written by `layerkit train` in stock onnxruntime: predictions
#               within 1e-5 of LayerKit's, frozen initializers bit-identical (Scripts/check-training)
#   make test-triton   Examples/triton's check alone, light enough for make test (tritonclient, onnx,
#               onnxruntime in .build/test-venv; the op library from build/cmake)
#   make check-doc-snippets   every shell block of README.md and Docs/ marked `<!-- snippet: run -->`,
#               run as written against the release build (Scripts/check-doc-snippets, Docs/TESTING.md)
#   make docs   the API reference (docc) of LayerKit and LayerKitCore, static sites in .build/docs/ (a stage of make test)
SHELL := /bin/bash
export PATH := /opt/swift/usr/bin:$(PATH)
export XDG_RUNTIME_DIR ?= /tmp/layerkit-xdg-$(shell id -u)

.PHONY: deps test-venv test-op-differential test-node-conformance demo check test test-asan-core test-train test-asan test-tsan soak shader-checks test-c fuzz valgrind bench docs test-models test-ort test-python test-examples test-triton check-doc-snippets

SECONDS ?= 30
FUZZ_SEED ?= 1

deps:
	@Scripts/install-deps
	@mkdir -p $(XDG_RUNTIME_DIR)

# Release builds go through Scripts/swift-release-build (one environment for all
# of them, so they share one build).
demo: deps
	Scripts/swift-release-build --product layerkit
	.build/release/layerkit demo

# Each tier records how long each stage took (Scripts/timed) and prints the table at the end.
TIMES := .build/test-times.tsv
STAGE := Scripts/timed $(TIMES)

# The everyday tier: the suites skipped here are the slowest (whole training runs, the
# CLI's process-per-case suites, the soak), and they run in make test.
CHECK_SKIP := $(shell grep -v '^\#' Tests/check-skip.txt | paste -sd'|')
check: deps
	@Scripts/timed --reset $(TIMES)
	$(STAGE) "swift build --build-tests" swift build --build-tests
	$(STAGE) "swift test (check set)" env LAYERKIT_VALIDATION=1 swift test --skip-build --skip '$(CHECK_SKIP)'
	$(STAGE) "onnx conformance" env LAYERKIT_VALIDATION=1 Scripts/onnx-conformance
	@Scripts/timed --report $(TIMES)

test: deps
	@Scripts/timed --reset $(TIMES)
	$(STAGE) "swift test" env LAYERKIT_VALIDATION=1 swift test
	$(STAGE) "docs" $(MAKE) docs
	$(STAGE) "doc snippets" $(MAKE) check-doc-snippets
	$(STAGE) "parity --all" env LAYERKIT_VALIDATION=1 swift run layerkit parity --all
	$(STAGE) "onnx conformance" env LAYERKIT_VALIDATION=1 Scripts/onnx-conformance
	$(STAGE) "onnx node tests" $(MAKE) test-node-conformance
	$(STAGE) "op differential" $(MAKE) test-op-differential
	$(STAGE) "fuzz (10 s a parser)" $(MAKE) fuzz SECONDS=10
	$(STAGE) "test-c" $(MAKE) test-c
	$(STAGE) "test-ort" $(MAKE) test-ort
	$(STAGE) "test-python" $(MAKE) test-python
	$(STAGE) "test-triton" $(MAKE) test-triton
	$(STAGE) "test-train" $(MAKE) test-train
	$(STAGE) "valgrind" $(MAKE) valgrind
	$(STAGE) "asan (C and unsafe code)" $(MAKE) test-asan-core
	@Scripts/timed --report $(TIMES)

# Sanitizer builds keep their own scratch paths (a sanitized and a plain build
# cannot share one). Suppressions: each entry says why it is not a LayerKit bug.
# allocator_may_return_null (both): a test asks lavapipe for 4 TiB on purpose and
# expects VK_ERROR_OUT_OF_DEVICE_MEMORY; the sanitizers would abort instead of failing
# that malloc.
# Leak checking is off by default here: over the whole suite the exit-time
# report is ~20 MB of allocations by the Khronos validation layer and lavapipe
# that no suppression can name (the loader has unloaded them by then; see
# Scripts/lsan.supp). `make test-asan ASAN_DETECT_LEAKS=1` shows it.
ASAN_DETECT_LEAKS ?= 0
test-asan: deps
	LAYERKIT_VALIDATION=1 ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=$(ASAN_DETECT_LEAKS) \
		LSAN_OPTIONS="suppressions=$(CURDIR)/Scripts/lsan.supp print_suppressions=0" \
		swift test --sanitize=address --scratch-path .build-asan

# make test's ASan stage: the whole suite in test-asan's sanitized build, less the suites
# Tests/asan-skip.txt names (each with why: their time goes to lavapipe, to child
# processes or to repeating what the kept suites run, not to memory code of their own).
# New suites are sanitized unless listed. The whole suite stays one command away (make test-asan).
ASAN_SKIP := $(shell grep -v '^\#' Tests/asan-skip.txt | paste -sd'|')
test-asan-core: deps
	LAYERKIT_VALIDATION=1 ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=$(ASAN_DETECT_LEAKS) \
		LSAN_OPTIONS="suppressions=$(CURDIR)/Scripts/lsan.supp print_suppressions=0" \
		swift test --sanitize=address --scratch-path .build-asan --skip '$(ASAN_SKIP)'

test-tsan: deps
	LAYERKIT_VALIDATION=1 LAYERKIT_CONCURRENCY_RUNS=100 TSAN_OPTIONS="suppressions=$(CURDIR)/Scripts/tsan.supp allocator_may_return_null=1" \
		swift test --sanitize=thread --scratch-path .build-tsan

soak: deps
	LAYERKIT_SOAK_ALONE=1 LAYERKIT_SOAK_DISPATCHES=10000 swift test --filter SoakTests

shader-checks: deps
	cmake -S . -B build/shaders -G Ninja -DLAYERKIT_BUILD_LIBRARY=OFF >/dev/null
	cmake --build build/shaders
	ctest --test-dir build/shaders --output-on-failure

test-c: deps
	Scripts/test-c-package

# Fails on a crash, an input over 1 s of CPU, an error of an unpromised type or a
# resident set over 1 GiB; the input is printed and saved under Fuzz/findings/.
fuzz: deps
	Scripts/swift-release-build --product Fuzz
	.build/release/Fuzz all --seconds $(SECONDS) --seed $(FUZZ_SEED)

# valgrind 3.19 cannot read this toolchain's DWARF 5, so it runs a copy without
# debug info (symbols stay). Scripts/valgrind.supp says why each entry is no bug.
valgrind: deps
	swift build --product layerkit
	strip --strip-debug -o .build/layerkit-valgrind .build/debug/layerkit
	valgrind --error-exitcode=1 --leak-check=full --show-leak-kinds=definite,indirect \
		--errors-for-leak-kinds=definite,indirect --suppressions=Scripts/valgrind.supp \
		.build/layerkit-valgrind demo --output .build/valgrind-demo.npy

bench: deps
	Scripts/swift-release-build --product SwishBench
	.build/release/SwishBench

# The API reference: symbol graphs of LayerKit and LayerKitCore (whose types
# LayerKit re-exports), converted by the toolchain's docc into static sites under
# .build/docs/ (ignored by git), LayerKit's with its catalog (Sources/LayerKit/LayerKit.docc:
# the landing page). dump-symbol-graph reads every module of the package, the test
# modules too, so the debug build with tests comes first (make test's is reused:
# nothing left to compile). Serve a site to read it (Docs/INSTALL.md):
#   python3 -m http.server --directory .build/docs/LayerKit 8000
DOCS_DIR := .build/docs
docs: deps
	swift build --build-tests
	rm -rf $(DOCS_DIR) && mkdir -p $(DOCS_DIR)/symbol-graphs
	swift package dump-symbol-graph --minimum-access-level public >/dev/null
	for module in LayerKit LayerKitCore; do \
		mkdir -p $(DOCS_DIR)/symbol-graphs/$$module && \
		cp .build/*/symbolgraph/$$module.symbols.json .build/*/symbolgraph/$$module@*.symbols.json $(DOCS_DIR)/symbol-graphs/$$module/ 2>/dev/null; \
		catalog=Sources/$$module/$$module.docc; [ -d $$catalog ] || catalog=; \
		docc convert $$catalog --additional-symbol-graph-dir $(DOCS_DIR)/symbol-graphs/$$module \
			--fallback-display-name $$module --fallback-bundle-identifier org.layerkit.$$module \
			--transform-for-static-hosting --output-path $(DOCS_DIR)/$$module || exit 1; \
	done
	@echo "API reference: $(DOCS_DIR)/LayerKit and $(DOCS_DIR)/LayerKitCore (see Docs/INSTALL.md to open them)"

# The docs' runnable shell blocks (`<!-- snippet: run -->` before the fence), each run as
# written in a scratch folder with the release build's layerkit on PATH (Docs/TESTING.md).
check-doc-snippets: deps
	Scripts/swift-release-build --product layerkit
	Scripts/check-doc-snippets

# Whole models (Docs/MODELS.md, "Models people export"): the onnx wheel's nine
# light models get seeded random weights and onnxruntime's outputs
# (Scripts/light_models.py needs onnx, onnxruntime and numpy only, pinned here),
# then `layerkit conformance` runs them on both backends, the GPU held to each
# case's fp16-twin tolerance; a case listed in Tests/Conformance/model-zoo-light.txt
# that fails exits 1. Not in `make test`: ~1.4 GB written and minutes of CPU.
MODELS_VENV := .build/model-zoo/venv
MODELS_DIR := .build/model-zoo/light
test-models: deps
	test -x $(MODELS_VENV)/bin/python || (python3 -m venv $(MODELS_VENV) && \
		$(MODELS_VENV)/bin/pip install -q onnx==1.23.2 onnxruntime==1.32.0 numpy)
	test -f $(MODELS_DIR)/summary.json || $(MODELS_VENV)/bin/python Scripts/light_models.py --out $(MODELS_DIR)
	Scripts/swift-release-build --product layerkit
	.build/release/layerkit conformance $(MODELS_DIR) --backend both --expect Tests/Conformance/model-zoo-light.txt

# One venv for the Python-driven checks of make test (test-ort, test-triton), from
# PyPI, remade only when this list changes.
TEST_VENV := .build/test-venv
TEST_REQUIREMENTS := onnxruntime==1.32.0 onnx==1.23.2 numpy==2.4.6 tritonclient[grpc]==2.73.0
test-venv:
	@if [ "$$(cat $(TEST_VENV)/requirements.txt 2>/dev/null)" != "$(TEST_REQUIREMENTS)" ]; then \
		rm -rf $(TEST_VENV) && python3 -m venv $(TEST_VENV) && \
		$(TEST_VENV)/bin/pip install -q $(TEST_REQUIREMENTS) && \
		echo "$(TEST_REQUIREMENTS)" > $(TEST_VENV)/requirements.txt; \
	fi

# The onnx package's backend node tests (built in memory by onnx 1.23.2, written once into .build)
# through the command line, a process per case and backend, as users run models
# (Scripts/node-conformance; venv in .build/node-tests-venv); a case listed in
# Tests/Conformance/node-expected.txt that fails exits 1 (Docs/CONFORMANCE.md). Without the
# Khronos validation layer, which the Swift suite runs under: loading it in each of the 1,884
# GPU processes doubled the stage's time (Docs/CONFORMANCE.md).
test-node-conformance: deps
	Scripts/node-conformance

# Single ops with seeded random attributes and shapes (extent 1, shrinking axes,
# zero-size tensors) against onnxruntime, both backends, in .build/op-differential:
# a wrong value or a crash fails, a refusal with an error is listed (Docs/TESTING.md).
# OP_DIFFERENTIAL_SEED=n draws another set.
OP_DIFFERENTIAL_SEED ?= 27
test-op-differential: deps test-venv
	swift build --product layerkit
	$(TEST_VENV)/bin/python Scripts/op_differential.py --seed $(OP_DIFFERENTIAL_SEED) \
		--layerkit "$$(swift build --show-bin-path)/layerkit"

# The onnxruntime custom-op library (Docs/ONNXRUNTIME.md): liblayerkit_ort.so in
# build/cmake (onnxruntime 1.21's headers fetched into it at configure), then
# Tests/ORT/test_ort.py in the test venv; LayerKit's own results, to compare
# with, come from liblayerkit.so.1 beside the op library (lk_model_predict).
# Models written by `layerkit train` run in stock onnxruntime: predictions within 1e-5
# of LayerKit's, every frozen initializer bit-identical (Scripts/check-training).
test-train: deps test-venv
	Scripts/swift-release-build --product layerkit
	Scripts/check-training

test-ort: deps test-venv
	cmake -S . -B build/cmake -G Ninja >/dev/null
	cmake --build build/cmake --target layerkit_ort
	$(TEST_VENV)/bin/python Tests/ORT/test_ort.py

# The Python package (pyproject.toml, python/layerkit, Docs/PYTHON.md) as a user
# gets it: `pip install .` (timed; scikit-build-core runs the root CMake, which runs
# swift build; build/python keeps its CMake build, so a second install only relinks)
# into a venv made once per requirement list (as the test venv), the tests run from
# outside the source tree so the installed package is imported, then the wheel itself
# checked by auditwheel.
PYTHON_VENV := .build/python-test-venv
PYTHON_WHEELS := .build/python-wheels
PYTHON_REQUIREMENTS := auditwheel==6.8.2 numpy==2.4.6
test-python: deps
	@if [ "$$(cat $(PYTHON_VENV)/requirements.txt 2>/dev/null)" != "$(PYTHON_REQUIREMENTS)" ]; then \
		rm -rf $(PYTHON_VENV) && python3 -m venv $(PYTHON_VENV) && \
		$(PYTHON_VENV)/bin/pip install -q $(PYTHON_REQUIREMENTS) && \
		echo "$(PYTHON_REQUIREMENTS)" > $(PYTHON_VENV)/requirements.txt; \
	fi
	rm -rf $(PYTHON_WHEELS)
	TIMEFORMAT='pip install . took %R s'; time $(PYTHON_VENV)/bin/pip install -q .
	cd / && LAYERKIT_VALIDATION=1 $(CURDIR)/$(PYTHON_VENV)/bin/python -m unittest discover -s $(CURDIR)/Tests/Python -v
	$(PYTHON_VENV)/bin/pip wheel -q --no-deps . -w $(PYTHON_WHEELS)
	$(PYTHON_VENV)/bin/auditwheel show $(PYTHON_WHEELS)/layerkit-*-py3-none-linux_x86_64.whl

# Examples/triton's model repository checked without Triton (which needs Docker):
# config.pbtxt parsed with tritonclient's model_config_pb2 and held to the model,
# the model run through build/cmake's liblayerkit_ort.so (Examples/triton/README.md).
test-triton: deps test-venv
	cmake -S . -B build/cmake -G Ninja >/dev/null
	cmake --build build/cmake --target layerkit_ort
	$(TEST_VENV)/bin/python Examples/triton/check_config.py --ort-library build/cmake/liblayerkit_ort.so

# The scale-out examples (Docs/SCALING.md) in a venv of their own, made once per
# requirement list (ray[data,serve] is ~1 GB, which is why this is not in make test),
# with the layerkit package installed from this tree each run. The Triton check
# runs the model through the wheel's liblayerkit_ort.so.
EXAMPLES_VENV := .build/examples-venv
EXAMPLES_REQUIREMENTS := ray[data,serve]==2.60.0 tritonclient[grpc]==2.73.0 onnx==1.23.2 onnxruntime==1.32.0 \
	numpy==2.4.6 pillow==13.0.0
test-examples: deps
	@set -e; start=$$(date +%s); \
	if [ "$$(cat $(EXAMPLES_VENV)/requirements.txt 2>/dev/null)" != "$(EXAMPLES_REQUIREMENTS)" ]; then \
		rm -rf $(EXAMPLES_VENV) && python3 -m venv $(EXAMPLES_VENV); \
		TIMEFORMAT='examples venv: pip install took %R s'; time $(EXAMPLES_VENV)/bin/pip install -q $(EXAMPLES_REQUIREMENTS); \
		echo "$(EXAMPLES_REQUIREMENTS)" > $(EXAMPLES_VENV)/requirements.txt; \
	fi; \
	TIMEFORMAT='pip install . (layerkit) took %R s'; time $(EXAMPLES_VENV)/bin/pip install -q --no-deps --force-reinstall .; \
	ort_library=$$($(EXAMPLES_VENV)/bin/python -c 'import layerkit; print(layerkit.ort_library_path())'); \
	TIMEFORMAT='Examples/triton/check_config.py took %R s'; \
	time $(EXAMPLES_VENV)/bin/python Examples/triton/check_config.py --ort-library "$$ort_library"; \
	TIMEFORMAT='Examples/ray/batch_predict.py took %R s'; time $(EXAMPLES_VENV)/bin/python Examples/ray/batch_predict.py; \
	TIMEFORMAT='Examples/ray/serve_classifier.py took %R s'; time $(EXAMPLES_VENV)/bin/python Examples/ray/serve_classifier.py; \
	echo "test-examples took $$(( $$(date +%s) - start )) s"
