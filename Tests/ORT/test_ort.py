"""liblayerkit_ort.so in onnxruntime (Python, CPU execution provider).

Run by `make test-ort`, which builds the library (build/cmake) and a venv with
onnxruntime 1.32, onnx and numpy. Expected values are float64 numpy, or, for
the mixed model, LayerKit's own CPU result of the same model (bit for bit):
the model loaded and run by liblayerkit.so.1 (lk_model_load, lk_model_predict
on a CPU context, through ctypes), LayerKit's own importer. The standard
ops around the LayerKit ops there have exact float32 results (small integer
weights, inputs on a 1/16 grid), so every implementation agrees on them and
the comparison is of the LayerKit ops alone.
"""
import ctypes
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIBRARY = os.environ.get("LAYERKIT_ORT_LIBRARY", os.path.join(ROOT, "build", "cmake", "liblayerkit_ort.so"))
LAYERKIT = os.path.join(os.path.dirname(LIBRARY), "liblayerkit.so.1")
TOLERANCE = 1e-6
# The expected failures' messages are checked here, not printed by onnxruntime's logger.
ort.set_default_logger_severity(4)


def model(nodes, inputs, outputs, initializers=()):
    """A model of `nodes` importing the default opset 17 and the layerkit domain."""
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    made = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("layerkit", 1)])
    made.ir_version = 8
    return made


