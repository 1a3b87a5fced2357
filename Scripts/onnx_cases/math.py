#!/usr/bin/env python3
"""Reference cases (family `math`): element-wise ops on two or more
computed tensors with broadcasting in every direction and at ranks 1 to 5,
comparisons and logic (bools are cast to float at the graph's edges, as
LayerKit's tensors are float 0/1), Sum/Mean/Max/Min, PRelu and Pow with
tensor operands, Where, MatMul of any rank, Gemm in every form, Cast and
CastLike, and the catalog's Sign, Shrink, Erf, Gelu, Neg, Reciprocal,
Floor, Ceil, Round, IsNaN, IsInf through the ONNX importer.

Inputs are seeded and rounded to fp16 (so a GPU run reads the same values
and comparisons cannot flip). Run: python3 Scripts/onnx_cases/math.py"""
import os
import sys

# This file's name shadows the standard `math` module for everything run
# from its folder (numpy imports it): the folder goes to the end of the path.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or '.') != HERE] + [HERE]

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from common import reset, rng, save_case  # noqa: E402

FAMILY = 'math'
reset(FAMILY)
r = rng(7)
FLOAT, BOOL = TensorProto.FLOAT, TensorProto.BOOL


def half(a):
    return np.asarray(a, dtype=np.float32).astype(np.float16).astype(np.float32)


def normal(*shape, scale=1.0):
    return half(r.standard_normal(shape) * scale)


def positive(*shape, lo=0.5, hi=3.0):
    return half(r.uniform(lo, hi, shape))


def grid(*shape, step=0.5, span=3):
    """Values on a coarse grid (ties and equal pairs for comparisons)."""
    return half(r.integers(-span, span + 1, shape) * step)


def case(name, nodes, inputs, outputs=('y',), inits=None, opset=17):
    """`inputs`: name -> array (graph inputs, float); `inits`: name -> array."""
    infos = [helper.make_tensor_value_info(k, FLOAT, list(v.shape)) for k, v in inputs.items()]
    initializers = [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()]
    # The output shapes, from onnxruntime itself (the model's outputs declared without shapes).
    probe = helper.make_model(helper.make_graph(nodes, name, infos, [helper.make_tensor_value_info(o, FLOAT, None)
                                                                      for o in outputs], initializers),
                              opset_imports=[helper.make_opsetid('', opset)])
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    shapes = [y.shape for y in ort.InferenceSession(probe.SerializeToString(), options,
                                                    providers=['CPUExecutionProvider']).run(None, inputs)]
    outs = [helper.make_tensor_value_info(o, FLOAT, list(shape)) for o, shape in zip(outputs, shapes)]
    save_case(FAMILY, name, nodes, infos, outs, initializers, opset=opset, input_data=inputs)


def node(op, ins, outs=('y',), **attrs):
    return helper.make_node(op, list(ins), list(outs), **attrs)


def to_float(src, dst='y'):
    return node('Cast', [src], [dst], to=FLOAT)


# ---- Binary arithmetic, both operands computed, every broadcasting direction
case('add_left_lower_rank', [node('Add', ['a', 'b'])], {'a': normal(3, 5), 'b': normal(2, 4, 3, 5)})
case('sub_right_lower_rank', [node('Sub', ['a', 'b'])], {'a': normal(2, 3, 4, 5), 'b': normal(5)})
case('mul_both_broadcast', [node('Mul', ['a', 'b'])], {'a': normal(2, 1, 4, 1), 'b': normal(3, 1, 5)})
case('div_rank5', [node('Div', ['a', 'b'])], {'a': normal(2, 3, 1, 4, 2), 'b': positive(1, 3, 5, 1, 1)})
case('mul_squeeze_excitation', [node('Mul', ['s', 'x'])], {'s': normal(2, 5, 1, 1), 'x': normal(2, 5, 3, 4)})
case('add_channel_image', [node('Add', ['x', 'c'])], {'x': normal(3, 7, 4, 3), 'c': normal(1, 7, 1, 1)})
case('add_rank1', [node('Add', ['a', 'b'])], {'a': normal(7), 'b': normal(1)})
case('sub_rank1_rank2', [node('Sub', ['a', 'b'])], {'a': normal(7), 'b': normal(3, 7)})
case('div_rank3_both', [node('Div', ['a', 'b'])], {'a': normal(2, 1, 5), 'b': positive(1, 3, 1)})
# Constant operands of lower rank (padded at import: the GPU form reads them).
case('mul_const_c11', [node('Mul', ['x', 'c'])], {'x': normal(2, 5, 3, 3)}, inits={'c': normal(5, 1, 1)})
case('add_const_scalar', [node('Add', ['x', 'c'])], {'x': normal(2, 3, 2, 5)}, inits={'c': half(0.75)})
case('sub_const_left', [node('Sub', ['c', 'x'])], {'x': normal(2, 3, 4)}, inits={'c': normal(4)})
# Pow with tensor exponents; negative bases with integral exponents.
case('pow_tensor_exponent', [node('Pow', ['a', 'b'])], {'a': positive(2, 3, 4), 'b': normal(1, 3, 1)})
case('pow_lower_rank_exponent', [node('Pow', ['a', 'b'])], {'a': positive(2, 3, 4), 'b': normal(3, 1)})
case('pow_negative_base', [node('Pow', ['a', 'b'])],
     {'a': normal(2, 3, 4), 'b': half(r.integers(-2, 4, (1, 3, 4)))})
