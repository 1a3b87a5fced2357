"""Core ML ML Program fixtures for LayerKit's `.mlpackage` reader.

Writes Tests/LayerKitTests/Fixtures/mlpackage/:

    SmallCNN.mlpackage          conv (same padding, bias), batch_norm, relu, max_pool; a grouped,
                                dilated conv with custom padding, relu6 (clip), avg_pool, max_pool
                                over the whole map, flatten2d, linear; reduce_mean, linear, add,
                                softmax. Outputs logits and probabilities, [1, 10]
    StyleNet.mlpackage          a tiny style-transfer network: reflect pad, conv, instance_norm,
                                silu, strided conv, relu, conv_transpose, leaky_relu,
                                upsample_nearest_neighbor, replicate pad, conv, sigmoid; the
                                conv_transpose output upsampled bilinearly (align_corners true and
                                false) and constant padded. Outputs image [1, 3, 32, 32], aligned,
                                half [1, 8, 32, 32], padded [1, 3, 34, 36]
    TinyTransformer.mlpackage   a transformer block on [1, 6, 8]: layer_norm, linear q/k/v,
                                reshape, transpose, matmul (transpose_y), mul, softmax, matmul,
                                linear, add, layer_norm, linear, gelu (exact), linear, add; then
                                split, maximum, minimum, concat, sub, real_div, exp, sqrt, rsqrt,
                                log, pow, tanh, gelu (tanh approximation), slice_by_index,
                                expand_dims, squeeze, reduce_sum, reduce_max. Outputs y [1, 6, 8],
                                mixed [1, 6, 8], sliced [1, 3, 8], sums [1, 8]
    <name>-fp16.mlpackage       the same program converted with compute_precision FLOAT16
                                (coremltools' default): fp16 weights, casts around the program
    Scaled.mlmodel              an ML Program in a single .mlmodel file (every constant an
                                immediate value, no weights file): (x * 2 + 1) clipped, [1, 4]
    ScaledIOS18.mlmodel         the same for iOS 18: its function's block is opset CoreML8
    Resized.mlpackage           resize_bilinear in its sampling modes STRICT_ALIGN_CORNERS,
                                ALIGN_CORNERS (also to 1x1), DEFAULT and UNALIGN_CORNERS,
                                resize_nearest_neighbor, erf, on [1, 2, 5, 7]. Outputs strict
                                [1, 2, 8, 4], aligned [1, 2, 3, 10], point [1, 2, 1, 1], default
                                [1, 2, 9, 3], unaligned [1, 2, 4, 11], nearest [1, 2, 8, 3], erf
    Unsupported.mlpackage       a program with an op LayerKit does not translate (cumsum)
    TorchNet.mlpackage          a small PyTorch network converted as users convert theirs
    TorchNet-fp16.mlpackage     (ct.convert of torch.jit.trace, FLOAT32 and FLOAT16): conv
                                (batchnorm folded in), relu, max_pool, a grouped strided conv,
                                instance_norm, silu, nearest upsampling, reflect pad,
                                conv_transpose, sigmoid, reduce_mean, linear, layer_norm, gelu,
                                softmax. Outputs probs [1, 5], image [1, 4, 20, 20]; the
                                reference is PyTorch's in float64 (model.double())
    <name>-input.npy            the input, float32 ([1, 3, 16, 16], [1, 6, 8], [1, 4])
    <name>-<output>.npy         numpy's float64 result with the float32 weights (saved as float32)
    <name>-<output>-fp16w.npy   numpy's float64 result with the fp16 program's weights and
                                parameters (the float32 ones rounded to fp16: weights,
                                epsilon, leaky_relu's alpha): what float32 math on the fp16
                                program computes
    <name>-<output>-fp16.npy    the same with the input and every op's output rounded to fp16,
                                as an fp16 program computes: the GPU's reference

coremltools writes the packages (its MIL builder, then ct.convert) but cannot run them on
Linux, so the references are computed here by the definitions of the MIL ops (coremltools'
op documentation), from the weights given to the builder, or by PyTorch: never by LayerKit.
Weights come from seeded generators, so reruns write the same programs. Run with a Python
that has coremltools, numpy and torch (a venv: pip install coremltools numpy torch;
coremltools 9 warns that torch 2.13 is untested, and converts this network all the same).
"""
import math
import os
import shutil

