#!/usr/bin/env python3
"""Writes the fuzzer's seed corpus (run from Fuzz/corpus): small valid and
near-valid inputs for each parser. Standard library only."""
import struct, zlib

def npy(shape, descr='<f4', version=1, body=None, dictext=None, pad=True):
    tup = ('(%d,)' % shape[0]) if len(shape) == 1 else '(' + ', '.join(map(str, shape)) + ')'
    d = (dictext or "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, tup)).encode()
    ls = 2 if version == 1 else 4
    total = ((8 + ls + len(d) + 1 + 63) // 64) * 64 if pad else 8 + ls + len(d) + 1
    hl = total - 8 - ls
    hdr = b'\x93NUMPY' + bytes([version, 0]) + hl.to_bytes(ls, 'little') + d + b' ' * (hl - len(d) - 1) + b'\n'
    n = 1
    for s in shape: n *= s
    if body is None:
        fmt = {'<f4': 'f', '<f2': 'e', '<f8': 'd'}[descr]
        body = struct.pack('<%d%s' % (n, fmt), *[((i * 7) % 11 - 5) / 3 for i in range(n)])
    return hdr + body

def write(path, data):
    open(path, 'wb').write(data if isinstance(data, bytes) else data.encode())

c = 'npy/'
write(c + 'f4_2x3.npy', npy([2, 3]))
write(c + 'f2_4.npy', npy([4], '<f2'))
write(c + 'f8_1x2x2x2.npy', npy([1, 2, 2, 2], '<f8'))
write(c + 'scalar.npy', npy([]))
write(c + 'empty_0x5.npy', npy([0, 5]))
write(c + 'v2_f4_3.npy', npy([3], version=2))
write(c + 'v3_f4_2.npy', npy([2], version=3))
write(c + 'spacing_quotes.npy', npy([2, 2], dictext='{"descr":"<f4","fortran_order":False,"shape":(2L,2L)}', pad=False))
write(c + 'fortran.npy', npy([2], dictext="{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }"))
write(c + 'truncated.npy', npy([4, 4])[:100])
write(c + 'huge_shape.npy', npy([1 << 40], body=b''))
write(c + 'nan.npy', npy([1], body=b'\0\0\xc0\x7f'))

def chunk(t, data):
    return struct.pack('>I', len(data)) + t + data + struct.pack('>I', zlib.crc32(t + data))

def png(w, h, depth, color, rows, extra=b''):
    ihdr = struct.pack('>IIBBBBB', w, h, depth, color, 0, 0, 0)
    raw = b''.join(b'\0' + r for r in rows)
    return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', ihdr) + extra
            + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))

c = 'png/'
write(c + 'gray8_3x2.png', png(3, 2, 8, 0, [bytes([0, 128, 255]), bytes([10, 20, 30])]))
write(c + 'rgb8_2x2.png', png(2, 2, 8, 2, [bytes(range(6)), bytes(range(100, 106))]))
write(c + 'rgba8_2x1.png', png(2, 1, 8, 6, [bytes([1, 2, 3, 4, 5, 6, 7, 8])]))
write(c + 'graya8_2x1.png', png(2, 1, 8, 4, [bytes([1, 2, 3, 4])]))
write(c + 'gray16_2x2.png', png(2, 2, 16, 0, [bytes([0, 1, 255, 255]), bytes([128, 0, 0, 0])]))
write(c + 'gray1_8x2.png', png(8, 2, 1, 0, [b'\xa5', b'\x5a']))
write(c + 'palette_trns_2x2.png', png(2, 2, 8, 3, [b'\0\1', b'\1\0'],
      extra=chunk(b'PLTE', bytes([255, 0, 0, 0, 0, 255])) + chunk(b'tRNS', b'\x80')))
write(c + 'gray_trns_2x1.png', png(2, 1, 8, 0, [b'\0\x10'], extra=chunk(b'tRNS', b'\0\x10')))
write(c + 'rgb16_1x1.png', png(1, 1, 16, 2, [bytes([1, 2, 3, 4, 5, 6])]))

formulas = ['x / (1 + exp(-beta * x))', 'max(x, alpha * x)', 'where(x > 0, x, alpha * (exp(x) - 1))',
            'clamp(x, lo, hi)', 'x * tanh(softplus(x))', '-x^2 ^ 0.5',
            'pow(x, 2) + sqrt(abs(x)) - log1p(x) * expm1(x)', '0.5 * x * (1 + erf(x / 1.4142135))',
            '1e-3 * x + 3.4e38 - .5', 'min(x, 6) >= 0 != (x <= 1) == (x < 2)',
            'sigmoid(x) * reciprocal(x + 1) / floor(x) + ceil(sin(x)) - cos(x)', 'x + (', 'f(x)', 'x $ 1', '1e39']
for i, f in enumerate(formulas): write('formula/f%02d.txt' % i, f)

values = ['1x6x256x256', '8', '1x2x3x4x5', '0x3', '-10,10', ' 0.5 , 1e3 ', 'beta=0.5', 'approximate=tanh',
          'beta=w.npy', '=x', '42', '18446744073709551615', 'gpu', '9223372036854775807x2']
for i, v in enumerate(values): write('cli/v%02d.txt' % i, v)

# ONNX: small fixture models (Scripts/generate_model_fixtures.py), plus hand-built
# ones for what the fixtures lack: FLOAT16 and DOUBLE initializers, typed and
# packed fields, attributes of every kind, symbolic dims.
import os, shutil
os.makedirs('onnx', exist_ok=True)
fixtures = '../../Tests/LayerKitTests/Fixtures/models/'
for name in ['article_beta1', 'article_perchannel', 'typed_fields', 'custom_missing', 'dynamic_reshape']:
    shutil.copyfile(fixtures + name + '.onnx', 'onnx/' + name + '.onnx')
