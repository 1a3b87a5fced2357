#!/usr/bin/env python3
"""Reference vectors for LayerKit's per-element activation ops.

Purpose
    For every case of a small catalog of per-element ops (ONNX names and
    ONNX attribute names, ONNX defaults; plus Swish and Linear, which ONNX
    at opset 20 does not have), build a one-op ONNX model, run it with
    onnxruntime on the CPU, and store input and output as .npy files that
    the Swift tests compare LayerKit's CPU and GPU paths against.

    onnxruntime runs with graph_optimization_level = ORT_DISABLE_ALL and one
    thread, so nothing is fused (with optimizations on, x*Sigmoid(x) becomes
    ORT's QuickGelu kernel, accurate to only ~2.5e-3). ORT still expands
    ONNX *function* ops that it has no kernel for (Mish, HardSwish) into
    their function bodies; the manifest says what ORT actually ran
    ("ort_nodes"). Where onnxruntime cannot load a model at all, the case
    falls back to onnx.reference.ReferenceEvaluator and the manifest says so.

    Honesty check: every case is also computed in float64 with numpy (a
    straightforward, numerically careful formula, with the mathematical
    limits at +-inf and NaN -> NaN), and the manifest records how far the
    stored reference is from it (see "Deviation fields" below). A summary
    table is printed at the end.

How to run (from the repository root)
    python3 Scripts/generate_op_references.py            # (re)write fixtures
    python3 Scripts/generate_op_references.py --check    # regenerate into a
                                                          # temp dir, compare bytes
    If the running Python lacks onnxruntime==1.32.0, onnx==1.23.2 and
    numpy==2.4.6, the script creates Scripts/.venv (git-ignored) with exactly
    those versions from PyPI and re-runs itself there. --any-versions skips
    that and uses whatever is installed (the manifest records the versions).

What it writes (Tests/LayerKitTests/Fixtures/ops/, stale *.npy removed first)
    <case-id>.input.npy          <f4, C order, shape 1x6x17x23 (2346 values)
    <case-id>.output.npy         <f4, same shape: the reference output
    <case-id>.<weight>.npy       <f4, shape [6]: per-channel weights, if any
    <case-id>.f64ref.npy         <f4, same shape: the float64 formula of the
                                 honesty check, rounded to float32 (an
                                 alternative reference where onnxruntime is
                                 not float32-accurate; see "float64_output")
    manifest.json                header + list of cases (strict JSON: no
                                 NaN/Infinity literals; float params are the
                                 exact float32 values written as doubles)

Inputs
    Seeded per op (all cases of one op share the same input), drawn in the
    op's interesting range, then rounded to fp16 (the GPU stores fp16, so the
    CPU reference must read the same values). The first 23 elements of
    every channel plane (flat index c*391 + i) hold the special values
    SPECIALS below (0, -0, +-1e-4, ..., +-65504, +inf, -inf, NaN), also
    fp16-rounded (1e-4 becomes 1.0001659e-4).

Deviation fields per case (ref = stored output, f64 = float64 formula)
    max_rel_vs_float64           max |ref-f64| / max(|f64|, 1e-30) over the
                                 elements where both are finite
    max_rel_vs_float64_normal    the same over |f64| >= FLT_MIN only (float32
                                 subnormal outputs cannot be 1e-5 accurate)
    max_err_vs_float64_floor1    max |ref-f64| / max(|f64|, 1)
    max_ulps_vs_float64          max distance in float32 ulps between ref and
                                 float32(f64) (0 = correctly rounded)
    rel_above_1e-6               how many finite elements are more than 1e-6
                                 (relative) off, and their input range
    nonfinite_mismatch_count     elements where ref and float32(f64) differ in
                                 being NaN / +inf / -inf / finite (float32(f64)
                                 turns float32 overflow into inf, so Exp(100)
                                 = inf counts as agreement)
    nonfinite_mismatches         those, grouped by input value

Versions used for the committed fixtures: onnxruntime 1.32.0, onnx 1.23.2,
numpy 2.4.6, Python 3.11, ONNX opset 20 (CPUExecutionProvider).
"""

