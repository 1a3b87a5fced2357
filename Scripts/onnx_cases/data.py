#!/usr/bin/env python3
"""Reference cases (family `data`) for the ops that move elements: Split,
Slice, Squeeze, Unsqueeze, Gather, GatherElements, ScatterElements (and
Scatter-9), Expand, Tile, DepthToSpace and SpaceToDepth, in every opset form
LayerKit reads (attributes before inputs), with batch > 1, odd channel
counts, negative axes, indices and steps, INT64_MAX / INT64_MIN ends, ranks 1
to 5, and the exact shapes of the onnx backend tests test_operator_index
(Slice+Squeeze), test_operator_chunk (Split), test_GLU / test_GLU_dim
(Split+Sigmoid+Mul) and test_operator_repeat (Constant+Tile). The GLU cases
use opset 7 where the backend tests use 6: onnxruntime has no Mul-6.
Run: python3 Scripts/onnx_cases/data.py"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper
from common import reset, rng, save_case, tensor_info

FAMILY = 'data'
reset(FAMILY)
r = rng(7)
INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


def ints(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.array(values, dtype=dtype), name)


def case(name, node_list, x_shape, out_shapes, initializers=(), opset=17):
    """One input `x` of `x_shape`, outputs y0, y1, ... (or `y` for one)."""
    x = r.standard_normal(x_shape).astype(np.float32)
    outputs = [tensor_info(n, s) for n, s in out_shapes]
    save_case(FAMILY, name, node_list, [tensor_info('x', x)], outputs, initializers, opset=opset,
              input_data={'x': x})


# Split
case('split_attr_channels_opset11', [helper.make_node('Split', ['x'], ['y0', 'y1'], axis=1, split=[2, 3])],
     (2, 5, 3, 4), [('y0', (2, 2, 3, 4)), ('y1', (2, 3, 3, 4))], opset=11)
case('split_input_channels_opset13', [helper.make_node('Split', ['x', 's'], ['y0', 'y1', 'y2'], axis=-3)],
     (2, 7, 3, 2), [('y0', (2, 3, 3, 2)), ('y1', (2, 1, 3, 2)), ('y2', (2, 3, 3, 2))], [ints('s', [3, 1, 3])],
     opset=13)
case('split_chunk2_channels', [helper.make_node('Split', ['x'], ['y0', 'y1'], axis=1)],
     (3, 6, 4, 5), [('y0', (3, 3, 4, 5)), ('y1', (3, 3, 4, 5))], opset=13)
case('split_num_outputs_uneven_opset18', [helper.make_node('Split', ['x'], ['y0', 'y1', 'y2'], axis=1, num_outputs=3)],
     (2, 7, 5), [('y0', (2, 3, 5)), ('y1', (2, 3, 5)), ('y2', (2, 1, 5))], opset=18)
case('split_num_outputs_even_opset18', [helper.make_node('Split', ['x'], ['y0', 'y1'], axis=-1, num_outputs=2)],
     (3, 2, 6), [('y0', (3, 2, 3)), ('y1', (3, 2, 3))], opset=18)
case('split_width_negative_axis', [helper.make_node('Split', ['x', 's'], ['y0', 'y1', 'y2'], axis=-1)],
     (2, 3, 5, 6), [('y0', (2, 3, 5, 1)), ('y1', (2, 3, 5, 2)), ('y2', (2, 3, 5, 3))], [ints('s', [1, 2, 3])],
     opset=13)
case('split_height_opset2', [helper.make_node('Split', ['x'], ['y0', 'y1'], axis=2, split=[4, 1])],
     (2, 3, 5, 2), [('y0', (2, 3, 4, 2)), ('y1', (2, 3, 1, 2))], opset=2)
case('split_batch', [helper.make_node('Split', ['x'], ['y0', 'y1'], axis=0)],
     (4, 3, 2), [('y0', (2, 3, 2)), ('y1', (2, 3, 2))], opset=13)
case('split_rank5', [helper.make_node('Split', ['x'], ['y0', 'y1'], axis=2)],
     (2, 3, 4, 2, 3), [('y0', (2, 3, 2, 2, 3)), ('y1', (2, 3, 2, 2, 3))], opset=13)
case('operator_chunk', [helper.make_node('Split', ['x'], ['y0', 'y1'], axis=0, split=[2, 1])],
     (3,), [('y0', (2,)), ('y1', (1,))], opset=6)
case('glu', [helper.make_node('Split', ['x'], ['a', 'b'], axis=-1), helper.make_node('Sigmoid', ['b'], ['s']),
             helper.make_node('Mul', ['a', 's'], ['y'])], (5, 6), [('y', (5, 3))], opset=7)
case('glu_dim', [helper.make_node('Split', ['x'], ['a', 'b'], axis=1), helper.make_node('Sigmoid', ['b'], ['s']),
                 helper.make_node('Mul', ['a', 's'], ['y'])], (5, 6, 7), [('y', (5, 3, 7))], opset=7)

# Slice
case('slice_attrs_opset9', [helper.make_node('Slice', ['x'], ['y'], starts=[1, -3], ends=[4, 100], axes=[1, 3])],
     (2, 5, 4, 6), [('y', (2, 3, 4, 3))], opset=9)
case('slice_attrs_default_axes_opset1', [helper.make_node('Slice', ['x'], ['y'], starts=[1, 0], ends=[3, -1])],
     (3, 5, 2), [('y', (2, 4, 2))], opset=1)
case('slice_negative_steps', [helper.make_node('Slice', ['x', 's', 'e', 'a', 'p'], ['y'])],
     (2, 7, 5, 4), [('y', (2, 4, 5, 4))],
     [ints('s', [-1, 4]), ints('e', [INT64_MIN, -10]), ints('a', [1, 2]), ints('p', [-2, -1])], opset=13)
case('slice_int64_max_end_step2', [helper.make_node('Slice', ['x', 's', 'e', 'a', 'p'], ['y'])],
     (2, 3, 4, 7), [('y', (2, 3, 4, 3))], [ints('s', [1]), ints('e', [INT64_MAX]), ints('a', [-1]), ints('p', [2])],
     opset=13)
case('slice_default_axes_and_steps_opset10', [helper.make_node('Slice', ['x', 's', 'e'], ['y'])],
     (2, 5, 4), [('y', (1, 2, 4))], [ints('s', [1, 1]), ints('e', [2, 3])], opset=10)
case('slice_channels_batch_odd', [helper.make_node('Slice', ['x', 's', 'e', 'a'], ['y'])],
     (3, 7, 3, 3), [('y', (2, 5, 3, 2))], [ints('s', [1, 1, -2]), ints('e', [3, 6, 3]), ints('a', [0, 1, 3])],
     opset=13)
case('slice_clamped_starts_ends', [helper.make_node('Slice', ['x', 's', 'e', 'a', 'p'], ['y'])],
     (2, 6, 5), [('y', (2, 6, 3))],
     [ints('s', [INT64_MIN, 100]), ints('e', [INT64_MAX, -4]), ints('a', [1, 2]), ints('p', [1, -1])], opset=13)
case('slice_huge_step', [helper.make_node('Slice', ['x', 's', 'e', 'a', 'p'], ['y'])],
     (2, 5, 3), [('y', (2, 1, 1))],
     [ints('s', [2, -1]), ints('e', [INT64_MAX, INT64_MIN]), ints('a', [1, 2]), ints('p', [INT64_MAX, INT64_MIN])],
     opset=13)
case('slice_rank5', [helper.make_node('Slice', ['x', 's', 'e', 'a', 'p'], ['y'])],
     (3, 2, 3, 2, 7), [('y', (2, 2, 3, 2, 3))], [ints('s', [1, -1]), ints('e', [3, 0]), ints('a', [0, -1]),
                                                  ints('p', [1, -2])], opset=13)
case('slice_rank1_int32', [helper.make_node('Slice', ['x', 's', 'e', 'a', 'p'], ['y'])],
     (9,), [('y', (2,))], [ints('s', [-7], np.int32), ints('e', [-1], np.int32), ints('a', [0], np.int32),
                           ints('p', [3], np.int32)], opset=13)
case('slice_empty', [helper.make_node('Slice', ['x', 's', 'e', 'a'], ['y'])],
     (2, 4, 3), [('y', (2, 0, 3))], [ints('s', [3]), ints('e', [1]), ints('a', [1])], opset=13)
case('operator_index', [helper.make_node('Slice', ['x'], ['s'], starts=[0], ends=[1], axes=[0]),
                        helper.make_node('Squeeze', ['s'], ['y'], axes=[0])], (1, 1), [('y', (1,))], opset=6)

# Squeeze / Unsqueeze
case('squeeze_attr_negative_opset11', [helper.make_node('Squeeze', ['x'], ['y'], axes=[-1, 1])],
     (2, 1, 3, 1), [('y', (2, 3))], opset=11)
case('squeeze_input_opset13', [helper.make_node('Squeeze', ['x', 'a'], ['y'])],
     (3, 1, 5), [('y', (3, 5))], [ints('a', [1])], opset=13)
case('squeeze_no_axes', [helper.make_node('Squeeze', ['x'], ['y'])], (1, 3, 1, 5), [('y', (3, 5))], opset=13)
case('squeeze_to_scalar', [helper.make_node('Squeeze', ['x'], ['y'])], (1, 1), [('y', ())], opset=13)
case('squeeze_rank5', [helper.make_node('Squeeze', ['x'], ['y'], axes=[2])], (2, 3, 1, 4, 2), [('y', (2, 3, 4, 2))],
     opset=11)
case('unsqueeze_attr_opset11', [helper.make_node('Unsqueeze', ['x'], ['y'], axes=[0, -1])],
     (3, 4), [('y', (1, 3, 4, 1))], opset=11)
case('unsqueeze_input_opset13', [helper.make_node('Unsqueeze', ['x', 'a'], ['y'])],
     (2, 5), [('y', (2, 1, 5, 1))], [ints('a', [3, 1])], opset=13)
case('unsqueeze_to_rank5', [helper.make_node('Unsqueeze', ['x', 'a'], ['y'])],
     (2, 3, 4, 5), [('y', (2, 3, 1, 4, 5))], [ints('a', [-3])], opset=13)

# Gather
case('gather_axis0_matrix', [helper.make_node('Gather', ['x', 'i'], ['y'], axis=0)],
     (5, 4), [('y', (2, 2, 4))], [ints('i', [[0, -1], [2, 3]])], opset=13)
case('gather_channels_nchw', [helper.make_node('Gather', ['x', 'i'], ['y'], axis=1)],
     (2, 7, 3, 3), [('y', (2, 3, 3, 3))], [ints('i', [6, -7, 2])], opset=13)
case('gather_scalar_index_last_axis', [helper.make_node('Gather', ['x', 'i'], ['y'], axis=-1)],
     (3, 5, 2), [('y', (3, 5))], [ints('i', -1)], opset=11)
case('gather_int32_indices', [helper.make_node('Gather', ['x', 'i'], ['y'], axis=1)],
     (4, 6), [('y', (4, 2, 2, 1))], [ints('i', [[[5], [0]], [[-2], [3]]], np.int32)], opset=1)
case('gather_rank5', [helper.make_node('Gather', ['x', 'i'], ['y'], axis=3)],
     (2, 3, 2, 3, 2), [('y', (2, 3, 2, 2, 2))], [ints('i', [2, 0])], opset=13)
case('gather_rank1_scalar', [helper.make_node('Gather', ['x', 'i'], ['y'])],
     (6,), [('y', ())], [ints('i', 4)], opset=13)

# GatherElements / ScatterElements (the updates are a second graph input)
case('gather_elements_axis1', [helper.make_node('GatherElements', ['x', 'i'], ['y'], axis=1)],
     (2, 5, 3), [('y', (2, 2, 3))], [ints('i', r.integers(-5, 5, (2, 2, 3)))], opset=13)
case('gather_elements_negative_axis_smaller', [helper.make_node('GatherElements', ['x', 'i'], ['y'], axis=-1)],
     (3, 4), [('y', (2, 6))], [ints('i', r.integers(-4, 4, (2, 6)), np.int32)], opset=11)
case('gather_elements_rank5', [helper.make_node('GatherElements', ['x', 'i'], ['y'], axis=0)],
     (3, 2, 2, 1, 2), [('y', (2, 2, 2, 1, 2))], [ints('i', r.integers(-3, 3, (2, 2, 2, 1, 2)))], opset=13)


def scatter(name, op, shape, axis, indices, opset, dtype=np.int64):
    x = r.standard_normal(shape).astype(np.float32)
    u = r.standard_normal(indices.shape).astype(np.float32)
    save_case(FAMILY, name, [helper.make_node(op, ['x', 'i', 'u'], ['y'], axis=axis)],
              [tensor_info('x', x), tensor_info('u', u)], [tensor_info('y', shape)], [ints('i', indices, dtype)],
              opset=opset, input_data={'x': x, 'u': u})


scatter('scatter_elements_axis1', 'ScatterElements', (2, 5, 3), 1, np.array([[[0, 4, -1]], [[-5, 2, 3]]]), 13)
scatter('scatter_elements_negative_axis', 'ScatterElements', (4, 3), -2, np.array([[3, -4, 1], [0, 2, -1]]), 11,
        np.int32)
scatter('scatter_opset9', 'Scatter', (3, 3), 0, np.array([[1, 0, 2], [0, 2, 1]]), 9)

# Expand
case('expand_channels', [helper.make_node('Expand', ['x', 's'], ['y'])],
     (1, 5, 1, 1), [('y', (3, 5, 4, 2))], [ints('s', [3, 5, 4, 2])], opset=13)
case('expand_bidirectional', [helper.make_node('Expand', ['x', 's'], ['y'])],
     (3, 1), [('y', (2, 3, 4))], [ints('s', [2, 1, 4])], opset=8)
case('expand_ones_keep_input', [helper.make_node('Expand', ['x', 's'], ['y'])],
     (2, 3, 4), [('y', (2, 3, 4))], [ints('s', [1, 1])], opset=13)
case('expand_rank5', [helper.make_node('Expand', ['x', 's'], ['y'])],
     (3, 1, 2), [('y', (2, 1, 3, 4, 2))], [ints('s', [2, 1, 1, 4, 1])], opset=13)
case('expand_rank1', [helper.make_node('Expand', ['x', 's'], ['y'])], (1,), [('y', (7,))], [ints('s', [7])], opset=13)

# Tile
case('operator_repeat', [helper.make_node('Constant', [], ['p'], value=ints('v', [1, 2, 3, 4])),
                         helper.make_node('Tile', ['x', 'p'], ['y'])],
     (1, 2, 3, 4), [('y', (1, 4, 9, 16))], opset=9)
case('tile_rank2', [helper.make_node('Tile', ['x', 'p'], ['y'])], (3, 5), [('y', (6, 5))], [ints('p', [2, 1])],
     opset=13)
case('tile_batch_channels', [helper.make_node('Tile', ['x', 'p'], ['y'])],
     (2, 3, 2, 2), [('y', (4, 9, 2, 4))], [ints('p', [2, 3, 1, 2])], opset=13)
case('tile_rank5', [helper.make_node('Tile', ['x', 'p'], ['y'])],
     (2, 1, 2, 3, 2), [('y', (2, 2, 2, 3, 6))], [ints('p', [1, 2, 1, 1, 3])], opset=13)
case('tile_rank1', [helper.make_node('Tile', ['x', 'p'], ['y'])], (3,), [('y', (12,))], [ints('p', [4])], opset=6)

# DepthToSpace / SpaceToDepth
case('depth_to_space_dcr', [helper.make_node('DepthToSpace', ['x'], ['y'], blocksize=2)],
     (2, 12, 3, 2), [('y', (2, 3, 6, 4))], opset=13)
case('depth_to_space_crd', [helper.make_node('DepthToSpace', ['x'], ['y'], blocksize=3, mode='CRD')],
     (2, 18, 2, 3), [('y', (2, 2, 6, 9))], opset=13)
case('depth_to_space_opset1', [helper.make_node('DepthToSpace', ['x'], ['y'], blocksize=2)],
     (1, 8, 2, 3), [('y', (1, 2, 4, 6))], opset=1)
case('space_to_depth_b2', [helper.make_node('SpaceToDepth', ['x'], ['y'], blocksize=2)],
     (2, 3, 4, 6), [('y', (2, 12, 2, 3))], opset=13)
case('space_to_depth_b3', [helper.make_node('SpaceToDepth', ['x'], ['y'], blocksize=3)],
     (1, 5, 6, 3), [('y', (1, 45, 2, 1))], opset=1)

# Runtime integer inputs (per-run constants of the plan) and exported shape arithmetic
x = r.standard_normal((2, 7, 3)).astype(np.float32)
i = np.array([[6, -1], [0, 3]], dtype=np.int64)
save_case(FAMILY, 'gather_runtime_indices', [helper.make_node('Gather', ['x', 'i'], ['y'], axis=1)],
          [tensor_info('x', x), tensor_info('i', i, TensorProto.INT64)], [tensor_info('y', (2, 2, 2, 3))],
          input_data={'x': x, 'i': i}, opset=13)
x = r.standard_normal((3, 6, 4)).astype(np.float32)
# (Runtime integers travel as Float32 and the GPU check rounds them to fp16: no INT64_MIN here.)
starts, ends = np.array([1, -1], dtype=np.int64), np.array([5, -100], dtype=np.int64)
save_case(FAMILY, 'slice_runtime_starts_ends',
          [helper.make_node('Slice', ['x', 's', 'e', 'a', 'p'], ['y'])],
          [tensor_info('x', x), tensor_info('s', starts, TensorProto.INT64), tensor_info('e', ends, TensorProto.INT64)],
          [tensor_info('y', (3, 2, 4))], [ints('a', [1, 2]), ints('p', [2, -1])],
          input_data={'x': x, 's': starts, 'e': ends}, opset=13)
# TorchScript's flatten: Shape -> Gather -> Unsqueeze -> Concat -> Reshape, folded at load.
x = r.standard_normal((2, 5, 3, 3)).astype(np.float32)
save_case(FAMILY, 'shape_gather_unsqueeze_concat_reshape',
          [helper.make_node('Shape', ['x'], ['shape']),
           helper.make_node('Gather', ['shape', 'zero'], ['n'], axis=0),
           helper.make_node('Unsqueeze', ['n', 'axes'], ['n1']),
           helper.make_node('Concat', ['n1', 'minus1'], ['target'], axis=0),
           helper.make_node('Reshape', ['x', 'target'], ['y'])],
          [tensor_info('x', x)], [tensor_info('y', (2, 45))],
          [ints('zero', 0), ints('axes', [0]), ints('minus1', [-1])], input_data={'x': x}, opset=13)
