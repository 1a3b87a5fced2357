#!/usr/bin/env python3
"""Training step time: LayerKit's TrainBench side by side with PyTorch (CPU,
eager, float32) on the same networks, weights and batches, at 1 and 2
threads. A step is forward, loss, backward and the optimizer step (Adam).

Networks:
  small      Conv(3->16, 3x3) -> Swish with per-channel beta -> AveragePool 2x2
             -> Flatten -> Gemm(16*16*16 -> 10), cross-entropy, batch 32 of
             3x32x32, every parameter trained.
  mobilenet  torchvision mobilenet_v2 (seeded random weights, 10 classes, eval
             mode: BatchNormalization frozen) at batch 8 of 3x224x224, only
             the classifier (the last Gemm) trained: a fine-tune of the head.

    python Benchmarks/compare_training_torch.py [--steps N] [--warmup N] [--rounds N]
        [--only small,mobilenet] [--skip-build] [--gpu] [--write DIR]

Needs torch 2.13 for the CPU and torchvision 0.28 (pip install torch==2.13.0+cpu;
torchvision with --no-deps), onnx and numpy. Builds .build/release/TrainBench.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch.library

torch.library.register_fake = lambda *a, **k: (lambda f: f)  # torchvision's compiled ops don't load against CPU torch

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from torch import nn  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class SmallNet(nn.Module):
    """The small network in PyTorch; `onnx_model` writes the same one with a layerkit.Swish node."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.beta = nn.Parameter(torch.linspace(0.5, 2.0, 16))
        self.pool = nn.AvgPool2d(2)
        self.fc = nn.Linear(16 * 16 * 16, 10)

    def forward(self, x):
        y = self.conv(x)
        y = y * torch.sigmoid(self.beta.view(1, -1, 1, 1) * y)
        return self.fc(torch.flatten(self.pool(y), 1))

    def onnx_model(self):
        def init(name, t):
            return numpy_helper.from_array(t.detach().numpy().astype(np.float32), name)
        nodes = [
            helper.make_node("Conv", ["x", "conv.weight", "conv.bias"], ["c"], name="conv", pads=[1, 1, 1, 1]),
            helper.make_node("Swish", ["c", "beta"], ["s"], name="swish", domain="layerkit"),
            helper.make_node("AveragePool", ["s"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
            helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
            helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"], name="fc", transB=1),
        ]
        graph = helper.make_graph(
            nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 32, 32])],
            [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
            [init("conv.weight", self.conv.weight), init("conv.bias", self.conv.bias), init("beta", self.beta),
             init("fc.weight", self.fc.weight), init("fc.bias", self.fc.bias)])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("layerkit", 1)])


def mobilenet():
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.mobilenet_v2(weights=None, num_classes=10).eval()
    for p in model.features.parameters():
        p.requires_grad_(False)
    return model


def export(model, shape, path):
    torch.onnx.export(model, torch.zeros(shape), path, input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "N"}}, opset_version=17, dynamo=False)