def tensor(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def session(made, threads=0):
    options = ort.SessionOptions()
    options.register_custom_ops_library(LIBRARY)
    options.intra_op_num_threads = threads
    return ort.InferenceSession(made.SerializeToString(), options, providers=["CPUExecutionProvider"])


def unary_model(op, shape, weights=(), **attributes):
    """One layerkit node over x: y, its further inputs the initializers `weights` (name, array)."""
    node = helper.make_node(op, ["x"] + [name for name, _ in weights], ["y"], domain="layerkit", **attributes)
    return model([node], [tensor("x", shape)], [tensor("y", shape)],
                 [numpy_helper.from_array(np.asarray(values, np.float32), name) for name, values in weights])


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def erf(v):
    return np.vectorize(math.erf)(v)


def softplus(v):
    return np.log1p(np.exp(-np.abs(v))) + np.maximum(v, 0)


def per_channel(values, rank):
    """Per-channel values shaped to broadcast over axis 1 of an NC... tensor."""
    return np.asarray(values, np.float64).reshape((1, -1) + (1,) * (rank - 2))


def grid(shape, seed, low, high):
    """float32 values on a 1/16 grid in [low, high): exact in sums of small products."""
    rng = np.random.default_rng(seed)
    return (rng.integers(int(low * 16), int(high * 16), size=shape) / 16).astype(np.float32)


class Report:
    """The figures the run prints at the end (Docs/ONNXRUNTIME.md quotes them)."""
    lines = []


def report(text):
    Report.lines.append(text)


class LayerKitCPU:
    """LayerKit's own CPU path through its C API (include/layerkit.h), for what the op library
    must agree with: a model loaded by LayerKit's importer, and the op catalog's names."""

    def __init__(self):
        self.lib = ctypes.CDLL(LAYERKIT)
        self.lib.lk_context_last_error.restype = ctypes.c_char_p
        self.context = ctypes.c_void_p()
        error = ctypes.create_string_buffer(512)
        if self.lib.lk_context_create(1, 0, ctypes.byref(self.context), error, len(error)) != 0:
            raise RuntimeError(error.value.decode())

    def check(self, status):
        if status != 0:
            raise RuntimeError(self.lib.lk_context_last_error(self.context).decode())

    def op_names(self):
        count = ctypes.c_size_t()
        self.check(self.lib.lk_op_count(self.context, ctypes.byref(count)))
        names = []
        for i in range(count.value):
            name = ctypes.create_string_buffer(128)
            self.check(self.lib.lk_op_name(self.context, ctypes.c_size_t(i), name, ctypes.c_size_t(len(name)), None))
            names.append(name.value.decode())
        return names

    def predict(self, path, name, x):
        """The model at `path` on input `name` = x: its first output."""
        lib, context = self.lib, self.context
        model, tensor, output = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
        self.check(lib.lk_model_load(context, path.encode(), ctypes.byref(model)))
        try:
            x = np.ascontiguousarray(x, np.float32)
            shape = (ctypes.c_int64 * x.ndim)(*x.shape)
            self.check(lib.lk_tensor_create(context, shape, ctypes.c_size_t(x.ndim),
                                            x.ctypes.data_as(ctypes.c_void_p), ctypes.byref(tensor)))
            names = (ctypes.c_char_p * 1)(name.encode())
            inputs = (ctypes.c_void_p * 1)(tensor.value)
            outputs = (ctypes.c_void_p * 1)()
            self.check(lib.lk_model_predict(context, model, names, inputs, ctypes.c_size_t(1), outputs,
                                            ctypes.c_size_t(1), None))
            output = ctypes.c_void_p(outputs[0])
            dims, rank = (ctypes.c_int64 * 8)(), ctypes.c_size_t()
            self.check(lib.lk_tensor_shape(context, output, dims, ctypes.c_size_t(8), ctypes.byref(rank)))
            y = np.empty([dims[i] for i in range(rank.value)], np.float32)
            self.check(lib.lk_tensor_read(context, output, y.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(y.size)))
            return y
        finally:
            lib.lk_tensor_destroy(output)
            lib.lk_tensor_destroy(tensor)
            lib.lk_model_destroy(model)


def max_error(actual, expected):
    return float(np.max(np.abs(actual.astype(np.float64) - expected)))


class LibraryTests(unittest.TestCase):
    def test_exports_only_register_custom_ops_and_finds_layerkit_beside_it(self):
        symbols = subprocess.run(["nm", "-D", "--defined-only", LIBRARY], check=True, capture_output=True,
                                 text=True).stdout.split()
        exported = [s for s in symbols if s not in ("T", "D", "B", "R", "W") and not s[0].isdigit()
                    and len(s) > 1 and not all(c in "0123456789abcdef" for c in s)]
        self.assertEqual(exported, ["RegisterCustomOps"])
        dynamic = subprocess.run(["readelf", "-d", LIBRARY], check=True, capture_output=True, text=True).stdout
        self.assertIn("[liblayerkit.so.1]", dynamic)
        self.assertIn("[$ORIGIN]", dynamic)


class MixedModelTests(unittest.TestCase):
    """Conv -> layerkit.Swish (beta per channel, a second input) -> Add -> layerkit.Swish (beta attribute)
    -> Mul -> layerkit.Swish (default beta)."""

    SHAPE = [2, 3, 9, 11]
    CHANNELS = 4

    def build(self):
        rng = np.random.default_rng(7)
        # Values stay within a few units, where float32's rounding is under 1e-6.
        self.weight = rng.integers(-1, 2, size=(self.CHANNELS, 3, 3, 3)).astype(np.float32)
        self.bias = (rng.integers(-8, 8, size=self.CHANNELS) / 4).astype(np.float32)
        self.beta = np.array([0.5, 1.0, 1.75, -0.25], np.float32)
        self.offset = np.float32(0.375)
        self.scale = np.float32(0.5)
        nodes = [
            helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Swish", ["c", "beta"], ["s1"], domain="layerkit"),
            helper.make_node("Add", ["s1", "offset"], ["a"]),
            helper.make_node("Swish", ["a"], ["s2"], domain="layerkit", beta=0.75),
            helper.make_node("Mul", ["s2", "scale"], ["m"]),
            helper.make_node("Swish", ["m"], ["y"], domain="layerkit"),
        ]
        out_shape = [self.SHAPE[0], self.CHANNELS] + self.SHAPE[2:]
        initializers = [numpy_helper.from_array(self.weight, "w"), numpy_helper.from_array(self.bias, "b"),
                        numpy_helper.from_array(self.beta, "beta"),
                        numpy_helper.from_array(np.array([self.offset], np.float32), "offset"),
                        numpy_helper.from_array(np.array([self.scale], np.float32), "scale")]
        return model(nodes, [tensor("x", self.SHAPE)], [tensor("y", out_shape)], initializers)

    def float64(self, x):
        """The model in float64 (the convolution is exact: integer weights, 1/16-grid inputs)."""
        padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
        n, _, h, w = x.shape
        conv = np.zeros((n, self.CHANNELS, h, w))
        for dy in range(3):
            for dx in range(3):
                conv += np.einsum("nchw,kc->nkhw", padded[:, :, dy:dy + h, dx:dx + w],
                                  self.weight[:, :, dy, dx].astype(np.float64))
        conv += per_channel(self.bias, 4)
        s1 = conv * sigmoid(per_channel(self.beta, 4) * conv)
        a = s1 + float(self.offset)
        s2 = a * sigmoid(0.75 * a)
        m = s2 * float(self.scale)
        return m * sigmoid(m)

    def test_matches_layerkit_cpu_bit_for_bit_and_float64(self):
        made = self.build()
        x = grid(self.SHAPE, seed=1, low=-0.5, high=0.5)
        y = session(made).run(None, {"x": x})[0]
        worst = max_error(y, self.float64(x))
        self.assertLessEqual(worst, TOLERANCE)
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "mixed.onnx")
            onnx.save(made, path)
            own = LayerKitCPU().predict(path, "x", x)
        self.assertEqual(own.shape, y.shape)
        differing = int(np.count_nonzero(own.view(np.uint32) != y.view(np.uint32)))
        self.assertEqual(differing, 0, f"{differing} of {y.size} elements differ from LayerKit's own CPU run")
        report(f"mixed model {list(y.shape)}: bit for bit with LayerKit's own CPU run of it (lk_model_predict), "
               f"max |error| vs float64 {worst:.2e}")


