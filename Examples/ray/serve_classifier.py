"""Online inference with Ray Serve: a deployment whose replicas each hold one
layerkit.Model (the Core ML article's model, Models/article.onnx).

`Classifier` is the deployment; `app` binds it to a model path, so that
`serve run` can start it over HTTP:

    cd Examples/ray && serve run serve_classifier:app     # POST {"image": 1x3x64x64 list} to :8000

Run as a script, it starts a local Ray (2 CPUs), deploys two replicas at 0.5 CPU
each, sends 16 seeded random images through the deployment's handle, and checks
that every answer equals a serial run in this process bit for bit and that both
replicas answered. Exit status 0 when every check passes, 1 otherwise.
"""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import ray
from ray import serve

import layerkit
from batch_predict import DEFAULT_MODEL, INPUT_NAME, OUTPUT_NAME, choose_vulkan_device


@serve.deployment(num_replicas=2, ray_actor_options={"num_cpus": 0.5})
class Classifier:
    """One replica: the model loaded once, then one prediction per request."""

    def __init__(self, model_path: str, backend: str = "cpu"):
        # Before the model: LayerKit reads LAYERKIT_DEVICE when it opens the device.
        choose_vulkan_device(ray.get_gpu_ids())
        self.model = layerkit.Model(model_path, backend=backend)

    def classify(self, image: np.ndarray) -> dict:
        """{"probabilities": the model's output, "pid": this replica's process}."""
        return {"probabilities": self.model.predict({INPUT_NAME: image})[OUTPUT_NAME], "pid": os.getpid()}

    async def __call__(self, request) -> dict:
        """HTTP: a JSON body {"image": nested lists, 1x3x64x64}."""
        image = np.asarray((await request.json())["image"], dtype=np.float32)
        return {"probabilities": self.classify(image)["probabilities"].tolist()}


app = Classifier.bind(str(DEFAULT_MODEL))


def main() -> int:
    parser = argparse.ArgumentParser(description="Ray Serve with a layerkit.Model in each replica.")
    parser.add_argument("--requests", type=int, default=16)
    args = parser.parse_args()

    rng = np.random.default_rng(3)
    images = [rng.uniform(0, 1, size=(1, 3, 64, 64)).astype(np.float32) for _ in range(args.requests)]
    serial_model = layerkit.Model(str(DEFAULT_MODEL))
    serial = [serial_model.predict({INPUT_NAME: image})[OUTPUT_NAME] for image in images]

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        start = time.perf_counter()
        handle = serve.run(app, name="layerkit", route_prefix=None)
        deployed = time.perf_counter() - start
        start = time.perf_counter()
        # Every request in flight at once, so that both replicas get some.
        answers = [response.result() for response in [handle.classify.remote(image) for image in images]]
        wall = time.perf_counter() - start
    finally:
        serve.shutdown()
        ray.shutdown()

    failures = []
    mismatched = sum(answer["probabilities"].tobytes() != expected.tobytes() for answer, expected in zip(answers, serial))
    if len(answers) != len(images) or mismatched:
        failures.append(f"{len(answers)} answers for {len(images)} requests, {mismatched} differing from the serial run")
    replicas = sorted({answer["pid"] for answer in answers})
    if len(replicas) < 2 or os.getpid() in replicas:
        failures.append(f"replica processes {replicas} (driver {os.getpid()}): want two, not the driver")
    print(f"requests: {len(answers)} of {len(images)}; replica PIDs: {replicas}; "
          f"equal to the serial run bit for bit: {'yes' if not mismatched else 'no'}")
    print(f"wall time: serve.run {deployed:.2f} s, {len(images)} requests {wall:.3f} s")
    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
