#!/usr/bin/env python3
"""Swish on the CPU: LayerKit's SwishBench side by side with onnxruntime.

Builds two ONNX models, x*Sigmoid(x) (SiLU) and x*Sigmoid(beta*x), runs them
with onnxruntime at intra_op_num_threads 1 and 2 (full graph optimization,
which fuses the pair into one QuickGelu kernel), runs .build/release/SwishBench
in the same invocation, and prints one table with ratios.

    python3 Benchmarks/compare_onnxruntime.py [--repeat N] [--warmup N]
        [--shape NxCxHxW] [--scratch-path DIR] [--skip-build]

On first use it makes Benchmarks/.venv (git-ignored) with onnxruntime, onnx
and numpy from PyPI, then re-runs itself inside it.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
VENV = os.path.join(HERE, ".venv")
VENV_PYTHON = os.path.join(VENV, "bin", "python")
PACKAGES = ["onnxruntime", "onnx", "numpy"]


def ensure_venv():
    """Re-executes the running script (this one, or one that imports it) in
    Benchmarks/.venv, creating it if needed."""
    if os.path.realpath(sys.prefix) == os.path.realpath(VENV):
        return
    if not os.path.exists(VENV_PYTHON):
        print(f"creating {VENV} with {' '.join(PACKAGES)} ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
        subprocess.run([VENV_PYTHON, "-m", "pip", "install", "-q", *PACKAGES], check=True)
    os.execv(VENV_PYTHON, [VENV_PYTHON, os.path.abspath(sys.argv[0]), *sys.argv[1:]])


def stats(samples_ms):
    """median, min and nearest-rank p90, as SwishBench computes them."""
    s = sorted(samples_ms)
    p90 = s[max(0, -(-9 * len(s) // 10) - 1)]
    return {"runs": len(s), "medianMs": statistics.median(s), "minMs": s[0], "p90Ms": p90}


def swish_model(shape, beta):
    """x * Sigmoid(x), or x * Sigmoid(beta * x) when beta is not None."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits = [], []
    sig_in = "x"
    if beta is not None:
        inits.append(numpy_helper.from_array(np.array(beta, dtype=np.float32), "beta"))
        nodes.append(helper.make_node("Mul", ["x", "beta"], ["bx"]))
        sig_in = "bx"
    nodes += [helper.make_node("Sigmoid", [sig_in], ["s"]),
              helper.make_node("Mul", ["x", "s"], ["y"])]
    graph = helper.make_graph(
        nodes, "swish",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def time_session(model, x, threads, warmup, runs, y_shape=None):
    """Runs `model` (input "x", output "y", shaped like x unless y_shape
    says) on `x` with onnxruntime at `threads` intra-op threads and full
    graph optimization, writing into a preallocated output (IOBinding) as
    the evaluator does. Returns the timing stats, the op types left after
    optimization, and the output."""
    import numpy as np
    import onnx
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3  # no warning about saving the optimized model
    with tempfile.TemporaryDirectory() as tmp:
        opts.optimized_model_filepath = os.path.join(tmp, "optimized.onnx")
        session = ort.InferenceSession(model.SerializeToString(), opts,
                                       providers=["CPUExecutionProvider"])
        fused_ops = [n.op_type for n in onnx.load(opts.optimized_model_filepath).graph.node]

    y = np.empty_like(x) if y_shape is None else np.empty(y_shape, dtype=np.float32)
    binding = session.io_binding()
    binding.bind_cpu_input("x", x)
    binding.bind_output("y", "cpu", 0, np.float32, list(y.shape), y.ctypes.data)
    for _ in range(warmup):
        session.run_with_iobinding(binding)
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        session.run_with_iobinding(binding)
        samples.append((time.perf_counter() - t0) * 1e3)
    return stats(samples), fused_ops, y


def time_ort(model, shape, threads, warmup, runs, beta):
    """time_session on seeded uniform [-10, 10], and the worst relative
    error against float64 (where |reference| > 1e-30)."""
    import numpy as np

    x = np.random.default_rng(1).uniform(-10, 10, size=shape).astype(np.float32)
    s, fused_ops, y = time_session(model, x, threads, warmup, runs)
    xd = x.astype(np.float64)
    ref = xd / (1 + np.exp(-(1.0 if beta is None else beta) * xd))
    keep = np.abs(ref) > 1e-30
    max_rel = float(np.max(np.abs(y[keep] - ref[keep]) / np.abs(ref[keep])))
    return s, fused_ops, max_rel


def run_swishbench(args):
    if not args.skip_build:
        subprocess.run(["swift", "build", "-c", "release", "--product", "SwishBench",
                        "--scratch-path", args.scratch_path], cwd=ROOT, check=True)
    exe = os.path.join(args.scratch_path, "release", "SwishBench")
    out = subprocess.run([exe, "--json", "--repeat", str(args.repeat), "--warmup", str(args.warmup),
                          "--shape", args.shape], check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def print_table(rows):
    naive = next((r["stats"]["medianMs"] for r in rows if r["name"] == "naive"), None)
    evaluator = {r["threads"]: r["stats"]["medianMs"] for r in rows if r["name"] == "evaluator"}
    header = ["variant", "threads", "runs", "median ms", "min ms", "p90 ms", "GB/s",
              "naive/this", "this/evaluator"]
    body = []
    for r in rows:
        s = r["stats"]
        med = s["medianMs"]
        ev = evaluator.get(r["threads"])
        body.append([r["name"], str(r["threads"]), str(s["runs"]), f"{med:.3f}",
                     f"{s['minMs']:.3f}", f"{s['p90Ms']:.3f}", f"{r['bytes'] / med / 1e6:.1f}",
                     f"{naive / med:.1f}x" if naive else "-",
                     f"{med / ev:.2f}x" if ev else "-"])
    widths = [max(len(line[c]) for line in [header] + body) for c in range(len(header))]
    for i, line in enumerate([header] + body):
        print("  ".join(t.ljust(w) if c == 0 else t.rjust(w)
                        for c, (t, w) in enumerate(zip(line, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--shape", default="1x64x256x256")
    parser.add_argument("--scratch-path", default=os.path.join(ROOT, ".build"))
    parser.add_argument("--skip-build", action="store_true",
                        help="use the SwishBench already built")
    args = parser.parse_args()
    ensure_venv()
    import onnxruntime

    shape = [int(d) for d in args.shape.split("x")]
    count = 1
    for d in shape:
        count *= d
    rows = run_swishbench(args)
    errors = []
    for label, beta in [("ort x*sigmoid(x)", None), ("ort x*sigmoid(1.5x)", 1.5)]:
        for threads in (1, 2):
            s, ops, max_rel = time_ort(swish_model(shape, beta), shape, threads,
                                       args.warmup, args.repeat, beta)
            rows.append({"name": f"{label} [{'+'.join(ops)}]", "threads": threads, "stats": s,
                         "elements": count, "bytes": 8 * count})
        errors.append(f"{label}: {max_rel:.2g}")
    print(f"Swish {args.shape} Float32; medians of {args.repeat} runs after {args.warmup} warm-up "
          f"(naive: a third); onnxruntime {onnxruntime.__version__} with IOBinding output; "
          f"{os.cpu_count()} cores")
    print_table(rows)
    print("max relative error vs float64 on uniform [-10, 10]: " + "; ".join(errors)
          + " (the evaluator: <= 3e-7, checked by its tests)")


if __name__ == "__main__":
    main()
