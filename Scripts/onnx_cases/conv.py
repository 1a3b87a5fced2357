#!/usr/bin/env python3
"""Reference cases (family `conv`) for the convolution family: Conv in 1-D
and 3-D, ConvTranspose in 1-D to 3-D, the windowed and global pools in 1-D
and 3-D (MaxPool's Indices, dilations, ceil mode, count_include_pad), LpPool
and GlobalLpPool,
BatchNormalization at ranks 2 to 5 and old opsets, Dropout with its mask.
Odd channel counts, batch > 1, negative values throughout.

onnxruntime has no kernel for BatchNormalization, Dropout and AveragePool
before opset 7; their opset-6 cases (`legacy`) are written as opset-6
models whose reference outputs onnxruntime computes from the same node at
opset 7 (is_test and consumed_inputs dropped), which means the same.
Run: python3 Scripts/onnx_cases/conv.py"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

from common import ROOT, reset, rng, save_case, tensor_info

FAMILY = 'conv'
# The newest IR version LayerKit reads (onnx 1.23 writes 14 by default).
IR_VERSION = 10
reset(FAMILY)
r = rng(7)


def normal(*shape, scale=1.0):
    return (r.standard_normal(shape) * scale).astype(np.float32)


def output_infos(nodes, inputs, outs, types, initializers, opset, feeds):
    """The outputs' descriptions, shaped as onnxruntime computes them (the
    checker wants shapes; writing each case's by hand invites mistakes)."""
    graph = helper.make_graph(nodes, 'shapes', inputs, [helper.make_tensor_value_info(o, t, None) for o, t in zip(outs, types)],
                              list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)])
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    results = ort.InferenceSession(model.SerializeToString(), options, providers=['CPUExecutionProvider']).run(None, feeds)
    return [helper.make_tensor_value_info(o, t, list(v.shape)) for o, t, v in zip(outs, types, results)]


def save(name, nodes, x, outs, types, initializers, opset, feeds=None):
    feeds = feeds or {'x': x}
    inputs = [tensor_info('x', x)]
    infos = output_infos(nodes, inputs, outs, types, initializers, opset, feeds)
    save_case(FAMILY, name, nodes, inputs, infos, initializers, opset=opset, input_data=feeds, ir_version=IR_VERSION)
    return infos


def case(name, op, x, attrs=None, weights=(), outputs=1, opset=17, out_types=None):
    """One node `op` on input `x` with constant `weights` (name, array)."""
    names = ['x'] + [n for n, _ in weights]
    outs = ['y', 'indices', 'mask'][:1] + (['indices'] if op == 'MaxPool' and outputs == 2 else
                                           ['mask'] if outputs == 2 else [])
    node = helper.make_node(op, names, outs, **(attrs or {}))
    types = out_types or [onnx.TensorProto.FLOAT] * len(outs)
    return save(name, [node], x, outs, types, [numpy_helper.from_array(a, n) for n, a in weights], opset)


def legacy(name, op, x, legacy_attrs, modern_attrs, weights=(), outputs=1, opset=6):
    """An opset-`opset` model whose reference comes from the opset-7 node."""
    infos = case(name, op, x, modern_attrs, weights, outputs, opset=7)
    outs = ['y', 'mask'][:outputs]
    node = helper.make_node(op, ['x'] + [n for n, _ in weights], outs, **legacy_attrs)
    graph = helper.make_graph([node], name, [tensor_info('x', x)], infos,
                              [numpy_helper.from_array(a, n) for n, a in weights])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)],
                              producer_name='layerkit-onnx-cases')
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(ROOT, FAMILY, name, 'model.onnx'))


# ---- Conv 1-D (runs as the 2-D convolution of an L x 1 image) ----
x = normal(2, 5, 11)
case('conv1d_pads_strides_bias', 'Conv', x, dict(pads=[1, 2], strides=[2]),
     [('w', normal(4, 5, 3, scale=0.4)), ('b', normal(4))])
case('conv1d_dilated_no_bias', 'Conv', x, dict(dilations=[3], kernel_shape=[3]), [('w', normal(3, 5, 3, scale=0.4))])
x = normal(1, 6, 9)
case('conv1d_groups', 'Conv', x, dict(group=3, pads=[1, 1]), [('w', normal(9, 2, 3, scale=0.4)), ('b', normal(9))])
case('conv1d_depthwise', 'Conv', normal(2, 5, 8), dict(group=5, pads=[2, 0], strides=[2]),
     [('w', normal(5, 1, 3)), ('b', normal(5))])
