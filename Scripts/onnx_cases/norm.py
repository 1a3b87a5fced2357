#!/usr/bin/env python3
"""ONNX reference cases for LayerKit's normalization family (folder `norm`):
InstanceNormalization, LayerNormalization, LRN, Softmax, LogSoftmax,
Hardmax and the ten Reduce ops, plus small models whose every node must run
on the GPU (Conv -> ReduceMean -> Flatten -> Gemm; LRN; InstanceNormalization).

Run from the repository root:  /work/venv/bin/python Scripts/onnx_cases/norm.py
Seeded (numpy default_rng), so reruns with the same versions write the same bytes.
Every input value is fp16-exact (large-magnitude softmax and log-sum-exp
inputs are integers, Hardmax's are distinct halves), so the GPU reads the
inputs onnxruntime read.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnxruntime as ort  # noqa: E402
from common import reset, save_case as save_with_shapes  # noqa: E402


def save_case(family, name, nodes, inputs, outputs, initializers=[], opset=13, input_data={}):
    """save_case with each output's shape filled in from a first onnxruntime run."""
    graph = helper.make_graph(nodes, name, inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)])
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=['CPUExecutionProvider'])
    results = session.run([o.name for o in outputs], input_data)
    shaped = [vi(o.name, r.shape) for o, r in zip(outputs, results)]
    save_with_shapes(family, name, nodes, inputs, shaped, initializers=initializers, opset=opset,
                     input_data=input_data)

FAMILY = 'norm'
reset(FAMILY)
rng = np.random.default_rng(20261201)


def data(shape, low=-3.0, high=3.0):
    """Uniform values rounded to fp16: the GPU reads the graph's inputs as
    they are, so its results differ from onnxruntime's by its own rounding only."""
    return rng.uniform(low, high, size=shape).astype(np.float16).astype(np.float32)


def fp16_exact_large(shape, magnitude=1000):
    """Integers in [-magnitude, magnitude] (exact in fp16 up to 2048)."""
    return rng.integers(-magnitude, magnitude + 1, size=shape).astype(np.float32)


def distinct(shape):
    """A permutation of 0.5 * (0..n-1) - n/4: no ties, fp16-exact."""
    n = int(np.prod(shape))
    return (rng.permutation(n).astype(np.float32) * 0.5 - n / 4).reshape(shape)


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape) if shape is not None else None)


def one_op(name, op, x, out_shape=None, attrs=None, opset=13, extra_inputs=(), initializers=(), outputs=None, **kw):
    """A case of one node `op` on input x (plus initializer inputs)."""
    inputs = ['x'] + [n for n, _ in extra_inputs]
    inits = [numpy_helper.from_array(v, n) for n, v in extra_inputs] + list(initializers)
    outs = outputs or ['y']
    node = helper.make_node(op, inputs, outs, name=name, **(attrs or {}))
    save_case(FAMILY, name, [node], [vi('x', x.shape)], [vi(o, None) for o in outs], initializers=inits,
              opset=opset, input_data={'x': x})


# Softmax, LogSoftmax, Hardmax ------------------------------------------------
for op in ['Softmax', 'LogSoftmax']:
    low = op.lower()
    one_op(f'{low}_axis1_c5_n2', op, data((2, 5, 3, 3), -5, 5), attrs={'axis': 1})
    one_op(f'{low}_axis_neg1_rank3', op, data((2, 3, 7), -5, 5))  # opset 13 default axis -1
    one_op(f'{low}_axis2_rank4', op, data((2, 3, 4, 5), -5, 5), attrs={'axis': 2})
    one_op(f'{low}_axis0_rank2', op, data((3, 6), -5, 5), attrs={'axis': 0})
    one_op(f'{low}_axis1_rank5', op, data((2, 3, 2, 2, 2), -5, 5), attrs={'axis': 1})
    # Opset 11: coerced to 2-D at axis (the op runs over axes axis.. flattened).
    one_op(f'{low}_opset11_axis1_flattens', op, data((2, 3, 2, 2), -5, 5), attrs={'axis': 1}, opset=11)
    one_op(f'{low}_opset11_default_nc', op, data((2, 6), -5, 5), opset=11)
    one_op(f'{low}_opset11_axis_neg2_rank3', op, data((2, 3, 4), -5, 5), attrs={'axis': -2}, opset=11)
    one_op(f'{low}_opset11_axis1_trailing1', op, data((2, 6, 1, 1), -5, 5), attrs={'axis': 1}, opset=11)
    one_op(f'{low}_opset11_axis0', op, data((2, 3, 2), -5, 5), attrs={'axis': 0}, opset=11)
    # Large magnitudes: the maximum is subtracted first.
    one_op(f'{low}_large_axis1', op, fp16_exact_large((2, 6, 2, 2)), attrs={'axis': 1})
    one_op(f'{low}_large_last', op, fp16_exact_large((2, 5)), attrs={'axis': -1})