# One reference case of each op family (Scripts/onnx_cases), for the mutations to cut and corrupt.
cases = '../../Tests/LayerKitTests/Fixtures/onnx-cases/'
for family, case in [('layout', 'resize_linear_asymmetric'), ('layout', 'shufflenet_block'), ('norm', 'instancenorm_c3_n2'),
                     ('data', 'operator_index'), ('math', 'matmul_1d_3d'), ('conv', 'convtranspose2d_output_shape'),
                     ('ml', 'logistic_multiclass')]:
    shutil.copyfile(cases + family + '/' + case + '/model.onnx', 'onnx/case_' + case + '.onnx')

def varint(v):
    v &= (1 << 64) - 1
    out = b''
    while v >= 0x80:
        out += bytes([v & 0x7F | 0x80]); v >>= 7
    return out + bytes([v])

def pb_int(field, v): return varint(field << 3) + varint(v)
def pb_bytes(field, b): return varint(field << 3 | 2) + varint(len(b)) + b
def pb_str(field, s): return pb_bytes(field, s.encode())
def pb_float(field, f): return varint(field << 3 | 5) + struct.pack('<f', f)

def tensor(name, dims, dtype, fields):
    return b''.join(pb_int(1, d) for d in dims) + pb_int(2, dtype) + pb_str(8, name) + fields

value = pb_str(1, 'x') + pb_bytes(2, pb_bytes(1, pb_int(1, 1) + pb_bytes(2, pb_bytes(1, pb_str(2, 'N'))
                                                                              + pb_bytes(1, pb_int(1, 4)))))
attributes = [pb_str(1, 'alpha') + pb_float(2, 0.5) + pb_int(20, 1), pb_str(1, 'axis') + pb_int(3, -1) + pb_int(20, 2),
              pb_str(1, 'mode') + pb_str(4, 'SAME_UPPER') + pb_int(20, 3),
              pb_str(1, 'pads') + pb_bytes(8, b''.join(varint(v) for v in [1, 1, 0, 0])) + pb_int(20, 7),
              pb_str(1, 'scales') + pb_bytes(7, struct.pack('<2f', 1.5, -2)) + pb_int(20, 6),
              pb_str(1, 'names') + pb_str(9, 'a') + pb_str(9, 'b') + pb_int(20, 8),
              pb_str(1, 'value') + pb_bytes(5, tensor('v', [1], 7, pb_int(7, 3))) + pb_int(20, 4)]
node = pb_str(1, 'x') + pb_str(1, '') + pb_str(1, 'h') + pb_str(2, 'y') + pb_str(3, 'op') + pb_str(4, 'Thing') \
    + pb_str(7, 'layerkit') + b''.join(pb_bytes(5, a) for a in attributes)
initializers = [tensor('h', [2, 2], 10, pb_bytes(9, struct.pack('<4e', 1, -0.0, 65504, 6e-8))),
                tensor('h32', [2], 10, pb_bytes(5, varint(0x3C00) + varint(0x7C00))),
                tensor('d', [3], 11, pb_bytes(10, struct.pack('<3d', 0.1, -1e300, 2))),
                tensor('i', [2], 6, pb_int(5, 7) + pb_int(5, -7)), tensor('s', [], 1, pb_float(4, 2.5))]
graph = pb_bytes(1, node) + pb_str(2, 'g') + b''.join(pb_bytes(5, t) for t in initializers) \
    + pb_bytes(11, value) + pb_bytes(12, pb_str(1, 'y'))
write('onnx/handmade.onnx', pb_int(1, 10) + pb_bytes(7, graph) + pb_bytes(8, pb_str(1, '') + pb_int(2, 24))
      + pb_bytes(8, pb_str(1, 'layerkit') + pb_int(2, 1)))

# Training checkpoints (TrainingCheckpoint's documented layout, version 1).
import json, os

def checkpoint(tensors, **fields):
    header = {'step': 3, 'epoch': 0, 'batchInEpoch': 3, 'seed': 18446744073709551615,
              'counters': {'step': 3, 'w.step': 3}, 'epochLossSum': 0.75,
              'optimizer': {'name': 'adam', 'hyperParameters': {'lr': 0.001, 'eps': 1e-08}},
              'schedule': {'name': 'step', 'state': {'gamma': 0.5}},
              'model': {'name': 'm.onnx', 'byteCount': 100, 'crc32': 305419896},
              'tensors': [{'name': n, 'shape': s} for n, s, _ in tensors]}
    header.update(fields)
    text = json.dumps(header, sort_keys=True, separators=(',', ':')).encode()
    body = b'\x89LKCKPT\n' + struct.pack('<II', 1, len(text)) + text
    body += b''.join(struct.pack('<%df' % len(v), *v) for _, _, v in tensors)
    return body + struct.pack('<I', zlib.crc32(body))

c = 'checkpoint/'
os.makedirs(c, exist_ok=True)
write(c + 'adam.lkckpt', checkpoint([('w', [2, 3], [0.5, -1, 2, 0, -0.0, 3e38]), ('exp_avg/w', [2, 3], [0.1] * 6),
                                     ('s', [], [1.5]), ('empty', [0, 2], [])]))
write(c + 'no_tensors.lkckpt', checkpoint([]))
write(c + 'truncated.lkckpt', checkpoint([('w', [4], [1, 2, 3, 4])])[:-7])
