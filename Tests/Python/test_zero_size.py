"""Zero-size arrays through the installed package, as ONNX has them (a
decoder's first step takes an empty past): Tests/C/Fixtures/empty_past.onnx
(make_empty_past_model.py, checked with onnxruntime) returns
present = concat(past, x) on axis 2 and doubled = 2 * past, computed here
with numpy, for a past of length 0 and 4; layers refuse zero-size arrays."""
import os
import unittest

import numpy as np

import layerkit
from test_layerkit import SOURCE

EMPTY_PAST = os.path.join(SOURCE, "Tests", "C", "Fixtures", "empty_past.onnx")


class ZeroSizeTests(unittest.TestCase):
    def test_an_empty_past_runs_and_comes_back_empty(self):
        x = np.arange(6, dtype=np.float32).reshape(1, 2, 1, 3)
        with layerkit.Model(EMPTY_PAST, backend="cpu") as model:
            for length in (0, 4, 0):
                past = np.full((1, 2, length, 3), -1.5, np.float32)
                outputs = model.predict({"past": past, "x": x})
                self.assertEqual(outputs["present"].shape, (1, 2, length + 1, 3))
                np.testing.assert_array_equal(outputs["present"], np.concatenate([past, x], axis=2))
                self.assertEqual(outputs["doubled"].shape, (1, 2, length, 3))
                self.assertEqual(outputs["doubled"].dtype, np.float32)
                np.testing.assert_array_equal(outputs["doubled"], past.astype(np.float64) * 2)

    def test_a_layer_refuses_a_zero_size_array(self):
        with self.assertRaises(layerkit.LayerKitError) as caught:
            layerkit.apply("Relu", np.zeros((1, 2, 0, 3), np.float32))
        self.assertEqual(caught.exception.status, "LK_ERROR_SHAPE")
        self.assertIn("no elements", caught.exception.message)


if __name__ == "__main__":
    unittest.main()
