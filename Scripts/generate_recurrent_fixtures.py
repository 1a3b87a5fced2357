#!/usr/bin/env python3
"""Recurrent-model fixtures (ONNX LSTM, GRU, RNN) with references LayerKit
does not compute, for RecurrentModelTests (Tests/LayerKitCommandsTests).

What it writes (Tests/LayerKitTests/Fixtures/recurrent/, stale cases removed first),
one folder per case:
    model.onnx               the model
    <input name>.npy         each graph input, seeded (token ids as int64,
                             sequence lengths as int32)
    <output name>.npy        the reference output, float64
    case.json                {"inputs": [...], "outputs": [...]}: the names, in the model's order
    tolerance.json           the CPU and GPU bounds (Scripts/model_zoo_common.py):
                             max |y - ref| / max(1, |ref|) <= cpu (1e-4) on the
                             CPU, <= gpu = max(1e-3, 2 x the error onnxruntime
                             shows with every node output rounded to fp16) on the GPU
    README.md                the cases and the tool versions (top folder)

The cases:
    lstm_classifier_{torchscript,dynamo}   a seeded PyTorch text classifier: an
        embedding of int64 token ids, a 2-layer bidirectional LSTM, a linear
        head on the last step. Reference: the same module in float64.
    gru_classifier_{torchscript,dynamo}    float features [batch, seq, 6] into a
        2-layer bidirectional batch-first GRU and a linear head; float64 reference.
    lstm_attributes, gru_attributes, rnn_attributes, ...   one hand-made node
        each (onnx.helper), with what the exporters never write: per-batch
        sequence_lens as an int32 graph input, initial states, peepholes,
        input_forget, clip, linear_before_reset, every activation of the spec
        with alphas and betas, reverse and bidirectional, Y_c. Reference:
        onnxruntime 1.32 on the CPU. onnxruntime refuses layout 1, so the
        batch-major cases are run there as their layout-0 twin and transposed.

How to run (from the repository root)
    python3 -m venv .build/recurrent-venv
    .build/recurrent-venv/bin/pip install torch==2.13.0+cpu onnx==1.23.2 onnxruntime==1.32.0 numpy==2.4.6 onnxscript
    .build/recurrent-venv/bin/python Scripts/generate_recurrent_fixtures.py
Everything is seeded (torch.manual_seed, numpy default_rng).
"""
import argparse
import json
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto, helper, numpy_helper
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_zoo_common  # noqa: E402  (the fp16-twin GPU tolerance)

OPSET = 22


# ---------------------------------------------------------------- PyTorch models

class LSTMClassifier(nn.Module):
    """Token ids -> embedding -> 2-layer bidirectional LSTM -> linear head on the last step."""

    def __init__(self, vocabulary=40, width=10, hidden=8, classes=5):
        super().__init__()
        self.embedding = nn.Embedding(vocabulary, width)
        self.lstm = nn.LSTM(width, hidden, num_layers=2, bidirectional=True)
        self.head = nn.Linear(2 * hidden, classes)

    def forward(self, ids):  # ids [seq, batch]
        y, _ = self.lstm(self.embedding(ids))
        return self.head(y[-1])


class GRUClassifier(nn.Module):
    """Features [batch, seq, 6] -> 2-layer bidirectional batch-first GRU -> linear head on the last step."""

    def __init__(self, features=6, hidden=7, classes=4):
        super().__init__()
        self.gru = nn.GRU(features, hidden, num_layers=2, bidirectional=True, batch_first=True)
        self.head = nn.Linear(2 * hidden, classes)

    def forward(self, x):
        y, _ = self.gru(x)
        return self.head(y[:, -1])


def export(module, example, exporter, input_name, output_name):
    """The exported ModelProto, with the exporter's defaults."""
    if exporter == "torchscript":
        path = "/tmp/layerkit_recurrent_export.onnx"
        torch.onnx.export(module, (example,), path, dynamo=False, input_names=[input_name],
                          output_names=[output_name], opset_version=17)
        return onnx.load(path)
    program = torch.onnx.export(module, (example,), dynamo=True, input_names=[input_name],
                                output_names=[output_name], verbose=False)
    return program.model_proto


