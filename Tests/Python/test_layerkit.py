"""The installed `layerkit` package against float64 numpy and onnxruntime's outputs.

Run from outside the source tree, so the installed wheel is what is imported
(`make test-python` builds a fresh venv and does so):

    python -m unittest discover -s Tests/Python -v

GPU tests run on the chosen Vulkan device (lavapipe in CI) and fail without
one, unless LAYERKIT_ALLOW_NO_GPU=1.
"""
import ctypes
import importlib.metadata
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import threading
import unittest

import numpy as np

import layerkit

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(SOURCE, "Tests", "LayerKitTests", "Fixtures", "models")
ARTICLE = os.path.join(SOURCE, "Models", "article.onnx")
# Models of int64, bool, float16, uint8, int32 and float64 values with onnxruntime's outputs
# (Scripts/generate_typed_fixtures.py; Tests/C/test_typed.c reads them too).
TYPED = os.path.join(SOURCE, "Tests", "LayerKitTests", "Fixtures", "typed")


def swish64(x, beta):
    x = np.asarray(x, dtype=np.float64)
    return x / (1.0 + np.exp(-np.asarray(beta, dtype=np.float64) * x))


def grid(shape=(1, 4, 32, 32)):
    """x over [-8, 8], both ends included, as float32 in `shape`."""
    return np.linspace(-8.0, 8.0, int(np.prod(shape)), dtype=np.float32).reshape(shape)


def worst(actual, expected, floor):
    """max |actual - expected| / max(floor, |expected|), in float64."""
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    return float(np.max(np.abs(actual - expected) / np.maximum(floor, np.abs(expected))))


def gpu_usable():
    return any(device.usable for device in layerkit.devices())


def needs_gpu(test):
    """GPU tests are never skipped unless LAYERKIT_ALLOW_NO_GPU=1 says so."""
    allowed = os.environ.get("LAYERKIT_ALLOW_NO_GPU") == "1"
    return unittest.skipIf(allowed and not gpu_usable(), "no usable Vulkan device (LAYERKIT_ALLOW_NO_GPU=1)")(test)


class PackageTests(unittest.TestCase):
    def test_the_installed_package_is_imported(self):
        self.assertFalse(os.path.abspath(layerkit.__file__).startswith(os.path.join(SOURCE, "python")),
                         f"imported from the source tree: {layerkit.__file__}")
        self.assertTrue(os.path.exists(os.path.join(os.path.dirname(layerkit.__file__), "liblayerkit.so.1")))

    def test_one_version_everywhere(self):
        with open(os.path.join(SOURCE, "CMakeLists.txt")) as cmake:
            project = re.search(r"project\(LayerKit VERSION ([0-9.]+)", cmake.read()).group(1)
        self.assertEqual(layerkit.__version__, project)
        self.assertEqual(importlib.metadata.version("layerkit"), project)

    def test_the_onnxruntime_library_ships_beside_the_package(self):
        path = layerkit.ort_library_path()
        self.assertTrue(os.path.isfile(path), path)
        self.assertEqual(os.path.dirname(path), os.path.dirname(layerkit.__file__))
        # It loads where it is installed (liblayerkit.so.1 found beside it) and has onnxruntime's entry point.
        self.assertTrue(hasattr(ctypes.CDLL(path), "RegisterCustomOps"))


