"""LayerKit from Python: its layers and ONNX models on numpy arrays.

A thin ctypes binding of LayerKit's C API (``liblayerkit.so.1``, shipped in
this package), running on Vulkan compute or LayerKit's CPU evaluator::

    import numpy as np, layerkit
    y = layerkit.apply("Swish", np.linspace(-8, 8, 1001), beta=1.0)
    z = layerkit.apply("x * tanh(softplus(x))", x)            # a formula
    with layerkit.Model("Models/article.onnx") as model:
        probabilities = model.predict({"image": image})["probabilities"]
    layerkit.parity("Swish", x)      # GPU against CPU
    layerkit.devices()               # the Vulkan devices found
    # Custom ops of a model: a formula, or an object with evaluate(inputs) -> [output]
    model = layerkit.Model("custom.onnx", layers={"CustomSwish": "x * sigmoid(x)"})
    layerkit.register_layer("CustomSwish", MySwish())   # for every model
    x = layerkit.load_image("cat.jpg", resize=256, center_crop=224, normalize="imagenet")

Every failed call raises :class:`LayerKitError` with the library's message.
LayerKit's notices go to the ``logging`` logger ``"layerkit"``. See Docs/PYTHON.md.
"""
from ._native import lib as _lib
from .devices import Device, devices, ort_library_path
from .errors import LayerKitError
from .images import load_image
from .layers import ParityResult, apply, parity
from .model import Model
from .registration import register_layer

#: LayerKit's release (the library's ``lk_version_string()``).
__version__ = _lib.lk_version_string().decode()

__all__ = ["Device", "LayerKitError", "Model", "ParityResult", "__version__", "apply", "devices",
           "load_image", "ort_library_path", "parity", "register_layer"]
