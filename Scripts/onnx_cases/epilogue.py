#!/usr/bin/env python3
"""Reference cases (family `epilogue`) for fused epilogues: a Conv or Gemm
followed by what LayerKit folds into it at load (BatchNormalization) or
applies to its output as it is made (per-element chains, SiLU as
Sigmoid->Mul, a residual Add), and graphs that must not fuse (a Conv output
with two readers, or that is a graph output). onnxruntime runs each node on
its own (optimizations off), so the outputs are the unfused results.
Odd channel counts, batch 2, negative values throughout.
Tests/LayerKitTests/EpilogueTests.swift checks which steps each model
becomes. Run: python3 Scripts/onnx_cases/epilogue.py"""
import os
import sys

# math.py in this folder shadows the standard `math` module (numpy imports
# it): the folder goes to the end of the path.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or '.') != HERE] + [HERE, os.path.dirname(HERE)]

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

from common import ROOT, reset, rng, save_case, tensor_info  # noqa: E402
from model_zoo_common import twin_error, write_tolerance  # noqa: E402

FAMILY = 'epilogue'
reset(FAMILY)
r = rng(13)


def normal(*shape, scale=1.0):
    return (r.standard_normal(shape) * scale).astype(np.float32)


def init(name, array):
    return numpy_helper.from_array(np.asarray(array, dtype=np.float32), name)


