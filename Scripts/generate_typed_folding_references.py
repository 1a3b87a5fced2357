#!/usr/bin/env python3
"""References for LayerKit's typed load-time folding (TypedKernels).

Each case is one small ONNX model whose inputs are all initializers, so
LayerKit folds the whole graph at load; onnxruntime computes the outputs
of the same model (CPU, one thread, graph optimizations off, so each node
runs as its own kernel, not ORT's own constant folding). Where onnxruntime
has no kernel for an op on a type (it refuses the model), the case falls
back to onnx.reference.ReferenceEvaluator; manifest.json says which ran.

Written in the onnx backend-test layout, under
Tests/LayerKitTests/Fixtures/typed-folding/<case>/:

    model.onnx                       the model (inputs are its initializers)
    test_data_set_0/output_<k>.pb    serialized TensorProto of output k
    test_data_set_0/input_<k>.pb     only for a case with graph inputs
                                     (mask_pattern: a float input x)
    ../manifest.json                 per case: which runtime made the outputs

Run from the repository root with a Python that has onnx 1.23.2,
onnxruntime 1.32.0 and numpy (Docs/TESTING.md):

    python Scripts/generate_typed_folding_references.py

Inputs are fixed literals, so reruns write the same bytes.
"""
import json
import os
import shutil

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as TP, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..',
                    'Tests', 'LayerKitTests', 'Fixtures', 'typed-folding')
OPSET = 21
FLT_MAX = float(np.finfo(np.float32).max)
manifest = {}


def const(name, data_type, dims, values):
    """An initializer of `data_type` (onnx.helper converts and packs: floats
    round to bfloat16/float8 as Cast with saturate, 4-bit types pack)."""
    return helper.make_tensor(name, data_type, dims, values)


# Types onnxruntime computes but its Python binding cannot hand back: read
# them through a Cast to a type it can (exact: every value of these types is
# a float32, or an int32), then encode them back with ml_dtypes (exact too).
READ_BACK = {TP.BFLOAT16: TP.FLOAT, TP.FLOAT8E4M3FN: TP.FLOAT, TP.FLOAT8E4M3FNUZ: TP.FLOAT, TP.FLOAT8E5M2: TP.FLOAT,
             TP.FLOAT8E5M2FNUZ: TP.FLOAT, TP.INT4: TP.INT32, TP.UINT4: TP.INT32}


def readable(model):
    """`model` with each output of a READ_BACK type cast to its readable type."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for output in copy.graph.output:
        wide = READ_BACK.get(output.type.tensor_type.elem_type)
        if wide is not None:
            copy.graph.node.append(helper.make_node('Cast', [output.name], [output.name + '_read'], to=wide))
            output.name += '_read'
            output.type.tensor_type.elem_type = wide
    return copy


def run(model, feeds):
    """onnxruntime's outputs, or the reference evaluator's where ORT refuses."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    types = [o.type.tensor_type.elem_type for o in model.graph.output]
    try:
        session = ort.InferenceSession(readable(model).SerializeToString(), options, providers=['CPUExecutionProvider'])
        results = session.run(None, feeds)
        note = ' (read back through Cast)' if any(t in READ_BACK for t in types) else ''
        return ([np.asarray(r).astype(helper.tensor_dtype_to_np_dtype(t)) if t in READ_BACK else r
                 for r, t in zip(results, types)], f'onnxruntime {ort.__version__}{note}')
    except Exception as error:  # no kernel for this op/type: the ONNX reference
        outputs = ReferenceEvaluator(model).run(None, feeds)
        return outputs, f'onnx.reference {onnx.__version__} (onnxruntime: {str(error).splitlines()[0][:120]})'