import argparse
import filecmp
import json
import math
import os
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
VENV = os.path.join(HERE, ".venv")
VENV_PYTHON = os.path.join(VENV, "bin", "python")
PINNED = {"onnxruntime": "1.32.0", "onnx": "1.23.2", "numpy": "2.4.6"}
DEFAULT_OUT = os.path.join(ROOT, "Tests", "LayerKitTests", "Fixtures", "ops")


def installed_versions():
    """{package: version} of the pinned packages importable here (None if missing)."""
    from importlib import metadata
    out = {}
    for name in PINNED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def ensure_pinned_env(any_versions):
    """Re-executes in Scripts/.venv (made on first use) unless the pins are met here."""
    if any_versions or installed_versions() == PINNED:
        return
    if os.path.realpath(sys.prefix) == os.path.realpath(VENV):
        sys.exit(f"{VENV} does not hold {PINNED} (found {installed_versions()}); "
                 "delete it and re-run, or pass --any-versions")
    if not os.path.exists(VENV_PYTHON):
        print(f"creating {VENV} with {PINNED} ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
        subprocess.run([VENV_PYTHON, "-m", "pip", "install", "-q",
                        *[f"{k}=={v}" for k, v in PINNED.items()]], check=True)
    os.execv(VENV_PYTHON, [VENV_PYTHON, os.path.abspath(__file__), *sys.argv[1:]])


# --------------------------------------------------------------------------
# Everything below needs numpy / onnx / onnxruntime.

SHAPE = (1, 6, 17, 23)
CHANNELS = SHAPE[1]
PLANE = SHAPE[2] * SHAPE[3]
BASE_SEED = 20250611
OPSET = 20
INF = float("inf")
NAN = float("nan")
SPECIALS = [0.0, -0.0, 1e-4, -1e-4, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 15.5, -15.5,
            20.5, -20.5, 30.0, -30.0, 100.0, -100.0, 65504.0, -65504.0, INF, -INF, NAN]

# Input ranges: (kind, lo, hi). "mixed" = 30% U[-10, 0], 70% 10**U[-3, 3].
RANGES = {
    "default": ("uniform", -10.0, 10.0),
    "Exp": ("uniform", -20.0, 12.0),
    "Softplus": ("uniform", -25.0, 25.0),
    "Mish": ("uniform", -25.0, 25.0),
    "Gelu": ("uniform", -25.0, 25.0),
    "Sin": ("uniform", -50.0, 50.0),
    "Cos": ("uniform", -50.0, 50.0),
    "Erf": ("uniform", -5.0, 5.0),
    "Tan": ("uniform", -1.4, 1.4),
    "Asin": ("uniform", -1.0, 1.0),
    "Acos": ("uniform", -1.0, 1.0),
    "Acosh": ("uniform", 1.0, 10.0),
    "Atanh": ("uniform", -0.99, 0.99),
    "Log": ("mixed", -3.0, 3.0),
    "Sqrt": ("mixed", -3.0, 3.0),
    "Reciprocal": ("mixed", -3.0, 3.0),
    "Pow": ("mixed", -3.0, 3.0),
}


def describe_range(op):
    kind, lo, hi = RANGES.get(op, RANGES["default"])
    if kind == "uniform":
        return f"uniform [{lo:g}, {hi:g}], fp16-rounded, specials first in each channel"
    return (f"30% uniform [-10, 0], 70% 10**uniform [{lo:g}, {hi:g}], fp16-rounded, "
            "specials first in each channel")


def make_input(np, op):
    """The seeded, fp16-rounded input of op, specials at the start of every channel."""
    rng = np.random.default_rng([BASE_SEED, zlib.crc32(op.encode())])
    kind, lo, hi = RANGES.get(op, RANGES["default"])
    n = math.prod(SHAPE)
    if kind == "uniform":
        x = rng.uniform(lo, hi, n)
    else:
        neg = rng.uniform(-10.0, 0.0, n)
        pos = 10.0 ** rng.uniform(lo, hi, n)
        x = np.where(rng.uniform(0.0, 1.0, n) < 0.3, neg, pos)
    x = x.reshape(SHAPE)
    specials = np.array(SPECIALS, dtype=np.float64)
    for c in range(CHANNELS):
        x[0, c].reshape(-1)[: len(specials)] = specials
    with np.errstate(over="ignore"):
        return x.astype(np.float16).astype(np.float32)


def f32(v):
    """A Python float holding exactly the float32 nearest v (what JSON gets)."""
    import numpy as np
    return float(np.float32(v))


# ---------------------------------------------------------------- float64 --

def f64_formulas(np):
    """{op: f(x, p, w) -> float64 array}: x float64, p params (float32 values
    as doubles), w weights as float64 arrays of shape [1, 6, 1, 1].
    Mathematical limits at +-inf; NaN -> NaN is applied by the caller."""

    def at_inf(x, y, pos, neg):
        y = np.where(x == INF, pos, y)
        return np.where(x == -INF, neg, y)

    def sigmoid(z):
        e = np.exp(-np.abs(z))
        return np.where(z >= 0, 1.0 / (1.0 + e), e / (1.0 + e))

    def softplus(x):
        return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0.0)

    erf = np.vectorize(math.erf, otypes=[np.float64])
    erfc = np.vectorize(math.erfc, otypes=[np.float64])

    def swish(x, p, w):
        beta = w["beta"] if "beta" in w else p["beta"]
        assert np.all(np.asarray(beta) > 0)
        return at_inf(x, x * sigmoid(beta * x), INF, -0.0)

    def prelu(x, p, w):
        s = w["slope"]
        y = np.where(x < 0, s * x, x)
        # s * x is identically 0 for s == 0, so the limit at -inf is 0 there.
        return at_inf(x, y, INF, np.where(s > 0, -INF, np.where(s < 0, INF, 0.0)))

    def clip(x, p, w):
        return np.clip(x, p.get("min", -INF), p.get("max", INF))

    def linear(x, p, w):
        scale = w["scale"] if "scale" in w else p["scale"]
        bias = w["bias"] if "bias" in w else p["bias"]
        return scale * x + bias

    def powf(x, p, w):
        e = p["exponent"]
        y = np.power(x, e)
        if e != round(e):
            # No real power of a negative base; C99 pow(-inf, 0.5) says +inf.
            y = np.where(x < 0, NAN, y)
        return y

    def gelu(x, p, w):
        if p["approximate"] == "tanh":
            z = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)
            y = x * sigmoid(2.0 * z)  # 0.5 * (1 + tanh(z)) == sigmoid(2z)
        else:
            y = 0.5 * x * erfc(-x / math.sqrt(2.0))  # 1 + erf(t) == erfc(-t)
        return at_inf(x, y, INF, -0.0)

    return {
        "Swish": swish,
        "Relu": lambda x, p, w: np.maximum(x, 0.0),
        "LeakyRelu": lambda x, p, w: np.where(x >= 0, x, p["alpha"] * x),
        "PRelu": prelu,
        "Elu": lambda x, p, w: np.where(x > 0, x, p["alpha"] * np.expm1(x)),
        "Selu": lambda x, p, w: p["gamma"] * np.where(x > 0, x, p["alpha"] * np.expm1(x)),
        "Celu": lambda x, p, w: np.maximum(x, 0.0)
        + np.minimum(0.0, p["alpha"] * np.expm1(x / p["alpha"])),
        "ThresholdedRelu": lambda x, p, w: np.where(x > p["alpha"], x, 0.0),
        "Sigmoid": lambda x, p, w: sigmoid(x),
        "HardSigmoid": lambda x, p, w: np.clip(p["alpha"] * x + p["beta"], 0.0, 1.0),
        # y == 0 exactly for x <= -3, so the limit at -inf is 0.
        "HardSwish": lambda x, p, w: at_inf(x, x * np.clip(x / 6.0 + 0.5, 0.0, 1.0), INF, -0.0),
        "Tanh": lambda x, p, w: np.tanh(x),
        "Softplus": lambda x, p, w: softplus(x),
        "Softsign": lambda x, p, w: at_inf(x, x / (1.0 + np.abs(x)), 1.0, -1.0),
        "Mish": lambda x, p, w: at_inf(x, x * np.tanh(softplus(x)), INF, -0.0),
        "Gelu": gelu,
        "Clip": clip,
        "Exp": lambda x, p, w: np.exp(x),
        "Log": lambda x, p, w: np.log(x),
        "Abs": lambda x, p, w: np.abs(x),
        "Neg": lambda x, p, w: -x,
        "Sqrt": lambda x, p, w: np.sqrt(x),
        "Reciprocal": lambda x, p, w: 1.0 / x,
        "Erf": lambda x, p, w: erf(x),
        "Sin": lambda x, p, w: np.sin(x),
        "Cos": lambda x, p, w: np.cos(x),
        "Tan": lambda x, p, w: np.tan(x),
        "Asin": lambda x, p, w: np.arcsin(x),
        "Acos": lambda x, p, w: np.arccos(x),
        "Atan": lambda x, p, w: np.arctan(x),
        "Sinh": lambda x, p, w: np.sinh(x),
        "Cosh": lambda x, p, w: np.cosh(x),
        "Asinh": lambda x, p, w: np.arcsinh(x),
        "Acosh": lambda x, p, w: np.arccosh(x),
        "Atanh": lambda x, p, w: np.arctanh(x),
        "Pow": powf,
        "Linear": linear,
        "Sign": lambda x, p, w: np.sign(x),
        "Shrink": lambda x, p, w: np.where(x < -p["lambd"], x + p["bias"],
                                           np.where(x > p["lambd"], x - p["bias"], 0.0)),
        "Floor": lambda x, p, w: np.floor(x),
        "Ceil": lambda x, p, w: np.ceil(x),
        "Round": lambda x, p, w: np.round(x),  # halves to even
        "IsNaN": lambda x, p, w: np.isnan(x).astype(np.float64),
        "IsInf": lambda x, p, w: np.where(x == INF, p["detect_positive"],
                                          np.where(x == -INF, p["detect_negative"], 0.0)),
        "Not": lambda x, p, w: (x == 0).astype(np.float64),
    }