import numpy as np
import coremltools as ct
from coremltools.converters.mil import Builder as mb

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'Tests', 'LayerKitTests', 'Fixtures',
                    'mlpackage')
TARGET = ct.target.iOS15


# ---- numpy references in float64; q rounds each op's output (to fp16 for the fp16 reference) ----

class Ref:
    """q rounds an op's output (fp16_values); k a scalar parameter of the program (fp16_program:
    coremltools stores an fp16 program's alpha and epsilon in fp16 too)."""
    def __init__(self, fp16_values, fp16_program):
        self.fp16_values, self.fp16_program = fp16_values, fp16_program

    def q(self, a):
        a = np.asarray(a, dtype=np.float64)
        return a.astype(np.float16).astype(np.float64) if self.fp16_values else a

    def k(self, value):
        return float(np.float16(value)) if self.fp16_program else value


def pad2d(x, top, bottom, left, right, mode='constant', value=0.0):
    widths = [(0, 0)] * (x.ndim - 2) + [(top, bottom), (left, right)]
    if mode == 'constant':
        return np.pad(x, widths, mode='constant', constant_values=value)
    return np.pad(x, widths, mode={'reflect': 'reflect', 'replicate': 'edge'}[mode])


def conv2d(x, w, b, stride=(1, 1), pads=(0, 0, 0, 0), dilation=(1, 1), groups=1):
    """x [N, C, H, W], w [O, C/groups, kH, kW], pads (top, bottom, left, right)."""
    x = pad2d(x, *pads)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh = (h - (kh - 1) * dilation[0] - 1) // stride[0] + 1
    ow = (wd - (kw - 1) * dilation[1] - 1) // stride[1] + 1
    y = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dilation[0]:i * dilation[0] + stride[0] * (oh - 1) + 1:stride[0],
                           j * dilation[1]:j * dilation[1] + stride[1] * (ow - 1) + 1:stride[1]]
                y[:, g * og:(g + 1) * og] += np.einsum('nchw,oc->nohw', patch, w[g * og:(g + 1) * og, :, i, j])
    if b is not None:
        y += b.reshape(1, -1, 1, 1)
    return y


def conv_transpose2d(x, w, b, stride, pads):
    """x [N, C, H, W], w [C, O, kH, kW] (groups 1), pads (top, bottom, left, right) cropped."""
    n, c, h, wd = x.shape
    _, o, kh, kw = w.shape
    full = np.zeros((n, o, (h - 1) * stride[0] + kh, (wd - 1) * stride[1] + kw))
    for i in range(h):
        for j in range(wd):
            full[:, :, i * stride[0]:i * stride[0] + kh, j * stride[1]:j * stride[1] + kw] += \
                np.einsum('nc,cokl->nokl', x[:, :, i, j], w)
    top, bottom, left, right = pads
    y = full[:, :, top:full.shape[2] - bottom, left:full.shape[3] - right]
    return y + b.reshape(1, -1, 1, 1)


def pool(x, kernel, stride, kind):
    n, c, h, wd = x.shape
    oh, ow = (h - kernel[0]) // stride[0] + 1, (wd - kernel[1]) // stride[1] + 1
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            window = x[:, :, i * stride[0]:i * stride[0] + kernel[0], j * stride[1]:j * stride[1] + kernel[1]]
            y[:, :, i, j] = window.max(axis=(2, 3)) if kind == 'max' else window.mean(axis=(2, 3))
    return y


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def normalize(x, axes, gamma, beta, eps):
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def erf(x):
    return np.vectorize(math.erf)(x)