for pad in ['SAME_UPPER', 'SAME_LOWER', 'VALID']:
    case(f'conv1d_{pad.lower()}', 'Conv', normal(2, 3, 10), dict(auto_pad=pad, strides=[3]), [('w', normal(5, 3, 4, scale=0.4))])

# ---- Conv 3-D (CPU) ----
x = normal(2, 3, 4, 5, 4)
case('conv3d_pads_strides_bias', 'Conv', x, dict(pads=[1, 0, 1, 1, 1, 0], strides=[1, 2, 1]),
     [('w', normal(4, 3, 3, 2, 3, scale=0.3)), ('b', normal(4))])
case('conv3d_dilated_strided_no_bias', 'Conv', x, dict(dilations=[2, 1, 2], strides=[2, 1, 1]),
     [('w', normal(5, 3, 2, 3, 2, scale=0.3))])
case('conv3d_groups', 'Conv', normal(1, 4, 4, 5, 3), dict(group=2, pads=[0, 1, 1, 0, 1, 1]),
     [('w', normal(6, 2, 2, 3, 3, scale=0.3)), ('b', normal(6))])
case('conv3d_depthwise', 'Conv', normal(2, 3, 4, 4, 4), dict(group=3, pads=[1, 1, 1, 1, 1, 1]),
     [('w', normal(3, 1, 3, 3, 3, scale=0.3))])
for pad in ['SAME_UPPER', 'SAME_LOWER', 'VALID']:
    case(f'conv3d_{pad.lower()}', 'Conv', normal(1, 2, 5, 4, 6), dict(auto_pad=pad, strides=[2, 1, 3]),
         [('w', normal(3, 2, 2, 3, 2, scale=0.3))])

# ---- Conv and pools at old opsets ----
case('conv2d_opset1', 'Conv', normal(2, 3, 6, 5), dict(pads=[1, 1, 0, 0]), [('w', normal(4, 3, 3, 2, scale=0.3))], opset=1)
case('conv1d_opset6', 'Conv', normal(1, 3, 7), dict(strides=[2], pads=[1, 1]), [('w', normal(2, 3, 3, scale=0.3))], opset=6)
case('maxpool2d_opset1', 'MaxPool', normal(2, 3, 7, 6), dict(kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 1, 1]), opset=1)
case('maxpool1d_opset8_indices', 'MaxPool', normal(2, 3, 9), dict(kernel_shape=[3], strides=[2]), outputs=2, opset=8,
     out_types=[onnx.TensorProto.FLOAT, onnx.TensorProto.INT64])
case('avgpool2d_opset7_include_pad', 'AveragePool', normal(1, 5, 6, 6),
     dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1), opset=7)
legacy('avgpool2d_opset6', 'AveragePool', normal(2, 3, 5, 5), dict(kernel_shape=[2, 2], pads=[1, 0, 0, 1]),
       dict(kernel_shape=[2, 2], pads=[1, 0, 0, 1]), opset=1)

# ---- Pools 1-D ----
x = normal(2, 5, 13)
case('maxpool1d_pads', 'MaxPool', x, dict(kernel_shape=[3], strides=[2], pads=[1, 1]))
case('maxpool1d_dilation_ceil', 'MaxPool', x, dict(kernel_shape=[3], strides=[2], dilations=[2], ceil_mode=1), opset=12)
case('maxpool1d_same_upper', 'MaxPool', x, dict(kernel_shape=[4], strides=[3], auto_pad='SAME_UPPER'))
case('avgpool1d_include_pad', 'AveragePool', x, dict(kernel_shape=[4], strides=[2], pads=[2, 1], count_include_pad=1))
case('avgpool1d_exclude_pad_ceil', 'AveragePool', x, dict(kernel_shape=[3], strides=[2], pads=[1, 1], ceil_mode=1))
case('avgpool1d_dilations', 'AveragePool', x, dict(kernel_shape=[3], dilations=[2], pads=[1, 2], count_include_pad=1), opset=19)
case('avgpool1d_same_lower', 'AveragePool', x, dict(kernel_shape=[4], strides=[3], auto_pad='SAME_LOWER'))
case('globalavgpool1d', 'GlobalAveragePool', x)
case('globalmaxpool1d', 'GlobalMaxPool', x)

