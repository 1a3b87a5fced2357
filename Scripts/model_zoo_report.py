#!/usr/bin/env python3
"""The "Models people export" tables of Docs/MODELS.md: every case (folder
of the onnx backend-test layout with a tolerance.json, from
Scripts/export_torchvision.py or Scripts/light_models.py) run through the
layerkit CLI on both backends.

    python Scripts/model_zoo_report.py [FOLDER ...] [--layerkit PATH] [--out FILE] [--skip-gpu NAME,...]

Default folders: .build/model-zoo/full and .build/model-zoo/light. For each
folder it runs `layerkit conformance FOLDER --backend both --markdown` (pass or
fail per case), then per case `layerkit inspect --backend gpu --json` (nodes,
where each runs, why a node stays on the CPU) and `layerkit run --backend
cpu|gpu` on test_data_set_0's input, and measures the worst error of every
output against onnxruntime's: max |y - ref| / max(1, |ref|) (for the light
models, whose output is a Softmax, the `logits` output is the one that
counts: the script adds it). The GPU's tolerance is the case's tolerance.json
(max(1e-3, 2 x the fp16 twin's error)). Needs numpy and onnx only.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def relative_error(y, ref):
    y, ref = np.asarray(y, np.float64).ravel(), np.asarray(ref, np.float64).ravel()
    if y.shape != ref.shape:
        return float("inf")
    err = np.abs(y - ref) / np.maximum(1.0, np.abs(ref))
    err[np.isnan(y) & np.isnan(ref)] = 0
    err[np.isnan(err)] = np.inf
    return float(err.max()) if err.size else 0.0


def sh(cmd, timeout):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr, time.time() - t0
    except subprocess.TimeoutExpired:
        return 124, "", f"timed out after {timeout} s", time.time() - t0


def short_reason(text):
    text = " ".join(text.strip().splitlines()[-1:]) if text.strip() else ""
    m = re.search(r"node '([^']*)' \(([^)]*)\): (.*)", text)
    if m:
        return f"{m.group(2)}: {m.group(3)}"[:200]
    return text[:200]


def run_case(layerkit, folder, skip_gpu, timeout):
    model_path = os.path.join(folder, "model.onnx")
    model = onnx.load(model_path, load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in inits]
    outputs = [o.name for o in model.graph.output]
    row = {"case": os.path.basename(folder), "nodes": len(model.graph.node)}
    tol = json.load(open(os.path.join(folder, "tolerance.json"))) if os.path.exists(
        os.path.join(folder, "tolerance.json")) else {}
    row["tolerance"] = tol.get("gpu")
    row["twin"] = tol.get("fp16_twin_error")
    row["exporter"] = (tol.get("notes") or {}).get("exporter", "-")
    refs = [numpy_helper.to_array(onnx.load_tensor(os.path.join(folder, "test_data_set_0", f"output_{k}.pb")))
            for k in range(len(outputs))]
    with tempfile.TemporaryDirectory() as tmp:
        args = []
        for k, name in enumerate(inputs):
            x = numpy_helper.to_array(onnx.load_tensor(os.path.join(folder, "test_data_set_0", f"input_{k}.pb")))
            np.save(os.path.join(tmp, f"in{k}.npy"), x)
            args += ["--input", f"{name}={os.path.join(tmp, f'in{k}.npy')}"]
        rc, out, err, _ = sh([layerkit, "inspect", model_path, "--backend", "gpu", "--json"], timeout)
        try:
            info = json.loads(out)  # inspect exits 1 but still describes a model it cannot run whole
        except ValueError:
            info = None
        if info is not None and rc != 0:
            refused = [f"{u['reason']} (x{u['count']})" for u in info.get("unsupported", [])]
            row["error"] = "; ".join(refused) or short_reason(err) or None
        if info is not None and rc == 0:
            work = [n for n in info["nodes"] if n.get("placement")]
            row["work"] = len(work)
            row["gpu_nodes"] = sum(1 for n in work if n["placement"] == "gpu")
            reasons = sorted({f"{n['opType']}: {n['cpuReason']}" for n in work
                              if n["placement"] == "cpu" and n.get("cpuReason")})
            row["cpu_reasons"] = reasons
        else:
            row["error"] = short_reason(err)
        for backend in ("cpu", "gpu"):
            if backend == "gpu" and (row["case"] in skip_gpu or "error" in row):
                continue
            outs = []
            for k, name in enumerate(outputs):
                outs += ["--output", f"{name}={os.path.join(tmp, f'{backend}{k}.npy')}"]
            rc, out, err, seconds = sh([layerkit, "run", model_path, "--backend", backend] + args + outs, timeout)
            row[f"{backend}_seconds"] = seconds
            if rc != 0:
                row[f"{backend}_error"] = short_reason(err)
                row.setdefault("error", row[f"{backend}_error"])
                continue
            errors = {name: relative_error(np.load(os.path.join(tmp, f"{backend}{k}.npy")), refs[k])
                      for k, name in enumerate(outputs)}
            # The logits when a model ends in Softmax (light models: the `logits` output is the Softmax's input).
            key = next((n for n in outputs if n not in ("prob_1", "gpu_0/softmax_1", "softmaxout_1")), outputs[0])
            row[f"{backend}_errors"] = errors
            row[f"{backend}_worst"] = max(errors.values())
            row[f"{backend}_logits"] = errors[key]
    return row


def fmt(x):
    return "-" if x is None else f"{x:.1e}"


def table(rows):
    lines = ["| model | exporter | nodes | runs on the GPU | unsupported / on the CPU | CPU worst | GPU worst | GPU tolerance | GPU |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        name = r["case"]
        for suffix in ("_torchscript", "_dynamo"):
            if name.endswith(suffix):
                name = name[: -len(suffix)]
        unsupported = (r.get("error") or r.get("cpu_error") or r.get("gpu_error")
                       or "; ".join(r.get("cpu_reasons", [])) or "-")
        unsupported = re.sub(r" \(supported: [^)]*\)?", "", unsupported)
        gpu_ok = "-"
        if r.get("gpu_worst") is not None and r.get("tolerance"):
            gpu_ok = "pass" if r["gpu_worst"] <= r["tolerance"] else "FAIL"
        cpu = r.get("cpu_worst")
        lines.append("| " + " | ".join([
            name, r["exporter"], str(r["nodes"]),
            f"{r['gpu_nodes']}/{r['work']}" if "work" in r else "-",
            unsupported.replace("|", "\\|")[:160],
            fmt(cpu), fmt(r.get("gpu_worst")), fmt(r.get("tolerance")), gpu_ok]) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", default=[os.path.join(ROOT, ".build", "model-zoo", "full"),
                                                       os.path.join(ROOT, ".build", "model-zoo", "light")])
    parser.add_argument("--layerkit", default=os.path.join(ROOT, ".build", "release", "layerkit"))
    parser.add_argument("--out", default=os.path.join(ROOT, ".build", "model-zoo", "report.md"))
    parser.add_argument("--skip-gpu", default="", help="cases not to run on the GPU (slow on lavapipe)")
    parser.add_argument("--skip-conformance", action="store_true")
    parser.add_argument("--timeout", type=int, default=900)
    args = parser.parse_args()
    skip = set(filter(None, args.skip_gpu.split(",")))
    report = [f"load average at start: {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores", ""]
    all_rows = []
    for folder in args.folders:
        cases = sorted(d for d in os.listdir(folder) if os.path.exists(os.path.join(folder, d, "model.onnx")))
        report.append(f"#### {os.path.relpath(folder, ROOT)}")
        report.append("")
        if not args.skip_conformance:
            cmd = [args.layerkit, "conformance", folder, "--backend", "both", "--markdown"]
            rc, out, err, seconds = sh(cmd, args.timeout * 4)
            report += ["`" + " ".join(["layerkit"] + cmd[1:]).replace(ROOT + "/", "") + f"` ({seconds:.0f} s):", "",
                       out.strip(), ""]
            print(out, flush=True)
        rows = []
        for case in cases:
            row = run_case(args.layerkit, os.path.join(folder, case), skip, args.timeout)
            print(json.dumps(row), flush=True)
            rows.append(row)
        all_rows += rows
        report += [table(rows), ""]
    report.append(f"load average at end: {os.getloadavg()[0]:.1f}")
    with open(args.out, "w") as f:
        f.write("\n".join(report) + "\n")
    with open(args.out[:-3] + ".json", "w") as f:
        json.dump(all_rows, f, indent=1)
    print("\n".join(report))


if __name__ == "__main__":
    main()
