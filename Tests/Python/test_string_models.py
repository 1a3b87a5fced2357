"""String tensors through the installed package: a numpy '<U' array goes in
for a tensor(string) input, a string output comes back as '<U'. The models
are scikit-learn's, exported by skl2onnx and coremltools' scikit-learn
converter; the references are scikit-learn's (Scripts/generate_ml_string_fixtures.py,
Scripts/generate_classic_ml_fixtures.py, Scripts/generate_coreml_classic_fixtures.py).
"""
import os
import unittest

import numpy as np

import layerkit

from test_layerkit import SOURCE, worst

FIXTURES = os.path.join(SOURCE, "Tests", "LayerKitTests", "Fixtures")


def case(*parts):
    """(model path, x, {name: scikit-learn's reference}) of a fixture folder."""
    folder = os.path.join(FIXTURES, *parts)
    model = next(os.path.join(folder, name) for name in ("model.onnx", "model.mlmodel")
                 if os.path.exists(os.path.join(folder, name)))
    references = {name[len("sklearn_"):-len(".npy")]: np.load(os.path.join(folder, name))
                  for name in os.listdir(folder) if name.startswith("sklearn_")}
    return model, np.load(os.path.join(folder, "x.npy")), references


class StringModelTests(unittest.TestCase):
    def test_a_label_encoder_takes_strings(self):
        path, x, references = case("ml-strings", "label_encoder")
        model = layerkit.Model(path)
        self.assertEqual(model.input_types["X"], "string")
        np.testing.assert_array_equal(model.predict({"X": x})["variable"], references["variable"])
        # A list of str, or an object array of them, is read as the same strings.
        np.testing.assert_array_equal(model.predict({"X": list(x)})["variable"], references["variable"])
        np.testing.assert_array_equal(model.predict({"X": x.astype(object)})["variable"], references["variable"])

    def test_a_one_hot_pipeline_takes_string_columns(self):
        path, x, references = case("ml-strings", "one_hot_logistic")
        outputs = layerkit.Model(path).predict({"X": x})
        np.testing.assert_array_equal(outputs["label"], references["label"])
        self.assertLessEqual(worst(outputs["probabilities"], references["probabilities"], 1.0), 1e-5)

    def test_string_labels_come_back_as_strings(self):
        for parts in [("classic-ml", "labels-logistic_three"), ("coreml-classic", "logistic_strings")]:
            path, x, references = case(*parts)
            model = layerkit.Model(path)
            label = model.outputs[0]
            outputs = model.predict({model.inputs[0]: x})
            self.assertEqual(outputs[label].dtype.kind, "U", parts)
            np.testing.assert_array_equal(outputs[label].reshape(-1), references[label], str(parts))

    def test_numbers_for_a_string_input_are_refused(self):
        path, _, _ = case("ml-strings", "label_encoder")
        with self.assertRaisesRegex(TypeError, "takes strings"):
            layerkit.Model(path).predict({"X": np.arange(3)})
        with self.assertRaisesRegex(ValueError, "NUL"):
            layerkit.Model(path).predict({"X": np.array(["a\0b"])})


if __name__ == "__main__":
    unittest.main()
