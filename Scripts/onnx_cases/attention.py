#!/usr/bin/env python3
"""ONNX reference cases for LayerKit's transformer family (folder `attention`):
Attention (grouped-query, causal, float and bool masks, past key/value caches,
the scores output, a 2048-token sequence), RMSNormalization and RotaryEmbedding.

Run from the repository root:
  python -c "import sys,runpy; sys.path.append('Scripts/onnx_cases'); \
runpy.run_path('Scripts/onnx_cases/attention.py', run_name='__main__')"
Seeded (numpy default_rng), so reruns with the same versions write the same bytes.
The files hold onnxruntime's outputs; each Attention case is also checked here
against a float64 numpy form of the ONNX spec (`attention64`), written from the
spec text, so a case is only written when both references agree. Every input
value is fp16-exact, so the GPU reads the inputs onnxruntime read.
"""
import os
import sys

import numpy as np
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import reset, save_case, tensor_info  # noqa: E402

FAMILY = 'attention'
reset(FAMILY)
rng = np.random.default_rng(20261204)


def data(shape, low=-2.0, high=2.0):
    """Uniform values rounded to fp16."""
    return rng.uniform(low, high, size=shape).astype(np.float16).astype(np.float32)


def attention64(q, k, v, mask=None, past=None, causal=False, scale=None, softcap=0.0, q_heads=None, kv_heads=None):
    """Y, present key and value, the probabilities and the products
    (scale Q Kᵀ, before the softcap), in float64, from the spec: 3-D inputs split into heads, past keys first, a bool mask as
    0 / -inf and a short mask's missing keys -inf, the causal frontier
    j <= i + past length, fully masked rows zero."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    packed = q.ndim == 3
    if packed:
        def heads(x, n):
            return x.reshape(x.shape[0], x.shape[1], n, -1).transpose(0, 2, 1, 3)
        q, k, v = heads(q, q_heads), heads(k, kv_heads), heads(v, kv_heads)
    past_length = 0
    if past is not None:
        past_length = past[0].shape[2]
        k = np.concatenate([past[0].astype(np.float64), k], axis=2)
        v = np.concatenate([past[1].astype(np.float64), v], axis=2)
    present_k, present_v = k, v
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = products = scale * q @ k.transpose(0, 1, 3, 2)
    if softcap > 0:
        s = softcap * np.tanh(s / softcap)
    total = k.shape[2]
    bias = np.zeros((q.shape[2], total))
    if mask is not None:
        m = np.where(mask, 0.0, -np.inf) if mask.dtype == np.bool_ else mask.astype(np.float64)
        pad = [(0, 0)] * (m.ndim - 1) + [(0, total - m.shape[-1])]
        bias = bias + np.pad(m, pad, constant_values=-np.inf)
    if causal:
        i = np.arange(q.shape[2])[:, None]
        bias = bias + np.where(np.arange(total)[None, :] <= i + past_length, 0.0, -np.inf)
    bias = np.broadcast_to(bias, s.shape)
    s = s + bias
    live = ~np.all(np.isneginf(bias), axis=-1, keepdims=True)
    top = np.where(live, np.max(np.where(live, s, 0), axis=-1, keepdims=True), 0)
    e = np.where(live, np.exp(s - top), 0)
    p = e / np.where(live, e.sum(axis=-1, keepdims=True), 1)
    y = p @ v
    if packed:
        y = y.transpose(0, 2, 1, 3).reshape(y.shape[0], y.shape[2], -1)
    return y, present_k, present_v, p, products


def attention_case(name, q, k, v, mask=None, past=None, outputs=('Y',), attrs=None, opset=23, mask_input=False):
    """One Attention node; the mask an initializer unless `mask_input`
    (a float graph input). Asserts onnxruntime's outputs match `attention64`."""
    attrs = dict(attrs or {})
    names = ['Q', 'K', 'V']
    feeds = {'Q': q, 'K': k, 'V': v}
    inits = []
    if mask is not None:
        names.append('attn_mask')
        if mask_input:
            feeds['attn_mask'] = mask
        else:
            inits.append(numpy_helper.from_array(mask, 'attn_mask'))
    if past is not None:
        names += [''] * (4 - len(names)) + ['past_key', 'past_value']
        feeds.update(past_key=past[0], past_value=past[1])
    expected = attention64(q, k, v, mask=mask, past=past, causal=attrs.get('is_causal', 0) == 1,
                           scale=attrs.get('scale'), softcap=attrs.get('softcap', 0.0),
                           q_heads=attrs.get('q_num_heads'), kv_heads=attrs.get('kv_num_heads'))
    # The fourth output: mode 3's probabilities, or mode 0's products.
    mode = attrs.get('qk_matmul_output_mode', 0)
    assert mode in (0, 3)
    references = {o: expected[4 if i == 3 and mode == 0 else i] for i, o in enumerate(outputs) if o}
    node = helper.make_node('Attention', names, list(outputs), name=name, **attrs)
    results = save_case(FAMILY, name, [node], [tensor_info(n, feeds[n]) for n in feeds],
                        [tensor_info(o, r) for o, r in references.items()], initializers=inits, opset=opset,
                        input_data=feeds)
    for (output, reference), result in zip(references.items(), results):
        np.testing.assert_allclose(result, reference, rtol=1e-4, atol=1e-5, err_msg=f'{name}: {output}')


