#!/usr/bin/env python3
"""Reference cases (family `gelu_fusion`) for the GELU fusion
(ModelGraph+Gelu.swift): GELU as PyTorch's exporters write it before opset
20, in its erf form (nn.GELU, BERT, ViT, Whisper, ConvNeXt) and its tanh form
(GPT-2's gelu_new), which LayerKit runs as one Gelu step, and near misses it
must leave as they are. onnxruntime runs each node on its own (optimizations
off), so the outputs are the unfused results; each fused case is also checked
here against float64 GELU, so a case is only written when both agree.
Inputs span [-6, 6] (both tails of erf and tanh). In the lower tail 1 + erf
and 1 + tanh cancel, and the fused step's rounding there differs from the
unfused nodes' by up to |x| 2^-23 absolute, past ONNX's atol of 1e-7: each
fused case holds the CPU to 1e-6 max(1, |y|) instead (tolerance.json).
Tests/LayerKitTests/GeluFusionTests.swift checks which steps each model
becomes. Run: /tmp/ort-venv/bin/python -P Scripts/onnx_cases/gelu_fusion.py"""
import json
import math
import os
import sys

# math.py in this folder shadows the standard `math` module (numpy imports
# it): the folder goes to the end of the path.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or '.') != HERE] + [HERE]

import numpy as np  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

from common import ROOT, reset, save_case, tensor_info  # noqa: E402

FAMILY = 'gelu_fusion'
reset(FAMILY)
rng = np.random.default_rng(20261205)
SQRT2 = np.float32(math.sqrt(2))


def const(name, value):
    return numpy_helper.from_array(np.asarray(value, dtype=np.float32), name)


def node(op, inputs, output, **attributes):
    return helper.make_node(op, inputs, [output], name=output, **attributes)


def gelu64(x, tanh=False):
    x = x.astype(np.float64)
    if tanh:
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def erf_nodes(x, y, half_first=False, by_reciprocal=False, sqrt2='sqrt2'):
    """GELU's erf form from x to y: x * (1 + erf(x / sqrt2)) * 0.5, or with
    the 0.5 first; x / sqrt2 as x * (1 / sqrt2) with `by_reciprocal`."""
    scaled = (node('Mul', [x, 'rsqrt2'], 'scaled') if by_reciprocal else node('Div', [x, sqrt2], 'scaled'))
    nodes = [scaled, node('Erf', ['scaled'], 'erf'), node('Add', ['one', 'erf'], 'plus')]
    if half_first:
        return nodes + [node('Mul', [x, 'half'], 'halved'), node('Mul', ['halved', 'plus'], y)]
    return nodes + [node('Mul', [x, 'plus'], 'product'), node('Mul', ['product', 'half'], y)]


def tanh_nodes(x, y, cube_by_muls=False):
    """GPT-2's gelu_new from x to y: (x * 0.5) * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))."""
    cube = ([node('Mul', [x, x], 'square'), node('Mul', ['square', x], 'cube')] if cube_by_muls
            else [node('Pow', [x, 'three'], 'cube')])
    return [node('Mul', [x, 'half'], 'halved')] + cube + [
        node('Mul', ['cube', 'c044715'], 'cubic'), node('Add', [x, 'cubic'], 'inner'),
        node('Mul', ['inner', 'sqrt2pi'], 'scaled'), node('Tanh', ['scaled'], 'tanh'),
        node('Add', ['tanh', 'one'], 'plus'), node('Mul', ['halved', 'plus'], y)]


CONSTANTS = [const('sqrt2', SQRT2), const('rsqrt2', np.float32(1 / math.sqrt(2))), const('one', 1.0),
             const('half', 0.5), const('three', 3.0), const('c044715', 0.044715),
             const('sqrt2pi', math.sqrt(2 / math.pi))]


def save(name, nodes, shape, extra_inits=(), reference=None, outputs=('y',), out_shape=None, fused=True):
    x = np.linspace(-6, 6, int(np.prod(shape)), dtype=np.float32)
    x = rng.permutation(x).reshape(shape)
    used = {i for n in nodes for i in n.input}
    inits = [c for c in CONSTANTS + list(extra_inits) if c.name in used]
    out_shape = out_shape or (reference(x).shape if reference else shape)
    results = save_case(FAMILY, name, nodes, [tensor_info('x', shape)],
                        [tensor_info(o, out_shape) for o in outputs], inits, opset=17, input_data={'x': x})
    if reference is not None:
        expected = reference(x)
        assert np.allclose(results[0], expected, rtol=1e-5, atol=1e-5), (name, np.abs(results[0] - expected).max())
    if fused:
        with open(os.path.join(ROOT, FAMILY, name, 'tolerance.json'), 'w') as f:
            json.dump({'cpu': 1e-6, 'measure': 'max |y - ref| / max(1, |ref|)',
                       'rule': 'the fused Gelu rounds 1 + erf (or tanh) in its own way where it cancels'}, f, indent=1)


save('erf', erf_nodes('x', 'y'), (2, 5, 37), reference=gelu64)
save('erf_half_first_reciprocal', erf_nodes('x', 'y', half_first=True, by_reciprocal=True), (3, 41),
     reference=gelu64)
save('tanh_pow', tanh_nodes('x', 'y'), (2, 3, 29), reference=lambda x: gelu64(x, tanh=True))
save('tanh_cube_by_muls', tanh_nodes('x', 'y', cube_by_muls=True), (4, 33), reference=lambda x: gelu64(x, tanh=True))
# A Linear layer then GELU, as BERT's intermediate layer: MatMul + Add, Gelu.
w_value = (rng.standard_normal((24, 40)) * 0.4).astype(np.float32)
b_value = (rng.standard_normal(40) * 0.5).astype(np.float32)
w, b = const('w', w_value), const('b', b_value)
save('linear_erf', [node('MatMul', ['x', 'w'], 'mm'), node('Add', ['mm', 'b'], 'linear')] + erf_nodes('linear', 'y'),
     (1, 7, 24), extra_inits=[w, b], reference=lambda x: gelu64(x @ w_value + b_value))
# Whisper's stem: a 1-D Conv then GELU, the Gelu taken into the Conv's epilogue.
k = const('k', rng.standard_normal((6, 5, 3)) * 0.3)
save('conv1d_erf', [node('Conv', ['x', 'k'], 'conv', pads=[1, 1])] + erf_nodes('conv', 'y'), (1, 5, 19),
     extra_inits=[k], out_shape=(1, 6, 19))
# Not fused: a constant other than sqrt(2); a value inside the GELU that is also a graph output.
save('near_wrong_constant', erf_nodes('x', 'y', sqrt2='three'), (2, 17), fused=False)
save('near_inner_output', erf_nodes('x', 'y'), (2, 17), outputs=('y', 'erf'), fused=False)