def upsample_bilinear(x, scale, align_corners):
    """MIL's upsample_bilinear on the last two axes (its documented grid points)."""
    def grid(size_in, size_out):
        if align_corners:
            points = np.arange(size_out) * ((size_in - 1) / (size_out - 1))
        else:
            spacing = size_in / size_out
            points = np.arange(size_out) * spacing + 0.5 * spacing - 0.5
        points = np.clip(points, 0, size_in - 1)
        low = np.floor(points).astype(int)
        high = np.minimum(low + 1, size_in - 1)
        return low, high, points - low

    h, w = x.shape[-2:]
    r0, r1, fr = grid(h, h * scale)
    c0, c1, fc = grid(w, w * scale)
    rows = x[..., r0, :] * (1 - fr)[:, None] + x[..., r1, :] * fr[:, None]
    return rows[..., c0] * (1 - fc) + rows[..., c1] * fc


# ---- the programs: each a MIL builder function of the weights, and its reference ----

def cnn_weights(rng):
    return {
        'w1': rng.normal(0, 0.4, (8, 3, 3, 3)), 'b1': rng.normal(0, 0.1, 8),
        'mean': rng.normal(0, 0.2, 8), 'var': rng.uniform(0.5, 1.5, 8),
        'gamma': rng.uniform(0.5, 1.5, 8), 'beta': rng.normal(0, 0.2, 8),
        'w2': rng.normal(0, 0.3, (8, 4, 3, 3)), 'b2': rng.normal(0, 0.1, 8),
        'fc1': rng.normal(0, 0.4, (10, 8)), 'fb1': rng.normal(0, 0.1, 10),
        'fc2': rng.normal(0, 0.4, (10, 8)),
    }


def cnn_program(w):
    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 3, 16, 16))], opset_version=TARGET)
    def prog(x):
        h = mb.conv(x=x, weight=w['w1'], bias=w['b1'], pad_type='same', name='conv1')
        h = mb.batch_norm(x=h, mean=w['mean'], variance=w['var'], gamma=w['gamma'], beta=w['beta'], epsilon=1e-5,
                          name='bn1')
        h = mb.relu(x=h, name='relu1')
        h = mb.max_pool(x=h, kernel_sizes=[2, 2], strides=[2, 2], pad_type='valid', name='pool1')  # 8x8
        h = mb.conv(x=h, weight=w['w2'], bias=w['b2'], pad_type='custom', pad=[1, 1, 1, 1], dilations=[2, 2],
                    groups=2, name='conv2')  # 6x6
        h = mb.clip(x=h, alpha=0.0, beta=6.0, name='relu6')
        h = mb.avg_pool(x=h, kernel_sizes=[2, 2], strides=[2, 2], pad_type='valid', name='pool2')  # 3x3
        g = mb.max_pool(x=h, kernel_sizes=[3, 3], strides=[1, 1], pad_type='valid', name='global_max')
        g = mb.flatten2d(x=g, axis=1, name='flat')
        a = mb.linear(x=g, weight=w['fc1'], bias=w['fb1'], name='fc1')
        m = mb.reduce_mean(x=h, axes=[2, 3], keep_dims=False, name='mean')
        b = mb.linear(x=m, weight=w['fc2'], name='fc2')
        logits = mb.add(x=a, y=b, name='logits')
        probabilities = mb.softmax(x=logits, axis=-1, name='probabilities')
        return logits, probabilities
    return prog


def cnn_reference(x, w, r):
    h = r.q(conv2d(x, w['w1'], w['b1'], pads=(1, 1, 1, 1)))
    h = r.q(normalize_bn(h, w, r.k(1e-5)))
    h = r.q(np.maximum(h, 0))
    h = r.q(pool(h, (2, 2), (2, 2), 'max'))
    h = r.q(conv2d(h, w['w2'], w['b2'], pads=(1, 1, 1, 1), dilation=(2, 2), groups=2))
    h = r.q(np.clip(h, 0, 6))
    h = r.q(pool(h, (2, 2), (2, 2), 'avg'))
    g = r.q(pool(h, (3, 3), (1, 1), 'max')).reshape(1, 8)
    a = r.q(g @ w['fc1'].T + w['fb1'])
    m = r.q(h.mean(axis=(2, 3)))
    b = r.q(m @ w['fc2'].T)
    logits = r.q(a + b)
    return {'logits': logits, 'probabilities': r.q(softmax(logits, -1))}


def normalize_bn(h, w, eps):
    shape = (1, -1, 1, 1)
    return (h - w['mean'].reshape(shape)) / np.sqrt(w['var'].reshape(shape) + eps) * w['gamma'].reshape(shape) \
        + w['beta'].reshape(shape)


