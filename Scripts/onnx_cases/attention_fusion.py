#!/usr/bin/env python3
"""Reference cases (family `attention_fusion`) for the attention fusion
(ModelGraph+Attention.swift): scaled dot-product attention as the exporters
decompose it, MatMul -> [scale] -> [Add mask] -> Softmax -> [IsNaN, Where] ->
MatMul, which LayerKit runs as one Attention step, and near misses it must
leave as they are. onnxruntime runs each node on its own (optimizations off),
so the outputs are the unfused results; each fused case is also checked here
against float64 numpy attention, so a case is only written when both agree.
Tests/LayerKitTests/AttentionFusionTests.swift checks which steps each model
becomes. Every input value is fp16-exact. Run:
  /tmp/ort-venv/bin/python -P Scripts/onnx_cases/attention_fusion.py"""
import os
import sys

# math.py in this folder shadows the standard `math` module (numpy imports
# it): the folder goes to the end of the path.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or '.') != HERE] + [HERE]

import numpy as np  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from common import reset, save_case, tensor_info  # noqa: E402

FAMILY = 'attention_fusion'
reset(FAMILY)
rng = np.random.default_rng(20261204)


def data(*shape):
    """Uniform values in [-2, 2) rounded to fp16."""
    return rng.uniform(-2, 2, size=shape).astype(np.float16).astype(np.float32)