# ---- Pools 2-D: opset 12 dilations and ceil mode, opset 19 average dilations ----
x = normal(2, 5, 9, 8)
case('maxpool2d_dilation_ceil', 'MaxPool', x, dict(kernel_shape=[3, 2], strides=[2, 3], dilations=[2, 2], ceil_mode=1,
                                                   pads=[1, 0, 1, 1]), opset=12)
case('avgpool2d_dilations_include_pad', 'AveragePool', x,
     dict(kernel_shape=[2, 3], dilations=[3, 2], pads=[1, 1, 0, 1], count_include_pad=1, ceil_mode=1, strides=[2, 2]), opset=19)

# ---- Pools 3-D (CPU) ----
x = normal(2, 3, 4, 5, 3)
case('maxpool3d_pads', 'MaxPool', x, dict(kernel_shape=[2, 3, 2], strides=[2, 1, 2], pads=[1, 1, 0, 0, 1, 1]))
case('maxpool3d_dilation_ceil', 'MaxPool', x, dict(kernel_shape=[2, 2, 2], strides=[2, 2, 1], dilations=[2, 1, 2],
                                                   ceil_mode=1), opset=12)
case('maxpool3d_same_lower', 'MaxPool', x, dict(kernel_shape=[2, 3, 3], strides=[2, 2, 3], auto_pad='SAME_LOWER'))
case('avgpool3d_include_pad', 'AveragePool', x, dict(kernel_shape=[3, 2, 2], strides=[1, 2, 2], pads=[1, 1, 1, 1, 0, 1],
                                                     count_include_pad=1))
case('avgpool3d_exclude_pad_ceil', 'AveragePool', x, dict(kernel_shape=[2, 3, 2], strides=[2, 2, 2], pads=[1, 1, 1, 0, 1, 0],
                                                          ceil_mode=1))
case('avgpool3d_dilations', 'AveragePool', x, dict(kernel_shape=[2, 2, 2], dilations=[2, 2, 1], pads=[0, 1, 1, 1, 0, 1]),
     opset=19)
case('globalavgpool3d', 'GlobalAveragePool', x)
case('globalmaxpool3d', 'GlobalMaxPool', x)

# ---- MaxPool Indices (row-major over the whole input; storage_order 1: column-major spatial axes) ----
i64 = [onnx.TensorProto.FLOAT, onnx.TensorProto.INT64]
case('maxpool2d_indices', 'MaxPool', normal(2, 3, 7, 6), dict(kernel_shape=[3, 2], strides=[2, 2], pads=[1, 1, 1, 0]),
     outputs=2, out_types=i64)
case('maxpool2d_indices_storage_order', 'MaxPool', normal(2, 3, 7, 6), dict(kernel_shape=[2, 3], strides=[2, 1],
                                                                             storage_order=1), outputs=2, out_types=i64)
case('maxpool3d_indices', 'MaxPool', normal(2, 3, 4, 5, 4), dict(kernel_shape=[2, 2, 3], strides=[2, 2, 1], pads=[0, 1, 1, 1, 0, 1]),
     outputs=2, out_types=i64)
case('maxpool3d_indices_storage_order', 'MaxPool', normal(1, 3, 4, 5, 4), dict(kernel_shape=[2, 2, 2], strides=[1, 2, 2],
                                                                                storage_order=1), outputs=2, out_types=i64)
case('maxpool1d_indices_dilation', 'MaxPool', normal(2, 3, 11), dict(kernel_shape=[3], dilations=[2], pads=[1, 1]), outputs=2,
     out_types=i64)

# ---- ConvTranspose ----
x = normal(2, 3, 3, 4)
case('convtranspose2d_strides_pads_bias', 'ConvTranspose', x, dict(strides=[2, 2], pads=[1, 0, 1, 1]),
     [('w', normal(3, 4, 3, 3, scale=0.4)), ('b', normal(4))])
case('convtranspose2d_output_padding', 'ConvTranspose', x, dict(strides=[3, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]),
     [('w', normal(3, 5, 3, 3, scale=0.4)), ('b', normal(5))])
case('convtranspose2d_output_shape', 'ConvTranspose', x, dict(strides=[2, 3], output_shape=[6, 11]),
     [('w', normal(3, 2, 3, 3, scale=0.4))])
case('convtranspose2d_output_shape_larger', 'ConvTranspose', x, dict(strides=[2, 3], output_shape=[8, 14]),
     [('w', normal(3, 2, 3, 3, scale=0.4)), ('b', normal(2))])