class ApplyTests(unittest.TestCase):
    def test_swish_within_1e6_of_float64(self):
        x = grid()
        for beta in (1.0, 0.5, 1.7):
            y = layerkit.apply("Swish", x, beta=beta)
            self.assertEqual((y.shape, y.dtype), (x.shape, np.float32))
            error = float(np.max(np.abs(y.astype(np.float64) - swish64(x, beta))))
            self.assertLessEqual(error, 1e-6, f"beta {beta}: max abs error {error:.3g}")

    def test_the_callers_array_is_copied_not_changed(self):
        x = grid((2, 3, 5, 7))
        before = x.copy()
        x_fortran = np.asfortranarray(x.astype(np.float64))
        y = layerkit.apply("swish", x_fortran)
        np.testing.assert_array_equal(x, before)
        self.assertLessEqual(float(np.max(np.abs(y - swish64(x, 1.0)))), 1e-6)

    def test_per_channel_beta(self):
        rng = np.random.default_rng(7)
        x = rng.uniform(-8, 8, size=(2, 3, 6, 5)).astype(np.float32)
        beta = np.array([0.25, 1.0, 2.5], dtype=np.float32)
        expected = swish64(x, beta.reshape(1, 3, 1, 1))
        for weights in (beta, [beta], {"beta": beta}):
            y = layerkit.apply("Swish", x, weights=weights)
            self.assertLessEqual(float(np.max(np.abs(y - expected))), 1e-6, f"weights {type(weights).__name__}")

    def test_a_formula_with_a_parameter_and_weights(self):
        x = grid((1, 2, 16, 16))
        y = layerkit.apply("x * tanh(softplus(alpha * x))", x, alpha=1.5)
        x64 = x.astype(np.float64)
        self.assertLessEqual(worst(y, x64 * np.tanh(np.log1p(np.exp(1.5 * x64))), floor=1.0), 1e-5)
        gain = np.array([2.0, -0.5], dtype=np.float32)
        y = layerkit.apply("gain * max(x, 0)", x, weights={"gain": gain})
        self.assertLessEqual(worst(y, gain.reshape(1, 2, 1, 1) * np.maximum(x64, 0), floor=1.0), 1e-6)

    def test_threads_share_a_context(self):
        x = grid()
        expected = layerkit.apply("Swish", x)
        results = [None] * 4

        def run(index):
            results[index] = layerkit.apply("Swish", x)

        threads = [threading.Thread(target=run, args=(index,)) for index in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for result in results:
            np.testing.assert_array_equal(result, expected)

    @needs_gpu
    def test_swish_on_the_gpu(self):
        # The GPU stores fp16: compare with float64 on the fp16-rounded input, by the parity rule.
        x = grid().astype(np.float16).astype(np.float32)
        y = layerkit.apply("Swish", x, backend="gpu", beta=1.0)
        self.assertLessEqual(worst(y, swish64(x, 1.0), floor=1.0), 1e-3)


class ModelTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.image = np.load(os.path.join(FIXTURES, "article_demo.input.npy"))
        # onnxruntime's output of the model's standard-op twin (Scripts/generate_model_fixtures.py).
        cls.expected = np.load(os.path.join(FIXTURES, "article_demo.expected.npy"))
        with open(ARTICLE, "rb") as model, open(os.path.join(FIXTURES, "article_demo.onnx"), "rb") as fixture:
            assert model.read() == fixture.read(), "Models/article.onnx is no longer the article_demo fixture"

    def test_article_model_on_the_cpu_matches_onnxruntime(self):
        with layerkit.Model(ARTICLE) as model:
            self.assertEqual(model.inputs, ["image"])
            self.assertEqual(model.outputs, ["probabilities"])
            self.assertEqual(model.input_shapes, {"image": (1, 3, 64, 64)})
            outputs = model.predict({"image": self.image})
        self.assertEqual(list(outputs), ["probabilities"])
        error = worst(outputs["probabilities"], self.expected, floor=1e-6)
        self.assertLessEqual(error, 1e-4, f"max relative error {error:.3g}")

    @needs_gpu
    def test_article_model_on_the_gpu_matches_onnxruntime(self):
        # fp16 storage: the input's rounding alone moves outputs by up to ~1e-3 (ModelTests.swift).
        with layerkit.Model(ARTICLE, backend="gpu") as model:
            probabilities = model.predict({"image": self.image})["probabilities"]
        error = worst(probabilities, self.expected, floor=1.0)
        self.assertLessEqual(error, 2e-3, f"max |gpu - ref| / max(1, |ref|) = {error:.3g}")

    def test_a_trace_is_written(self):
        with tempfile.TemporaryDirectory() as folder, layerkit.Model(ARTICLE) as model:
            path = os.path.join(folder, "trace.json")
            model.predict({"image": self.image}, trace=path)
            with open(path) as trace:
                events = json.load(trace)
        events = events["traceEvents"] if isinstance(events, dict) else events
        self.assertGreater(len(events), 0)

    def test_a_closed_model_refuses_to_run(self):
        model = layerkit.Model(ARTICLE)
        model.close()
        model.close()
        with self.assertRaises(ValueError):
            model.predict({"image": self.image})


def typed_case(name):
    """(model path, inputs, expected outputs) of a typed fixture, the arrays in the graph's order."""
    folder = os.path.join(TYPED, name)

    def arrays(prefix):
        found = []
        while os.path.exists(os.path.join(folder, f"{prefix}_{len(found)}.npy")):
            found.append(np.load(os.path.join(folder, f"{prefix}_{len(found)}.npy")))
        return found

    return os.path.join(folder, "model.onnx"), arrays("input"), arrays("output")


class TypedModelTests(unittest.TestCase):
    """Inputs in their own dtypes, outputs in the model's declared dtypes, nothing converted."""

    def check_case(self, name, backend="cpu"):
        path, inputs, expected = typed_case(name)
        with layerkit.Model(path, backend=backend) as model:
            self.assertEqual([model.input_types[n] for n in model.inputs], [a.dtype.name for a in inputs])
            self.assertEqual([model.output_types[n] for n in model.outputs], [a.dtype.name for a in expected])
            outputs = model.predict(dict(zip(model.inputs, inputs)))
        self.assertEqual(list(outputs), model.outputs)
        for output, want in zip(model.outputs, expected):
            got = outputs[output]
            self.assertEqual(got.dtype, want.dtype, output)
            self.assertEqual(got.shape, want.shape, output)
            # Exact: every expected value is exact in its type (-0.0 equals 0.0 here).
            np.testing.assert_array_equal(got, want, err_msg=f"{name}: output {output!r}")
        return outputs

    def test_int64_in_and_out_exact_past_2_to_the_24(self):
        y = self.check_case("int64_add")["y"]
        self.assertEqual(int(y[0]), 2**40 + 1)

    def test_int64_passed_through(self):
        self.check_case("int64_identity")

    def test_int64_inputs_compared_to_a_bool_output(self):
        self.check_case("int64_equal")

    def test_bool_output_of_float_inputs(self):
        self.assertEqual(self.check_case("less_bool")["y"].dtype, np.bool_)

    def test_float16_in_and_out(self):
        self.check_case("float16_relu")

    def test_float_and_int64_index(self):
        self.check_case("gather_index")

    def test_token_ids_and_mask_of_a_transformer(self):
        # Ids into an embedding, position ids from the mask's CumSum, the mask as a bias: one plan.
        self.assertEqual(self.check_case("token_embedding")["position_ids"].dtype, np.int64)

    def test_float64_computed_in_double(self):
        y = self.check_case("float64_sum")["y"]
        self.assertEqual(y[0], (1.0 + 2.0**-40) * 2.0**-40)

    def test_uint8_float64_in_float64_int32_out(self):
        self.check_case("mixed_types")

    @needs_gpu
    def test_on_the_gpu(self):
        for name in ("int64_equal", "less_bool", "float16_relu", "gather_index", "mixed_types"):
            with self.subTest(name):
                self.check_case(name, backend="gpu")

    def test_an_input_of_another_dtype_is_refused_naming_both(self):
        path, (a, b), _ = typed_case("int64_add")
        with layerkit.Model(path) as model:
            for wrong in (b.astype(np.int32), b.astype(np.float32), b.astype(np.float64), b.astype(np.uint64)):
                with self.subTest(str(wrong.dtype)), self.assertRaises(TypeError) as caught:
                    model.predict({"a": a, "b": wrong})
                self.assertIn(f"input 'b' is {wrong.dtype}; the model takes int64", str(caught.exception))
        path, (x,), _ = typed_case("float16_relu")
        with layerkit.Model(path) as model:
            with self.assertRaisesRegex(TypeError, "input 'x' is float32; the model takes float16"):
                model.predict({"x": x.astype(np.float32)})
        path, (u, d), _ = typed_case("mixed_types")
        with layerkit.Model(path) as model:
            with self.assertRaisesRegex(TypeError, "input 'd' is float32; the model takes float64"):
                model.predict({"u": u, "d": d.astype(np.float32)})
            with self.assertRaisesRegex(TypeError, "input 'u' is bool; the model takes uint8"):
                model.predict({"u": u.astype(bool), "d": d})

    def test_float32_inputs_take_what_they_took(self):
        # A float32 input converts what numpy converts to float32, as before typed inputs.
        path, (a, b), (y,) = typed_case("less_bool")
        with layerkit.Model(path) as model:
            np.testing.assert_array_equal(model.predict({"a": a.astype(np.float64), "b": b.tolist()})["y"], y)
            np.testing.assert_array_equal(model.predict({"a": a.astype(np.int32), "b": b.astype(np.float16)})["y"], y)

    def test_lists_and_other_byte_orders(self):
        path, (a, b), (y,) = typed_case("int64_equal")
        with layerkit.Model(path) as model:
            # Lists of ints are int64 to numpy; a big-endian int64 array is still int64 (2^40 + 1 vs 2^40).
            got = model.predict({"a": a.tolist(), "b": b.astype(">i8")})["y"]
        self.assertEqual(got.dtype, np.bool_)
        np.testing.assert_array_equal(got, y)


class CloseDuringUseTests(unittest.TestCase):
    """Closing a handle while other threads use it: their calls end normally or raise ValueError, never crash.
    Run in a child interpreter, so that a crash (SIGSEGV before the fix) fails the test, not the suite."""

    def run_child(self, script):
        child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                               cwd=tempfile.gettempdir())
        self.assertEqual(child.returncode, 0, f"the child ended with {child.returncode}:\n{child.stderr[-2000:]}")
        return child.stdout

    def test_close_while_threads_predict(self):
        script = f"""
import threading, time, numpy as np, layerkit
image = np.load({os.path.join(FIXTURES, "article_demo.input.npy")!r})
expected = np.load({os.path.join(FIXTURES, "article_demo.expected.npy")!r}).astype(np.float64)
for attempt in range(3):
    model = layerkit.Model({ARTICLE!r})
    done, refused, errors = [0], [0], []
    started = threading.Barrier(5)

    def run():
        started.wait()
        while True:
            try:
                y = model.predict({{"image": image}})["probabilities"]
            except ValueError as error:
                assert "closed" in str(error), error
                refused[0] += 1
                return
            error = float(np.max(np.abs(y - expected) / np.maximum(1e-6, np.abs(expected))))
            if error > 1e-4:
                errors.append(error)
            done[0] += 1

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    started.wait()
    while done[0] < 8:  # every thread in its loop: most of each one's time is inside lk_model_predict
        time.sleep(0.001)
    model.close()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert refused[0] == 4, refused
print("ok")
"""
        self.assertEqual(self.run_child(script).strip(), "ok")

    def test_exit_while_daemon_threads_use_the_context_and_a_model(self):
        # At exit the package's context and the model are finalized while daemon threads are still in calls.
        script = f"""
import threading, numpy as np, layerkit
image = np.load({os.path.join(FIXTURES, "article_demo.input.npy")!r})
model = layerkit.Model({ARTICLE!r})
x = np.linspace(-8, 8, 1 << 16, dtype=np.float32)
running = threading.Barrier(5)

def predict():
    running.wait()
    while True:
        model.predict({{"image": image}})

def apply():
    running.wait()
    while True:
        layerkit.apply("Swish", x)

for target in (predict, predict, apply, apply):
    threading.Thread(target=target, daemon=True).start()
running.wait()
print("ok")
"""
        for _ in range(3):
            self.assertEqual(self.run_child(script).strip(), "ok")


