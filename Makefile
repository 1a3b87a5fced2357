# The two commands of the README's quick start, plus the pieces they use.
#   make demo   the main job: Swish on a built-in image, GPU and CPU side by side
#   make test   the test suite under Khronos validation, then the shader checks
SHELL := /bin/bash
export PATH := /opt/swift/usr/bin:$(PATH)
export XDG_RUNTIME_DIR ?= /tmp/layerkit-xdg-$(shell id -u)

.PHONY: deps demo test shader-checks bench

deps:
	@Scripts/install-deps
	@mkdir -p $(XDG_RUNTIME_DIR)

demo: deps
	swift run -c release layerkit demo

test: deps
	LAYERKIT_VALIDATION=1 swift test
	LAYERKIT_VALIDATION=1 swift run layerkit parity --all
	$(MAKE) shader-checks

shader-checks: deps
	cmake -S . -B build/shaders -G Ninja >/dev/null
	cmake --build build/shaders
	ctest --test-dir build/shaders --output-on-failure

bench: deps
	swift run -c release SwishBench
