#!/usr/bin/env python3
"""ONNX reference cases for LayerKit's loss family (folder `losses`):
NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss on N-D scores with
class weights and ignore_index, the targets a graph input (a typed value of
the run) or a constant.

Run from the repository root (see common.py for the versions). Seeded, so
reruns write the same bytes; every float input is fp16-exact, so the GPU
backend reads the inputs onnxruntime read.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import reset, rng, save_case, tensor_info  # noqa: E402

FAMILY = 'losses'
reset(FAMILY)
random = rng(20261204)


def scores(shape):
    return random.uniform(-3, 3, size=shape).astype(np.float16).astype(np.float32)


def targets(shape, classes, ignored=None):
    """Class indices, about one in five replaced by `ignored` when given."""
    t = random.integers(0, classes, size=shape).astype(np.int64)
    if ignored is not None:
        t[random.uniform(size=shape) < 0.2] = ignored
    return t


def loss_case(name, op, x, t, weight=None, constant_target=False, log_prob=False, **attrs):
    inputs = [tensor_info('x', x)]
    feeds = {'x': x}
    initializers = []
    if constant_target:
        initializers.append(numpy_helper.from_array(t, 't'))
    else:
        inputs.append(tensor_info('t', t, TensorProto.INT64))
        feeds['t'] = t
    names = ['x', 't']
    if weight is not None:
        initializers.append(numpy_helper.from_array(weight, 'w'))
        names.append('w')
    outputs = ['loss'] + (['log_prob'] if log_prob else [])
    node = helper.make_node(op, names, outputs, name=name, **attrs)
    loss_shape = list(t.shape) if attrs.get('reduction') == 'none' else []
    shapes = [tensor_info('loss', loss_shape)] + ([tensor_info('log_prob', x)] if log_prob else [])
    save_case(FAMILY, name, [node], inputs, shapes, initializers=initializers, opset=13, input_data=feeds)


weight = random.uniform(0.5, 2, size=5).astype(np.float16).astype(np.float32)
x3 = scores((3, 5, 4))
t3 = targets((3, 4), 5, ignored=-1)
for reduction in ['none', 'sum', 'mean']:
    loss_case(f'nll_3d_weight_ii_{reduction}', 'NegativeLogLikelihoodLoss', x3, t3, weight,
              reduction=reduction, ignore_index=-1)
    loss_case(f'sce_3d_weight_ii_{reduction}', 'SoftmaxCrossEntropyLoss', x3, t3, weight, log_prob=True,
              reduction=reduction, ignore_index=-1)
# ignore_index a valid class, without weights: the mean divides by the positions left.
x4 = scores((2, 5, 3, 2))
loss_case('sce_4d_ii_class_mean', 'SoftmaxCrossEntropyLoss', x4, targets((2, 3, 2), 5), ignore_index=2)
# Constant targets: float scores of the run with constant indices.
loss_case('nll_2d_constant_target_mean', 'NegativeLogLikelihoodLoss', scores((6, 5)), targets((6,), 5),
          constant_target=True)