case('pow_const_tensor', [node('Pow', ['x', 'e'])], {'x': positive(2, 3, 2)},
     inits={'e': half([[0.5], [2.0], [-1.0]])})
case('pow_scalar_exponent', [node('Pow', ['x', 'e'])], {'x': normal(2, 3, 4)}, inits={'e': half(3.0)})
case('max_binary', [node('Max', ['a', 'b'])], {'a': normal(2, 3, 4, 5), 'b': normal(1, 3, 1, 5)})
case('min_binary', [node('Min', ['a', 'b'])], {'a': normal(4, 1), 'b': normal(2, 3, 1, 6)})
case('mod_fmod', [node('Mod', ['a', 'b'], fmod=1)], {'a': normal(2, 3, 4, scale=4), 'b': half([[[1.5], [-0.75], [2.0]]])})

# ---- Comparisons and logic (bool results cast to float)
for op in ('Equal', 'Less', 'Greater', 'LessOrEqual', 'GreaterOrEqual'):
    case(f'{op.lower()}_broadcast', [node(op, ['a', 'b'], ['c']), to_float('c')],
         {'a': grid(2, 3, 4, 5), 'b': grid(1, 3, 1, 5)})
case('greater_lower_rank', [node('Greater', ['a', 'b'], ['c']), to_float('c')], {'a': grid(2, 3, 4), 'b': grid(4)})
case('less_rank5', [node('Less', ['a', 'b'], ['c']), to_float('c')], {'a': grid(2, 1, 3, 2, 2), 'b': grid(3, 1, 1)})
for op in ('And', 'Or', 'Xor'):
    case(f'{op.lower()}_broadcast', [node('Greater', ['a', 'zero'], ['p']), node('Less', ['b', 'half'], ['q']),
                                      node(op, ['p', 'q'], ['c']), to_float('c')],
         {'a': normal(2, 3, 4), 'b': normal(1, 1, 4)}, inits={'zero': half(0.0), 'half': half(0.5)})
case('not', [node('Greater', ['a', 'zero'], ['p']), node('Not', ['p'], ['c']), to_float('c')],
     {'a': normal(2, 5, 3)}, inits={'zero': half(0.0)})

# ---- Variadic Sum, Mean, Max, Min
case('sum_densenet', [node('Sum', ['a', 'b', 'c'])], {'a': normal(2, 5, 3, 4), 'b': normal(2, 5, 3, 4), 'c': normal(2, 5, 3, 4)})
case('sum_broadcast', [node('Sum', ['a', 'b', 'c'])], {'a': normal(2, 3, 4, 5), 'b': normal(3, 1, 1), 'c': normal(5)})
case('sum_one', [node('Sum', ['a'])], {'a': normal(2, 3, 4)})
case('mean_three', [node('Mean', ['a', 'b', 'c'])], {'a': normal(2, 3, 4, 1), 'b': normal(1, 3, 1, 5), 'c': normal(2, 3, 4, 5)})
case('mean_two', [node('Mean', ['a', 'b'])], {'a': normal(3, 5), 'b': normal(3, 5)})
case('max_four', [node('Max', ['a', 'b', 'c', 'd'])],
     {'a': normal(2, 3), 'b': normal(3), 'c': normal(2, 1), 'd': normal(1, 2, 3)})