case('convtranspose2d_output_shape_same_upper', 'ConvTranspose', x,
     dict(strides=[2, 2], output_shape=[6, 9], auto_pad='SAME_UPPER', output_padding=[1, 0]), [('w', normal(3, 3, 3, 3, scale=0.4))])
for pad in ['SAME_UPPER', 'SAME_LOWER', 'VALID']:
    case(f'convtranspose2d_{pad.lower()}', 'ConvTranspose', x, dict(strides=[3, 2], dilations=[2, 1], auto_pad=pad,
                                                                 output_padding=[1, 0]),
         [('w', normal(3, 3, 2, 3, scale=0.4)), ('b', normal(3))])
case('convtranspose2d_groups', 'ConvTranspose', normal(2, 4, 3, 4), dict(group=2, strides=[2, 1], pads=[0, 1, 1, 1]),
     [('w', normal(4, 3, 3, 3, scale=0.4)), ('b', normal(6))])
case('convtranspose2d_depthwise_dilated', 'ConvTranspose', normal(1, 5, 4, 4), dict(group=5, dilations=[2, 3], strides=[2, 2]),
     [('w', normal(5, 1, 3, 2, scale=0.4))])
x = normal(2, 3, 7)
case('convtranspose1d_strides_pads', 'ConvTranspose', x, dict(strides=[2], pads=[1, 2]),
     [('w', normal(3, 5, 4, scale=0.4)), ('b', normal(5))])
case('convtranspose1d_output_shape', 'ConvTranspose', x, dict(strides=[3], output_shape=[19], dilations=[2]),
     [('w', normal(3, 2, 3, scale=0.4))])
case('convtranspose1d_groups_same_lower', 'ConvTranspose', normal(1, 6, 5), dict(group=3, strides=[2], auto_pad='SAME_LOWER',
                                                                                  output_padding=[1]),
     [('w', normal(6, 1, 3, scale=0.4)), ('b', normal(3))])
x = normal(2, 3, 2, 3, 2)
case('convtranspose3d_strides_pads', 'ConvTranspose', x, dict(strides=[2, 1, 2], pads=[1, 0, 1, 0, 1, 1]),
     [('w', normal(3, 4, 3, 2, 3, scale=0.3)), ('b', normal(4))])
case('convtranspose3d_output_padding_dilation', 'ConvTranspose', x, dict(strides=[2, 2, 3], dilations=[1, 2, 1],
                                                                          output_padding=[1, 1, 2]),
     [('w', normal(3, 2, 2, 2, 2, scale=0.3))])
case('convtranspose3d_groups_output_shape', 'ConvTranspose', normal(1, 4, 3, 3, 2), dict(group=2, strides=[2, 2, 2],
                                                                                          output_shape=[5, 6, 4]),
     [('w', normal(4, 1, 3, 3, 2, scale=0.3)), ('b', normal(2))])

# ---- BatchNormalization: ranks 2, 3, 5 and old opsets ----
def bn_params(c):
    return [('scale', normal(c)), ('bias', normal(c)), ('mean', normal(c)),
            ('var', (r.random(c) + 0.5).astype(np.float32))]

case('batchnorm_rank2', 'BatchNormalization', normal(3, 5), dict(epsilon=1e-3), bn_params(5))
case('batchnorm1d_rank3', 'BatchNormalization', normal(2, 5, 7), {}, bn_params(5))
case('batchnorm3d_rank5', 'BatchNormalization', normal(2, 3, 3, 4, 2), dict(momentum=0.8), bn_params(3))
case('batchnorm_opset7_spatial', 'BatchNormalization', normal(2, 3, 4, 4), dict(spatial=1, epsilon=1e-4), bn_params(3), opset=7)
case('batchnorm_opset9', 'BatchNormalization', normal(2, 7, 3, 2), dict(momentum=0.5), bn_params(7), opset=9)
case('batchnorm_opset15_training_mode_0', 'BatchNormalization', normal(2, 3, 4), dict(training_mode=0), bn_params(3), opset=15)
legacy('batchnorm_opset6_is_test', 'BatchNormalization', normal(2, 3, 4, 5), dict(is_test=1, epsilon=1e-4, momentum=0.9),
       dict(epsilon=1e-4, momentum=0.9), bn_params(3))
