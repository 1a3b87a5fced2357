#!/usr/bin/env python3
"""Reference cases (family `core`) for ops LayerKit had before the op
families: a conv block and a dense head, so the case runner itself is
checked against onnxruntime. Run: python3 Scripts/onnx_cases/core.py"""
import numpy as np
from onnx import helper
from common import reset, rng, save_case, tensor_info
from onnx import numpy_helper

FAMILY = 'core'
reset(FAMILY)
r = rng(1)

x = r.standard_normal((2, 5, 7, 6)).astype(np.float32)
w = r.standard_normal((6, 5, 3, 3)).astype(np.float32) * 0.3
b = r.standard_normal(6).astype(np.float32)
save_case(FAMILY, 'conv_relu', [helper.make_node('Conv', ['x', 'w', 'b'], ['c'], pads=[1, 1, 1, 1]),
                                 helper.make_node('Relu', ['c'], ['y'])],
          [tensor_info('x', x)], [tensor_info('y', (2, 6, 7, 6))],
          [numpy_helper.from_array(w, 'w'), numpy_helper.from_array(b, 'b')], input_data={'x': x})

x = r.standard_normal((3, 10)).astype(np.float32)
w = r.standard_normal((10, 7)).astype(np.float32)
c = r.standard_normal(7).astype(np.float32)
save_case(FAMILY, 'gemm_softmax', [helper.make_node('Gemm', ['x', 'w', 'c'], ['g'], alpha=0.5),
                                   helper.make_node('Softmax', ['g'], ['y'], axis=1)],
          [tensor_info('x', x)], [tensor_info('y', (3, 7))],
          [numpy_helper.from_array(w, 'w'), numpy_helper.from_array(c, 'c')], input_data={'x': x})

# The same conv block with its weights in a file beside the model (torch's
# layout for models over 2 GiB): LayerKit reads them from the model's folder.
x = r.standard_normal((1, 3, 6, 5)).astype(np.float32)
w = r.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3
b = r.standard_normal(4).astype(np.float32)
save_case(FAMILY, 'external_data', [helper.make_node('Conv', ['x', 'w', 'b'], ['y'], pads=[1, 1, 1, 1])],
          [tensor_info('x', x)], [tensor_info('y', (1, 4, 6, 5))],
          [numpy_helper.from_array(w, 'w'), numpy_helper.from_array(b, 'b')], input_data={'x': x},
          external_data='weights.bin')
