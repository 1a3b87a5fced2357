#!/usr/bin/env python3
"""A small image-classification folder for the fine-tune example in Docs/TRAINING.md:
COUNT 64x64 RGB PNGs of seeded noise, each tinted red, green or blue (its class, 0, 1
or 2), and labels.txt with one class index a line in file-name order.

    python3 Scripts/make_finetune_images.py OUT_DIR [--count 48] [--seed 1]

Standard library only (zlib writes the PNGs), so it runs anywhere Python 3 does.
"""

import argparse
import os
import random
import struct
import zlib


def png(width, height, rows):
    """The bytes of an 8-bit RGB PNG whose pixel rows are `rows` (bytes of 3 * width)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    raw = b"".join(b"\x00" + row for row in rows)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--count", type=int, default=48)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(args.seed)
    labels = []
    for i in range(args.count):
        label = rng.randrange(3)
        rows = []
        for _ in range(64):
            row = bytearray()
            for _ in range(64):
                pixel = [rng.randrange(0, 160) for _ in range(3)]
                pixel[label] = min(255, pixel[label] + 96)
                row += bytes(pixel)
            rows.append(bytes(row))
        with open(os.path.join(args.out, f"image_{i:03d}.png"), "wb") as f:
            f.write(png(64, 64, rows))
        labels.append(label)
    with open(os.path.join(args.out, "labels.txt"), "w") as f:
        f.write("".join(f"{label}\n" for label in labels))
    print(f"wrote {args.count} images and labels.txt to {args.out}")


if __name__ == "__main__":
    main()
