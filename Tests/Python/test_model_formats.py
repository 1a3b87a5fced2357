"""The model files Core ML and TensorFlow Lite users hold, through the installed package:
`layerkit.Model(path)` takes a `.mlmodel`, a `.mlpackage` folder and a `.tflite` by content,
as the CLI does. References are the source frameworks' (numpy float64 for Core ML networks,
scikit-learn, PyTorch, LiteRT), made by the Scripts/generate_*_fixtures.py scripts.
"""
import os
import unittest

import numpy as np

import layerkit

from test_layerkit import SOURCE, needs_gpu, worst

FIXTURES = os.path.join(SOURCE, "Tests", "LayerKitTests", "Fixtures")


def fixture(*parts):
    return os.path.join(FIXTURES, *parts)


class ModelFormatTests(unittest.TestCase):
    def test_the_core_ml_articles_network_with_its_custom_swish(self):
        model = layerkit.Model(fixture("coreml", "NeuralMcNeuralNet.mlmodel"))
        image = np.load(fixture("coreml", "NeuralMcNeuralNet-input.npy"))
        logits = model.predict({"image": image})["logits"]
        self.assertLessEqual(worst(logits, np.load(fixture("coreml", "NeuralMcNeuralNet-logits.npy")), 1.0), 1e-4)

    def test_an_ml_program_package(self):
        model = layerkit.Model(fixture("mlpackage", "SmallCNN.mlpackage"))
        x = np.load(fixture("mlpackage", "SmallCNN-input.npy"))
        logits = model.predict({model.inputs[0]: x})["logits"]
        self.assertLessEqual(worst(logits, np.load(fixture("mlpackage", "SmallCNN-logits.npy")), 1.0), 1e-4)

    def test_scikit_learns_boston_pricer_takes_its_named_features(self):
        folder = fixture("coreml-classic", "boston_pricer")
        model = layerkit.Model(os.path.join(folder, "model.mlmodel"))
        features = {name: np.load(os.path.join(folder, name + ".npy")) for name in model.inputs}
        self.assertEqual(len(features), 13)
        price = model.predict(features)["price"]
        expected = np.load(os.path.join(folder, "sklearn_price.npy"))
        self.assertLessEqual(worst(price.reshape(expected.shape), expected, 1.0), 1e-5)

    def test_mediapipes_face_detector_tflite(self):
        model = layerkit.Model(fixture("tflite", "face_detection_short_range.tflite"))
        x = np.load(fixture("tflite", "face_detection_short_range-input.npy"))
        self.assertEqual(list(model.input_shapes[model.inputs[0]]), [1, 128, 128, 3])  # NHWC, as TFLite declares it
        outputs = model.predict({model.inputs[0]: x})
        for k, name in enumerate(model.outputs):
            expected = np.load(fixture("tflite", f"face_detection_short_range-output{k}.npy"))
            self.assertLessEqual(worst(outputs[name], expected, 1.0), 1e-4, name)

    @needs_gpu
    def test_a_tflite_model_on_the_gpu(self):
        model = layerkit.Model(fixture("tflite", "conv_net.tflite"), backend="gpu")
        x = np.load(fixture("tflite", "conv_net-input.npy"))
        outputs = model.predict({model.inputs[0]: x})
        for k, name in enumerate(model.outputs):
            expected = np.load(fixture("tflite", f"conv_net-output{k}.npy"))
            self.assertLessEqual(worst(outputs[name], expected, 1.0), 2e-3, name)

    def test_a_file_that_is_no_model_is_named(self):
        with self.assertRaises(layerkit.LayerKitError) as caught:
            layerkit.Model(fixture("coreml", "NeuralMcNeuralNet-input.npy"))
        self.assertIn("is a NumPy array (.npy), not a model", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
