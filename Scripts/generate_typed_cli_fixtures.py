#!/usr/bin/env python3
"""Models of several inputs, none, and non-float types, with onnxruntime's outputs,
for the command-line tests of typed values (Tests/LayerKitCommandsTests/TypedRunCommandTests.swift).

Each case is a folder in the onnx backend-test layout under
Tests/LayerKitTests/Fixtures/typed/: model.onnx, test_data_set_0/input_<i>.pb and
output_<i>.pb (TensorProtos named after the graph's inputs and outputs), and the same
inputs as input_<i>.npy where numpy has the dtype. Run with onnx 1.23.2, onnxruntime 1.32.0:
    python Scripts/generate_typed_cli_fixtures.py
"""
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T, helper as h, numpy_helper as nh

OUT = os.path.join(os.path.dirname(__file__), "..", "Tests", "LayerKitTests", "Fixtures", "typed")


def case(name, nodes, inputs, outputs, feeds, opset=17):
    graph = h.make_graph(nodes, name, [h.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                         [h.make_tensor_value_info(n, t, s) for n, t, s in outputs])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], producer_name="generate_typed_cli_fixtures")
    model.ir_version = 8
    onnx.checker.check_model(model)
    folder = os.path.join(OUT, name)
    shutil.rmtree(folder, ignore_errors=True)
    data = os.path.join(folder, "test_data_set_0")
    os.makedirs(data)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    results = session.run(None, {n: feeds[n] for n, _, _ in inputs})
    for i, (n, _, _) in enumerate(inputs):
        onnx.save_tensor(nh.from_array(feeds[n], n), os.path.join(data, f"input_{i}.pb"))
        np.save(os.path.join(data, f"input_{i}.npy"), feeds[n])
    for i, ((n, _, _), value) in enumerate(zip(outputs, results)):
        onnx.save_tensor(nh.from_array(value, n), os.path.join(data, f"output_{i}.pb"))


def main():
    rng = np.random.default_rng(24)
    # Two float inputs given in either order: the multi-input fault of `layerkit run`.
    case("two_inputs", [h.make_node("Sub", ["a", "b"], ["y"])],
         [("a", T.FLOAT, [2, 3]), ("b", T.FLOAT, [2, 3])], [("y", T.FLOAT, [2, 3])],
         {"a": rng.standard_normal((2, 3)).astype(np.float32), "b": rng.standard_normal((2, 3)).astype(np.float32)})
    # No input at all: runs with no --input.
    case("no_inputs", [h.make_node("Constant", [], ["c"], value=nh.from_array(np.array([1.5, -2.0], np.float32))),
                       h.make_node("Neg", ["c"], ["y"])], [], [("y", T.FLOAT, [2])], {})
    # int64 past float32's 2^24: exact only if no value goes through a float.
    case("int64_add", [h.make_node("Add", ["a", "b"], ["y"])],
         [("a", T.INT64, [3]), ("b", T.INT64, [3])], [("y", T.INT64, [3])],
         {"a": np.array([2**40, 5, -3], np.int64), "b": np.array([1, 2**33 + 1, 3], np.int64)})
    # A bool output of float inputs.
    case("less_bool", [h.make_node("Less", ["a", "b"], ["y"])],
         [("a", T.FLOAT, [4]), ("b", T.FLOAT, [4])], [("y", T.BOOL, [4])],
         {"a": np.array([1, 5, -3, 0], np.float32), "b": np.array([2, 2, 2, 0], np.float32)})
    # float16 in and out, with a float32 step between.
    case("float16_relu", [h.make_node("Cast", ["x"], ["f"], to=T.FLOAT), h.make_node("Relu", ["f"], ["r"]),
                          h.make_node("Cast", ["r"], ["y"], to=T.FLOAT16)],
         [("x", T.FLOAT16, [5])], [("y", T.FLOAT16, [5])],
         {"x": np.array([-1.5, 0.333, 2.0, 65504, -0.0], np.float16)})
    # A float input and an int64 index, named in any order (the smoke test's shape).
    case("gather_index", [h.make_node("Gather", ["x", "i"], ["y"], axis=0)],
         [("x", T.FLOAT, [3, 2]), ("i", T.INT64, [2])], [("y", T.FLOAT, [2, 2])],
         {"x": np.arange(6, dtype=np.float32).reshape(3, 2), "i": np.array([2, 0], np.int64)})
    print("wrote", len(os.listdir(OUT)), "cases under", os.path.normpath(OUT))


if __name__ == "__main__":
    sys.exit(main())