# The long sequence: 2048 queries and keys, 4 query heads on 2 key/value heads,
# causal. 4 heads x 2048 x 2048 scores would be 64 MiB; LayerKit holds one block.
# Values in [1, 3]: an output is a weighted mean of up to 2048 of them, which
# values of both signs would cancel to near 0, below the relative tolerance.
attention_case('attention_gqa_causal_2048', data((1, 4, 2048, 16)), data((1, 2, 2048, 16)), data((1, 2, 2048, 16), 1, 3),
               attrs={'is_causal': 1})
# Many key blocks and query tiles (300 keys, 40 queries), a float mask with
# -inf entries, one fully masked row, rescaled partial sums.
mask = data((2, 1, 40, 300), -3, 3)
mask[rng.random(mask.shape) < 0.2] = -np.inf
mask[0, 0, 7, :] = -np.inf
attention_case('attention_float_mask_300_keys', data((2, 3, 40, 8), -4, 4), data((2, 3, 300, 8), -4, 4),
               data((2, 3, 300, 6)), mask=mask)
# 3-D inputs, GQA (6 query heads on 2), a bool mask.
attention_case('attention_3d_gqa_bool_mask', data((2, 5, 48)), data((2, 7, 16)), data((2, 7, 20)),
               mask=rng.random((5, 7)) < 0.7, attrs={'q_num_heads': 6, 'kv_num_heads': 2})
# Past caches, causal (offset by the past), the present outputs.
attention_case('attention_past_causal_present', data((1, 2, 3, 8)), data((1, 2, 3, 8)), data((1, 2, 3, 8)),
               past=(data((1, 2, 5, 8)), data((1, 2, 5, 8))), outputs=('Y', 'present_key', 'present_value'),
               attrs={'is_causal': 1})
# The probabilities output (mode 3) with a softcap and a float mask given at run time.
attention_case('attention_softcap_probabilities', data((1, 2, 4, 8), -4, 4), data((1, 2, 6, 8), -4, 4),
               data((1, 2, 6, 8)), mask=data((4, 6)), outputs=('Y', '', '', 'qk_matmul_output'),
               attrs={'softcap': 1.5, 'qk_matmul_output_mode': 3, 'scale': 0.25}, mask_input=True)


# RMSNormalization ----------------------------------------------------------------
def rms64(x, scale, axis, epsilon):
    x = x.astype(np.float64)
    axes = tuple(range(axis % x.ndim, x.ndim))
    return x / np.sqrt(np.mean(x * x, axis=axes, keepdims=True) + epsilon) * scale


def one_node(name, op, feeds, inits, attrs, expected, opset=23):
    node = helper.make_node(op, list(feeds) + list(inits), ['y'], name=name, **attrs)
    results = save_case(FAMILY, name, [node], [tensor_info(n, v) for n, v in feeds.items()], [tensor_info('y', expected)],
                        initializers=[numpy_helper.from_array(v, n) for n, v in inits.items()], opset=opset,
                        input_data=feeds)
    np.testing.assert_allclose(results[0], expected, rtol=1e-4, atol=1e-5, err_msg=name)


for name, shape, scale_shape, axis, epsilon in [('rmsnorm_last', (2, 3, 64), (64,), -1, 1e-6),
                                                ('rmsnorm_axis1_broadcast_scale', (2, 3, 4, 5), (5,), 1, 1e-5)]:
    x, scale = data(shape, -4, 4), data(scale_shape)
    attrs = {'axis': axis, 'epsilon': epsilon}
    one_node(name, 'RMSNormalization', {'x': x}, {'scale': scale}, attrs, rms64(x, scale, axis, epsilon))


