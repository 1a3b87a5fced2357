"""Writes the JPEG test images of Tests/LayerKitTests/Fixtures/jpeg and, for
each, the pixels Pillow decodes from it as a 1xCxHxW float32 .npy in [0, 1]
(value / 255), the reference LayerKit's libjpeg-turbo decoder must match.

Small seeded images (16x12 and odd sizes) in the forms cameras and tools
write: baseline RGB with 4:2:0 and 4:4:4 chroma, progressive, gray (one
channel), an odd size with 4:2:2, plus files LayerKit must refuse with a
clear error: a CMYK JPEG, a truncated file and one with a corrupt header.
The valid ones are also the seeds of the fuzzer's jpeg target.
Run with /work/venv/bin/python (numpy, Pillow).
"""
import io
import os
import shutil

import numpy as np
from PIL import Image

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
OUT = os.path.join(ROOT, 'Tests', 'LayerKitTests', 'Fixtures', 'jpeg')
SEEDS = os.path.join(ROOT, 'Fuzz', 'corpus', 'jpeg')  # the fuzzer's jpeg target starts from these


def picture(width, height, seed):
    """Smooth colour gradients plus seeded noise: JPEG-like content with edges."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    rgb = np.stack([255 * x / max(1, width - 1), 255 * y / max(1, height - 1), 128 + 100 * np.sin(x + y)], axis=-1)
    rgb += rng.normal(0, 20, rgb.shape)
    return np.clip(rgb, 0, 255).astype(np.uint8)


def save(name, image, **options):
    path = os.path.join(OUT, name + '.jpg')
    image.save(path, 'JPEG', **options)
    decoded = np.asarray(Image.open(path))
    planes = decoded[None, None] if decoded.ndim == 2 else decoded.transpose(2, 0, 1)[None]
    np.save(os.path.join(OUT, name + '.npy'), (planes.astype(np.float32) / np.float32(255)))


def main():
    os.makedirs(OUT, exist_ok=True)
    rgb = Image.fromarray(picture(16, 12, 1))
    save('rgb_420', rgb, quality=90, subsampling=2)
    save('rgb_444', rgb, quality=95, subsampling=0)
    save('progressive', rgb, quality=85, progressive=True)
    save('gray', Image.fromarray(picture(16, 12, 2)[:, :, 0]), quality=90)
    save('odd_422', Image.fromarray(picture(15, 11, 3)), quality=80, subsampling=1)
    # Refused: CMYK, a truncated file, a corrupt frame header.
    Image.fromarray(picture(16, 12, 4)).convert('CMYK').save(os.path.join(OUT, 'cmyk.jpg'), 'JPEG')
    buffer = io.BytesIO()
    rgb.save(buffer, 'JPEG', quality=90)
    data = buffer.getvalue()
    with open(os.path.join(OUT, 'truncated.jpg'), 'wb') as f:
        f.write(data[:len(data) // 2])
    sof = data.index(b'\xff\xc0')
    corrupt = bytearray(data)
    corrupt[sof + 5:sof + 9] = b'\x00\x00\x00\x00'  # height and width 0
    with open(os.path.join(OUT, 'zero_size.jpg'), 'wb') as f:
        f.write(bytes(corrupt))
    os.makedirs(SEEDS, exist_ok=True)
    for name in ['rgb_420', 'gray', 'progressive', 'odd_422']:
        shutil.copy(os.path.join(OUT, name + '.jpg'), SEEDS)


if __name__ == '__main__':
    main()