# (op, attributes, weights as (name, per-channel values), float64 reference of x and the per-channel values)
CATALOG_CASES = [
    ("Relu", {}, [], lambda x: np.maximum(x, 0)),
    ("LeakyRelu", {"alpha": 0.2}, [], lambda x: np.where(x >= 0, x, 0.2 * x)),
    ("PRelu", {}, [("slope", [0.1, -0.5, 2.0])], lambda x, s: np.where(x >= 0, x, s * x)),
    ("Elu", {"alpha": 0.5}, [], lambda x: np.where(x > 0, x, 0.5 * np.expm1(x))),
    ("Selu", {}, [], lambda x: 1.05070102214813232421875 * np.where(x > 0, x, 1.67326319217681884765625 * np.expm1(x))),
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, [],
     lambda x: np.clip(np.float64(np.float32(0.3)) * x + np.float64(np.float32(0.4)), 0, 1)),
    ("Tanh", {}, [], np.tanh),
    ("Softplus", {}, [], softplus),
    ("Mish", {}, [], lambda x: x * np.tanh(softplus(x))),
    ("Gelu", {}, [], lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2)))),
    ("Clip", {"min": -1.0, "max": 6.0}, [], lambda x: np.clip(x, -1, 6)),
    ("Exp", {}, [], np.exp),
    ("Sin", {}, [], np.sin),
    ("Linear", {}, [("scale", [2.0, -1.0, 0.5]), ("bias", [0.25, 0.0, -3.0])], lambda x, s, b: s * x + b),
    ("Swish", {"beta": 1.5}, [], lambda x: x * sigmoid(np.float64(np.float32(1.5)) * x)),
]


class CatalogTests(unittest.TestCase):
    SHAPE = [2, 3, 5, 7]

    def test_catalog_ops_against_float64(self):
        x = np.random.default_rng(3).uniform(-4, 4, size=self.SHAPE).astype(np.float32)
        # Exp's values reach e^4: its tolerance is relative.
        for op, attributes, weights, reference in CATALOG_CASES:
            with self.subTest(op=op):
                y = session(unary_model(op, self.SHAPE, weights, **attributes)).run(None, {"x": x})[0]
                values = [per_channel(np.float32(v), 4) for _, v in weights]
                expected = reference(x.astype(np.float64), *values)
                scale = np.maximum(1, np.abs(expected))
                worst = float(np.max(np.abs(y - expected) / scale))
                self.assertLessEqual(worst, TOLERANCE, op)
                report(f"layerkit.{op}: max error vs float64 {worst:.2e} (relative above 1)")

    def test_every_catalog_op_is_registered(self):
        names = LayerKitCPU().op_names()
        self.assertIn("Swish", names)
        x = np.full([1, 2, 3], 0.5, np.float32)
        ran = 0
        for name in names:
            with self.subTest(op=name):
                try:
                    y = session(unary_model(name, [1, 2, 3])).run(None, {"x": x})[0]
                except Exception as error:
                    # An op whose value comes only as weights (PRelu's slope) says so; it gets one per channel.
                    self.assertIn("weights", str(error))
                    y = session(unary_model(name, [1, 2, 3], [("w", [0.5, 0.5])])).run(None, {"x": x})[0]
                self.assertEqual(y.shape, x.shape)
                ran += 1
        report(f"{ran} of the {len(names)} ops of LayerKit's catalog (lk_op_name) registered and run")