one_op('hardmax_axis1_c5', 'Hardmax', distinct((2, 5, 2, 2)), attrs={'axis': 1})
one_op('hardmax_axis_neg1', 'Hardmax', distinct((2, 3, 6)))
one_op('hardmax_opset11_axis1_flattens', 'Hardmax', distinct((2, 3, 2, 2)), attrs={'axis': 1}, opset=11)

# InstanceNormalization -------------------------------------------------------
for shape, eps, name in [((2, 3, 4, 5), None, 'instancenorm_c3_n2'),
                         ((2, 5, 7), 1e-3, 'instancenorm_rank3_c5'),
                         ((2, 6, 2, 3, 2), None, 'instancenorm_rank5_c6'),
                         ((1, 3, 16, 17), None, 'instancenorm_plane272'),
                         ((2, 5, 1, 1), 1e-2, 'instancenorm_plane1')]:
    c = shape[1]
    attrs = {} if eps is None else {'epsilon': eps}
    x = (data(shape) + rng.uniform(-2, 2, size=(1, c) + (1,) * (len(shape) - 2))).astype(np.float16).astype(np.float32)
    one_op(name, 'InstanceNormalization', x, attrs=attrs, opset=13,
           extra_inputs=[('scale', data((c,), -2, 2)), ('B', data((c,), -1, 1))])

# LayerNormalization (opset 17) -------------------------------------------------
one_op('layernorm_last_bias', 'LayerNormalization', data((2, 3, 5)), opset=17,
       extra_inputs=[('scale', data((5,), -2, 2)), ('B', data((5,), -1, 1))])
one_op('layernorm_axis1_rank3', 'LayerNormalization', data((2, 3, 4)), attrs={'axis': 1, 'epsilon': 1e-3}, opset=17,
       extra_inputs=[('scale', data((3, 4), -2, 2)), ('B', data((3, 4), -1, 1))])
one_op('layernorm_axis1_broadcast_scale', 'LayerNormalization', data((2, 3, 4)), attrs={'axis': 1}, opset=17,
       extra_inputs=[('scale', data((4,), -2, 2))])
one_op('layernorm_axis_neg2_rank4_nobias', 'LayerNormalization', data((2, 3, 2, 6)), attrs={'axis': -2}, opset=17,
       extra_inputs=[('scale', data((2, 6), -2, 2))])
one_op('layernorm_axis0', 'LayerNormalization', data((3, 5)), attrs={'axis': 0}, opset=17,
       extra_inputs=[('scale', data((3, 5), -2, 2)), ('B', data((3, 5), -1, 1))])
one_op('layernorm_mean_invstddev', 'LayerNormalization', data((2, 3, 6)), attrs={'axis': -1}, opset=17,
       extra_inputs=[('scale', data((6,), -2, 2)), ('B', data((6,), -1, 1))], outputs=['y', 'mean', 'inv_std_dev'])

# LRN (onnxruntime takes odd sizes only; LRNTests check an even one) ------------------------------------------------------------------------------
one_op('lrn_size3_c5', 'LRN', data((2, 5, 3, 3)), attrs={'size': 3}, opset=13)
one_op('lrn_size3_params_c6', 'LRN', data((2, 6, 2, 2)), attrs={'size': 3, 'alpha': 0.01, 'beta': 0.5, 'bias': 2.0},
       opset=13)
one_op('lrn_size5_alexnet_c7', 'LRN', data((2, 7, 3, 4), -10, 10),
       attrs={'size': 5, 'alpha': 1e-2, 'beta': 0.75, 'bias': 1.0}, opset=13)
one_op('lrn_size1_c3', 'LRN', data((1, 3, 2, 3)), attrs={'size': 1, 'alpha': 0.5, 'beta': 1.0, 'bias': 1.5}, opset=13)
one_op('lrn_size9_wider_than_c6', 'LRN', data((2, 6, 2, 2)), attrs={'size': 9, 'alpha': 0.1}, opset=13)

