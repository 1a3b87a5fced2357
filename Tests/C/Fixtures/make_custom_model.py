"""Writes custom_layer.onnx, the C tests' model with a custom node (run from anywhere):

    /work/venv/bin/python Tests/C/Fixtures/make_custom_model.py

x [1, 3, 4, 5] -> Add(bias [1, 3, 1, 1]) -> layerkit.CustomSwish -> y [1, 3, 4, 5].
The custom node has no attributes and no further inputs: test_registration.c
registers CustomSwish as C callbacks and as a formula, and computes
y = s * sigmoid(s), s = x + bias, in float64. The bias values are below.
"""
import os

import onnx
from onnx import TensorProto, helper

BIAS = [0.5, -1.0, 2.0]


def main():
    bias = helper.make_tensor("bias", TensorProto.FLOAT, [1, 3, 1, 1], BIAS)
    nodes = [
        helper.make_node("Add", ["x", "bias"], ["s"], name="add"),
        helper.make_node("CustomSwish", ["s"], ["y"], name="custom", domain="layerkit"),
    ]
    graph = helper.make_graph(
        nodes, "custom_layer",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 5])],
        initializer=[bias])
    model = helper.make_model(graph, producer_name="make_custom_model.py", ir_version=8,
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("layerkit", 1)])
    onnx.checker.check_model(model)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "custom_layer.onnx")
    onnx.save(model, path)
    print(path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
