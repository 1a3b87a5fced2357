"""TensorFlow Lite fixtures for LayerKit's `.tflite` reader.

Writes Tests/LayerKitTests/Fixtures/tflite/:

    conv_net.tflite           float32: CONV_2D (SAME, stride 2, fused RELU; VALID, dilation 2),
                              DEPTHWISE_CONV_2D (SAME, fused RELU6), MAX_POOL_2D and
                              AVERAGE_POOL_2D (SAME, odd sizes), PAD, ADD, MUL, SUB,
                              CONCATENATION, MEAN, FULLY_CONNECTED, SOFTMAX
    conv_net_fp16.tflite      the same graph with float16 weights (DEQUANTIZE at load)
    activations.tflite        TANH, LOGISTIC, HARD_SWISH, LEAKY_RELU, PRELU, RELU6, RELU_N1_TO_1, RELU, NEG
    resize_slice.tflite       RESIZE_BILINEAR (half-pixel), RESIZE_NEAREST_NEIGHBOR, DEPTH_TO_SPACE,
                              STRIDED_SLICE (masks, shrink), RESHAPE, TRANSPOSE_CONV (SAME,
                              stride 2), MEAN without keep_dims
    sparse_fc.tflite          FULLY_CONNECTED whose mostly-zero weights are stored sparse (DENSIFY)
    layout_ops.tflite         STRIDED_SLICE with an ellipsis and with new axes, PADV2 (a constant
                              of 0.5), DIV, a grouped CONV_2D (2 groups)
    math_ops.tflite           ABS, EXP, LOG, SQRT, RSQRT, SIN, COS, ELU, SQUARE, MAXIMUM, MINIMUM,
                              SQUARED_DIFFERENCE
    slice_masks.tflite        layout_ops with its slices as sparse specs (an ellipsis_mask, a
                              new_axis_mask), which TensorFlow's converter never writes but the
                              schema allows: the file rewritten by TensorFlow's schema bindings
    int8_net.tflite           fully int8 with float32 edges (QUANTIZE first, DEQUANTIZE last): CONV_2D,
                              DEPTHWISE_CONV_2D, PAD, ADD, MUL, MAX_POOL_2D, AVERAGE_POOL_2D,
                              CONCATENATION, MEAN, RESHAPE, FULLY_CONNECTED, SOFTMAX, LOGISTIC
    int8_io.tflite            fully int8 with int8 input and output (`inference_input_type=tf.int8`);
                              its input and outputs are written as float32 .npy of the integer values
    uint8_io.tflite           fully quantized with uint8 input and output (`inference_input_type=tf.uint8`):
                              CONV_2D, MAX_POOL_2D, FULLY_CONNECTED
    int16_input.tflite        int8_io with its input declared INT16, which LayerKit refuses
    <name>-quanta.npy         an int8 model's output scales (one quantum per output), float32
    unsupported_floor.tflite  FLOOR, an operator LayerKit does not translate, for the refusal naming it
    hostile_tensor_index.tflite, hostile_missing_weights.tflite
                              activations with an operator naming tensor 999, conv_net with a
                              convolution's weights left out (-1): well-formed files LayerKit refuses
    face_detection_short_range.tflite, selfie_segmentation.tflite
                              mediapipe 0.10.21's models, taken from its wheel, sha256 checked
    <name>-input.npy          the seeded input, float32, NHWC as the model declares it
    <name>-output<i>.npy      LiteRT's (ai-edge-litert's Interpreter) output i for that input
    selfie_segmentation takes a formula's image (`selfie_input`, which the Swift test makes too)
    and keeps every 4th row and column of its output, so that its fixtures stay small

References come from LiteRT, never from LayerKit. Run with a Python 3.11 venv:
    python3 -m venv /tmp/tflite-venv
    /tmp/tflite-venv/bin/pip install tensorflow-cpu ai-edge-litert numpy
    (cd /tmp/mp && /tmp/tflite-venv/bin/pip download mediapipe==0.10.21 --no-deps)
    /tmp/tflite-venv/bin/python Scripts/generate_tflite_fixtures.py /tmp/mp
The int8 models (int8_net, int8_io, uint8_io), layout_ops and math_ops draw from their own seeded
generators; to write only them:
    /tmp/tflite-venv/bin/python Scripts/generate_tflite_fixtures.py --int8-only
    /tmp/tflite-venv/bin/python Scripts/generate_tflite_fixtures.py --layout-only
"""
import glob
import hashlib
import os
import sys
import zipfile