def case(name, nodes, initializers, outputs, inputs=(), feeds=None):
    """Writes one case; `outputs` are (name, element type) pairs."""
    def build(shapes):
        graph = helper.make_graph(nodes, name, list(inputs),
                                  [helper.make_tensor_value_info(n, t, s) for (n, t), s in zip(outputs, shapes)],
                                  initializer=initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', OPSET)])
        model.ir_version = 10
        return model

    # Run once without output shapes, then declare the shapes that came out.
    results, runtime = run(build([None] * len(outputs)), feeds or {})
    model = build([list(np.asarray(r).shape) for r in results])
    onnx.checker.check_model(model, full_check=True)
    folder = os.path.join(ROOT, name)
    data = os.path.join(folder, 'test_data_set_0')
    os.makedirs(data)
    onnx.save(model, os.path.join(folder, 'model.onnx'))
    for k, (value, (out_name, out_type)) in enumerate(zip(results, outputs)):
        value = np.asarray(value)
        expected = helper.tensor_dtype_to_np_dtype(out_type)
        if value.dtype != expected and value.dtype.itemsize == expected.itemsize and value.dtype.kind == 'u':
            # onnxruntime's Python binding returns float8 (and 4-bit) outputs as their raw bytes.
            value = value.view(expected)
        tensor = numpy_helper.from_array(value, out_name)
        if tensor.data_type != out_type:
            raise SystemExit(f'{name}: output {out_name} came back as type {tensor.data_type}, expected {out_type}')
        with open(os.path.join(data, f'output_{k}.pb'), 'wb') as f:
            f.write(tensor.SerializeToString())
    for k, (input_name, value) in enumerate((feeds or {}).items()):
        with open(os.path.join(data, f'input_{k}.pb'), 'wb') as f:
            f.write(numpy_helper.from_array(value, input_name).SerializeToString())
    manifest[name] = runtime


def binary(name, op, data_type, a, b, out_type=None, dims=None, **attributes):
    """op(A, B) on initializers of one type; B broadcast when its dims differ."""
    dims_a, dims_b = dims or ([len(a)], [len(b)])
    case(name, [helper.make_node(op, ['a', 'b'], ['y'], **attributes)],
         [const('a', data_type, dims_a, a), const('b', data_type, dims_b, b)], [('y', out_type or data_type)])


def unary(name, op, data_type, x, out_type=None, dims=None, **attributes):
    case(name, [helper.make_node(op, ['x'], ['y'], **attributes)],
         [const('x', data_type, dims or [len(x)], x)], [('y', out_type or data_type)])


def cast(name, from_type, x, to, **attributes):
    unary(name, 'Cast', from_type, x, out_type=to, to=to, **attributes)


def main():
    shutil.rmtree(ROOT, ignore_errors=True)
    os.makedirs(ROOT)

    # Integer wrap at each width, truncating division, unsigned as unsigned.
    ranges = {TP.INT8: (-128, 127), TP.UINT8: (0, 255), TP.INT16: (-32768, 32767), TP.UINT16: (0, 65535),
              TP.INT32: (-2**31, 2**31 - 1), TP.UINT32: (0, 2**32 - 1), TP.UINT64: (0, 2**64 - 1)}
    for t, (low, high) in ranges.items():
        tname = helper.tensor_dtype_to_np_dtype(t).name
        binary(f'add_wrap_{tname}', 'Add', t, [high, low, high, 7], [1, -1 if low else high, high, 5])
        binary(f'sub_wrap_{tname}', 'Sub', t, [low, high, 3, low + 5], [1, low if low else high, 5, high])
        binary(f'mul_wrap_{tname}', 'Mul', t, [high, low + 1, 16, 3], [2, 3, high // 8 + 1, 5])
        if low < 0:
            binary(f'div_{tname}', 'Div', t, [7, -7, 7, -7, low, high, low + 1], [2, 2, -2, -2, 3, -3, 7])
        else:
            binary(f'div_{tname}', 'Div', t, [high, high - 1, 7, 200, high // 2 + 3], [2, high, 2, 7, 3])
    # int64: no overflow (LayerKit refuses an int64 overflow), truncating division.
    binary('div_int64', 'Div', TP.INT64, [7, -7, 7, -7, -2**63, 2**62 + 5], [2, 2, -2, -2, 3, -7])
    binary('add_int64_broadcast', 'Add', TP.INT64, [1, 2, 3, 4, 5, 6], [10, -20, 30], dims=([2, 3], [3]))

    # Mod: C's fmod (dividend's sign) and Python's % (divisor's sign) on negatives.
    for fmod in (0, 1):
        binary(f'mod_int32_fmod{fmod}', 'Mod', TP.INT32, [7, -7, 7, -7, 0, 9], [3, 3, -3, -3, 5, 9], fmod=fmod)
        binary(f'mod_int8_fmod{fmod}', 'Mod', TP.INT8, [-128, 127, -5, 5], [3, -4, 2, -2], fmod=fmod)
    binary('mod_float32_fmod1', 'Mod', TP.FLOAT, [7.5, -7.5, 7.5, -7.5, 1e10], [2, 2, -2, -2, 3], fmod=1)
    binary('mod_uint64', 'Mod', TP.UINT64, [2**64 - 1, 2**63 + 5, 17], [10, 2**63, 5])

    # Comparisons of mixed-sign values, in each type's own order.
    binary('less_int32', 'Less', TP.INT32, [-5, 5, -2**31, 2**31 - 1, 0], [5, -5, 2**31 - 1, -2**31, 0], out_type=TP.BOOL)
    binary('greater_int8', 'Greater', TP.INT8, [-1, 1, -128, 127], [1, -1, 127, -128], out_type=TP.BOOL)
    binary('greater_uint8', 'Greater', TP.UINT8, [255, 1, 128, 0], [1, 255, 127, 0], out_type=TP.BOOL)
    binary('less_uint64', 'Less', TP.UINT64, [2**63, 1, 2**64 - 1], [1, 2**63, 2**64 - 2], out_type=TP.BOOL)
    binary('lessorequal_int16', 'LessOrEqual', TP.INT16, [-3, 3, 7], [-3, -3, 8], out_type=TP.BOOL)
    binary('greaterorequal_uint32', 'GreaterOrEqual', TP.UINT32, [2**32 - 1, 0, 5], [2**31, 1, 5], out_type=TP.BOOL)
    binary('equal_float32_special', 'Equal', TP.FLOAT, [float('nan'), float('-inf'), -0.0, -FLT_MAX, 1.5],
           [float('nan'), float('-inf'), 0.0, -FLT_MAX, 1.25], out_type=TP.BOOL)
    binary('less_float32_special', 'Less', TP.FLOAT, [float('nan'), float('-inf'), -FLT_MAX, 1.0],
           [1.0, -FLT_MAX, float('-inf'), float('nan')], out_type=TP.BOOL)
    binary('equal_int64_broadcast', 'Equal', TP.INT64, [1, 2, 3, 4, 5, 6], [2, 5], dims=([3, 2], [2]), out_type=TP.BOOL)

    # Bool logic.
    t, f = True, False
    binary('and_bool', 'And', TP.BOOL, [t, t, f, f], [t, f, t, f])
    binary('or_bool', 'Or', TP.BOOL, [t, t, f, f], [t, f, t, f])
    binary('xor_bool', 'Xor', TP.BOOL, [t, t, f, f], [t, f, t, f])
    unary('not_bool', 'Not', TP.BOOL, [t, f, f])
    binary('and_bool_broadcast', 'And', TP.BOOL, [t, f, t, t, f, t], [t, f], dims=([3, 2], [2]))

    # Bitwise ops and shifts.
    binary('bitwiseand_int8', 'BitwiseAnd', TP.INT8, [-1, 0x5A, -128, 7], [0x0F, -1, 127, 12])
    binary('bitwiseor_uint16', 'BitwiseOr', TP.UINT16, [0x8000, 0x00FF, 3], [0x0001, 0xFF00, 4])
    binary('bitwisexor_int32', 'BitwiseXor', TP.INT32, [-1, 0x12345678, 0], [0x0F0F0F0F, -0x12345679, -2**31])
    unary('bitwisenot_uint8', 'BitwiseNot', TP.UINT8, [0, 255, 0x5A])
    unary('bitwisenot_int16', 'BitwiseNot', TP.INT16, [0, -1, 0x1234, -32768])
    binary('bitshift_left_uint8', 'BitShift', TP.UINT8, [1, 0x81, 255, 3], [7, 1, 4, 0], direction='LEFT')
    binary('bitshift_right_uint32', 'BitShift', TP.UINT32, [2**32 - 1, 0x80000000, 12], [31, 4, 2], direction='RIGHT')
    binary('bitshift_left_uint64', 'BitShift', TP.UINT64, [1, 2**63 + 1, 3], [63, 1, 62], direction='LEFT')

    # Unary integer ops at the edges.
    unary('neg_int8', 'Neg', TP.INT8, [-128, 127, 0, -5])
    unary('abs_int16', 'Abs', TP.INT16, [-32768, -7, 7, 0])
    unary('sign_int32', 'Sign', TP.INT32, [-2**31, -1, 0, 1, 2**31 - 1])
    unary('sign_float32', 'Sign', TP.FLOAT, [-2.5, -0.0, 0.0, 3.0, float('-inf')])
    unary('neg_float16', 'Neg', TP.FLOAT16, [1.5, -0.0, 65504.0, float('inf')])
    binary('pow_int32', 'Pow', TP.INT32, [2, -3, 7, 0, 5], [10, 3, 0, 4, 2])
    binary('pow_float32', 'Pow', TP.FLOAT, [2.0, 9.0, -8.0, 1.5], [0.5, 0.5, 3.0, 2.0])
    case('pow_float32_int64_exponent', [helper.make_node('Pow', ['a', 'b'], ['y'])],
         [const('a', TP.FLOAT, [3], [1.5, -2.0, 10.0]), const('b', TP.INT64, [3], [3, 5, -1])], [('y', TP.FLOAT)])

    # Float arithmetic in the type (float16 computes in float32, rounds back).
    binary('add_float16_rounds', 'Add', TP.FLOAT16, [2048.0, 65504.0, 0.1, 1e-7], [1.0, 65504.0, 0.2, 1e-7])
    binary('mul_float16', 'Mul', TP.FLOAT16, [0.1, 300.0, -3.0], [0.3, 300.0, 1e-4])
    binary('div_float32', 'Div', TP.FLOAT, [1.0, -1.0, 0.0, 1.0], [3.0, 0.0, 0.0, 7.0])
    binary('sub_float64', 'Sub', TP.DOUBLE, [0.3, 1e300, 1.0], [0.1, -1e300, 1e-17])
    binary('add_bfloat16', 'Add', TP.BFLOAT16, [1.0, 256.0, 3.140625], [0.0078125, 1.0, 1.0])

    # Unary float math.
    for op in ('Sqrt', 'Exp', 'Log', 'Reciprocal'):
        unary(f'{op.lower()}_float32', op, TP.FLOAT, [0.5, 2.0, 10.0, 1e-3, 0.0])
        unary(f'{op.lower()}_float16', op, TP.FLOAT16, [0.5, 2.0, 10.0, 3.0])
    for op in ('Floor', 'Ceil', 'Round'):
        unary(f'{op.lower()}_float32', op, TP.FLOAT, [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.4, -2.6])
    unary('isnan_float32', 'IsNaN', TP.FLOAT, [float('nan'), 1.0, float('inf')], out_type=TP.BOOL)
    unary('isinf_float32', 'IsInf', TP.FLOAT, [float('inf'), float('-inf'), 1.0, float('nan')], out_type=TP.BOOL)
    unary('isinf_positive_only', 'IsInf', TP.FLOAT, [float('inf'), float('-inf'), 1.0], out_type=TP.BOOL,
          detect_negative=0)

    # Variadic ops.
    case('max_int8_three', [helper.make_node('Max', ['a', 'b', 'c'], ['y'])],
         [const('a', TP.INT8, [3], [-128, 5, 0]), const('b', TP.INT8, [3], [-1, 127, -7]),
          const('c', TP.INT8, [1], [3])], [('y', TP.INT8)])
    binary('min_uint32', 'Min', TP.UINT32, [2**32 - 1, 0, 7], [2**31, 5, 7])
    case('sum_float16', [helper.make_node('Sum', ['a', 'b', 'c'], ['y'])],
         [const('a', TP.FLOAT16, [2], [2048.0, 0.1]), const('b', TP.FLOAT16, [2], [1.0, 0.2]),
          const('c', TP.FLOAT16, [2], [1.0, 0.3])], [('y', TP.FLOAT16)])
    binary('mean_float32', 'Mean', TP.FLOAT, [1.0, 0.1, -3.0], [2.0, 0.2, 3.5])

    # Where: the attention-mask pattern and its relatives.
    mask = [t, f, t, f, f, t]
    for tname, data_type in (('float32', TP.FLOAT), ('float16', TP.FLOAT16)):
        for fill_name, fill in (('flt_max', -FLT_MAX), ('inf', float('-inf'))):
            case(f'where_mask_{tname}_{fill_name}', [helper.make_node('Where', ['c', 'x', 'y'], ['out'])],
                 [const('c', TP.BOOL, [2, 3], mask), const('x', data_type, [], [0.0]),
                  const('y', data_type, [], [fill])], [('out', data_type)])
    case('where_int32_broadcast', [helper.make_node('Where', ['c', 'x', 'y'], ['out'])],
         [const('c', TP.BOOL, [2, 1], [t, f]), const('x', TP.INT32, [3], [1, 2, 3]),
          const('y', TP.INT32, [2, 3], [-1, -2, -3, -4, -5, -6])], [('out', TP.INT32)])
    # A mask computed from integers, then Where over floats: Equal → Where → Cast.
    case('mask_chain', [helper.make_node('Equal', ['ids', 'pad'], ['is_pad']),
                        helper.make_node('Where', ['is_pad', 'low', 'zero'], ['m']),
                        helper.make_node('Cast', ['m'], ['m16'], to=TP.FLOAT16)],
         [const('ids', TP.INT64, [1, 4], [5, 0, 7, 0]), const('pad', TP.INT64, [], [0]),
          const('low', TP.FLOAT, [], [float('-inf')]), const('zero', TP.FLOAT, [], [0.0])],
         [('m', TP.FLOAT), ('m16', TP.FLOAT16)])
    case('clip_int8', [helper.make_node('Clip', ['x', 'lo', 'hi'], ['y'])],
         [const('x', TP.INT8, [5], [-128, -10, 0, 10, 127]), const('lo', TP.INT8, [], [-5]),
          const('hi', TP.INT8, [], [100])], [('y', TP.INT8)])
    case('clip_uint8_max_only', [helper.make_node('Clip', ['x', '', 'hi'], ['y'])],
         [const('x', TP.UINT8, [3], [0, 200, 255]), const('hi', TP.UINT8, [], [201])], [('y', TP.UINT8)])

    # Cast to and from the narrow float types, 4-bit integers and strings.
    specials = [0.1, -2.5, 1e-7, 70000.0, -70000.0, 65519.0, 65520.0, float('inf'), float('-inf'), float('nan'), 3.0]
    cast('cast_float32_to_float16', TP.FLOAT, specials, TP.FLOAT16)
    cast('cast_float32_to_bfloat16', TP.FLOAT, specials + [1.00390625, 1.01171875, 3.4e38], TP.BFLOAT16)
    cast('cast_float16_to_float32', TP.FLOAT16, [0.1, -2.5, 6e-8, 65504.0, float('-inf')], TP.FLOAT)
    cast('cast_bfloat16_to_float32', TP.BFLOAT16, [0.1, -2.5, 1e38, float('inf')], TP.FLOAT)
    f8values = [0.1, -2.5, 300.0, 448.0, 464.0, 500.0, -1000.0, 60000.0, 1e-3, float('inf'), float('-inf'), float('nan')]
    for target in (TP.FLOAT8E4M3FN, TP.FLOAT8E4M3FNUZ, TP.FLOAT8E5M2, TP.FLOAT8E5M2FNUZ):
        tname = helper.tensor_dtype_to_np_dtype(target).name if hasattr(helper, 'tensor_dtype_to_np_dtype') else str(target)
        tname = TP.DataType.Name(target).lower()
        for saturate in (1, 0):
            cast(f'cast_float32_to_{tname}_saturate{saturate}', TP.FLOAT, f8values, target, saturate=saturate)
    cast('cast_float8e4m3fn_to_float32', TP.FLOAT8E4M3FN, [0.1, -2.5, 448.0, 0.001953125], TP.FLOAT)
    # (onnxruntime rounds floats to 4-bit integers, halves away from zero, and wraps; the reference truncates.)
    cast('cast_float32_to_int4', TP.FLOAT, [-8.0, 7.0, 1.5, -1.5, 2.5, 0.0, 9.0, -9.0, 0.5, -0.5, float('nan')], TP.INT4)
    cast('cast_float32_to_uint4', TP.FLOAT, [0.0, 15.0, 1.5, 2.5, 7.0, 16.0, -3.0], TP.UINT4)
    cast('cast_int32_to_int4_wraps', TP.INT32, [9, -9, 100, 15, 16, -8], TP.INT4)
    cast('cast_int4_to_int32', TP.INT4, [-8, 7, -1, 0, 3], TP.INT32)
    cast('cast_uint4_to_float32', TP.UINT4, [0, 15, 9], TP.FLOAT)
    cast('cast_int32_to_int8_wraps', TP.INT32, [300, -129, 127, -2**31], TP.INT8)
    cast('cast_int64_to_uint16_wraps', TP.INT64, [-1, 65536 + 7, 40000], TP.UINT16)
    cast('cast_float32_to_int32', TP.FLOAT, [2.9, -2.9, 0.5, -1e9], TP.INT32)
    cast('cast_float32_to_bool', TP.FLOAT, [0.0, -0.0, 0.5, float('nan')], TP.BOOL)
    cast('cast_uint64_to_float32', TP.UINT64, [2**64 - 1, 2**63, 12345], TP.FLOAT)
    cast('cast_int32_to_string', TP.INT32, [0, -17, 2**31 - 1], TP.STRING)
    cast('cast_string_to_float32', TP.STRING, [b'1.5', b'-2', b'1e3', b'0.1'], TP.FLOAT)
    cast('cast_string_to_int64', TP.STRING, [b'42', b'-7', b'9223372036854775807'], TP.INT64)
    cast('cast_float32_to_string', TP.FLOAT, [1.5, -2.0, 0.1, 1e20, 1e-5, 123456789.0, -0.0, float('nan'), float('-inf')],
         TP.STRING)
    cast('cast_float16_to_string', TP.FLOAT16, [0.1, 65504.0, float('inf')], TP.STRING)
    case('castlike_int32', [helper.make_node('CastLike', ['x', 'like'], ['y'])],
         [const('x', TP.FLOAT, [4], [1.9, -1.9, 100.5, -100.5]), const('like', TP.INT32, [1], [0])], [('y', TP.INT32)])
    case('castlike_float16', [helper.make_node('CastLike', ['x', 'like'], ['y'])],
         [const('x', TP.INT64, [3], [2049, -7, 100000]), const('like', TP.FLOAT16, [], [0.0])], [('y', TP.FLOAT16)])

    # Reductions of integer types; arg extremes; cumulative sums.
    x23 = [3, -1, 7, 7, -2, 0]
    for op in ('ReduceSum', 'ReduceProd', 'ReduceMax', 'ReduceMin'):
        case(f'{op.lower()}_int32_axis1', [helper.make_node(op, ['x', 'axes'], ['y'], keepdims=1)],
             [const('x', TP.INT32, [2, 3], x23), const('axes', TP.INT64, [1], [1])], [('y', TP.INT32)])
    # (No overflow here: onnxruntime's int32 ReduceSum gives INT32_MAX for a sum past it, numpy wraps.)
    case('reducesum_int32_all', [helper.make_node('ReduceSum', ['x'], ['y'], keepdims=0)],
         [const('x', TP.INT32, [4], [2**31 - 200, 100, 50, -3])], [('y', TP.INT32)])
    case('reducesum_noop_empty_axes', [helper.make_node('ReduceSum', ['x', 'axes'], ['y'], noop_with_empty_axes=1)],
         [const('x', TP.INT64, [2, 2], [1, 2, 3, 4]), const('axes', TP.INT64, [0], [])], [('y', TP.INT64)])
    case('reducemean_int32', [helper.make_node('ReduceMean', ['x', 'axes'], ['y'], keepdims=0)],
         [const('x', TP.INT32, [2, 3], [1, 2, 4, 10, 20, 31]), const('axes', TP.INT64, [1], [1])], [('y', TP.INT32)])
    case('reducemax_uint64_axis0', [helper.make_node('ReduceMax', ['x', 'axes'], ['y'], keepdims=0)],
         [const('x', TP.UINT64, [2, 2], [2**64 - 1, 1, 2**63, 2]), const('axes', TP.INT64, [1], [0])], [('y', TP.UINT64)])
    for op in ('ArgMax', 'ArgMin'):
        for last in (0, 1):
            case(f'{op.lower()}_int32_last{last}', [helper.make_node(op, ['x'], ['y'], axis=1, keepdims=0,
                                                                       select_last_index=last)],
                 [const('x', TP.INT32, [2, 3], x23)], [('y', TP.INT64)])
    case('argmax_uint8_keepdims', [helper.make_node('ArgMax', ['x'], ['y'], axis=0)],
         [const('x', TP.UINT8, [2, 3], [255, 1, 128, 2, 200, 127])], [('y', TP.INT64)])
    case('argmin_float16', [helper.make_node('ArgMin', ['x'], ['y'], axis=-1)],
         [const('x', TP.FLOAT16, [2, 2], [0.1, -0.1, float('-inf'), 3.0])], [('y', TP.INT64)])
    for exclusive in (0, 1):
        for reverse in (0, 1):
            case(f'cumsum_int32_ex{exclusive}_rev{reverse}',
                 [helper.make_node('CumSum', ['x', 'axis'], ['y'], exclusive=exclusive, reverse=reverse)],
                 [const('x', TP.INT32, [2, 3], [1, 2, 3, 4, 5, 6]), const('axis', TP.INT64, [], [1])], [('y', TP.INT32)])
    case('cumsum_float32_axis0', [helper.make_node('CumSum', ['x', 'axis'], ['y'])],
         [const('x', TP.FLOAT, [3, 2], [0.1, 1.0, 0.2, 2.0, 0.3, 3.0]), const('axis', TP.INT32, [], [0])], [('y', TP.FLOAT)])
    case('cumsum_uint32_wraps', [helper.make_node('CumSum', ['x', 'axis'], ['y'])],
         [const('x', TP.UINT32, [4], [2**32 - 2, 1, 1, 1]), const('axis', TP.INT64, [], [0])], [('y', TP.UINT32)])

    # Generators.
    unary('nonzero_int32', 'NonZero', TP.INT32, [0, 3, 0, -1, 5, 0], out_type=TP.INT64, dims=[2, 3])
    unary('nonzero_bool', 'NonZero', TP.BOOL, [t, f, f, t], out_type=TP.INT64)
    unary('nonzero_float32', 'NonZero', TP.FLOAT, [0.0, -0.0, float('nan'), 1e-30], out_type=TP.INT64)
    for tname, data_type, values in (('int32', TP.INT32, [-3, 10, 4]), ('int16', TP.INT16, [10, -5, -3]),
                                     ('int64', TP.INT64, [5, 5, 1]), ('float32', TP.FLOAT, [0.5, 2.0, 0.25])):
        case(f'range_{tname}', [helper.make_node('Range', ['s', 'l', 'd'], ['y'])],
             [const('s', data_type, [], values[:1]), const('l', data_type, [], values[1:2]),
              const('d', data_type, [], values[2:])], [('y', data_type)])
    for tname, value in (('int32', const('v', TP.INT32, [1], [-7])), ('bool', const('v', TP.BOOL, [1], [True])),
                         ('float16', const('v', TP.FLOAT16, [1], [0.1])), ('uint64', const('v', TP.UINT64, [1], [2**64 - 2]))):
        case(f'constantofshape_{tname}', [helper.make_node('ConstantOfShape', ['shape'], ['y'], value=value)],
             [const('shape', TP.INT64, [2], [2, 3])], [('y', value.data_type)])
    case('onehot_int64_axis0', [helper.make_node('OneHot', ['i', 'depth', 'v'], ['y'], axis=0)],
         [const('i', TP.INT64, [3], [0, -1, 5]), const('depth', TP.INT64, [], [4]),
          const('v', TP.INT32, [2], [-1, 9])], [('y', TP.INT32)])

    # The attention-mask pattern with a runtime input: folded mask, then a float Add that runs.
    x = np.array([[1.5, -2.0, 0.0], [3.0, 4.0, -5.0]], dtype=np.float32)
    case('mask_pattern', [helper.make_node('Where', ['c', 'zero', 'low'], ['mask']),
                          helper.make_node('Add', ['x', 'mask'], ['y'])],
         [const('c', TP.BOOL, [2, 3], mask), const('zero', TP.FLOAT, [], [0.0]), const('low', TP.FLOAT, [], [-FLT_MAX])],
         [('y', TP.FLOAT)], inputs=[helper.make_tensor_value_info('x', TP.FLOAT, [2, 3])], feeds={'x': x})

    with open(os.path.join(ROOT, 'manifest.json'), 'w') as f:
        json.dump({'generator': 'Scripts/generate_typed_folding_references.py', 'onnx': onnx.__version__,
                   'onnxruntime': ort.__version__, 'numpy': np.__version__, 'opset': OPSET,
                   'cases': dict(sorted(manifest.items()))}, f, indent=1)
        f.write('\n')
    fallbacks = sum(1 for v in manifest.values() if not v.startswith('onnxruntime'))
    print(f'{len(manifest)} cases, {fallbacks} from onnx.reference')


if __name__ == '__main__':
    main()
