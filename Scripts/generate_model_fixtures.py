#!/usr/bin/env python3
"""Whole-model ONNX fixtures for LayerKit's ONNX reader and model runner.

What it writes (Tests/LayerKitTests/Fixtures/models/, stale files removed first)
    <name>.onnx              the model (opset 17, IR version 8 unless noted)
    <name>.input.npy         <f4 input, seeded (several inputs would be
                             <name>.input.<input name>.npy; no model has more
                             than one today)
    <name>.expected.npy      <f4 onnxruntime output on the CPU, one thread,
                             graph optimizations disabled; where the model has
                             custom nodes, onnxruntime runs its standard-op twin
    <name>.facts.json        what the onnx package itself reads from the file:
                             IR version, opsets, inputs/outputs with dims,
                             nodes (op, domain, inputs, outputs, attributes),
                             initializers (dims, data type, count, float64 sum,
                             first values): an independent reference for the
                             Swift decoder
    README.md                the list of models and the tool versions

How to run (from the repository root)
    /work/main/Benchmarks/.venv/bin/python Scripts/generate_model_fixtures.py
    ... generate_model_fixtures.py --check   # regenerate into a temporary
                                             # folder and compare bytes
Any Python with onnx, onnxruntime and numpy works; the README records the
versions used. Everything is seeded (numpy default_rng), so reruns with the
same versions write identical bytes.
"""
import argparse
import shutil
import filecmp
import json
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'Tests', 'LayerKitTests', 'Fixtures', 'models')
# `layerkit demo`'s built-in model (embedded in the binary) is article_demo.
BUILT_IN = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'Models', 'article.onnx')


def init(name, array, dtype=np.float32):
    """An initializer stored in raw_data (numpy_helper's default)."""
    return numpy_helper.from_array(np.asarray(array, dtype=dtype), name)


def model(name, nodes, inputs, outputs, initializers, custom=False, opset=OPSET, ir_version=IR_VERSION):
    opsets = [helper.make_opsetid('', opset)] + ([helper.make_opsetid('layerkit', 1)] if custom else [])
    graph = helper.make_graph(nodes, name, inputs, outputs, initializers)
    m = helper.make_model(graph, opset_imports=opsets, producer_name='layerkit-fixtures', producer_version='1')
    m.ir_version = ir_version
    return m


