#!/usr/bin/env python3
"""Whole models people export, end to end: LayerKit's CPU and GPU backends
(`layerkit bench MODEL.onnx --backend cpu|gpu --json`) beside onnxruntime at
1 and 2 threads, per model of the model zoo (Scripts/export_torchvision.py,
Scripts/light_models.py: folders of CASE/model.onnx).

    python Benchmarks/model_zoo.py [FOLDER ...] [--repeat N] [--warmup N] [--gpu NAME,...]
        [--only NAME,...] [--layerkit PATH] [--markdown]

Medians of --repeat runs after --warmup untimed ones; the load average is
printed before and after (the machine is shared: read the ratios, not the
absolute times). LayerKit runs its seeded uniform [0, 1) inputs, onnxruntime
the same shapes from numpy (default graph optimizations, as users run it; a
model with layerkit::Swish nodes runs its standard-op export there;
session.run allocating its outputs, as Model.predict does). The GPU is timed
only for the cases named by --gpu: on lavapipe it is an emulation on the
same CPU cores, slow and no GPU speed. Uses /work/venv or any Python with
onnxruntime and numpy; the layerkit binary must be built
(swift build -c release --product layerkit).
"""

import argparse
import json
import os
import statistics
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def time_ort(path, threads, warmup, runs):
    import numpy as np
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
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
    return statistics.median(samples)


def time_layerkit(layerkit, path, backend, threads, warmup, runs):
    cmd = [layerkit, "bench", path, "--backend", backend, "--repeat", str(runs), "--warmup", str(warmup), "--json"]
    if threads and backend == "cpu":
        cmd += ["--threads", str(threads)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["failed"])[-1][:120]
    result = json.loads(p.stdout)["results"][0]
    return result["medianMs"], result.get("placement")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", default=[os.path.join(ROOT, ".build", "model-zoo", "full")])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2, help="LayerKit CPU threads")
    parser.add_argument("--gpu", default="", help="cases to time on the GPU too (comma-separated)")
    parser.add_argument("--only", default="", help="cases to time (default: all)")
    parser.add_argument("--layerkit", default=os.path.join(ROOT, ".build", "release", "layerkit"))
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    gpu = set(filter(None, args.gpu.split(",")))
    only = set(filter(None, args.only.split(",")))
    import onnxruntime

    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}; {os.cpu_count()} cores; "
          f"onnxruntime {onnxruntime.__version__}; medians of {args.repeat} runs after {args.warmup} warm-up; "
          f"LayerKit CPU at {args.threads} threads", flush=True)
    header = ["model", "LayerKit CPU ms", "LayerKit GPU ms (lavapipe)", "ORT 1 thread ms", "ORT 2 threads ms",
              "CPU / ORT 2t"]
    rows = []
    for folder in args.folders:
        for case in sorted(os.listdir(folder)):
            path = os.path.join(folder, case, "model.onnx")
            if not os.path.exists(path) or (only and case not in only):
                continue
            cpu, cpu_note = time_layerkit(args.layerkit, path, "cpu", args.threads, args.warmup, args.repeat)
            g, g_note = (time_layerkit(args.layerkit, path, "gpu", None, 1, max(3, args.repeat // 3))
                         if case in gpu else (None, "not run"))
            # onnxruntime has no layerkit::Swish: it runs the standard-op export.
            twin = os.path.join(folder, case.replace("_swish", ""), "model.onnx") if "_swish" in case else path
            ort1 = time_ort(twin, 1, args.warmup, args.repeat)
            ort2 = time_ort(twin, 2, args.warmup, args.repeat)
            row = [case, f"{cpu:.1f}" if cpu else f"- ({cpu_note})", f"{g:.1f} ({g_note})" if g else "-",
                   f"{ort1:.1f}", f"{ort2:.1f}", f"{cpu / ort2:.2f}x" if cpu else "-"]
            rows.append(row)
            print("  ".join(row), flush=True)
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if args.markdown:
        print()
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")


if __name__ == "__main__":
    main()
