#!/usr/bin/env python3
"""The onnx wheel's `light` models (onnx/backend/test/data/light/light_*.onnx:
AlexNet, DenseNet-121, Inception v1/v2, ResNet-50, ShuffleNet, SqueezeNet,
VGG-19, ZFNet-512 -- real architectures whose every weight is made by a
ConstantOfShape node filled with 0.02) with seeded random weights, as cases of
the onnx backend-test layout with onnxruntime's outputs and the fp16-twin GPU
tolerance (Scripts/model_zoo_common.py).

    python Scripts/light_models.py [--out DIR] [--only NAME,...]

Needs only onnx, onnxruntime and numpy (CI can run it from a bare venv:
`make test-models`). Output: .build/model-zoo/light/light_<name>/ (about 1.4
GB in all -- VGG-19 alone is 575 MB of weights -- so they are made, not
committed).

Each ConstantOfShape-made weight becomes an initializer of seeded random
values, chosen by what reads it so that activations keep O(1) at every depth:
Conv and Gemm weights He-normal (std sqrt(2 / fan_in)), biases N(0, 0.01^2),
(He's gain 2 where a Relu follows, through per-channel ops, LeCun's 1 where
none does), BatchNormalization scale U(0.8, 1.2) and bias N(0, 0.1^2), its
mean and variance measured on the input (calibrate: what a trained network's
running statistics are; random ones let ShuffleNet's logits reach 1e7, past
fp16's range); the per-channel Mul (through Unsqueeze) U(0.8, 1.2) and Add N(0,
0.1^2) of DenseNet's scale layers. The models end in Softmax: the Softmax's
input is added as a second graph output `logits`, so errors are measured
where they are not squashed. The input is N(0, 1), seeded. IR version 3's
rule that every initializer is also a graph input is dropped (IR 4): the
weights are constants, the image the only input.
"""

import argparse
import glob
import json
import os
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE]
from model_zoo_common import run, save_case  # noqa: E402

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


def weight(rng, role, shape, node, gain):
    op, k = role
    n = int(np.prod(shape))
    if op == "Conv" and k == 1:
        fan_in = int(np.prod(shape[1:]))
        return rng.normal(0, np.sqrt(gain / fan_in), shape)
    if op == "Gemm" and k == 1:
        trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
        fan_in = int(np.prod(shape[1:])) if trans_b else shape[0]
        return rng.normal(0, np.sqrt(gain / fan_in), shape)
    if (op in ("Conv", "Gemm") and k == 2):
        return rng.normal(0, 0.01, shape)
    if op == "BatchNormalization":
        return {1: lambda: rng.uniform(0.8, 1.2, n), 2: lambda: rng.normal(0, 0.1, n),
                3: lambda: rng.normal(0, 0.1, n), 4: lambda: rng.uniform(0.5, 1.5, n)}[k]().reshape(shape)
    if op == "Mul":
        return rng.uniform(0.8, 1.2, shape)
    if op in ("Add", "Sum"):
        return rng.normal(0, 0.1, shape)
    raise ValueError(f"no rule for a weight read by {op} input {k}")


def followed_by_relu(graph, node):
    """Whether `node`'s output reaches a Relu through per-channel ops only
    (BatchNormalization, DenseNet's Mul/Add scale layers): He's gain 2 then,
    LeCun's 1 otherwise (ShuffleNet's depthwise convolutions have no Relu)."""
    value = node.output[0]
    for _ in range(4):
        readers = [n for n in graph.node if value in n.input]
        if not readers:
            return False
        if any(n.op_type == "Relu" for n in readers):
            return True
        nxt = [n for n in readers if n.op_type in ("BatchNormalization", "Mul", "Add")]
        if not nxt:
            return False
        value = nxt[0].output[0]
    return False


def calibrate(model, feeds):
    """BatchNormalization's mean and variance set to the statistics of what
    it reads on `feeds`, as a trained network's running statistics match its
    data, so that activations stay O(1) however deep the network is. Exact:
    BNs are calibrated level by level (a BN's level is one more than the
    deepest BN upstream of it), one onnxruntime run per level, each seeing the
    levels before it calibrated. (One pass over all at once oscillates:
    ShuffleNet's logits reached 1e35 on the second pass.)"""
    graph = model.graph
    bns = [n for n in graph.node if n.op_type == "BatchNormalization"]
    if not bns:
        return model
    producer = {o: n for n in graph.node for o in n.output}
    level = {}

    def bn_level(value, memo={}):
        # The deepest BN level among the producers upstream of `value` (0: none).
        if value in memo:
            return memo[value]
        stack, seen, deepest = [value], set(), 0
        while stack:
            v = stack.pop()
            node = producer.get(v)
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            if node.op_type == "BatchNormalization":
                deepest = max(deepest, level[id(node)])
                continue
            stack.extend(node.input)
        memo[value] = deepest
        return deepest

    for n in bns:  # node order is topological
        level[id(n)] = bn_level(n.input[0], {}) + 1
    by_name = {i.name: i for i in graph.initializer}
    for depth in range(1, max(level.values()) + 1):
        group = [n for n in bns if level[id(n)] == depth]
        probe = onnx.ModelProto.FromString(model.SerializeToString())
        wanted = sorted({n.input[0] for n in group})
        del probe.graph.output[:]
        probe.graph.output.extend(helper.make_tensor_value_info(v, TensorProto.FLOAT, None) for v in wanted)
        values = dict(zip(wanted, run(probe, feeds)))
        for n in group:
            x = values[n.input[0]].astype(np.float64)
            axes = (0,) + tuple(range(2, x.ndim))
            for k, stat in ((3, x.mean(axis=axes)), (4, x.var(axis=axes) + 1e-3)):
                old = by_name[n.input[k]]
                old.CopyFrom(numpy_helper.from_array(stat.astype(np.float32).reshape(
                    numpy_helper.to_array(old).shape), old.name))
    return model