class HostileInputTests(unittest.TestCase):
    """Issue 27: weights by name, NUL bytes and path types, checked before any call reaches C."""

    def test_linear_weights_are_matched_by_name(self):
        x = grid((2, 3, 4, 5))
        scale = np.array([2.0, -0.5, 3.0], np.float32)
        bias = np.array([0.25, 1.5, -4.0], np.float32)
        expected = scale.astype(np.float64).reshape(1, 3, 1, 1) * x.astype(np.float64) + bias.reshape(1, 3, 1, 1)
        for weights in ({"bias": bias, "scale": scale}, {"scale": scale, "bias": bias}, [scale, bias]):
            y = layerkit.apply("Linear", x, weights=weights)
            self.assertLessEqual(worst(y, expected, floor=1.0), 1e-6, f"weights {weights!r}")

    def test_unknown_or_missing_weight_names_name_the_expected_ones(self):
        x, ones = grid((1, 3, 2, 2)), np.ones(3, np.float32)
        for weights, word in (({"scale": ones, "bias": ones, "shift": ones}, "unknown 'shift'"),
                              ({"bias": ones}, "missing 'scale'"), ({"Beta": ones}, "unknown 'Beta'")):
            op = "Swish" if "Beta" in weights else "Linear"
            with self.assertRaises(layerkit.LayerKitError) as caught:
                layerkit.apply(op, x, weights=weights)
            self.assertEqual(caught.exception.status, "LK_ERROR_WEIGHTS")
            self.assertIn(word, caught.exception.message)
            self.assertIn("beta" if op == "Swish" else "scale, bias", caught.exception.message)

    def test_strings_with_a_nul_are_refused(self):
        x = grid((1, 2, 2, 2))
        with tempfile.TemporaryDirectory() as folder, layerkit.Model(ARTICLE) as model:
            image = np.zeros((1, 3, 64, 64), np.float32)
            calls = {
                "formula": lambda: layerkit.apply("x*2\0+1", x),
                "op": lambda: layerkit.apply("Relu\0", x),
                "parameter": lambda: layerkit.apply("Swish", x, **{"beta\0": 1.0}),
                "formula weight": lambda: layerkit.apply("w * x", x, weights={"w\0": np.ones(2)}),
                "op weight": lambda: layerkit.apply("Swish", x, weights={"beta\0": np.ones(2)}),
                "model path": lambda: layerkit.Model(ARTICLE + "\0.evil"),
                "model bytes path": lambda: layerkit.Model(os.fsencode(ARTICLE) + b"\0.evil"),
                "input name": lambda: model.predict({"image\0": image}),
                "trace path": lambda: model.predict({"image": image}, trace=os.path.join(folder, "t\0.json")),
            }
            for what, call in calls.items():
                with self.subTest(what), self.assertRaisesRegex(ValueError, "NUL"):
                    call()
            self.assertEqual(os.listdir(folder), [])

    def test_paths_may_be_str_bytes_or_pathlike(self):
        image = np.load(os.path.join(FIXTURES, "article_demo.input.npy"))
        expected = np.load(os.path.join(FIXTURES, "article_demo.expected.npy"))
        with tempfile.TemporaryDirectory() as folder:
            for path in (ARTICLE, os.fsencode(ARTICLE), pathlib.Path(ARTICLE)):
                with self.subTest(path=path), layerkit.Model(path) as model:
                    trace = pathlib.Path(folder, "trace.json")
                    y = model.predict({"image": image}, trace=trace)["probabilities"]
                    self.assertLessEqual(worst(y, expected, floor=1e-6), 1e-4)
                    self.assertTrue(trace.exists())
                    trace.unlink()
        for bad in (3, None, ["a"]):
            with self.subTest(path=bad), self.assertRaisesRegex(TypeError, "model path"):
                layerkit.Model(bad)
        with self.assertRaisesRegex(TypeError, "op_or_formula must be a str"):
            layerkit.apply(b"Swish", grid())
        with self.assertRaisesRegex(TypeError, "input name"):
            with layerkit.Model(ARTICLE) as model:
                model.predict({0: image})


