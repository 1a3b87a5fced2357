#!/usr/bin/env python3
"""LayerKit's GPU path beside ncnn's Vulkan path on the same Vulkan device:
single convolution layers and whole models, medians side by side in one run.

    python Benchmarks/compare_ncnn.py layers [WORKLOAD ...] [--repeat N] [--warmup N]
    python Benchmarks/compare_ncnn.py models [--zoo DIR] [--models resnet18,mobilenet_v2] [--repeat N] [--warmup N]
    python Benchmarks/compare_ncnn.py all     (both)
    python Benchmarks/compare_ncnn.py convert [--zoo DIR] [--models ...] [--out DIR]   (pnnx, then the check below)
  common: [--layerkit PATH] [--work DIR] [--ncnn-threads N] [--ncnn-gpu INDEX] [--markdown] [--json FILE]

Needs numpy, onnx, onnxruntime and the ncnn wheel (`pip install ncnn`), and
for `models` without ready ncnn files the pnnx converter (`pip install pnnx`);
the layerkit binary built (`swift build -c release --product layerkit`).

layers: each workload (conv=NxCxHxW,M,K,STRIDE,PAD[,GROUP], the syntax of
compare_conv_onnxruntime.py, whose seeded weights and input it reuses) is
written twice: as a one-node ONNX model for LayerKit (`layerkit bench
MODEL.onnx --backend gpu --json`: Model.predict, Float32 in, upload, run,
download, Float32 out) and as an ncnn net written here (an Input layer and
one Convolution, or ConvolutionDepthWise for a grouped conv, param file and
weight file from the same arrays); ncnn runs Extractor.input -> extract ->
NumPy (its Vulkan path uploads, runs and downloads inside extract). Defaults:
issue 13's four layers (3x3 s1 64->64 at 56x56, 1x1 256->64 at 56x56,
depthwise 3x3 32 channels at 112x112, 7x7 s2 3->64 at 224x224).

models: resnet18 and mobilenet_v2 as Scripts/export_torchvision.py writes
them (ZOO/<name>_torchscript/model.onnx, or ZOO/<name>/model.onnx). The ncnn
net is converted from that same ONNX file with pnnx (`pnnx model.onnx
inputshape=[1,3,224,224] fp16=0`: pnnx reads ONNX directly, so no TorchScript
export is needed; fp16=0 keeps the weights as the ONNX file has them, and
ncnn's Vulkan path still stores fp16 on the device by default). Files ready
beside the model (model.ncnn.param and model.ncnn.bin) are used as they are.
Where pnnx is missing (the device machine), a param file (beside the model
or in --ncnn-params) is enough: the weight file is rebuilt from the ONNX
model's initializers (pnnx's layout for these exports, which `convert`
checks byte for byte), so only the few-KB param files travel.
Generated files go under --work (default .build/compare-ncnn, never
committed).

Every ncnn net's output is checked against onnxruntime's on the same input
(max abs diff, on ncnn's CPU path in float32, which shows the net is the
ONNX model's, and on its Vulkan path with its fp16 defaults), so the two
sides time the same network. Rows alternate LayerKit and ncnn per case,
so both see about the same load; the load average is printed before and
after. ratio = LayerKit's median / ncnn's (below 1: LayerKit faster; issue
13's target for the models is at most 0.5x). The device ncnn picked is
printed and must be the one LayerKit used.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE]

# issue 13's single layers (the CPU targets name the same four)
DEFAULT_LAYERS = [
    "conv=1x64x56x56,64,3,1,1",
    "conv=1x256x56x56,64,1,1,0",
    "conv=1x32x112x112,32,3,1,1,32",
    "conv=1x3x224x224,64,7,2,3",
]
DEFAULT_MODELS = ["resnet18", "mobilenet_v2"]


def load_average():
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def conv_model(spec):
    """The one-node ONNX model of `spec`, its input and output shape
    (compare_conv_onnxruntime.model_for: the CPU comparison's weights)."""
    import numpy as np
    from compare_conv_onnxruntime import model_for
    return model_for(spec, np)


def ncnn_conv_files(model, spec, param_path, bin_path):
    """ncnn's param and weight files for the one Conv node of `model`."""
    import numpy as np
    from onnx import numpy_helper

    node = model.graph.node[0]
    attrs = {a.name: a for a in node.attribute}
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    w, b = inits[node.input[1]], inits[node.input[2]]
    n, c, h, wd = (d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim)
    m, _, kh, kw = w.shape
    sh, sw = attrs["strides"].ints
    pt, pl, pb, pr = attrs["pads"].ints
    group = attrs["group"].i if "group" in attrs else 1
    # ncnn ids: 0 num_output, 1/11 kernel w/h, 2/12 dilation, 3/13 stride,
    # 4/14/15/16 pad left/top/right/bottom, 5 bias_term, 6 weight_data_size, 7 group
    params = (f"0={m} 1={kw} 11={kh} 2=1 12=1 3={sw} 13={sh} 4={pl} 14={pt} 15={pr} 16={pb} "
              f"5=1 6={w.size}")
    kind = "Convolution"
    if group != 1:
        kind, params = "ConvolutionDepthWise", params + f" 7={group}"
    with open(param_path, "w") as f:
        f.write(f"7767517\n2 2\nInput in0 0 1 in0 0={wd} 1={h} 2={c}\n{kind} conv 1 1 in0 out0 {params}\n")
    with open(bin_path, "wb") as f:
        # weights: a 4-byte flag (0: raw float32), OIHW as ONNX has them; bias raw float32
        f.write(np.zeros(1, np.uint32).tobytes())
        f.write(np.ascontiguousarray(w, np.float32).tobytes())
        f.write(np.ascontiguousarray(b, np.float32).tobytes())


class NcnnNet:
    """One ncnn net on the Vulkan device `gpu` (its defaults: fp16 storage and
    arithmetic), or on the CPU in float32 throughout (the check that the net
    is the ONNX model's: ncnn's CPU default stores fp16 too)."""

    def __init__(self, param, weights, vulkan, threads, gpu):
        import ncnn
        self.net = ncnn.Net()
        self.net.opt.use_vulkan_compute = vulkan
        self.net.opt.num_threads = threads
        if not vulkan:
            for option in ("use_fp16_storage", "use_fp16_arithmetic", "use_fp16_packed", "use_bf16_storage"):
                setattr(self.net.opt, option, False)
        if vulkan:
            self.net.set_vulkan_device(gpu)
        if self.net.load_param(param) != 0 or self.net.load_model(weights) != 0:
            raise RuntimeError(f"ncnn could not load {param}")
        self.input_name = self.net.input_names()[0]
        self.output_name = self.net.output_names()[0]

    def run(self, mat):
        import numpy as np
        with self.net.create_extractor() as ex:
            ex.input(self.input_name, mat)
            status, out = ex.extract(self.output_name)
            if status != 0:
                raise RuntimeError(f"ncnn extract failed: {status}")
            return np.array(out)  # a copy: the Mat is released with the extractor


def ncnn_mat(x):
    import ncnn
    import numpy as np
    # A Mat that owns its data: one wrapping NumPy memory crashes this wheel's extract.
    return ncnn.Mat(np.ascontiguousarray(x[0])).clone()


def timed(body, warmup, runs):
    for _ in range(warmup):
        body()
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        body()
        samples.append((time.perf_counter() - t0) * 1e3)
    return {"runs": runs, "medianMs": statistics.median(samples), "minMs": min(samples)}


def ort_output(onnx_path_or_model, x):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    src = onnx_path_or_model if isinstance(onnx_path_or_model, str) else onnx_path_or_model.SerializeToString()
    session = ort.InferenceSession(src, opts, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def layerkit_gpu(layerkit, path, warmup, runs):
    """LayerKit's GPU end to end for `path`: (medianMs, minMs, placement, device record)."""
    cmd = [layerkit, "bench", path, "--backend", "gpu", "--repeat", str(runs), "--warmup", str(warmup), "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {done.stderr.strip()[-400:]}")
    record = json.loads(done.stdout)
    r = record["results"][0]
    return r["medianMs"], r["minMs"], r["placement"], record.get("device") or {}


def compare_case(name, onnx_path, param, weights, x, args, gpu):
    """One row: LayerKit GPU and ncnn Vulkan timed, ncnn checked against onnxruntime."""
    import numpy as np
    ref = ort_output(onnx_path, x).astype(np.float64)
    mat = ncnn_mat(x)
    cpu_net = NcnnNet(param, weights, vulkan=False, threads=args.ncnn_threads, gpu=gpu)
    cpu_diff = float(np.max(np.abs(cpu_net.run(mat).reshape(ref.shape) - ref)))
    del cpu_net
    lk_med, lk_min, placement, device = layerkit_gpu(args.layerkit, onnx_path, args.warmup, args.repeat)
    net = NcnnNet(param, weights, vulkan=True, threads=args.ncnn_threads, gpu=gpu)
    y = net.run(mat)
    gpu_diff = float(np.max(np.abs(y.reshape(ref.shape) - ref)))
    s = timed(lambda: net.run(mat), args.warmup, args.repeat)
    del net
    row = {"case": name, "layerkitMedianMs": lk_med, "layerkitMinMs": lk_min, "placement": placement,
           "ncnnMedianMs": s["medianMs"], "ncnnMinMs": s["minMs"], "ratio": lk_med / s["medianMs"],
           "maxAbsRef": float(np.max(np.abs(ref))), "ncnnCpuMaxAbsDiff": cpu_diff, "ncnnVulkanMaxAbsDiff": gpu_diff,
           "layerkitDevice": device.get("name", "?")}
    print(f"  {name}: LayerKit {lk_med:.3f} ms ({placement}), ncnn {s['medianMs']:.3f} ms, "
          f"ratio {row['ratio']:.2f}x; ncnn vs onnxruntime max abs diff CPU {cpu_diff:.2e}, "
          f"Vulkan {gpu_diff:.2e} (max |ref| {row['maxAbsRef']:.2f})", flush=True)
    return row


def run_layers(args, gpu):
    import onnx
    folder = os.path.join(args.work, "layers")
    os.makedirs(folder, exist_ok=True)
    rows = []
    for spec in args.workloads or DEFAULT_LAYERS:
        model, x, _ = conv_model(spec)
        stem = os.path.join(folder, spec.replace("=", "_").replace(",", "_"))
        onnx.save(model, stem + ".onnx")
        ncnn_conv_files(model, spec, stem + ".param", stem + ".bin")
        rows.append(compare_case(spec, stem + ".onnx", stem + ".param", stem + ".bin", x, args, gpu))
    return rows


def find_model(zoo, name):
    for case in (f"{name}_torchscript", name):
        path = os.path.join(zoo, case, "model.onnx")
        if os.path.exists(path):
            return path
    raise RuntimeError(f"no {name}_torchscript/model.onnx or {name}/model.onnx under {zoo} "
                       "(Scripts/export_torchvision.py --only NAME --exporters torchscript writes them)")


def weighted_layers(param_path):
    """(type, weight_data_size, bias_term) of each layer with weights in an ncnn param file."""
    layers = []
    with open(param_path) as f:
        for line in f.read().splitlines()[2:]:
            fields = line.split()
            if fields and fields[0] in ("Convolution", "ConvolutionDepthWise", "InnerProduct"):
                kv = dict(item.split("=", 1) for item in fields[4:] if "=" in item)
                # InnerProduct: 1 bias_term, 2 weight_data_size; the convolutions: 5 and 6
                size, bias = ("2", "1") if fields[0] == "InnerProduct" else ("6", "5")
                layers.append((fields[0], int(kv.get(size, 0)), int(kv.get(bias, 0))))
    return layers


def ncnn_bin_from_onnx(onnx_path, param_path, bin_path):
    """Writes the ncnn weight file of `param_path` from the ONNX model's own
    initializers: each Conv's and Gemm's weight (a 4-byte raw-float32 flag,
    then the floats as ONNX stores them) and bias, in node order. That is the
    layout pnnx writes for these TorchScript exports (fp16=0), checked byte
    for byte by `convert`; so on a machine without pnnx the carried param file
    and the model exported there make the ncnn net. The param's layers must
    match the graph's Conv/Gemm nodes one for one, in weight sizes."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model = onnx.load(onnx_path)
    inits = {i.name: i for i in model.graph.initializer}
    nodes = [n for n in model.graph.node if n.op_type in ("Conv", "Gemm")]
    layers = weighted_layers(param_path)
    if len(nodes) != len(layers):
        raise RuntimeError(f"{param_path} has {len(layers)} layers with weights, {onnx_path} {len(nodes)} Conv/Gemm nodes")
    with open(bin_path, "wb") as f:
        for node, (kind, size, bias) in zip(nodes, layers):
            if node.input[1] not in inits or (bias and (len(node.input) < 3 or node.input[2] not in inits)):
                raise RuntimeError(f"node {node.name}: weights are not initializers")
            w = numpy_helper.to_array(inits[node.input[1]]).astype(np.float32)
            if node.op_type == "Gemm" and not any(a.name == "transB" and a.i == 1 for a in node.attribute):
                w = w.T  # InnerProduct stores [out, in]
            if w.size != size:
                raise RuntimeError(f"node {node.name}: {w.size} weights, the param's {kind} has {size}")
            f.write(np.zeros(1, np.uint32).tobytes())
            f.write(np.ascontiguousarray(w).tobytes())
            if bias:
                f.write(numpy_helper.to_array(inits[node.input[2]]).astype(np.float32).tobytes())


def model_files(args, name):
    """(onnx path, ncnn param, ncnn bin) for model `name`: ncnn files beside
    the model as they are; a param file beside it (or in --ncnn-params) with
    the weights rebuilt from the ONNX file; else converted with pnnx."""
    path = find_model(args.zoo, name)
    here = os.path.dirname(path)
    ready = [os.path.join(here, f"model.ncnn.{ext}") for ext in ("param", "bin")]
    if all(os.path.exists(p) for p in ready):
        return path, ready[0], ready[1]
    folder = os.path.join(args.work, "models")
    os.makedirs(folder, exist_ok=True)
    param, weights = os.path.join(folder, f"{name}.ncnn.param"), os.path.join(folder, f"{name}.ncnn.bin")
    carried = [p for p in (ready[0], os.path.join(args.ncnn_params or "", f"{name}.ncnn.param")) if os.path.exists(p)]
    if carried:
        shutil.copyfile(carried[0], param)
        ncnn_bin_from_onnx(path, param, weights)
        print(f"  ncnn net: {carried[0]} with its weights rebuilt from {path}", flush=True)
        return path, param, weights
    if not (os.path.exists(param) and os.path.exists(weights)
            and os.path.getmtime(param) >= os.path.getmtime(path)):
        copy = os.path.join(folder, f"{name}.onnx")
        shutil.copyfile(path, copy)
        pnnx = shutil.which("pnnx") or os.path.join(os.path.dirname(sys.executable), "pnnx")
        shape = input_shape(path)
        cmd = [pnnx, copy, "inputshape=[" + ",".join(map(str, shape)) + "]", "fp16=0"]
        print("  converting: " + " ".join(cmd), flush=True)
        done = subprocess.run(cmd, cwd=folder, capture_output=True, text=True)
        if done.returncode != 0 or not os.path.exists(param):
            raise RuntimeError(f"pnnx failed on {path}: {(done.stdout + done.stderr)[-600:]}")
        os.remove(copy)
        for extra in (".pnnx.bin", ".pnnx.onnx", ".pnnx.param", ".pnnxsim.onnx", "_ncnn.py", "_pnnx.py"):
            if os.path.exists(os.path.join(folder, name + extra)):
                os.remove(os.path.join(folder, name + extra))
    return path, param, weights


def run_convert(args):
    """Converts the models with pnnx and checks that ncnn_bin_from_onnx
    rebuilds pnnx's weight file byte for byte; copies the param files to --out."""
    for name in args.models.split(","):
        path, param, weights = model_files(args, name)
        rebuilt = weights + ".rebuilt"
        ncnn_bin_from_onnx(path, param, rebuilt)
        same = open(rebuilt, "rb").read() == open(weights, "rb").read()
        os.remove(rebuilt)
        if not same:
            sys.exit(f"{name}: the weights rebuilt from {path} differ from pnnx's {weights}")
        print(f"{name}: {param} (weights rebuilt from the ONNX file: identical to pnnx's, "
              f"{os.path.getsize(weights)} bytes)")
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            shutil.copyfile(param, os.path.join(args.out, f"{name}.ncnn.param"))


def input_shape(path):
    import onnx
    dims = onnx.load(path, load_external_data=False).graph.input[0].type.tensor_type.shape.dim
    return [d.dim_value if d.dim_value > 0 else 1 for d in dims]


def run_models(args, gpu):
    import numpy as np
    rows = []
    for name in args.models.split(","):
        path, param, weights = model_files(args, name)
        x = np.random.default_rng(1).random(input_shape(path)).astype(np.float32)
        rows.append(compare_case(name, path, param, weights, x, args, gpu))
    return rows


def print_rows(title, rows, markdown):
    header = ["case", "LayerKit GPU ms", "ncnn Vulkan ms", "LayerKit / ncnn", "ncnn CPU fp32 vs ORT max abs diff",
              "ncnn Vulkan vs ORT max abs diff", "max abs ref"]
    body = [[r["case"], f"{r['layerkitMedianMs']:.3f}", f"{r['ncnnMedianMs']:.3f}", f"{r['ratio']:.2f}x",
             f"{r['ncnnCpuMaxAbsDiff']:.1e}", f"{r['ncnnVulkanMaxAbsDiff']:.1e}", f"{r['maxAbsRef']:.2f}"]
            for r in rows]
    print(f"\n{title}")
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|---|" + "---:|" * (len(header) - 1))
        for line in body:
            print("| " + " | ".join(line) + " |")
        return
    widths = [max(len(line[c]) for line in [header] + body) for c in range(len(header))]
    for i, line in enumerate([header] + body):
        print("  ".join(t.ljust(w) if c == 0 else t.rjust(w) for c, (t, w) in enumerate(zip(line, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["layers", "models", "all", "convert"])
    parser.add_argument("workloads", nargs="*", help="layers: conv=NxCxHxW,M,K,STRIDE,PAD[,GROUP] (default: issue 13's)")
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS))
    parser.add_argument("--zoo", default=os.path.join(ROOT, ".build", "model-zoo", "full"))
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--layerkit", default=os.path.join(ROOT, ".build", "release", "layerkit"))
    parser.add_argument("--work", default=os.path.join(ROOT, ".build", "compare-ncnn"))
    parser.add_argument("--ncnn-threads", type=int, default=os.cpu_count())
    parser.add_argument("--ncnn-gpu", type=int, default=None,
                        help="ncnn's Vulkan device index (default: the one named like LayerKit's device)")
    parser.add_argument("--markdown", action="store_true", help="also print the tables as Markdown")
    parser.add_argument("--json", help="write every row as JSON here")
    parser.add_argument("--ncnn-params", help="a folder of NAME.ncnn.param files (made by `convert --out`): "
                        "the ncnn nets with weights rebuilt from the ONNX models, no pnnx needed")
    parser.add_argument("--out", help="convert: copy the param files here")
    args = parser.parse_args()
    if args.repeat < 1 or args.warmup < 0:
        parser.error("--repeat must be >= 1 and --warmup >= 0")
    if args.what == "convert":
        return run_convert(args)
    import ncnn
    import onnxruntime

    devices = subprocess.run([args.layerkit, "devices"], capture_output=True, text=True).stdout
    count = ncnn.get_gpu_count()
    if count == 0:
        sys.exit("ncnn sees no Vulkan device: its Vulkan path cannot run here")
    names = [ncnn.get_gpu_info(i).device_name() for i in range(count)]
    gpu = args.ncnn_gpu
    if gpu is None:
        gpu = next((i for i, n in enumerate(names) if n and n in devices), ncnn.get_default_gpu_index())
    print(f"load average before: {load_average()}; {os.cpu_count()} cores; ncnn {ncnn.__version__} "
          f"(Vulkan, default fp16 storage, {args.ncnn_threads} threads), onnxruntime {onnxruntime.__version__}; "
          f"medians of {args.repeat} runs after {args.warmup} warm-up, end to end (Float32 in, Float32 out)")
    print(f"ncnn's Vulkan devices: {names}; ncnn runs on #{gpu}: {names[gpu]}")
    print("LayerKit's devices (`layerkit devices`):\n  " + "\n  ".join(devices.strip().splitlines()))
    rows = {}
    if args.what in ("layers", "all"):
        print("single conv layers:", flush=True)
        rows["layers"] = run_layers(args, gpu)
    if args.what in ("models", "all"):
        print("whole models:", flush=True)
        rows["models"] = run_models(args, gpu)
    mismatched = {r["layerkitDevice"] for rs in rows.values() for r in rs} - {names[gpu]}
    if mismatched:
        print(f"WARNING: LayerKit ran on {sorted(mismatched)}, ncnn on {names[gpu]}: not the same device")
    else:
        print(f"both on the same device: {names[gpu]}"
              + (" — lavapipe EMULATES the GPU on the CPU: work per output, not GPU speed" if "llvmpipe" in names[gpu] else ""))
    print(f"load average after: {load_average()}")
    for key, title in (("layers", "single conv layers"), ("models", "whole models, 1x3x224x224")):
        if key in rows:
            print_rows(f"{title} (medians ms; ratio = LayerKit / ncnn)", rows[key], args.markdown)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"ncnnDevice": names[gpu], "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
