"""Times layerkit.Swish in onnxruntime against the same Swish of standard ops.

    LAYERKIT_ORT_THREADS=1 .build/test-venv/bin/python Tests/ORT/bench_ort.py

One Swish (beta per channel, a second input) over an [8, 32, 64, 64] tensor
(1M floats), median of 30 runs after 3, on a session with 1 intra-op thread,
and the same graph as x * Sigmoid(beta * x) in onnxruntime's own kernels.
Docs/ONNXRUNTIME.md quotes its output.
"""
import os
import statistics
import time

import numpy as np
import onnxruntime as ort
from onnx import helper, numpy_helper

from test_ort import LIBRARY, model, tensor

SHAPE = [8, 32, 64, 64]


def median_ms(session, x, runs=30, warmup=3):
    for _ in range(warmup):
        session.run(None, {"x": x})
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        session.run(None, {"x": x})
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e3


def main():
    beta = np.linspace(0.5, 2, SHAPE[1]).astype(np.float32)
    weights = [numpy_helper.from_array(beta, "beta")]
    layerkit = model([helper.make_node("Swish", ["x", "beta"], ["y"], domain="layerkit")],
                     [tensor("x", SHAPE)], [tensor("y", SHAPE)], weights)
    standard = model([helper.make_node("Mul", ["x", "beta4"], ["bx"]), helper.make_node("Sigmoid", ["bx"], ["s"]),
                      helper.make_node("Mul", ["x", "s"], ["y"])],
                     [tensor("x", SHAPE)], [tensor("y", SHAPE)],
                     [numpy_helper.from_array(beta.reshape(1, -1, 1, 1), "beta4")])
    x = np.random.default_rng(0).uniform(-6, 6, size=SHAPE).astype(np.float32)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.register_custom_ops_library(LIBRARY)
    ours = ort.InferenceSession(layerkit.SerializeToString(), options, providers=["CPUExecutionProvider"])
    theirs = ort.InferenceSession(standard.SerializeToString(), options, providers=["CPUExecutionProvider"])
    difference = float(np.max(np.abs(ours.run(None, {"x": x})[0] - theirs.run(None, {"x": x})[0])))
    print(f"LAYERKIT_ORT_THREADS={os.environ.get('LAYERKIT_ORT_THREADS', '1 (default)')}, {os.cpu_count()} cores, "
          f"Swish over {SHAPE}: layerkit.Swish {median_ms(ours, x):.2f} ms, "
          f"onnxruntime's Mul-Sigmoid-Mul {median_ms(theirs, x):.2f} ms (max difference {difference:.1e})")


if __name__ == "__main__":
    main()