def style_weights(rng):
    return {
        'w1': rng.normal(0, 0.2, (8, 3, 5, 5)), 'b1': rng.normal(0, 0.1, 8),
        'g1': rng.uniform(0.5, 1.5, 8), 'be1': rng.normal(0, 0.2, 8),
        'w2': rng.normal(0, 0.2, (16, 8, 3, 3)), 'b2': rng.normal(0, 0.1, 16),
        'g2': rng.uniform(0.5, 1.5, 16), 'be2': rng.normal(0, 0.2, 16),
        'wt': rng.normal(0, 0.2, (16, 8, 4, 4)), 'bt': rng.normal(0, 0.1, 8),
        'w3': rng.normal(0, 0.2, (3, 8, 3, 3)), 'b3': rng.normal(0, 0.1, 3),
    }


def style_program(w):
    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 3, 16, 16))], opset_version=TARGET)
    def prog(x):
        h = mb.pad(x=x, pad=[2, 2, 2, 2], mode='reflect', name='pad_reflect')  # 20x20
        h = mb.conv(x=h, weight=w['w1'], bias=w['b1'], pad_type='valid', name='conv1')  # 16x16
        h = mb.instance_norm(x=h, gamma=w['g1'], beta=w['be1'], epsilon=1e-5, name='in1')
        h = mb.silu(x=h, name='silu1')
        h = mb.conv(x=h, weight=w['w2'], bias=w['b2'], strides=[2, 2], pad_type='custom', pad=[1, 1, 1, 1],
                    name='down')  # 8x8
        h = mb.instance_norm(x=h, gamma=w['g2'], beta=w['be2'], epsilon=1e-5, name='in2')
        h = mb.relu(x=h, name='relu2')
        t = mb.conv_transpose(x=h, weight=w['wt'], bias=w['bt'], strides=[2, 2], pad_type='custom',
                              pad=[1, 1, 1, 1], name='up')  # 16x16
        t = mb.leaky_relu(x=t, alpha=0.2, name='leaky')
        h = mb.upsample_nearest_neighbor(x=t, scale_factor_height=2, scale_factor_width=2, name='nearest')  # 32
        h = mb.pad(x=h, pad=[1, 1, 1, 1], mode='replicate', name='pad_edge')  # 34
        h = mb.conv(x=h, weight=w['w3'], bias=w['b3'], pad_type='valid', name='conv3')  # 32
        image = mb.sigmoid(x=h, name='image')
        aligned = mb.upsample_bilinear(x=t, scale_factor_height=2, scale_factor_width=2, align_corners=True,
                                       name='aligned')
        half = mb.upsample_bilinear(x=t, scale_factor_height=2, scale_factor_width=2, align_corners=False,
                                    name='half')
        padded = mb.pad(x=image, pad=[1, 1, 2, 2], mode='constant', constant_val=0.5, name='padded')
        return image, aligned, half, padded
    return prog


def style_reference(x, w, r):
    h = r.q(pad2d(x, 2, 2, 2, 2, 'reflect'))
    h = r.q(conv2d(h, w['w1'], w['b1']))
    h = r.q(normalize(h, (2, 3), w['g1'].reshape(1, -1, 1, 1), w['be1'].reshape(1, -1, 1, 1), r.k(1e-5)))
    h = r.q(h / (1 + np.exp(-h)))
    h = r.q(conv2d(h, w['w2'], w['b2'], stride=(2, 2), pads=(1, 1, 1, 1)))
    h = r.q(normalize(h, (2, 3), w['g2'].reshape(1, -1, 1, 1), w['be2'].reshape(1, -1, 1, 1), r.k(1e-5)))
    h = r.q(np.maximum(h, 0))
    t = r.q(conv_transpose2d(h, w['wt'], w['bt'], (2, 2), (1, 1, 1, 1)))
    t = r.q(np.where(t >= 0, t, r.k(0.2) * t))
    h = r.q(t.repeat(2, axis=2).repeat(2, axis=3))
    h = r.q(pad2d(h, 1, 1, 1, 1, 'replicate'))
    h = r.q(conv2d(h, w['w3'], w['b3']))
    image = r.q(1 / (1 + np.exp(-h)))
    return {'image': image, 'aligned': r.q(upsample_bilinear(t, 2, True)),
            'half': r.q(upsample_bilinear(t, 2, False)), 'padded': r.q(pad2d(image, 1, 1, 2, 2, value=0.5))}


