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
