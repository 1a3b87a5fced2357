"""Batch inference with Ray Data over a folder of images, each image run
through a LayerKit model (the Core ML article's model: Conv -> layerkit.Swish
-> GlobalAveragePool -> Flatten -> Gemm -> Softmax on a 1x3x64x64 image).

`map_batches` hands batches to a pool of actors; each actor loads the model
once in its constructor and predicts image by image (the model's batch
dimension is 1). The script then checks that every image came back, that the
probabilities equal a serial run in this process bit for bit, and that at
least two worker processes did the work, and prints the wall time.

    python Examples/ray/batch_predict.py            # 32 generated images, a local 2-CPU Ray
    python Examples/ray/batch_predict.py --images DIR --address auto --backend gpu --gpus-per-actor 1

Exit status 0 when every check passes, 1 otherwise.
"""

import argparse
import logging
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


def predict_one(model: layerkit.Model, pixels: np.ndarray) -> np.ndarray:
    """The model's 10 probabilities for one image."""
    return model.predict({INPUT_NAME: to_input(pixels)})[OUTPUT_NAME].reshape(-1)


def choose_vulkan_device(gpu_ids: list) -> None:
    """Points LAYERKIT_DEVICE at the GPU Ray assigned this actor.

    Ray assigns GPUs by CUDA_VISIBLE_DEVICES, which Vulkan ignores: without
    this, every actor on a node would open the same Vulkan device. The Ray
    GPU id is taken as a position among the node's hardware Vulkan devices
    (CPU implementations such as lavapipe skipped), which holds where the
    Vulkan loader lists the GPUs in CUDA's order (CUDA_DEVICE_ORDER=PCI_BUS_ID;
    compare `layerkit devices` with `nvidia-smi -L`). A LAYERKIT_DEVICE set by
    the user is left alone.
    """
    if not gpu_ids or os.environ.get("LAYERKIT_DEVICE"):
        return
    hardware = [device for device in layerkit.devices() if device.kind != "cpu" and device.usable]
    position = int(gpu_ids[0])
    if position >= len(hardware):
        raise RuntimeError(f"Ray assigned GPU {position}, but this node has {len(hardware)} usable hardware "
                           f"Vulkan device(s): {[device.name for device in hardware]}")
    os.environ["LAYERKIT_DEVICE"] = str(hardware[position].index)


class Predictor:
    """One Ray actor: loads the model once, then predicts every batch it is given."""

    def __init__(self, model_path: str, backend: str):
        import ray

        # Before the model: LayerKit reads LAYERKIT_DEVICE when it opens the device.
        choose_vulkan_device(ray.get_gpu_ids())
        self.model = layerkit.Model(model_path, backend=backend)

    def __call__(self, batch: dict) -> dict:
        probabilities = np.stack([predict_one(self.model, pixels) for pixels in batch["image"]])
        return {
            "path": batch["path"],
            "probabilities": probabilities,
            "pid": np.full(len(probabilities), os.getpid(), dtype=np.int64),
        }