def grid(mode, size_in, size_out):
    """resize_bilinear's sampling grid, as coremltools' op documentation defines it."""
    i = np.arange(size_out, dtype=np.float64)
    if mode in ('STRICT_ALIGN_CORNERS', 'ALIGN_CORNERS'):
        g = np.array([(size_in - 1) / 2]) if size_out == 1 else i * (size_in - 1) / (size_out - 1)
    elif mode == 'DEFAULT':
        g = np.zeros(1) if size_out == 1 else i * (size_in - size_in / size_out) / (size_out - 1)
    else:  # UNALIGN_CORNERS
        spacing = size_in / size_out
        g = i * spacing + 0.5 * spacing - 0.5
    return np.clip(g, 0, size_in - 1)


def interpolate(x, axis, points):
    """Linear interpolation of x along axis at the (clamped) grid points."""
    low = np.floor(points).astype(int)
    high = np.minimum(low + 1, x.shape[axis] - 1)
    shape = [1] * x.ndim
    shape[axis] = len(points)
    weight = (points - low).reshape(shape)
    return np.take(x, low, axis) * (1 - weight) + np.take(x, high, axis) * weight


def resize_bilinear(x, height, width, mode):
    return interpolate(interpolate(x, -2, grid(mode, x.shape[-2], height)), -1, grid(mode, x.shape[-1], width))


def resize_nearest(x, height, width):
    # The upsample of scale out / in: output i reads floor(i * in / out).
    rows = np.floor(np.arange(height) * x.shape[-2] / height).astype(int)
    columns = np.floor(np.arange(width) * x.shape[-1] / width).astype(int)
    return x[..., rows, :][..., columns]


RESIZES = {'strict': (8, 4, 'STRICT_ALIGN_CORNERS'), 'aligned': (3, 10, 'ALIGN_CORNERS'),
           'point': (1, 1, 'ALIGN_CORNERS'), 'default': (9, 3, 'DEFAULT'), 'unaligned': (4, 11, 'UNALIGN_CORNERS')}


def resize_program(w):
    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 2, 5, 7))], opset_version=TARGET)
    def prog(x):
        outputs = [mb.resize_bilinear(x=x, target_size_height=height, target_size_width=width, sampling_mode=mode,
                                      name=name) for name, (height, width, mode) in RESIZES.items()]
        return tuple(outputs + [mb.resize_nearest_neighbor(x=x, target_size_height=8, target_size_width=3,
                                                           name='nearest'), mb.erf(x=x, name='erf')])
    return prog


def resize_reference(x, w, r):
    x = r.q(x)
    out = {name: r.q(resize_bilinear(x, height, width, mode)) for name, (height, width, mode) in RESIZES.items()}
    out['nearest'] = r.q(resize_nearest(x, 8, 3))
    out['erf'] = r.q(np.vectorize(math.erf)(x))
    return out


def transformer_weights(rng):
    w = {name: rng.normal(0, 0.35, (8, 8)) for name in ['wq', 'wk', 'wv', 'wo']}
    w.update({'bq': rng.normal(0, 0.1, 8), 'bv': rng.normal(0, 0.1, 8), 'bo': rng.normal(0, 0.1, 8),
              'ln1g': rng.uniform(0.5, 1.5, 8), 'ln1b': rng.normal(0, 0.2, 8),
              'ln2g': rng.uniform(0.5, 1.5, 8), 'ln2b': rng.normal(0, 0.2, 8),
              'w1': rng.normal(0, 0.35, (16, 8)), 'b1': rng.normal(0, 0.1, 16),
              'w2': rng.normal(0, 0.25, (8, 16)), 'b2': rng.normal(0, 0.1, 8)})
    return w


