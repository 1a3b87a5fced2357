#!/usr/bin/env python3
"""Quantized-model fixtures: small float models built with onnx.helper from
seeded random weights, quantized by onnxruntime's own tool
(onnxruntime.quantization), with onnxruntime's outputs as the reference, for
QuantizedModelTests (Tests/LayerKitTests) and QuantizedModelCommandTests
(Tests/LayerKitCommandsTests).

What it writes (Tests/LayerKitTests/Fixtures/quantized/, stale cases removed first),
one folder per case:
    model.onnx        the quantized model
    <input>.npy       the graph input, seeded, float32
    <output>.npy      onnxruntime's output on it (CPUExecutionProvider, its
                      default graph optimizations: the QDQ pairs become its
                      int8 QLinearConv / QLinearMatMul kernels)
    case.json         {"inputs": [...], "outputs": [...], "quantum": q, "cpu": c, "gpu": g}:
                      the names, the output's quantization step q, and the
                      most steps LayerKit may be off on each backend (see
                      the test's comment for why)
    README.md         the cases and the tool versions (top folder)

The cases:
    cnn_qdq       conv(8, 3x3) - relu - maxpool - conv(16, 3x3) - relu -
                  global average pool - flatten - gemm(10) on [1, 3, 16, 16],
                  quantize_static in QDQ format (uint8 activations, int8
                  weights per channel), calibrated on 16 seeded inputs. Its
                  output is a DequantizeLinear: q is its scale.
    mlp_qdq       a transformer-style block on [1, 8, 32]: matmul(64) - add -
                  gelu - matmul(32) - add - residual add, quantize_static QDQ
                  (per-tensor int8 weights); q: the last DequantizeLinear's scale.
    mlp_dynamic   the same block, quantize_dynamic (uint8 activations through
                  DynamicQuantizeLinear, int8 weights, MatMulInteger); its
                  output is float (the residual sum with x), q: the step of
                  x's own dynamic quantization, the first rounding the model
                  applies and of the output's scale.

How to run (from the repository root; the node-test venv has these pins)
    python3 -m venv .build/quant-venv
    .build/quant-venv/bin/pip install onnx==1.23.2 onnxruntime==1.32.0 numpy==2.4.6
    .build/quant-venv/bin/python Scripts/generate_quantized_fixtures.py
Everything is seeded (numpy default_rng).
"""
import argparse
import json
import os
import shutil

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic,
                                      quantize_static)

OPSET = 21
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "LayerKitTests", "Fixtures", "quantized")


def initializer(name, array):
    return numpy_helper.from_array(array.astype(np.float32), name)


def cnn(rng):
    """conv - relu - maxpool - conv - relu - global average pool - flatten - gemm."""
    inits = [
        initializer("w1", rng.normal(0, 0.3, (8, 3, 3, 3))), initializer("b1", rng.normal(0, 0.1, (8,))),
        initializer("w2", rng.normal(0, 0.2, (16, 8, 3, 3))), initializer("b2", rng.normal(0, 0.1, (16,))),
        initializer("w3", rng.normal(0, 0.3, (10, 16))), initializer("b3", rng.normal(0, 0.1, (10,))),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], transB=1),
    ]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)]), [1, 3, 16, 16]


def mlp(rng):
    """matmul - add - gelu - matmul - add - residual add, a transformer block's feed-forward half."""
    inits = [
        initializer("w1", rng.normal(0, 0.2, (32, 64))), initializer("b1", rng.normal(0, 0.1, (64,))),
        initializer("w2", rng.normal(0, 0.15, (64, 32))), initializer("b2", rng.normal(0, 0.1, (32,))),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["m1"]), helper.make_node("Add", ["m1", "b1"], ["a1"]),
        helper.make_node("Gelu", ["a1"], ["g"]),
        helper.make_node("MatMul", ["g", "w2"], ["m2"]), helper.make_node("Add", ["m2", "b2"], ["a2"]),
        helper.make_node("Add", ["a2", "x"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 32])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)]), [1, 8, 32]


class Calibration(CalibrationDataReader):
    """16 seeded inputs of the model's one input."""

    def __init__(self, shape, seed):
        rng = np.random.default_rng(seed)
        self.batches = iter([{"x": rng.normal(0, 1, shape).astype(np.float32)} for _ in range(16)])

    def get_next(self):
        return next(self.batches, None)


def last_dequantize_scale(model):
    """The scale of the DequantizeLinear making the graph output."""
    producers = {out: node for node in model.graph.node for out in node.output}
    node = producers[model.graph.output[0].name]
    assert node.op_type == "DequantizeLinear", node.op_type
    scales = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    return float(scales[node.input[1]])


def input_step(model, x):
    """The step of x's own dynamic quantization (DynamicQuantizeLinear's scale, as the reference computes it)."""
    high, low = max(0.0, float(x.max())), min(0.0, float(x.min()))
    return float(np.float32(high - low) / np.float32(255))


def write(name, model, shape, quantum, bounds, rng):
    folder = os.path.join(ROOT, name)
    os.makedirs(folder)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    x = rng.normal(0, 1, shape).astype(np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"x": x})
    np.save(os.path.join(folder, "x.npy"), x)
    np.save(os.path.join(folder, "y.npy"), y)
    quantum = quantum(model, x)
    with open(os.path.join(folder, "case.json"), "w") as f:
        json.dump({"inputs": ["x"], "outputs": ["y"], "quantum": quantum, "cpu": bounds[0], "gpu": bounds[1]}, f, indent=1)
        f.write("\n")
    print(f"{name}: quantum {quantum:.6g}, outputs {y.shape}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    shutil.rmtree(ROOT, ignore_errors=True)
    os.makedirs(ROOT)
    scratch = os.path.join(ROOT, "float.onnx")
    quantized = os.path.join(ROOT, "quantized.onnx")
    # (name, builder, static QDQ or dynamic, per-channel weights, the bounds in quanta on the CPU and the GPU)
    for name, build, static, per_channel, bounds in [("cnn_qdq", cnn, True, True, (1, 2)),
                                                     ("mlp_qdq", mlp, True, False, (1, 2)),
                                                     ("mlp_dynamic", mlp, False, False, (1, 1))]:
        rng = np.random.default_rng(sum(map(ord, name)))
        model, shape = build(rng)
        onnx.save(model, scratch)
        if static:
            quantize_static(scratch, quantized, Calibration(shape, seed=1), quant_format=QuantFormat.QDQ,
                            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=per_channel)
            quantum = lambda m, x: last_dequantize_scale(m)
        else:
            quantize_dynamic(scratch, quantized, weight_type=QuantType.QInt8)
            quantum = input_step
        write(name, onnx.load(quantized), shape, quantum, bounds, rng)
    for path in (scratch, quantized):
        os.remove(path)
    with open(os.path.join(ROOT, "README.md"), "w") as f:
        f.write("# Quantized-model fixtures\n\nWritten by `Scripts/generate_quantized_fixtures.py` (see its header) with "
                f"onnx {onnx.__version__}, onnxruntime {ort.__version__}, numpy {np.__version__}.\n")


if __name__ == "__main__":
    main()
