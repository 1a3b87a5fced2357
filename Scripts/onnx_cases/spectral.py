#!/usr/bin/env python3
"""ONNX reference cases for LayerKit's signal family (folder `spectral`): DFT
along a middle axis with dft_length padding and cutting (lengths that are
not powers of two), inverse and one-sided; STFT of a complex signal with
a window; the windows in float64; MelWeightMatrix of other edges. The DFT
cases' expected outputs are numpy.fft's in float64, checked against
onnxruntime's first: onnxruntime's float32 twiddles leave 3e-6 where the
exact value is 0, past ONNX's atol of 1e-7.

Run from the repository root (see common.py for the versions). Seeded, so
reruns write the same bytes; every input is fp16-exact.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, reset, rng, save_case, tensor_info, typed_info as info  # noqa: E402

FAMILY = 'spectral'
reset(FAMILY)
random = rng(20261204)


def data(shape, low=-2, high=2):
    return random.uniform(low, high, size=shape).astype(np.float16).astype(np.float32)


def scalar(name, value):
    return numpy_helper.from_array(np.array(value, dtype=np.int64), name)


def dft_case(name, x, out_shape, opset, transform, length=None, axis_input=None, **attrs):
    """A DFT of run-time x; dft_length and (opset 20) axis constants; its
    output numpy's `transform` of x as complex float64 values."""
    names, initializers = ['x', '', ''], []
    if length is not None:
        names[1] = 'length'
        initializers.append(scalar('length', length))
    if axis_input is not None:
        names[2] = 'axis'
        initializers.append(scalar('axis', axis_input))
    while names[-1] == '':
        names.pop()
    node = helper.make_node('DFT', names, ['y'], name=name, **attrs)
    ort_result = save_case(FAMILY, name, [node], [tensor_info('x', x)], [tensor_info('y', out_shape)],
                           initializers=initializers, opset=opset, input_data={'x': x})[0]
    values = x[..., 0].astype(np.float64) + (1j * x[..., 1].astype(np.float64) if x.shape[-1] == 2 else 0)
    result = transform(values)
    expected = np.stack([result.real, result.imag], axis=-1).astype(np.float32)
    assert np.allclose(expected, ort_result, rtol=1e-3, atol=1e-4), name
    with open(os.path.join(ROOT, FAMILY, name, 'test_data_set_0', 'output_0.pb'), 'wb') as f:
        f.write(numpy_helper.from_array(expected, 'y').SerializeToString())


# Complex, along axis 1 of 4, padded from 5 to 7 points (Bluestein's path).
dft_case('complex_middle_axis_padded', data((2, 5, 3, 2)), [2, 7, 3, 2], 20, lambda c: np.fft.fft(c, n=7, axis=1),
         length=7, axis_input=1)
# Inverse of 6 complex points cut to 4, along a negative axis.
dft_case('inverse_cut_negative_axis', data((3, 6, 2)), [3, 4, 2], 20, lambda c: np.fft.ifft(c, n=4, axis=1), length=4,
         axis_input=-2, inverse=1)
# Opset 17's axis attribute, a real signal of 9 points, one-sided (5 frequencies).
dft_case('opset17_real_onesided_odd', data((2, 3, 9, 1)), [2, 3, 5, 2], 17, lambda c: np.fft.fft(c, axis=2)[:, :, :5],
         axis=2, onesided=1)
# A power of two (radix 2) and its default length.
dft_case('real_power_of_two', data((1, 16, 1)), [1, 16, 2], 20, lambda c: np.fft.fft(c, axis=1))

# STFT of a complex signal, a Hann window of 6, every 3 samples, both sides.
signal, window = data((2, 20, 2)), np.hanning(8)[1:7].astype(np.float16).astype(np.float32)
node = helper.make_node('STFT', ['signal', 'step', 'window'], ['y'], name='stft', onesided=0)
save_case(FAMILY, 'stft_complex_windowed', [node], [tensor_info('signal', signal), tensor_info('window', window)],
          [tensor_info('y', [2, 5, 6, 2])], initializers=[scalar('step', 3)], opset=17,
          input_data={'signal': signal, 'window': window})

# The windows in float64, periodic and symmetric, of odd sizes.
for op, periodic in [('HannWindow', 0), ('HammingWindow', 1), ('BlackmanWindow', 0)]:
    name = f'{op.lower()}_float64_{"periodic" if periodic else "symmetric"}'
    size = np.array(11, dtype=np.int32)
    node = helper.make_node(op, ['size'], ['y'], name=name, periodic=periodic, output_datatype=TensorProto.DOUBLE)
    save_case(FAMILY, name, [node], [info('size', size)], [tensor_info('y', [11], TensorProto.DOUBLE)],
              opset=17, input_data={'size': size})

# MelWeightMatrix: 6 mel bins of a 64-point DFT at 8 kHz, 125 Hz to 3.5 kHz.
inputs = {'bins': np.array(6, dtype=np.int64), 'length': np.array(64, dtype=np.int64),
          'rate': np.array(8000, dtype=np.int64), 'lower': np.array(125, dtype=np.float32),
          'upper': np.array(3500, dtype=np.float32)}
node = helper.make_node('MelWeightMatrix', list(inputs), ['y'], name='mel')
save_case(FAMILY, 'mel_weight_matrix_8khz', [node], [info(k, v) for k, v in inputs.items()],
          [tensor_info('y', [33, 6])], opset=17, input_data=inputs)