import numpy as np
import tensorflow as tf
from ai_edge_litert.interpreter import Interpreter

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'Tests', 'LayerKitTests', 'Fixtures',
                    'tflite')
MEDIAPIPE = {
    'face_detection_short_range.tflite': 'bbff11cebd1eb27a1e004cae0b0e63ec8c551cbf34a4451148b4908b8db3eca8',
    'selfie_segmentation.tflite': '9ee168ec7c8f2a16c56fe8e1cfbc514974cbbb7e434051b455635f1bd1462f5c',
}
rng = np.random.default_rng(26)
# The int8 models' own generator, so that adding them changed none of the other fixtures.
rng8 = np.random.default_rng(8)
# layout_ops's, for the same reason.
rng45 = np.random.default_rng(45)


def weights(*shape, scale=0.3, generator=None):
    return tf.constant((generator or rng).normal(0, scale, shape).astype(np.float32))


def convert(function, shape, fp16=False, sparse=False, int8=False, io_type=tf.int8, generator=None):
    concrete = function.get_concrete_function(tf.TensorSpec(shape, tf.float32))
    converter = tf.lite.TFLiteConverter.from_concrete_functions([concrete], function)
    if fp16:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.target_spec.supported_types = [tf.float16]
    if sparse:
        converter.optimizations = [tf.lite.Optimize.EXPERIMENTAL_SPARSITY]
    if int8:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        data = generator or rng
        converter.representative_dataset = lambda: ([data.normal(0, 1, shape).astype(np.float32)] for _ in range(8))
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = io_type
        converter.inference_output_type = io_type
    return converter.convert()


def op_names(content):
    interpreter = Interpreter(model_content=content)
    return sorted({detail['op_name'] for detail in interpreter._get_ops_details()})


def selfie_input(shape):
    """A smooth image, pixels 0 to 255 as mediapipe feeds the model (which then finds a mask over a
    third of it), that the Swift test makes by the same formula (its 786 KB are not committed)."""
    n, h, w, c = np.meshgrid(*[np.arange(d, dtype=np.float64) for d in shape], indexing='ij')
    return (255 * (0.5 + 0.5 * np.sin(0.02 * h * (c + 1)) * np.cos(0.015 * w))).astype(np.float32)


def reference(name, content, make_input=None, step=1, generator=None):
    """Writes the model, its input (seeded, or made by `make_input` and not written) and
    LiteRT's outputs for it, every `step`-th row and column of an NHWC output only."""
    with open(os.path.join(ROOT, name + '.tflite'), 'wb') as file:
        file.write(content)
    interpreter = Interpreter(model_content=content)
    interpreter.allocate_tensors()
    inputs = interpreter.get_input_details()
    assert len(inputs) == 1, name
    if inputs[0]['dtype'] != np.float32:
        print(name, 'int8: no reference', op_names(content))
        return
    x = (make_input(inputs[0]['shape']) if make_input
         else (generator or rng).uniform(-1, 1, inputs[0]['shape']).astype(np.float32))
    interpreter.set_tensor(inputs[0]['index'], x)
    interpreter.invoke()
    if not make_input:
        np.save(os.path.join(ROOT, name + '-input.npy'), x)
    for i, output in enumerate(interpreter.get_output_details()):
        y = interpreter.get_tensor(output['index'])
        np.save(os.path.join(ROOT, f'{name}-output{i}.npy'), y[:, ::step, ::step] if step > 1 else y)
    print(name, len(content), 'bytes', op_names(content))


