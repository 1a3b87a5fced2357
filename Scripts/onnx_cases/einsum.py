#!/usr/bin/env python3
"""ONNX reference cases for LayerKit's Einsum (folder `einsum`): an
attention-style contraction, a batched matrix product by ellipsis, a
trace-like diagonal sum and an implicit output.

Run from the repository root (see common.py for the versions). Seeded, so
reruns write the same bytes; every input is fp16-exact.
"""
import os
import sys

import numpy as np
from onnx import helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import reset, rng, save_case, tensor_info  # noqa: E402

FAMILY = 'einsum'
reset(FAMILY)
random = rng(20261205)


def data(shape):
    return random.uniform(-2, 2, size=shape).astype(np.float16).astype(np.float32)


def einsum_case(name, equation, *operands):
    names = [f'x{i}' for i in range(len(operands))]
    node = helper.make_node('Einsum', names, ['y'], name=name, equation=equation)
    expected = np.einsum(equation, *operands)
    save_case(FAMILY, name, [node], [tensor_info(n, a) for n, a in zip(names, operands)],
              [tensor_info('y', expected.shape)], opset=12, input_data=dict(zip(names, operands)))


einsum_case('attention_scores', 'bhqd,bhkd->bhqk', data((2, 3, 4, 8)), data((2, 3, 5, 8)))
einsum_case('batched_matmul_ellipsis_broadcast', '...ij,...jk->...ik', data((2, 1, 3, 4)), data((1, 5, 4, 2)))
einsum_case('diagonal_sum', 'bii->b', data((3, 4, 4)))
einsum_case('implicit_output', 'ij,jk', data((3, 4)), data((4, 5)))
