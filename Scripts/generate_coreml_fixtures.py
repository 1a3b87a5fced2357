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
import os

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


def unsupported():
    builder = NeuralNetworkBuilder([('data', datatypes.Array(2, 3, 3))], [('root', datatypes.Array(2, 3, 3))])
    builder.add_unary('sqrt', 'data', 'root', mode='sqrt')
    return builder


def main():
    os.makedirs(ROOT, exist_ok=True)
    for index, (name, make) in enumerate([('NeuralMcNeuralNet', neural_mc_neural_net), ('PlainNet', plain_net),
                                          ('ImageClassifier', image_classifier), ('ReshapeND', reshape_nd)]):
        rng = np.random.default_rng(20260 + index)
        builder, shape, reference, (low, high) = make(rng)
        x = rng.uniform(low, high, size=shape).astype(np.float32)
        save_spec(builder.spec, os.path.join(ROOT, name + '.mlmodel'))
        # A batch of one in front, but for the N-D network, whose input is its whole shape.
        batch = (lambda v: v) if name == 'ReshapeND' else (lambda v: v[None])
        np.save(os.path.join(ROOT, name + '-input.npy'), batch(x))
        for suffix, store in [('', lambda v: v), ('-fp16', fp16_stored)]:
            for output, value in reference(x.astype(np.float64), store).items():
                np.save(os.path.join(ROOT, f'{name}-{output}{suffix}.npy'), batch(value))
        print(name, os.path.getsize(os.path.join(ROOT, name + '.mlmodel')), 'bytes')
    save_spec(unsupported().spec, os.path.join(ROOT, 'Unsupported.mlmodel'))


if __name__ == '__main__':
    main()
