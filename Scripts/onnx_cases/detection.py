#!/usr/bin/env python3
"""ONNX reference cases for LayerKit's detection family (folder `detection`):
NonMaxSuppression over two batches and three classes with flipped corners,
tied scores and both box formats; RoiAlign's three coordinate rules and
both modes on regions reaching past the image; DeformConv with groups,
offset groups, strides, dilations, pads, a mask and a bias, its offsets
reaching outside the input.

Run from the repository root with `python -P` (this folder's math.py would
hide Python's own module; see common.py for the versions). Seeded, so
reruns write the same bytes; every input is fp16-exact.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import reset, rng, save_case, tensor_info, typed_info as info  # noqa: E402

FAMILY = 'detection'
reset(FAMILY)
random = rng(20261205)


def data(shape, low=-2, high=2):
    return random.uniform(low, high, size=shape).astype(np.float16).astype(np.float32)


def nms_case(name, boxes, scores, limit, iou, least, **attrs):
    constants = [numpy_helper.from_array(np.array([limit], dtype=np.int64), 'limit'),
                 numpy_helper.from_array(np.array([iou], dtype=np.float32), 'iou'),
                 numpy_helper.from_array(np.array([least], dtype=np.float32), 'least')]
    node = helper.make_node('NonMaxSuppression', ['boxes', 'scores', 'limit', 'iou', 'least'], ['y'], name=name, **attrs)
    save_case(FAMILY, name, [node], [info('boxes', boxes), info('scores', scores)],
              [tensor_info('y', ['selected', 3], TensorProto.INT64)], initializers=constants, opset=11,
              input_data={'boxes': boxes, 'scores': scores})


# 12 boxes of corners in either order, scores in steps of 1/8 (ties), two batches, three classes.
corners = data((2, 12, 4), 0, 8)
scores = (random.integers(0, 8, size=(2, 3, 12)) / 8).astype(np.float32)
nms_case('nms_corners_ties', corners, scores, 3, 0.25, 0.2)
nms_case('nms_center_point_box', np.abs(corners), scores, 5, 0.1, 0.0, center_point_box=1)
nms_case('nms_limit_past_the_boxes', corners, scores, 1000, 0.5, -1.0)


def roi_case(name, opset, **attrs):
    x = data((2, 3, 7, 9))
    rois = np.array([[0, 0, 8, 6], [-3, -2, 4.5, 3.5], [2.25, 1.5, 12, 9], [5, 5, 5.5, 5.25]], dtype=np.float32)
    batches = np.array([0, 1, 1, 0], dtype=np.int64)
    node = helper.make_node('RoiAlign', ['x', 'rois', 'batches'], ['y'], name=name, output_height=3, output_width=2,
                            **attrs)
    save_case(FAMILY, name, [node], [info('x', x), info('rois', rois), info('batches', batches)],
              [tensor_info('y', [4, 3, 3, 2])], opset=opset, input_data={'x': x, 'rois': rois, 'batches': batches})


roi_case('roi_align_half_pixel_avg_adaptive', 16, sampling_ratio=0, spatial_scale=0.75)
roi_case('roi_align_output_half_pixel_max', 16, coordinate_transformation_mode='output_half_pixel', mode='max',
         sampling_ratio=2)
roi_case('roi_align_opset10', 10, sampling_ratio=3, spatial_scale=0.5)

# DeformConv: 4 input channels in 2 groups and 2 offset groups, 6 outputs, a 2x3 kernel.
x, w = data((2, 4, 7, 8)), data((6, 2, 2, 3), -1, 1)
out = [2, 6, 4, 4]
offset = data((2, 2 * 6 * 2, 4, 4), -3, 3)
mask, bias = data((2, 2 * 6, 4, 4), 0, 1), data((6,))
node = helper.make_node('DeformConv', ['x', 'w', 'offset', 'b', 'mask'], ['y'], name='deform', group=2, offset_group=2,
                        strides=[2, 2], dilations=[2, 1], pads=[1, 0, 2, 1])
save_case(FAMILY, 'deform_conv_groups_mask_bias', [node], [info(k, v) for k, v in
                                                            [('x', x), ('w', w), ('offset', offset), ('b', bias),
                                                             ('mask', mask)]],
          [tensor_info('y', out)], opset=19,
          input_data={'x': x, 'w': w, 'offset': offset, 'b': bias, 'mask': mask})