# Ops whose output for a NaN input is not NaN (the float64 formula says what it is).
NAN_DEFINED = {"Shrink", "IsNaN", "IsInf", "Not"}


# ---------------------------------------------------------------- catalog --

class Case:
    """One reference case: an op, its params (as the manifest shows them),
    per-channel weights, and how the ONNX graph is built."""

    def __init__(self, case_id, op, params=None, weights=None, attrs=None,
                 build=None, onnx_text=None):
        self.id = case_id
        self.op = op
        self.params = params or {}
        self.weights = weights or {}      # name -> list of 6 floats
        self.attrs = attrs or {}          # ONNX attributes set on the node
        self.build = build                # None: a single node op(x, **attrs)
        self.onnx_text = onnx_text


def catalog():
    """The cases, in manifest order."""
    cases = []

    def simple(op, cid=0, params=None, attrs=None):
        params = {k: (f32(v) if isinstance(v, float) else v) for k, v in (params or {}).items()}
        attrs = attrs or {}
        text = f"{op}(x" + "".join(f", {k}={json.dumps(params[k] if k in params else v)}"
                                   for k, v in attrs.items()) + ")"
        if not attrs and params:
            text += "  [attributes omitted: ONNX defaults]"
        cases.append(Case(f"{op}-{cid}", op, params, attrs=attrs, onnx_text=text))

    # Swish: x * Sigmoid(beta * x) (ONNX has no classic Swish before opset 24).
    def swish_build(beta_name):
        return lambda: ([("Mul", ["x", beta_name], ["bx"], {}),
                         ("Sigmoid", ["bx"], ["s"], {}),
                         ("Mul", ["x", "s"], ["y"], {})])
    swish_text = "Mul(x, Sigmoid(Mul(x, beta)))"
    for cid, beta in ((0, 1.0), (1, 0.5)):
        c = Case(f"Swish-{cid}", "Swish", {"beta": f32(beta)},
                 build=swish_build("beta"), onnx_text=swish_text + " with scalar initializer beta")
        c.inits = {"beta": (f32(beta), [])}
        cases.append(c)
    c = Case("Swish-2", "Swish", {}, weights={"beta": [0.5, 1.0, 1.5, 2.0, 2.5, 3.0]},
             build=swish_build("beta"), onnx_text=swish_text + " with initializer beta[6,1,1]")
    cases.append(c)

    simple("Relu")
    simple("LeakyRelu", 0, {"alpha": 0.01})
    simple("LeakyRelu", 1, {"alpha": 0.2}, {"alpha": f32(0.2)})

    # PRelu: slope has no ONNX default; 0.25 is PyTorch's initial value.
    for cid, slope in ((0, [0.25] * 6), (1, [-0.5, 0.0, 0.01, 0.1, 1.0, 2.0])):
        cases.append(Case(f"PRelu-{cid}", "PRelu", {}, weights={"slope": slope},
                          build=lambda: [("PRelu", ["x", "slope"], ["y"], {})],
                          onnx_text="PRelu(x, slope) with initializer slope[6,1,1]"))

    simple("Elu", 0, {"alpha": 1.0})
    simple("Elu", 1, {"alpha": 0.5}, {"alpha": f32(0.5)})
    simple("Selu", 0, {"alpha": 1.67326319217681884765625, "gamma": 1.05070102214813232421875})
    simple("Selu", 1, {"alpha": 1.5, "gamma": 1.1}, {"alpha": f32(1.5), "gamma": f32(1.1)})
    simple("Celu", 0, {"alpha": 1.0})
    simple("Celu", 1, {"alpha": 2.0}, {"alpha": f32(2.0)})
    simple("ThresholdedRelu", 0, {"alpha": 1.0})
    simple("ThresholdedRelu", 1, {"alpha": 0.5}, {"alpha": f32(0.5)})
    simple("Sigmoid")
    simple("HardSigmoid", 0, {"alpha": 0.2, "beta": 0.5})
    simple("HardSigmoid", 1, {"alpha": 0.3, "beta": 0.4}, {"alpha": f32(0.3), "beta": f32(0.4)})
    simple("HardSwish")
    simple("Tanh")
    simple("Softplus")
    simple("Softsign")
    simple("Mish")
    simple("Gelu", 0, {"approximate": "none"})
    simple("Gelu", 1, {"approximate": "tanh"}, {"approximate": "tanh"})

    cases.append(Case("Clip-0", "Clip", {}, build=lambda: [("Clip", ["x"], ["y"], {})],
                      onnx_text="Clip(x)  [min, max omitted]"))
    c = Case("Clip-1", "Clip", {"min": f32(-1.0), "max": f32(6.0)},
             build=lambda: [("Clip", ["x", "min", "max"], ["y"], {})],
             onnx_text="Clip(x, min, max) with scalar initializers min=-1, max=6 (Relu6-like)")
    c.inits = {"min": (f32(-1.0), []), "max": (f32(6.0), [])}
    cases.append(c)

    for op in ("Exp", "Log", "Abs", "Neg", "Sqrt", "Reciprocal", "Erf", "Sin", "Cos",
               "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh"):
        simple(op)

    for cid, e in ((0, 2.0), (1, 0.5), (2, 3.0)):
        c = Case(f"Pow-{cid}", "Pow", {"exponent": f32(e)},
                 build=lambda: [("Pow", ["x", "exponent"], ["y"], {})],
                 onnx_text=f"Pow(x, Y) with scalar initializer Y={e:g}")
        c.inits = {"exponent": (f32(e), [])}
        cases.append(c)

    simple("Sign")
    simple("Shrink", 0, {"lambd": 0.5, "bias": 0.0})
    simple("Shrink", 1, {"lambd": 1.5, "bias": 0.5}, {"lambd": f32(1.5), "bias": f32(0.5)})
    for op in ("Floor", "Ceil", "Round"):
        simple(op)
    # Bool outputs (and Not's bool input) cast to and from float: LayerKit's bools are 0/1 floats.
    to_float = ("Cast", ["b"], ["y"], {"to": 1})
    cases.append(Case("IsNaN-0", "IsNaN", {}, build=lambda: [("IsNaN", ["x"], ["b"], {}), to_float],
                      onnx_text="Cast(IsNaN(x), to=FLOAT)"))
    for cid, dp, dn in ((0, 1, 1), (1, 0, 1)):
        cases.append(Case(f"IsInf-{cid}", "IsInf", {"detect_positive": f32(dp), "detect_negative": f32(dn)},
                          build=lambda dp=dp, dn=dn: [("IsInf", ["x"], ["b"],
                                                       {"detect_positive": dp, "detect_negative": dn}), to_float],
                          onnx_text=f"Cast(IsInf(x, detect_positive={dp}, detect_negative={dn}), to=FLOAT)"))
    cases.append(Case("Not-0", "Not", {}, build=lambda: [("Cast", ["x"], ["a"], {"to": 9}),
                                                         ("Not", ["a"], ["b"], {}), to_float],
                      onnx_text="Cast(Not(Cast(x, to=BOOL)), to=FLOAT)"))

    # Linear (not an ONNX op): y = scale * x + bias.
    lin_build = lambda: [("Mul", ["x", "scale"], ["sx"], {}), ("Add", ["sx", "bias"], ["y"], {})]
    for cid, scale, bias in ((0, 1.0, 0.0), (1, 2.0, -0.5)):
        c = Case(f"Linear-{cid}", "Linear", {"scale": f32(scale), "bias": f32(bias)},
                 build=lin_build, onnx_text="Add(Mul(x, scale), bias) with scalar initializers")
        c.inits = {"scale": (f32(scale), []), "bias": (f32(bias), [])}
        cases.append(c)
    cases.append(Case("Linear-2", "Linear", {},
                      weights={"scale": [0.8, 1.25, -0.5, 2.0, 0.1, 1.0],
                               "bias": [0.1, -0.2, 0.0, 0.5, -1.0, 0.3]},
                      build=lin_build,
                      onnx_text="Add(Mul(x, scale), bias) with initializers scale[6,1,1], "
                                "bias[6,1,1] (folded BatchNorm)"))
    return cases


