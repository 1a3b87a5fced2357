#!/usr/bin/env python3
"""Whole models: LayerKit's ModelBench side by side with onnxruntime.

Runs .build/release/ModelBench --json on the fixture models (LayerKit's CPU
backend, and its GPU backend on whichever Vulkan device is chosen: on
lavapipe that is an emulation, labelled so), then onnxruntime on the same
models (the standard-op twin where the model has custom layers) at
intra_op_num_threads 1 and 2 (default graph optimizations, session.run with
its own output allocation, as Model.predict allocates its outputs), and
prints one table of end-to-end medians with ratios, then LayerKit's
per-layer medians.

    python3 Benchmarks/compare_models_onnxruntime.py [--repeat N] [--warmup N]
        [--scratch-path DIR] [--skip-build]

Uses Benchmarks/.venv like compare_onnxruntime.py.
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE]
from compare_onnxruntime import ensure_venv, stats  # noqa: E402

FIXTURES = os.path.join(ROOT, "Tests", "LayerKitTests", "Fixtures", "models")
# (LayerKit's model, the model onnxruntime runs)
MODELS = [("small_cnn.onnx", "small_cnn.onnx"), ("article_demo.onnx", "article_demo_standard.onnx")]


def ort_samples(path, threads, warmup, runs):
    """Milliseconds of each of `runs` onnxruntime runs (CPU, `threads` intra-op
    threads, all graph optimizations: ORT_ENABLE_ALL, its default) after `warmup` untimed ones, on seeded
    uniform [0, 1) inputs (symbolic dimensions 1)."""
    import numpy as np
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    feeds = {i.name: rng.random([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
             for i in session.get_inputs()}
    for _ in range(warmup):
        session.run(None, feeds)
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        session.run(None, feeds)
        samples.append((time.perf_counter() - t0) * 1e3)
    return samples


def time_ort(path, threads, warmup, runs):
    return stats(ort_samples(path, threads, warmup, runs))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--scratch-path", default=os.path.join(ROOT, ".build"))
    parser.add_argument("--skip-build", action="store_true", help="use the ModelBench already built")
    args = parser.parse_args()
    ensure_venv()
    import onnxruntime

    if not args.skip_build:
        subprocess.run(["swift", "build", "-c", "release", "--product", "ModelBench",
                        "--scratch-path", args.scratch_path], cwd=ROOT, check=True)
    exe = os.path.join(args.scratch_path, "release", "ModelBench")
    out = subprocess.run([exe, "--json", "--repeat", str(args.repeat), "--warmup", str(args.warmup)]
                         + [os.path.join(FIXTURES, m) for m, _ in MODELS],
                         check=True, capture_output=True, text=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    lk = {(r["model"], r["backend"]): r for r in rows}

    print(f"end to end, medians of {args.repeat} runs after {args.warmup} warm-up; onnxruntime "
          f"{onnxruntime.__version__}; {os.cpu_count()} cores")
    header = ["model", "LayerKit CPU ms", "LayerKit GPU ms", "ORT 1 thread ms", "ORT 2 threads ms",
              "CPU / ORT 2t", "CPU / ORT 1t"]
    body = []
    for model, twin in MODELS:
        ort1 = time_ort(os.path.join(FIXTURES, twin), 1, args.warmup, args.repeat)["medianMs"]
        ort2 = time_ort(os.path.join(FIXTURES, twin), 2, args.warmup, args.repeat)["medianMs"]
        cpu = lk[(model, "cpu")]["stats"]["medianMs"]
        gpu = lk.get((model, "gpu"))
        body.append([model, f"{cpu:.3f}", f"{gpu['stats']['medianMs']:.3f}" if gpu else "-", f"{ort1:.3f}",
                     f"{ort2:.3f}", f"{cpu / ort2:.2f}x", f"{cpu / ort1:.2f}x"])
    table([header] + body)
    for r in rows:
        if r["backend"] == "gpu" and r["model"] == MODELS[0][0]:
            print("GPU: " + r["device"] + (" — EMULATED on the CPU, not GPU speed" if r["emulated"] else ""))
    for model, _ in MODELS:
        cpu, gpu = lk[(model, "cpu")], lk.get((model, "gpu"))
        print(f"\nper layer, {model} (medians of profiled runs; GPU layers by GPU timestamps):")
        gpu_layers = {layer["name"]: layer for layer in gpu["layers"]} if gpu else {}
        lines = [["layer", "CPU ms", "GPU ms"]]
        for layer in cpu["layers"]:
            g = gpu_layers.get(layer["name"])
            lines.append([layer["name"], f"{layer['medianMs']:.4f}", f"{g['medianMs']:.4f}" if g else "-"])
        table(lines)


def table(lines):
    widths = [max(len(line[c]) for line in lines) for c in range(len(lines[0]))]
    for i, line in enumerate(lines):
        print("  ".join(t.ljust(w) if c == 0 else t.rjust(w) for c, (t, w) in enumerate(zip(line, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))


if __name__ == "__main__":
    main()