def torch_cases():
    """(name, model, feeds, references) for the PyTorch models through each exporter."""
    cases = []
    torch.manual_seed(7)
    lstm = LSTMClassifier().eval()
    ids = torch.randint(0, 40, (9, 3), generator=torch.Generator().manual_seed(8))
    torch.manual_seed(9)
    gru = GRUClassifier().eval()
    x = torch.randn(2, 11, 6, generator=torch.Generator().manual_seed(10))
    for name, module, example, input_name in [("lstm_classifier", lstm, ids, "ids"), ("gru_classifier", gru, x, "x")]:
        with torch.no_grad():
            reference = module.double()(example if example.dtype == torch.int64 else example.double()).numpy()
            module.float()
        feed = example.numpy() if example.dtype == torch.int64 else example.numpy().astype(np.float32)
        for exporter in ("torchscript", "dynamo"):
            try:
                model = export(module, example, exporter, input_name, "logits")
            except Exception as failure:  # an exporter that fails here is reported, not fatal
                print(f"{name} {exporter}: export failed: {type(failure).__name__}: {failure}")
                continue
            feeds = {input_name: feed}
            cases.append((f"{name}_{exporter}", model, feeds, {"logits": reference}, (model, feeds, {"logits": reference})))
    return cases


# ---------------------------------------------------------------- hand-made nodes

def node_model(op, attributes, inputs, outputs, initializers, feeds):
    """A one-node model: `inputs` (names, "" for omitted) of which `feeds` are graph
    inputs and `initializers` constants; `outputs` (names, "" for omitted)."""
    node = helper.make_node(op, inputs, outputs, name=op.lower(), **attributes)
    elem = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32}
    graph = helper.make_graph(
        [node], f"{op.lower()}_case",
        [helper.make_tensor_value_info(n, elem[v.dtype], list(v.shape)) for n, v in feeds.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs if n],
        [numpy_helper.from_array(v, n) for n, v in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 10
    return model


def run_ort(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds)))


def attribute_case(rng, op, hidden, direction="forward", layout=0, attributes=None, extras=(), lengths=None,
                   outputs=None, steps=5, batch=3, features=4):
    """One node of `op` with random weights, X and the optional inputs `extras`
    (B, initial_h, initial_c, P), `lengths` as an int32 graph input; the reference
    from onnxruntime (layout 1 through its layout-0 twin, transposed)."""
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    directions = 2 if direction == "bidirectional" else 1
    f32 = lambda *shape: rng.uniform(-1, 1, shape).astype(np.float32)  # noqa: E731
    values = {"X": f32(steps, batch, features), "W": f32(directions, gates * hidden, features),
              "R": f32(directions, gates * hidden, hidden)}
    if "B" in extras:
        values["B"] = f32(directions, 2 * gates * hidden)
    if lengths is not None:
        values["sequence_lens"] = np.array(lengths, dtype=np.int32)
    for state in ("initial_h", "initial_c"):
        if state in extras:
            values[state] = f32(directions, batch, hidden)
    if "P" in extras:
        values["P"] = f32(directions, 3 * hidden)
    order = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"][:{"LSTM": 8}.get(op, 6)]
    last = max(i for i, n in enumerate(order) if n in values)
    inputs = [n if n in values else "" for n in order[:last + 1]]
    outputs = outputs or (["Y", "Y_h", "Y_c"] if op == "LSTM" else ["Y", "Y_h"])
    feed_names = ["X", "sequence_lens", "initial_h", "initial_c"]
    attributes = dict(attributes or {}, hidden_size=hidden, direction=direction)
    feeds = {n: v for n, v in values.items() if n in feed_names}
    initializers = {n: v for n, v in values.items() if n not in feed_names}
    runnable = node_model(op, attributes, inputs, outputs, initializers, feeds)
    reference = run_ort(runnable, feeds)
    ort_form = (runnable, feeds, {n: v.astype(np.float64) for n, v in reference.items()})
    if layout == 1:
        # Batch-major: X [batch, seq, in], states [batch, dirs, hidden], Y [batch, seq, dirs, hidden].
        feeds = {n: (v.transpose(1, 0, 2) if v.ndim == 3 else v) for n, v in feeds.items()}
        reference = {n: (v.transpose(2, 0, 1, 3) if n == "Y" else v.transpose(1, 0, 2)) for n, v in reference.items()}
        attributes["layout"] = 1
    model = node_model(op, attributes, inputs, outputs, initializers, feeds)
    return model, feeds, {n: v.astype(np.float64) for n, v in reference.items()}, ort_form