# -------------------------------------------------------------- reference --

def build_model(np, case, shape=SHAPE):
    """The one-op ONNX model of `case` on input "x" and output "y" of `shape`
    (NCHW; per-channel weights need shape[1] values)."""
    from onnx import TensorProto, helper, numpy_helper
    inits = []
    for name, (value, shape) in getattr(case, "inits", {}).items():
        inits.append(numpy_helper.from_array(np.array(value, dtype=np.float32).reshape(shape), name))
    for name, values in case.weights.items():
        arr = np.array(values, dtype=np.float32).reshape(shape[1], 1, 1)
        inits.append(numpy_helper.from_array(arr, name))
    if case.build is None:
        specs = [(case.op, ["x"], ["y"], case.attrs)]
    else:
        specs = case.build()
    nodes = [helper.make_node(op, ins, outs, **attrs) for op, ins, outs, attrs in specs]
    graph = helper.make_graph(
        nodes, case.id.replace("-", "_"),
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="generate_op_references.py")
    model.ir_version = 10
    import onnx
    onnx.checker.check_model(model, full_check=True)
    return model


def run_reference(np, case, x, versions, tmpdir):
    """(output, reference label, node types ORT ran or None)."""
    import onnx
    import onnxruntime as ort
    model = build_model(np, case)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    saved = os.path.join(tmpdir, case.id + ".ort.onnx")
    opts.optimized_model_filepath = saved
    try:
        sess = ort.InferenceSession(model.SerializeToString(), opts,
                                    providers=["CPUExecutionProvider"])
    except Exception as err:  # noqa: BLE001 - any load failure means "no kernel"
        print(f"{case.id}: onnxruntime cannot run it ({str(err).splitlines()[0][:120]}); "
              "using onnx.reference.ReferenceEvaluator", file=sys.stderr)
        from onnx.reference import ReferenceEvaluator
        y = ReferenceEvaluator(model).run(None, {"x": x})[0]
        return np.asarray(y, dtype=np.float32), f"onnx reference evaluator {versions['onnx']}", None
    y = sess.run(None, {"x": x})[0]
    ran = [n.op_type for n in onnx.load(saved).graph.node]
    return np.asarray(y, dtype=np.float32), f"onnxruntime {versions['onnxruntime']}", ran