# RotaryEmbedding -----------------------------------------------------------------
def rotary64(x, cos, sin, positions, interleaved, rotary, heads):
    """The spec's rotation in float64, X as [batch, sequence, heads, head size]."""
    shape = x.shape
    x = x.astype(np.float64)
    x = x.reshape(shape[0], shape[1], heads, -1) if x.ndim == 3 else x.transpose(0, 2, 1, 3)
    rotary = rotary or x.shape[-1]
    if positions is not None:
        cos, sin = cos[positions], sin[positions]
    cos, sin = cos[:, :, None, :].astype(np.float64), sin[:, :, None, :].astype(np.float64)
    part = x[..., :rotary]
    x1, x2 = (part[..., 0::2], part[..., 1::2]) if interleaved else np.split(part, 2, axis=-1)
    real, imag = cos * x1 - sin * x2, sin * x1 + cos * x2
    rotated = np.stack([real, imag], axis=-1).reshape(part.shape) if interleaved else np.concatenate([real, imag], -1)
    y = np.concatenate([rotated, x[..., rotary:]], axis=-1)
    return y.reshape(shape) if len(shape) == 3 else y.transpose(0, 2, 1, 3)


angles = rng.uniform(0, 2 * np.pi, size=(20, 8))
cos_cache, sin_cache = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
positions = rng.integers(0, 20, size=(2, 5)).astype(np.int64)
x4 = data((2, 3, 5, 16))
one_node('rotary_4d_position_ids', 'RotaryEmbedding', {'x': x4}, {'cos': cos_cache, 'sin': sin_cache, 'pos': positions},
         {}, rotary64(x4, cos_cache, sin_cache, positions, False, 0, None))
x3 = data((2, 5, 3 * 20))
cos3, sin3 = cos_cache[positions][..., :6], sin_cache[positions][..., :6]
one_node('rotary_3d_interleaved_partial', 'RotaryEmbedding', {'x': x3, 'cos': cos3, 'sin': sin3}, {},
         {'num_heads': 3, 'interleaved': 1, 'rotary_embedding_dim': 12},
         rotary64(x3, cos3, sin3, None, True, 12, 3))

# Mode 0 with a softcap: the products before the softcap, as the spec's mode list
# and onnxruntime have it (onnx's reference implementation softcaps them).
attention_case('attention_softcap_products', data((1, 2, 4, 8), -4, 4), data((1, 2, 6, 8), -4, 4), data((1, 2, 6, 8)),
               outputs=('Y', '', '', 'qk_matmul_output'), attrs={'softcap': 1.5, 'qk_matmul_output_mode': 0})

# The GPU kernel's tiling (Shaders/attention.comp: 64 texel rows a workgroup, 8 keys a block):
# lengths that are multiples of neither, head sizes 8, 64 and 80, head counts not a multiple of 4,
# causal with fewer and with more queries than keys, short and fully masked mask rows, past caches
# with 3-D inputs. Appended last, so the cases above keep their random draws.
attention_case('attention_head64_odd_lengths', data((2, 5, 70, 64)), data((2, 5, 77, 64)), data((2, 5, 77, 64)))
attention_case('attention_3d_head80_gqa_causal_q_below_kv', data((1, 5, 4 * 80)), data((1, 9, 2 * 80)),
               data((1, 9, 2 * 80)), attrs={'is_causal': 1, 'q_num_heads': 4, 'kv_num_heads': 2})
# A rank-3 mask [heads, queries, keys], its last 10 keys and one row fully masked; 130 queries on 100 keys,
# causal (onnxruntime refuses a mask shorter than the keys).
rank3_mask = data((6, 130, 100), -3, 3)
rank3_mask[:, :, 90:] = -np.inf
rank3_mask[1, 3, :] = -np.inf
attention_case('attention_gqa_causal_rank3_mask_130x100', data((2, 6, 130, 8)), data((2, 2, 100, 8)),
               data((2, 2, 100, 8)), mask=rank3_mask, attrs={'is_causal': 1, 'scale': 0.3})
attention_case('attention_3d_past_present_gqa_softcap', data((2, 3, 4 * 16)), data((2, 3, 2 * 16)), data((2, 3, 2 * 24)),
               past=(data((2, 2, 6, 16)), data((2, 2, 6, 24))), outputs=('Y', 'present_key', 'present_value'),
               attrs={'q_num_heads': 4, 'kv_num_heads': 2, 'is_causal': 1, 'softcap': 2.0})
# A padding mask [batch, 1, queries, keys] given at run time (onnxruntime broadcasts no query axis).
# Values in [1, 3], as above: means of signed values near 0 would sit below the relative tolerance.
padding_mask = np.zeros((2, 1, 12, 12), np.float32)
padding_mask[1, :, :, 9:] = -np.inf
attention_case('attention_padding_mask_input_head80', data((2, 4, 12, 80)), data((2, 4, 12, 80)), data((2, 4, 12, 80), 1, 3),
               mask=padding_mask, mask_input=True)