def run_ray(folder: Path, count: int, args: argparse.Namespace) -> tuple[list, float]:
    """The Ray Data pipeline; returns its rows and its wall time in seconds."""
    import ray

    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    # Start every actor (its model loaded) before the first batch, so that no
    # actor finishes the folder while another is still loading.
    context.wait_for_min_actors_s = 300
    start = time.perf_counter()
    # One block per batch, read before the actors start: streamed, each block
    # of this small model is done before the next is read, and one actor
    # would take them all.
    dataset = ray.data.read_images(str(folder), mode="RGB", include_paths=True,
                                   override_num_blocks=max(1, count // args.batch_size)).materialize()
    # Two actors at 1 CPU each would leave the read task no CPU on a 2-CPU
    # cluster (a deadlock); at 0.5 each, reading and predicting overlap. One
    # task in flight per actor: a busy actor queues no blocks another could run.
    pool = ray.data.ActorPoolStrategy(size=args.actors, max_tasks_in_flight_per_actor=1)
    predictions = dataset.map_batches(
        Predictor, fn_constructor_kwargs={"model_path": str(args.model), "backend": args.backend},
        batch_size=args.batch_size, compute=pool, num_cpus=args.cpus_per_actor, num_gpus=args.gpus_per_actor)
    rows = predictions.take_all()
    return rows, time.perf_counter() - start


def check(rows: list, serial: dict) -> list:
    """What is wrong with the Ray run's rows, against the serial run's."""
    failures = []
    by_path = {Path(row["path"]).resolve(): row for row in rows}
    if len(rows) != len(serial) or set(by_path) != set(serial):
        failures.append(f"{len(rows)} rows for {len(serial)} images ({len(set(serial) - set(by_path))} missing)")
    mismatched = [path.name for path, row in by_path.items()
                  if path in serial and row["probabilities"].tobytes() != serial[path].tobytes()]
    if mismatched:
        failures.append(f"{len(mismatched)} images differ from the serial run, e.g. {mismatched[0]}")
    workers = {int(row["pid"]) for row in rows}
    if len(workers) < 2 or os.getpid() in workers:
        failures.append(f"worker processes {sorted(workers)} (driver {os.getpid()}): want two or more, not the driver")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=Path, help="a folder of images (default: generate --count PNGs)")
    parser.add_argument("--count", type=int, default=32, help="images to generate (default 32)")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--backend", choices=["cpu", "gpu", "auto"], default="cpu", help="layerkit.Model's backend")
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--cpus-per-actor", type=float, default=0.5)
    parser.add_argument("--gpus-per-actor", type=float, default=0, help="Ray GPUs per actor (with --backend gpu)")
    parser.add_argument("--address", help="a running Ray cluster (e.g. auto); default: a local one of --num-cpus CPUs")
    parser.add_argument("--num-cpus", type=int, default=2, help="the local Ray cluster's CPUs")
    args = parser.parse_args()

    import ray
    import ray.data

    # Ray's and Ray Data's progress lines (the full logs stay under /tmp/ray).
    logging.getLogger("ray.data").setLevel(logging.WARNING)

    with tempfile.TemporaryDirectory(prefix="layerkit-ray-") as scratch:
        folder = args.images
        if folder is None:
            folder = Path(scratch)
            write_images(folder, args.count, seed=17)
        files = sorted(p for p in folder.iterdir() if p.suffix.lower() in (".png", ".jpg", ".jpeg"))

        start = time.perf_counter()
        cluster = {"address": args.address} if args.address else {"num_cpus": args.num_cpus}
        ray.init(**cluster, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
        started = time.perf_counter() - start
        try:
            rows, wall = run_ray(folder, len(files), args)
        finally:
            ray.shutdown()

        # The serial run: the same files decoded by Pillow, as Ray Data's reader does.
        serial_model = layerkit.Model(str(args.model), backend=args.backend)
        serial_start = time.perf_counter()
        serial = {p.resolve(): predict_one(serial_model, np.asarray(Image.open(p).convert("RGB"))) for p in files}
        serial_wall = time.perf_counter() - serial_start

    failures = check(rows, serial)
    rows_by_pid = Counter(int(row["pid"]) for row in rows)
    print(f"rows: {len(rows)} of {len(files)} images; worker PIDs: "
          + ", ".join(f"{pid} ({n} rows)" for pid, n in sorted(rows_by_pid.items()))
          + f"; equal to the serial run bit for bit: {'no' if any('differ' in f for f in failures) else 'yes'}")
    print(f"wall time: Ray Data pipeline {wall:.2f} s ({args.actors} actors at {args.cpus_per_actor:g} CPU, "
          f"batch {args.batch_size}, backend {args.backend}), ray.init {started:.2f} s, serial run {serial_wall:.3f} s")
    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