# -------------------------------------------------------------- deviation --

def fmt_value(v):
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "+inf" if v > 0 else "-inf"
    return repr(v)


def deviation(np, x, ref, f64):
    """The deviation fields of the manifest (see the module docstring)."""
    f64_32 = f64.astype(np.float32)  # float32 overflow -> inf, as the reference would

    def cls(a):
        return np.where(np.isnan(a), 0, np.where(a == np.inf, 1, np.where(a == -np.inf, 2, 3)))

    mismatch = cls(ref) != cls(f64_32)
    both = np.isfinite(ref) & np.isfinite(f64_32) & np.isfinite(f64)
    r = ref.astype(np.float64)
    diff = np.abs(r - f64)
    rel = np.where(both, diff / np.maximum(np.abs(f64), 1e-30), 0.0)
    normal = both & (np.abs(f64) >= np.finfo(np.float32).tiny)
    rel_normal = np.where(normal, rel, 0.0)
    floor1 = np.where(both, diff / np.maximum(np.abs(f64), 1.0), 0.0)

    def ordered(a):
        i = a.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    ulps = np.where(both, np.abs(ordered(ref) - ordered(f64_32)), 0)

    def worst(a):
        i = int(np.argmax(a))
        return {"input": fmt_value(x.flat[i]), "reference": fmt_value(ref.flat[i]),
                "float64": fmt_value(f64.flat[i])}

    above = rel > 1e-6
    xa = x[above]

    groups = {}
    for i in np.flatnonzero(mismatch):
        key = (fmt_value(x.flat[i]), fmt_value(ref.flat[i]), fmt_value(f64.flat[i]))
        groups[key] = groups.get(key, 0) + 1
    return {
        "max_rel_vs_float64": float(rel.max()),
        "max_rel_vs_float64_normal": float(rel_normal.max()),
        "max_err_vs_float64_floor1": float(floor1.max()),
        "max_ulps_vs_float64": int(ulps.max()),
        "worst_rel": worst(rel),
        "worst_floor1": worst(floor1),
        "rel_above_1e-6": {"count": int(above.sum()),
                           "input_min": fmt_value(xa.min()) if xa.size else None,
                           "input_max": fmt_value(xa.max()) if xa.size else None},
        "nonfinite_mismatch_count": int(mismatch.sum()),
        "nonfinite_mismatches": [
            {"input": k[0], "reference": k[1], "float64": k[2], "count": n}
            for k, n in sorted(groups.items())],
    }