class FormulaTests(unittest.TestCase):
    def test_formula_with_scalar_attribute_and_weight_input(self):
        shape = [2, 3, 4, 4]
        slope = [0.1, 0.2, -0.3]
        made = unary_model("Formula", shape, [("slope", slope)], formula="where(x >= 0, x, slope * x) + c * x^2",
                           c=0.25)
        x = np.random.default_rng(5).uniform(-3, 3, size=shape).astype(np.float32)
        y = session(made).run(None, {"x": x})[0]
        xd = x.astype(np.float64)
        s = per_channel(np.float32(slope), 4)
        expected = np.where(xd >= 0, xd, s * xd) + 0.25 * xd ** 2
        worst = max_error(y, expected) / max(1, float(np.max(np.abs(expected))))
        self.assertLessEqual(worst, TOLERANCE)
        report(f"layerkit.Formula: max error vs float64 {worst:.2e} (relative to the largest value)")

    def test_scalar_input(self):
        made = unary_model("Formula", [], formula="x * sigmoid(b * x)", b=2.0)
        y = session(made).run(None, {"x": np.array(1.5, np.float32)})[0]
        self.assertEqual(y.shape, ())
        self.assertLessEqual(abs(float(y) - 1.5 / (1 + math.exp(-3.0))), TOLERANCE)


def swish64(x, beta):
    x = x.astype(np.float64)
    return x / (1 + np.exp(-beta * x))


class AttributeFormTests(unittest.TestCase):
    """A parameter in every form ONNX lets an attribute take: read as its value, or refused by name."""
    SHAPE = [1, 3, 4, 5]

    def run_with(self, op, beta, formula=None):
        node = helper.make_node(op, ["x"], ["y"], domain="layerkit")
        node.attribute.append(beta)
        if formula:
            node.attribute.append(helper.make_attribute("formula", formula))
        x = np.linspace(-6, 6, int(np.prod(self.SHAPE)), dtype=np.float32).reshape(self.SHAPE)
        made = model([node], [tensor("x", self.SHAPE)], [tensor("y", self.SHAPE)])
        return x, session(made).run(None, {"x": x})[0]

    def test_one_number_in_every_form_is_read(self):
        forms = {
            "FLOAT": helper.make_attribute("beta", 1.75),
            "INT": helper.make_attribute("beta", 2),
            "FLOATS of one": helper.make_attribute("beta", [1.75]),
            "INTS of one": helper.make_attribute("beta", [2]),
            "TENSOR float32": helper.make_attribute("beta", numpy_helper.from_array(np.array(1.75, np.float32))),
            "TENSOR float64 [1]": helper.make_attribute("beta", numpy_helper.from_array(np.array([1.75]))),
        }
        for form, attribute in forms.items():
            beta = 2.0 if form.startswith("INT") else 1.75
            for op, formula in (("Swish", None), ("Formula", "x * sigmoid(beta * x)")):
                with self.subTest(form=form, op=op):
                    x, y = self.run_with(op, attribute, formula)
                    self.assertLessEqual(max_error(y, swish64(x, beta)), TOLERANCE)

    def test_other_forms_are_refused_by_name(self):
        forms = {
            "FLOATS of two": helper.make_attribute("beta", [1.0, 2.0]),
            "empty FLOATS": helper.make_attribute("beta", [], attr_type=onnx.AttributeProto.FLOATS),
            "TENSOR of two": helper.make_attribute("beta", numpy_helper.from_array(np.array([1.0, 2.0], np.float32))),
            "TENSOR int32": helper.make_attribute("beta", numpy_helper.from_array(np.array(2, np.int32))),
            "STRINGS": helper.make_attribute("beta", ["1.5"]),
            "STRING": helper.make_attribute("beta", "1.5"),
        }
        for form, attribute in forms.items():
            for op, formula in (("Swish", None), ("Formula", "x * sigmoid(beta * x)")):
                with self.subTest(form=form, op=op):
                    with self.assertRaises(Exception) as caught:
                        self.run_with(op, attribute, formula)
                    self.assertIn(f"layerkit.{op} node", str(caught.exception))
                    self.assertIn("attribute 'beta'", str(caught.exception))


