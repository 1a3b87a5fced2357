"""Writes empty_past.onnx, the C and Python tests' model of zero-size tensors (run from anywhere):

    /tmp/ort-venv/bin/python -P Tests/C/Fixtures/make_empty_past_model.py

A KV cache's step in miniature: past [1, 2, P, 3] and x [1, 2, 1, 3] ->
present = Concat(past, x, axis 2) [1, 2, P + 1, 3] and doubled = past * 2
[1, 2, P, 3]. With P = 0 (a decoder's first step) past and doubled have no
elements, and present is x; the tests compute both with numpy. onnxruntime
runs it at P = 0 and P = 2 here, so the model is one ONNX allows.
"""
import os

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper


def main():
    nodes = [
        helper.make_node("Concat", ["past", "x"], ["present"], name="concat", axis=2),
        helper.make_node("Mul", ["past", "two"], ["doubled"], name="double"),
    ]
    graph = helper.make_graph(
        nodes, "empty_past",
        [helper.make_tensor_value_info("past", TensorProto.FLOAT, [1, 2, "P", 3]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 1, 3])],
        [helper.make_tensor_value_info("present", TensorProto.FLOAT, [1, 2, "P1", 3]),
         helper.make_tensor_value_info("doubled", TensorProto.FLOAT, [1, 2, "P", 3])],
        initializer=[helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])])
    model = helper.make_model(graph, producer_name="make_empty_past_model.py", ir_version=8,
                              opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "empty_past.onnx")
    onnx.save(model, path)
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    x = np.arange(6, dtype=np.float32).reshape(1, 2, 1, 3)
    for length in (0, 2):
        past = np.full((1, 2, length, 3), -1.5, np.float32)
        present, doubled = session.run(None, {"past": past, "x": x})
        assert np.array_equal(present, np.concatenate([past, x], axis=2)) and np.array_equal(doubled, past * 2)
    print(path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
