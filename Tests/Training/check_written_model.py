#!/usr/bin/env python3
"""Checks a model LayerKit wrote after training (UpdatedModelFile) with stock onnxruntime.

    check_written_model.py UPDATED.onnx --input x.npy --expected prediction.npy \
        [--original MODEL.onnx --updated NAME[,NAME...]] [--ort-library liblayerkit_ort.so] [--tolerance 1e-5]

- onnxruntime (CPU, one thread, no graph optimizations) runs UPDATED.onnx on x.npy; its first
  output must be within TOLERANCE * max(1, max |expected|) of prediction.npy, LayerKit's CPU
  prediction of the same model. Nodes of domain `layerkit` run through --ort-library when given;
  otherwise layerkit.Swish(x, beta) is run as its standard twin, Mul(x, Unsqueeze(beta)) -> Sigmoid
  -> Mul(x, .), in memory (the file itself is run unchanged where it has no custom nodes).
- With --original: every initializer not named in --updated is bit-identical to the original's
  (its serialized TensorProto), the named ones hold FLOAT data of the original dims, and the nodes,
  inputs, outputs and opset imports are unchanged.

Exits 1 with a line per failure; prints the measured error otherwise.
"""
import argparse
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper


def standard_twin(model):
    """`model` with each layerkit.Swish(x, beta) replaced by standard ops onnxruntime runs."""
    twin = onnx.ModelProto()
    twin.CopyFrom(model)
    nodes = []
    for node in twin.graph.node:
        if node.domain != 'layerkit':
            nodes.append(node)
            continue
        if node.op_type != 'Swish' or len(node.input) != 2:
            sys.exit(f'check_written_model: {node.op_type} nodes of domain layerkit need --ort-library')
        x, beta = node.input
        y = node.output[0]
        t = 'check.' + y
        nodes += [helper.make_node('Unsqueeze', [beta, 'check.axes'], [t + '.beta']),
                  helper.make_node('Mul', [x, t + '.beta'], [t + '.scaled']),
                  helper.make_node('Sigmoid', [t + '.scaled'], [t + '.gate']),
                  helper.make_node('Mul', [x, t + '.gate'], [y])]
    if len(nodes) == len(twin.graph.node):
        return model
    twin.graph.initializer.append(numpy_helper.from_array(np.array([1, 2], dtype=np.int64), 'check.axes'))
    del twin.graph.node[:]
    twin.graph.node.extend(nodes)
    kept = [o for o in twin.opset_import if o.domain != 'layerkit']
    del twin.opset_import[:]
    twin.opset_import.extend(kept)
    return twin


def run(model, inputs, library):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    if library:
        options.register_custom_ops_library(library)
    else:
        model = standard_twin(model)
    session = ort.InferenceSession(model.SerializeToString(), options, providers=['CPUExecutionProvider'])
    feeds = [i.name for i in session.get_inputs()]
    if len(inputs) != len(feeds):
        sys.exit(f'check_written_model: the model takes {len(feeds)} inputs ({", ".join(feeds)}), '
                 f'{len(inputs)} given')
    return session.run(None, dict(zip(feeds, inputs)))[0]


def compare_files(original, updated, names):
    failures = []
    old = {t.name: t for t in original.graph.initializer}
    new = {t.name: t for t in updated.graph.initializer}
    if list(old) != list(new):
        failures.append(f'initializer names differ: {list(old)} vs {list(new)}')
    for name in names:
        if name not in new:
            failures.append(f'updated initializer {name} is missing')
        elif new[name].data_type != onnx.TensorProto.FLOAT or list(new[name].dims) != list(old[name].dims):
            failures.append(f'updated initializer {name} is not FLOAT of dims {list(old[name].dims)}')
    for name, tensor in old.items():
        if name not in names and name in new and new[name].SerializeToString() != tensor.SerializeToString():
            failures.append(f'frozen initializer {name} changed')
    for what in ['node', 'input', 'output']:
        if [x.SerializeToString() for x in getattr(original.graph, what)] != \
                [x.SerializeToString() for x in getattr(updated.graph, what)]:
            failures.append(f'the graph\'s {what}s changed')
    if [o.SerializeToString() for o in original.opset_import] != [o.SerializeToString() for o in updated.opset_import]:
        failures.append('the opset imports changed')
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('model')
    parser.add_argument('--input', action='append', required=True, help='a .npy input, in the model\'s input order')
    parser.add_argument('--expected', required=True, help='LayerKit\'s CPU prediction (.npy) of the first output')
    parser.add_argument('--original', help='the model before training')
    parser.add_argument('--updated', default='', help='the initializers training replaced, comma-separated')
    parser.add_argument('--ort-library', help='liblayerkit_ort.so, to run layerkit nodes as themselves')
    parser.add_argument('--tolerance', type=float, default=1e-5)
    args = parser.parse_args()

    model = onnx.load(args.model)
    onnx.checker.check_model(model)
    failures = []
    if args.original:
        failures += compare_files(onnx.load(args.original), model, [n for n in args.updated.split(',') if n])
    ours = run(model, [np.load(path) for path in args.input], args.ort_library)
    expected = np.load(args.expected)
    if ours.shape != expected.shape:
        failures.append(f'onnxruntime gives shape {list(ours.shape)}, LayerKit {list(expected.shape)}')
        error = float('inf')
    else:
        error = float(np.max(np.abs(ours.astype(np.float64) - expected.astype(np.float64))))
        bound = args.tolerance * max(1.0, float(np.max(np.abs(expected))))
        if not error <= bound:
            failures.append(f'onnxruntime and LayerKit differ by {error:.3g} (allowed {bound:.3g})')
    for failure in failures:
        print(f'{args.model}: {failure}')
    if failures:
        sys.exit(1)
    print(f'{args.model}: onnxruntime within {error:.3g} of LayerKit'
          + (f'; every initializer but {args.updated or "none"} bit-identical' if args.original else ''))


if __name__ == '__main__':
    main()