class NulTests(unittest.TestCase):
    """Strings from the model that LayerKit takes NUL-terminated: one holding a NUL is refused, not cut."""

    def test_formula_with_a_nul_is_refused(self):
        with self.assertRaises(Exception) as caught:
            session(unary_model("Formula", [1, 2], formula="x*2\0+1"))
        self.assertIn("attribute 'formula' holds a NUL byte at byte 3", str(caught.exception))

    def test_weight_input_name_with_a_nul_is_refused(self):
        made = unary_model("Formula", [1, 2], [("w\0x", [1.0, 2.0])], formula="w * x")
        with self.assertRaises(Exception) as caught:
            session(made)
        self.assertIn("NUL", str(caught.exception))


class ConcurrencyTests(unittest.TestCase):
    def test_four_threads_on_one_session_agree_with_serial_runs(self):
        shape = [4, 16, 48, 48]
        beta = np.linspace(0.25, 2.0, 16).astype(np.float32)
        nodes = [helper.make_node("Swish", ["x", "beta"], ["s"], domain="layerkit"),
                 helper.make_node("Formula", ["s"], ["f"], domain="layerkit", formula="x * tanh(softplus(x)) - a", a=0.5),
                 helper.make_node("Relu", ["f"], ["y"])]
        made = model(nodes, [tensor("x", shape)], [tensor("y", shape)], [numpy_helper.from_array(beta, "beta")])
        run = session(made, threads=1)
        inputs = [np.random.default_rng(100 + i).uniform(-5, 5, size=shape).astype(np.float32) for i in range(8)]
        started = time.perf_counter()
        serial = [run.run(None, {"x": x})[0] for x in inputs]
        serial_seconds = time.perf_counter() - started
        rounds = 5
        results = {}
        errors = []

        def worker(index):
            try:
                for r in range(rounds):
                    for i, x in enumerate(inputs):
                        if (i + r + index) % 2 == 0:
                            results[(index, r, i)] = run.run(None, {"x": x})[0]
            except Exception as error:  # reported below, in the main thread
                errors.append(error)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        concurrent_seconds = time.perf_counter() - started
        self.assertEqual(errors, [])
        self.assertEqual(len(results), 4 * rounds * len(inputs) // 2)
        for (_, _, i), y in results.items():
            self.assertTrue(np.array_equal(y.view(np.uint32), serial[i].view(np.uint32)))
        report(f"4 threads x {rounds * len(inputs) // 2} runs on one session ({shape}): all {len(results)} bit for bit "
               f"with serial runs; {concurrent_seconds / len(results) * 1e3:.1f} ms/run concurrent, "
               f"{serial_seconds / len(inputs) * 1e3:.1f} ms/run serial")


class CSessionTests(unittest.TestCase):
    def test_c_program_built_against_1_21_headers_runs_in_the_wheels_runtime(self):
        headers = os.environ.get("LAYERKIT_ORT_HEADERS", os.path.join(
            ROOT, "build", "cmake", "Bindings", "onnxruntime", "onnxruntime-dev", "usr", "include", "onnxruntime"))
        runtime_dir = os.path.join(os.path.dirname(ort.__file__), "capi")
        runtime = [name for name in os.listdir(runtime_dir) if name.startswith("libonnxruntime.so.")]
        self.assertEqual(len(runtime), 1, runtime)
        with tempfile.TemporaryDirectory() as folder:
            # The wheel's runtime lacks the link its SONAME (libonnxruntime.so.1) names.
            os.symlink(os.path.join(runtime_dir, runtime[0]), os.path.join(folder, "libonnxruntime.so.1"))
            program = os.path.join(folder, "ort_session")
            subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", headers,
                            os.path.join(ROOT, "Tests", "ORT", "ort_session.c"), "-o", program,
                            os.path.join(folder, "libonnxruntime.so.1"), "-Wl,-rpath," + folder, "-lm"], check=True)
            path = os.path.join(folder, "swish.onnx")
            onnx.save(unary_model("Swish", [1, 4, 8, 8], beta=0.5), path)
            ran = subprocess.run([program, LIBRARY, path], capture_output=True, text=True)
        self.assertEqual(ran.returncode, 0, ran.stdout + ran.stderr)
        report(ran.stdout.strip())