class ParityAndDeviceTests(unittest.TestCase):
    def test_devices_are_listed(self):
        found = layerkit.devices()
        self.assertGreater(len(found), 0, "no Vulkan device: is Mesa's lavapipe installed?")
        for index, device in enumerate(found):
            self.assertEqual(device.index, index)
            self.assertIn(device.kind, {"other", "integrated", "discrete", "virtual", "cpu"})
            self.assertTrue(device.name)
        if any(device.usable for device in found):
            self.assertEqual(sum(device.chosen for device in found), 1)

    @needs_gpu
    def test_parity_passes(self):
        x = grid()
        for op, params in (("Swish", {"beta": 1.0}), ("x * sigmoid(x)", {}), ("Relu", {})):
            result = layerkit.parity(op, x, **params)
            self.assertIsInstance(result, layerkit.ParityResult)
            self.assertTrue(result.passed, f"{op}: {result}")
            self.assertLessEqual(result.max_abs_error, 1e-3 * 8, op)
            self.assertGreaterEqual(result.max_rel_error, 0.0, op)

    @needs_gpu
    def test_parity_fails_at_a_tolerance_below_fp16(self):
        result = layerkit.parity("Swish", grid(), tolerance=1e-9)
        self.assertFalse(result.passed, result)
        self.assertFalse(result)


