"""Batch inference with Ray Data over a folder of images, each image run
through a LayerKit model (the Core ML article's model: Conv -> layerkit.Swish
-> GlobalAveragePool -> Flatten -> Gemm -> Softmax on a 1x3x64x64 image).

`map_batches` hands batches to a pool of actors; each actor loads the model
once in its constructor and predicts image by image (the model's batch
dimension is 1). The script then checks that every image came back, that the
probabilities equal a serial run in this process bit for bit, and that at
least two worker processes did the work, and prints the wall time.

    python Examples/ray/batch_predict.py            # 32 generated images, 2 actors
    python Examples/ray/batch_predict.py --images DIR

Exit status 0 when every check passes, 1 otherwise.
"""

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
from PIL import Image

import layerkit

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_MODEL = REPO_ROOT / "Models" / "article.onnx"
INPUT_NAME = "image"
OUTPUT_NAME = "probabilities"
SIDE = 64


def write_images(folder: Path, count: int, seed: int) -> None:
    """Writes `count` seeded random 64x64 RGB PNGs (lossless, so every reader
    decodes the same pixels)."""
    rng = np.random.default_rng(seed)
    for index in range(count):
        pixels = rng.integers(0, 256, size=(SIDE, SIDE, 3), dtype=np.uint8)
        Image.fromarray(pixels, mode="RGB").save(folder / f"image_{index:03d}.png")


def to_input(pixels: np.ndarray) -> np.ndarray:
    """HxWx3 uint8 -> the model's 1x3xHxW float32 in [0, 1]."""
    return np.ascontiguousarray(pixels.transpose(2, 0, 1)[np.newaxis], dtype=np.float32) / np.float32(255)


def predict_one(model, pixels: np.ndarray) -> np.ndarray:
    """The model's 10 probabilities for one image."""
    return model.predict({INPUT_NAME: to_input(pixels)})[OUTPUT_NAME].reshape(-1)


class Predictor:
    """One Ray actor: loads the model once, then predicts every batch it is given."""

    def __init__(self, model_path: str):
        self.model = layerkit.Model(model_path)

    def __call__(self, batch: dict) -> dict:
        probabilities = np.stack([predict_one(self.model, pixels) for pixels in batch["image"]])
        return {
            "path": batch["path"],
            "probabilities": probabilities,
            "pid": np.full(len(probabilities), os.getpid(), dtype=np.int64),
        }


def run_ray(folder: Path, count: int, model_path: Path, actors: int, batch_size: int) -> tuple[list, float]:
    """The Ray Data pipeline; returns its rows and its wall time in seconds."""
    import ray

    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    # Start every actor (its model loaded) before the first batch, so that no
    # actor finishes the folder while the other is still loading.
    context.wait_for_min_actors_s = 300
    start = time.perf_counter()
    # One block per batch, read before the actors start: streamed, each block
    # of this small model is done before the next is read, and one actor
    # would take them all.
    dataset = ray.data.read_images(str(folder), mode="RGB", include_paths=True,
                                   override_num_blocks=max(1, count // batch_size)).materialize()
    # Two actors at 1 CPU each would leave the read task no CPU on a 2-CPU
    # cluster (a deadlock); at 0.5 each, reading and predicting overlap. One
    # task in flight per actor: a busy actor queues no blocks another could run.
    pool = ray.data.ActorPoolStrategy(size=actors, max_tasks_in_flight_per_actor=1)
    predictions = dataset.map_batches(Predictor, fn_constructor_kwargs={"model_path": str(model_path)},
                                      batch_size=batch_size, compute=pool, num_cpus=0.5)
    rows = predictions.take_all()
    return rows, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=Path, help="a folder of images (default: generate --count PNGs)")
    parser.add_argument("--count", type=int, default=32, help="images to generate (default 32)")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--num-cpus", type=int, default=2, help="the local Ray cluster's CPUs")
    args = parser.parse_args()

    import ray

    with tempfile.TemporaryDirectory(prefix="layerkit-ray-") as scratch:
        folder = args.images
        if folder is None:
            folder = Path(scratch)
            write_images(folder, args.count, seed=17)
        files = sorted(p for p in folder.iterdir() if p.suffix.lower() in (".png", ".jpg", ".jpeg"))

        start = time.perf_counter()
        ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
        started = time.perf_counter() - start
        try:
            rows, wall = run_ray(folder, len(files), args.model, args.actors, args.batch_size)
        finally:
            ray.shutdown()

        serial_model = layerkit.Model(str(args.model))
        serial_start = time.perf_counter()
        serial = {p.resolve(): predict_one(serial_model, np.asarray(Image.open(p).convert("RGB"))) for p in files}
        serial_wall = time.perf_counter() - serial_start

    failures = []
    by_path = {Path(row["path"]).resolve(): row for row in rows}
    if len(rows) != len(files) or set(by_path) != set(serial):
        failures.append(f"{len(rows)} rows for {len(files)} images ({len(set(serial) - set(by_path))} missing)")
    mismatched = [p.name for p, row in by_path.items()
                  if p in serial and row["probabilities"].tobytes() != serial[p].astype(np.float32).tobytes()]
    if mismatched:
        failures.append(f"{len(mismatched)} images differ from the serial run, e.g. {mismatched[0]}")
    rows_by_pid = Counter(int(row["pid"]) for row in rows)
    pids = ", ".join(f"{pid} ({n} rows)" for pid, n in sorted(rows_by_pid.items()))
    if len(rows_by_pid) < 2 or os.getpid() in rows_by_pid:
        failures.append(f"worker processes {pids} (driver {os.getpid()}): want two or more, not the driver")

    print(f"rows: {len(rows)} of {len(files)} images; worker PIDs: {pids}; "
          f"equal to the serial run bit for bit: {'yes' if not mismatched else 'no'}")
    print(f"wall time: Ray Data pipeline {wall:.2f} s ({args.actors} actors at 0.5 CPU, batch {args.batch_size}), "
          f"ray.init {started:.2f} s, serial run {serial_wall:.3f} s")
    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