def torch_steps(model, params, x, y, batch, steps, warmup, threads):
    torch.set_num_threads(threads)
    optimizer = torch.optim.Adam(params, lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    n = x.shape[0]
    samples, loss = [], float("nan")
    for k in range(warmup + steps):
        i = (k * batch) % n
        xb, yb = x[i:i + batch], y[i:i + batch]
        t0 = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        out = loss_fn(model(xb), yb)
        out.backward()
        optimizer.step()
        dt = (time.perf_counter() - t0) * 1e3
        loss = out.item()
        if k >= warmup:
            samples.append(dt)
    return samples, loss


def write_batches(directory, batch, shape, rng):
    """Four batches of uniform inputs and random class labels, as x.npy and y.npy (float32 labels) in `directory`."""
    n = batch * 4
    x = rng.uniform(-1, 1, (n,) + shape).astype(np.float32)
    y = rng.integers(0, 10, n)
    np.save(os.path.join(directory, "x.npy"), x)
    np.save(os.path.join(directory, "y.npy"), y.astype(np.float32))
    return x, y


def layerkit_steps(onnx_path, x_path, y_path, batch, steps, warmup, threads, trainable, backend):
    out = subprocess.run([os.path.join(ROOT, ".build", "release", "TrainBench"), onnx_path, x_path, y_path,
                          "--batch", str(batch), "--steps", str(steps), "--warmup", str(warmup), "--threads",
                          str(threads), "--trainable", trainable, "--loss", "ce", "--optimizer", "adam", "--lr", "0.01",
                          "--backend", backend], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--only", default="small,mobilenet")
    parser.add_argument("--skip-build", action="store_true")
    parser.add_argument("--rounds", type=int, default=1, help="alternating rounds; each side keeps its best median")
    parser.add_argument("--gpu", action="store_true", help="also LayerKit's GPU backend (lavapipe here: an emulation)")
    parser.add_argument("--write", metavar="DIR",
                        help="only write each network's model and data into DIR/NAME (NAME.onnx, x.npy, y.npy)")
    args = parser.parse_args()
    if not args.skip_build and not args.write:
        subprocess.run([os.path.join(ROOT, "Scripts", "swift-release-build"), "--product", "TrainBench"], check=True)
    rng = np.random.default_rng(1)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.only.split(","):
            torch.manual_seed(0)
            # With --write, the files stay (Scripts/device-check trains the small one with `layerkit train`).
            out = os.path.join(args.write, name) if args.write else tmp
            os.makedirs(out, exist_ok=True)
            if name == "small":
                model, batch, shape, trainable = SmallNet(), 32, (3, 32, 32), "all"
                onnx.save(model.onnx_model(), os.path.join(out, "small.onnx"))
                params = list(model.parameters())
            else:
                model, batch, shape, trainable = mobilenet(), 8, (3, 224, 224), "last:1"
                export(model, (1,) + shape, os.path.join(out, "mobilenet.onnx"))
                params = list(model.classifier.parameters())
            x, y = write_batches(out, batch, shape, rng)
            if args.write:
                print(f"wrote {out}: {name}.onnx, x.npy, y.npy (batch {batch}, trainable {trainable})")
                continue
            backends = ["cpu", "gpu"] if args.gpu else ["cpu"]
            for threads in (1, 2):
                # Each side's best median over alternating rounds (a busy neighbour slows one round, not all).
                best = {}
                for _ in range(args.rounds):
                    # Fresh weights for each side: both start from the same state.
                    state = {k: v.clone() for k, v in model.state_dict().items()}
                    ts, tloss = torch_steps(model, params, torch.from_numpy(x), torch.from_numpy(y), batch,
                                            args.steps, args.warmup, threads)
                    model.load_state_dict(state)
                    sides = [("torch", statistics.median(ts), tloss)]
                    for backend in backends:
                        lk = layerkit_steps(os.path.join(tmp, name + ".onnx"), os.path.join(tmp, "x.npy"),
                                            os.path.join(tmp, "y.npy"), batch, args.steps, args.warmup, threads,
                                            trainable, backend)
                        sides.append((backend, lk["stats"]["medianMs"], lk["finalLoss"]))
                    for side, ms, loss in sides:
                        if side not in best or ms < best[side][0]:
                            best[side] = (ms, loss)
                for backend in backends:
                    rows.append((name, threads, backend, best[backend][0], best["torch"][0], best[backend][1],
                                 best["torch"][1]))
    if args.write:
        return
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; torch {torch.__version__}; "
          f"{args.steps} timed steps after {args.warmup} warm-up, medians (best of {args.rounds} alternating rounds)")
    print(f"{'network':<10} {'threads':>7} {'LayerKit':>9} {'ms':>9} {'PyTorch ms':>11} {'ratio':>7}  final loss (LK / torch)")
    for name, threads, backend, lk, pt, lloss, tloss in rows:
        label = backend + (" (emulated)" if backend == "gpu" else "")
        print(f"{name:<10} {threads:>7} {label:>9} {lk:>9.2f} {pt:>11.2f} {lk / pt:>6.2f}x  {lloss:.4f} / {tloss:.4f}")


if __name__ == "__main__":
    main()
