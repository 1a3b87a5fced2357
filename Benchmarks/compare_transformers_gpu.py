#!/usr/bin/env python3
"""Transformers on the GPU, side by side with PyTorch on the same device: for
each case folder of Scripts/export_transformers.py (the onnx backend-test
layout with tolerance.json), LayerKit's GPU output is checked against
onnxruntime's reference (max |y - ref| / max(1, |ref|) within the case's GPU
tolerance), then timed with `layerkit bench --backend gpu` on the case's own
inputs, beside PyTorch eager (float32, TF32 off) of the same transformers
architecture on CUDA (on the CPU where no CUDA device is found: the peer's
device is printed). Medians after warm-ups; the load average is printed.

    python Benchmarks/compare_transformers_gpu.py CASE_DIR... [--layerkit PATH]
        [--repeat N] [--warmup N] [--json FILE]

Case names are export_transformers.py's (<model>_<exporter>); the PyTorch
model is rebuilt from the same name (its random weights differ from the
export's: only its time is used). Needs numpy, onnx, torch and transformers.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

from compare_ncnn import timed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "Scripts"))


def case_inputs(case):
    """(name, path, array) per graph input of the case, in order."""
    model = onnx.load(os.path.join(case, "model.onnx"), load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in initializers]
    paths = [os.path.join(case, "test_data_set_0", f"input_{k}.pb") for k in range(len(names))]
    return [(n, p, numpy_helper.to_array(onnx.load_tensor(p))) for n, p in zip(names, paths)]


def check_gpu(layerkit, case, inputs):
    """LayerKit's GPU output against the reference: (worst error, tolerance)."""
    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "y.npy")
        command = [layerkit, "run", os.path.join(case, "model.onnx"), "--backend", "gpu", "--output", out]
        for name, path, _ in inputs:
            command += ["--input", f"{name}={path}"]
        subprocess.run(command, check=True, capture_output=True, text=True)
        y = np.load(out).astype(np.float64).ravel()
    ref = numpy_helper.to_array(onnx.load_tensor(os.path.join(case, "test_data_set_0", "output_0.pb")))
    ref = ref.astype(np.float64).ravel()
    tolerance = json.load(open(os.path.join(case, "tolerance.json")))["gpu"]
    error = float(np.max(np.abs(y - ref) / np.maximum(1.0, np.abs(ref)))) if y.shape == ref.shape else float("inf")
    return error, tolerance


def layerkit_median(layerkit, case, inputs, repeat, warmup):
    command = [layerkit, "bench", os.path.join(case, "model.onnx"), "--backend", "gpu", "--repeat", str(repeat),
               "--warmup", str(warmup), "--json"]
    for name, path, _ in inputs:
        command += ["--input", f"{name}={path}"]
    result = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(result.stdout)["results"][0]["medianMs"]


def torch_median(name, inputs, repeat, warmup):
    """PyTorch eager's median ms for the architecture of case `name`, and its device."""
    import torch
    import export_transformers

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model_name = name.rsplit("_", 1)[0]
    builders = export_transformers.shaped() if model_name in ("bert_base", "gpt2_small", "vit_b16",
                                                              "whisper_base_encoder") else export_transformers.small()
    model = builders[model_name][0].eval().to(device)
    wrapper = export_transformers.FirstOutput(model, [n for n, _, _ in inputs])
    args = [torch.from_numpy(np.array(a)).to(device) for _, _, a in inputs]

    def once():
        with torch.no_grad():
            wrapper(*args)
        if device == "cuda":
            torch.cuda.synchronize()

    label = torch.cuda.get_device_name() if device == "cuda" else "CPU"
    return timed(once, warmup, repeat)["medianMs"], f"PyTorch {torch.__version__} on {label}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="+")
    parser.add_argument("--layerkit", default=os.path.join(ROOT, ".build", "release", "layerkit"))
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args()
    rows = []
    print("| model | GPU check (error / tolerance) | LayerKit GPU ms | PyTorch ms | LayerKit / PyTorch | peer |")
    print("|---|---|---|---|---|---|")
    for case in args.cases:
        name = os.path.basename(os.path.normpath(case))
        inputs = case_inputs(case)
        row = {"case": name}
        try:
            row["error"], row["tolerance"] = check_gpu(args.layerkit, case, inputs)
            row["layerkitMs"] = layerkit_median(args.layerkit, case, inputs, args.repeat, args.warmup)
            row["torchMs"], row["peer"] = torch_median(name, inputs, args.repeat, args.warmup)
        except subprocess.CalledProcessError as error:  # one case's failure is reported, the others still run
            row["failure"] = ((error.stderr or "").strip().splitlines() or [str(error)])[-1][:300]
        except Exception as error:
            row["failure"] = repr(error)[:300]
        rows.append(row)
        if "failure" in row:
            print(f"| {name} | FAILED: {row['failure']} | | | | |", flush=True)
            continue
        verdict = "PASS" if row["error"] <= row["tolerance"] else "FAIL"
        print(f"| {name} | {verdict} {row['error']:.1e} / {row['tolerance']:.1e} | {row['layerkitMs']:.2f} | "
              f"{row['torchMs']:.2f} | {row['layerkitMs'] / row['torchMs']:.2f}x | {row['peer']} |", flush=True)
    print(f"load average: {' '.join(open('/proc/loadavg').read().split()[:3])}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
