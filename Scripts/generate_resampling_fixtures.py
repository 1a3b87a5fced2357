"""Writes the picture-preprocessing references of
Tests/LayerKitTests/Fixtures/resampling: what Pillow and numpy (float64)
make of two seeded pictures, which LayerKit's ImageInputOptions must match
within 2/255 per pixel.

- photo.png (61x47 RGB, edges and noise): for each of Pillow's BILINEAR,
  NEAREST and BICUBIC, `Image.resize` of the shorter side to 20 (shrinking,
  antialiased) then a centre crop of 18x16, and of the shorter side to 72
  (enlarging) then a centre crop of 40x36; `<filter>_down.npy`,
  `<filter>_up.npy`, 1x3xHxW float32 in [0, 1] (value / 255).
- photo.jpg (400x300, quality 90): torchvision's classification recipe done
  by hand, Resize(256) (bilinear, the longer side int(256 * long / short)),
  CenterCrop(224) (offsets round((size - 224) / 2)), ToTensor (/ 255),
  Normalize(ImageNet mean and std) in numpy float64; `imagenet_224.npy`
  holds every 4th row and column (1x3x56x56 float32) of the 224x224 result,
  `imagenet_224_nearest_channels_last_bgr_255.npy` the same recipe with
  NEAREST, BGR order, 0..255 pixels and channels last (1x56x56x3). The JPEG
  is also the photo of Docs/CLASSIFY.md.
Run with a Python that has numpy and Pillow (13.0.0 made the committed files).
"""
import os

import numpy as np
from PIL import Image

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
OUT = os.path.join(ROOT, 'Tests', 'LayerKitTests', 'Fixtures', 'resampling')
FILTERS = {'bilinear': Image.Resampling.BILINEAR, 'nearest': Image.Resampling.NEAREST,
           'bicubic': Image.Resampling.BICUBIC}
MEAN = np.array([0.485, 0.456, 0.406])
STD = np.array([0.229, 0.224, 0.225])


def picture(width, height, seed, noise):
    """Gradients, a sharp-edged disc and stripes, plus seeded noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    disc = ((x - width * 0.6) ** 2 + (y - height * 0.45) ** 2) < (min(width, height) * 0.3) ** 2
    rgb = np.stack([255 * x / (width - 1), 255 * y / (height - 1), 128 + 100 * np.sin(x / 3.0 + y / 5.0)], axis=-1)
    rgb[disc] = [250, 40, 10]
    rgb[:, ::7] = 0
    rgb += rng.normal(0, noise, rgb.shape)
    return Image.fromarray(np.clip(rgb, 0, 255).astype(np.uint8))


def resized(image, side, resample):
    """torchvision's Resize(side) for a PIL image: the shorter side to `side`."""
    width, height = image.size
    short, long = min(width, height), max(width, height)
    other = int(side * long / short)
    return image.resize((side, other) if width <= height else (other, side), resample)


def cropped(image, width, height):
    """torchvision's CenterCrop((height, width))."""
    left = int(round((image.size[0] - width) / 2.0))
    top = int(round((image.size[1] - height) / 2.0))
    return image.crop((left, top, left + width, top + height))


def planes(image):
    """1x3xHxW float32 in [0, 1]."""
    return (np.asarray(image).astype(np.float32) / np.float32(255)).transpose(2, 0, 1)[None]


def main():
    os.makedirs(OUT, exist_ok=True)
    small = picture(61, 47, 1, 25)
    small.save(os.path.join(OUT, 'photo.png'))
    for name, resample in FILTERS.items():
        np.save(os.path.join(OUT, name + '_down.npy'), planes(cropped(resized(small, 20, resample), 18, 16)))
        np.save(os.path.join(OUT, name + '_up.npy'), planes(cropped(resized(small, 72, resample), 40, 36)))
    picture(400, 300, 2, 12).save(os.path.join(OUT, 'photo.jpg'), 'JPEG', quality=90)
    photo = Image.open(os.path.join(OUT, 'photo.jpg')).convert('RGB')
    for name, resample in [('imagenet_224', Image.Resampling.BILINEAR),
                           ('imagenet_224_nearest_channels_last_bgr_255', Image.Resampling.NEAREST)]:
        pixels = np.asarray(cropped(resized(photo, 256, resample), 224, 224)).astype(np.float64) / 255
        if name == 'imagenet_224':
            tensor = ((pixels - MEAN) / STD).transpose(2, 0, 1)[None, :, ::4, ::4]
        else:
            # 0..255 pixels, BGR, channels last: the same colours' mean and std times 255.
            tensor = ((pixels * 255 - MEAN * 255) / (STD * 255))[None, ::4, ::4, ::-1]
        np.save(os.path.join(OUT, name + '.npy'), np.ascontiguousarray(tensor.astype(np.float32)))


if __name__ == '__main__':
    main()
