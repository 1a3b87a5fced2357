#!/usr/bin/env python3
"""Whole models people export, end to end: LayerKit's CPU and GPU backends
(`layerkit bench MODEL.onnx --backend cpu|gpu --json`) beside onnxruntime at
1 and 2 threads, per model of the model zoo (Scripts/export_torchvision.py,
Scripts/light_models.py: folders of CASE/model.onnx).

    python Benchmarks/model_zoo.py [FOLDER ...] [--repeat N] [--warmup N] [--rounds N] [--gpu NAME,...]
        [--only NAME,...] [--layerkit PATH] [--markdown] [--peak] [--targets]

    # issue 29's CPU targets: seven CNNs (the style-transfer net at 256x256),
    # 1 and 2 threads, GFLOP/s and the FMA peak, each side's best of three
    # alternating rounds
    python Benchmarks/model_zoo.py --targets --repeat 20 --warmup 3 --rounds 3 --markdown

Medians of --repeat runs after --warmup untimed ones; the load average is
printed before and after (the machine is shared: read the ratios, not the
absolute times). LayerKit runs its seeded uniform [0, 1) inputs, onnxruntime
the same shapes from numpy (default graph optimizations, as users run it; a
model with layerkit::Swish nodes runs its standard-op export there;
session.run allocating its outputs, as Model.predict does). The GPU is timed
only for the cases named by --gpu: on lavapipe it is an emulation on the
same CPU cores, slow and no GPU speed. Uses /work/venv or any Python with
onnxruntime, onnx and numpy; the layerkit binary must be built
(swift build -c release --product layerkit).

GFLOP/s: each model's multiply-adds x 2, counted from the ONNX graph (Conv,
ConvTranspose, Gemm, MatMul: output elements x the reduction length, shapes
from onnx.shape_inference, or from one onnxruntime run exposing those
tensors where inference leaves a dimension unknown, as after the style net's
computed Pads), over the median time. --peak (on with --targets) adds the
fraction of the machine's float32 FMA peak at 1 and 2 threads, measured by
Benchmarks/peak_fma.c (compiled here with clang -O2 -mavx512f, or -mavx2
-mfma without AVX-512: 12 independent FMA chains a thread, the best of 10 bursts of ~30 ms, measured before and after the models, the higher kept), and
prints the computed figure beside it: cores x GHz x FMA units x lanes x 2,
the GHz from /proc/cpuinfo's "cpu MHz" (or lscpu's "CPU max MHz" where it
has one), FMA units from --fma-units (default 2: two FMA pipes, as Zen 4/5
and AVX-512 Xeons have). The fraction is taken of the measured peak.
--targets: --only resnet18, mobilenet_v2, squeezenet1_1, shufflenet_v2_x0_5,
efficientnet_b0, regnet_y_400mf, style_transfer (the TorchScript exports;
issue 29's list) and --peak.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time

from compare_models_onnxruntime import ort_samples

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# issue 29's CPU targets (the style net's export takes 1x3x256x256)
TARGETS = ["resnet18_torchscript", "mobilenet_v2_torchscript", "squeezenet1_1_torchscript",
           "shufflenet_v2_x0_5_torchscript", "efficientnet_b0_torchscript", "regnet_y_400mf_torchscript",
           "style_transfer_torchscript"]


def multiply_adds(path):
    """Multiply-adds of the Conv, ConvTranspose, Gemm and MatMul nodes of the
    model at `path` (batch as the model's input shape says, symbolic dims 1)."""
    import numpy as np
    import onnx

    model = onnx.shape_inference.infer_shapes(onnx.load(path), data_prop=True)
    graph = model.graph
    shapes = {i.name: list(i.dims) for i in graph.initializer}
    for v in list(graph.input) + list(graph.value_info) + list(graph.output):
        dims = [d.dim_value if d.HasField("dim_value") else None for d in v.type.tensor_type.shape.dim]
        if dims and all(dims):
            shapes[v.name] = dims
    counted = [n for n in graph.node if n.op_type in ("Conv", "ConvTranspose", "Gemm", "MatMul")]
    missing = sorted({t for n in counted for t in (n.input[0], n.input[1], n.output[0]) if t not in shapes})
    if missing:  # shapes inference could not reach: one onnxruntime run that returns those tensors
        import onnxruntime as ort
        known = {o.name for o in graph.output}
        for name in missing:
            if name not in known:
                graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        feeds = {i.name: np.zeros([d if isinstance(d, int) else 1 for d in i.shape], np.float32)
                 for i in session.get_inputs()}
        names = [o.name for o in session.get_outputs()]
        for name, value in zip(names, session.run(None, feeds)):
            shapes[name] = list(value.shape)
    total = 0
    for n in counted:
        a, b, y = shapes[n.input[0]], shapes[n.input[1]], shapes[n.output[0]]
        attrs = {at.name: onnx.helper.get_attribute_value(at) for at in n.attribute}
        if n.op_type == "Conv":  # each output: C/group x kh x kw
            total += int(np.prod(y)) * int(np.prod(b[1:]))
        elif n.op_type == "ConvTranspose":  # each input element: M/group x kh x kw
            total += int(np.prod(a)) * int(np.prod(b[1:]))
        elif n.op_type == "Gemm":
            total += int(np.prod(y)) * (a[0] if attrs.get("transA", 0) else a[1])
        else:
            total += int(np.prod(y)) * a[-1]
    return total


def cpu_clock():
    """(GHz, where it came from): lscpu's max MHz where it has one, else /proc/cpuinfo's cpu MHz."""
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        found = re.search(r"CPU max MHz:\s*([0-9.]+)", lscpu)
        if found:
            return float(found.group(1)) / 1e3, "lscpu 'CPU max MHz'"
    except OSError:
        pass
    with open("/proc/cpuinfo") as f:
        mhz = [float(line.split(":")[1]) for line in f if line.startswith("cpu MHz")]
    if not mhz:
        return None, "no clock found"
    return max(mhz) / 1e3, "/proc/cpuinfo 'cpu MHz' (the clock the kernel reports: in a VM its nominal, not its boost)"


def machine_peak(fma_units):
    """The FMA peak: measured by peak_fma.c at 1 and 2 threads, and computed."""
    with open("/proc/cpuinfo") as f:
        flags = next((line.split(":")[1].split() for line in f if line.startswith("flags")), [])
    avx512 = "avx512f" in flags
    lanes = 16 if avx512 else 8
    clang = shutil.which("clang") or shutil.which("cc")
    measured = {}
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "peak_fma")
        isa = ["-mavx512f", "-mfma"] if avx512 else ["-mavx2", "-mfma"]
        subprocess.run([clang, "-O2", *isa, os.path.join(HERE, "peak_fma.c"), "-o", exe, "-lpthread"], check=True)
        for threads in (1, 2):
            measured[threads] = json.loads(subprocess.run([exe, str(threads)], check=True, capture_output=True,
                                                          text=True).stdout)["gflops"]
    ghz, source = cpu_clock()
    cores = os.cpu_count()
    computed = cores * ghz * fma_units * lanes * 2 if ghz else None
    return {"measured": measured, "computed": computed, "cores": cores, "ghz": ghz, "clockSource": source,
            "fmaUnits": fma_units, "lanes": lanes, "isa": "avx512f" if avx512 else "avx2+fma"}


