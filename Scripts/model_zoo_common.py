"""Shared by Scripts/export_torchvision.py and Scripts/light_models.py: writing a
whole model as a case of the onnx backend-test layout, with onnxruntime's
reference and the "fp16 twin" tolerance for the GPU.

Needs only onnx, onnxruntime and numpy (no torch), so CI can run
light_models.py from a bare venv.

A case folder:
    model.onnx
    test_data_set_0/input_0.pb ... output_0.pb   (serialized TensorProtos)
    tolerance.json   {"gpu": x, "fp16_twin_error": e, ...}

The GPU stores every tensor as fp16 (rgba16f images), so an fp32 reference is
not the right yardstick for a whole model: its error grows with depth. The
yardstick is what onnxruntime itself does on the same graph when every node
output (and the graph inputs) is rounded to fp16 -- the "fp16 twin": a copy of
the graph with Cast(to FLOAT16) -> Cast(to FLOAT) after every float value. Its
worst error against the fp32 run, e = max |twin - ref| / max(1, |ref|), is the
error fp16 storage alone explains; the GPU is held to max(1e-3, 2 e).
"""

import json
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

FLOAT_TYPES = {TensorProto.FLOAT}


def session(model, threads=1):
    """onnxruntime on the CPU with graph optimizations off (what the backend tests use)."""
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = threads
    opts.log_severity_level = 3
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else model
    return ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])


def run(model, feeds, threads=2):
    sess = session(model, threads)
    return sess.run(None, feeds)


def relative_error(y, ref):
    """max |y - ref| / max(1, |ref|), the measure of the parity rule (NaN-aware)."""
    y = np.asarray(y, dtype=np.float64).ravel()
    ref = np.asarray(ref, dtype=np.float64).ravel()
    if y.size == 0:
        return 0.0
    both_nan = np.isnan(y) & np.isnan(ref)
    err = np.abs(y - ref) / np.maximum(1.0, np.abs(ref))
    err[both_nan] = 0.0
    err[np.isnan(err)] = np.inf
    return float(err.max())


def fp16_twin(model):
    """A copy of `model` where every float graph input and every float node
    output is rounded to fp16 (Cast to FLOAT16, Cast back to FLOAT), as the
    GPU's rgba16f images round every stored tensor. Constants and
    initializers keep fp32 (the GPU keeps weights in fp32 buffers)."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {}
    for v in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        if v.type.HasField("tensor_type"):
            types[v.name] = v.type.tensor_type.elem_type
    graph = model.graph
    initializers = {i.name for i in graph.initializer}
    nodes = []
    counter = [0]

    def rounding(name):
        counter[0] += 1
        raw, half = f"{name}__fp32_{counter[0]}", f"{name}__fp16_{counter[0]}"
        return raw, [helper.make_node("Cast", [raw], [half], to=TensorProto.FLOAT16, name=f"twin_h{counter[0]}"),
                     helper.make_node("Cast", [half], [name], to=TensorProto.FLOAT, name=f"twin_f{counter[0]}")]

    # Graph inputs: renamed at the consumers' side by rounding into the old name.
    renamed_inputs = []
    for i in graph.input:
        if i.name in initializers or types.get(i.name) not in FLOAT_TYPES:
            continue
        raw, casts = rounding(i.name)
        renamed_inputs.append((i.name, raw))
        nodes += casts
    for node in graph.node:
        if node.op_type in ("Constant", "Shape", "Size", "ConstantOfShape"):
            nodes.append(node)
            continue
        extra = []
        for k, out in enumerate(node.output):
            if out and types.get(out) in FLOAT_TYPES:
                raw, casts = rounding(out)
                node.output[k] = raw
                extra += casts
        nodes.append(node)
        nodes += extra
    for old, raw in renamed_inputs:
        for i in graph.input:
            if i.name == old:
                i.name = raw
    del graph.node[:]
    graph.node.extend(nodes)
    # An input fed straight to an output would now be a Cast's output: fine.
    return model


JITTERS = 4
CPU_TOLERANCE = 1e-4


def twin_error(model, feeds, reference, jitters=JITTERS):
    """The worst error of the fp16 twin against the fp32 outputs, per output:
    the max over the twin on `feeds` and on `jitters` copies of `feeds`, each
    float input scaled by (1 + u), u uniform in +-2^-11 (seeded), below the
    half-ulp fp16 keeps. A random-weight network amplifies rounding
    chaotically, so the worst error of one rounding pattern is a noisy
    statistic: on the narrow MobileNetV3 the jittered twins' errors ran from
    4.8e-3 to 1.6e-2. Any fp16 implementation is one more such pattern; the
    max over five is what it should be held to."""
    twin = fp16_twin(model)
    sess = session(twin, 2)
    names = [i.name for i in sess.get_inputs()]
    worst = [0.0] * len(reference)
    for k in range(jitters + 1):
        rng = np.random.default_rng(1000 + k)
        twin_feeds = {}
        for name in names:
            x = feeds[name.split("__fp32_")[0]]
            if k and x.dtype == np.float32:
                x = (x * (1 + rng.uniform(-2.0 ** -11, 2.0 ** -11, x.shape))).astype(np.float32)
            twin_feeds[name] = x
        outs = sess.run(None, twin_feeds)
        worst = [max(w, relative_error(t, r)) for w, t, r in zip(worst, outs, reference)]
    return worst


def write_tolerance(folder, twin, notes=None):
    """tolerance.json from the twin's worst errors (per output)."""
    tolerance = {
        "gpu": max(1e-3, 2 * max(twin)),
        # The CPU computes in fp32 like onnxruntime, in another order: ONNX's
        # rtol 1e-3 / atol 1e-7 fails a whole model's near-zero outputs (1.3e-6
        # off on a 9.8e-4 output of the style net), so it is held to
        # 1e-4 max(1, |ref|) instead, the bound of Docs/MODELS.md's fixture models.
        "cpu": CPU_TOLERANCE,
        "fp16_twin_error": max(twin),
        "measure": "max |y - ref| / max(1, |ref|) over every output",
        "rule": "GPU against output_K.pb: worst error <= gpu; gpu = max(1e-3, 2 x fp16_twin_error), the worst error "
                "onnxruntime shows on this graph with every node output rounded to fp16, on the input and on "
                f"{JITTERS} copies jittered below fp16's half ulp (Scripts/model_zoo_common.py)",
    }
    if notes:
        tolerance["notes"] = notes
    with open(os.path.join(folder, "tolerance.json"), "w") as f:
        json.dump(tolerance, f, indent=1)
        f.write("\n")
    return tolerance