class ChangingWeightsTests(unittest.TestCase):
    def test_four_threads_with_different_weights_on_one_session(self):
        """beta is a graph input: each run brings other weights, so the node's layer cache is
        replaced while other threads use the layer it held."""
        shape = [2, 8, 16, 16]
        node = helper.make_node("Swish", ["x", "beta"], ["y"], domain="layerkit")
        made = model([node], [tensor("x", shape), tensor("beta", [8])], [tensor("y", shape)])
        run = session(made, threads=1)
        x = np.random.default_rng(9).uniform(-5, 5, size=shape).astype(np.float32)
        betas = [np.random.default_rng(200 + i).uniform(-2, 2, size=8).astype(np.float32) for i in range(6)]
        errors = []
        worst = [0.0]

        def worker(index):
            try:
                for r in range(30):
                    beta = betas[(index + r) % len(betas)]
                    y = run.run(None, {"x": x, "beta": beta})[0]
                    b = per_channel(beta, 4)
                    expected = x.astype(np.float64) * sigmoid(b * x.astype(np.float64))
                    worst[0] = max(worst[0], max_error(y, expected))
            except Exception as error:  # reported below, in the main thread
                errors.append(error)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual(errors, [])
        self.assertLessEqual(worst[0], TOLERANCE)
        report(f"4 threads x 30 runs, beta changing every run: max |error| vs float64 {worst[0]:.2e}")


class ErrorTests(unittest.TestCase):
    def assertFails(self, build, *words, at_run=None):
        """Session creation (or, with `at_run`, a run on it) fails with a message holding `words`."""
        with self.assertRaises(Exception) as caught:
            made = session(build)
            if at_run is not None:
                made.run(None, {"x": at_run})
        message = str(caught.exception)
        for word in words:
            self.assertIn(word, message)
        return message

    def test_unknown_op(self):
        self.assertFails(unary_model("NoSuchOp", [1, 2]), "NoSuchOp")

    def test_bad_attribute_has_layerkit_message(self):
        message = self.assertFails(unary_model("Swish", [1, 2], beta=float("nan")),
                                   "layerkit.Swish node", "parameter 'beta'", "finite")
        report(f"bad attribute: {message.splitlines()[-1][-160:]}")

    def test_bad_formula_has_layerkit_message(self):
        self.assertFails(unary_model("Formula", [1, 2], formula="x +* 2"), "layerkit.Formula node", "formula column")
        self.assertFails(unary_model("Formula", [1, 2], formula="x * k"), "layerkit.Formula node", "'k'")
        self.assertFails(unary_model("Formula", [1, 2]), "needs a string attribute 'formula'")

    def test_word_attribute_is_refused(self):
        self.assertFails(unary_model("Gelu", [1, 2], approximate="tanh"), "approximate", "numeric")

    def test_wrong_weight_count_has_layerkit_message(self):
        made = unary_model("Swish", [1, 3, 2], [("beta", [1.0, 2.0])])
        self.assertFails(made, "layerkit.Swish node", "LK_ERROR", at_run=np.ones([1, 3, 2], np.float32))

    def test_wrong_input_type(self):
        node = helper.make_node("Relu", ["x"], ["y"], domain="layerkit")
        made = model([node], [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [2])],
                     [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [2])])
        self.assertFails(made, "Relu")


if __name__ == "__main__":
    for path in (LIBRARY, LAYERKIT):
        if not os.path.exists(path):
            sys.exit(f"test_ort.py: {path} is missing (make test-ort builds it)")
    outcome = unittest.main(exit=False, verbosity=2).result
    print("\n".join(Report.lines))
    sys.exit(0 if outcome.wasSuccessful() else 1)
