#!/usr/bin/env python3
"""Every catalog op: LayerKit's OpBench side by side with onnxruntime.

For each op of the catalog (default parameters), runs .build/release/OpBench
--json --op OP (the CPU evaluator on 1 and 2 threads and the GPU kernel by
timestamps), then the op's ONNX model with onnxruntime at
intra_op_num_threads 1 and 2 (ORT_ENABLE_ALL, as a user runs it; IOBinding
output) on the same shape, op after op so that both see about the same
load on a shared machine, and prints one table. The ratio is
LayerKit's median over ORT's: above 1.25 misses the target and is flagged.

    python3 Benchmarks/compare_ops_onnxruntime.py [--repeat N] [--warmup N]
        [--shape NxCxHxW] [--op NAME] [--scratch-path DIR]
        [--skip-build]

The models are the reference-vector generator's (Scripts/
generate_op_references.py), case "<op>-0" (default parameters), built for
--shape; PRelu's slope is 0.25 in every channel, as OpBench gives it. Swish
and Linear are no ONNX ops: ORT runs their graphs (Mul, Sigmoid, Mul and
Mul, Add), marked "composite". Inputs are seeded uniform in the op's input
range, which OpBench reports (numpy's generator, so not the same values).
Uses Benchmarks/.venv like compare_onnxruntime.py.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, os.path.join(ROOT, "Scripts")]
from compare_onnxruntime import ensure_venv, time_session  # noqa: E402

# OpBench's value for weights with no scalar default (PRelu's slope).
WEIGHT_VALUE = 0.25
TARGET = 1.25


def run_opbench(args, op):
    """OpBench's JSON rows for `op` (a name or all) and its GPU note (stderr)."""
    cmd = [os.path.join(args.scratch_path, "release", "OpBench"), "--json", "--op", op,
           "--repeat", str(args.repeat), "--warmup", str(args.warmup), "--shape", args.shape]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode not in (0, 1):  # 1: rows printed, but a CPU-GPU check failed
        sys.exit(f"OpBench failed ({done.returncode}): {done.stderr}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()], done.stderr.strip()


def ort_times(op, input_range, shape, args):
    """{threads: (stats, ORT node types after optimization)} for op's "-0" case."""
    import numpy as np
    import generate_op_references as gen

    case = next(c for c in gen.catalog() if c.id == f"{op}-0")
    case.weights = {name: [WEIGHT_VALUE] * shape[1] for name in case.weights}
    model = gen.build_model(np, case, shape)
    x = np.random.default_rng(1).uniform(*input_range, size=shape).astype(np.float32)
    out = {}
    for threads in (1, 2):
        s, ops, _ = time_session(model, x, threads, args.warmup, args.repeat)
        out[threads] = (s, ops)
    return out


def load_average():
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--shape", default="1x64x256x256")
    parser.add_argument("--op", default="all", help="one catalog op, or all (default)")
    parser.add_argument("--scratch-path", default=os.path.join(ROOT, ".build"))
    parser.add_argument("--skip-build", action="store_true", help="use the OpBench already built")
    args = parser.parse_args()
    ensure_venv()
    import onnxruntime

    shape = [int(d) for d in args.shape.split("x")]
    if not args.skip_build:
        subprocess.run(["swift", "build", "-c", "release", "--product", "OpBench",
                        "--scratch-path", args.scratch_path], cwd=ROOT, check=True)
    load_before = load_average()
    ops = subprocess.run([os.path.join(args.scratch_path, "release", "OpBench"), "--list"],
                         check=True, capture_output=True, text=True).stdout.split() \
        if args.op == "all" else [args.op]
    table, flagged, notes = [], [], []
    for op in ops:
        # OpBench then ORT, op by op, so that both see about the same load.
        rows, note = run_opbench(args, op)
        notes += [n for n in note.splitlines() if n not in notes]
        by_threads = {r["threads"]: r for r in rows}
        op = rows[0]["name"]
        ort = ort_times(op, by_threads[1]["inputRange"], shape, args)
        composite = op in ("Swish", "Linear")
        line = [op + (" (composite)" if composite else ""), "+".join(ort[1][1])]
        for threads in (1, 2):
            mine = by_threads[threads]["stats"]["medianMs"]
            theirs = ort[threads][0]["medianMs"]
            ratio = mine / theirs
            miss = ratio > TARGET
            if miss:
                flagged.append(f"{op} {threads}t")
            line += [f"{mine:.3f}", f"{theirs:.3f}", f"{ratio:.2f}x" + (" !" if miss else "")]
        gpu = by_threads.get(0)
        line.append(f"{gpu['stats']['medianMs']:.3f}" if gpu else "-")
        table.append(line)
        print(f"  {op} done (load {load_average()})", file=sys.stderr)

    gpu_notes = [n for n in notes if n.startswith("GPU:")]
    emulated = any("EMULATED" in n for n in gpu_notes)
    header = ["op", "ORT nodes (optimized)", "LK 1t ms", "ORT 1t ms", "LK/ORT", "LK 2t ms",
              "ORT 2t ms", "LK/ORT", "GPU kernel ms" + (" (emulated)" if emulated else "")]
    print(f"{args.shape} Float32, default parameters; medians of {args.repeat} runs after "
          f"{args.warmup} warm-up; onnxruntime {onnxruntime.__version__} (ORT_ENABLE_ALL, "
          f"IOBinding output); {os.cpu_count()} cores; load average {load_before} before, "
          f"{load_average()} after")
    print("; ".join(gpu_notes) or "GPU: no note")
    widths = [max(len(line[c]) for line in [header] + table) for c in range(len(header))]
    for i, line in enumerate([header] + table):
        print("  ".join(t.ljust(w) if c < 2 else t.rjust(w)
                        for c, (t, w) in enumerate(zip(line, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print(f"LK/ORT > {TARGET}x (flagged !): " + (", ".join(flagged) or "none"))
    for n in notes:
        if n not in gpu_notes:
            print(n)  # OpBench's CPU-GPU check failures


if __name__ == "__main__":
    main()