def conv(name, x, w, c_in, c_out, k=3, group=1, pads=1, stride=1, bias=True, y=None, dilation=1):
    """A Conv node and its initializers (weights scaled to keep sums near 1)."""
    fan = c_in // group * k * k
    inits = [init(f'{name}_w', normal(c_out, c_in // group, k, k, scale=1.0 / np.sqrt(fan)))]
    inputs = [x, f'{name}_w']
    if bias:
        inits.append(init(f'{name}_b', normal(c_out, scale=0.5)))
        inputs.append(f'{name}_b')
    node = helper.make_node('Conv', inputs, [y or name], name=name, kernel_shape=[k, k], pads=[pads] * 4,
                            strides=[stride, stride], group=group,
                            **({'dilations': [dilation, dilation]} if dilation > 1 else {}))
    return node, inits


def bn(name, x, channels, y=None):
    inits = [init(f'{name}_scale', normal(channels, scale=0.5) + 1), init(f'{name}_bias', normal(channels, scale=0.5)),
             init(f'{name}_mean', normal(channels, scale=0.5)),
             init(f'{name}_var', np.abs(normal(channels)) + 0.5)]
    node = helper.make_node('BatchNormalization', [x] + [i.name for i in inits], [y or name], name=name, epsilon=1e-5)
    return node, inits


def save(name, nodes, inits, inputs, outputs, opset=17, deep=False):
    """One case; `deep` (several convolutions or a long chain, whose GPU
    result stores fp16 between steps) gets the whole-model GPU tolerance of
    the model zoo, max(1e-3, 2 x the fp16 twin's error) (tolerance.json)."""
    feeds = {n: normal(*s) for n, s in inputs}
    infos_in = [tensor_info(n, s) for n, s in inputs]
    infos_out = [tensor_info(n, s) for n, s in outputs]
    results = save_case(FAMILY, name, nodes, infos_in, infos_out, inits, opset=opset, input_data=feeds)
    if deep:
        folder = os.path.join(ROOT, FAMILY, name)
        model = onnx.load(os.path.join(folder, 'model.onnx'))
        write_tolerance(folder, twin_error(model, feeds, results))


# Conv -> BatchNormalization: folded into the weights and bias.
n1, i1 = conv('conv', 'x', 'w', 3, 5)
n2, i2 = bn('bn', 'conv', 5, y='y')
save('conv_bn', [n1, n2], i1 + i2, [('x', (2, 3, 7, 6))], [('y', (2, 5, 7, 6))])

# A 1-D Conv -> BatchNormalization -> Relu (weights [M, C, k]).
w1 = init('w1', normal(7, 5, 3, scale=0.3))
n1 = helper.make_node('Conv', ['x', 'w1'], ['conv'], name='conv', kernel_shape=[3], pads=[1, 1])
n2, i2 = bn('bn', 'conv', 7)
n3 = helper.make_node('Relu', ['bn'], ['y'], name='relu')
save('conv1d_bn_relu', [n1, n2, n3], [w1] + i2, [('x', (2, 5, 11))], [('y', (2, 7, 11))])

# Conv (stride 2, no bias) -> BatchNormalization -> Relu.
n1, i1 = conv('conv', 'x', 'w', 6, 7, stride=2, bias=False)
n2, i2 = bn('bn', 'conv', 7)
n3 = helper.make_node('Relu', ['bn'], ['y'], name='relu')
save('conv_bn_relu', [n1, n2, n3], i1 + i2, [('x', (2, 6, 9, 8))], [('y', (2, 7, 5, 4))])

# ResNet's basic block: conv-bn-relu-conv-bn, Add(skip), Relu; the second
# block's skip is a 1x1 stride-2 downsample conv that comes after conv2 in
# node order, as torchvision's BasicBlock exports.
c = 5
a1, ai1 = conv('conv1', 'x', 'w', c, c)
b1, bi1 = bn('bn1', 'conv1', c)
r1 = helper.make_node('Relu', ['bn1'], ['relu1'], name='relu1')
a2, ai2 = conv('conv2', 'relu1', 'w', c, c)
b2, bi2 = bn('bn2', 'conv2', c)
add = helper.make_node('Add', ['bn2', 'x'], ['add'], name='add')
r2 = helper.make_node('Relu', ['add'], ['block1'], name='relu2')
d1, di1 = conv('conv3', 'block1', 'w', c, 7, stride=2)
d2, di2 = bn('bn3', 'conv3', 7)
d3 = helper.make_node('Relu', ['bn3'], ['relu3'], name='relu3')
d4, di4 = conv('conv4', 'relu3', 'w', 7, 7)
d5, di5 = bn('bn4', 'conv4', 7)
down, downi = conv('down', 'block1', 'w', c, 7, k=1, pads=0, stride=2)
down_bn, down_bni = bn('down_bn', 'down', 7)
add2 = helper.make_node('Add', ['down_bn', 'bn4'], ['add2'], name='add2')
r4 = helper.make_node('Relu', ['add2'], ['y'], name='relu4')
save('resnet_blocks', [a1, b1, r1, a2, b2, add, r2, d1, d2, d3, d4, d5, down, down_bn, add2, r4],
     ai1 + bi1 + bi2 + ai2 + di1 + di2 + di4 + di5 + downi + down_bni,
     [('x', (2, c, 8, 8))], [('y', (2, 7, 4, 4))], deep=True)

# MobileNet v2: 1x1 expand + Clip(0, 6), depthwise 3x3 + Clip(0, 6) (odd
# channels), 1x1 project, Add(skip); Clip's bounds as constant inputs (opset 11+).
bounds = [init('zero', np.float32(0)), init('six', np.float32(6))]
e1, ei1 = conv('expand', 'x', 'w', 3, 9, k=1, pads=0)
e2 = helper.make_node('Clip', ['expand', 'zero', 'six'], ['relu6a'], name='clip1')
dw, dwi = conv('depthwise', 'relu6a', 'w', 9, 9, group=9)
dw2 = helper.make_node('Clip', ['depthwise', 'zero', 'six'], ['relu6b'], name='clip2')
p1, pi1 = conv('project', 'relu6b', 'w', 9, 3, k=1, pads=0)
p2 = helper.make_node('Add', ['x', 'project'], ['y'], name='add')
save('mobilenet_block', [e1, e2, dw, dw2, p1, p2], bounds + ei1 + dwi + pi1, [('x', (2, 3, 7, 7))],
     [('y', (2, 3, 7, 7))], opset=13, deep=True)

# SiLU as PyTorch exports it: Sigmoid, then Mul of the conv output by it.
n1, i1 = conv('conv', 'x', 'w', 4, 7)
n2 = helper.make_node('Sigmoid', ['conv'], ['sig'], name='sigmoid')
n3 = helper.make_node('Mul', ['conv', 'sig'], ['y'], name='mul')
save('conv_silu', [n1, n2, n3], i1, [('x', (2, 4, 6, 5))], [('y', (2, 7, 6, 5))], deep=True)

# A chain of catalog ops with per-channel and scalar values: PRelu (slope per
# channel), LeakyRelu, HardSwish, then Add(skip) after the chain.
n1, i1 = conv('conv', 'x', 'w', 5, 6)
slope = init('slope', normal(6, 1, 1, scale=0.3))
n2 = helper.make_node('PRelu', ['conv', 'slope'], ['prelu'], name='prelu')
n3 = helper.make_node('LeakyRelu', ['prelu'], ['leaky'], name='leaky', alpha=0.3)
n4 = helper.make_node('HardSwish', ['leaky'], ['hswish'], name='hswish')
n5 = helper.make_node('Add', ['hswish', 'skip'], ['y'], name='add')
save('conv_chain_add', [n1, n2, n3, n4, n5], i1 + [slope], [('x', (2, 5, 5, 6)), ('skip', (2, 6, 5, 6))],
     [('y', (2, 6, 5, 6))], opset=14, deep=True)

# Gemm -> Relu, and Gemm -> BatchNormalization (folded) -> Sigmoid.
b = init('b', normal(10, 7, scale=0.4))
cb = init('c', normal(7))
n1 = helper.make_node('Gemm', ['x', 'b', 'c'], ['gemm'], name='gemm', alpha=0.75)
n2 = helper.make_node('Relu', ['gemm'], ['y'], name='relu')
save('gemm_relu', [n1, n2], [b, cb], [('x', (3, 10))], [('y', (3, 7))])
n1 = helper.make_node('Gemm', ['x', 'b', 'c'], ['gemm'], name='gemm', transB=1)
b = init('b', normal(5, 9, scale=0.4))
cb = init('c', normal(5))
n2, i2 = bn('bn', 'gemm', 5)
n3 = helper.make_node('Sigmoid', ['bn'], ['y'], name='sigmoid')
save('gemm_bn_sigmoid', [n1, n2, n3], [b, cb] + i2, [('x', (2, 9))], [('y', (2, 5))])

# Flatten of a 3x4x4 map into Gemm (one whole-map convolution), then Clip.
b = init('b', normal(48, 5, scale=0.2))
cb = init('c', normal(5))
n0 = helper.make_node('Flatten', ['x'], ['flat'], name='flatten')
n1 = helper.make_node('Gemm', ['flat', 'b', 'c'], ['gemm'], name='fc')
n2 = helper.make_node('Clip', ['gemm', 'lo', 'hi'], ['y'], name='clip')
save('flattened_gemm_clip', [n0, n1, n2], [b, cb, init('lo', np.float32(-0.5)), init('hi', np.float32(0.5))],
     [('x', (2, 3, 4, 4))], [('y', (2, 5))])

# Must not fuse: the conv output has two readers (Relu and the Add), and a
# conv output that is itself a graph output.
n1, i1 = conv('conv', 'x', 'w', 3, 5)
n2 = helper.make_node('Relu', ['conv'], ['relu'], name='relu')
n3 = helper.make_node('Add', ['relu', 'conv'], ['y'], name='add')
save('two_readers', [n1, n2, n3], i1, [('x', (2, 3, 6, 6))], [('y', (2, 5, 6, 6))])
n1, i1 = conv('conv', 'x', 'w', 3, 5, y='c')
n2 = helper.make_node('Relu', ['c'], ['y'], name='relu')
save('output_read_again', [n1, n2], i1, [('x', (1, 3, 5, 5))], [('c', (1, 5, 5, 5)), ('y', (1, 5, 5, 5))])

# DeepLabV3's ASPP at a small size: 3x3 convolutions of dilation 3, 6 and 12
# (pads equal) on a 7x7 map, each with Relu, most of whose taps read padding
# (run as convolutions of the valid taps, Convolution+ValidTaps.swift), and
# the 1x1 branch, concatenated; then a 1-D one of dilation 8 on 9 steps.
nodes, inits = [], []
for d in (0, 3, 6, 12):
    n, i = conv(f'aspp{d}', 'x', 'w', 24, 16, k=1 if d == 0 else 3, pads=d, dilation=max(d, 1))
    nodes += [n, helper.make_node('Relu', [f'aspp{d}'], [f'relu{d}'], name=f'relu{d}')]
    inits += i
nodes.append(helper.make_node('Concat', [f'relu{d}' for d in (0, 3, 6, 12)], ['y'], name='concat', axis=1))
save('aspp_dilated', nodes, inits, [('x', (2, 24, 7, 7))], [('y', (2, 64, 7, 7))])
w1 = init('w1', normal(6, 5, 3, scale=0.3))
b1 = init('b1', normal(6, scale=0.5))
n1 = helper.make_node('Conv', ['x', 'w1', 'b1'], ['conv'], name='conv', kernel_shape=[3], pads=[8, 8], dilations=[8])
n2 = helper.make_node('Relu', ['conv'], ['y'], name='relu')
save('conv1d_dilated_relu', [n1, n2], [w1, b1], [('x', (2, 5, 9))], [('y', (2, 6, 9))])
