#!/usr/bin/env python3
"""Reference runs of PyTorch's optimizers, schedulers and gradient clipping.

Purpose
    LayerKit's optimizers (Sources/LayerKit/Training/Optimizer.swift) follow
    torch.optim's SGD, Adam and AdamW, torch.optim.lr_scheduler's StepLR and
    CosineAnnealingLR stepped once per epoch, and
    torch.nn.utils.clip_grad_norm_. This script runs each case in torch
    float64 from float32-representable parameters and gradients, and writes
    every parameter after every step (and the final optimizer state), so the
    Swift tests (Tests/LayerKitTests/OptimizerReferenceTests.swift) compare
    against an outside implementation with no Python at test time.

How to run (from the repository root)
    /path/to/python Scripts/generate_optimizer_references.py          # write
    /path/to/python Scripts/generate_optimizer_references.py --check  # compare
    Needs torch (2.13.0+cpu was used) and numpy. Deterministic: the inputs
    come from numpy's seeded generator, so a rerun writes the same bytes.

What it writes
    Tests/LayerKitTests/Fixtures/Training/optimizers/optimizers.json:
    {"torch": version, "cases": [case...], "schedules": [schedule...]}
    case: name; config (algorithm sgd|adam|adamw, lr, momentum, dampening,
    nesterov, beta1, beta2, eps, weight_decay, max_norm or null, schedule
    {"kind": "constant"|"step"|"cosine", step_size, gamma, t_max, eta_min},
    steps_per_epoch); parameters {name: {"shape", "values"}} (float32
    values); gradients [step][name] -> values (float32); after [step][name]
    -> values (float64, the parameters after that step); state {key:
    values} the final state under LayerKit's keys (NAME.momentum_buffer,
    NAME.exp_avg, NAME.exp_avg_sq); steps {NAME: steps}; lrs [step] the
    learning rate each step used; norms [step] the total gradient norm
    before clipping (null without clipping).
    schedule: kind, base, the scheduler's arguments, lrs [epoch] for 12
    epochs, read from the optimizer after each scheduler.step().
"""
import argparse
import json
import math
import pathlib
import sys

import numpy as np
import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "Tests/LayerKitTests/Fixtures/Training/optimizers/optimizers.json"
STEPS = 8
SHAPES = {"conv.weight": [2, 3], "conv.bias": [3], "gemm/B:0": [2, 2]}

CASES = [
    dict(name="sgd_plain", algorithm="sgd", lr=0.1),
    dict(name="sgd_momentum_dampening_decay", algorithm="sgd", lr=0.05, momentum=0.9, dampening=0.1,
         weight_decay=0.01),
    dict(name="sgd_nesterov_decay", algorithm="sgd", lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.001),
    dict(name="adam_defaults", algorithm="adam", lr=0.01),
    dict(name="adam_l2_decay", algorithm="adam", lr=0.01, beta1=0.8, beta2=0.99, eps=1e-6, weight_decay=0.05),
    dict(name="adam_low_beta1", algorithm="adam", lr=0.02, beta1=0.3, beta2=0.9),
    dict(name="adamw_decay", algorithm="adamw", lr=0.01, weight_decay=0.1),
    dict(name="adamw_clip_cosine", algorithm="adamw", lr=0.02, weight_decay=0.01, max_norm=0.5,
         schedule=dict(kind="cosine", t_max=3, eta_min=0.001), steps_per_epoch=2),
    dict(name="sgd_momentum_clip_step", algorithm="sgd", lr=0.1, momentum=0.9, max_norm=1.0,
         schedule=dict(kind="step", step_size=1, gamma=0.5), steps_per_epoch=2),
]

SCHEDULES = [
    dict(kind="step", base=0.1, step_size=3, gamma=0.5),
    dict(kind="step", base=0.01, step_size=1, gamma=0.9),
    dict(kind="cosine", base=0.1, t_max=5, eta_min=0.001),
    dict(kind="cosine", base=0.05, t_max=4, eta_min=0.0),
]


def f32(array):
    """float32-representable float64 values."""
    return np.asarray(array, dtype=np.float32).astype(np.float64)


