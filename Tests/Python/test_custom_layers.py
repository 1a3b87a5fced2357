"""Custom layers from Python (layers=, register_layer), threads= and notices.

The model is the C tests' Tests/C/Fixtures/custom_layer.onnx: x [1, 3, 4, 5]
-> Add(bias) -> layerkit.CustomSwish -> y, so y = s / (1 + exp(-beta * s)),
s = x + bias, computed here in float64 (s rounded to float32, as the Add
is). custom_missing.onnx's node MyLayer has the attribute gain = 2.
"""
import gc
import os
import subprocess
import sys
import unittest
import weakref

import numpy as np

import layerkit
from test_layerkit import FIXTURES, SOURCE, TYPED, needs_gpu

CUSTOM = os.path.join(SOURCE, "Tests", "C", "Fixtures", "custom_layer.onnx")
MISSING = os.path.join(FIXTURES, "custom_missing.onnx")
BIAS = np.array([0.5, -1.0, 2.0]).reshape(1, 3, 1, 1)
X = np.linspace(-6.0, 6.0, 60, dtype=np.float32).reshape(1, 3, 4, 5)
# On the GPU the Add's values are kept in fp16 (|s| <= 8: 4e-3 each), moved
# through swish (slope <= 1.1): as Tests/C/test_registration.c bounds it.
GPU_BOUND = 1e-2


def expected(beta):
    s = (X.astype(np.float64) + BIAS).astype(np.float32).astype(np.float64)
    return s / (1.0 + np.exp(-beta * s))


class Swish:
    """The Core ML article's Swish as a Python layer object."""

    def __init__(self, beta):
        self.beta = beta
        self.calls = 0

    def evaluate(self, inputs):
        self.calls += 1
        x = inputs[0]
        return [x / (1 + np.exp(-self.beta * x))]


class Raises:
    def evaluate(self, inputs):
        raise ValueError("the layer refused")


class WrongShape:
    def evaluate(self, inputs):
        return [np.zeros((2, 2), np.float32)]


class Flattening:
    """An output shape of its own: the input's elements in one row, doubled."""

    def output_shapes(self, input_shapes):
        return [(1, int(np.prod(input_shapes[0])))]

    def evaluate(self, inputs):
        return [inputs[0].reshape(1, -1) * 2]


class BadShapes:
    def output_shapes(self, input_shapes):
        return [(0, 3)]

    def evaluate(self, inputs):
        return [inputs[0]]


def max_error(model, beta):
    y = model.predict({"x": X})["y"]
    return float(np.max(np.abs(y.astype(np.float64) - expected(beta))))