legacy('batchnorm_opset1_consumed_inputs', 'BatchNormalization', normal(2, 5, 3), dict(is_test=1, consumed_inputs=[0, 0, 0, 1, 1]),
       {}, bn_params(5), opset=1)

# ---- Dropout at inference: the input, and a mask of ones ----
bool_mask = [onnx.TensorProto.FLOAT, onnx.TensorProto.BOOL]


def dropout_with_mask(name, x, opset, mask_type):
    """Dropout 7-11 with its mask. onnxruntime's kernel for those opsets
    writes the mask all false (its comment: no value is dropped), where the
    spec's reference (onnx.reference) and onnxruntime from opset 12 write it
    all true, cells kept: the reference is onnxruntime's opset-13 Dropout
    (training_mode false), its mask in the opset's type."""
    node = helper.make_node('Dropout', ['x', 'ratio', 'training'], ['y', 'mask'])
    save('dropout_reference', [node], x, ['y', 'mask'], bool_mask,
         [numpy_helper.from_array(np.array(0.3, np.float32), 'ratio'), numpy_helper.from_array(np.array(False), 'training')], 13)
    source, folder = os.path.join(ROOT, FAMILY, 'dropout_reference'), os.path.join(ROOT, FAMILY, name)
    os.rename(source, folder)
    mask = onnx.TensorProto()
    with open(os.path.join(folder, 'test_data_set_0', 'output_1.pb'), 'rb') as f:
        mask.ParseFromString(f.read())
    values = numpy_helper.to_array(mask)
    assert values.all()
    with open(os.path.join(folder, 'test_data_set_0', 'output_1.pb'), 'wb') as f:
        f.write(numpy_helper.from_array(values.astype(np.float32 if mask_type == onnx.TensorProto.FLOAT else bool), 'mask')
                .SerializeToString())
    graph = helper.make_graph([helper.make_node('Dropout', ['x'], ['y', 'mask'], ratio=0.3)], name, [tensor_info('x', x)],
                              [tensor_info('y', x), tensor_info('mask', x, mask_type)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)], producer_name='layerkit-onnx-cases')
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(folder, 'model.onnx'))


dropout_with_mask('dropout_opset7_mask', normal(2, 5, 3), 7, onnx.TensorProto.FLOAT)
dropout_with_mask('dropout_opset10_mask', normal(2, 5), 10, onnx.TensorProto.BOOL)
x = normal(2, 3, 4)
node = helper.make_node('Dropout', ['x', 'ratio', 'training'], ['y', 'mask'], seed=3)
save('dropout_opset13_training_mode_false', [node], x, ['y', 'mask'], bool_mask,
     [numpy_helper.from_array(np.array(0.4, np.float32), 'ratio'), numpy_helper.from_array(np.array(False), 'training')], 13)
case('dropout_opset12_no_mask', 'Dropout', normal(3, 4))
legacy('dropout_opset6_is_test', 'Dropout', normal(2, 3, 3), dict(is_test=1, ratio=0.2), dict(ratio=0.2))

# ---- LpPool and GlobalLpPool (CPU) ----
case('lppool1d_p3_pads', 'LpPool', normal(2, 3, 9), dict(kernel_shape=[3], strides=[2], pads=[1, 1], p=3), opset=11)
case('lppool2d_p1_same_upper', 'LpPool', normal(2, 5, 6, 5), dict(kernel_shape=[2, 3], strides=[2, 2], auto_pad='SAME_UPPER', p=1),
     opset=11)
case('lppool2d_dilations_ceil', 'LpPool', normal(1, 3, 7, 8), dict(kernel_shape=[2, 2], strides=[2, 3], dilations=[2, 1], ceil_mode=1),
     opset=18)
case('lppool3d_p2', 'LpPool', normal(1, 3, 4, 4, 3), dict(kernel_shape=[2, 2, 2], pads=[1, 0, 0, 0, 1, 1]), opset=11)
case('globallppool2d_p2', 'GlobalLpPool', normal(2, 5, 4, 3), opset=2)
case('globallppool3d_p3', 'GlobalLpPool', normal(2, 3, 3, 4, 2), dict(p=3))

# ---- MaxPool 3x3 stride 2 (lk_pool.c's one-pass column fold): odd sizes, ceil, pads ----
case('maxpool2d_3x3_s2_ceil', 'MaxPool', normal(2, 3, 13, 15), dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1), opset=12)
case('maxpool2d_3x3_s2_pads', 'MaxPool', normal(2, 5, 11, 9), dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), opset=12)
