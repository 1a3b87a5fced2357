"""The Vulkan devices LayerKit sees, and the onnxruntime op library's path."""
import ctypes
import os
from typing import List, NamedTuple

from . import _native
from ._context import context
from ._native import lib

ORT_LIBRARY_PATH = os.path.join(_native.HERE, "liblayerkit_ort.so")


class Device(NamedTuple):
    """One Vulkan device: ``kind`` is "cpu" (lavapipe), "discrete",
    "integrated", "virtual" or "other"; ``chosen`` marks the one a GPU
    backend opens (LAYERKIT_DEVICE's, when that variable is set)."""

    index: int
    name: str
    kind: str
    usable: bool
    chosen: bool


def devices() -> List[Device]:
    """Every Vulkan device found; an empty list without a Vulkan loader or device."""
    ctx = context("cpu")
    count = ctypes.c_int32(0)
    found = []
    with ctx.use():
        ctx.check(lib.lk_device_count(ctx.handle, ctypes.byref(count)))
        for index in range(count.value):
            kind, usable, chosen = ctypes.c_int32(0), ctypes.c_int32(0), ctypes.c_int32(0)
            code, name = _native.read_string(
                lambda buffer, capacity, length: lib.lk_device_info(ctx.handle, index, buffer, capacity, length,
                                                                    ctypes.byref(kind), ctypes.byref(usable),
                                                                    ctypes.byref(chosen)))
            ctx.check(code)
            found.append(Device(index, name, _native.LK_DEVICE_KINDS.get(kind.value, "other"), bool(usable.value),
                                bool(chosen.value)))
    return found


def ort_library_path() -> str:
    """The path of ``liblayerkit_ort.so``, LayerKit's onnxruntime custom-op
    library (domain ``layerkit``), installed beside this package::

        options = onnxruntime.SessionOptions()
        options.register_custom_ops_library(layerkit.ort_library_path())

    Raises :class:`LayerKitError` (``LK_ERROR_FILE``) when this build has none.
    """
    if not os.path.exists(ORT_LIBRARY_PATH):
        raise _native.error(_native.LK_ERROR_FILE,
                            f"{ORT_LIBRARY_PATH} is missing: this layerkit build has no onnxruntime op library")
    return ORT_LIBRARY_PATH