def quantized_reference(name, content):
    """Writes an int8 model, its seeded input (integers for an int8 input, as float32), LiteRT's
    outputs (as float32) and each output's quantum: the scale of the int8 tensor it is, or of the
    one DEQUANTIZE reads."""
    with open(os.path.join(ROOT, name + '.tflite'), 'wb') as file:
        file.write(content)
    interpreter = Interpreter(model_content=content)
    interpreter.allocate_tensors()
    (given,) = interpreter.get_input_details()
    if given['dtype'] == np.int8:
        x = rng8.integers(-48, 48, given["shape"]).astype(np.int8)
    elif given['dtype'] == np.uint8:
        x = rng8.integers(80, 176, given["shape"]).astype(np.uint8)
    else:
        x = rng8.uniform(-1, 1, given['shape']).astype(np.float32)
    interpreter.set_tensor(given['index'], x)
    interpreter.invoke()
    np.save(os.path.join(ROOT, name + '-input.npy'), x.astype(np.float32))
    ops = interpreter._get_ops_details()
    quanta = []
    for i, output in enumerate(interpreter.get_output_details()):
        np.save(os.path.join(ROOT, f'{name}-output{i}.npy'), interpreter.get_tensor(output['index']).astype(np.float32))
        producer = next(op for op in ops if output['index'] in op['outputs'])
        quantized = producer['inputs'][0] if producer['op_name'] == 'DEQUANTIZE' else output['index']
        quanta.append(interpreter._get_tensor_details(quantized, 0)['quantization'][0])
    np.save(os.path.join(ROOT, name + '-quanta.npy'), np.array(quanta, dtype=np.float32))
    print(name, len(content), 'bytes', op_names(content), 'quanta', quanta)


def int8_net(x):
    a = tf.nn.relu(tf.nn.conv2d(x, weights(3, 3, 3, 8, generator=rng8), 2, 'SAME') + weights(8, generator=rng8))
    b = tf.nn.relu6(tf.nn.depthwise_conv2d(a, weights(3, 3, 8, 1, generator=rng8), [1, 1, 1, 1], 'SAME'))
    c = tf.pad(b, [[0, 0], [1, 1], [1, 1], [0, 0]])
    d = tf.nn.max_pool2d(c, 3, 2, 'VALID')
    e = tf.nn.avg_pool2d(c, 3, 2, 'VALID')
    f = tf.concat([d + e, d * e], axis=3)
    g = tf.reduce_mean(f, axis=[1, 2], keepdims=True)
    h = tf.reshape(f * tf.sigmoid(g), [1, -1])
    logits = tf.matmul(h, weights(3 * 3 * 16, 10, scale=0.1, generator=rng8)) + weights(10, generator=rng8)
    return tf.nn.softmax(logits), tf.sigmoid(logits)


def int8_io(x):
    a = tf.nn.relu(tf.nn.conv2d(x, weights(3, 3, 2, 6, generator=rng8), 1, 'SAME') + weights(6, generator=rng8))
    b = tf.nn.conv2d(a, weights(3, 3, 6, 4, generator=rng8), 1, 'SAME')
    c = tf.nn.avg_pool2d(b, 2, 2, 'VALID')
    return tf.matmul(tf.reshape(c, [1, -1]), weights(3 * 3 * 4, 5, scale=0.2, generator=rng8)), b


def uint8_io(x):
    a = tf.nn.relu(tf.nn.conv2d(x, weights(3, 3, 2, 4, generator=rng8), 1, 'SAME') + weights(4, generator=rng8))
    b = tf.nn.max_pool2d(a, 2, 2, 'VALID')
    return tf.matmul(tf.reshape(b, [1, -1]), weights(3 * 3 * 4, 3, scale=0.2, generator=rng8))


def int8_models():
    quantized_reference('int8_net', convert(tf.function(int8_net), [1, 12, 12, 3], int8=True, io_type=tf.float32,
                                            generator=rng8))
    quantized_reference('int8_io', convert(tf.function(int8_io), [1, 6, 6, 2], int8=True, generator=rng8))
    quantized_reference('uint8_io', convert(tf.function(uint8_io), [1, 6, 6, 2], int8=True, io_type=tf.uint8,
                                            generator=rng8))
    # int8_io with its input declared INT16 (as 16x8 quantization's activations are), which LayerKit refuses.
    hostile('int16_input.tflite', 'int8_io.tflite',
            lambda m: setattr(m.subgraphs[0].tensors[m.subgraphs[0].inputs[0]], 'type', 7))


