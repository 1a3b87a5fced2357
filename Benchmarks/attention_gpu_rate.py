#!/usr/bin/env python3
"""The GPU attention kernel's arithmetic rate, beside PyTorch's on the same
device: for each shape BxHxSxD, one ONNX `Attention` node (opset 23, 4-D
Q, K and V, no mask, not causal) is written, LayerKit's GPU output is checked
against a float64 NumPy reference (max |y - ref| / max(1, |ref|)), and the
kernel is timed by `layerkit profile --backend gpu` (GPU timestamps around the
node, the median run). TFLOP/s counts the two products, 4*B*H*S*S*D operations
(the softmax not counted), and is set against the device's float32 peak:
SMs x 128 FP32 lanes (Hopper, Ada) x 2 x the top SM clock, read through
PyTorch and nvidia-smi (or --peak-tflops). The shader stores fp16 and
accumulates in fp32 on the ordinary lanes, not the tensor cores, so that peak
is its ceiling. PyTorch's `scaled_dot_product_attention` on CUDA is the peer,
in float32 (TF32 off) and in float16 (its flash kernel, on tensor cores),
timed with CUDA events.

    python Benchmarks/attention_gpu_rate.py [--layerkit PATH] [--shapes 1x32x2048x64,...]
        [--repeat N] [--warmup N] [--peak-tflops T]

Needs numpy and onnx; torch for the peer and the peak (without CUDA both are
left out).
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def attention_model(shape):
    b, h, s, d = shape
    dims = [b, h, s, d]
    graph = helper.make_graph(
        [helper.make_node("Attention", ["q", "k", "v"], ["y"])], "attention",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, dims) for n in "qkv"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])


def reference(q, k, v):
    """softmax(Q K^T / sqrt(D)) V in float64, one head at a time (S x S scores each)."""
    y = np.empty(q.shape, np.float64)
    scale = 1 / np.sqrt(q.shape[-1])
    for b in range(q.shape[0]):
        for h in range(q.shape[1]):
            scores = q[b, h].astype(np.float64) @ k[b, h].astype(np.float64).T * scale
            scores = np.exp(scores - scores.max(axis=1, keepdims=True))
            y[b, h] = scores / scores.sum(axis=1, keepdims=True) @ v[b, h].astype(np.float64)
    return y


def layerkit_case(layerkit, shape, repeat, warmup, work):
    """(worst error against the reference, kernel ms) for one shape."""
    path = os.path.join(work, "attention.onnx")
    onnx.save(attention_model(shape), path)
    rng = np.random.default_rng(23)
    inputs = {n: rng.standard_normal(shape).astype(np.float32) for n in "qkv"}
    flags = []
    for name, array in inputs.items():
        np.save(os.path.join(work, f"{name}.npy"), array)
        flags += ["--input", f"{name}={os.path.join(work, name + '.npy')}"]
    out = os.path.join(work, "y.npy")
    subprocess.run([layerkit, "run", path, "--backend", "gpu", "--output", out] + flags,
                   check=True, capture_output=True, text=True)
    ref = reference(inputs["q"], inputs["k"], inputs["v"])
    error = float(np.max(np.abs(np.load(out) - ref) / np.maximum(1.0, np.abs(ref))))
    profile = subprocess.run([layerkit, "profile", path, "--backend", "gpu", "--repeat", str(repeat),
                              "--warmup", str(warmup), "--json"] + flags, check=True, capture_output=True, text=True)
    rows = [r for r in json.loads(profile.stdout)["layers"] if r["op"].endswith("(Attention)")]
    if len(rows) != 1 or rows[0]["backend"] != "gpu":
        raise RuntimeError(f"expected one Attention node on the GPU, profile shows {rows}")
    return error, rows[0]["ms"]


def torch_rates(shape, repeat, warmup):
    """PyTorch's median ms per dtype ({"float32": ms, "float16": ms}), or {} without CUDA."""
    try:
        import torch
    except ImportError:
        return {}
    if not torch.cuda.is_available():
        return {}
    torch.backends.cuda.matmul.allow_tf32 = False
    times = {}
    for dtype in (torch.float32, torch.float16):
        q, k, v = (torch.randn(shape, device="cuda", dtype=dtype) for _ in range(3))
        for _ in range(warmup):
            torch.nn.functional.scaled_dot_product_attention(q, k, v)
        samples = []
        for _ in range(repeat):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.nn.functional.scaled_dot_product_attention(q, k, v)
            end.record()
            torch.cuda.synchronize()
            samples.append(start.elapsed_time(end))
        times[str(dtype).split(".")[1]] = statistics.median(samples)
    return times


def device_peak_tflops():
    """(float32 TFLOP/s, what it was made of), or (None, why not)."""
    try:
        import torch
        if not torch.cuda.is_available():
            return None, "no CUDA device"
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        mhz = float(subprocess.run(["nvidia-smi", "--query-gpu=clocks.max.sm", "--format=csv,noheader,nounits"],
                                   check=True, capture_output=True, text=True).stdout.split()[0])
        return sms * 128 * 2 * mhz * 1e6 / 1e12, f"{sms} SMs x 128 FP32 lanes x 2 x {mhz:.0f} MHz"
    except Exception as error:
        return None, f"not read ({error})"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layerkit", default=os.path.join(ROOT, ".build", "release", "layerkit"))
    parser.add_argument("--shapes", default="1x32x2048x64,1x16x4096x64,1x16x2048x128")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--peak-tflops", type=float)
    args = parser.parse_args()
    peak, made_of = (args.peak_tflops, "given") if args.peak_tflops else device_peak_tflops()
    print(f"float32 peak: {f'{peak:.1f} TFLOP/s' if peak else 'unknown'} ({made_of})")
    print("| B x H x S x D | GFLOP | GPU check (error) | LayerKit kernel ms | TFLOP/s | of fp32 peak "
          "| PyTorch fp32 ms | PyTorch fp16 ms | LayerKit / PyTorch fp32 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for text in args.shapes.split(","):
        shape = [int(x) for x in text.split("x")]
        b, h, s, d = shape
        gflop = 4 * b * h * s * s * d / 1e9
        try:
            with tempfile.TemporaryDirectory() as work:
                error, ms = layerkit_case(args.layerkit, shape, args.repeat, args.warmup, work)
            peer = torch_rates(shape, args.repeat, args.warmup)
        except (subprocess.CalledProcessError, RuntimeError) as failure:  # reported; the other shapes still run
            why = getattr(failure, "stderr", None) or str(failure)
            print(f"| {text} | {gflop:.2f} | FAILED: {why.strip()[-300:]} | | | | | | |", flush=True)
            continue
        tflops = gflop / ms
        share = f"{100 * tflops / peak:.1f}%" if peak else "-"
        fp32, fp16 = peer.get("float32"), peer.get("float16")
        print(f"| {text} | {gflop:.2f} | {error:.1e} | {ms:.3f} | {tflops:.2f} | {share} | "
              f"{f'{fp32:.3f}' if fp32 else '-'} | {f'{fp16:.3f}' if fp16 else '-'} | "
              f"{f'{ms / fp32:.2f}x' if fp32 else '-'} |", flush=True)
    print(f"load average: {' '.join(open('/proc/loadavg').read().split()[:3])}")


if __name__ == "__main__":
    main()