# ------------------------------------------------------------------- main --

def save_npy(np, path, array):
    np.save(path, np.ascontiguousarray(array, dtype="<f4"), allow_pickle=False)


def generate(out_dir):
    import numpy as np
    import onnx
    import onnxruntime as ort
    versions = {"onnxruntime": ort.__version__, "onnx": onnx.__version__, "numpy": np.__version__}
    formulas = f64_formulas(np)
    os.makedirs(out_dir, exist_ok=True)
    for name in os.listdir(out_dir):
        if name.endswith(".npy") or name == "manifest.json":
            os.remove(os.path.join(out_dir, name))

    entries, rows = [], []
    with tempfile.TemporaryDirectory() as tmpdir:
        for case in catalog():
            x = make_input(np, case.op)
            y, label, ran = run_reference(np, case, x, versions, tmpdir)
            assert y.shape == SHAPE and y.dtype == np.float32

            p64 = {k: v for k, v in case.params.items()}
            if case.op == "Gelu":
                p64.setdefault("approximate", "none")
            w64 = {k: np.array(v, dtype=np.float32).astype(np.float64).reshape(1, CHANNELS, 1, 1)
                   for k, v in case.weights.items()}
            x64 = x.astype(np.float64)
            with np.errstate(all="ignore"):
                f64 = np.asarray(formulas[case.op](x64, p64, w64), dtype=np.float64)
            if case.op not in NAN_DEFINED:
                f64 = np.where(np.isnan(x64), np.nan, f64)
            with np.errstate(all="ignore"):
                dev = deviation(np, x, y, f64)

            files = {"input": f"{case.id}.input.npy", "output": f"{case.id}.output.npy"}
            save_npy(np, os.path.join(out_dir, files["input"]), x)
            save_npy(np, os.path.join(out_dir, files["output"]), y)
            files["float64_output"] = f"{case.id}.f64ref.npy"
            with np.errstate(over="ignore"):
                save_npy(np, os.path.join(out_dir, files["float64_output"]), f64.astype(np.float32))
            weights = {}
            for name, values in case.weights.items():
                weights[name] = f"{case.id}.{name}.npy"
                save_npy(np, os.path.join(out_dir, weights[name]), np.array(values, np.float32))

            entry = {"id": case.id, "op": case.op, "params": case.params, "weights": weights,
                     "input": files["input"], "output": files["output"],
                     "float64_output": files["float64_output"], "reference": label,
                     "onnx": case.onnx_text, "ort_nodes": ran, "input_range": describe_range(case.op)}
            entry.update(dev)
            entries.append(entry)
            rows.append(entry)

    header = {
        "generator": "Scripts/generate_op_references.py",
        "versions": versions,
        "python": sys.version.split()[0],
        "onnx_opset": OPSET,
        "onnxruntime_settings": "CPUExecutionProvider, ORT_DISABLE_ALL, 1 thread",
        "shape": list(SHAPE),
        "dtype": "<f4",
        "order": "C",
        "inputs": "fp16-rounded; special values at flat index c*%d + i of channel c" % PLANE,
        "special_values": [fmt_value(np.float32(np.float16(v))) for v in SPECIALS],
        "weights_shape": [CHANNELS],
        "seed": BASE_SEED,
    }
    with open(os.path.join(out_dir, "manifest.json"), "w") as fh:
        json.dump({"header": header, "cases": entries}, fh, indent=1, allow_nan=False)
        fh.write("\n")
    print_summary(rows)


