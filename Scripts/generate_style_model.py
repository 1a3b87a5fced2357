"""Writes Models/style.onnx, the built-in network of `layerkit demo --style`,
and its reference output on the demo's built-in image.

The architecture is Johnson et al.'s fast style transfer (the network of
PyTorch's fast_neural_style example and of Core ML style-transfer models),
narrowed so the binary stays small: reflection Pad -> Conv 9x9 -> Instance
Norm -> Relu, two stride-2 downsampling convolutions, two residual blocks
(Pad, Conv, IN, Relu, Pad, Conv, IN, Add), two nearest-neighbour Resize x2
upsampling steps with convolutions, and a final reflection-padded 9x9 Conv
to 3 channels with Sigmoid (pixels in 0..1). The weights are seeded, not
trained (zero-mean filters, a small final gain: see `model`): the output is
a deterministic pattern of the image, not a painting. Input and output are 1x3xHxW RGB in [0, 1],
any H and W (the two stride-2 steps and the two x2 upsamplings give back H and W when they are
multiples of 4, else the next multiple of 4 up); the demo and the reference use 96x96.

The reference (Tests/LayerKitTests/Fixtures/style/demo_output.npy) is
onnxruntime's output (CPU, optimizations off) on the demo image as
Sources/LayerKitCommands/DemoImage.swift draws it, rounded to fp16 as the
demo rounds it for both backends. Run with a Python that has onnx, onnxruntime
and numpy (`make test-venv` makes one: .build/test-venv/bin/python); reruns write
the same bytes.
"""
import math
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

SIZE = 96
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')


def demo_image(n):
    """DemoImage.landscape(size: n) in Float32 arithmetic, pixel by pixel."""
    f = np.float32
    image = np.zeros((1, 3, n, n), dtype=np.float32)
    for y in range(n):
        for x in range(n):
            u, v = f(x) / f(n - 1), f(y) / f(n - 1)
            rgb = (f(0.35) + f(0.3) * v, f(0.55) + f(0.3) * v, f(0.95) - f(0.2) * v)
            sun = f(math.hypot(float(u - f(0.72)), float(v - f(0.25))))
            if sun < f(0.12):
                rgb = (f(1.0), f(0.85), f(0.3))
            if v > f(0.62) + f(0.08) * f(math.sin(float(u * f(9)))):
                rgb = (f(0.2) + f(0.2) * u, f(0.5) - f(0.15) * v, f(0.15))
            if v > f(0.85):
                rgb = (f(0.45), f(0.3), f(0.15) + f(0.1) * f(math.sin(float(u * f(40)))))
            image[0, :, y, x] = rgb
    return image


class Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.initializers, self.count = [], [], 0

    def name(self, kind):
        self.count += 1
        return f'{kind}_{self.count}'

    def constant(self, kind, array):
        name = self.name(kind)
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def node(self, op, inputs, **attributes):
        output = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [output], name=output, **attributes))
        return output

    def pad(self, x, p):
        pads = self.constant('pads', np.array([0, 0, p, p, 0, 0, p, p], dtype=np.int64))
        return self.node('Pad', [x, pads], mode='reflect')

    def conv(self, x, cin, cout, k, stride=1, gain=1.0, bias=0.0):
        w = self.rng.normal(0, gain * math.sqrt(2 / (cin * k * k)), (cout, cin, k, k))
        # Zero-mean filters and no bias before an instance norm (which removes
        # it anyway): a constant input (the image's mean colour, a Relu's
        # positive mean) gives no offset for the norm to cancel.
        w = (w - w.mean(axis=(1, 2, 3), keepdims=True)).astype(np.float32)
        b = self.rng.normal(0, bias, cout).astype(np.float32) if bias else np.zeros(cout, np.float32)
        return self.node('Conv', [self.pad(x, k // 2), self.constant('w', w), self.constant('b', b)],
                         kernel_shape=[k, k], strides=[stride, stride])

    def norm(self, x, c):
        scale = (1 + self.rng.normal(0, 0.1, c)).astype(np.float32)
        bias = self.rng.normal(0, 0.1, c).astype(np.float32)
        return self.node('InstanceNormalization', [x, self.constant('scale', scale), self.constant('bias', bias)],
                         epsilon=1e-5)

    def block(self, x, cin, cout, k, stride=1):
        return self.node('Relu', [self.norm(self.conv(x, cin, cout, k, stride), cout)])

    def residual(self, x, c):
        y = self.norm(self.conv(self.block(x, c, c, 3), c, c, 3), c)
        return self.node('Add', [x, y])

    def upsample(self, x, cin, cout):
        scales = self.constant('scales', np.array([1, 1, 2, 2], dtype=np.float32))
        up = self.node('Resize', [x, '', scales], mode='nearest', coordinate_transformation_mode='asymmetric',
                       nearest_mode='floor')
        return self.block(up, cin, cout, 3)


def model():
    b = Builder(seed=2024)
    x = b.block('image', 3, 8, 9)
    x = b.block(x, 8, 16, 3, stride=2)
    x = b.block(x, 16, 16, 3, stride=2)
    x = b.residual(x, 16)
    x = b.residual(x, 16)
    x = b.upsample(x, 16, 16)
    x = b.upsample(x, 16, 8)
    # The GPU stores every value in fp16: through 21 rounding steps (Conv, IN,
    # Add) the last Conv's values carry ~1.3% of their spread in error, and
    # the Sigmoid passes up to a quarter of it on. A final gain of 0.15 keeps
    # the picture within the parity rule on the GPU (7.9e-4 on lavapipe), at
    # the price of a softer picture (0.23..0.69); gain 1 gave 0..1 pixels and
    # a GPU error of 3.4e-3 (under one 8-bit level, but past 1e-3).
    x = b.conv(x, 8, 3, 9, gain=0.15, bias=0.3)
    b.nodes.append(helper.make_node('Sigmoid', [x], ['styled'], name='sigmoid'))
    graph = helper.make_graph(b.nodes, 'fast_style_transfer_narrow',
                              [helper.make_tensor_value_info('image', TensorProto.FLOAT, [1, 3, 'H', 'W'])],
                              [helper.make_tensor_value_info('styled', TensorProto.FLOAT,
                                                             [1, 3, 'styled_height', 'styled_width'])],
                              b.initializers)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)], producer_name='layerkit-style-demo')
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def main():
    m = model()
    path = os.path.join(ROOT, 'Models', 'style.onnx')
    onnx.save(m, path)
    image = demo_image(SIZE).astype(np.float16).astype(np.float32)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(m.SerializeToString(), options, providers=['CPUExecutionProvider'])
    (styled,) = session.run(None, {'image': image})
    fixtures = os.path.join(ROOT, 'Tests', 'LayerKitTests', 'Fixtures', 'style')
    os.makedirs(fixtures, exist_ok=True)
    np.save(os.path.join(fixtures, 'demo_output.npy'), styled.astype(np.float32))
    np.save(os.path.join(fixtures, 'demo_input.npy'), image.astype(np.float16))
    # Two small image models for the `layerkit run --output x.png` tests: an
    # identity (Relu of 0..1 pixels) on any HxW, and a 1x1 Conv to 2 channels.
    image = helper.make_tensor_value_info('image', TensorProto.FLOAT, [1, 3, 'H', 'W'])
    for name, nodes, channels, inits in [
            ('identity_relu', [helper.make_node('Relu', ['image'], ['out'])], 3, []),
            ('two_channels', [helper.make_node('Conv', ['image', 'w'], ['out'])], 2,
             [numpy_helper.from_array(np.array([[1, 0, 0], [0, 0.5, 0.5]], np.float32).reshape(2, 3, 1, 1), 'w')])]:
        graph = helper.make_graph(nodes, name, [image],
                                  [helper.make_tensor_value_info('out', TensorProto.FLOAT, [1, channels, 'H', 'W'])], inits)
        small = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)], producer_name='layerkit-style-demo')
        small.ir_version = 8
        onnx.checker.check_model(small)
        onnx.save(small, os.path.join(fixtures, name + '.onnx'))
    print(f'wrote {path} ({os.path.getsize(path)} bytes); output range {styled.min():.3f}..{styled.max():.3f}, '
          f'mean {styled.mean():.3f}, std {styled.std():.3f}')


if __name__ == '__main__':
    main()