# Reduce ------------------------------------------------------------------------------
REDUCE = ['ReduceMean', 'ReduceSum', 'ReduceMax', 'ReduceMin', 'ReduceProd', 'ReduceL1', 'ReduceL2',
          'ReduceSumSquare', 'ReduceLogSumExp', 'ReduceLogSum']


def reduce_input(op, shape):
    if op == 'ReduceLogSum':
        return data(shape, 0.1, 3)
    if op == 'ReduceProd':
        return data(shape, 0.6, 1.4) * np.where(rng.random(shape) < 0.3, -1, 1).astype(np.float32)
    return data(shape)


def reduce_case(name, op, x, axes, keepdims, opset, noop=None):
    """axes None: no axes given; as an input from opset 13 (ReduceSum) or 18."""
    axes_as_input = opset >= (13 if op == 'ReduceSum' else 18)
    attrs = {'keepdims': keepdims}
    if noop is not None:
        attrs['noop_with_empty_axes'] = noop
    extra = []
    if axes is not None:
        if axes_as_input:
            extra = [('axes', np.array(axes, dtype=np.int64))]
        else:
            attrs['axes'] = axes
    inputs = ['x'] + [n for n, _ in extra]
    node = helper.make_node(op, inputs, ['y'], name=name, **attrs)
    inits = [numpy_helper.from_array(v, n) for n, v in extra]
    save_case(FAMILY, name, [node], [vi('x', x.shape)], [vi('y', None)], initializers=inits, opset=opset,
              input_data={'x': x})


for op in REDUCE:
    low = op[len('Reduce'):].lower()
    old = 11 if op == 'ReduceSum' else 13
    reduce_case(f'reduce{low}_hw_keep_opset{old}', op, reduce_input(op, (2, 5, 3, 4)), [2, 3], 1, old)
    reduce_case(f'reduce{low}_hw_neg_keep_opset18', op, reduce_input(op, (2, 6, 3, 3)), [-2, -1], 1, 18)
    reduce_case(f'reduce{low}_hw_nokeep_opset18', op, reduce_input(op, (2, 3, 2, 5)), [2, 3], 0, 18)
    reduce_case(f'reduce{low}_channels_keep_opset18', op, reduce_input(op, (2, 6, 2, 3)), [1], 1, 18)
    reduce_case(f'reduce{low}_axes0_last_nokeep_opset18', op, reduce_input(op, (2, 3, 4)), [0, -1], 0, 18)
    reduce_case(f'reduce{low}_all_nokeep_opset{old}', op, reduce_input(op, (2, 3, 5)), None, 0, old)
reduce_case('reducemean_rank2_channels_nokeep_opset18', 'ReduceMean', data((2, 5)), [1], 0, 18)
reduce_case('reducemean_rank3_spatial_keep_opset18', 'ReduceMean', data((2, 5, 7)), [2], 1, 18)
reduce_case('reducemean_rank5_opset18', 'ReduceMean', data((2, 3, 2, 2, 3)), [1, 3], 1, 18)
reduce_case('reducemean_channels_nokeep_rank4_opset18', 'ReduceMean', data((2, 5, 2, 3)), [1], 0, 18)
reduce_case('reducemean_plane300_opset18', 'ReduceMean', data((1, 3, 15, 20)), [2, 3], 1, 18)
reduce_case('reducesum_opset13_axes_input', 'ReduceSum', data((2, 6, 3, 3)), [1], 1, 13)
reduce_case('reducesum_noop_empty_axes_opset13', 'ReduceSum', data((2, 3, 2)), None, 1, 13, noop=1)
reduce_case('reducemax_noop_empty_axes_opset18', 'ReduceMax', data((2, 3, 2)), None, 1, 18, noop=1)
reduce_case('reducelogsumexp_large_hw_opset18', 'ReduceLogSumExp', fp16_exact_large((2, 5, 3, 3), 500), [2, 3], 1, 18)
reduce_case('reducelogsumexp_large_channels_opset13', 'ReduceLogSumExp', fp16_exact_large((2, 6, 2, 2), 500), [1], 1,
            13)

