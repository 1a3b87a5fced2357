"""Writes the Triton example's model, model_repository/layerkit_swish/1/model.onnx:
a small MLP whose activation is LayerKit's custom op,

    x [batch, 16] -> MatMul(16x32) -> Add -> layerkit.Swish(beta=1.5) -> MatMul(32x4) -> Add -> y [batch, 4]

with seeded weights. onnxruntime runs the layerkit.Swish node through
liblayerkit_ort.so, the standard nodes itself. The output is deterministic:
check_config.py rebuilds it and compares it byte for byte with the committed file.

    python Examples/triton/make_model.py [--output PATH]
"""

import argparse
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MODEL_PATH = Path(__file__).resolve().parent / "model_repository" / "layerkit_swish" / "1" / "model.onnx"
FEATURES, HIDDEN, CLASSES = 16, 32, 4
BETA = 1.5


def build_model() -> onnx.ModelProto:
    """The model, weights drawn from a fixed seed."""
    rng = np.random.default_rng(17)

    def weight(name, *shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) / np.float32(np.sqrt(shape[0])), name)

    initializers = [weight("w1", FEATURES, HIDDEN), weight("b1", HIDDEN),
                    weight("w2", HIDDEN, CLASSES), weight("b2", CLASSES)]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["hidden_linear"], name="fc1"),
        helper.make_node("Add", ["hidden_linear", "b1"], ["hidden"], name="fc1_bias"),
        helper.make_node("Swish", ["hidden"], ["activated"], name="swish", domain="layerkit", beta=BETA),
        helper.make_node("MatMul", ["activated", "w2"], ["logits_linear"], name="fc2"),
        helper.make_node("Add", ["logits_linear", "b2"], ["y"], name="fc2_bias"),
    ]
    graph = helper.make_graph(
        nodes, "layerkit_swish",
        inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", FEATURES])],
        outputs=[helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", CLASSES])],
        initializer=initializers)
    model = helper.make_model(graph, producer_name="LayerKit Examples/triton/make_model.py",
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("layerkit", 1)])
    # IR version 8, not onnx 1.23's default: older than every onnxruntime the op
    # library loads in (1.21 and newer), so every Triton release it serves reads it.
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description="Write the Triton example's ONNX model.")
    parser.add_argument("--output", type=Path, default=MODEL_PATH)
    args = parser.parse_args()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_bytes(build_model().SerializeToString())
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
