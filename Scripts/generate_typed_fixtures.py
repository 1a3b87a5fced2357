#!/usr/bin/env python3
"""Models of several inputs, of none, and of several element types, with onnxruntime's
outputs: the typed-value tests of the command line (Tests/LayerKitCommandsTests/
TypedRunCommandTests.swift), the C API (Tests/C/test_typed.c) and the Python package.

Each case is a folder under Tests/LayerKitTests/Fixtures/typed/: model.onnx, and
input_<i> / output_<i> in the graph's input and output order, each of the model's
declared dtype, as .npy (what the C and Python tests read) and as .pb, a TensorProto
named after the graph's value (what `layerkit run` also reads and writes). Every
expected value is exact in its type (integers, bools, float16 and float64 values that
float32 holds), so the tests compare bytes. Run with onnx 1.23.2, onnxruntime 1.32.0:
    python Scripts/generate_typed_fixtures.py
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
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], producer_name="generate_typed_fixtures")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    folder = os.path.join(OUT, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    results = session.run(None, {n: feeds[n] for n, _, _ in inputs})
    for i, (n, t, _) in enumerate(inputs):
        assert feeds[n].dtype == h.tensor_dtype_to_np_dtype(t), (name, n)
        np.save(os.path.join(folder, f"input_{i}.npy"), feeds[n])
        onnx.save_tensor(nh.from_array(feeds[n], n), os.path.join(folder, f"input_{i}.pb"))
    for i, ((n, t, _), value) in enumerate(zip(outputs, results)):
        assert value.dtype == h.tensor_dtype_to_np_dtype(t), (name, n, value.dtype)
        np.save(os.path.join(folder, f"output_{i}.npy"), value)
        onnx.save_tensor(nh.from_array(value, n), os.path.join(folder, f"output_{i}.pb"))


def main():
    big = 2**40
    rng = np.random.default_rng(24)
    # Two float inputs, given in either order: the multi-input fault of `layerkit run`.
    case("two_inputs", [h.make_node("Sub", ["a", "b"], ["y"])],
         [("a", T.FLOAT, [2, 3]), ("b", T.FLOAT, [2, 3])], [("y", T.FLOAT, [2, 3])],
         {"a": rng.standard_normal((2, 3)).astype(np.float32), "b": rng.standard_normal((2, 3)).astype(np.float32)})
    # No input at all: runs with no --input.
    case("no_inputs", [h.make_node("Constant", [], ["c"], value=nh.from_array(np.array([1.5, -2.0], np.float32))),
                       h.make_node("Neg", ["c"], ["y"])], [], [("y", T.FLOAT, [2])], {})
    # int64 in and out past float32's 2^24 (and float64's 2^53): exact only if no value goes through a float.
    case("int64_add", [h.make_node("Add", ["a", "b"], ["y"])],
         [("a", T.INT64, [4]), ("b", T.INT64, [4])], [("y", T.INT64, [4])],
         {"a": np.array([big, 5, -3, 2**62], np.int64), "b": np.array([1, 2**33 + 1, 3, 2**53 + 1], np.int64)})
    # The input itself as the output: nothing computed.
    case("int64_identity", [h.make_node("Identity", ["x"], ["y"])],
         [("x", T.INT64, [2, 2])], [("y", T.INT64, [2, 2])],
         {"x": np.array([[big + 1, -(big + 1)], [2**24 + 1, 7]], np.int64)})
    # int64 values that float32 cannot tell apart, compared: a bool output of int64 inputs.
    case("int64_equal", [h.make_node("Equal", ["a", "b"], ["y"])],
         [("a", T.INT64, [4]), ("b", T.INT64, [4])], [("y", T.BOOL, [4])],
         {"a": np.array([big + 1, 3, -big, 2**24 + 1], np.int64), "b": np.array([big, 3, -big, 2**24], np.int64)})
    # A bool output of float inputs.
    case("less_bool", [h.make_node("Less", ["a", "b"], ["y"])],
         [("a", T.FLOAT, [4]), ("b", T.FLOAT, [4])], [("y", T.BOOL, [4])],
         {"a": np.array([1, 5, -3, 0], np.float32), "b": np.array([2, 2, 2, 0], np.float32)})
    # float16 in and out, with a float32 step between; 65504 is float16's largest.
    case("float16_relu", [h.make_node("Cast", ["x"], ["f"], to=T.FLOAT), h.make_node("Relu", ["f"], ["r"]),
                          h.make_node("Cast", ["r"], ["y"], to=T.FLOAT16)],
         [("x", T.FLOAT16, [5])], [("y", T.FLOAT16, [5])],
         {"x": np.array([-1.5, 0.333, 2.0, 65504, -0.0], np.float16)})
    # A float input and an int64 index: the index steers a float computation.
    case("gather_index", [h.make_node("Gather", ["x", "i"], ["y"], axis=0)],
         [("x", T.FLOAT, [3, 2]), ("i", T.INT64, [2])], [("y", T.FLOAT, [2, 2])],
         {"x": np.arange(6, dtype=np.float32).reshape(3, 2), "i": np.array([2, 0], np.int64)})
    # uint8 and float64 in; float64 and int32 out (values float32 holds exactly).
    case("mixed_types", [h.make_node("Cast", ["u"], ["uf"], to=T.DOUBLE), h.make_node("Add", ["uf", "d"], ["y"]),
                         h.make_node("Cast", ["d"], ["z"], to=T.INT32)],
         [("u", T.UINT8, [4]), ("d", T.DOUBLE, [4])], [("y", T.DOUBLE, [4]), ("z", T.INT32, [4])],
         {"u": np.array([0, 1, 200, 255], np.uint8), "d": np.array([0.5, -2.75, 1024.0, -7.0], np.float64)})
    # A transformer's inputs: token ids into an embedding table, position ids from the
    # attention mask (CumSum), the mask as a float multiplier and as an additive bias of
    # -FLT_MAX (Where on a bool): integer and bool values computed at run time.
    vocab, width = 40, 3
    table = rng.standard_normal((vocab, width)).astype(np.float32)
    positions = rng.standard_normal((8, width)).astype(np.float32)
    constant = lambda name, value: h.make_node("Constant", [], [name], value=nh.from_array(value, name))
    case("token_embedding", [
        constant("table", table), constant("positions", positions), constant("axis", np.array(1, np.int64)),
        constant("one", np.array(1, np.int64)), constant("zero", np.array(0, np.int64)),
        constant("last", np.array([2], np.int64)), constant("lowest", np.array(np.finfo(np.float32).min, np.float32)),
        constant("nothing", np.array(0, np.float32)),
        h.make_node("Gather", ["table", "ids"], ["tokens"]),
        h.make_node("CumSum", ["mask", "axis"], ["count"]), h.make_node("Sub", ["count", "one"], ["before"]),
        h.make_node("Mul", ["before", "mask"], ["position_ids"]),
        h.make_node("Gather", ["positions", "position_ids"], ["placed"]),
        h.make_node("Add", ["tokens", "placed"], ["summed"]),
        h.make_node("Cast", ["mask"], ["weights"], to=T.FLOAT), h.make_node("Unsqueeze", ["weights", "last"], ["column"]),
        h.make_node("Mul", ["summed", "column"], ["y"]),
        h.make_node("Equal", ["mask", "zero"], ["padding"]),
        h.make_node("Where", ["padding", "lowest", "nothing"], ["bias"])],
        [("ids", T.INT64, [2, 5]), ("mask", T.INT64, [2, 5])],
        [("y", T.FLOAT, [2, 5, width]), ("position_ids", T.INT64, [2, 5]), ("padding", T.BOOL, [2, 5]),
         ("bias", T.FLOAT, [2, 5])],
        {"ids": np.array([[3, 39, 7, 0, 0], [12, 12, 5, 1, 0]], np.int64),
         "mask": np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 0]], np.int64)})
    # float64 computed in double: sums float32 would round (1 + 2^-40, 1e10 + 0.5).
    case("float64_sum", [h.make_node("Add", ["a", "b"], ["s"]), h.make_node("Mul", ["s", "b"], ["y"])],
         [("a", T.DOUBLE, [3]), ("b", T.DOUBLE, [3])], [("y", T.DOUBLE, [3])],
         {"a": np.array([1.0, 1e10, -3.0], np.float64), "b": np.array([2.0**-40, 0.5, 1.0 / 3.0], np.float64)})
    # A reshape target given as an input: a value the plan needs at prepare, planned per value.
    case("reshape_by_input", [h.make_node("Reshape", ["x", "shape"], ["y"])],
         [("x", T.FLOAT, [2, 3]), ("shape", T.INT64, [2])], [("y", T.FLOAT, [3, 2])],
         {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "shape": np.array([3, 2], np.int64)})
    print("wrote", len(os.listdir(OUT)), "cases under", os.path.normpath(OUT))


if __name__ == "__main__":
    sys.exit(main())