case('min_three_images', [node('Min', ['a', 'b', 'c'])], {'a': normal(2, 5, 2, 3), 'b': normal(2, 5, 2, 3), 'c': normal(1, 5, 1, 1)})
case('max_one', [node('Max', ['a'])], {'a': normal(3, 4)})

# ---- PRelu with any broadcastable slope (onnx's test_PReLU_1d/3d shapes and more)
case('prelu_1d', [node('PRelu', ['x', 's'])], {'x': normal(2, 5)}, inits={'s': half(r.uniform(0, 1, 5))})
case('prelu_1d_input', [node('PRelu', ['x', 's'])], {'x': normal(6)}, inits={'s': half(r.uniform(0, 1, 6))})
case('prelu_3d', [node('PRelu', ['x', 's'])], {'x': normal(2, 3, 4)}, inits={'s': half(r.uniform(0, 1, (3, 1)))})
case('prelu_4d_c11', [node('PRelu', ['x', 's'])], {'x': normal(2, 5, 3, 3)}, inits={'s': half(r.uniform(-1, 1, (5, 1, 1)))})
case('prelu_4d_1c11', [node('PRelu', ['x', 's'])], {'x': normal(2, 5, 3, 3)}, inits={'s': half(r.uniform(-1, 1, (1, 5, 1, 1)))})
case('prelu_scalar', [node('PRelu', ['x', 's'])], {'x': normal(2, 3, 4)}, inits={'s': half(0.25)})
case('prelu_5d', [node('PRelu', ['x', 's'])], {'x': normal(2, 3, 2, 2, 2)}, inits={'s': half(r.uniform(0, 1, (3, 1, 1, 1)))})
case('prelu_full_computed', [node('PRelu', ['x', 's'])], {'x': normal(2, 3, 4), 's': normal(2, 3, 4)})
case('prelu_width_slope', [node('PRelu', ['x', 's'])], {'x': normal(2, 3, 4)}, inits={'s': half(r.uniform(0, 1, 4))})

# ---- Where
case('where_broadcast', [node('Greater', ['a', 'zero'], ['c']), node('Where', ['c', 'x', 'y0'])],
     {'a': normal(2, 3, 4), 'x': normal(3, 4), 'y0': normal(1)}, inits={'zero': half(0.0)})
case('where_images', [node('Greater', ['a', 'zero'], ['c']), node('Where', ['c', 'x', 'y0'])],
     {'a': normal(2, 5, 3, 4), 'x': normal(2, 5, 1, 1), 'y0': normal(1, 5, 3, 4)}, inits={'zero': half(0.0)})
case('where_rank5', [node('Less', ['a', 'zero'], ['c']), node('Where', ['c', 'x', 'y0'])],
     {'a': normal(2, 1, 3, 1, 2), 'x': normal(2, 2, 3, 4, 2), 'y0': normal(4, 1)}, inits={'zero': half(0.0)})

# ---- MatMul of any rank (numpy matmul)
case('matmul_1d_1d', [node('MatMul', ['a', 'b'])], {'a': normal(5), 'b': normal(5)})
case('matmul_1d_2d', [node('MatMul', ['a', 'b'])], {'a': normal(5), 'b': normal(5, 3)})
case('matmul_2d_1d', [node('MatMul', ['a', 'b'])], {'a': normal(3, 5), 'b': normal(5)})
case('matmul_2d_computed', [node('MatMul', ['a', 'b'])], {'a': normal(3, 5), 'b': normal(5, 7)})
case('matmul_3d_2d', [node('MatMul', ['a', 'b'])], {'a': normal(2, 3, 5), 'b': normal(5, 4)})
case('matmul_batch_broadcast', [node('MatMul', ['a', 'b'])], {'a': normal(2, 1, 3, 4), 'b': normal(3, 4, 5)})
case('matmul_1d_3d', [node('MatMul', ['a', 'b'])], {'a': normal(4), 'b': normal(2, 4, 3)})
case('matmul_const_3d', [node('MatMul', ['a', 'w'])], {'a': normal(2, 3, 4)}, inits={'w': normal(2, 4, 5)})
case('matmul_const_2d', [node('MatMul', ['a', 'w'])], {'a': normal(3, 4)}, inits={'w': normal(4, 6)})
case('matmul_rank5', [node('MatMul', ['a', 'b'])], {'a': normal(2, 1, 2, 3, 4), 'b': normal(3, 1, 4, 2)})

