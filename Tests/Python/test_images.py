"""layerkit.load_image against Pillow's and numpy's references
(Scripts/generate_resampling_fixtures.py) and the `layerkit` CLI.

Run from outside the source tree, as test_layerkit.py is (make test-python).
"""
import os
import subprocess
import tempfile
import unittest

import numpy as np

import layerkit

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RESAMPLING = os.path.join(SOURCE, "Tests", "LayerKitTests", "Fixtures", "resampling")
PHOTO = os.path.join(RESAMPLING, "photo.jpg")
# 2/255 of a pixel in ImageNet-normalized units (over the smallest std).
TOLERANCE = 2 / 255 / 0.224


class LoadImageTests(unittest.TestCase):
    def test_torchvision_recipe_matches_pillow_and_numpy(self):
        x = layerkit.load_image(PHOTO, resize=256, center_crop=224, normalize="imagenet")
        self.assertEqual(x.shape, (1, 3, 224, 224))
        self.assertEqual(x.dtype, np.float32)
        reference = np.load(os.path.join(RESAMPLING, "imagenet_224.npy"))
        self.assertLessEqual(np.abs(x[:, :, ::4, ::4] - reference).max(), TOLERANCE)

    def test_nearest_bgr_255_channels_last(self):
        x = layerkit.load_image(PHOTO, resize=256, center_crop=(224, 224), interpolation="nearest",
                                normalize="imagenet", channel_order="bgr", scale=255, layout="nhwc")
        self.assertEqual(x.shape, (1, 224, 224, 3))
        reference = np.load(os.path.join(RESAMPLING, "imagenet_224_nearest_channels_last_bgr_255.npy"))
        self.assertLessEqual(np.abs(x[:, ::4, ::4, :] - reference).max(), TOLERANCE)

    def test_each_interpolation_matches_pillow(self):
        for name in ("bilinear", "nearest", "bicubic"):
            x = layerkit.load_image(os.path.join(RESAMPLING, "photo.png"), resize=20, center_crop="18x16",
                                    interpolation=name)
            reference = np.load(os.path.join(RESAMPLING, f"{name}_down.npy"))
            self.assertLessEqual(np.abs(x - reference).max(), 2 / 255, name)

    def test_the_same_values_as_the_cli(self):
        cli = os.environ.get("LAYERKIT_CLI", os.path.join(SOURCE, ".build", "debug", "layerkit"))
        if not os.path.exists(cli):
            self.skipTest(f"no layerkit CLI at {cli} (set LAYERKIT_CLI)")
        identity = os.path.join(SOURCE, "Tests", "LayerKitTests", "Fixtures", "style", "identity_relu.onnx")
        x = layerkit.load_image(PHOTO, resize="48x32", normalize="0,1")
        with tempfile.TemporaryDirectory() as scratch:
            out = os.path.join(scratch, "y.npy")
            subprocess.run([cli, "run", identity, "--input", PHOTO, "--resize", "48x32", "--output", out,
                            "--backend", "cpu"], check=True, capture_output=True)
            y = np.load(out)
        # identity_relu: relu of the 0..1 picture is the picture.
        np.testing.assert_array_equal(x, y)

    def test_bad_options_raise(self):
        for options in ({"resize": "3x"}, {"interpolation": "lanczos"}, {"layout": "hwc"}, {"normalize": "x"},
                        {"center_crop": 4096}):
            with self.assertRaises(layerkit.LayerKitError, msg=str(options)):
                layerkit.load_image(PHOTO, **options)
        with self.assertRaises(ValueError):
            layerkit.load_image(PHOTO, scale=-1)
        with self.assertRaises(TypeError):
            layerkit.load_image(PHOTO, resize=(1, 2, 3))
        with self.assertRaises(layerkit.LayerKitError):
            layerkit.load_image(os.path.join(SOURCE, "README.md"))


if __name__ == "__main__":
    unittest.main()
