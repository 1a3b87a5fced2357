"""Reference cases for the layout family: Transpose, the channel-shuffle and
pixel-shuffle patterns (Reshape -> Transpose -> Reshape), Pad, Resize and
Upsample, each mode and attribute LayerKit implements, with odd channel
counts, batch > 1 and negative values. Expected outputs come from
onnxruntime (see common.py). Run: /work/venv/bin/python Scripts/onnx_cases/layout.py
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from common import reset, rng, save_case, tensor_info

FAMILY = 'layout'
R = rng(7)


def data(*shape):
    return (R.standard_normal(shape) * 3).astype(np.float32)


def ints(name, values):
    return numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)


def floats(name, values):
    return numpy_helper.from_array(np.asarray(values, dtype=np.float32), name)


def one(name, op, x, out_shape, attrs=None, extra_inputs=(), initializers=(), opset=17):
    """One node from input x (and constant extra inputs) to y."""
    node = helper.make_node(op, ['x'] + list(extra_inputs), ['y'], name=name, **(attrs or {}))
    save_case(FAMILY, name, [node], [tensor_info('x', x)], [tensor_info('y', out_shape)],
              initializers=list(initializers), opset=opset, input_data={'x': x})


def transpose_cases():
    one('transpose_default_rank3', 'Transpose', data(2, 3, 5), (5, 3, 2))
    one('transpose_nchw_to_nhwc', 'Transpose', data(2, 5, 3, 4), (2, 3, 4, 5), {'perm': [0, 2, 3, 1]})
    one('transpose_batch_channel', 'Transpose', data(3, 5, 2, 3), (5, 3, 3, 2), {'perm': [1, 0, 3, 2]})
    one('transpose_4d_3120', 'Transpose', data(2, 7, 3, 5), (5, 7, 3, 2), {'perm': [3, 1, 2, 0]})
    one('transpose_rank2', 'Transpose', data(5, 7), (7, 5), {'perm': [1, 0]})
    one('transpose_rank1', 'Transpose', data(7), (7,), {'perm': [0]})
    one('transpose_rank3_021', 'Transpose', data(2, 6, 5), (2, 5, 6), {'perm': [0, 2, 1]})
    one('transpose_rank5', 'Transpose', data(2, 3, 2, 3, 2), (2, 3, 3, 2, 2), {'perm': [4, 1, 3, 0, 2]})
    one('transpose_rank6', 'Transpose', data(2, 1, 3, 2, 2, 3), (3, 2, 2, 1, 3, 2), {'perm': [5, 4, 0, 1, 2, 3]})


def shuffle_case(name, shape, groups, relu=False):
    n, c, h, w = shape
    x = data(*shape)
    nodes = []
    source = 'x'
    if relu:
        nodes.append(helper.make_node('Relu', ['x'], ['r'], name='relu'))
        source = 'r'
    nodes += [
        helper.make_node('Reshape', [source, 'grouped_shape'], ['grouped'], name='reshape_in'),
        helper.make_node('Transpose', ['grouped'], ['swapped'], name='shuffle', perm=[0, 2, 1, 3, 4]),
        helper.make_node('Reshape', ['swapped', 'flat_shape'], ['shuffled'], name='reshape_out'),
        helper.make_node('Neg', ['shuffled'], ['y'], name='after'),
    ]
    save_case(FAMILY, name, nodes, [tensor_info('x', x)], [tensor_info('y', shape)],
              initializers=[ints('grouped_shape', [n, groups, c // groups, h, w]), ints('flat_shape', [n, c, h, w])],
              opset=13, input_data={'x': x})


def shufflenet_block_case():
    # A ShuffleNet unit: grouped 1x1 Conv, Relu, channel shuffle, depthwise 3x3 Conv, residual Add.
    # Values stay near 1, so the fp16 stores between GPU steps stay within the parity rule.
    n, c, h, w, g = 2, 12, 5, 6, 3
    x = data(n, c, h, w) / 4
    nodes = [
        helper.make_node('Conv', ['x', 'w1', 'b1'], ['c1'], name='conv_grouped', group=g),
        helper.make_node('Relu', ['c1'], ['r1'], name='relu'),
        helper.make_node('Reshape', ['r1', 'grouped_shape'], ['grouped'], name='reshape_in'),
        helper.make_node('Transpose', ['grouped'], ['swapped'], name='shuffle', perm=[0, 2, 1, 3, 4]),
        helper.make_node('Reshape', ['swapped', 'flat_shape'], ['shuffled'], name='reshape_out'),
        helper.make_node('Conv', ['shuffled', 'w2'], ['c2'], name='conv_depthwise', group=c, pads=[1, 1, 1, 1]),
        helper.make_node('Add', ['c2', 'x'], ['y'], name='residual'),
    ]
    init = [floats('w1', (R.standard_normal((c, c // g, 1, 1)) * 0.25).astype(np.float32)),
            floats('b1', (R.standard_normal(c) * 0.1).astype(np.float32)),
            floats('w2', (R.standard_normal((c, 1, 3, 3)) * 0.2).astype(np.float32)),
            ints('grouped_shape', [n, g, c // g, h, w]), ints('flat_shape', [n, c, h, w])]
    save_case(FAMILY, 'shufflenet_block', nodes, [tensor_info('x', x)], [tensor_info('y', (n, c, h, w))],
              initializers=init, opset=13, input_data={'x': x})


def pixel_shuffle_case():
    # Depth to space by 2 (torch's PixelShuffle as the TorchScript exporter writes it).
    x = data(1, 8, 3, 4)
    nodes = [
        helper.make_node('Reshape', ['x', 's6'], ['a'], name='reshape_in'),
        helper.make_node('Transpose', ['a'], ['b'], name='permute', perm=[0, 1, 4, 2, 5, 3]),
        helper.make_node('Reshape', ['b', 's4'], ['y'], name='reshape_out'),
    ]
    save_case(FAMILY, 'pixel_shuffle', nodes, [tensor_info('x', x)], [tensor_info('y', (1, 2, 6, 8))],
              initializers=[ints('s6', [1, 2, 2, 2, 3, 4]), ints('s4', [1, 2, 6, 8])], opset=13, input_data={'x': x})


def pad_case(name, x, pads, out_shape, mode=None, value=None, axes=None, opset=13):
    attrs = {'mode': mode} if mode else {}
    inputs = ['pads']
    init = [ints('pads', pads)]
    if value is not None or axes is not None:
        inputs.append('value' if value is not None else '')
        if value is not None:
            init.append(floats('value', value))
    if axes is not None:
        inputs.append('axes')
        init.append(ints('axes', axes))
    one(name, 'Pad', x, out_shape, attrs, inputs, init, opset=opset)


def pad_cases():
    pad_case('pad_constant_value', data(2, 3, 4, 5), [0, 0, 1, 2, 0, 0, 2, 1], (2, 3, 7, 8), value=1.5)
    pad_case('pad_constant_default', data(1, 5, 3, 3), [0, 0, 2, 0, 0, 0, 0, 3], (1, 5, 5, 6))
    pad_case('pad_reflect', data(2, 5, 4, 5), [0, 0, 2, 1, 0, 0, 1, 3], (2, 5, 7, 9), mode='reflect')
    pad_case('pad_edge', data(1, 3, 4, 5), [0, 0, 3, 2, 0, 0, 1, 4], (1, 3, 8, 11), mode='edge')
    pad_case('pad_wrap', data(1, 3, 4, 5), [0, 0, 2, 3, 0, 0, 1, 2], (1, 3, 7, 10), mode='wrap', opset=19)
    pad_case('pad_negative_crop', data(2, 3, 5, 6), [0, 0, -1, 2, 0, 0, 1, -2], (2, 3, 5, 6), value=-2.0)
    pad_case('pad_negative_reflect', data(1, 3, 5, 6), [0, 0, -1, 2, 0, 0, 2, -2], (1, 3, 6, 6), mode='reflect')
    pad_case('pad_negative_edge', data(1, 3, 5, 6), [0, 0, 2, -2, 0, 0, -1, 3], (1, 3, 6, 7), mode='edge')
    pad_case('pad_negative_wrap', data(1, 3, 5, 6), [0, 0, -1, 3, 0, 0, 2, -2], (1, 3, 6, 7), mode='wrap', opset=19)
    pad_case('pad_channels', data(2, 3, 2, 3), [0, 1, 0, 0, 0, 2, 1, 0], (2, 6, 3, 3), value=0.5)
    pad_case('pad_batch_edge', data(2, 3, 2, 3), [1, 0, 0, 0, 0, 0, 0, 0], (3, 3, 2, 3), mode='edge')
    pad_case('pad_rank3_reflect', data(2, 3, 6), [0, 0, 2, 0, 0, 3], (2, 3, 11), mode='reflect')
    pad_case('pad_rank2', data(3, 5), [1, 2, 0, 1], (4, 8), value=3.0)
    pad_case('pad_rank5', data(1, 2, 2, 3, 2), [0, 0, 1, 0, 1, 0, 0, 0, 1, 1], (1, 2, 3, 4, 4), value=-1.0)
    pad_case('pad_axes', data(1, 3, 4, 5), [1, 2, 3, 1], (1, 3, 8, 8), mode='edge', axes=[-2, 3], opset=18)
    pad_case('pad_axes_value', data(2, 3, 4, 5), [2, 1], (2, 3, 4, 8), value=0.25, axes=[3], opset=18)
    # Pad-2 (up to opset 10): pads and value are attributes.
    one('pad_opset10_attributes', 'Pad', data(1, 3, 3, 4), (1, 3, 5, 7),
        {'pads': [0, 0, 1, 2, 0, 0, 1, 1], 'value': 2.5}, opset=10)
    one('pad_opset10_reflect', 'Pad', data(1, 3, 3, 4), (1, 3, 5, 7),
        {'pads': [0, 0, 1, 2, 0, 0, 1, 1], 'mode': 'reflect'}, opset=10)


def resize_case(name, x, out_shape, attrs, scales=None, sizes=None, roi=None, opset=19, axes=None):
    inputs, init = [], []
    if opset < 13:  # Resize-11: roi and scales are required; an empty tensor stands for none
        roi = [] if roi is None else roi
        scales = [] if scales is None else scales
    inputs.append('roi' if roi is not None else '')
    if roi is not None:
        init.append(floats('roi', roi))
    inputs.append('scales' if scales is not None else '')
    if scales is not None:
        init.append(floats('scales', scales))
    if sizes is not None:
        inputs.append('sizes')
        init.append(ints('sizes', sizes))
    if axes is not None:
        attrs = dict(attrs, axes=axes)
    while inputs and inputs[-1] == '':
        inputs.pop()
    one(name, 'Resize', x, out_shape, attrs, inputs, init, opset=opset)


def resize_cases():
    x = data(2, 3, 4, 5)
    # What torch 2.13's exporter writes for nn.Upsample / F.interpolate.
    torch_nearest = {'mode': 'nearest', 'coordinate_transformation_mode': 'asymmetric', 'nearest_mode': 'floor',
                     'cubic_coeff_a': -0.75}
    resize_case('resize_torch_nearest_scales', x, (2, 3, 8, 10), torch_nearest, scales=[1, 1, 2, 2], opset=17)
    resize_case('resize_torch_nearest_sizes', x, (2, 3, 7, 9), torch_nearest, sizes=[2, 3, 7, 9], opset=17)
    resize_case('resize_torch_bilinear', x, (2, 3, 8, 10),
                {'mode': 'linear', 'coordinate_transformation_mode': 'half_pixel', 'nearest_mode': 'floor'},
                scales=[1, 1, 2, 2], opset=17)
    resize_case('resize_torch_bilinear_align_corners', x, (2, 3, 8, 10),
                {'mode': 'linear', 'coordinate_transformation_mode': 'align_corners', 'nearest_mode': 'floor'},
                scales=[1, 1, 2, 2], opset=17)
    resize_case('resize_torch_bilinear_pytorch_half_pixel', data(1, 5, 4, 1), (1, 5, 7, 1),
                {'mode': 'linear', 'coordinate_transformation_mode': 'pytorch_half_pixel'}, sizes=[1, 5, 7, 1],
                opset=11)
    y = data(1, 5, 6, 7)
    for mode in ['round_prefer_floor', 'round_prefer_ceil', 'floor', 'ceil']:
        resize_case(f'resize_nearest_{mode}', y, (1, 5, 9, 4), {'mode': 'nearest', 'nearest_mode': mode},
                    scales=[1, 1, 1.5, 0.6])
    resize_case('resize_nearest_align_corners', y, (1, 5, 11, 3),
                {'mode': 'nearest', 'coordinate_transformation_mode': 'align_corners'}, sizes=[1, 5, 11, 3])
    resize_case('resize_nearest_tf_half_pixel', y, (1, 5, 9, 4),
                {'mode': 'nearest', 'coordinate_transformation_mode': 'tf_half_pixel_for_nn'},
                scales=[1, 1, 1.5, 0.6], opset=11)
    resize_case('resize_linear_downsample', y, (1, 5, 3, 4), {'mode': 'linear'}, scales=[1, 1, 0.5, 0.6])
    resize_case('resize_linear_asymmetric', y, (1, 5, 9, 11),
                {'mode': 'linear', 'coordinate_transformation_mode': 'asymmetric'}, sizes=[1, 5, 9, 11])
    resize_case('resize_linear_half_pixel_symmetric', y, (1, 5, 9, 4),
                {'mode': 'linear', 'coordinate_transformation_mode': 'half_pixel_symmetric'},
                scales=[1, 1, 1.5, 0.6])
    resize_case('resize_linear_tf_crop_and_resize', y, (1, 5, 5, 6),
                {'mode': 'linear', 'coordinate_transformation_mode': 'tf_crop_and_resize',
                 'extrapolation_value': 7.5}, sizes=[1, 5, 5, 6], roi=[0, 0, -0.2, 0.3, 1, 1, 0.9, 1.3])
    resize_case('resize_cubic', y, (1, 5, 9, 11), {'mode': 'cubic'}, sizes=[1, 5, 9, 11])
    resize_case('resize_cubic_exclude_outside', y, (1, 5, 4, 10),
                {'mode': 'cubic', 'cubic_coeff_a': -0.5, 'exclude_outside': 1,
                 'coordinate_transformation_mode': 'align_corners'}, scales=[1, 1, 0.7, 1.5])
    resize_case('resize_cubic_tf_crop_and_resize', y, (1, 5, 5, 6),
                {'mode': 'cubic', 'coordinate_transformation_mode': 'tf_crop_and_resize', 'extrapolation_value': -1.0},
                sizes=[1, 5, 5, 6], roi=[0, 0, 0.1, -0.1, 1, 1, 0.8, 1.2])
    resize_case('resize_axes_sizes', y, (1, 5, 8, 3), {'mode': 'linear'}, sizes=[8, 3], axes=[2, 3], opset=18)
    resize_case('resize_axes_scales', y, (1, 5, 12, 7), {'mode': 'nearest'}, scales=[2.0], axes=[-2], opset=18)
    resize_case('resize_not_larger', y, (1, 5, 6, 7), {'mode': 'linear', 'keep_aspect_ratio_policy': 'not_larger'},
                sizes=[10, 7], axes=[2, 3], opset=18)
    resize_case('resize_not_smaller', y, (1, 5, 10, 12),
                {'mode': 'nearest', 'keep_aspect_ratio_policy': 'not_smaller'}, sizes=[10, 7], axes=[2, 3], opset=18)
    resize_case('resize_nearest_channels', data(2, 3, 2, 3), (2, 6, 4, 3), {'mode': 'nearest'},
                scales=[1, 2, 2, 1])
    resize_case('resize_nearest_rank5', data(1, 2, 2, 3, 2), (1, 2, 4, 3, 6), {'mode': 'nearest'},
                scales=[1, 1, 2, 1, 3])
    resize_case('resize_nearest_rank3', data(2, 3, 5), (2, 3, 10), {'mode': 'nearest'}, scales=[1, 1, 2])
    resize_case('resize_linear_rank2', data(3, 5), (6, 8), {'mode': 'linear'}, sizes=[6, 8])
    resize_case('resize_linear_rank5', data(1, 2, 3, 2, 3), (1, 2, 5, 4, 4), {'mode': 'linear'},
                sizes=[1, 2, 5, 4, 4])
    # Resize-10: X and scales; asymmetric coordinates.
    one('resize_opset10_nearest', 'Resize', y, (1, 5, 9, 4), {'mode': 'nearest'}, ['scales'],
        [floats('scales', [1, 1, 1.5, 0.6])], opset=10)
    one('resize_opset10_linear', 'Resize', y, (1, 5, 12, 10), {'mode': 'linear'}, ['scales'],
        [floats('scales', [1, 1, 2, 1.5])], opset=10)


def upsample_cases():
    y = data(2, 3, 3, 4)
    one('upsample_opset9_nearest', 'Upsample', y, (2, 3, 6, 12), {'mode': 'nearest'}, ['scales'],
        [floats('scales', [1, 1, 2, 3])], opset=9)
    one('upsample_opset9_linear', 'Upsample', y, (2, 3, 7, 6), {'mode': 'linear'}, ['scales'],
        [floats('scales', [1, 1, 2.5, 1.5])], opset=9)
    one('upsample_opset7_nearest', 'Upsample', y, (2, 3, 6, 8), {'mode': 'nearest', 'scales': [1.0, 1.0, 2.0, 2.0]},
        opset=7)
    one('upsample_opset7_linear', 'Upsample', y, (2, 3, 6, 8), {'mode': 'linear', 'scales': [1.0, 1.0, 2.0, 2.0]},
        opset=7)


def resize_shrink_cases():
    """Issue 27: shrinks whose table maps each output index x to input x
    (to extent 1 by asymmetric, align_corners or pytorch_half_pixel; 64 to
    63 by floor) look like the identity. Its own generator, so the cases
    above keep their bytes."""
    r = rng(27)

    def shrink_data(*shape):
        return (r.standard_normal(shape) * 3).astype(np.float32)

    for mode in ('asymmetric', 'align_corners', 'pytorch_half_pixel'):
        resize_case(f'resize_shrink_to_1_{mode}', shrink_data(2, 3, 4, 5), (2, 3, 1, 1),
                    {'mode': 'linear', 'coordinate_transformation_mode': mode}, sizes=[2, 3, 1, 1])
    # ONNX's node test resize_downsample_sizes_linear_pytorch_half_pixel: one axis to 1, the other shrunk.
    resize_case('resize_shrink_pytorch_half_pixel_3x1', shrink_data(1, 1, 4, 4), (1, 1, 3, 1),
                {'mode': 'linear', 'coordinate_transformation_mode': 'pytorch_half_pixel'}, sizes=[1, 1, 3, 1])
    resize_case('resize_shrink_channels_to_1_nearest', shrink_data(2, 3, 4, 5), (2, 1, 4, 5),
                {'mode': 'nearest', 'coordinate_transformation_mode': 'asymmetric'}, sizes=[2, 1, 4, 5])
    resize_case('resize_shrink_64_to_63_floor', shrink_data(1, 2, 3, 64), (1, 2, 3, 63),
                {'mode': 'nearest', 'nearest_mode': 'floor'}, sizes=[1, 2, 3, 63])
    resize_case('resize_shrink_64_to_63_floor_rows', shrink_data(1, 2, 64, 3), (1, 2, 63, 6),
                {'mode': 'nearest', 'nearest_mode': 'floor'}, sizes=[1, 2, 63, 6])


def channel_pad_cases():
    """The channel axis padded in every mode, across slice boundaries (made
    last, so the seeded data of the cases above stays as it was)."""
    pad_case('pad_channels_reflect', data(1, 6, 3, 4), [0, 3, 0, 1, 0, 2, 1, 0], (1, 11, 4, 5), mode='reflect')
    pad_case('pad_channels_edge_batch', data(2, 5, 2, 3), [0, 2, 0, 0, 1, 3, 0, 0], (3, 10, 2, 3), mode='edge')
    pad_case('pad_channels_wrap', data(1, 5, 3, 2), [0, 4, 1, 0, 0, 1, 0, 1], (1, 10, 4, 3), mode='wrap', opset=19)
    pad_case('pad_channels_crop', data(2, 9, 3, 3), [0, -3, 1, 0, 0, 2, 0, -1], (2, 8, 4, 2), value=-0.75)
    # BlazeFace's residual widening (tf2onnx): zeros after the channels, 24 -> 28.
    pad_case('pad_channels_widen', data(1, 24, 4, 4), [0, 0, 0, 0, 0, 4, 0, 0], (1, 28, 4, 4))
    # A constant fp16 cannot hold: the pad stays on the CPU, which keeps it.
    pad_case('pad_huge_constant', data(1, 3, 2, 2), [0, 1, 1, 0, 0, 0, 0, 1], (1, 4, 3, 3), value=1e30)


if __name__ == '__main__':
    reset(FAMILY)
    transpose_cases()
    shuffle_case('channel_shuffle_g3', (2, 12, 5, 6), 3)
    shuffle_case('channel_shuffle_g2_c6', (1, 6, 4, 3), 2, relu=True)
    shufflenet_block_case()
    pixel_shuffle_case()
    pad_cases()
    resize_cases()
    upsample_cases()
    resize_shrink_cases()
    channel_pad_cases()
