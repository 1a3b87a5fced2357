#!/usr/bin/env python3
"""Reference cases (family `silu_fusion`) for the SiLU fusion
(ModelGraph+Silu.swift): SiLU as PyTorch's exporters write it, Mul(x,
Sigmoid(x)) in either operand order, which LayerKit runs as one Swish step
(beta 1), and near misses it must leave as they are. Each output's reference
is its float64 value rounded to float32, written only when onnxruntime
(every node on its own, optimizations off) agrees with it to 4e-6
max(1, |y|): its Sigmoid's own error reaches 1.6e-6 there, and in the far
negative tail its relative error passes ONNX's 1e-3, so its outputs are no
reference here. The fused cases hold the CPU to 1e-6 max(1, |y|)
(tolerance.json; the fused Swish, lk_swish.c, is within about 3e-7). Inputs
span [-20, 20] (both tails of the sigmoid). Tests/LayerKitTests/SiluFusionTests.swift checks which
steps each model becomes. Run: /tmp/ort-venv/bin/python -P Scripts/onnx_cases/silu_fusion.py"""
import json
import os
import sys

# math.py in this folder shadows the standard `math` module (numpy imports
# it): the folder goes to the end of the path.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or '.') != HERE] + [HERE]

import numpy as np  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

from common import ROOT, reset, save_case, tensor_info  # noqa: E402

FAMILY = 'silu_fusion'
reset(FAMILY)
rng = np.random.default_rng(20261205)


def node(op, inputs, output):
    return helper.make_node(op, inputs, [output], name=output)


def sigmoid64(x):
    return 1 / (1 + np.exp(-x.astype(np.float64)))


def save(name, nodes, shape, references, fused=True):
    """`references`: output name -> its float64 function of x."""
    x = rng.permutation(np.linspace(-20, 20, int(np.prod(shape)), dtype=np.float32)).reshape(shape)
    results = save_case(FAMILY, name, nodes, [tensor_info('x', shape)],
                        [tensor_info(o, shape) for o in references], opset=17, input_data={'x': x})
    for i, (output, reference) in enumerate(references.items()):
        expected = reference(x)
        worst = (np.abs(results[i] - expected) / np.maximum(1, np.abs(expected))).max()
        assert worst <= 4e-6, (name, output, worst)
        tensor = numpy_helper.from_array(expected.astype(np.float32), output)
        with open(os.path.join(ROOT, FAMILY, name, 'test_data_set_0', f'output_{i}.pb'), 'wb') as f:
            f.write(tensor.SerializeToString())
    if fused:
        with open(os.path.join(ROOT, FAMILY, name, 'tolerance.json'), 'w') as f:
            json.dump({'cpu': 1e-6, 'measure': 'max |y - ref| / max(1, |ref|)',
                       'rule': 'float64 SiLU the reference; the fused Swish computes x / (1 + exp(-x))'}, f, indent=1)


SILU = {'y': lambda x: x * sigmoid64(x)}


save('silu', [node('Sigmoid', ['x'], 'sigmoid'), node('Mul', ['x', 'sigmoid'], 'y')], (2, 3, 37), SILU)
save('silu_sigmoid_first', [node('Sigmoid', ['x'], 'sigmoid'), node('Mul', ['sigmoid', 'x'], 'y')], (5, 41), SILU)
# Not fused: the sigmoid is also a graph output; the Mul's other operand is not the sigmoid's input (GLU-like).
save('near_sigmoid_output', [node('Sigmoid', ['x'], 'sigmoid'), node('Mul', ['x', 'sigmoid'], 'y')], (2, 17),
     {**SILU, 'sigmoid': sigmoid64}, fused=False)
save('near_other_operand', [node('Neg', ['x'], 'negated'), node('Sigmoid', ['x'], 'sigmoid'),
                            node('Mul', ['negated', 'sigmoid'], 'y')], (2, 17),
     {'y': lambda x: -x * sigmoid64(x)}, fused=False)
