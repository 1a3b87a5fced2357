#!/usr/bin/env python3
"""ONNX reference cases for LayerKit's sampling family (folder `sampling`):
GridSample (bicubic with reflection padding, 5-D linear with border
padding, nearest with zeros) on grids reaching past the input, and
AffineGrid feeding GridSample.

Run from the repository root (see common.py for the versions). Seeded, so
reruns write the same bytes; every input is fp16-exact.
"""
import os
import sys

import numpy as np
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import reset, rng, save_case, tensor_info  # noqa: E402

FAMILY = 'sampling'
reset(FAMILY)
random = rng(20261206)


def data(shape, low=-2, high=2):
    return random.uniform(low, high, size=shape).astype(np.float16).astype(np.float32)


def grid_case(name, x, grid, opset, **attrs):
    node = helper.make_node('GridSample', ['x', 'grid'], ['y'], name=name, **attrs)
    shape = list(x.shape[:2]) + list(grid.shape[1:-1])
    save_case(FAMILY, name, [node], [tensor_info('x', x), tensor_info('grid', grid)], [tensor_info('y', shape)],
              opset=opset, input_data={'x': x, 'grid': grid})


# Coordinates to +-1.5: outside the input, where the padding decides.
grid_case('bicubic_reflection', data((2, 3, 5, 6)), data((2, 4, 7, 2), -1.5, 1.5), 16, mode='bicubic',
          padding_mode='reflection')
grid_case('bicubic_reflection_align_corners', data((1, 2, 4, 4)), data((1, 3, 3, 2), -1.5, 1.5), 16,
          mode='bicubic', padding_mode='reflection', align_corners=1)
grid_case('linear_5d_border', data((1, 2, 3, 4, 5)), data((1, 2, 3, 4, 3), -1.5, 1.5), 20, mode='linear',
          padding_mode='border')
grid_case('nearest_zeros', data((1, 2, 5, 5)), data((1, 6, 6, 2), -1.5, 1.5), 20, mode='nearest')

# AffineGrid (a constant size) feeding GridSample: a rotation and shift of the input.
theta = data((2, 2, 3), -1, 1)
x = data((2, 3, 6, 5))
size = numpy_helper.from_array(np.array([2, 3, 4, 7], dtype=np.int64), 'size')
nodes = [helper.make_node('AffineGrid', ['theta', 'size'], ['grid'], name='affine', align_corners=0),
         helper.make_node('GridSample', ['x', 'grid'], ['y'], name='sample')]
save_case(FAMILY, 'affine_grid_then_sample', nodes, [tensor_info('theta', theta), tensor_info('x', x)],
          [tensor_info('y', [2, 3, 4, 7])], initializers=[size], opset=20, input_data={'theta': theta, 'x': x})
