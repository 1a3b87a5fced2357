#!/usr/bin/env python3
"""Reference cases (family `shared_nodes`) for common subexpressions
(ONNXImporter+SharedNodes.swift): nodes that apply the same op, with the
same attributes, to the same values as an earlier node, which LayerKit runs
once, and near misses it must run each time. The first case is the shape of
GPT-2's and BERT's exports: the one bool attention mask turned into an
additive bias in every layer by a `Where` reading that layer's own `Constant`
nodes. References are onnxruntime's (CPU, one thread, optimizations off, so
every node runs). Tests/LayerKitTests/SharedNodeTests.swift checks which
steps each model becomes. Run: /tmp/ort-venv/bin/python -P Scripts/onnx_cases/shared_nodes.py"""
import os
import sys

# math.py in this folder shadows the standard `math` module (numpy imports
# it): the folder goes to the end of the path.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or '.') != HERE] + [HERE]

import numpy as np  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

from common import reset, save_case, tensor_info  # noqa: E402

FAMILY = 'shared_nodes'
reset(FAMILY)
rng = np.random.default_rng(20261205)


def node(op, inputs, output, **attributes):
    return helper.make_node(op, inputs, [output], name=output, **attributes)


def constant(name, value):
    return node('Constant', [], name, value=helper.make_tensor(name, TensorProto.FLOAT, [], [value]))


def data(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# Three layers, each with its own mask bias: Where(mask, 0, -1e4) from its own two Constants, added to
# that layer's scores before Softmax. The three Wheres are one step.
layers = []
for i in range(3):
    scores = 'x' if i == 0 else f'softmax{i - 1}'
    layers += [constant(f'zero{i}', 0.0), constant(f'lowest{i}', -1e4),
               node('Where', ['mask', f'zero{i}', f'lowest{i}'], f'bias{i}'),
               node('Add', [scores, f'bias{i}'], f'masked{i}'),
               node('Softmax', [f'masked{i}'], f'softmax{i}', axis=-1)]
layers[-1].output[0] = 'y'
mask = rng.random((2, 1, 1, 8)) < 0.7
mask[..., 0] = True  # every row keeps a key
save_case(FAMILY, 'mask_bias_per_layer', layers,
          [tensor_info('x', (2, 3, 4, 8)), tensor_info('mask', mask.shape, TensorProto.BOOL)], [tensor_info('y', (2, 3, 4, 8))],
          input_data={'x': data(2, 3, 4, 8), 'mask': mask})

# The same op on the same computed value twice, and a third time on its own output: two steps, then the Add.
save_case(FAMILY, 'same_op_same_value', [node('Relu', ['x'], 'a'), node('Relu', ['x'], 'b'),
                                         node('Relu', ['a'], 'c'), node('Add', ['b', 'c'], 'y')],
          [tensor_info('x', (4, 9))], [tensor_info('y', (4, 9))], input_data={'x': data(4, 9)})

# Not shared: the attributes differ; the constants differ in value; both are graph outputs.
save_case(FAMILY, 'near_attributes', [node('Softmax', ['x'], 'a', axis=-1), node('Softmax', ['x'], 'b', axis=0),
                                      node('Add', ['a', 'b'], 'y')],
          [tensor_info('x', (5, 6))], [tensor_info('y', (5, 6))], input_data={'x': data(5, 6)})
save_case(FAMILY, 'near_constants', [constant('two', 2.0), constant('three', 3.0), node('Mul', ['x', 'two'], 'a'),
                                     node('Mul', ['x', 'three'], 'b'), node('Add', ['a', 'b'], 'y')],
          [tensor_info('x', (3, 7))], [tensor_info('y', (3, 7))], input_data={'x': data(3, 7)})
save_case(FAMILY, 'near_graph_outputs', [node('Exp', ['x'], 'a'), node('Exp', ['x'], 'b')],
          [tensor_info('x', (2, 5))], [tensor_info('a', (2, 5)), tensor_info('b', (2, 5))], input_data={'x': data(2, 5)})