# ---- Gemm in every form
M, K, N = 3, 5, 4
for cname, cshape in (('scalar', ()), ('n', (N,)), ('1n', (1, N)), ('m1', (M, 1)), ('mn', (M, N))):
    case(f'gemm_computed_c_{cname}', [node('Gemm', ['a', 'b', 'c'], alpha=0.5, beta=-1.5)],
         {'a': normal(M, K), 'b': normal(K, N), 'c': normal(*cshape)})
case('gemm_trans_both', [node('Gemm', ['a', 'b', 'c'], transA=1, transB=1)],
     {'a': normal(K, M), 'b': normal(N, K), 'c': normal(N)})
case('gemm_transA_const_b', [node('Gemm', ['a', 'w', 'c'], transA=1, alpha=2.0)],
     {'a': normal(K, M)}, inits={'w': normal(K, N), 'c': normal(M, 1)})
case('gemm_no_c_computed_b', [node('Gemm', ['a', 'b'], transB=1)], {'a': normal(M, K), 'b': normal(N, K)})
case('gemm_const_c_mn', [node('Gemm', ['a', 'w', 'c'], beta=0.5)], {'a': normal(M, K)},
     inits={'w': normal(K, N), 'c': normal(M, N)})
case('gemm_opset9', [node('Gemm', ['a', 'b', 'c'], alpha=1.5, beta=0.25)],
     {'a': normal(M, K), 'b': normal(K, N), 'c': normal(1, N)}, opset=9)

# ---- Cast and CastLike of float tensors
case('cast_int32', [node('Cast', ['x'], ['i'], to=TensorProto.INT32), to_float('i')], {'x': normal(2, 3, 5, scale=4)})
case('cast_int64_rank1', [node('Cast', ['x'], ['i'], to=TensorProto.INT64), to_float('i')], {'x': normal(9, scale=4)})
case('cast_bool', [node('Cast', ['x'], ['b'], to=BOOL), to_float('b')], {'x': grid(2, 3, 4)})
case('cast_double', [node('Cast', ['x'], ['d'], to=TensorProto.DOUBLE), to_float('d')], {'x': normal(2, 3)})
case('cast_float', [node('Cast', ['x'], to=FLOAT)], {'x': normal(2, 3)})
case('cast_float16', [node('Cast', ['x'], ['h'], to=TensorProto.FLOAT16), to_float('h')], {'x': normal(2, 3)})
case('castlike_int32', [node('CastLike', ['x', 't'], ['i']), to_float('i')], {'x': normal(2, 3, 4, scale=4)},
     inits={'t': np.array([0], dtype=np.int32)})

# ---- Catalog ops through the importer (rank 3, batch 2, odd channels)
for op, attrs, opset in (('Sign', {}, 17), ('Shrink', {'lambd': 0.75, 'bias': 0.25}, 17), ('Shrink', {}, 17),
                         ('Erf', {}, 17), ('Gelu', {}, 20), ('Gelu', {'approximate': 'tanh'}, 20),
                         ('Neg', {}, 17), ('Reciprocal', {}, 17), ('Floor', {}, 17), ('Ceil', {}, 17),
                         ('Round', {}, 17)):
    suffix = '_'.join(f'{k}' for k in attrs) or 'default'
    x = grid(2, 3, 5, step=0.25) if op == 'Round' else normal(2, 3, 5, scale=2)
    if op == 'Reciprocal':
        x = positive(2, 3, 5) * np.where(normal(2, 3, 5) < 0, -1, 1).astype(np.float32)
    case(f'{op.lower()}_{suffix}', [node(op, ['x'], **attrs)], {'x': x}, opset=opset)
special = half([[0, -1.5, np.inf, -np.inf, np.nan], [2.5, np.nan, -np.inf, 3, -0.0], [1, 2, 3, np.inf, 4]])
case('isnan', [node('IsNaN', ['x'], ['b']), to_float('b')], {'x': special.reshape(1, 3, 5)})
case('isinf_default', [node('IsInf', ['x'], ['b']), to_float('b')], {'x': special.reshape(3, 5)})
case('isinf_negative_only', [node('IsInf', ['x'], ['b'], detect_positive=0), to_float('b')],
     {'x': special.reshape(3, 5)})