def transformer_program(w):
    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 6, 8))], opset_version=TARGET)
    def prog(x):
        h = mb.layer_norm(x=x, axes=[-1], gamma=w['ln1g'], beta=w['ln1b'], epsilon=1e-5, name='ln1')

        def heads(v, name):
            v = mb.reshape(x=v, shape=[1, 6, 2, 4], name=name + '_split')
            return mb.transpose(x=v, perm=[0, 2, 1, 3], name=name + '_heads')
        q = heads(mb.linear(x=h, weight=w['wq'], bias=w['bq'], name='q'), 'q')
        k = heads(mb.linear(x=h, weight=w['wk'], name='k'), 'k')
        v = heads(mb.linear(x=h, weight=w['wv'], bias=w['bv'], name='v'), 'v')
        s = mb.matmul(x=q, y=k, transpose_y=True, name='scores')
        s = mb.mul(x=s, y=0.5, name='scaled')
        a = mb.softmax(x=s, axis=-1, name='attention')
        o = mb.matmul(x=a, y=v, name='attended')
        o = mb.transpose(x=o, perm=[0, 2, 1, 3], name='merge')
        o = mb.reshape(x=o, shape=[1, 6, 8], name='merged')
        o = mb.linear(x=o, weight=w['wo'], bias=w['bo'], name='o')
        x1 = mb.add(x=x, y=o, name='residual1')
        h = mb.layer_norm(x=x1, axes=[-1], gamma=w['ln2g'], beta=w['ln2b'], epsilon=1e-5, name='ln2')
        h = mb.linear(x=h, weight=w['w1'], bias=w['b1'], name='ff1')
        h = mb.gelu(x=h, mode='EXACT', name='gelu')
        h = mb.linear(x=h, weight=w['w2'], bias=w['b2'], name='ff2')
        y = mb.add(x=x1, y=h, name='y')

        left, right = mb.split(x=y, num_splits=2, axis=-1, name='halves')
        big = mb.maximum(x=left, y=right, name='big')
        small = mb.minimum(x=left, y=right, name='small')
        spread = mb.sub(x=big, y=small, name='spread')
        positive = mb.exp(x=mb.tanh(x=small, name='squash'), name='positive')
        ratio = mb.real_div(x=spread, y=positive, name='ratio')
        root = mb.sqrt(x=positive, name='root')
        inverse = mb.rsqrt(x=positive, name='inverse')
        logged = mb.log(x=mb.add(x=spread, y=1.0, name='shifted'), name='logged')
        power = mb.pow(x=positive, y=1.5, name='power')
        smooth = mb.gelu(x=mb.sub(x=ratio, y=root, name='difference'), mode='TANH_APPROXIMATION', name='smooth')
        mixed = mb.concat(values=[mb.mul(x=smooth, y=inverse, name='product'), mb.add(x=logged, y=power, name='sum')],
                          axis=-1, name='mixed')
        sliced = mb.slice_by_index(x=y, begin=[0, 1, 0], end=[1, 6, 8], stride=[1, 2, 1], name='sliced')  # [1, 3, 8]
        wide = mb.expand_dims(x=sliced, axes=[0], name='wide')
        narrow = mb.squeeze(x=wide, axes=[0], name='narrow')
        total = mb.reduce_sum(x=narrow, axes=[1], keep_dims=False, name='total')
        peak = mb.reduce_max(x=y, axes=[1], keep_dims=False, name='peak')
        sums = mb.add(x=total, y=peak, name='sums')
        return y, mixed, sliced, sums
    return prog