def make_scheduler(optimizer, schedule):
    if schedule["kind"] == "step":
        return torch.optim.lr_scheduler.StepLR(optimizer, step_size=schedule["step_size"], gamma=schedule["gamma"])
    if schedule["kind"] == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=schedule["t_max"],
                                                          eta_min=schedule["eta_min"])
    return None


def run_case(spec, rng):
    config = dict(algorithm=spec["algorithm"], lr=spec["lr"], momentum=spec.get("momentum", 0.0),
                  dampening=spec.get("dampening", 0.0), nesterov=spec.get("nesterov", False),
                  beta1=spec.get("beta1", 0.9), beta2=spec.get("beta2", 0.999), eps=spec.get("eps", 1e-8),
                  weight_decay=spec.get("weight_decay", 0.0), max_norm=spec.get("max_norm"),
                  schedule=spec.get("schedule", dict(kind="constant")), steps_per_epoch=spec.get("steps_per_epoch", 1))
    initial = {name: f32(rng.standard_normal(shape)) for name, shape in SHAPES.items()}
    gradients = [{name: f32(rng.standard_normal(shape) * 0.7) for name, shape in SHAPES.items()}
                 for _ in range(STEPS)]
    params = {name: torch.tensor(value, dtype=torch.float64, requires_grad=True) for name, value in initial.items()}
    order = list(params.values())
    if config["algorithm"] == "sgd":
        optimizer = torch.optim.SGD(order, lr=config["lr"], momentum=config["momentum"],
                                    dampening=config["dampening"], nesterov=config["nesterov"],
                                    weight_decay=config["weight_decay"])
    else:
        kind = torch.optim.Adam if config["algorithm"] == "adam" else torch.optim.AdamW
        optimizer = kind(order, lr=config["lr"], betas=(config["beta1"], config["beta2"]), eps=config["eps"],
                         weight_decay=config["weight_decay"], foreach=False)
    scheduler = make_scheduler(optimizer, config["schedule"])
    after, lrs, norms = [], [], []
    for step in range(STEPS):
        if step > 0 and step % config["steps_per_epoch"] == 0 and scheduler is not None:
            scheduler.step()
        for name, p in params.items():
            p.grad = torch.tensor(gradients[step][name], dtype=torch.float64)
        if config["max_norm"] is not None:
            norms.append(float(torch.nn.utils.clip_grad_norm_(order, config["max_norm"])))
        else:
            norms.append(None)
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        after.append({name: p.detach().numpy().tolist() for name, p in params.items()})
    state, steps = {}, {}
    for name, p in params.items():
        s = optimizer.state[p]
        for key in ("momentum_buffer", "exp_avg", "exp_avg_sq"):
            if s.get(key) is not None:
                state[f"{name}.{key}"] = s[key].numpy().reshape(-1).tolist()
        steps[name] = int(s["step"]) if "step" in s else STEPS
    return dict(name=spec["name"], config=config,
                parameters={name: dict(shape=SHAPES[name], values=initial[name].reshape(-1).tolist())
                            for name in SHAPES},
                gradients=[{name: g.reshape(-1).tolist() for name, g in grads.items()} for grads in gradients],
                after=[{name: np.asarray(v).reshape(-1).tolist() for name, v in values.items()} for values in after],
                state=state, steps=steps, lrs=lrs, norms=norms)


def run_schedule(spec):
    p = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.SGD([p], lr=spec["base"])
    scheduler = make_scheduler(optimizer, spec)
    lrs = []
    for _ in range(12):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return dict(spec, lrs=lrs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed fixture instead of writing")
    args = parser.parse_args()
    rng = np.random.default_rng(15)
    document = dict(torch=torch.__version__, cases=[run_case(spec, rng) for spec in CASES],
                    schedules=[run_schedule(spec) for spec in SCHEDULES])
    text = json.dumps(document, indent=1, allow_nan=False) + "\n"
    if args.check:
        same = OUT.read_text() == text
        print("fixture up to date" if same else "fixture differs: rerun without --check")
        return 0 if same else 1
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}: {len(CASES)} optimizer cases, {len(SCHEDULES)} schedules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
