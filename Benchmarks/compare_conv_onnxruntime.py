#!/usr/bin/env python3
"""Conv and Gemm on the CPU: LayerKit's ConvBench side by side with onnxruntime.

For each workload (ConvBench's syntax: conv=NxCxHxW,M,K,STRIDE,PAD[,GROUP] or
gemm=N,K,M), runs .build/release/ConvBench --json (the layer's CPU evaluator
on 1 and 2 threads), then the same one-node ONNX model (Conv with bias, or
Gemm with B [K, M] and C [M]) with onnxruntime at intra_op_num_threads 1
and 2 (ORT_ENABLE_ALL, IOBinding into a preallocated output), workload after
workload so that both see about the same load on a shared machine, and
prints one table of medians. The ratio is LayerKit's median over ORT's.

    python3 Benchmarks/compare_conv_onnxruntime.py [--repeat N] [--warmup N]
        [--scratch-path DIR] [--skip-build] [--markdown] [WORKLOAD ...]

The defaults include issue 13's four single-layer CPU targets (marked below).

Uses Benchmarks/.venv like compare_onnxruntime.py.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE]
from compare_onnxruntime import ensure_venv, time_session  # noqa: E402

DEFAULT_WORKLOADS = [
    "conv=1x3x32x32,16,3,1,1",      # a small CNN's first layer
    "conv=1x16x32x32,16,3,1,1",
    "conv=1x16x32x32,32,3,2,1",
    "conv=1x64x56x56,64,3,1,1",     # issue 13: 3x3 stride 1 64->64 at 56x56
    "conv=1x64x56x56,64,1,1,0",
    "conv=1x256x56x56,64,1,1,0",    # issue 13: 1x1 256->64 at 56x56
    "conv=1x32x56x56,32,3,1,1,32",  # depthwise
    "conv=1x32x112x112,32,3,1,1,32",  # issue 13: depthwise 3x3 at 112x112
    "conv=1x3x224x224,64,7,2,3",    # issue 13: 7x7 stride 2 3->64 at 224x224 (a ResNet stem)
    "gemm=1,1024,10",
    "gemm=1,1024,128",
    "gemm=64,512,512",
]


def model_for(spec, np):
    """The one-node ONNX model of `spec`, its input and its output shape."""
    from onnx import TensorProto, helper, numpy_helper

    kind, args = spec.split("=")
    fields = args.split(",")
    rng = np.random.default_rng(1)
    if kind == "conv":
        n, c, h, w = (int(d) for d in fields[0].split("x"))
        m, k, stride, pad = (int(v) for v in fields[1:5])
        group = int(fields[5]) if len(fields) > 5 else 1
        oh, ow = ((size + 2 * pad - k) // stride + 1 for size in (h, w))
        x_shape, y_shape = [n, c, h, w], [n, m, oh, ow]
        inits = [numpy_helper.from_array(rng.uniform(-1, 1, (m, c // group, k, k)).astype(np.float32), "W"),
                 numpy_helper.from_array(rng.uniform(-1, 1, (m,)).astype(np.float32), "B")]
        node = helper.make_node("Conv", ["x", "W", "B"], ["y"], kernel_shape=[k, k], strides=[stride, stride],
                                pads=[pad] * 4, group=group)
    else:
        n, k, m = (int(v) for v in fields)
        x_shape, y_shape = [n, k], [n, m]
        inits = [numpy_helper.from_array(rng.uniform(-1, 1, (k, m)).astype(np.float32), "B"),
                 numpy_helper.from_array(rng.uniform(-1, 1, (m,)).astype(np.float32), "C")]
        node = helper.make_node("Gemm", ["x", "B", "C"], ["y"])
    graph = helper.make_graph([node], kind, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, rng.uniform(-1, 1, x_shape).astype(np.float32), y_shape


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--scratch-path", default=os.path.join(ROOT, ".build"))
    parser.add_argument("--skip-build", action="store_true", help="use the ConvBench already built")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("workloads", nargs="*", default=DEFAULT_WORKLOADS)
    args = parser.parse_args()
    ensure_venv()
    import numpy as np
    import onnxruntime

    if not args.skip_build:
        subprocess.run(["swift", "build", "-c", "release", "--product", "ConvBench",
                        "--scratch-path", args.scratch_path], cwd=ROOT, check=True)
    load_before = " ".join(f"{v:.2f}" for v in os.getloadavg())
    header = ["workload", "LK 1t ms", "ORT 1t ms", "LK/ORT", "LK 2t ms", "ORT 2t ms", "LK/ORT"]
    table = []
    for spec in args.workloads:
        done = subprocess.run([os.path.join(args.scratch_path, "release", "ConvBench"), "--json", "--repeat",
                               str(args.repeat), "--warmup", str(args.warmup), spec],
                              capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"ConvBench failed ({done.returncode}): {done.stderr}")
        mine = {r["threads"]: r["stats"]["medianMs"] for r in map(json.loads, done.stdout.splitlines())}
        model, x, y_shape = model_for(spec, np)
        line = [spec]
        for threads in (1, 2):
            theirs = time_session(model, x, threads, args.warmup, args.repeat, y_shape)[0]["medianMs"]
            line += [f"{mine[threads]:.4f}", f"{theirs:.4f}", f"{mine[threads] / theirs:.2f}x"]
        table.append(line)
    load_after = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"Float32, medians of {args.repeat} runs after {args.warmup} warm-up; onnxruntime {onnxruntime.__version__} "
          f"(ORT_ENABLE_ALL, IOBinding output); {os.cpu_count()} cores; load average {load_before} before, "
          f"{load_after} after")
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|---|" + "---:|" * (len(header) - 1))
        for line in table:
            print("| " + " | ".join(line) + " |")
        return
    widths = [max(len(line[c]) for line in [header] + table) for c in range(len(header))]
    for i, line in enumerate([header] + table):
        print("  ".join(t.ljust(w) if c == 0 else t.rjust(w) for c, (t, w) in enumerate(zip(line, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))


if __name__ == "__main__":
    main()