def randomized(path):
    """The light model at `path` with its ConstantOfShape weights replaced."""
    model = onnx.load(path)
    graph = model.graph
    name = os.path.basename(path)[:-5]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    shapes = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    made = {n.output[0]: n for n in graph.node if n.op_type == "ConstantOfShape"}
    # A few weights are stored as real (trained) values instead: replaced too,
    # so that every weight follows one rule (ShuffleNet's first BN variance,
    # 6.5e-14, is no fit for random weights around it).
    stored = {i.name: list(i.dims) for i in graph.initializer if i.data_type == TensorProto.FLOAT}
    weights = dict(stored, **{out: [int(d) for d in shapes[n.input[0]]] for out, n in made.items()})
    # What reads each weight (through an Unsqueeze or Reshape for DenseNet's
    # scale layers and Inception's classifier).
    readers = {}
    unsqueezed = {}
    for node in graph.node:
        for k, i in enumerate(node.input):
            if i in weights:
                if node.op_type in ("Unsqueeze", "Reshape", "Squeeze", "Flatten") and k == 0:
                    unsqueezed[node.output[0]] = i
                else:
                    readers[i] = ((node.op_type, k), node)
            elif i in unsqueezed:
                readers[unsqueezed[i]] = ((node.op_type, k), node)
    initializers = []
    used_shapes = {n.input[0] for n in made.values()}
    for out, shape in weights.items():
        if out not in readers:
            if out in made:
                raise ValueError(f"{name}: nothing reads {out}")
            continue
        role, reader = readers[out]
        gain = 2.0 if followed_by_relu(graph, reader) else 1.0
        initializers.append(numpy_helper.from_array(weight(rng, role, shape, reader, gain).astype(np.float32), out))
    replaced = {i.name for i in initializers}
    kept = [n for n in graph.node if n.op_type != "ConstantOfShape"]
    del graph.node[:]
    graph.node.extend(kept)
    rest = [i for i in graph.initializer if i.name not in used_shapes and i.name not in replaced]
    del graph.initializer[:]
    graph.initializer.extend(rest + initializers)
    constant = {i.name for i in graph.initializer}
    inputs = [i for i in graph.input if i.name not in constant and i.name not in made and i.name not in used_shapes]
    del graph.input[:]
    graph.input.extend(inputs)
    model.ir_version = max(model.ir_version, 4)
    # The Softmax's input as a second output, `logits`.
    softmax = [n for n in graph.node if n.op_type == "Softmax" and n.output[0] in {o.name for o in graph.output}]
    if softmax:
        logits = softmax[0].input[0]
        inferred = onnx.shape_inference.infer_shapes(model)
        info = next((v for v in inferred.graph.value_info if v.name == logits), None)
        dims = [d.dim_value for d in info.type.tensor_type.shape.dim] if info is not None else None
        graph.output.append(helper.make_tensor_value_info(logits, TensorProto.FLOAT, dims))
    onnx.checker.check_model(model)
    return name, model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, ".build", "model-zoo", "light"))
    parser.add_argument("--only", help="comma-separated names (light_resnet50,...)")
    args = parser.parse_args()
    import onnxruntime
    print(f"onnx {onnx.__version__}, onnxruntime {onnxruntime.__version__}, numpy {np.__version__} -> {args.out}",
          flush=True)
    summaries = []
    for path in sorted(glob.glob(os.path.join(LIGHT, "light_*.onnx"))):
        name = os.path.basename(path)[:-5]
        if args.only and name not in args.only.split(","):
            continue
        name, model = randomized(path)
        graph_input = model.graph.input[0]
        dims = [d.dim_value for d in graph_input.type.tensor_type.shape.dim]
        x = np.random.default_rng(7).standard_normal(dims).astype(np.float32)
        model = calibrate(model, {graph_input.name: x})
        summaries.append(save_case(os.path.join(args.out, name), model, {graph_input.name: x},
                                   notes={"source": os.path.basename(path), "input": dims,
                                          "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__}))
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summaries, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
