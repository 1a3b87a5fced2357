"""Core ML NeuralNetwork fixtures for LayerKit's `.mlmodel` reader.

Writes Tests/LayerKitTests/Fixtures/coreml/:

    NeuralMcNeuralNet.mlmodel   the Core ML custom-layer article's kind of model: two
                                convolutions, each followed by a custom layer (className
                                "Swish", parameter beta), max pooling, a flatten, an
                                innerProduct and a softmax
    PlainNet.mlmodel            built-in layers only: convolution (stride 2, same
                                padding), batchnorm, ReLU, average pooling (same, padding
                                excluded), a grouped and dilated convolution, leakyReLU,
                                sigmoid, tanh, linear, add, multiply, concat, max and
                                global average pooling, flatten, innerProduct, softmax
    ImageClassifier.mlmodel     a neuralNetworkClassifier (labels cat, dog, owl, fox, elk) on a
                                7x7 RGB image with a scaler: PReLU, instance normalization,
                                ELU, softsign, softplus, thresholdedReLU, sigmoidHard,
                                scaledTanh, add and multiply of one input with alpha, average
                                pooling counting explicit padding, reshape, a CHANNEL_LAST
                                flatten, innerProduct, softmax
    ReshapeND.mlmodel           an N-D network (exact array mapping): reshapeStatic [2, 6] to
                                [3, 4], sigmoid
    NNRegressor.mlmodel         a neuralNetworkRegressor: innerProduct, tanh, innerProduct on [4]
    RecurrentNet.mlmodel        the four recurrent layers on one sequence x (the batch axis N is
                                Core ML's sequence axis: 5 steps of 3 values), every output of
                                each an output: simpleRecurrent (scaledTanh, initial state h0),
                                gru (sigmoidHard and tanh, reverseInput, the whole sequence),
                                uniDirectionalLSTM (peepholes, forgetBias, cell clip 0.25, initial
                                h0 and c0, the last step), biDirectionalLSTM (coupled input and
                                forget gates, the whole sequence); `recurrent` writes only the
                                recurrent fixtures (`parametric_softplus` ParametricSoftplus)
    RecurrentND.mlmodel         an exact-mapping gru on Core ML's rank-5 blob [4, 2, 3, 1, 1]: a
                                batch of two sequences, outputs [4, 2, 5, 1, 1] and [1, 2, 5, 1, 1]
    ParametricSoftplus.mlmodel  parametricSoftplus per channel of [3, 2, 2], then with one alpha and
                                beta (outputs y, z; -fp16 references with the input and each
                                activation's output rounded to fp16, as the GPU stores them)
    RecurrentRefused.mlmodel    a simpleRecurrent of leakyReLU, which Core ML's recurrent layers
                                do not take, for the refusal naming it
    Unsupported.mlmodel         a layer LayerKit does not translate (unary sqrt), for the
                                refusal naming it
    <name>-input.npy            the input, float32, [1, C, H, W] (the image's pixels 0 to 255)
    <name>-<output>.npy         numpy's float64 result from the same weights, [1, 10] ([1, 5]), for
                                each model output: the softmax, and the logits before it
    <name>-<output>-fp16.npy    the same with the input and every value LayerKit's GPU keeps
                                between kernels rounded to float16 (a kernel computes in
                                float32 and stores fp16; a convolution and the batchnorm and
                                activation after it are one kernel): the GPU's reference,
                                which the float64 one is not once errors of 5e-4 per value add up

coremltools builds the files (NeuralNetworkBuilder) but cannot run them on Linux, so
the references are computed here, from the weights given to the builder, by the
definitions of NeuralNetwork.proto: never by LayerKit. Weights come from a seeded
generator, so reruns write the same files. Run with a Python that has coremltools and
numpy (a venv: pip install coremltools numpy).
"""
import math
import os
import sys

import numpy as np
from coremltools.models import datatypes
from coremltools.models.neural_network import NeuralNetworkBuilder
from coremltools.models.utils import save_spec

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'Tests', 'LayerKitTests', 'Fixtures',
                    'coreml')


# ---- numpy references, in float64, for one item [C, H, W] ----