def tensor_info(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


# ---------------------------------------------------------------- article models

def article(name, beta, size=32, per_channel=False, seed=1):
    """Conv(6, 3x3, same) -> Swish (custom, domain layerkit) -> GlobalAveragePool
    -> Flatten -> Gemm(10, transB=1) -> Softmax(axis=1); and its standard twin
    where Swish is x * Sigmoid(beta * x)."""
    rng = np.random.default_rng(seed)
    weights = [init('conv_w', rng.normal(size=(6, 3, 3, 3)) * 0.5), init('conv_b', rng.normal(size=6) * 0.1),
               init('fc_w', rng.normal(size=(10, 6)) * 2.0), init('fc_b', rng.normal(size=10) * 0.1)]
    head = [helper.make_node('Conv', ['image', 'conv_w', 'conv_b'], ['conv'], name='conv', kernel_shape=[3, 3],
                             pads=[1, 1, 1, 1])]
    tail = [helper.make_node('GlobalAveragePool', ['swish'], ['pooled'], name='pool'),
            helper.make_node('Flatten', ['pooled'], ['flat'], name='flatten'),
            helper.make_node('Gemm', ['flat', 'fc_w', 'fc_b'], ['logits'], name='fc', transB=1),
            helper.make_node('Softmax', ['logits'], ['probabilities'], name='softmax', axis=1)]
    if per_channel:
        betas = rng.uniform(0.1, 2.0, size=6)
        swish = helper.make_node('Swish', ['conv', 'swish_beta'], ['swish'], name='swish', domain='layerkit')
        custom_weights = [init('swish_beta', betas)]
        twin_weights = [init('swish_beta', betas.reshape(6, 1, 1))]
    else:
        swish = helper.make_node('Swish', ['conv'], ['swish'], name='swish', domain='layerkit', beta=float(beta))
        custom_weights = []
        twin_weights = [init('swish_beta', beta)]
    twin_swish = [helper.make_node('Mul', ['conv', 'swish_beta'], ['scaled'], name='swish_scale'),
                  helper.make_node('Sigmoid', ['scaled'], ['gate'], name='swish_sigmoid'),
                  helper.make_node('Mul', ['conv', 'gate'], ['swish'], name='swish_mul')]
    io = ([tensor_info('image', [1, 3, size, size])], [tensor_info('probabilities', [1, 10])])
    custom = model(name, head + [swish] + tail, *io, weights + custom_weights, custom=True)
    twin = model(name + '_standard', head + twin_swish + tail, *io, weights + twin_weights)
    image = rng.random((1, 3, size, size), dtype=np.float32)
    return custom, twin, {'image': image}


# ---------------------------------------------------------------- small_cnn

def small_cnn(batch, seed=2):
    """Every standard op the model runner supports, in one graph."""
    rng = np.random.default_rng(seed)

    def normal(*shape, scale=None):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        return rng.normal(size=shape) * (scale if scale is not None else np.sqrt(2.0 / fan_in))

    n = helper.make_node
    w = [
        init('c1_w', normal(8, 3, 3, 3)), init('c1_b', rng.normal(size=8) * 0.1),
        init('bn_scale', rng.uniform(0.5, 1.5, 8)), init('bn_bias', rng.normal(size=8) * 0.2),
        init('bn_mean', rng.normal(size=8) * 0.3), init('bn_var', rng.uniform(0.5, 2.0, 8)),
        init('c2_w', normal(8, 4, 3, 3)),
        init('dw_w', normal(8, 1, 3, 3)), init('dw_b', rng.normal(size=8) * 0.1),
        init('prelu_slope', rng.uniform(0.05, 0.3, (8, 1, 1))),
        init('clip_min', -2.0), init('clip_max', 3.0),
        init('mul_c', rng.uniform(0.5, 1.5, (8, 1, 1))), init('add_c', rng.normal(size=(1, 8, 1, 1)) * 0.3),
        init('sub_s', 0.25), init('div_s', 1.5),
        init('same_w', normal(6, 8, 3, 3)), init('same_b', rng.normal(size=6) * 0.1),
        init('valid_w', normal(5, 8, 1, 1)),
        init('flat_shape', [0, -1], np.int64),
        init('gemm_w', normal(16, 176, scale=0.3)), init('gemm_c', rng.normal(size=16) * 0.5),
        init('mm_w', normal(11, 16, scale=1.0)),
    ]
    nodes = [
        n('Conv', ['x', 'c1_w', 'c1_b'], ['c1'], name='conv_pads', kernel_shape=[3, 3], pads=[1, 1, 1, 1],
          strides=[1, 1], dilations=[1, 1]),                                                   # 8x32x32
        n('BatchNormalization', ['c1', 'bn_scale', 'bn_bias', 'bn_mean', 'bn_var'], ['bn'], name='bn',
          epsilon=1e-3),
        n('Relu', ['bn'], ['r'], name='relu'),
        n('Conv', ['r', 'c2_w'], ['c2'], name='conv_grouped', group=2, kernel_shape=[3, 3], strides=[2, 2],
          pads=[1, 1, 1, 1]),                                                                  # 8x16x16
        n('Conv', ['c2', 'dw_w', 'dw_b'], ['dw'], name='conv_depthwise', group=8, kernel_shape=[3, 3],
          dilations=[2, 2], pads=[2, 2, 2, 2]),                                                # 8x16x16
        n('Sigmoid', ['dw'], ['sg'], name='sigmoid'),
        n('LeakyRelu', ['c2'], ['lr'], name='leaky', alpha=0.1),
        n('Add', ['sg', 'lr'], ['s1'], name='add_same_shape'),
        n('PRelu', ['s1', 'prelu_slope'], ['pr'], name='prelu'),
        n('Clip', ['pr', 'clip_min', 'clip_max'], ['cl'], name='clip'),
        n('Mul', ['cl', 'mul_c'], ['m1'], name='mul_channel'),
        n('Add', ['m1', 'add_c'], ['a1'], name='add_channel4d'),
        n('Sub', ['a1', 'sub_s'], ['sb'], name='sub_scalar'),
        n('Div', ['sb', 'div_s'], ['dv'], name='div_scalar'),
        n('HardSwish', ['dv'], ['hs'], name='hardswish'),
        n('AveragePool', ['hs'], ['ap'], name='avgpool_exclude_pad', kernel_shape=[3, 3], strides=[1, 1],
          pads=[1, 1, 1, 1], count_include_pad=0),                                             # 8x16x16
        n('Conv', ['ap', 'same_w', 'same_b'], ['cs'], name='conv_same_upper', kernel_shape=[3, 3],
          strides=[2, 2], auto_pad='SAME_UPPER'),                                              # 6x8x8
        n('MaxPool', ['hs'], ['mp'], name='maxpool', kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        n('Conv', ['mp', 'valid_w'], ['cv'], name='conv_valid', kernel_shape=[1, 1], auto_pad='VALID'),  # 5x8x8
        n('Concat', ['cs', 'cv'], ['cat'], name='concat', axis=1),                             # 11x8x8
        n('Tanh', ['cat'], ['th'], name='tanh'),
        n('AveragePool', ['th'], ['ap2'], name='avgpool_include_pad', kernel_shape=[3, 3], strides=[2, 2],
          pads=[0, 0, 1, 1], count_include_pad=1),                                             # 11x4x4
        n('Reshape', ['ap2', 'flat_shape'], ['rs'], name='reshape'),                            # 176
        n('Gemm', ['rs', 'gemm_w', 'gemm_c'], ['g'], name='gemm', transB=1, alpha=0.5, beta=2.0),  # 16
        n('GlobalAveragePool', ['th'], ['gap'], name='global_pool'),                           # 11x1x1
        n('Flatten', ['gap'], ['fl'], name='flatten'),                                         # 11
        n('MatMul', ['fl', 'mm_w'], ['mm'], name='matmul'),                                    # 16
        n('Add', ['g', 'mm'], ['logits'], name='add_heads'),
        n('Softmax', ['logits'], ['sm'], name='softmax', axis=1),
        n('Identity', ['sm'], ['probabilities'], name='identity'),
    ]
    name = 'small_cnn' if batch == 1 else 'small_cnn_batch%d' % batch
    m = model(name, nodes, [tensor_info('x', [batch, 3, 32, 32])], [tensor_info('probabilities', [batch, 16])], w)
    x = rng.normal(size=(batch, 3, 32, 32)).astype(np.float32)
    return m, None, {'x': x}


# ---------------------------------------------------------------- small models

def typed_fields(seed=3):
    """Conv + Reshape whose initializers use float_data / int64_data, not raw_data."""
    rng = np.random.default_rng(seed)
    cw = rng.normal(size=(4, 3, 3, 3)).astype(np.float32) * 0.4
    cb = rng.normal(size=4).astype(np.float32)
    w = [helper.make_tensor('w', TensorProto.FLOAT, cw.shape, cw.flatten().tolist()),
         helper.make_tensor('b', TensorProto.FLOAT, cb.shape, cb.tolist()),
         helper.make_tensor('shape', TensorProto.INT64, [2], [1, -1])]
    nodes = [helper.make_node('Conv', ['x', 'w', 'b'], ['c'], name='conv', kernel_shape=[3, 3]),
             helper.make_node('Reshape', ['c', 'shape'], ['y'], name='reshape')]
    m = model('typed_fields', nodes, [tensor_info('x', [1, 3, 5, 5])], [tensor_info('y', [1, 36])], w)
    return m, None, {'x': rng.normal(size=(1, 3, 5, 5)).astype(np.float32)}


def single(name, nodes, shape, out_shape, initializers=(), runnable=True, opset=OPSET, seed=4):
    rng = np.random.default_rng(seed)
    m = model(name, nodes, [tensor_info('x', shape)], [tensor_info('y', out_shape)], list(initializers), opset=opset)
    return m, None, ({'x': rng.normal(size=shape).astype(np.float32)} if runnable else None)


def error_models():
    n = helper.make_node
    custom = model('custom_missing', [n('MyLayer', ['x'], ['y'], name='mine', domain='com.example', gain=2.0)],
                   [tensor_info('x', [1, 4, 3, 3])], [tensor_info('y', [1, 4, 3, 3])], [])
    custom.opset_import.append(helper.make_opsetid('com.example', 1))
    # inspect lists every refusal: an unregistered custom op twice, ImageDecoder (after a refused node),
    # one node not reached.
    mix = single('unsupported_mix', [n('Relu', ['x'], ['a'], name='relu'),
                                     n('Sharpen', ['a'], ['b'], name='sharpen1', domain='com.example'),
                                     n('ImageDecoder', ['b'], ['c'], name='decoder'),
                                     n('Sharpen', ['x'], ['d'], name='sharpen2', domain='com.example'),
                                     n('Add', ['c', 'd'], ['y'], name='add')],
                 [3, 3], [3, 3], runnable=False)
    mix[0].opset_import.append(helper.make_opsetid('com.example', 1))
    return {
        'unsupported_op': single('unsupported_op', [n('RandomUniformLike', ['x'], ['y'], name='random', seed=1.0)],
                                 [3, 3], [3, 3]),
        'custom_missing': (custom, None, None),
        'dynamic_reshape': single('dynamic_reshape', [n('Relu', ['x'], ['r'], name='relu'),
                                                      n('Shape', ['r'], ['s'], name='shape'),
                                                      n('Reshape', ['x', 's'], ['y'], name='reshape')],
                                  [1, 2, 3, 4], [1, 2, 3, 4]),
        'unsupported_mix': mix,
        'opset_too_new': single('opset_too_new', [n('Relu', ['x'], ['y'], name='relu')], [1, 2, 2, 2], [1, 2, 2, 2],
                                runnable=False, opset=99),
    }


# ---------------------------------------------------------------- writing

def run(m, feeds):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(m.SerializeToString(), options, providers=['CPUExecutionProvider'])
    return session.run(None, feeds)[0]


def attribute_fact(a):
    v = helper.get_attribute_value(a)
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, TensorProto):
        return {'dims': list(v.dims), 'data_type': v.data_type}
    if isinstance(v, list):
        return [x.decode() if isinstance(x, bytes) else x for x in v]
    return v


def dims_fact(value_info):
    t = value_info.type.tensor_type
    return {'name': value_info.name, 'elem_type': t.elem_type,
            'dims': [d.dim_value if d.HasField('dim_value') else d.dim_param for d in t.shape.dim]}


def facts(m):
    g = m.graph
    inits = []
    for t in g.initializer:
        a = numpy_helper.to_array(t).astype(np.float64).ravel()
        inits.append({'name': t.name, 'dims': list(t.dims), 'data_type': t.data_type, 'count': int(a.size),
                      'raw': t.HasField('raw_data'), 'sum': float(a.sum()), 'first': a[:4].tolist()})
    return {
        'ir_version': m.ir_version, 'producer_name': m.producer_name, 'producer_version': m.producer_version,
        'opset_imports': [{'domain': o.domain, 'version': o.version} for o in m.opset_import],
        'graph_name': g.name,
        'inputs': [dims_fact(v) for v in g.input], 'outputs': [dims_fact(v) for v in g.output],
        'nodes': [{'name': x.name, 'op_type': x.op_type, 'domain': x.domain, 'inputs': list(x.input),
                   'outputs': list(x.output), 'attributes': {a.name: attribute_fact(a) for a in x.attribute}}
                  for x in g.node],
        'initializers': inits,
    }


def write(out, name, m, twin, feeds, summary):
    def save_bytes(path, data):
        with open(os.path.join(out, path), 'wb') as f:
            f.write(data)
    if twin is None and feeds is not None:
        onnx.checker.check_model(m, full_check=True)
    save_bytes(name + '.onnx', m.SerializeToString())
    if twin is not None:
        onnx.checker.check_model(twin, full_check=True)
    with open(os.path.join(out, name + '.facts.json'), 'w') as f:
        json.dump(facts(m), f, indent=1, sort_keys=True)
        f.write('\n')
    line = '| `%s` | %d | %s |' % (name, len(m.graph.node), ', '.join(sorted({x.op_type for x in m.graph.node})))
    if feeds is not None:
        for key, value in feeds.items():
            np.save(os.path.join(out, name + ('.input.npy' if len(feeds) == 1 else '.input.%s.npy' % key)), value)
        expected = run(twin or m, feeds)
        np.save(os.path.join(out, name + '.expected.npy'), expected)
        line += ' %s -> %s |' % (', '.join('%s %s' % (k, list(v.shape)) for k, v in feeds.items()),
                                 list(expected.shape))
        summary.append(line)
        return expected
    summary.append(line + ' (not run) |')
    return None


README = """# Model fixtures

Written by `Scripts/generate_model_fixtures.py` (seeded; do not edit by hand):

    /work/main/Benchmarks/.venv/bin/python Scripts/generate_model_fixtures.py          # rewrite
    /work/main/Benchmarks/.venv/bin/python Scripts/generate_model_fixtures.py --check  # compare bytes

Versions: onnx {onnx}, onnxruntime {ort}, numpy {np}. Opset 17, IR version 8
(except `opset_too_new`: default-domain opset 99).

Per model: `<name>.onnx`, `<name>.facts.json` (what the onnx package reads from
the file: opsets, inputs/outputs and dims, nodes with attributes, initializers
with dims, data type, count, float64 sum and first values), and for models
onnxruntime can run `<name>.input.npy` and `<name>.expected.npy` (onnxruntime
on the CPU, one thread, graph optimizations disabled). Models with custom
nodes (domain `layerkit`, op `Swish`: `y = x * sigmoid(beta * x)`, `beta` an
attribute or a per-channel second input of shape [C]) are run through their
standard twin, where Swish is `Mul(x, beta) -> Sigmoid -> Mul(x, .)`.

| model | nodes | ops | input -> output |
|---|---|---|---|
{rows}

- `article_*`: input `image`, output `probabilities` [1, 10]: Conv(6, 3x3, pads 1)
  -> Swish -> GlobalAveragePool -> Flatten -> Gemm(10, transB=1) -> Softmax(axis=1).
  `article_demo` has input [1, 3, 64, 64]; `article_demo_standard.onnx` is its twin.
- `small_cnn`, `small_cnn_batch2`: input `x`, output `probabilities` [N, 16];
  every standard op the model runner supports (see the script for the list).
  Both draw weights and input from the same seed, so batch item 0 of
  `small_cnn_batch2` equals `small_cnn`'s input and output.
- `typed_fields`: initializers in `float_data` / `int64_data` instead of `raw_data`.
- `dynamic_reshape`: the Reshape target comes from a Shape node (folded at load).
- Error cases (the lead's converter must refuse these with a clear message):
  `unsupported_op` (RandomUniformLike), `custom_missing` (op `MyLayer`, domain `com.example`),
  `unsupported_mix` (two custom Sharpens and an ImageDecoder: inspect lists every refusal),
  `opset_too_new` (opset 99; the reader refuses it).
"""


def generate(out):
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.remove(os.path.join(out, f))
    summary = []
    for name, beta in [('article_beta1', 1.0), ('article_beta001', 0.01)]:
        probabilities = write(out, name, *article(name, beta), summary)
        spread = float(probabilities.max() - probabilities.min())
        assert spread > 0.1, '%s: softmax output too flat (%g)' % (name, spread)
    write(out, 'article_perchannel', *article('article_perchannel', None, per_channel=True), summary)
    demo, demo_twin, demo_feeds = article('article_demo', 1.0, size=64, seed=5)
    write(out, 'article_demo', demo, demo_twin, demo_feeds, summary)
    with open(os.path.join(out, 'article_demo_standard.onnx'), 'wb') as f:
        f.write(demo_twin.SerializeToString())
    for batch in (1, 2):
        m, _, feeds = small_cnn(batch)
        write(out, m.graph.name, m, None, feeds, summary)
    write(out, 'typed_fields', *typed_fields(), summary)
    for name, (m, twin, feeds) in error_models().items():
        write(out, name, m, twin, feeds, summary)
    with open(os.path.join(out, 'README.md'), 'w') as f:
        f.write(README.format(onnx=onnx.__version__, ort=ort.__version__, np=np.__version__,
                              rows='\n'.join(summary)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--check', action='store_true', help='regenerate into a temp dir and compare bytes')
    args = parser.parse_args()
    if not args.check:
        generate(OUT)
        shutil.copyfile(os.path.join(OUT, 'article_demo.onnx'), BUILT_IN)
        total = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
        print('wrote %d files, %.0f KB, to %s' % (len(os.listdir(OUT)), total / 1024, os.path.normpath(OUT)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        generate(tmp)
        names = sorted(set(os.listdir(tmp)) | set(os.listdir(OUT)))
        _, mismatch, errors = filecmp.cmpfiles(tmp, OUT, names, shallow=False)
        if mismatch or errors:
            print('fixtures differ from a fresh run: %s' % ', '.join(mismatch + errors))
            sys.exit(1)
        print('fixtures match a fresh run (%d files)' % len(names))


if __name__ == '__main__':
    main()