def attribute_cases():
    rng = np.random.default_rng(2024)
    every = [("Relu", None, None), ("Tanh", None, None), ("Sigmoid", None, None), ("Affine", 0.5, 0.1),
             ("LeakyRelu", 0.2, None), ("ThresholdedRelu", 0.3, None), ("ScaledTanh", 1.5, 0.7),
             ("HardSigmoid", 0.25, 0.45), ("Elu", 0.8, None), ("Softsign", None, None), ("Softplus", None, None)]

    def activations(names):
        chosen = [a for n in names for a in every if a[0] == n]
        given = {"activations": [a[0] for a in chosen],
                 "activation_alpha": [a[1] for a in chosen if a[1] is not None],
                 "activation_beta": [a[2] for a in chosen if a[2] is not None]}
        return {key: value for key, value in given.items() if value}

    cases = [
        ("lstm_attributes", attribute_case(
            rng, "LSTM", 5, "bidirectional", extras=("B", "initial_h", "initial_c", "P"), lengths=[5, 2, 0],
            attributes={"clip": 1.5, **activations(["HardSigmoid", "Softsign", "ScaledTanh",
                                                    "Sigmoid", "Elu", "Affine"])})),
        ("lstm_input_forget", attribute_case(rng, "LSTM", 4, "reverse", extras=("B", "P"), lengths=[3, 5, 1],
                                             attributes={"input_forget": 1})),
        ("lstm_batch_major", attribute_case(rng, "LSTM", 3, "bidirectional", layout=1,
                                            extras=("B", "initial_h", "initial_c"), outputs=["Y", "", "Y_c"])),
        ("gru_attributes", attribute_case(
            rng, "GRU", 6, "bidirectional", extras=("B", "initial_h"), lengths=[4, 5, 1],
            attributes={"clip": 2.0, **activations(["LeakyRelu", "ThresholdedRelu", "Softplus", "Relu"])})),
        ("gru_linear_before_reset", attribute_case(rng, "GRU", 5, "reverse", extras=("B", "initial_h"),
                                                   lengths=[5, 3, 4], attributes={"linear_before_reset": 1})),
        ("gru_batch_major", attribute_case(rng, "GRU", 4, "forward", layout=1, extras=("B",),
                                           attributes={"linear_before_reset": 1})),
        ("rnn_attributes", attribute_case(rng, "RNN", 5, "bidirectional", extras=("B", "initial_h"),
                                          lengths=[2, 5, 3], attributes={"clip": 0.9, **activations(["Relu", "Tanh"])})),
        ("rnn_batch_major", attribute_case(rng, "RNN", 4, "reverse", layout=1, extras=("B",),
                                           attributes=activations(["Elu"]))),
        # Wide enough that a step's hidden units split over threads (RecurrentRun.walk).
        ("lstm_wide", attribute_case(rng, "LSTM", 96, "forward", extras=("B",), outputs=["Y", "Y_h", "Y_c"],
                                     steps=3, batch=1, features=4)),
    ]
    return [(name, *case) for name, case in cases]


# ---------------------------------------------------------------- writing

def write_case(root, name, model, feeds, references, ort_form):
    """The case's folder; `ort_form` is the model, feeds and references in
    a form onnxruntime runs (layout 0), for the tolerance and the check."""
    folder = os.path.join(root, name)
    os.makedirs(folder)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    for input_name, value in feeds.items():
        np.save(os.path.join(folder, f"{input_name}.npy"), value)
    outputs = [o.name for o in model.graph.output]
    for output_name in outputs:
        np.save(os.path.join(folder, f"{output_name}.npy"), references[output_name])
    with open(os.path.join(folder, "case.json"), "w") as f:
        json.dump({"inputs": list(feeds), "outputs": outputs}, f)
        f.write("\n")
    ort_model, ort_feeds, ort_references = ort_form
    float32_refs = [ort_references[n].astype(np.float32) for n in outputs]
    model_zoo_common.write_tolerance(folder, model_zoo_common.twin_error(ort_model, ort_feeds, float32_refs))
    # onnxruntime in float32 must meet the CPU bound too: the float64 reference is the model's.
    check = run_ort(ort_model, ort_feeds)
    for n in outputs:
        error = model_zoo_common.relative_error(check[n], ort_references[n])
        assert error <= model_zoo_common.CPU_TOLERANCE, f"{name}: onnxruntime is {error} off {n}"
    return outputs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "Tests", "LayerKitTests",
                                                      "Fixtures", "recurrent"))
    root = os.path.abspath(parser.parse_args().out)
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    lines = ["# Recurrent fixtures", "",
             "Written by `Scripts/generate_recurrent_fixtures.py` (see its docstring); read by "
             "`Tests/LayerKitCommandsTests/RecurrentModelTests.swift`.", "",
             f"torch {torch.__version__}, onnx {onnx.__version__}, onnxruntime {ort.__version__}, "
             f"numpy {np.__version__}.", "", "| case | ops | inputs | outputs | reference |", "|---|---|---|---|---|"]
    for name, model, feeds, references, ort_form in torch_cases() + attribute_cases():
        outputs = write_case(root, name, model, feeds, references, ort_form)
        ops = sorted({n.op_type for n in model.graph.node})
        source = "PyTorch float64" if "classifier" in name else "onnxruntime"
        lines.append(f"| {name} | {', '.join(ops)} | {', '.join(feeds)} | {', '.join(outputs)} | {source} |")
        print(name, ops)
    with open(os.path.join(root, "README.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