# Attention's products of two computed rank-4 values (the GPU multiplies each head's planes,
# four heads a texel; five heads leave three padding lanes), Q K^T then scores V.
case('matmul_attention_qk', [node('MatMul', ['q', 'kt'])], {'q': normal(2, 5, 6, 8), 'kt': normal(2, 5, 8, 6)})
case('matmul_attention_sv', [node('Softmax', ['s'], ['p'], axis=-1), node('MatMul', ['p', 'v'])],
     {'s': normal(1, 3, 7, 7), 'v': normal(1, 3, 7, 4)})

# A transformer's Linear layer: a computed rank-3 or rank-4 value by a constant [K, N], then the
# bias added (one BatchedGemm step; the GPU reads the weights from a buffer). A product with a
# second reader keeps its Add apart.
case('matmul_linear_rank3_bias', [node('MatMul', ['x', 'w'], ['p']), node('Add', ['p', 'bias'])],
     {'x': normal(2, 6, 16)}, inits={'w': normal(16, 12, scale=0.25), 'bias': normal(12)})
case('matmul_linear_bias_first', [node('MatMul', ['x', 'w'], ['p']), node('Add', ['bias', 'p'])],
     {'x': normal(1, 5, 8)}, inits={'w': normal(8, 7), 'bias': normal(7)})
case('matmul_linear_rank4', [node('MatMul', ['x', 'w'])], {'x': normal(2, 3, 5, 8)}, inits={'w': normal(8, 6)})
case('matmul_linear_two_readers',
     [node('MatMul', ['x', 'w'], ['p']), node('Add', ['p', 'bias'], ['y']), node('Relu', ['p'], ['z'])],
     {'x': normal(2, 4, 8)}, outputs=('y', 'z'), inits={'w': normal(8, 6), 'bias': normal(6)})

# GPT-2's Conv1D as exporters write it: Reshape to [rows, K], Gemm, Reshape back, one BatchedGemm
# step on the rank-3 or rank-4 value. As a matrix, 520 rows of 16 are 2,080 image layers, past
# lavapipe's 2,048: unfused the GPU backend ran them on the CPU. C per row and a second reader of
# the product keep the three steps.
case('gemm_reshaped_rank3',
     [node('Reshape', ['x', 'rows'], ['a']), node('Gemm', ['a', 'w', 'bias'], ['p']), node('Reshape', ['p', 'back'])],
     {'x': normal(1, 520, 16)}, inits={'rows': np.array([-1, 16]), 'w': normal(16, 12, scale=0.25),
                                       'bias': normal(12), 'back': np.array([1, 520, 12])})
case('gemm_reshaped_rank4_transb_alpha',
     [node('Reshape', ['x', 'rows'], ['a']), node('Gemm', ['a', 'w', 'c'], ['p'], transB=1, alpha=0.5, beta=2.0),
      node('Reshape', ['p', 'back'])],
     {'x': normal(2, 3, 5, 8)}, inits={'rows': np.array([30, 8]), 'w': normal(6, 8), 'c': normal(1, 6),
                                       'back': np.array([2, 3, 5, 6])})
case('gemm_reshaped_per_row_c',
     [node('Reshape', ['x', 'rows'], ['a']), node('Gemm', ['a', 'w', 'c'], ['p']), node('Reshape', ['p', 'back'])],
     {'x': normal(1, 4, 8)}, inits={'rows': np.array([4, 8]), 'w': normal(8, 6), 'c': normal(4, 1),
                                    'back': np.array([1, 4, 6])})
case('gemm_reshaped_two_readers',
     [node('Reshape', ['x', 'rows'], ['a']), node('Gemm', ['a', 'w', 'bias'], ['p']), node('Reshape', ['p', 'back']),
      node('Relu', ['p'], ['z'])],
     {'x': normal(2, 4, 8)}, outputs=('y', 'z'), inits={'rows': np.array([-1, 8]), 'w': normal(8, 6),
                                                        'bias': normal(6), 'back': np.array([2, 4, 6])})