def conv_net(x):
    a = tf.nn.relu(tf.nn.conv2d(x, weights(3, 3, 3, 8), 2, 'SAME') + weights(8))
    b = tf.nn.relu6(tf.nn.depthwise_conv2d(a, weights(3, 3, 8, 1), [1, 1, 1, 1], 'SAME') + weights(8))
    c = tf.nn.conv2d(tf.pad(b, [[0, 0], [1, 2], [2, 1], [0, 0]]), weights(3, 3, 8, 8), 1, 'VALID', dilations=2)
    d = tf.nn.max_pool2d(a, 3, 2, 'SAME')
    e = tf.nn.avg_pool2d(a, 3, 2, 'SAME')
    f = tf.concat([(d + e) * weights(8), d - e], axis=3)
    g = tf.reduce_mean(f, axis=[1, 2], keepdims=True)
    h = tf.reshape(f * g, [1, -1])
    return tf.nn.softmax(tf.matmul(h, weights(4 * 4 * 16, 10, scale=0.05)) + weights(10)), c


# Keras's PReLU, built once outside the traced function (tf.function makes no variables).
PRELU = tf.keras.layers.PReLU(alpha_initializer=tf.keras.initializers.Constant([[[0.2, -0.1, 0.5]]]),
                              shared_axes=[1, 2])
PRELU.build((1, 5, 6, 3))


def activations(x):
    # The converter matches y * relu6(y + 3) * (1/6) as HARD_SWISH.
    y = x * 4
    return tf.concat([tf.tanh(x), tf.sigmoid(x * 3), y * tf.nn.relu6(y + 3) * (1. / 6.), tf.nn.leaky_relu(x, 0.1),
                      PRELU(x * 2), tf.nn.relu6(x), tf.nn.relu6(x * 8), tf.clip_by_value(x * 2, -1, 1),
                      tf.nn.relu(x), -x], axis=3)


def resize_slice(x):
    up = tf.image.resize(x, [11, 13], 'bilinear')
    nearest = tf.compat.v1.image.resize_nearest_neighbor(x, [12, 10])
    space = tf.nn.depth_to_space(tf.concat([x, x * 2, x * 3, x * 4], axis=3), 2)
    sliced = space[:, 1:9:2, ::3, 2]
    deconv = tf.nn.conv2d_transpose(x, weights(3, 3, 5, 4), [1, 12, 12, 5], 2, 'SAME')
    return (tf.reshape(up, [1, 11, -1]), nearest, sliced, deconv, tf.reduce_mean(space, axis=[1]))


def layout_ops(x):
    ellipsis = x[..., 1:3]
    new_axes = x[:, tf.newaxis, 2, ::2, tf.newaxis]
    padded = tf.pad(x, [[0, 0], [1, 2], [0, 1], [0, 0]], constant_values=0.5)
    divided = x / (tf.abs(x) + weights(4, generator=rng45) ** 2 + 0.5)
    grouped = tf.nn.conv2d(x, weights(3, 3, 2, 6, generator=rng45), 1, 'SAME')
    return ellipsis, new_axes, padded, divided, grouped


def math_ops(x):
    positive = tf.abs(x) + 0.25
    return tf.concat([tf.abs(x), tf.exp(x), tf.math.log(positive), tf.sqrt(positive), tf.math.rsqrt(positive),
                      tf.sin(x * 3), tf.cos(x * 3), tf.nn.elu(x * 2), tf.square(x), tf.maximum(x, 0.2),
                      tf.minimum(x, weights(3, generator=rng45)), tf.math.squared_difference(x, 0.3)],
                     axis=3)


def sparse_fc(x):
    w = rng.normal(0, 0.3, (64, 32)).astype(np.float32)
    w[rng.uniform(size=w.shape) < 0.85] = 0
    return tf.matmul(x, tf.constant(w)) + weights(32)


def rewritten(source, change):
    """`source`'s bytes with its object tree changed by `change`, re-serialized by TensorFlow's
    own schema bindings: a well-formed FlatBuffer."""
    from tensorflow.lite.python import schema_py_generated as schema
    import flatbuffers
    with open(os.path.join(ROOT, source), 'rb') as file:
        model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(file.read(), 0))
    change(model)
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b'TFL3')
    return bytes(builder.Output())


def hostile(name, source, change):
    """Writes `source` rewritten by `change`: a well-formed FlatBuffer whose content is wrong."""
    with open(os.path.join(ROOT, name), 'wb') as file:
        file.write(rewritten(source, change))