def print_summary(rows):
    print(f"{'case':<18} {'reference':<22} {'max_rel':>9} {'rel_norm':>9} {'floor1':>9} "
          f"{'ulps':>10} {'n>1e-6':>6} {'nonfin':>6}  worst rel at input; inputs >1e-6 off")
    for r in rows:
        print(f"{r['id']:<18} {r['reference']:<22} {r['max_rel_vs_float64']:9.2e} "
              f"{r['max_rel_vs_float64_normal']:9.2e} {r['max_err_vs_float64_floor1']:9.2e} "
              f"{r['max_ulps_vs_float64']:10d} {r['rel_above_1e-6']['count']:6d} "
              f"{r['nonfinite_mismatch_count']:6d}  {r['worst_rel']['input']}"
              + (f"; [{r['rel_above_1e-6']['input_min']}, {r['rel_above_1e-6']['input_max']}]"
                 if r['rel_above_1e-6']['count'] else ""))
    for r in rows:
        for m in r["nonfinite_mismatches"]:
            print(f"  {r['id']}: input {m['input']} -> reference {m['reference']}, "
                  f"float64 {m['float64']} (x{m['count']})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT, help="output folder (default: %(default)s)")
    ap.add_argument("--check", action="store_true",
                    help="regenerate into a temporary folder and compare with --out byte for byte")
    ap.add_argument("--any-versions", action="store_true",
                    help="use the installed onnxruntime/onnx/numpy whatever their versions")
    args = ap.parse_args()
    ensure_pinned_env(args.any_versions)
    if not args.check:
        generate(args.out)
        return
    with tempfile.TemporaryDirectory() as tmp:
        generate(tmp)
        names = sorted(set(os.listdir(tmp)) | {n for n in os.listdir(args.out)
                                               if n.endswith(".npy") or n == "manifest.json"})
        bad = [n for n in names if not (os.path.exists(os.path.join(tmp, n))
                                        and os.path.exists(os.path.join(args.out, n))
                                        and filecmp.cmp(os.path.join(tmp, n),
                                                        os.path.join(args.out, n), shallow=False))]
        if bad:
            sys.exit(f"--check: {len(bad)} file(s) differ: {', '.join(bad[:10])}")
        print(f"--check: {len(names)} files identical to {args.out}")


if __name__ == "__main__":
    main()