def transformer_reference(x, w, r):
    def linear(v, weight, bias=None):
        return r.q(v @ w[weight].T + (w[bias] if bias else 0))

    def heads(v):
        return r.q(r.q(v.reshape(1, 6, 2, 4)).transpose(0, 2, 1, 3))
    h = r.q(normalize(x, (-1,), w['ln1g'], w['ln1b'], r.k(1e-5)))
    q, k, v = heads(linear(h, 'wq', 'bq')), heads(linear(h, 'wk')), heads(linear(h, 'wv', 'bv'))
    s = r.q(q @ k.transpose(0, 1, 3, 2))
    a = r.q(softmax(r.q(s * 0.5), -1))
    o = r.q(r.q(r.q(a @ v).transpose(0, 2, 1, 3)).reshape(1, 6, 8))
    x1 = r.q(x + linear(o, 'wo', 'bo'))
    h = r.q(normalize(x1, (-1,), w['ln2g'], w['ln2b'], r.k(1e-5)))
    h = linear(h, 'w1', 'b1')
    h = r.q(0.5 * h * (1 + erf(h / math.sqrt(2))))
    y = r.q(x1 + linear(h, 'w2', 'b2'))

    left, right = y[..., :4], y[..., 4:]
    big, small = np.maximum(left, right), np.minimum(left, right)
    spread = r.q(big - small)
    positive = r.q(np.exp(r.q(np.tanh(small))))
    ratio = r.q(spread / positive)
    root = r.q(np.sqrt(positive))
    inverse = r.q(1 / np.sqrt(positive))
    logged = r.q(np.log(r.q(spread + 1)))
    power = r.q(positive ** 1.5)
    d = r.q(ratio - root)
    smooth = r.q(0.5 * d * (1 + np.tanh(math.sqrt(2 / math.pi) * (d + 0.044715 * d ** 3))))
    mixed = np.concatenate([r.q(smooth * inverse), r.q(logged + power)], axis=-1)
    sliced = y[:, 1:6:2, :]
    sums = r.q(r.q(sliced.sum(axis=1)) + y.max(axis=1))
    return {'y': y, 'mixed': mixed, 'sliced': sliced, 'sums': sums}


# ---- writing ----

def as_float32(weights):
    return {k: v.astype(np.float32) for k, v in weights.items()}


def rounded_to_fp16(weights):
    return {k: v.astype(np.float16).astype(np.float64) for k, v in weights.items()}


def save_package(prog, path, precision):
    # Without this pass coremltools folds batch_norm into the convolution before it: kept, so the op is tested.
    pipeline = ct.PassPipeline.DEFAULT
    pipeline.remove_passes({'common::fuse_conv_batchnorm'})
    model = ct.convert(prog, convert_to='mlprogram', compute_precision=precision, minimum_deployment_target=TARGET,
                       pass_pipeline=pipeline)
    if os.path.exists(path):
        shutil.rmtree(path)
    model.save(path)


def write(name, program, reference, weights, x):
    w32 = as_float32(weights)
    np.save(os.path.join(ROOT, f'{name}-input.npy'), x.astype(np.float32))
    save_package(program(w32), os.path.join(ROOT, f'{name}.mlpackage'), ct.precision.FLOAT32)
    save_package(program(w32), os.path.join(ROOT, f'{name}-fp16.mlpackage'), ct.precision.FLOAT16)
    x64 = x.astype(np.float32).astype(np.float64)
    exact = reference(x64, {k: v.astype(np.float64) for k, v in w32.items()}, Ref(False, False))
    fp16_weights = reference(x64, rounded_to_fp16(w32), Ref(False, True))
    fp16 = reference(x64.astype(np.float16).astype(np.float64), rounded_to_fp16(w32), Ref(True, True))
    for output in exact:
        # float32 files keep the float64 results within 6e-8 (relative), far below every
        # tolerance; the fp16 references are fp16 values already.
        np.save(os.path.join(ROOT, f'{name}-{output}.npy'), np.ascontiguousarray(exact[output], dtype=np.float32))
        np.save(os.path.join(ROOT, f'{name}-{output}-fp16w.npy'), np.ascontiguousarray(fp16_weights[output], dtype=np.float32))
        np.save(os.path.join(ROOT, f'{name}-{output}-fp16.npy'), np.ascontiguousarray(fp16[output], dtype=np.float16))


def write_single_file_program(name='Scaled', target=TARGET):
    """An ML Program whose constants are all immediate values, saved as one .mlmodel."""
    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 4))], opset_version=target)
    def prog(x):
        y = mb.add(x=mb.mul(x=x, y=np.array([2, -1, 0.5, 3], dtype=np.float32), name='scaled'), y=1.0, name='shifted')
        return mb.clip(x=y, alpha=-1.0, beta=2.5, name='y')
    model = ct.convert(prog, convert_to='mlprogram', compute_precision=ct.precision.FLOAT32,
                       minimum_deployment_target=target)
    with open(os.path.join(ROOT, f'{name}.mlmodel'), 'wb') as f:
        f.write(model.get_spec().SerializeToString())
    x = np.array([[-2, 0.25, 1, 0.5]], dtype=np.float32)
    np.save(os.path.join(ROOT, f'{name}-input.npy'), x)
    np.save(os.path.join(ROOT, f'{name}-y.npy'),
            np.clip(x.astype(np.float64) * np.array([2, -1, 0.5, 3]) + 1, -1, 2.5))