def const(name, value, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def node(op, inputs, output, **attributes):
    return helper.make_node(op, inputs, [output], name=output, **attributes)


def attention64(q, k, v, bias, scale, guarded):
    """softmax(scale Q Kᵀ + bias) V in float64, Q, K, V [B, H, S, D]; a row
    whose every bias is -inf is zero when `guarded` (IsNaN / Where), else NaN
    (Softmax of all -inf)."""
    s = scale * (q.astype(np.float64) @ k.astype(np.float64).transpose(0, 1, 3, 2)) + bias
    masked = np.all(np.isneginf(s), axis=-1, keepdims=True)
    m = np.where(masked, 0, s.max(axis=-1, keepdims=True))
    e = np.exp(s - m)
    with np.errstate(invalid='ignore'):  # the masked rows' 0 / 0, replaced next
        p = e / e.sum(axis=-1, keepdims=True)
    p = np.where(masked, 0.0 if guarded else np.nan, p)
    return p @ v.astype(np.float64)


def check(result, reference):
    """onnxruntime's output against the float64 one (NaN where it is NaN)."""
    result = np.asarray(result, dtype=np.float64)
    assert np.array_equal(np.isnan(result), np.isnan(reference)), 'NaN rows differ'
    ok = ~np.isnan(reference)
    error = np.max(np.abs(result[ok] - reference[ok]) / (1e-6 + np.abs(reference[ok])), initial=0)
    assert np.allclose(result[ok], reference[ok], rtol=1e-4, atol=1e-5), f'float64 reference differs: {error}'


def heads_first(x):
    """[B, S, H, D] -> [B, H, S, D]."""
    return x.transpose(0, 2, 1, 3)


# BERT / GPT-2 as transformers 5 exports them (TorchScript exporter, SDPA
# decomposed): Q = Transpose(x) * c, Kt = Transpose(x, [0, 2, 3, 1]) * c,
# c = d^-1/4 on both sides; the additive mask Where(bool, 0, -inf); Softmax;
# IsNaN / Where zeroing the fully masked rows; MatMul by V; then the heads
# joined back. `mask_kind`: 'padding' ([B, 1, 1, S] from a bool [B, S]
# input), 'causal' ([B, 1, S, S], causal And padding, left padding, so the
# first rows of batch item 1 see no key).
def exporter_case(name, b, h, s, d, dv, mask_kind):
    xq, xk, xv = data(b, s, h, d), data(b, s, h, d), data(b, s, h, dv)
    valid = np.ones((b, s), dtype=bool)
    valid[1, :3] = False  # left padding in batch item 1
    if mask_kind == 'padding':
        valid[1, :] = False  # batch item 1 fully padded: every row masked
    c = np.float32(1 / np.sqrt(np.sqrt(d)))
    inits = [const('c', c), const('zero', 0.0), const('minus_inf', -np.inf), const('nan_zero', 0.0),
             const('join', [b, s, h * dv], np.int64)]
    nodes = [node('Transpose', ['xq'], 'q', perm=[0, 2, 1, 3]), node('Mul', ['q', 'c'], 'q_scaled'),
             node('Transpose', ['xk'], 'kt', perm=[0, 2, 3, 1]), node('Mul', ['kt', 'c'], 'kt_scaled'),
             node('Transpose', ['xv'], 'v', perm=[0, 2, 1, 3]),
             node('MatMul', ['q_scaled', 'kt_scaled'], 'scores')]
    if mask_kind == 'padding':
        inits.append(const('mask_shape', [b, 1, 1, s], np.int64))
        nodes.append(node('Reshape', ['attention_mask', 'mask_shape'], 'allowed'))
        allowed = valid.reshape(b, 1, 1, s)
    else:
        causal = np.tril(np.ones((s, s), dtype=bool)).reshape(1, 1, s, s)
        inits += [const('causal', causal, bool), const('mask_shape', [b, 1, 1, s], np.int64)]
        nodes += [node('Reshape', ['attention_mask', 'mask_shape'], 'padding'),
                  node('And', ['causal', 'padding'], 'allowed')]
        allowed = causal & valid.reshape(b, 1, 1, s)
    nodes += [node('Where', ['allowed', 'zero', 'minus_inf'], 'mask'),
              node('Add', ['scores', 'mask'], 'masked'),
              node('Softmax', ['masked'], 'p', axis=-1),
              node('IsNaN', ['p'], 'p_nan'), node('Where', ['p_nan', 'nan_zero', 'p'], 'p_guarded'),
              node('MatMul', ['p_guarded', 'v'], 'context'),
              node('Transpose', ['context'], 'context_t', perm=[0, 2, 1, 3]),
              node('Reshape', ['context_t', 'join'], 'y')]
    feeds = {'xq': xq, 'xk': xk, 'xv': xv, 'attention_mask': valid}
    inputs = [tensor_info('xq', xq), tensor_info('xk', xk), tensor_info('xv', xv),
              tensor_info('attention_mask', valid, TensorProto.BOOL)]
    results = save_case(FAMILY, name, nodes, inputs, [tensor_info('y', (b, s, h * dv))], inits, opset=17,
                        input_data=feeds)
    bias = np.where(allowed, 0.0, -np.inf)
    reference = attention64(heads_first(xq), heads_first(xk), heads_first(xv), bias, 1 / np.sqrt(d), True)
    check(results[0], heads_first(reference).reshape(b, s, h * dv))


exporter_case('bert_padding_mask', 2, 3, 37, 8, 5, 'padding')
exporter_case('gpt2_causal_mask', 2, 2, 21, 16, 16, 'causal')
# Past one tile of query rows (32) and one block of keys (128), in both.
exporter_case('bert_long', 2, 2, 150, 8, 8, 'padding')


# ViT / Whisper encoder: the same without the mask and the NaN guard; Q, K, V
# computed inputs of [B, S, H, D]; Whisper's factors are 1 and 1 (its scale is
# in the query projection).
def unmasked_case(name, b, h, sq, sk, d, dv, c):
    xq, xk, v = data(b, sq, h, d), data(b, sk, h, d), data(b, h, sk, dv)
    inits = [const('c', c)]
    nodes = [node('Transpose', ['xq'], 'q', perm=[0, 2, 1, 3]), node('Mul', ['q', 'c'], 'q_scaled'),
             node('Transpose', ['xk'], 'kt', perm=[0, 2, 3, 1]), node('Mul', ['kt', 'c'], 'kt_scaled'),
             node('MatMul', ['q_scaled', 'kt_scaled'], 'scores'),
             node('Softmax', ['scores'], 'p', axis=-1),
             node('MatMul', ['p', 'v'], 'y')]
    feeds = {'xq': xq, 'xk': xk, 'v': v}
    results = save_case(FAMILY, name, nodes, [tensor_info(n, a) for n, a in feeds.items()],
                        [tensor_info('y', (b, h, sq, dv))], inits, opset=17, input_data=feeds)
    reference = attention64(heads_first(xq), heads_first(xk), v, 0.0, float(np.float64(np.float32(c)) ** 2), False)
    check(results[0], reference)


unmasked_case('vit_unmasked', 1, 4, 17, 17, 8, 8, 1 / np.sqrt(np.sqrt(8)))
unmasked_case('whisper_unit_scale', 1, 2, 45, 140, 4, 6, 1.0)


# The older form: MatMul(Q, Transpose(K, [0, 1, 3, 2])) -> Div(sqrt(d)) or
# Mul(1 / sqrt(d)) -> Add(mask) -> Softmax(-1) -> MatMul(V), Q, K, V given
# [B, H, S, D]. `mask`: the mask array (a float input, or an initializer
# when `constant_mask`); a row of all -inf is NaN (no guard).
def older_case(name, b, h, sq, sk, d, dv, scaling, mask, constant_mask=False, softmax_axis=-1, scores_output=False):
    q, k, v = data(b, h, sq, d), data(b, h, sk, d), data(b, h, sk, dv)
    inits = [const('sqrt_d', np.sqrt(d)) if scaling == 'div' else const('inverse_sqrt_d', 1 / np.sqrt(d))]
    nodes = [node('Transpose', ['k'], 'kt', perm=[0, 1, 3, 2]), node('MatMul', ['q', 'kt'], 'scores')]
    nodes.append(node('Div', ['scores', 'sqrt_d'], 'scaled') if scaling == 'div'
                 else node('Mul', ['inverse_sqrt_d', 'scores'], 'scaled'))
    feeds = {'q': q, 'k': k, 'v': v}
    if mask is not None:
        if constant_mask:
            inits.append(const('mask', mask))
        else:
            feeds['mask'] = mask
        nodes.append(node('Add', ['mask', 'scaled'], 'masked'))
    nodes += [node('Softmax', ['masked' if mask is not None else 'scaled'], 'p', axis=softmax_axis),
              node('MatMul', ['p', 'v'], 'y')]
    outputs = [tensor_info('y', (b, h, sq, dv))] + ([tensor_info('scores', (b, h, sq, sk))] if scores_output else [])
    results = save_case(FAMILY, name, nodes, [tensor_info(n, a) for n, a in feeds.items()], outputs, inits,
                        opset=17, input_data=feeds)
    if softmax_axis == -1:
        divisor = np.float64(np.float32(np.sqrt(d))) if scaling == 'div' else 1 / np.float64(np.float32(1 / np.sqrt(d)))
        check(results[0], attention64(q, k, v, 0.0 if mask is None else mask.astype(np.float64), 1 / divisor, False))


b, h, s, d = 2, 3, 19, 8
finite = np.where(rng.uniform(size=(b, 1, 1, s)) < 0.3, np.float32(np.finfo(np.float32).min), 0).astype(np.float32)
finite[1, ..., :] = np.finfo(np.float32).min  # every key masked by the finite minimum: uniform weights
older_case('older_div_finite_mask', b, h, s, s, d, 6, 'div', finite)
rows = np.where(np.tril(np.ones((s, s))) > 0, 0, -np.inf).astype(np.float32).reshape(1, 1, s, s)
rows[0, 0, 4, :] = -np.inf  # a fully masked row without the guard: NaN, as Softmax makes it
older_case('older_mul_constant_mask_nan_row', b, h, s, s, d, 6, 'mul', rows, constant_mask=True)
older_case('older_mask_per_head', b, h, 7, 11, d, 5, 'div', data(b, h, 7, 11))
older_case('older_rank2_mask', 1, 2, 9, 9, 4, 4, 'mul', data(9, 9))

# Near misses, left unfused: Softmax along the queries; the scores also a
# graph output (a second reader); a mask broadcast along the keys.
older_case('near_softmax_axis2', 1, 2, 9, 9, 4, 4, 'div', None, softmax_axis=2)
older_case('near_scores_read_twice', 1, 2, 9, 9, 4, 4, 'div', None, scores_output=True)
older_case('near_mask_broadcast_keys', 1, 2, 9, 9, 4, 4, 'div', data(1, 2, 9, 1))


# GPT-2's decode step as torch.onnx exports it with its KV cache: one query
# row; K and V the Concat of the past and the new position, each also a
# graph output (the present); the keys' Transpose [0, 1, 3, 2]; a Cast to
# float (a no-op) between Softmax and the product with V; a finite mask that
# hides the window's left padding (TokenGenerator's decode window).
def decode_case(name, h, past, d):
    q, k_new, v_new = data(1, h, 1, d), data(1, h, 1, d), data(1, h, 1, d)
    k_past, v_past = data(1, h, past, d), data(1, h, past, d)
    mask = np.zeros((1, 1, 1, past + 1), dtype=np.float32)
    mask[..., :3] = np.finfo(np.float32).min  # three padded slots
    inits = [const('scale', 1 / np.sqrt(d)), const('mask', mask)]
    nodes = [node('Concat', ['k_past', 'k_new'], 'present_k', axis=-2),
             node('Concat', ['v_past', 'v_new'], 'present_v', axis=-2),
             node('Transpose', ['present_k'], 'kt', perm=[0, 1, 3, 2]),
             node('MatMul', ['q', 'kt'], 'scores'), node('Mul', ['scores', 'scale'], 'scaled'),
             node('Add', ['scaled', 'mask'], 'masked'), node('Softmax', ['masked'], 'p', axis=-1),
             node('Cast', ['p'], 'p_float', to=TensorProto.FLOAT), node('MatMul', ['p_float', 'present_v'], 'y')]
    feeds = {'q': q, 'k_past': k_past, 'k_new': k_new, 'v_past': v_past, 'v_new': v_new}
    outputs = [tensor_info('y', (1, h, 1, d)), tensor_info('present_k', (1, h, past + 1, d)),
               tensor_info('present_v', (1, h, past + 1, d))]
    results = save_case(FAMILY, name, nodes, [tensor_info(n, a) for n, a in feeds.items()], outputs, inits,
                        opset=17, input_data=feeds)
    keys, values = np.concatenate([k_past, k_new], axis=2), np.concatenate([v_past, v_new], axis=2)
    check(results[0], attention64(q, keys, values, mask.astype(np.float64), float(np.float32(1 / np.sqrt(d))), False))


decode_case('gpt2_kv_decode', 3, 140, 16)