# Models whose every node runs on the GPU --------------------------------------------------
def conv_gap_gemm():
    w = data((6, 3, 3, 3), -0.5, 0.5)
    b = data((6,), -0.5, 0.5)
    fc = data((4, 6), -1, 1)
    fb = data((4,), -1, 1)
    axes = np.array([2, 3], dtype=np.int64)
    nodes = [helper.make_node('Conv', ['x', 'w', 'b'], ['c'], name='conv', pads=[1, 1, 1, 1]),
             helper.make_node('ReduceMean', ['c', 'axes'], ['m'], name='gap', keepdims=1),
             helper.make_node('Flatten', ['m'], ['f'], name='flatten', axis=1),
             helper.make_node('Gemm', ['f', 'fc', 'fb'], ['y'], name='fc', transB=1)]
    inits = [numpy_helper.from_array(v, n) for n, v in [('w', w), ('b', b), ('fc', fc), ('fb', fb), ('axes', axes)]]
    save_case(FAMILY, 'model_conv_reducemean_flatten_gemm', nodes, [vi('x', (2, 3, 6, 6))], [vi('y', None)],
              initializers=inits, opset=18, input_data={'x': data((2, 3, 6, 6))})


def conv_lrn_instancenorm():
    w = data((5, 3, 3, 3), -0.5, 0.5)
    nodes = [helper.make_node('Conv', ['x', 'w'], ['c'], name='conv', pads=[1, 1, 1, 1]),
             helper.make_node('LRN', ['c'], ['l'], name='lrn', size=5, alpha=1e-2, beta=0.75, bias=1.0),
             helper.make_node('InstanceNormalization', ['l', 's', 'bb'], ['y'], name='instancenorm', epsilon=1e-5)]
    inits = [numpy_helper.from_array(v, n) for n, v in [('w', w), ('s', data((5,), -2, 2)), ('bb', data((5,), -1, 1))]]
    save_case(FAMILY, 'model_conv_lrn_instancenorm', nodes, [vi('x', (2, 3, 5, 5))], [vi('y', None)],
              initializers=inits, opset=13, input_data={'x': data((2, 3, 5, 5))})


conv_gap_gemm()
conv_lrn_instancenorm()

# InstanceNormalization over planes that leave every partial-sum remainder
# (lk_norm.c's 16 lanes), a large offset to show the double sums.
for shape, name in [((2, 3, 17, 19), 'instancenorm_plane323_n2'), ((1, 5, 3, 5), 'instancenorm_plane15')]:
    c = shape[1]
    x = (data(shape) + 100 * rng.uniform(-2, 2, size=(1, c, 1, 1))).astype(np.float16).astype(np.float32)
    one_op(name, 'InstanceNormalization', x, opset=13,
           extra_inputs=[('scale', data((c,), -2, 2)), ('B', data((c,), -1, 1))])

# noop_with_empty_axes reduces no axis, yet onnxruntime (and ONNX's reference) still
# apply the op's element-wise part: |x|, x², log, exp (issue 27; LayerKit made these an identity).
for op in ['ReduceL1', 'ReduceL2', 'ReduceSumSquare', 'ReduceLogSum', 'ReduceLogSumExp']:
    reduce_case(f'{op.lower()}_noop_empty_axes_opset18', op, reduce_input(op, (2, 3, 2)), None, 1, 18, noop=1)

# LayerNormalization over the last axis of a transformer's [B, S, D] (the GPU's form: each
# lane of a slice one row of D), with a residual stream's offset per row.
x = (data((2, 9, 96)) + 4 * rng.uniform(-2, 2, size=(2, 9, 1))).astype(np.float16).astype(np.float32)
one_op('layernorm_last_d96', 'LayerNormalization', x, attrs={'epsilon': 1e-6}, opset=17,
       extra_inputs=[('scale', data((96,), -2, 2)), ('B', data((96,), -1, 1))])

# Along the last axis of rank 4, as attention's scores [B, heads, S, S] (the GPU walks the
# width): three heads, so a slice's fourth lane is padding; opset 11 flattening one axis.
for op in ['Softmax', 'LogSoftmax']:
    one_op(f'{op.lower()}_axis3_rank4_scores', op, data((2, 3, 5, 6), -5, 5), attrs={'axis': 3})
one_op('softmax_opset11_axis3_last', 'Softmax', data((1, 3, 2, 7), -5, 5), attrs={'axis': 3}, opset=11)
one_op('hardmax_axis3_rank4', 'Hardmax', distinct((2, 3, 2, 5)), attrs={'axis': -1})

# Channels-last LayerNorm (ConvNeXt's and Swin's: [B, H, W, C] over C): on the GPU each row of
# the plane is normalized alone; five "channels" (H here) leave padding lanes, 70 rows in all.
x = data((2, 5, 7, 12), -3, 3)
one_op('layernorm_channels_last', 'LayerNormalization', x, attrs={'axis': -1, 'epsilon': 1e-6}, opset=17,
       extra_inputs=[('scale', data((12,), 0.5, 1.5)), ('B', data((12,), -0.5, 0.5))])
