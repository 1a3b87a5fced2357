# The two commands of the README's quick start, plus the pieces they use.
#   make demo   the main job: Swish on a built-in image, GPU and CPU side by side
#   make test   the test suite under Khronos validation, the shader checks, then the fuzzer
#   make fuzz   every user-fed parser under the seeded fuzzer (SECONDS each, default 30)
SHELL := /bin/bash
export PATH := /opt/swift/usr/bin:$(PATH)
export XDG_RUNTIME_DIR ?= /tmp/layerkit-xdg-$(shell id -u)

.PHONY: deps demo test shader-checks fuzz bench

SECONDS ?= 30
FUZZ_SEED ?= 1

deps:
	@Scripts/install-deps
	@mkdir -p $(XDG_RUNTIME_DIR)

demo: deps
	swift run -c release layerkit demo

test: deps
	LAYERKIT_VALIDATION=1 swift test
	$(MAKE) shader-checks
	$(MAKE) fuzz

shader-checks: deps
	cmake -S . -B build/shaders -G Ninja >/dev/null
	cmake --build build/shaders
	ctest --test-dir build/shaders --output-on-failure

# Fails on a crash, an input over 1 s of CPU, an error of an unpromised type or a
# resident set over 1 GiB; the input is printed and saved under Fuzz/findings/.
fuzz: deps
	swift run -c release Fuzz all --seconds $(SECONDS) --seed $(FUZZ_SEED)

bench: deps
	swift run -c release SwishBench