def time_ort(path, threads, warmup, runs):
    return statistics.median(ort_samples(path, threads, warmup, runs))


def time_layerkit(layerkit, path, backend, threads, warmup, runs):
    cmd = [layerkit, "bench", path, "--backend", backend, "--repeat", str(runs), "--warmup", str(warmup), "--json"]
    if threads and backend == "cpu":
        cmd += ["--threads", str(threads)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["failed"])[-1][:120]
    result = json.loads(p.stdout)["results"][0]
    return result["medianMs"], result.get("placement")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", default=[os.path.join(ROOT, ".build", "model-zoo", "full")])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1,
                        help="alternating rounds of both sides; each side's best median is kept (a shared machine)")
    parser.add_argument("--gpu", default="", help="cases to time on the GPU too (comma-separated)")
    parser.add_argument("--only", default="", help="cases to time (default: all)")
    parser.add_argument("--layerkit", default=os.path.join(ROOT, ".build", "release", "layerkit"))
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--peak", action="store_true", help="measure the FMA peak; add the fraction of it")
    parser.add_argument("--fma-units", type=int, default=2, help="FMA pipes a core, for the computed peak")
    parser.add_argument("--targets", action="store_true", help="issue 29's seven models, with --peak")
    args = parser.parse_args()
    if args.targets:
        args.only, args.peak = ",".join(TARGETS), True
    gpu = set(filter(None, args.gpu.split(",")))
    only = set(filter(None, args.only.split(",")))
    import onnxruntime

    peak = machine_peak(args.fma_units) if args.peak else None
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}; {os.cpu_count()} cores; "
          f"onnxruntime {onnxruntime.__version__} (ORT_ENABLE_ALL); medians of {args.repeat} runs after "
          f"{args.warmup} warm-up, the best of {args.rounds} alternating round(s) per side; both at 1 and 2 threads",
          flush=True)
    header = ["model", "GFLOP", "LayerKit CPU 1t ms", "ORT 1t ms", "LayerKit / ORT 1t", "LayerKit CPU 2t ms",
              "ORT 2t ms", "LayerKit / ORT 2t", "LK GFLOP/s 1t", "ORT GFLOP/s 1t", "LK GFLOP/s 2t", "ORT GFLOP/s 2t"]
    if peak:
        header += ["LK % peak 1t", "ORT % peak 1t", "LK % peak 2t", "ORT % peak 2t"]
    header += ["LayerKit GPU ms (lavapipe)"]
    rows = []
    for folder in args.folders:
        for case in sorted(os.listdir(folder)):
            path = os.path.join(folder, case, "model.onnx")
            if not os.path.exists(path) or (only and case not in only):
                continue
            # onnxruntime has no layerkit::Swish: it runs the standard-op export.
            twin = os.path.join(folder, case.replace("_swish", ""), "model.onnx") if "_swish" in case else path
            # --rounds: each side's best median of that many alternating rounds.
            best = {}
            for _ in range(args.rounds):
                for key, (value, note) in [
                        ("cpu1", time_layerkit(args.layerkit, path, "cpu", 1, args.warmup, args.repeat)),
                        ("ort1", (time_ort(twin, 1, args.warmup, args.repeat), None)),
                        ("cpu2", time_layerkit(args.layerkit, path, "cpu", 2, args.warmup, args.repeat)),
                        ("ort2", (time_ort(twin, 2, args.warmup, args.repeat), None))]:
                    kept = best.get(key)
                    if kept is None or (value is not None and (kept[0] is None or value < kept[0])):
                        best[key] = (value, note)
            (cpu1, note1), (cpu2, note2) = best["cpu1"], best["cpu2"]
            ort1, ort2 = best["ort1"][0], best["ort2"][0]
            g, g_note = (time_layerkit(args.layerkit, path, "gpu", None, 1, max(3, args.repeat // 3))
                         if case in gpu else (None, "not run"))
            gflop = 2 * multiply_adds(twin) / 1e9

            def ms(value, note):
                return f"{value:.1f}" if value else f"- ({note})"

            def rate(ms_value):
                return f"{gflop / (ms_value * 1e-3):.0f}" if ms_value else "-"

            row = [case, f"{gflop:.2f}", ms(cpu1, note1), f"{ort1:.1f}", f"{cpu1 / ort1:.2f}x" if cpu1 else "-",
                   ms(cpu2, note2), f"{ort2:.1f}", f"{cpu2 / ort2:.2f}x" if cpu2 else "-",
                   rate(cpu1), rate(ort1), rate(cpu2), rate(ort2)]
            rows.append((row, [f"{g:.1f}" if g else "-"], gflop, (cpu1, ort1, cpu2, ort2)))
            print("  ".join(row + rows[-1][1]), flush=True)
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if peak:  # measured again after the models: the higher of the two, on a shared machine
        again = machine_peak(args.fma_units)["measured"]
        peak["measured"] = {t: max(peak["measured"][t], again[t]) for t in peak["measured"]}
    if peak:
        m = peak["measured"]
        print(f"FMA peak (float32, {peak['isa']}): measured by Benchmarks/peak_fma.c {m[1]:.0f} GFLOP/s at 1 thread, "
              f"{m[2]:.0f} at 2; computed {peak['cores']} cores x {peak['ghz'] or 0:.3f} GHz x {peak['fmaUnits']} FMA "
              f"units x {peak['lanes']} lanes x 2 = {peak['computed'] or 0:.0f} GFLOP/s "
              f"({(peak['computed'] or 0) / peak['cores']:.0f} a core; GHz from {peak['clockSource']}); the measured 1-thread figure implies "
              f"{m[1] / (peak['fmaUnits'] * peak['lanes'] * 2):.2f} GHz at {peak['fmaUnits']} FMA units. "
              "% peak: of the measured figure at the same thread count", flush=True)
        if peak["computed"] and m[1] < 0.5 * peak["computed"] / peak["cores"]:
            print("WARNING: the measured 1-thread peak is under half the computed one a core: the machine is busy "
                  "(or its clock is lower than it says); the % peak columns are inflated by as much", flush=True)

    def share(gflop, ms_value, threads):
        return f"{100 * gflop / (ms_value * 1e-3) / peak['measured'][threads]:.0f}%" if ms_value else "-"
    rows = [row + ([share(gflop, cpu1, 1), share(gflop, ort1, 1), share(gflop, cpu2, 2), share(gflop, ort2, 2)]
                   if peak else []) + tail
            for row, tail, gflop, (cpu1, ort1, cpu2, ort2) in rows]
    if peak:
        print("  ".join(header))
        for row in rows:
            print("  ".join(row))
    if args.markdown:
        print()
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")


if __name__ == "__main__":
    main()