class PythonLayerTests(unittest.TestCase):
    def test_a_layer_object_runs_inside_a_model_on_the_cpu(self):
        swish = Swish(1.5)
        with layerkit.Model(CUSTOM, backend="cpu", layers={"CustomSwish": swish}) as model:
            self.assertLessEqual(max_error(model, 1.5), 1e-6)
        self.assertEqual(swish.calls, 1)

    @needs_gpu
    def test_a_layer_object_runs_between_gpu_layers(self):
        swish = Swish(0.5)
        for backend in ("gpu", "auto"):
            with layerkit.Model(CUSTOM, backend=backend, layers={"CustomSwish": swish}) as model:
                self.assertLessEqual(max_error(model, 0.5), GPU_BOUND, backend)

    def test_output_shapes_gives_the_outputs_shape(self):
        with layerkit.Model(CUSTOM, layers={"CustomSwish": Flattening()}) as model:
            y = model.predict({"x": X})["y"]
        s = (X.astype(np.float64) + BIAS).astype(np.float32)
        np.testing.assert_array_equal(y, (s * 2).reshape(1, -1))

    def test_the_layer_object_lives_as_long_as_the_model(self):
        swish = Swish(1.0)
        layer = weakref.ref(swish)
        model = layerkit.Model(CUSTOM, layers={"CustomSwish": swish})
        del swish
        gc.collect()
        self.assertIsNotNone(layer())
        self.assertLessEqual(max_error(model, 1.0), 1e-6)
        model.close()
        del model
        gc.collect()
        self.assertIsNone(layer(), "the layer object outlived its model")

    def test_an_exception_in_evaluate_is_a_layerkit_error(self):
        with layerkit.Model(CUSTOM, layers={"CustomSwish": Raises()}) as model:
            with self.assertRaises(layerkit.LayerKitError) as raised:
                model.predict({"x": X})
            self.assertEqual(raised.exception.status, "LK_ERROR_CALLBACK")
            self.assertIn("'CustomSwish'", raised.exception.message)
            self.assertIn("ValueError: the layer refused", raised.exception.message)
            self.assertIsInstance(raised.exception.__cause__, ValueError)
            # The model is still usable: the same failure again, not a crash.
            self.assertRaises(layerkit.LayerKitError, model.predict, {"x": X})

    def test_a_wrong_output_shape_is_a_clear_error(self):
        with layerkit.Model(CUSTOM, layers={"CustomSwish": WrongShape()}) as model:
            with self.assertRaises(layerkit.LayerKitError) as raised:
                model.predict({"x": X})
        self.assertIn("evaluate returned an array of shape (2, 2); the output's shape is (1, 3, 4, 5)",
                      raised.exception.message)
        with self.assertRaises(layerkit.LayerKitError) as raised:
            layerkit.Model(CUSTOM, layers={"CustomSwish": BadShapes()})
        self.assertIn("must have 1 to 8 dims, each at least 1", raised.exception.message)

    def test_layers_of_the_wrong_type_are_refused_before_loading(self):
        self.assertRaises(TypeError, layerkit.Model, CUSTOM, layers=[("CustomSwish", "x")])
        self.assertRaises(TypeError, layerkit.Model, CUSTOM, layers={"CustomSwish": 3})
        self.assertRaises(TypeError, layerkit.Model, CUSTOM, layers={1: "x"})
        self.assertRaises(ValueError, layerkit.Model, CUSTOM, layers={"": "x"})


class FormulaLayerTests(unittest.TestCase):
    def test_a_formula_runs_inside_a_model(self):
        with layerkit.Model(CUSTOM, layers={"CustomSwish": "x / (1 + exp(-1.5 * x))"}) as model:
            self.assertLessEqual(max_error(model, 1.5), 1e-6)

    @needs_gpu
    def test_a_formula_runs_on_the_gpu(self):
        with layerkit.Model(CUSTOM, backend="gpu", layers={"CustomSwish": "x * sigmoid(0.5 * x)"}) as model:
            self.assertLessEqual(max_error(model, 0.5), GPU_BOUND)

    def test_a_formulas_names_are_the_nodes_attributes(self):
        x = np.linspace(-3, 3, 36, dtype=np.float32).reshape(1, 4, 3, 3)
        with layerkit.Model(MISSING, layers={"MyLayer": "gain * x + 1"}) as model:
            y = model.predict({"x": x})["y"]
        np.testing.assert_allclose(y, 2.0 * x.astype(np.float64) + 1, rtol=0, atol=1e-6)
        with self.assertRaises(layerkit.LayerKitError) as raised:
            layerkit.Model(MISSING, layers={"MyLayer": "scale * x"})
        self.assertIn("scale", raised.exception.message)
        with self.assertRaises(layerkit.LayerKitError) as raised:
            layerkit.Model(MISSING, layers={"MyLayer": "x * ("})
        self.assertEqual(raised.exception.status, "LK_ERROR_INVALID_ARGUMENT")

    def test_a_missing_layer_says_how_to_give_one_from_python(self):
        with self.assertRaises(layerkit.LayerKitError) as raised:
            layerkit.Model(CUSTOM)
        message = raised.exception.message
        self.assertIn("register a layer named 'CustomSwish'", message)
        self.assertIn("layers={'CustomSwish': formula or layer object}", message)
        self.assertIn("layerkit.register_layer('CustomSwish', ...)", message)
        self.assertNotIn("LayerRegistry", message)