class ErrorTests(unittest.TestCase):
    def assertLayerKitError(self, status, pattern, function, *args, **kwargs):
        with self.assertRaises(layerkit.LayerKitError) as caught:
            function(*args, **kwargs)
        error = caught.exception
        self.assertEqual(error.status, status, str(error))
        self.assertRegex(error.message, pattern)
        self.assertEqual(str(error), f"{status}: {error.message}")
        return error

    def test_unknown_op(self):
        self.assertLayerKitError("LK_ERROR_UNKNOWN_OP", "NoSuchOp", layerkit.apply, "NoSuchOp", grid())

    def test_bad_formula(self):
        self.assertLayerKitError("LK_ERROR_INVALID_ARGUMENT", "tanhh", layerkit.apply, "tanhh(x)", grid())

    def test_bad_shape(self):
        self.assertLayerKitError("LK_ERROR_SHAPE", "rank", layerkit.apply, "Swish", np.zeros([1] * 9, np.float32))

    def test_wrong_number_of_channel_weights(self):
        self.assertLayerKitError("LK_ERROR_WEIGHTS", "3", layerkit.apply, "Swish", np.zeros((1, 4, 2, 2), np.float32),
                                 weights=np.ones(3, np.float32))

    def test_model_input_of_the_wrong_shape(self):
        with layerkit.Model(ARTICLE) as model:
            self.assertLayerKitError("LK_ERROR_SHAPE", "image", model.predict,
                                     {"image": np.zeros((1, 2, 64, 64), np.float32)})

    def test_missing_model_file(self):
        self.assertLayerKitError("LK_ERROR_FILE", "no-such-model", layerkit.Model, "/nonexistent/no-such-model.onnx")

    def test_python_side_errors(self):
        with self.assertRaises(ValueError):
            layerkit.apply("Swish", grid(), backend="tpu")
        with self.assertRaises(TypeError):
            layerkit.apply("Swish", grid(), beta="large")
        with self.assertRaises(TypeError):
            layerkit.apply("x * w", grid(), weights=[np.ones(4)])


if __name__ == "__main__":
    unittest.main()
