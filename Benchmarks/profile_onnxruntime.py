#!/usr/bin/env python3
"""onnxruntime's time per op type for one model, to set beside `layerkit profile
MODEL --by-op`: an InferenceSession (ORT_ENABLE_ALL, intra-op threads N, inter-op 1)
with profiling on runs the case's test_data_set_0 inputs `--runs` times after one
warm-up, and the kernel times of the profile are summed per op type (the fused ops
onnxruntime made, e.g. Gelu, SkipLayerNormalization, appear under their names).

    python Benchmarks/profile_onnxruntime.py CASE_DIR [--threads N] [--runs K]
"""
import argparse
import collections
import json
import os
import tempfile

import onnx
import onnxruntime as ort
from onnx import numpy_helper


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("case", help="a folder with model.onnx and test_data_set_0/input_K.pb")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=8)
    args = parser.parse_args()
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads, options.log_severity_level = args.threads, 1, 3
    model = onnx.load(os.path.join(args.case, "model.onnx"), load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in initializers]
    feeds = {name: numpy_helper.to_array(onnx.load_tensor(os.path.join(args.case, "test_data_set_0", f"input_{k}.pb")))
             for k, name in enumerate(names)}
    warm = ort.InferenceSession(os.path.join(args.case, "model.onnx"), options, providers=["CPUExecutionProvider"])
    warm.run(None, feeds)
    options.enable_profiling = True
    with tempfile.TemporaryDirectory() as folder:
        # onnxruntime writes its profile where the prefix says (else into the current directory).
        options.profile_file_prefix = os.path.join(folder, "onnxruntime_profile")
        session = ort.InferenceSession(os.path.join(args.case, "model.onnx"), options,
                                       providers=["CPUExecutionProvider"])
        session.run(None, feeds)  # the profiled session's own first run, not counted
        for _ in range(args.runs):
            session.run(None, feeds)
        with open(session.end_profiling()) as file:
            events = json.load(file)
    times, calls = collections.Counter(), collections.Counter()
    first_run = None
    for event in events:
        if event.get("cat") == "Session" and event["name"] == "model_run" and first_run is None:
            first_run = event["ts"] + event["dur"]  # the uncounted first run ends here
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time") and event["ts"] >= (first_run or 0):
            times[event["args"]["op_name"]] += event["dur"]
            calls[event["args"]["op_name"]] += 1
    total = sum(times.values()) / args.runs / 1000
    print(f"onnxruntime {ort.__version__}, {args.threads} thread(s), mean of {args.runs} runs: {total:.1f} ms in kernels")
    print(f"{'op type':28s} {'calls':>5s} {'time ms':>9s}")
    for op, micros in times.most_common():
        print(f"{op:28s} {calls[op] // args.runs:5d} {micros / args.runs / 1000:9.1f}")


if __name__ == "__main__":
    main()