def retolerance(folder, standard=None):
    """Recomputes a written case's tolerance.json from its files (keeping its
    notes); `standard`: the folder of the standard-op twin of a model with
    custom nodes, whose graph gives the tolerance."""
    source = standard or folder
    model = onnx.load(os.path.join(source, "model.onnx"))
    inits = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    data = os.path.join(folder, "test_data_set_0")
    feeds = {n: numpy_helper.to_array(onnx.load_tensor(os.path.join(data, f"input_{k}.pb"))) for k, n in enumerate(names)}
    refs = [numpy_helper.to_array(onnx.load_tensor(os.path.join(data, f"output_{k}.pb")))
            for k in range(len(model.graph.output))]
    old = os.path.join(folder, "tolerance.json")
    notes = json.load(open(old)).get("notes") if os.path.exists(old) else None
    return write_tolerance(folder, twin_error(model, feeds, refs), notes)


def save_case(folder, model, feeds, outputs=None, notes=None, twin_of=None):
    """Writes `model` with its inputs and onnxruntime's outputs (computed
    here unless `outputs` are given, e.g. from a standard-op twin of a model
    with custom nodes) and tolerance.json. `twin_of`: the standard-op model
    whose fp16 twin gives the tolerance (default: `model`). Returns a summary."""
    os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    standard = twin_of if twin_of is not None else model
    if outputs is None:
        outputs = run(standard, feeds)
    names = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    for k, name in enumerate(names):
        tensor = numpy_helper.from_array(feeds[name], name)
        with open(os.path.join(folder, "test_data_set_0", f"input_{k}.pb"), "wb") as f:
            f.write(tensor.SerializeToString())
    for k, (out, value) in enumerate(zip(model.graph.output, outputs)):
        tensor = numpy_helper.from_array(np.asarray(value), out.name)
        with open(os.path.join(folder, "test_data_set_0", f"output_{k}.pb"), "wb") as f:
            f.write(tensor.SerializeToString())
    twin = twin_error(standard, feeds, outputs)
    tolerance = write_tolerance(folder, twin, notes)
    size = sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(folder) for n in ns)
    ops = sorted({(n.domain or "ai.onnx") + ":" + n.op_type if n.domain not in ("", "ai.onnx") else n.op_type
                  for n in model.graph.node})
    summary = {"case": os.path.basename(folder), "nodes": len(model.graph.node), "bytes": size,
               "fp16_twin_error": max(twin), "gpu_tolerance": tolerance["gpu"], "ops": ops,
               "output_range": float(max(np.abs(np.asarray(o)).max() for o in outputs))}
    print(f"  {summary['case']}: {summary['nodes']} nodes, {size / 1e6:.2f} MB, |y| <= {summary['output_range']:.3g}, "
          f"fp16 twin error {summary['fp16_twin_error']:.2e} -> GPU tolerance {summary['gpu_tolerance']:.2e}",
          flush=True)
    return summary


if __name__ == "__main__":
    # python Scripts/model_zoo_common.py --retolerance CASE_FOLDER ...: tolerance.json again
    import sys
    if sys.argv[1:2] != ["--retolerance"]:
        sys.exit("usage: model_zoo_common.py --retolerance CASE_FOLDER ...")
    for case in sys.argv[2:]:
        name = os.path.basename(os.path.normpath(case))
        standard = os.path.join(os.path.dirname(os.path.normpath(case)), name.replace("_swish", "")) \
            if "_swish" in name else None
        t = retolerance(case, standard)
        print(f"{name}: fp16 twin {t['fp16_twin_error']:.2e} -> GPU tolerance {t['gpu']:.2e}", flush=True)