def sparse_slice_specs(model):
    """layout_ops's two STRIDED_SLICEs as TensorFlow's sparse specs, which its converter makes
    dense: x[..., 1:3] with an ellipsis, and x[:, newaxis, 2, ::2, newaxis] on the input itself
    (the converter reshapes it first), new axes and a shrunk one in the spec."""
    from tensorflow.lite.python import schema_py_generated as schema
    graph = model.subgraphs[0]

    def spec(values):
        buffer = schema.BufferT()
        buffer.data = np.array(values, dtype=np.int32).tobytes()
        model.buffers.append(buffer)
        tensor = schema.TensorT()
        tensor.shape, tensor.type, tensor.buffer = [len(values)], 2, len(model.buffers) - 1
        tensor.name = f'spec{len(graph.tensors)}'.encode()
        graph.tensors.append(tensor)
        return len(graph.tensors) - 1

    codes = [max(c.deprecatedBuiltinCode, c.builtinCode) for c in model.operatorCodes]
    ellipsis, new_axes = [op for op in graph.operators if codes[op.opcodeIndex] == 45]
    ellipsis.inputs = [ellipsis.inputs[0], spec([0, 1]), spec([0, 3]), spec([1, 1])]
    options = ellipsis.builtinOptions
    options.beginMask, options.endMask, options.ellipsisMask = 0, 0, 1
    new_axes.inputs = [graph.inputs[0], spec([0, 0, 2, 0, 0]), spec([0, 0, 3, 0, 0]), spec([1, 1, 1, 2, 1])]
    options = new_axes.builtinOptions
    options.beginMask, options.endMask, options.newAxisMask, options.shrinkAxisMask = 9, 9, 18, 4


def set_input(op, position, tensor):
    op.inputs = [tensor if i == position else index for i, index in enumerate(op.inputs)]


def first_op(model, code):
    codes = [max(c.deprecatedBuiltinCode, c.builtinCode) for c in model.operatorCodes]
    return next(op for op in model.subgraphs[0].operators if codes[op.opcodeIndex] == code)


def mediapipe_models(folder):
    wheel = sorted(glob.glob(os.path.join(folder, 'mediapipe-0.10.21-*.whl')))[0]
    with zipfile.ZipFile(wheel) as archive:
        for name, digest in MEDIAPIPE.items():
            member = next(n for n in archive.namelist() if n.endswith('/' + name))
            content = archive.read(member)
            actual = hashlib.sha256(content).hexdigest()
            print(name, actual)
            assert actual == digest, f'{name}: sha256 {actual}, expected {digest}'
            selfie = name.startswith('selfie')
            reference(name[:-len('.tflite')], content, make_input=selfie_input if selfie else None, step=4 if selfie else 1)


def main():
    os.makedirs(ROOT, exist_ok=True)
    if sys.argv[1:] == ['--int8-only']:
        return int8_models()
    if sys.argv[1:] == ['--layout-only']:
        return layout_models()
    tf.random.set_seed(26)
    reference('conv_net', convert(tf.function(conv_net), [1, 15, 15, 3]))
    reference('conv_net_fp16', convert(tf.function(conv_net), [1, 15, 15, 3], fp16=True))
    reference('activations', convert(tf.function(activations), [1, 5, 6, 3]))
    reference('resize_slice', convert(tf.function(resize_slice), [1, 6, 6, 4]))
    reference('sparse_fc', convert(tf.function(sparse_fc), [2, 64], sparse=True))
    reference('unsupported_floor', convert(tf.function(lambda x: tf.floor(x * 3)), [1, 4]))
    # An operator naming tensor 999 of a few dozen; a convolution whose weights are left out (-1).
    hostile('hostile_tensor_index.tflite', 'activations.tflite',
            lambda m: set_input(m.subgraphs[0].operators[0], 0, 999))
    hostile('hostile_missing_weights.tflite', 'conv_net.tflite', lambda m: set_input(first_op(m, 3), 1, -1))
    mediapipe_models(sys.argv[1] if len(sys.argv) > 1 else '/tmp/mp')
    int8_models()
    layout_models()


def layout_models():
    reference('layout_ops', convert(tf.function(layout_ops), [1, 5, 6, 4]), generator=rng45)
    reference('math_ops', convert(tf.function(math_ops), [1, 4, 5, 3]), generator=rng45)
    reference('slice_masks', rewritten('layout_ops.tflite', sparse_slice_specs), generator=rng45)


if __name__ == '__main__':
    main()