def write_unsupported():
    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 4))], opset_version=TARGET)
    def prog(x):
        return mb.cumsum(x=mb.mul(x=x, y=np.arange(4, dtype=np.float32), name='scaled'), axis=1, name='y')
    save_package(prog, os.path.join(ROOT, 'Unsupported.mlpackage'), ct.precision.FLOAT32)


def write_torch_program():
    """A small PyTorch network, traced and converted as coremltools' users do."""
    import torch
    torch.manual_seed(26)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.bn = torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8)
            self.c2 = torch.nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2)
            self.norm = torch.nn.InstanceNorm2d(8, affine=True)
            self.up = torch.nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1)
            self.fc, self.ln = torch.nn.Linear(4, 5), torch.nn.LayerNorm(5)

        def forward(self, x):
            h = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.c1(x))), 2)
            h = torch.nn.functional.silu(self.norm(self.c2(h)))
            h = torch.nn.functional.interpolate(h, scale_factor=2, mode='nearest')
            h = torch.sigmoid(self.up(torch.nn.functional.pad(h, (1, 1, 1, 1), mode='reflect')))
            y = torch.nn.functional.gelu(self.ln(self.fc(h.mean(dim=(2, 3)))))
            return torch.softmax(y, dim=-1), h

    model = Net().eval()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-0.2, 0.2)
        model.bn.running_var.uniform_(0.5, 1.5)
        for p in [model.norm.weight, model.ln.weight]:
            p.uniform_(0.5, 1.5)
    x = torch.rand(1, 3, 16, 16)
    traced = torch.jit.trace(model, x)
    for precision, name in [(ct.precision.FLOAT32, 'TorchNet'), (ct.precision.FLOAT16, 'TorchNet-fp16')]:
        converted = ct.convert(traced, convert_to='mlprogram', inputs=[ct.TensorType(name='x', shape=x.shape)],
                               outputs=[ct.TensorType(name='probs'), ct.TensorType(name='image')],
                               compute_precision=precision, minimum_deployment_target=TARGET)
        path = os.path.join(ROOT, f'{name}.mlpackage')
        if os.path.exists(path):
            shutil.rmtree(path)
        converted.save(path)
    np.save(os.path.join(ROOT, 'TorchNet-input.npy'), x.numpy())
    # One reference, PyTorch's in float64: the fp16 package's weights are not PyTorch's rounded
    # (coremltools folds the batchnorm into the convolution before rounding), so its tests
    # allow what the rounding moves.
    with torch.no_grad():
        probs, image = model.double()(x.double())
    np.save(os.path.join(ROOT, 'TorchNet-probs.npy'), probs.numpy().astype(np.float32))
    np.save(os.path.join(ROOT, 'TorchNet-image.npy'), image.numpy().astype(np.float32))


def main():
    os.makedirs(ROOT, exist_ok=True)
    rng = np.random.default_rng(26)
    write('SmallCNN', cnn_program, cnn_reference, cnn_weights(rng), rng.uniform(-1, 1, (1, 3, 16, 16)))
    write('StyleNet', style_program, style_reference, style_weights(rng), rng.uniform(0, 1, (1, 3, 16, 16)))
    write('TinyTransformer', transformer_program, transformer_reference, transformer_weights(rng),
          rng.normal(0, 1, (1, 6, 8)))
    write('Resized', resize_program, resize_reference, {}, rng.uniform(-2, 2, (1, 2, 5, 7)))
    write_single_file_program()
    write_single_file_program('ScaledIOS18', ct.target.iOS18)
    write_unsupported()
    write_torch_program()


if __name__ == '__main__':
    main()
