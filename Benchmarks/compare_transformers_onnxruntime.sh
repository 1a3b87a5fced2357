#!/usr/bin/env bash
# Transformers on the CPU, side by side with onnxruntime: for each case folder (the onnx
# backend-test layout of Scripts/export_transformers.py --shaped), `layerkit bench
# --backend cpu` and an onnxruntime InferenceSession (ORT_ENABLE_ALL, intra-op threads N,
# inter-op 1), both on the case's own test_data_set_0 inputs (int64 ids and masks as the
# model takes them), medians of 5 runs after 3 warm-ups, at 1 and 2 threads, with the load
# average after each pair. Needs the release build and a Python with onnx and onnxruntime.
#   Benchmarks/compare_transformers_onnxruntime.sh PYTHON CASE_DIR...
set -euo pipefail
cd "$(dirname "$0")/.."
python=$1; shift
echo "| model | threads | LayerKit ms | onnxruntime ms | ratio | load |"
echo "|---|---|---|---|---|---|"
for case in "$@"; do
    names=$("$python" -c "import onnx, sys; m = onnx.load(sys.argv[1], load_external_data=False)
inits = {i.name for i in m.graph.initializer}
print(' '.join(i.name for i in m.graph.input if i.name not in inits))" "$case/model.onnx")
    inputs=(); k=0
    for name in $names; do inputs+=(--input "$name=$case/test_data_set_0/input_$k.pb"); k=$((k + 1)); done
    for threads in 1 2; do
        layerkit=$(.build/release/layerkit bench "$case/model.onnx" --backend cpu --threads "$threads" --repeat 5 \
                   "${inputs[@]}" --json | "$python" -c "import json, sys; print(json.load(sys.stdin)['results'][0]['medianMs'])")
        onnxruntime=$("$python" - "$case" "$threads" <<'PY'
import statistics, sys, time
import onnx, onnxruntime as ort
from onnx import numpy_helper
case, threads = sys.argv[1], int(sys.argv[2])
options = ort.SessionOptions()
options.intra_op_num_threads, options.inter_op_num_threads, options.log_severity_level = threads, 1, 3
session = ort.InferenceSession(f"{case}/model.onnx", options, providers=["CPUExecutionProvider"])
feeds = {i.name: numpy_helper.to_array(onnx.load_tensor(f"{case}/test_data_set_0/input_{k}.pb"))
         for k, i in enumerate(session.get_inputs())}
for _ in range(3):
    session.run(None, feeds)
times = []
for _ in range(5):
    start = time.perf_counter()
    session.run(None, feeds)
    times.append((time.perf_counter() - start) * 1e3)
print(statistics.median(times))
PY
)
        "$python" -c "import sys; l, o = float(sys.argv[2]), float(sys.argv[3])
print(f'| {sys.argv[1]} | {sys.argv[4]} | {l:.1f} | {o:.1f} | {l / o:.2f}x | {sys.argv[5]} |')" \
            "$(basename "$case")" "$layerkit" "$onnxruntime" "$threads" "$(cut -d' ' -f1 /proc/loadavg)"
    done
done