def same_pads(size, kernel, stride, dilation):
    """Core ML's same padding, BOTTOM_RIGHT_HEAVY: (before, after)."""
    out = -(-size // stride)
    total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def conv(x, w_oihw, b, stride, dilation, groups, same):
    c, h, wd = x.shape
    o, kc, kh, kw = w_oihw.shape
    (top, bottom), (left, right) = ((same_pads(h, kh, stride, dilation), same_pads(wd, kw, stride, dilation))
                                    if same else ((0, 0), (0, 0)))
    xp = np.pad(x, ((0, 0), (top, bottom), (left, right)))
    oh = (xp.shape[1] - (kh - 1) * dilation - 1) // stride + 1
    ow = (xp.shape[2] - (kw - 1) * dilation - 1) // stride + 1
    y = np.zeros((o, oh, ow))
    per_group = o // groups
    for oc in range(o):
        g = oc // per_group
        for i in range(oh):
            for j in range(ow):
                window = xp[g * kc:(g + 1) * kc, i * stride:i * stride + (kh - 1) * dilation + 1:dilation,
                            j * stride:j * stride + (kw - 1) * dilation + 1:dilation]
                y[oc, i, j] = np.sum(window * w_oihw[oc]) + b[oc]
    return y


def pool(x, kernel, stride, kind, same):
    c, h, w = x.shape
    (top, bottom), (left, right) = ((same_pads(h, kernel, stride, 1), same_pads(w, kernel, stride, 1))
                                    if same else ((0, 0), (0, 0)))
    valid = np.pad(np.ones((h, w)), ((top, bottom), (left, right)))
    xp = np.pad(x, ((0, 0), (top, bottom), (left, right)), constant_values=-np.inf if kind == 'MAX' else 0)
    oh, ow = (valid.shape[0] - kernel) // stride + 1, (valid.shape[1] - kernel) // stride + 1
    y = np.zeros((c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            window = xp[:, i * stride:i * stride + kernel, j * stride:j * stride + kernel]
            if kind == 'MAX':
                y[:, i, j] = window.max(axis=(1, 2))
            else:  # average over the window's pixels inside the image (avgPoolExcludePadding)
                y[:, i, j] = window.sum(axis=(1, 2)) / valid[i * stride:i * stride + kernel,
                                                              j * stride:j * stride + kernel].sum()
    return y


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def fp16_stored(x):
    """A layer's output as a GPU stores it (fp16, rounded to nearest), computed on in float64."""
    return np.asarray(x).astype(np.float16).astype(np.float64)


# ---- the models ----

def seeded(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def hwio(w_oihw):
    """The builder takes convolution weights as (height, width, kernel_channels, output_channels)."""
    return w_oihw.transpose(2, 3, 1, 0)


def add_swish(builder, name, input_name, output_name, beta):
    builder.add_custom(name, [input_name], [output_name])
    layer = builder.spec.neuralNetwork.layers[-1]
    layer.custom.className = 'Swish'
    layer.custom.description = 'x * sigmoid(beta * x), the article\'s Swish'
    layer.custom.parameters['beta'].doubleValue = beta


def neural_mc_neural_net(rng):
    """conv 3->6 3x3 same, Swish, max pool 2, conv 6->8 3x3 valid, Swish, flatten, innerProduct 32->10, softmax."""
    w1, b1 = seeded(rng, 6, 3, 3, 3, scale=0.4), seeded(rng, 6, scale=0.1)
    w2, b2 = seeded(rng, 8, 6, 3, 3, scale=0.3), seeded(rng, 8, scale=0.1)
    wf, bf = seeded(rng, 10, 32, scale=0.1), seeded(rng, 10, scale=0.1)
    beta = 0.75
    builder = NeuralNetworkBuilder([('image', datatypes.Array(3, 8, 8))],
                                   [('output', datatypes.Array(10)), ('logits', datatypes.Array(10))])
    builder.add_convolution('conv1', 3, 6, 3, 3, 1, 1, 'same', 1, hwio(w1), b1, True, input_name='image',
                            output_name='conv1')
    add_swish(builder, 'swish1', 'conv1', 'swish1', beta)
    builder.add_pooling('pool1', 2, 2, 2, 2, 'MAX', 'VALID', 'swish1', 'pool1')
    builder.add_convolution('conv2', 6, 8, 3, 3, 1, 1, 'valid', 1, hwio(w2), b2, True, input_name='pool1',
                            output_name='conv2')
    add_swish(builder, 'swish2', 'conv2', 'swish2', beta)
    builder.add_flatten('flatten', 0, 'swish2', 'flatten')
    builder.add_inner_product('dense', wf, bf, 32, 10, True, 'flatten', 'logits')
    builder.add_softmax('softmax', 'logits', 'output')

    def reference(x, store):
        swish = lambda v: v * sigmoid(beta * v)
        y = store(swish(store(conv(store(x), w1, b1, 1, 1, 1, True))))
        y = store(pool(y, 2, 2, 'MAX', False))
        y = store(swish(store(conv(y, w2, b2, 1, 1, 1, False))))
        logits = store(wf.astype(np.float64) @ y.reshape(-1) + bf)
        return {'output': store(softmax(logits)), 'logits': logits}

    return builder, (3, 8, 8), reference, (-2, 2)


def plain_net(rng):
    """Every built-in layer the reader translates, in one small graph."""
    w1, b1 = seeded(rng, 6, 4, 3, 3, scale=0.4), seeded(rng, 6, scale=0.1)
    gamma, beta = (1 + seeded(rng, 6, scale=0.2)), seeded(rng, 6, scale=0.1)
    mean, var = seeded(rng, 6, scale=0.2), (0.5 + np.abs(seeded(rng, 6)))
    w2, b2 = seeded(rng, 6, 3, 3, 3, scale=0.4), seeded(rng, 6, scale=0.1)  # 2 groups of 3 channels, dilation 2
    wf, bf = seeded(rng, 10, 12, scale=0.3), seeded(rng, 10, scale=0.1)
    builder = NeuralNetworkBuilder([('data', datatypes.Array(4, 8, 8))],
                                   [('probabilities', datatypes.Array(10)), ('logits', datatypes.Array(10))])
    # Stride 2 on 8 pixels: same padding of 0 before, 1 after (BOTTOM_RIGHT_HEAVY).
    builder.add_convolution('conv', 4, 6, 3, 3, 2, 2, 'same', 1, hwio(w1), b1, True, input_name='data',
                            output_name='conv')
    builder.add_batchnorm('bn', 6, gamma, beta, mean, var, 'conv', 'bn', epsilon=1e-3)
    builder.add_activation('relu', 'RELU', 'bn', 'relu')
    builder.add_pooling('avg', 3, 3, 1, 1, 'AVERAGE', 'SAME', 'relu', 'avg', exclude_pad_area=True)
    builder.add_convolution('dilated', 3, 6, 3, 3, 1, 1, 'same', 2, hwio(w2), b2, True, input_name='avg',
                            output_name='dilated', dilation_factors=[2, 2])
    builder.add_activation('leaky', 'LEAKYRELU', 'dilated', 'leaky', params=[0.2])
    builder.add_activation('sigmoid', 'SIGMOID', 'leaky', 'sigmoid')
    builder.add_activation('tanh', 'TANH', 'leaky', 'tanh')
    builder.add_activation('linear', 'LINEAR', 'tanh', 'linear', params=[1.5, -0.25])
    builder.add_elementwise('add', ['sigmoid', 'linear'], 'sum', 'ADD')
    builder.add_elementwise('multiply', ['sum', 'leaky'], 'product', 'MULTIPLY')
    builder.add_elementwise('concat', ['product', 'relu'], 'concat', 'CONCAT')
    builder.add_pooling('max', 2, 2, 2, 2, 'MAX', 'VALID', 'concat', 'max')
    builder.add_pooling('global', 1, 1, 1, 1, 'AVERAGE', 'VALID', 'max', 'global', is_global=True)
    builder.add_flatten('flatten', 0, 'global', 'flatten')
    builder.add_inner_product('dense', wf, bf, 12, 10, True, 'flatten', 'logits')
    builder.add_softmax('softmax', 'logits', 'probabilities')

    def reference(x, store):
        # LayerKit runs conv, batchnorm and ReLU as one kernel, and conv and leakyReLU: one store each.
        y = conv(store(x), w1, b1, 2, 1, 1, True)
        y = ((y - mean[:, None, None]) / np.sqrt(var[:, None, None].astype(np.float64) + 1e-3)
             * gamma[:, None, None] + beta[:, None, None])
        relu = store(np.maximum(y, 0))
        y = store(pool(relu, 3, 1, 'AVERAGE', True))
        leaky = conv(y, w2, b2, 1, 2, 2, True)
        leaky = store(np.where(leaky >= 0, leaky, 0.2 * leaky))
        # linear is a Mul and an Add: two stores.
        total = store(store(sigmoid(leaky)) + store(store(1.5 * store(np.tanh(leaky))) - 0.25))
        y = np.concatenate([store(total * leaky), relu])
        y = store(pool(y, 2, 2, 'MAX', False))
        y = store(y.mean(axis=(1, 2)))
        logits = store(wf.astype(np.float64) @ y + bf)
        return {'probabilities': store(softmax(logits)), 'logits': logits}

    return builder, (4, 8, 8), reference, (-2, 2)


def image_classifier(rng):
    """A classifier on an RGB image with a scaler: the remaining activations, explicit padding,
    instance normalization, add and multiply with alpha, reshape and a CHANNEL_LAST flatten."""
    w1, b1 = seeded(rng, 4, 3, 3, 3, scale=0.5), seeded(rng, 4, scale=0.1)
    slopes = np.abs(seeded(rng, 4, scale=0.3))
    gamma, beta = 1 + seeded(rng, 4, scale=0.2), seeded(rng, 4, scale=0.1)
    wf, bf = seeded(rng, 5, 128, scale=0.1), seeded(rng, 5, scale=0.1)
    scale, biases = 1 / 255, [-0.5, -0.4, -0.3]  # red, green, blue
    builder = NeuralNetworkBuilder([('image', datatypes.Array(3, 7, 7))], [('probs', datatypes.Array(5))],
                                   mode='classifier')
    image = builder.spec.description.input[0].type.imageType
    image.width, image.height, image.colorSpace = 7, 7, 20  # RGB
    scaler = builder.nn_spec.preprocessing.add()
    scaler.featureName = 'image'
    scaler.scaler.channelScale = scale
    scaler.scaler.redBias, scaler.scaler.greenBias, scaler.scaler.blueBias = biases
    builder.add_convolution('conv', 3, 4, 3, 3, 1, 1, 'valid', 1, hwio(w1), b1, True, input_name='image',
                            output_name='conv', padding_top=1, padding_bottom=0, padding_left=2, padding_right=1)
    builder.add_activation('prelu', 'PRELU', 'conv', 'prelu', params=slopes)
    builder.add_batchnorm('instance', 4, gamma, beta, None, None, 'prelu', 'instance', compute_mean_var=True,
                          instance_normalization=True, epsilon=1e-5)
    builder.add_activation('elu', 'ELU', 'instance', 'elu', params=0.7)
    builder.add_activation('softsign', 'SOFTSIGN', 'elu', 'softsign')
    builder.add_activation('softplus', 'SOFTPLUS', 'elu', 'softplus')
    builder.add_activation('thresholded', 'THRESHOLDEDRELU', 'elu', 'thresholded', params=0.1)
    builder.add_activation('hard', 'SIGMOID_HARD', 'elu', 'hard', params=[0.3, 0.4])
    builder.add_activation('scaled', 'SCALED_TANH', 'elu', 'scaled', params=[1.2, 0.6])
    builder.add_elementwise('sum', ['softsign', 'softplus', 'thresholded'], 'sum', 'ADD')
    builder.add_elementwise('product', ['hard', 'scaled'], 'product', 'MULTIPLY')
    builder.add_elementwise('concat', ['sum', 'product'], 'concat', 'CONCAT')
    builder.add_elementwise('shift', ['concat'], 'shift', 'ADD', alpha=0.5)
    builder.add_elementwise('double', ['shift'], 'double', 'MULTIPLY', alpha=2.0)
    builder.add_pooling('avg', 2, 2, 2, 2, 'AVERAGE', 'VALID', 'double', 'avg', exclude_pad_area=False,
                        padding_top=1, padding_bottom=1)
    builder.add_reshape('reshape', 'avg', 'reshape', (16, 2, 4), 0)
    builder.add_flatten('flatten', 1, 'reshape', 'flatten')
    builder.add_inner_product('dense', wf, bf, 128, 5, True, 'flatten', 'logits')
    builder.add_softmax('softmax', 'logits', 'probs')
    builder.set_class_labels(['cat', 'dog', 'owl', 'fox', 'elk'], prediction_blob='probs')

    def reference(x, store):
        y = store(store(x) * scale + np.array(biases)[:, None, None])
        y = np.pad(y, ((0, 0), (1, 0), (2, 1)))
        y = store(conv(y, w1, b1, 1, 1, 1, False))
        y = store(np.where(y >= 0, y, slopes[:, None, None] * y))
        mean, var = y.mean(axis=(1, 2), keepdims=True), y.var(axis=(1, 2), keepdims=True)
        y = store((y - mean) / np.sqrt(var + 1e-5) * gamma[:, None, None] + beta[:, None, None])
        elu = store(np.where(y > 0, y, 0.7 * (np.exp(y) - 1)))
        total = store(store(store(elu / (1 + np.abs(elu))) + store(np.log1p(np.exp(elu))))
                      + store(np.where(elu > 0.1, elu, 0)))
        product = store(store(np.clip(0.3 * elu + 0.4, 0, 1)) * store(1.2 * np.tanh(0.6 * elu)))
        y = store(store(np.concatenate([total, product]) + 0.5) * 2)
        y = np.pad(y, ((0, 0), (1, 1), (0, 0)))  # padding counted in the average
        y = store(y.reshape(8, 4, 2, 4, 2).mean(axis=(2, 4)))
        y = y.reshape(16, 2, 4).transpose(1, 2, 0).reshape(-1)  # CHANNEL_LAST: H, W, C
        logits = store(wf.astype(np.float64) @ y + bf)
        return {'probs': store(softmax(logits))}

    return builder, (3, 7, 7), reference, (0, 255)


def reshape_nd(rng):
    """An N-D network (EXACT_ARRAY_MAPPING: the input's shape is taken as declared): reshapeStatic
    to a whole new shape, then a sigmoid."""
    builder = NeuralNetworkBuilder([('x', datatypes.Array(2, 6))], [('y', datatypes.Array(3, 4))],
                                   disable_rank5_shape_mapping=True)
    builder.add_reshape_static('reshape', 'x', 'reshaped', (3, 4))
    builder.add_activation('sigmoid', 'SIGMOID', 'reshaped', 'y')

    def reference(x, store):
        return {'y': store(sigmoid(store(x).reshape(3, 4)))}

    return builder, (2, 6), reference, (-3, 3)



def nn_regressor(rng):
    """A neuralNetworkRegressor (the model type coremltools' builder writes in mode 'regressor'):
    innerProduct, tanh, innerProduct."""
    w1, b1 = seeded(rng, 6, 4), seeded(rng, 6, scale=0.1)
    w2, b2 = seeded(rng, 2, 6), seeded(rng, 2, scale=0.1)
    builder = NeuralNetworkBuilder([('x', datatypes.Array(4))], [('y', datatypes.Array(2))], mode='regressor')
    builder.add_inner_product('hidden', w1, b1, 4, 6, True, 'x', 'hidden')
    builder.add_activation('tanh', 'TANH', 'hidden', 'activated')
    builder.add_inner_product('y', w2, b2, 6, 2, True, 'activated', 'y')

    def reference(x, store):
        activated = store(np.tanh(store(w1.astype(np.float64) @ x + b1)))
        return {'y': store(w2.astype(np.float64) @ activated + b2)}

    return builder, (4,), reference, (-2, 2)


# ---- the layers of the second reader: one small model per family, every layer an output ----

def deconv(x, w_cohw, b, stride, groups, crop=(0, 0, 0, 0), extra=(0, 0)):
    """Core ML's deconvolution (weights [C, O / groups, kH, kW]): every input cell spreads its kernel over
    the full (H - 1) * stride + kH rows (and columns), `extra` zero rows and columns are added at the
    end, then `crop` (top, bottom, left, right) is cut away; the bias is added everywhere."""
    c, h, w = x.shape
    _, og, kh, kw = w_cohw.shape
    per_group = c // groups
    full_h, full_w = (h - 1) * stride + kh + extra[0], (w - 1) * stride + kw + extra[1]
    y = np.zeros((og * groups, full_h, full_w))
    for ic in range(c):
        g = ic // per_group
        for i in range(h):
            for j in range(w):
                y[g * og:(g + 1) * og, i * stride:i * stride + kh, j * stride:j * stride + kw] += x[ic, i, j] * w_cohw[ic]
    top, bottom, left, right = crop
    return y[:, top:full_h - bottom, left:full_w - right] + b[:, None, None]


def deconv_same(x, w, b, stride, groups, top_left_heavy=False):
    """Same padding: H * stride rows; the kH - stride extra rows cut, the odd one at the end
    (BOTTOM_RIGHT_HEAVY) or the start (TOP_LEFT_HEAVY); where kH < stride, zero rows added at the end."""
    k = w.shape[2]
    total = k - stride
    if total < 0:
        return deconv(x, w, b, stride, groups, extra=(-total, -total))
    first = total - total // 2 if top_left_heavy else total // 2
    return deconv(x, w, b, stride, groups, crop=(first, total - first, first, total - first))


def deconv_to(x, w, b, stride, groups, out_h, out_w):
    """An outputShape: the full output's extra rows cut, the odd one at the end, as BOTTOM_RIGHT_HEAVY."""
    k = w.shape[2]
    full_h, full_w = (x.shape[1] - 1) * stride + k, (x.shape[2] - 1) * stride + k
    th, tw = full_h - out_h, full_w - out_w
    return deconv(x, w, b, stride, groups, crop=(th // 2, th - th // 2, tw // 2, tw - tw // 2))


def grid(n_in, n_out, mode):
    """The input coordinates an upsample samples (UpsampleLayerParams.LinearUpsampleMode), clipped to [0, n_in - 1]."""
    i = np.arange(n_out, dtype=np.float64)
    if mode == 'DEFAULT':
        g = i * (n_in - n_in / n_out) / (n_out - 1)
    elif mode == 'ALIGN_CORNERS_TRUE':
        g = i * (n_in - 1) / (n_out - 1)
    else:  # ALIGN_CORNERS_FALSE
        spacing = n_in / n_out
        g = i * spacing + 0.5 * spacing - 0.5
    return np.clip(g, 0, n_in - 1)


def bilinear(x, out_h, out_w, mode):
    def along(v, axis, n_out):
        n_in = v.shape[axis]
        g = grid(n_in, n_out, mode)
        lo = np.floor(g).astype(int)
        hi = np.minimum(lo + 1, n_in - 1)
        t = g - lo
        a, b = np.take(v, lo, axis=axis), np.take(v, hi, axis=axis)
        shape = [1] * v.ndim
        shape[axis] = n_out
        return a + (b - a) * t.reshape(shape)
    return along(along(x, 1, out_h), 2, out_w)


def deconvolution_net(rng):
    """Deconvolutions: valid with border amounts cropped, same in both asymmetry modes, grouped, an
    outputShape, and a kernel smaller than its stride."""
    builder = NeuralNetworkBuilder([('x', datatypes.Array(4, 3, 3))], [(n, None) for n in
                                   ['valid', 'same', 'topLeft', 'grouped', 'shaped', 'small']])
    weights = {}

    def add(name, k, out, stride, groups, mode, **kwargs):
        w = seeded(rng, 4, out // groups, k, k, scale=0.4)  # [C, O / groups, kH, kW]
        b = seeded(rng, out, scale=0.1)
        weights[name] = (w, b)
        builder.add_convolution(name, 4, out, k, k, stride, stride, mode, groups, w.transpose(2, 3, 0, 1), b, True,
                                is_deconv=True, input_name='x', output_name=name, **kwargs)

    add('valid', 3, 3, 2, 1, 'valid', padding_top=1, padding_bottom=2, padding_left=0, padding_right=1)
    add('same', 3, 3, 2, 1, 'same')
    add('topLeft', 4, 2, 2, 1, 'same', same_padding_asymmetry_mode='TOP_LEFT_HEAVY')
    add('grouped', 3, 4, 2, 2, 'same')
    add('shaped', 3, 2, 2, 1, 'valid', output_shape=(6, 5))
    add('small', 2, 2, 3, 1, 'same')

    def reference(x, store):
        x = store(x)
        return {
            'valid': store(deconv(x, *weights['valid'], 2, 1, crop=(1, 2, 0, 1))),
            'same': store(deconv_same(x, *weights['same'], 2, 1)),
            'topLeft': store(deconv_same(x, *weights['topLeft'], 2, 1, top_left_heavy=True)),
            'grouped': store(deconv_same(x, *weights['grouped'], 2, 2)),
            'shaped': store(deconv_to(x, *weights['shaped'], 2, 1, 6, 5)),
            'small': store(deconv_same(x, *weights['small'], 3, 1)),
        }

    return builder, (4, 3, 3), reference, (-2, 2)


def layout_net(rng):
    """Upsampling (nearest, and bilinear in its three grids, whole and fractional factors), padding
    (constant, reflection, replication), crop (border amounts, and to a second input's size), slice,
    split, permute, reorganizeData (its three modes), flatten to 2-D is the N-D net's."""
    outputs = ['nearest', 'bilinear', 'corners', 'centers', 'cornersFractional', 'centersFractional', 'constant',
               'reflection', 'replication', 'cropped', 'croppedLike', 'sliced', 'half0', 'half1', 'permuted',
               'toDepth', 'toSpace', 'shuffled']
    builder = NeuralNetworkBuilder([('x', datatypes.Array(4, 4, 4))], [(n, None) for n in outputs])
    builder.add_upsample('nearest', 2, 3, 'x', 'nearest')
    builder.add_upsample('bilinear', 2, 2, 'x', 'bilinear', mode='BILINEAR')
    builder.add_upsample('corners', 2, 3, 'x', 'corners', mode='BILINEAR', linear_upsample_mode='ALIGN_CORNERS_TRUE')
    builder.add_upsample('centers', 2, 2, 'x', 'centers', mode='BILINEAR', linear_upsample_mode='ALIGN_CORNERS_FALSE')
    builder.add_upsample('cornersFractional', 1.5, 2.5, 'x', 'cornersFractional', mode='BILINEAR',
                         linear_upsample_mode='ALIGN_CORNERS_TRUE')
    builder.add_upsample('centersFractional', 1.5, 2.5, 'x', 'centersFractional', mode='BILINEAR',
                         linear_upsample_mode='ALIGN_CORNERS_FALSE')
    builder.add_padding('constant', left=1, right=2, top=0, bottom=1, value=0.75, input_name='x', output_name='constant')
    builder.add_padding('reflection', left=2, right=1, top=1, bottom=2, input_name='x', output_name='reflection',
                        padding_type='reflection')
    builder.add_padding('replication', left=1, right=0, top=2, bottom=1, input_name='x', output_name='replication',
                        padding_type='replication')
    builder.add_crop('cropped', left=1, right=0, top=1, bottom=2, offset=None, input_names=['x'],
                     output_name='cropped')
    builder.add_crop('croppedLike', left=0, right=0, top=0, bottom=0, offset=[1, 2], input_names=['x', 'cropped'],
                     output_name='croppedLike')
    builder.add_slice('sliced', 'x', 'sliced', axis='width', start_index=1, end_index=-1, stride=2)
    builder.add_split('split', 'x', ['half0', 'half1'])
    builder.add_permute('permuted', (0, 3, 1, 2), 'x', 'permuted')  # [Seq, C, H, W] -> [Seq, W, C, H]
    builder.add_reorganize_data('toDepth', 'x', 'toDepth', mode='SPACE_TO_DEPTH', block_size=2)
    builder.add_reorganize_data('toSpace', 'x', 'toSpace', mode='DEPTH_TO_SPACE', block_size=2)
    builder.add_reorganize_data('shuffled', 'x', 'shuffled', mode='PIXEL_SHUFFLE', block_size=2)

    def reference(x, store):
        x = store(x)
        c, h, w = x.shape
        cropped = x[:, 1:h - 2, 1:]
        # DEPTH_TO_SPACE: output channel c's block (i, j) comes from input channel (i * 2 + j) * C' + c (DCR);
        # PIXEL_SHUFFLE from c * 4 + i * 2 + j (CRD), as NeuralNetwork.proto's examples show.
        dcr = x.reshape(2, 2, c // 4, h, w).transpose(2, 3, 0, 4, 1).reshape(c // 4, h * 2, w * 2)
        crd = x.reshape(c // 4, 2, 2, h, w).transpose(0, 3, 1, 4, 2).reshape(c // 4, h * 2, w * 2)
        to_depth = x.reshape(c, h // 2, 2, w // 2, 2).transpose(2, 4, 0, 1, 3).reshape(c * 4, h // 2, w // 2)
        return {
            'nearest': store(x.repeat(2, axis=1).repeat(3, axis=2)),
            'bilinear': store(bilinear(x, 8, 8, 'DEFAULT')),
            'corners': store(bilinear(x, 8, 12, 'ALIGN_CORNERS_TRUE')),
            'centers': store(bilinear(x, 8, 8, 'ALIGN_CORNERS_FALSE')),
            'cornersFractional': store(bilinear(x, 6, 10, 'ALIGN_CORNERS_TRUE')),
            'centersFractional': store(bilinear(x, 6, 10, 'ALIGN_CORNERS_FALSE')),
            'constant': store(np.pad(x, ((0, 0), (0, 1), (1, 2)), constant_values=0.75)),
            'reflection': store(np.pad(x, ((0, 0), (1, 2), (2, 1)), mode='reflect')),
            'replication': store(np.pad(x, ((0, 0), (2, 1), (1, 0)), mode='edge')),
            'cropped': store(cropped),
            'croppedLike': store(x[:, 1:1 + cropped.shape[1], 2:2 + cropped.shape[2]]),
            'sliced': store(x[:, :, 1:-1:2]),
            'half0': store(x[:2]), 'half1': store(x[2:]),
            'permuted': store(x.transpose(2, 0, 1)),
            'toDepth': store(to_depth), 'toSpace': store(dcr), 'shuffled': store(crd),
        }

    return builder, (4, 4, 4), reference, (-2, 2)


def elementwise_net(rng):
    """unary (each function, with scale and shift), clip, reduce (each mode over several axes), bias and
    scale of each shape, loadConstant, average, max, min, LRN, l2normalize, MVN (both kinds), copy."""
    reduces = [('sum', 'CHW', 'SUM'), ('avg', 'HW', 'AVG'), ('prod', 'W', 'PROD'), ('logsum', 'C', 'LOGSUM'),
               ('sumsquare', 'H', 'SUMSQUARE'), ('l1', 'CHW', 'L1'), ('l2', 'HW', 'L2'), ('max', 'C', 'MAX'),
               ('min', 'W', 'MIN'), ('argmax', 'C', 'ARGMAX'), ('argmaxW', 'W', 'ARGMAX')]
    unaries = [('sqrt', dict(shift=0.5)), ('rsqrt', dict(epsilon=1e-3)), ('inverse', dict(scale=2.0, epsilon=1e-2)),
               ('power', dict(alpha=1.5)), ('exp', dict(scale=0.5, shift=-0.25)), ('log', dict(shift=0.1)),
               ('abs', dict(shift=-1.0)), ('threshold', dict(alpha=0.8, scale=1.5))]
    outputs = (['unary_' + n for n, _ in unaries] + ['clip'] + ['reduce_' + n for n, _, _ in reduces]
               + ['biasC', 'biasHW', 'scaleCHW', 'scaleOne', 'constantSum', 'average', 'maximum', 'minimum', 'lrn',
                  'l2', 'mvn', 'mvnMean', 'copy'])
    builder = NeuralNetworkBuilder([('x', datatypes.Array(3, 4, 4))], [(n, None) for n in outputs])
    for name, kwargs in unaries:
        builder.add_unary('unary_' + name, 'x', 'unary_' + name, mode=name, **kwargs)
    builder.add_clip('clip', 'x', 'clip', min_value=0.4, max_value=1.2)
    for name, axis, mode in reduces:
        builder.add_reduce('reduce_' + name, 'x', 'reduce_' + name, axis=axis, mode=mode, epsilon=1e-3)
    bias_c, bias_hw = seeded(rng, 3), seeded(rng, 1, 4, 4)
    scale_chw, scale_b = seeded(rng, 3, 4, 4), seeded(rng, 3)
    constant = seeded(rng, 3, 4, 4)
    builder.add_bias('biasC', bias_c, 'x', 'biasC', shape_bias=[3])
    builder.add_bias('biasHW', bias_hw, 'x', 'biasHW', shape_bias=[1, 4, 4])
    builder.add_scale('scaleCHW', scale_chw, scale_b, True, 'x', 'scaleCHW', shape_scale=[3, 4, 4], shape_bias=[3])
    builder.add_scale('scaleOne', np.array([1.75], dtype=np.float32), None, False, 'x', 'scaleOne', shape_scale=[1])
    builder.add_load_constant('constant', 'constant', constant, [3, 4, 4])
    builder.add_elementwise('constantSum', ['x', 'constant'], 'constantSum', 'ADD')
    builder.add_elementwise('average', ['x', 'clip', 'biasC'], 'average', 'AVE')
    builder.add_elementwise('maximum', ['x', 'biasC'], 'maximum', 'MAX')
    builder.add_elementwise('minimum', ['x', 'biasC', 'clip'], 'minimum', 'MIN')
    builder.add_lrn('lrn', 'x', 'lrn', alpha=0.3, beta=0.75, local_size=3, k=2.0)
    builder.add_l2_normalize('l2', 'x', 'l2', epsilon=1e-4)
    builder.add_mvn('mvn', 'x', 'mvn', across_channels=True, normalize_variance=True, epsilon=1e-4)
    builder.add_mvn('mvnMean', 'x', 'mvnMean', across_channels=False, normalize_variance=False)
    builder.add_copy('copy', 'x', 'copy')

    def reference(x, store):
        x = store(x)
        out = {}
        f = {'sqrt': lambda v, k: np.sqrt(v), 'rsqrt': lambda v, k: 1 / np.sqrt(v + k.get('epsilon', 1e-6)),
             'inverse': lambda v, k: 1 / (v + k.get('epsilon', 1e-6)), 'power': lambda v, k: v ** k['alpha'],
             'exp': lambda v, k: np.exp(v), 'log': lambda v, k: np.log(v), 'abs': lambda v, k: np.abs(v),
             'threshold': lambda v, k: np.maximum(k['alpha'], v)}
        for name, kwargs in unaries:
            v = kwargs.get('scale', 1.0) * x + kwargs.get('shift', 0.0)
            out['unary_' + name] = store(f[name](v, kwargs))
        clip = store(np.clip(x, 0.4, 1.2))
        out['clip'] = clip
        axes = {'CHW': (0, 1, 2), 'HW': (1, 2), 'C': (0,), 'H': (1,), 'W': (2,)}
        for name, axis, mode in reduces:
            a = axes[axis]
            r = {'SUM': lambda: x.sum(a, keepdims=True), 'AVG': lambda: x.mean(a, keepdims=True),
                 'PROD': lambda: x.prod(a, keepdims=True), 'LOGSUM': lambda: np.log(x + 1e-3).sum(a, keepdims=True),
                 'SUMSQUARE': lambda: (x ** 2).sum(a, keepdims=True), 'L1': lambda: np.abs(x).sum(a, keepdims=True),
                 'L2': lambda: np.sqrt((x ** 2).sum(a, keepdims=True)), 'MAX': lambda: x.max(a, keepdims=True),
                 'MIN': lambda: x.min(a, keepdims=True),
                 'ARGMAX': lambda: np.expand_dims(x.argmax(a[0]), a[0]).astype(np.float64)}[mode]()
            out['reduce_' + name] = store(r)
        bias_c_out = store(x + bias_c[:, None, None])
        out['biasC'] = bias_c_out
        out['biasHW'] = store(x + bias_hw)
        out['scaleCHW'] = store(store(x * scale_chw) + scale_b[:, None, None])
        out['scaleOne'] = store(x * 1.75)
        out['constantSum'] = store(x + store(constant))
        out['average'] = store((x + clip + bias_c_out) / 3)
        out['maximum'] = store(np.maximum(x, bias_c_out))
        out['minimum'] = store(np.minimum(np.minimum(x, bias_c_out), clip))
        squares = np.pad(x ** 2, ((1, 1), (0, 0), (0, 0)))
        window = squares[:-2] + squares[1:-1] + squares[2:]
        out['lrn'] = store(x / (2.0 + 0.3 / 3 * window) ** 0.75)
        out['l2'] = store(x / np.sqrt((x ** 2).sum() + 1e-4))
        out['mvn'] = store((x - x.mean()) / np.sqrt(x.var() + 1e-4))
        out['mvnMean'] = store(x - x.mean(axis=(1, 2), keepdims=True))
        out['copy'] = x
        return out

    return builder, (3, 4, 4), reference, (0.05, 2)


def embedding_net(rng):
    """An embedding of 6 words into 4 channels with a bias, then an innerProduct: 3 items in a batch."""
    w, b = seeded(rng, 4, 6), seeded(rng, 4, scale=0.1)
    wf = seeded(rng, 2, 4)
    builder = NeuralNetworkBuilder([('word', datatypes.Array(1))], [('embedded', None), ('score', None)])
    builder.add_embedding('embedded', w, b, 6, 4, True, 'word', 'embedded')
    builder.add_inner_product('score', wf, None, 4, 2, False, 'embedded', 'score')

    def reference(words, store):
        embedded = store(w.astype(np.float64)[:, words[:, 0].astype(int)].T + b)
        return {'embedded': embedded, 'score': store(embedded @ wf.T)}

    return builder, None, reference, None


def nd_net(rng):
    """N-D layers (exact mapping) a converter emits for common CNNs: transpose, softmaxND, concatND, the
    broadcasting arithmetic, flattenTo2D, the N-D element-wise functions and GELU's three modes; and
    layers of the rank-5 era on an N-D blob (PReLU, concat, softmax: their channels are axis -3)."""
    unaries = ['ceil', 'floor', 'sign', 'exp2', 'sin', 'cos', 'tan', 'atan', 'sinh', 'cosh', 'tanh', 'asinh', 'erf']
    outputs = (['transposed', 'softmax', 'concat', 'added', 'multiplied', 'subtracted', 'divided', 'maxed', 'mined',
                'powered', 'flat', 'flatLast', 'clamped', 'geluExact', 'geluTanh', 'geluSigmoid', 'relu', 'asin', 'acos',
                'atanh', 'acosh', 'prelu', 'concatChannels', 'softmaxChannels'] + unaries)
    builder = NeuralNetworkBuilder([('x', datatypes.Array(2, 3, 4)), ('y', datatypes.Array(3, 1))],
                                   [(n, None) for n in outputs], disable_rank5_shape_mapping=True)
    builder.add_transpose('transposed', [2, 0, 1], 'x', 'transposed')
    builder.add_softmax_nd('softmax', 'x', 'softmax', axis=-2)
    builder.add_concat_nd('concat', ['x', 'softmax'], 'concat', axis=1)
    builder.add_add_broadcastable('added', ['x', 'y'], 'added')
    builder.add_multiply_broadcastable('multiplied', ['x', 'y'], 'multiplied')
    builder.add_subtract_broadcastable('subtracted', ['x', 'y'], 'subtracted')
    builder.add_divide_broadcastable('divided', ['x', 'y'], 'divided')
    builder.add_max_broadcastable('maxed', ['x', 'y'], 'maxed')
    builder.add_min_broadcastable('mined', ['x', 'y'], 'mined')
    builder.add_pow_broadcastable('powered', ['softmax', 'y'], 'powered')
    builder.add_flatten_to_2d('flat', 'x', 'flat', axis=1)
    builder.add_flatten_to_2d('flatLast', 'x', 'flatLast', axis=-1)
    builder.add_clamped_relu('clamped', 'x', 'clamped', alpha=0.3, beta=0.9)
    builder.add_gelu('geluExact', 'x', 'geluExact', mode='EXACT')
    builder.add_gelu('geluTanh', 'x', 'geluTanh', mode='TANH_APPROXIMATION')
    builder.add_gelu('geluSigmoid', 'x', 'geluSigmoid', mode='SIGMOID_APPROXIMATION')
    builder.add_activation('relu', 'RELU', 'x', 'relu')
    # Layers of the rank-5 era on an N-D blob: their channels are axis -3.
    slopes = np.array([0.1, 0.3], dtype=np.float32)
    builder.add_activation('prelu', 'PRELU', 'x', 'prelu', params=slopes)
    builder.add_elementwise('concatChannels', ['x', 'relu'], 'concatChannels', 'CONCAT')
    builder.add_softmax('softmaxChannels', 'x', 'softmaxChannels')
    for name in unaries:
        getattr(builder, 'add_' + name)(name, 'x', name)
    builder.add_asin('asin', 'softmax', 'asin')  # in [0, 1]
    builder.add_acos('acos', 'softmax', 'acos')
    builder.add_atanh('atanh', 'softmax', 'atanh')
    builder.add_exp2('expSoftmax', 'softmax', 'expSoftmax')
    builder.add_acosh('acosh', 'expSoftmax', 'acosh')  # exp2 of [0, 1]: in [1, 2]

    def reference(inputs, store):
        x, y = store(inputs['x']), store(inputs['y'])
        e = np.exp(x - x.max(axis=-2, keepdims=True))
        softmax = store(e / e.sum(axis=-2, keepdims=True))
        erf = np.vectorize(math.erf)
        out = {
            'transposed': store(x.transpose(2, 0, 1)), 'softmax': softmax,
            'concat': store(np.concatenate([x, softmax], axis=1)),
            'added': store(x + y), 'multiplied': store(x * y), 'subtracted': store(x - y), 'divided': store(x / y),
            'maxed': store(np.maximum(x, y)), 'mined': store(np.minimum(x, y)), 'powered': store(softmax ** y),
            'flat': store(x.reshape(2, 12)), 'flatLast': store(x.reshape(6, 4)),
            'clamped': store(np.minimum(0.9, np.where(x >= 0, x, 0.3 * x))),
            'geluExact': store(0.5 * x * (1 + erf(x / np.sqrt(2)))),
            'geluTanh': store(0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
            'geluSigmoid': store(x * sigmoid(1.702 * x)), 'relu': store(np.maximum(x, 0)),
            'asin': store(np.arcsin(softmax)), 'acos': store(np.arccos(softmax)), 'atanh': store(np.arctanh(softmax)),
            'acosh': store(np.arccosh(store(2.0 ** softmax))),
            'prelu': store(np.where(x >= 0, x, slopes[:, None, None] * x)),
            'concatChannels': store(np.concatenate([x, store(np.maximum(x, 0))], axis=-3)),
            'softmaxChannels': store(np.exp(x) / np.exp(x).sum(axis=-3, keepdims=True)),
        }
        functions = {'ceil': np.ceil, 'floor': np.floor, 'sign': np.sign, 'exp2': lambda v: 2.0 ** v, 'sin': np.sin,
                     'cos': np.cos, 'tan': np.tan, 'atan': np.arctan, 'sinh': np.sinh, 'cosh': np.cosh,
                     'tanh': np.tanh, 'asinh': np.arcsinh, 'erf': erf}
        for name in unaries:
            out[name] = store(functions[name](x))
        return out

    return builder, None, reference, None


def style_net(rng):
    """A style-transfer-like network on a BGR image with a scaler, to a BGR image: a strided convolution,
    instance normalization, ReLU, a deconvolution, upsampling, a convolution, a sigmoid scaled to 0...255."""
    w1, b1 = seeded(rng, 6, 3, 3, 3, scale=0.4), seeded(rng, 6, scale=0.1)
    g1, be1 = 1 + seeded(rng, 6, scale=0.2), seeded(rng, 6, scale=0.1)
    w2, b2 = seeded(rng, 6, 4, 4, 4, scale=0.3), seeded(rng, 4, scale=0.1)  # deconvolution [C, O, kH, kW]
    g2, be2 = 1 + seeded(rng, 4, scale=0.2), seeded(rng, 4, scale=0.1)
    w3, b3 = seeded(rng, 3, 4, 3, 3, scale=0.4), seeded(rng, 3, scale=0.1)
    scale, biases = 1 / 127.5, [-1.0, -0.9, -1.1]  # blue, green, red
    builder = NeuralNetworkBuilder([('image', datatypes.Array(3, 8, 8))], [('stylized', datatypes.Array(3, 8, 8))])
    image = builder.spec.description.input[0].type.imageType
    image.width, image.height, image.colorSpace = 8, 8, 30  # BGR
    picture = builder.spec.description.output[0].type
    picture.ClearField('multiArrayType')
    picture.imageType.width, picture.imageType.height, picture.imageType.colorSpace = 8, 8, 30
    scaler = builder.nn_spec.preprocessing.add()
    scaler.featureName = 'image'
    scaler.scaler.channelScale = scale
    scaler.scaler.blueBias, scaler.scaler.greenBias, scaler.scaler.redBias = biases
    builder.add_convolution('down', 3, 6, 3, 3, 2, 2, 'same', 1, hwio(w1), b1, True, input_name='image',
                            output_name='down')
    builder.add_batchnorm('norm1', 6, g1, be1, None, None, 'down', 'norm1', compute_mean_var=True,
                          instance_normalization=True, epsilon=1e-5)
    builder.add_activation('relu1', 'RELU', 'norm1', 'relu1')
    builder.add_convolution('up', 6, 4, 4, 4, 2, 2, 'same', 1, w2.transpose(2, 3, 0, 1), b2, True, is_deconv=True,
                            input_name='relu1', output_name='up')
    builder.add_batchnorm('norm2', 4, g2, be2, None, None, 'up', 'norm2', compute_mean_var=True,
                          instance_normalization=True, epsilon=1e-5)
    builder.add_activation('relu2', 'RELU', 'norm2', 'relu2')
    builder.add_upsample('upsample', 2, 2, 'relu2', 'upsampled')
    builder.add_convolution('out', 4, 3, 3, 3, 2, 2, 'same', 1, hwio(w3), b3, True, input_name='upsampled',
                            output_name='out')
    builder.add_activation('sigmoid', 'SIGMOID', 'out', 'sigmoid')
    builder.add_activation('stylized', 'LINEAR', 'sigmoid', 'stylized', params=[255.0, 0.0])

    def instance_norm(y, gamma, beta):
        mean, var = y.mean(axis=(1, 2), keepdims=True), y.var(axis=(1, 2), keepdims=True)
        return (y - mean) / np.sqrt(var + 1e-5) * gamma[:, None, None] + beta[:, None, None]

    def reference(x, store):
        y = store(store(store(x) * scale) + np.array(biases)[:, None, None])
        y = store(conv(y, w1, b1, 2, 1, 1, True))
        y = store(np.maximum(store(instance_norm(y, g1, be1)), 0))
        y = store(deconv_same(y, w2, b2, 2, 1))
        y = store(np.maximum(store(instance_norm(y, g2, be2)), 0))
        y = store(y.repeat(2, axis=1).repeat(2, axis=2))
        y = store(sigmoid(conv(y, w3, b3, 2, 1, 1, True)))  # the GPU runs Conv+Sigmoid as one kernel
        return {'stylized': store(store(y * 255.0) + 0.0)}

    return builder, (3, 8, 8), reference, (0, 255)


# ---- updatable models, and the weights two optimizer steps give them (float64 numpy) ----

def im2col(x, k):
    """[B, C, H, W] to [B, C * k * k, H * W] columns of a stride-1 'same' (odd k) convolution."""
    b, c, h, w = x.shape
    p = k // 2
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    cols = np.zeros((b, c, k, k, h, w))
    for i in range(k):
        for j in range(k):
            cols[:, :, i, j] = xp[:, :, i:i + h, j:j + w]
    return cols.reshape(b, c * k * k, h * w)


def classifier_loss(params, x, labels):
    """The updatable classifier's mean categorical cross-entropy and its gradients."""
    w, b, wd, bd = params['conv.weights'], params['conv.bias'], params['dense.weights'], params['dense.bias']
    n = x.shape[0]
    cols = im2col(x, 3)
    pre = np.einsum('ok,bkp->bop', w.reshape(w.shape[0], -1), cols) + b[None, :, None]
    hidden = np.maximum(pre, 0).reshape(n, -1)
    z = hidden @ wd.T + bd
    e = np.exp(z - z.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    onehot = np.eye(z.shape[1])[labels.astype(int)]
    loss = -np.log(p[np.arange(n), labels.astype(int)]).mean()
    dz = (p - onehot) / n
    dpre = (dz @ wd).reshape(pre.shape) * (pre > 0)
    grads = {'dense.weights': dz.T @ hidden, 'dense.bias': dz.sum(axis=0),
             'conv.weights': np.einsum('bop,bkp->ok', dpre, cols).reshape(w.shape), 'conv.bias': dpre.sum(axis=(0, 2))}
    return loss, grads


def regressor_loss(params, x, targets):
    """The updatable regressor's mean squared error (over every element) and its gradients."""
    w1, b1, w2, b2 = params['hidden.weights'], params['hidden.bias'], params['y.weights'], params['y.bias']
    hidden = np.tanh(x @ w1.T + b1)
    y = hidden @ w2.T + b2
    loss = ((y - targets) ** 2).mean()
    dy = 2 * (y - targets) / y.size
    dhidden = (dy @ w2) * (1 - hidden ** 2)
    return loss, {'y.weights': dy.T @ hidden, 'y.bias': dy.sum(axis=0), 'hidden.weights': dhidden.T @ x,
                  'hidden.bias': dhidden.sum(axis=0)}


def check_gradients(loss, params, x, targets):
    """Central differences against the written gradients: the reference's own check."""
    _, grads = loss(params, x, targets)
    for name, value in params.items():
        flat = value.reshape(-1)
        for i in range(0, flat.size, max(1, flat.size // 7)):
            saved = flat[i]
            flat[i] = saved + 1e-6
            up = loss(params, x, targets)[0]
            flat[i] = saved - 1e-6
            down = loss(params, x, targets)[0]
            flat[i] = saved
            numeric = (up - down) / 2e-6
            assert abs(numeric - grads[name].reshape(-1)[i]) < 1e-6 * max(1, abs(numeric)), (name, i)


def sgd_steps(loss, params, batches, lr, momentum):
    """torch.optim.SGD: the buffer is the first gradient, then momentum * buffer + gradient."""
    buffers = {}
    for x, t in batches:
        _, grads = loss(params, x, t)
        for name in params:
            buffers[name] = grads[name] if name not in buffers else momentum * buffers[name] + grads[name]
            params[name] = params[name] - lr * buffers[name]
    return params


def adam_steps(loss, params, batches, lr, beta1, beta2, eps):
    """torch.optim.Adam, bias-corrected, eps outside the square root."""
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v = {k: np.zeros_like(p) for k, p in params.items()}
    for t, (x, target) in enumerate(batches, start=1):
        _, grads = loss(params, x, target)
        for name in params:
            g = grads[name]
            m[name] = m[name] + (1 - beta1) * (g - m[name])
            v[name] = beta2 * v[name] + (1 - beta2) * g * g
            step = (lr / (1 - beta1 ** t)) * m[name] / (np.sqrt(v[name]) / np.sqrt(1 - beta2 ** t) + eps)
            params[name] = params[name] - step
    return params


def updatable_classifier(rng):
    """conv (2 -> 3, 3x3 same) -> ReLU -> flatten -> innerProduct (48 -> 4) -> softmax, both weighted
    layers updatable, categorical cross-entropy on the softmax, SGD (lr 0.05, momentum 0.9, batches
    of 4), 1 epoch, no shuffling: on 8 items, two steps."""
    from coremltools.models.neural_network import SgdParams
    w, b = seeded(rng, 3, 2, 3, 3, scale=0.4), seeded(rng, 3, scale=0.1)
    wd, bd = seeded(rng, 4, 48, scale=0.2), seeded(rng, 4, scale=0.1)
    builder = NeuralNetworkBuilder([('x', datatypes.Array(2, 4, 4))], [('probs', datatypes.Array(4))])
    builder.add_convolution('conv', 2, 3, 3, 3, 1, 1, 'same', 1, hwio(w), b, True, input_name='x', output_name='conv')
    builder.add_activation('relu', 'RELU', 'conv', 'relu')
    builder.add_flatten('flatten', 0, 'relu', 'flatten')
    builder.add_inner_product('dense', wd, bd, 48, 4, True, 'flatten', 'dense')
    builder.add_softmax('softmax', 'dense', 'probs')
    builder.make_updatable(['conv', 'dense'])
    builder.set_categorical_cross_entropy_loss(name='loss', input='probs')
    builder.set_sgd_optimizer(SgdParams(lr=0.05, batch=4, momentum=0.9))
    builder.set_epochs(1)
    builder.nn_spec.updateParams.shuffle.defaultValue = False
    x = rng.uniform(-1, 1, size=(8, 2, 4, 4)).astype(np.float32)
    labels = rng.integers(0, 4, size=8).astype(np.float32)
    params = {'conv.weights': w, 'conv.bias': b, 'dense.weights': wd, 'dense.bias': bd}
    return builder, x, labels, params, classifier_loss, \
        lambda p, batches: sgd_steps(classifier_loss, p, batches, 0.05, 0.9)


def updatable_regressor(rng):
    """innerProduct (6 -> 4) -> tanh -> innerProduct (4 -> 3, float16 weights and bias), both
    updatable, mean squared error on the output, Adam (lr 0.02, batches of 4), 1 epoch, no shuffling:
    two steps on 8 items. The float16 layer trains from its float16 values and is written back in float16."""
    from coremltools.models.neural_network import AdamParams
    w1, b1 = seeded(rng, 4, 6, scale=0.4), seeded(rng, 4, scale=0.1)
    w2, b2 = seeded(rng, 3, 4, scale=0.4), seeded(rng, 3, scale=0.1)
    builder = NeuralNetworkBuilder([('x', datatypes.Array(6))], [('y', datatypes.Array(3))])
    builder.add_inner_product('hidden', w1, b1, 6, 4, True, 'x', 'hidden')
    builder.add_activation('tanh', 'TANH', 'hidden', 'tanh')
    builder.add_inner_product('y', w2, b2, 4, 3, True, 'tanh', 'y')
    builder.make_updatable(['hidden', 'y'])
    builder.set_mean_squared_error_loss(name='loss', input_feature=('y', datatypes.Array(3)))
    builder.set_adam_optimizer(AdamParams(lr=0.02, batch=4, beta1=0.9, beta2=0.999, eps=1e-8))
    builder.set_epochs(1)
    builder.nn_spec.updateParams.shuffle.defaultValue = False
    # float16 weights (make_updatable refuses them, so they are converted after): the values the file holds.
    layer = builder.nn_spec.layers[2].innerProduct
    for field, values in [(layer.weights, w2), (layer.bias, b2)]:
        field.ClearField('floatValue')
        field.float16Value = values.astype(np.float16).tobytes()
    x = rng.uniform(-1, 1, size=(8, 6)).astype(np.float32)
    targets = rng.uniform(-1, 1, size=(8, 3)).astype(np.float32)
    params = {'hidden.weights': w1, 'hidden.bias': b1, 'y.weights': w2.astype(np.float16).astype(np.float32),
              'y.bias': b2.astype(np.float16).astype(np.float32)}
    return builder, x, targets, params, regressor_loss, \
        lambda p, batches: adam_steps(regressor_loss, p, batches, 0.02, 0.9, 0.999, 1e-8)


def write_updatable(name, make, seed):
    """The model, its data and labels, and each trained weight after the two steps (`-trained-NAME.npy`)."""
    rng = np.random.default_rng(seed)
    builder, x, labels, params, loss, train = make(rng)
    save_spec(builder.spec, os.path.join(ROOT, name + '.mlmodel'))
    np.save(os.path.join(ROOT, name + '-data.npy'), x)
    np.save(os.path.join(ROOT, name + '-labels.npy'), labels)
    params = {k: v.astype(np.float64) for k, v in params.items()}
    check_gradients(loss, {k: v.copy() for k, v in params.items()}, x[:4].astype(np.float64), labels[:4])
    batches = [(x[i:i + 4].astype(np.float64), labels[i:i + 4].astype(np.float64)) for i in (0, 4)]
    for weight, value in train(params, batches).items():
        np.save(os.path.join(ROOT, f'{name}-trained-{weight}.npy'), value)
    print(name, os.path.getsize(os.path.join(ROOT, name + '.mlmodel')), 'bytes')


# ---- recurrent layers: Core ML's equations (NeuralNetwork.proto), one sequence of batch one ----

CLIP = 50.0  # clip(): every gate's input is bounded to [-50, 50]

# The recurrent activations as Core ML fixes them: scaledTanh and sigmoidHard take only these
# constants (the builder writes empty messages), linear is written empty for the identity.
RECURRENT_ACTIVATIONS = {
    'SIGMOID': sigmoid, 'TANH': np.tanh, 'RELU': lambda v: np.maximum(v, 0), 'LINEAR': lambda v: v,
    'SCALED_TANH': lambda v: 1.7159 * np.tanh(2 / 3 * v),
    'SIGMOID_HARD': lambda v: np.clip(0.2 * v + 0.5, 0, 1),
}


def gate(act, value):
    return RECURRENT_ACTIVATIONS[act](np.clip(value, -CLIP, CLIP))


def simple_rnn(xs, w, r, b, h, act):
    ys = []
    for x in xs:
        h = gate(act, w @ x + r @ h + b)
        ys.append(h)
    return ys, h


def gru(xs, ws, rs, bs, h, f, g):
    (wz, wr, wo), (rz, rr, ro), (bz, br, bo) = ws, rs, bs
    ys = []
    for x in xs:
        z = gate(f, wz @ x + rz @ h + bz)
        reset = gate(f, wr @ x + rr @ h + br)
        o = gate(g, wo @ x + ro @ (h * reset) + bo)
        h = (1 - z) * o + z * h
        ys.append(h)
    return ys, h


def lstm(xs, ws, rs, bs, peep, h, c, acts, cell_clip, coupled=False):
    """Gates in Core ML's order: input i, forget f, block input z, output o."""
    (wi, wf, wz, wo), (ri, rf, rz, ro), (bi, bf, bz, bo) = ws, rs, bs
    pi, pf, po = peep
    f_, g_, h_ = acts
    ys = []
    for x in xs:
        i = gate(f_, wi @ x + ri @ h + pi * c + bi)
        forget = 1 - i if coupled else gate(f_, wf @ x + rf @ h + pf * c + bf)
        z = gate(g_, wz @ x + rz @ h + bz)
        c = np.clip(c * forget + i * z, -cell_clip, cell_clip)
        o = gate(f_, wo @ x + ro @ h + po * c + bo)
        h = RECURRENT_ACTIVATIONS[h_](c) * o
        ys.append(h)
    return ys, h, c


def recurrent_net(rng):
    """simpleRecurrent, gru, uniDirectionalLSTM and biDirectionalLSTM on x [5 steps, 3]; every output an output."""
    steps, size, hidden, bi_hidden = 5, 3, 4, 3
    outputs = [('rnn_y', steps * hidden), ('rnn_h', hidden), ('gru_y', steps * hidden), ('gru_h', hidden),
               ('lstm_y', hidden), ('lstm_h', hidden), ('lstm_c', hidden), ('bi_y', 2 * bi_hidden),
               ('bi_h', bi_hidden), ('bi_c', bi_hidden), ('bi_h_back', bi_hidden), ('bi_c_back', bi_hidden)]
    builder = NeuralNetworkBuilder([('x', datatypes.Array(size)), ('h0', datatypes.Array(hidden)),
                                    ('c0', datatypes.Array(hidden))],
                                   [(name, datatypes.Array(n)) for name, n in outputs])

    def matrices(count, rows, cols, scale=0.5):
        return [seeded(rng, rows, cols, scale=scale) for _ in range(count)]

    rnn_w, rnn_r, rnn_b = seeded(rng, hidden, size, scale=0.5), seeded(rng, hidden, hidden, scale=0.5), seeded(rng, hidden)
    builder.add_simple_rnn('rnn', rnn_r, rnn_w, rnn_b, hidden, size, 'SCALED_TANH', ['x', 'h0'], ['rnn_y', 'rnn_h'],
                           output_all=True)
    gru_w, gru_r, gru_b = matrices(3, hidden, size), matrices(3, hidden, hidden), matrices(3, hidden, 1, 0.3)
    gru_b = [v[:, 0] for v in gru_b]
    builder.add_gru('gru', gru_r, gru_w, gru_b, hidden, size, ['x'], ['gru_y', 'gru_h'], activation='TANH',
                    inner_activation='SIGMOID_HARD', output_all=True, reverse_input=True)
    # The builder takes LSTM gates as [i, f, o, z].
    lw, lr = matrices(4, hidden, size, 0.8), matrices(4, hidden, hidden, 0.8)
    lb, lp = [seeded(rng, hidden, scale=0.5) for _ in range(4)], [seeded(rng, hidden, scale=0.5) for _ in range(3)]
    builder.add_unilstm('lstm', lr, lw, lb, hidden, size, ['x', 'h0', 'c0'], ['lstm_y', 'lstm_h', 'lstm_c'],
                        peep=lp, forget_bias=True, cell_clip_threshold=0.25)
    bw = [matrices(4, bi_hidden, size), matrices(4, bi_hidden, size)]
    br = [matrices(4, bi_hidden, bi_hidden), matrices(4, bi_hidden, bi_hidden)]
    bb = [[seeded(rng, bi_hidden, scale=0.3) for _ in range(4)] for _ in range(2)]
    builder.add_bidirlstm('bi', br[0], bw[0], bb[0], br[1], bw[1], bb[1], bi_hidden, size, ['x'],
                          ['bi_y', 'bi_h', 'bi_c', 'bi_h_back', 'bi_c_back'], output_all=True,
                          coupled_input_forget_gate=True)

    def order(v):  # the builder's [i, f, o, z] as Core ML's equations name them: [i, f, z, o]
        return [v[0], v[1], v[3], v[2]]

    def reference(inputs, store):
        xs = list(inputs['x'])
        h0, c0 = inputs['h0'][0], inputs['c0'][0]
        out = {}
        ys, h = simple_rnn(xs, rnn_w, rnn_r, rnn_b, h0, 'SCALED_TANH')
        out['rnn_y'], out['rnn_h'] = np.array(ys), h[None]
        ys, h = gru(xs[::-1], gru_w, gru_r, gru_b, np.zeros(hidden), 'SIGMOID_HARD', 'TANH')
        out['gru_y'], out['gru_h'] = np.array(ys), h[None]
        ys, h, c = lstm(xs, order(lw), order(lr), [lb[0], lb[1] + 1, lb[3], lb[2]], lp,
                        h0, c0, ('SIGMOID', 'TANH', 'TANH'), 0.25)
        out['lstm_y'], out['lstm_h'], out['lstm_c'] = h[None], h[None], c[None]
        zero, none = np.zeros(bi_hidden), [np.zeros(bi_hidden)] * 3
        acts = ('SIGMOID', 'TANH', 'TANH')
        yf, hf, cf = lstm(xs, order(bw[0]), order(br[0]), order(bb[0]), none, zero, zero, acts, 50.0, coupled=True)
        yb, hb, cb = lstm(xs[::-1], order(bw[1]), order(br[1]), order(bb[1]), none, zero, zero, acts, 50.0,
                          coupled=True)
        # Step t holds the forward output after x_1..x_t and the backward one after x_T..x_t.
        out['bi_y'] = np.concatenate([np.array(yf), np.array(yb[::-1])], axis=1)
        out['bi_h'], out['bi_c'], out['bi_h_back'], out['bi_c_back'] = hf[None], cf[None], hb[None], cb[None]
        return out

    x = {'x': rng.uniform(-1.5, 1.5, size=(steps, size)).astype(np.float32),
         'h0': rng.uniform(-0.5, 0.5, size=(1, hidden)).astype(np.float32),
         'c0': rng.uniform(-0.5, 0.5, size=(1, hidden)).astype(np.float32)}
    return builder, x, reference


def recurrent_nd(rng):
    """An exact-mapping network: a gru on Core ML's own rank-5 blob [Seq 4, Batch 2, 3, 1, 1], its whole
    sequence [4, 2, 5, 1, 1] and last state [1, 2, 5, 1, 1], each sequence of the batch on its own."""
    steps, batch, size, hidden = 4, 2, 3, 5
    builder = NeuralNetworkBuilder([('x', datatypes.Array(steps, batch, size, 1, 1))],
                                   [('y', datatypes.Array(steps, batch, hidden, 1, 1)),
                                    ('h', datatypes.Array(1, batch, hidden, 1, 1))], disable_rank5_shape_mapping=True)
    ws = [seeded(rng, hidden, size, scale=0.6) for _ in range(3)]
    rs = [seeded(rng, hidden, hidden, scale=0.6) for _ in range(3)]
    bs = [seeded(rng, hidden, scale=0.3) for _ in range(3)]
    builder.add_gru('gru', rs, ws, bs, hidden, size, ['x'], ['y', 'h'], activation='TANH', inner_activation='SIGMOID',
                    output_all=True)

    def reference(x):
        runs = [gru(list(x[:, b, :, 0, 0]), ws, rs, bs, np.zeros(hidden), 'SIGMOID', 'TANH') for b in range(batch)]
        y = np.stack([np.array(ys) for ys, _ in runs], axis=1)[..., None, None]
        h = np.stack([last for _, last in runs])[None, ..., None, None]
        return {'y': y, 'h': h}

    return builder, {'x': rng.uniform(-1.5, 1.5, size=(steps, batch, size, 1, 1)).astype(np.float32)}, reference


def parametric_softplus(rng):
    """parametricSoftplus, alpha * log(1 + exp(beta * x)), per channel of [3, 2, 2], then with one alpha and beta."""
    alpha, beta = rng.uniform(0.5, 1.5, size=3).astype(np.float32), rng.uniform(-2, 2, size=3).astype(np.float32)
    alpha1, beta1 = rng.uniform(0.5, 1.5, size=1).astype(np.float32), rng.uniform(0.5, 2, size=1).astype(np.float32)
    builder = NeuralNetworkBuilder([('x', datatypes.Array(3, 2, 2))], [('y', datatypes.Array(3, 2, 2)),
                                                                      ('z', datatypes.Array(3, 2, 2))])
    builder.add_activation('y', 'PARAMETRICSOFTPLUS', 'x', 'y', params=[alpha, beta])
    builder.add_activation('z', 'PARAMETRICSOFTPLUS', 'y', 'z', params=[alpha1, beta1])

    def softplus(v, a, b):
        return a * np.log1p(np.exp(b * v))

    def reference(x, store):
        y = store(softplus(store(x), alpha.astype(np.float64)[:, None, None], beta.astype(np.float64)[:, None, None]))
        return {'y': y, 'z': store(softplus(y, float(alpha1[0]), float(beta1[0])))}

    return builder, rng.uniform(-3, 3, size=(3, 2, 2)).astype(np.float32), reference


def write_parametric_softplus():
    builder, x, reference = parametric_softplus(np.random.default_rng(20282))
    save_spec(builder.spec, os.path.join(ROOT, 'ParametricSoftplus.mlmodel'))
    save_references('ParametricSoftplus', x, reference, lambda v: v[None])


def recurrent_refused():
    """A simpleRecurrent whose activation is leakyReLU, which Core ML's recurrent layers do not take."""
    builder = NeuralNetworkBuilder([('x', datatypes.Array(2))], [('y', datatypes.Array(2))])
    builder.add_simple_rnn('rnn', np.eye(2), np.eye(2), None, 2, 2, 'TANH', ['x'], ['y'])
    activation = builder.spec.neuralNetwork.layers[-1].simpleRecurrent.activation
    activation.leakyReLU.alpha = 0.1
    return builder


def write_recurrent():
    builder, x, reference = recurrent_nd(np.random.default_rng(20281))
    save_spec(builder.spec, os.path.join(ROOT, 'RecurrentND.mlmodel'))
    np.save(os.path.join(ROOT, 'RecurrentND-input.npy'), x['x'])
    for output, value in reference(x['x'].astype(np.float64)).items():
        np.save(os.path.join(ROOT, f'RecurrentND-{output}.npy'), value)
    save_spec(recurrent_refused().spec, os.path.join(ROOT, 'RecurrentRefused.mlmodel'))
    builder, x, reference = recurrent_net(np.random.default_rng(20280))
    save_spec(builder.spec, os.path.join(ROOT, 'RecurrentNet.mlmodel'))
    for key, value in x.items():
        np.save(os.path.join(ROOT, f'RecurrentNet-input-{key}.npy'), value)
    for output, value in reference({k: v.astype(np.float64) for k, v in x.items()}, lambda v: v).items():
        np.save(os.path.join(ROOT, f'RecurrentNet-{output}.npy'), np.asarray(value, dtype=np.float64))
    print('RecurrentNet', os.path.getsize(os.path.join(ROOT, 'RecurrentNet.mlmodel')), 'bytes')


def unsupported():
    builder = NeuralNetworkBuilder([('data', datatypes.Array(2, 3, 3))], [('repeated', datatypes.Array(2, 3, 3))])
    builder.add_sequence_repeat('repeat', 2, 'data', 'repeated')
    return builder


def save_references(name, x, reference, batch):
    """The input(s) and each output's float64 and fp16 references of model `name`."""
    if isinstance(x, dict):
        for key, value in x.items():
            np.save(os.path.join(ROOT, f'{name}-input-{key}.npy'), batch(value))
        cast = {key: value.astype(np.float64) for key, value in x.items()}
    else:
        np.save(os.path.join(ROOT, name + '-input.npy'), batch(x))
        cast = x.astype(np.float64)
    for suffix, store in [('', lambda v: v), ('-fp16', fp16_stored)]:
        for output, value in reference(cast, store).items():
            np.save(os.path.join(ROOT, f'{name}-{output}{suffix}.npy'), batch(np.asarray(value, dtype=np.float64)))


def main():
    os.makedirs(ROOT, exist_ok=True)
    writers = {'recurrent': write_recurrent, 'parametric_softplus': write_parametric_softplus}
    if sys.argv[1:]:  # only the fixtures named
        for name in sys.argv[1:]:
            writers[name]()
        return
    for index, (name, make) in enumerate([('NeuralMcNeuralNet', neural_mc_neural_net), ('PlainNet', plain_net),
                                          ('ImageClassifier', image_classifier), ('ReshapeND', reshape_nd),
                                          ('DeconvolutionNet', deconvolution_net), ('LayoutNet', layout_net),
                                          ('ElementwiseNet', elementwise_net), ('EmbeddingNet', embedding_net),
                                          ('NDNet', nd_net), ('StyleNet', style_net), ('NNRegressor', nn_regressor)]):
        rng = np.random.default_rng(20260 + index)
        builder, shape, reference, span = make(rng)
        if name == 'EmbeddingNet':  # three items, each one word
            x, batch = np.array([[4], [0], [5]], dtype=np.float32), (lambda v: v)
        elif name == 'NDNet':  # exact mapping: each input is its whole shape
            x = {'x': rng.uniform(-1.2, 1.2, size=(2, 3, 4)).astype(np.float32),
                 'y': rng.uniform(0.5, 1.5, size=(3, 1)).astype(np.float32)}
            batch = lambda v: v
        else:
            x = rng.uniform(*span, size=shape).astype(np.float32)
            # A batch of one in front, but for the N-D network, whose input is its whole shape.
            batch = (lambda v: v) if name == 'ReshapeND' else (lambda v: v[None])
        save_spec(builder.spec, os.path.join(ROOT, name + '.mlmodel'))
        save_references(name, x, reference, batch)
        print(name, os.path.getsize(os.path.join(ROOT, name + '.mlmodel')), 'bytes')
    save_spec(unsupported().spec, os.path.join(ROOT, 'Unsupported.mlmodel'))
    write_updatable('UpdatableClassifier', updatable_classifier, 20270)
    write_updatable('UpdatableRegressor', updatable_regressor, 20271)
    write_recurrent()
    write_parametric_softplus()


if __name__ == '__main__':
    main()