class RegisterLayerTests(unittest.TestCase):
    def test_a_registered_layer_runs_in_every_model_after_it(self):
        # MyLayer only: CustomSwish must stay unregistered for the other tests of this process.
        layerkit.register_layer("MyLayer", "gain * x - 1")
        x = np.linspace(-3, 3, 36, dtype=np.float32).reshape(1, 4, 3, 3)
        for backend in ("cpu", "auto"):
            with layerkit.Model(MISSING, backend=backend) as model:
                np.testing.assert_allclose(model.predict({"x": x})["y"], 2.0 * x.astype(np.float64) - 1,
                                           rtol=0, atol=1e-2 if backend == "auto" else 1e-6)
        # A model's own layers= replace it; registering again replaces it for later models.
        with layerkit.Model(MISSING, layers={"mylayer": "gain * x"}) as model:
            np.testing.assert_allclose(model.predict({"x": x})["y"], 2.0 * x, rtol=0, atol=1e-6)
        layerkit.register_layer("MyLayer", "gain * x + 3")
        with layerkit.Model(MISSING) as model:
            np.testing.assert_allclose(model.predict({"x": x})["y"], 2.0 * x.astype(np.float64) + 3,
                                       rtol=0, atol=1e-6)

    def test_a_registered_layer_object_runs_in_apply(self):
        layerkit.register_layer("PythonSwish", Swish(2.0))
        x = np.linspace(-4, 4, 24, dtype=np.float32).reshape(2, 3, 4)
        x64 = x.astype(np.float64)
        np.testing.assert_allclose(layerkit.apply("PythonSwish", x), x64 / (1 + np.exp(-2 * x64)), rtol=0, atol=1e-6)

    def test_bad_registrations_are_refused_at_once(self):
        with self.assertRaises(layerkit.LayerKitError):
            layerkit.register_layer("Broken", "x * (")
        self.assertRaises(TypeError, layerkit.register_layer, "Broken", object())
        self.assertRaises(TypeError, layerkit.register_layer, None, "x")


class ThreadsTests(unittest.TestCase):
    def test_threads_sets_the_cpu_evaluators_thread_count(self):
        for threads in (1, 3):
            with layerkit.Model(CUSTOM, threads=threads, layers={"CustomSwish": "x * sigmoid(x)"}) as model:
                self.assertEqual(model.threads, threads)
                self.assertLessEqual(max_error(model, 1.0), 1e-6)
        image = np.load(os.path.join(FIXTURES, "article_demo.input.npy"))
        with layerkit.Model(os.path.join(SOURCE, "Models", "article.onnx"), threads=2) as two, \
                layerkit.Model(os.path.join(SOURCE, "Models", "article.onnx")) as every:
            np.testing.assert_array_equal(two.predict({"image": image})["probabilities"],
                                          every.predict({"image": image})["probabilities"])

    def test_a_bad_thread_count_is_refused(self):
        self.assertRaises(ValueError, layerkit.Model, CUSTOM, threads=0)
        self.assertRaises(TypeError, layerkit.Model, CUSTOM, threads="2")
        self.assertRaises(TypeError, layerkit.Model, CUSTOM, threads=True)


class NoticeTests(unittest.TestCase):
    def test_notices_go_to_logging_never_to_standard_error(self):
        # mixed_types has a DOUBLE input: loading it raises a notice. A child
        # interpreter, so standard error holds everything it wrote, exit included.
        script = f"""
import logging, layerkit
records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append((record.name, record.levelname, record.getMessage()))
with layerkit.Model({os.path.join(TYPED, "mixed_types", "model.onnx")!r}):
    pass
print("silent")
logging.getLogger("layerkit").addHandler(Keep())
with layerkit.Model({os.path.join(TYPED, "mixed_types", "model.onnx")!r}, threads=1):
    pass
print(records)
"""
        child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
        self.assertEqual(child.returncode, 0, child.stderr)
        self.assertEqual(child.stderr, "")
        self.assertIn("silent", child.stdout)
        self.assertIn("('layerkit', 'WARNING', \"model.onnx: input 'd' is DOUBLE", child.stdout)


if __name__ == "__main__":
    unittest.main()
