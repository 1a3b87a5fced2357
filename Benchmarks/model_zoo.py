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

from compare_models_onnxruntime import ort_samples

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def time_ort(path, threads, warmup, runs):
    return statistics.median(ort_samples(path, threads, warmup, runs))


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
          "both at 1 and 2 threads", flush=True)
    header = ["model", "LayerKit CPU 1t ms", "ORT 1t ms", "LayerKit / ORT 1t", "LayerKit CPU 2t ms", "ORT 2t ms",
              "LayerKit / ORT 2t", "LayerKit GPU ms (lavapipe)"]
    rows = []
    for folder in args.folders:
        for case in sorted(os.listdir(folder)):
            path = os.path.join(folder, case, "model.onnx")
            if not os.path.exists(path) or (only and case not in only):
                continue
            cpu1, note1 = time_layerkit(args.layerkit, path, "cpu", 1, args.warmup, args.repeat)
            cpu2, note2 = time_layerkit(args.layerkit, path, "cpu", 2, args.warmup, args.repeat)
            g, g_note = (time_layerkit(args.layerkit, path, "gpu", None, 1, max(3, args.repeat // 3))
                         if case in gpu else (None, "not run"))
            # onnxruntime has no layerkit::Swish: it runs the standard-op export.
            twin = os.path.join(folder, case.replace("_swish", ""), "model.onnx") if "_swish" in case else path
            ort1 = time_ort(twin, 1, args.warmup, args.repeat)
            ort2 = time_ort(twin, 2, args.warmup, args.repeat)
            def ms(value, note):
                return f"{value:.1f}" if value else f"- ({note})"
            row = [case, ms(cpu1, note1), f"{ort1:.1f}", f"{cpu1 / ort1:.2f}x" if cpu1 else "-",
                   ms(cpu2, note2), f"{ort2:.1f}", f"{cpu2 / ort2:.2f}x" if cpu2 else "-",
                   f"{g:.1f}" if g else "-"]
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
