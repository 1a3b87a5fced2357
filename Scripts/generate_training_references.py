#!/usr/bin/env python3
"""Independent references for LayerKit's training (issue 15), from PyTorch in float64.

Writes Tests/LayerKitTests/Fixtures/Training/ (see the README.md written there):
two small ONNX networks with seeded float32 weights, their loss and every
parameter's gradient from torch float64 autograd, 20 Adam steps, and a
teacher-student data set. The networks are rebuilt in torch from the very
float32 weights stored in the ONNX files, so the references describe the files.

    /work/venv/bin/python Scripts/generate_training_references.py          # rewrite
    /work/venv/bin/python Scripts/generate_training_references.py --check  # compare bytes

Needs torch 2.13 (CPU), onnx 1.23.2, onnxruntime 1.32.0 and numpy. Every output is
deterministic: seeded numpy draws, float64 arithmetic on one thread.
"""
import argparse
import io
import json
import os
import struct
import sys
import zlib

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'Tests', 'LayerKitTests', 'Fixtures', 'Training')

SWISH_BETA = [0.5, 1.0, 1.5, 2.0]
TEACHER_BETA = [0.5, 1.0, 1.5, 2.5]
ADAM = dict(lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
ADAM_STEPS, ADAM_BATCH = 20, 4
BN_EPSILON, BN_MOMENTUM = 1e-5, 0.9  # ONNX's momentum: running = running * 0.9 + batch * 0.1 (torch's 0.1)


def init(name, array):
    """A FLOAT initializer in raw_data."""
    return numpy_helper.from_array(np.asarray(array, dtype=np.float32), name)


def value(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def model(name, nodes, inputs, outputs, initializers, custom):
    opsets = [helper.make_opsetid('', OPSET)] + ([helper.make_opsetid('layerkit', 1)] if custom else [])
    graph = helper.make_graph(nodes, name, inputs, outputs, initializers)
    m = helper.make_model(graph, opset_imports=opsets, producer_name='layerkit-training-references',
                          producer_version='1')
    m.ir_version = IR_VERSION
    return m


def f32(rng, shape, scale):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


# ---------------------------------------------------------------- the networks

def swish_weights(rng):
    return {
        'conv.weight': f32(rng, (4, 3, 3, 3), 0.3),
        'conv.bias': f32(rng, (4,), 0.1),
        'swish.beta': np.array(SWISH_BETA, dtype=np.float32),
        'fc.weight': f32(rng, (5, 64), 0.2),
        'fc.bias': f32(rng, (5,), 0.1),
    }


def swish_model(weights):
    n = helper.make_node
    nodes = [
        n('Conv', ['x', 'conv.weight', 'conv.bias'], ['conv'], name='conv', kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        n('Swish', ['conv', 'swish.beta'], ['swish'], name='swish', domain='layerkit'),
        n('AveragePool', ['swish'], ['pool'], name='pool', kernel_shape=[2, 2], strides=[2, 2]),
        n('Flatten', ['pool'], ['flat'], name='flatten', axis=1),
        n('Gemm', ['flat', 'fc.weight', 'fc.bias'], ['logits'], name='fc', transB=1),
    ]
    inits = [init(k, v) for k, v in weights.items()]
    return model('swish_net', nodes, [value('x', [4, 3, 8, 8])], [value('logits', [4, 5])], inits, custom=True)


def swish_forward(p, x):
    """swish_net in torch: p maps initializer names to float64 tensors."""
    y = F.conv2d(x, p['conv.weight'], p['conv.bias'], padding=1)
    y = y * torch.sigmoid(p['swish.beta'].view(1, -1, 1, 1) * y)
    y = F.avg_pool2d(y, 2, 2)
    return F.linear(y.flatten(1), p['fc.weight'], p['fc.bias'])


def bn_weights(rng):
    return {
        'conv.weight': f32(rng, (4, 3, 3, 3), 0.3),
        'conv.bias': f32(rng, (4,), 0.1),
        'bn.scale': (1 + rng.standard_normal(4) * 0.2).astype(np.float32),
        'bn.bias': f32(rng, (4,), 0.1),
        'bn.running_mean': f32(rng, (4,), 0.1),
        'bn.running_var': rng.uniform(0.5, 1.5, 4).astype(np.float32),
        'fc.weight': f32(rng, (5, 4), 0.5),
        'fc.bias': f32(rng, (5,), 0.1),
    }


BN_STATS = ['bn.running_mean', 'bn.running_var']


def bn_model(weights):
    n = helper.make_node
    nodes = [
        n('Conv', ['x', 'conv.weight', 'conv.bias'], ['conv'], name='conv', kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        n('BatchNormalization', ['conv', 'bn.scale', 'bn.bias', 'bn.running_mean', 'bn.running_var'], ['bn'],
          name='bn', epsilon=BN_EPSILON, momentum=BN_MOMENTUM),
        n('Relu', ['bn'], ['relu'], name='relu'),
        n('MaxPool', ['relu'], ['pool'], name='pool', kernel_shape=[2, 2], strides=[2, 2]),
        n('GlobalAveragePool', ['pool'], ['gap'], name='gap'),
        n('Flatten', ['gap'], ['flat'], name='flatten', axis=1),
        n('Gemm', ['flat', 'fc.weight', 'fc.bias'], ['logits'], name='fc', transB=1),
    ]
    inits = [init(k, v) for k, v in weights.items()]
    return model('bn_net', nodes, [value('x', [4, 3, 8, 8])], [value('logits', [4, 5])], inits, custom=False)


def bn_forward(p, x, stats, training):
    """bn_net in torch; `stats` (running mean, var) are updated in place when training."""
    y = F.conv2d(x, p['conv.weight'], p['conv.bias'], padding=1)
    y = F.batch_norm(y, stats[0], stats[1], p['bn.scale'], p['bn.bias'], training=training,
                     momentum=1 - BN_MOMENTUM, eps=BN_EPSILON)
    y = F.max_pool2d(F.relu(y), 2, 2)
    return F.linear(y.mean(dim=(2, 3)), p['fc.weight'], p['fc.bias'])


def parameters(weights, frozen=()):
    return {k: torch.tensor(v, dtype=torch.float64, requires_grad=k not in frozen) for k, v in weights.items()}


def cross_entropy(logits, labels):
    return F.cross_entropy(logits, torch.tensor(labels, dtype=torch.int64))


# ---------------------------------------------------------------- onnxruntime checks of the files

def standard_twin(m):
    """The model with each layerkit.Swish(x, beta) as Mul(x, Unsqueeze(beta)) -> Sigmoid -> Mul(x, .),
    which stock onnxruntime runs."""
    twin = onnx.ModelProto()
    twin.CopyFrom(m)
    nodes = []
    axes = numpy_helper.from_array(np.array([1, 2], dtype=np.int64), 'twin.axes')
    twin.graph.initializer.append(axes)
    for node in twin.graph.node:
        if node.domain != 'layerkit':
            nodes.append(node)
            continue
        x, beta = node.input
        y = node.output[0]
        t = 'twin.' + y
        nodes += [helper.make_node('Unsqueeze', [beta, 'twin.axes'], [t + '.beta']),
                  helper.make_node('Mul', [x, t + '.beta'], [t + '.scaled']),
                  helper.make_node('Sigmoid', [t + '.scaled'], [t + '.gate']),
                  helper.make_node('Mul', [x, t + '.gate'], [y])]
    del twin.graph.node[:]
    twin.graph.node.extend(nodes)
    del twin.opset_import[:]
    twin.opset_import.append(helper.make_opsetid('', OPSET))
    return twin


def ort_run(m, x):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(m.SerializeToString(), options, providers=['CPUExecutionProvider'])
    return session.run(None, {'x': x})[0]


def agree(name, ours, theirs, tolerance=1e-5):
    error = float(np.max(np.abs(np.asarray(ours, np.float64) - theirs)))
    assert error <= tolerance * max(1.0, float(np.max(np.abs(theirs)))), f'{name}: onnxruntime differs by {error}'
    return error


# ---------------------------------------------------------------- generation

def generate():
    torch.set_num_threads(1)
    rng = np.random.default_rng(15)
    files = {}
    notes = []

    def save(name, array):
        buffer = io.BytesIO()
        np.save(buffer, array)
        files[name] = buffer.getvalue()

    x = rng.uniform(-1, 1, (4, 3, 8, 8)).astype(np.float32)
    labels = rng.integers(0, 5, 4)
    save('x.npy', x)
    save('labels.npy', labels.astype(np.float32))
    xt = torch.tensor(x, dtype=torch.float64)

    # a. + b. swish_net: loss and gradients.
    sw = swish_weights(rng)
    swm = swish_model(sw)
    onnx.checker.check_model(swm)
    files['swish_net.onnx'] = swm.SerializeToString()
    p = parameters(sw)
    logits = swish_forward(p, xt)
    loss = cross_entropy(logits, labels)
    loss.backward()
    save('swish_net.logits.npy', logits.detach().numpy())
    save('swish_net.loss.npy', np.array(loss.item(), dtype=np.float64))
    for k, v in p.items():
        save(f'swish_net.grad.{k}.npy', v.grad.numpy())
    notes.append(('swish_net', agree('swish_net', ort_run(standard_twin(swm), x), logits.detach().numpy())))

    # bn_net: training mode (batch statistics), running stats updated once.
    bw = bn_weights(rng)
    bnm = bn_model(bw)
    onnx.checker.check_model(bnm)
    files['bn_net.onnx'] = bnm.SerializeToString()
    p = parameters(bw, frozen=BN_STATS)
    stats = [p[k].detach().clone() for k in BN_STATS]
    logits = bn_forward(p, xt, stats, training=True)
    loss = cross_entropy(logits, labels)
    loss.backward()
    save('bn_net.logits.npy', logits.detach().numpy())
    save('bn_net.loss.npy', np.array(loss.item(), dtype=np.float64))
    for k, v in p.items():
        if k not in BN_STATS:
            save(f'bn_net.grad.{k}.npy', v.grad.numpy())
    save('bn_net.running_mean.npy', stats[0].numpy())
    save('bn_net.running_var.npy', stats[1].numpy())
    # The file's inference-mode semantics (running statistics) checked against torch's eval mode.
    with torch.no_grad():
        eval_logits = bn_forward(p, xt, [p[k].detach().clone() for k in BN_STATS], training=False)
    notes.append(('bn_net (inference mode)', agree('bn_net', ort_run(bnm, x), eval_logits.numpy())))

    # c. 20 Adam steps on swish_net, batches of 4 in order, no shuffling.
    adam_x = rng.uniform(-1, 1, (16, 3, 8, 8)).astype(np.float32)
    adam_labels = rng.integers(0, 5, 16)
    save('adam_x.npy', adam_x)
    save('adam_labels.npy', adam_labels.astype(np.float32))
    p = parameters(sw)
    optimizer = torch.optim.Adam(list(p.values()), **ADAM)
    losses = []
    batches = len(adam_x) // ADAM_BATCH
    for step in range(ADAM_STEPS):
        b = step % batches
        rows = slice(b * ADAM_BATCH, (b + 1) * ADAM_BATCH)
        optimizer.zero_grad()
        loss = cross_entropy(swish_forward(p, torch.tensor(adam_x[rows], dtype=torch.float64)), adam_labels[rows])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    save('adam_losses.npy', np.array(losses, dtype=np.float64))
    for k, v in p.items():
        save(f'adam_final.{k}.npy', v.detach().numpy())

    # d. Teacher and student.
    teacher_x = rng.uniform(-4, 4, (64, 4, 4, 4)).astype(np.float32)
    t = teacher_x.astype(np.float64)
    beta = np.array(TEACHER_BETA, dtype=np.float64).reshape(1, 4, 1, 1)
    teacher_y = (t / (1 + np.exp(-beta * t))).astype(np.float32)
    save('teacher_x.npy', teacher_x)
    save('teacher_y.npy', teacher_y)
    student = model('student', [helper.make_node('Swish', ['x', 'beta'], ['y'], name='swish', domain='layerkit')],
                    [value('x', ['N', 4, 4, 4])], [value('y', ['N', 4, 4, 4])],
                    [init('beta', np.ones(4))], custom=True)
    onnx.checker.check_model(student)
    files['student.onnx'] = student.SerializeToString()
    twin = standard_twin(student)
    twin.graph.initializer[0].CopyFrom(init('beta', TEACHER_BETA))
    notes.append(('teacher (Swish twin)', agree('teacher', ort_run(twin, teacher_x), teacher_y.astype(np.float64))))

    # A checkpoint written here from the documented layout (TrainingCheckpoint), for LayerKit to read.
    files['checkpoint_v1.lkckpt'] = checkpoint(files['swish_net.onnx'], {
        'conv.weight': sw['conv.weight'],
        'exp_avg/conv.weight': (sw['conv.weight'] * 0.5).astype(np.float32),
        'scalar': np.array(2.5, dtype=np.float32),
    })
    return files, notes


def checkpoint(model_bytes, tensors):
    """A LayerKit training checkpoint, version 1: magic, version, header length, JSON header,
    Float32 tensors in the header's order, CRC-32 of all of it."""
    names = sorted(tensors)
    header = {
        'step': 7, 'epoch': 1, 'batchInEpoch': 3, 'seed': 12345678901234567890,
        'counters': {'step': 7, 'conv.weight.step': 2 ** 63 - 1}, 'epochLossSum': 4.25,
        'optimizer': {'name': 'adam', 'hyperParameters': {'lr': 0.01, 'beta1': 0.9, 'beta2': 0.999, 'eps': 1e-08}},
        'schedule': {'name': 'cosine', 'state': {'base': 0.01, 'steps': 100}},
        'model': {'name': 'swish_net.onnx', 'byteCount': len(model_bytes), 'crc32': zlib.crc32(model_bytes)},
        'tensors': [{'name': n, 'shape': list(tensors[n].shape)} for n in names],
    }
    text = json.dumps(header, sort_keys=True, separators=(',', ':')).encode()
    body = b'\x89LKCKPT\n' + struct.pack('<II', 1, len(text)) + text
    body += b''.join(np.ascontiguousarray(tensors[n], dtype='<f4').tobytes() for n in names)
    return body + struct.pack('<I', zlib.crc32(body))


README = """# Training references

Written by `Scripts/generate_training_references.py` (seeded; do not edit by hand):

    /work/venv/bin/python Scripts/generate_training_references.py          # rewrite
    /work/venv/bin/python Scripts/generate_training_references.py --check  # compare bytes

Versions: torch {torch} (CPU, float64, one thread), onnx {onnx}, onnxruntime {ort}, numpy {numpy}.
ONNX files: opset 17, IR version 8; `layerkit.Swish(x, beta)` is `x * sigmoid(beta * x)` with `beta`
of shape [C], one value per channel (axis 1), and the models using it import domain `layerkit` version 1.
Weights are seeded normal draws rounded to float32; the torch references are computed in float64 from
those float32 values. Labels are float32 class indices. Losses are the mean cross-entropy over the batch.

## The networks (input `x` [4, 3, 8, 8] float32, output `logits` [4, 5])

- `swish_net.onnx`: Conv (`conv.weight` [4, 3, 3, 3], `conv.bias` [4], pads 1) -> layerkit.Swish
  (`swish.beta` [4] = 0.5, 1, 1.5, 2) -> AveragePool (kernel 2, stride 2) -> Flatten ->
  Gemm (`fc.weight` [5, 64], transB 1; `fc.bias` [5]).
- `bn_net.onnx`: Conv (`conv.weight` [4, 3, 3, 3], `conv.bias` [4], pads 1) -> BatchNormalization
  (`bn.scale`, `bn.bias`, `bn.running_mean`, `bn.running_var`, all [4]; epsilon 1e-5, momentum 0.9) ->
  Relu -> MaxPool (kernel 2, stride 2) -> GlobalAveragePool -> Flatten -> Gemm (`fc.weight` [5, 4],
  transB 1; `fc.bias` [5]).
- `x.npy` [4, 3, 8, 8] float32 (uniform in [-1, 1]), `labels.npy` [4] float32: the batch for both.

## One forward and backward (torch float64 autograd)

- `<net>.logits.npy` [4, 5] float64, `<net>.loss.npy` (a 0-d float64 array): the forward on `x`.
- `<net>.grad.<initializer>.npy` float64, the initializer's shape: d(loss)/d(initializer) for every
  trainable initializer: swish_net's `conv.weight`, `conv.bias`, `swish.beta`, `fc.weight`, `fc.bias`;
  bn_net's `conv.weight`, `conv.bias`, `bn.scale`, `bn.bias`, `fc.weight`, `fc.bias`.
- bn_net runs BatchNormalization in training mode (batch statistics, biased variance in the
  normalization). Its running statistics get no gradient; they are updated instead:
  `bn_net.running_mean.npy`, `bn_net.running_var.npy` [4] float64 hold them after that one forward
  (running = 0.9 * running + 0.1 * batch, the batch variance unbiased, n / (n - 1), as PyTorch does).
- The files were checked in onnxruntime against torch's forward: swish_net through a standard twin
  (Swish as Unsqueeze(beta) -> Mul -> Sigmoid -> Mul), max error {swish_err:.1e}; bn_net in inference mode
  (running statistics, torch's eval mode), max error {bn_err:.1e}.

## 20 Adam steps on swish_net

- `adam_x.npy` [16, 3, 8, 8] float32, `adam_labels.npy` [16] float32: the data, in batches of 4 taken in
  order (rows 0-3, 4-7, 8-11, 12-15, then again: 5 epochs, no shuffling), starting from swish_net.onnx's
  weights, every initializer trainable.
- torch.optim.Adam: lr 0.01, betas (0.9, 0.999), eps 1e-8, no weight decay.
- `adam_losses.npy` [20] float64: each step's batch loss, before that step's update.
- `adam_final.<initializer>.npy` float64: every parameter after the 20th update.

## Teacher and student

- `teacher_x.npy` [64, 4, 4, 4] float32, uniform in [-4, 4].
- `teacher_y.npy` [64, 4, 4, 4] float32: Swish with per-channel beta 0.5, 1, 1.5, 2.5, computed in
  float64 from the float32 inputs and rounded to float32 (checked in onnxruntime: {teacher_err:.1e}).
- `student.onnx`: input `x` [N, 4, 4, 4] (N symbolic) -> layerkit.Swish (`beta` [4], all ones) -> `y`.

## A checkpoint file

- `checkpoint_v1.lkckpt`: a training checkpoint written by this script from the documented layout
  (TrainingCheckpoint, version 1): step 7, epoch 1, batch 3, seed 12345678901234567890, counters
  {{step: 7, conv.weight.step: 2^63 - 1}}, epoch loss sum 4.25, Adam (lr 0.01, beta1 0.9, beta2 0.999, eps 1e-8), a cosine schedule (base 0.01,
  steps 100), the identity of `swish_net.onnx` (its size and zlib CRC-32), and tensors `conv.weight`
  (swish_net's), `exp_avg/conv.weight` (half of it) and `scalar` (a 0-d 2.5).
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--check', action='store_true', help='compare with the committed files instead of writing')
    parser.add_argument('--out', default=OUT)
    args = parser.parse_args()
    files, notes = generate()
    errors = dict(notes)
    files['README.md'] = README.format(
        torch=torch.__version__, onnx=onnx.__version__, ort=ort.__version__, numpy=np.__version__,
        swish_err=errors['swish_net'], bn_err=errors['bn_net (inference mode)'],
        teacher_err=errors['teacher (Swish twin)']).encode()
    if args.check:
        stale = [n for n, data in files.items()
                 if not os.path.exists(os.path.join(args.out, n)) or open(os.path.join(args.out, n), 'rb').read() != data]
        extra = sorted(set(os.listdir(args.out)) - set(files)) if os.path.isdir(args.out) else []
        for name in stale + extra:
            print(f'differs: {name}')
        sys.exit(1 if stale or extra else 0)
    os.makedirs(args.out, exist_ok=True)
    for name, data in sorted(files.items()):
        with open(os.path.join(args.out, name), 'wb') as f:
            f.write(data)
    total = sum(len(d) for d in files.values())
    print(f'wrote {len(files)} files, {total} bytes, to {os.path.normpath(args.out)}')
    for name, error in notes:
        print(f'  onnxruntime vs torch, {name}: {error:.2e}')


if __name__ == '__main__':
    main()
