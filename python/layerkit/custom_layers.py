"""Custom layers from Python: formulas and layer objects registered on a context.

A layer object follows Core ML's MLCustomLayer: ``evaluate(inputs) ->
outputs`` takes a list of float32 arrays (the node's inputs, copies) and
returns a list of one array, of the output's shape; the optional
``output_shapes(input_shapes) -> [shape]`` gives that shape from the
inputs' (tuples of ints), else it is input 0's. It runs on the CPU (on a GPU
backend, between the GPU's layers), possibly on several threads at once.
A formula (a str, Docs/FORMULAS.md) runs on both backends; its names other
than ``x`` are each node's attributes and constant inputs, by name, as
``layerkit run --layer OPTYPE=FORMULA`` binds them.

Every callback is one of three module-level C functions, and ``user_data``
is the key of its layer object in ``_objects``: the object stays there
until the library calls ``_destroy`` for it, when the registration and
every model and layer made from it are gone. An exception in a callback
becomes a failure number (``callback_failures``), so the call that ran it
raises a :class:`LayerKitError` naming it, never a crash.
"""
import ctypes
import itertools
import threading
from typing import Union

import numpy as np

from . import _native, callback_failures
from ._native import lib

_objects = {}
_keys = itertools.count(1)
_objects_lock = threading.Lock()

#: What ``layers=`` and ``register_layer`` take for one op type.
Layer = Union[str, object]


def check_layer(op_type, layer) -> None:
    """TypeError unless ``op_type`` is a str and ``layer`` a formula (str) or
    an object with a callable ``evaluate`` (and, when it has one, a callable
    ``output_shapes``); ValueError for an empty op type."""
    _native.c_string(op_type, "the op type")
    if not op_type:
        raise ValueError("the op type is empty")
    if isinstance(layer, str):
        _native.c_string(layer, f"the formula of {op_type}")
        return
    if not callable(getattr(layer, "evaluate", None)):
        raise TypeError(f"the layer of {op_type} must be a formula (str) or an object with an "
                        f"evaluate(inputs) method, got {type(layer).__name__}")
    if hasattr(layer, "output_shapes") and not callable(layer.output_shapes):
        raise TypeError(f"the layer of {op_type}: output_shapes must be a method")


def register_on(ctx, op_type: str, layer: Layer) -> None:
    """Registers ``layer`` as ``op_type`` on the context ``ctx`` (the caller
    holds it, and excludes loads and layer creation on it meanwhile)."""
    name = _native.c_string(op_type, "the op type")
    if isinstance(layer, str):
        ctx.check(lib.lk_register_node_formula(ctx.handle, name, _native.c_string(layer, "the formula")))
        return
    with _objects_lock:
        key = next(_keys)
        _objects[key] = layer
    shape = _SHAPE_POINTER if hasattr(layer, "output_shapes") else None
    # On failure nothing is registered and destroy is not called.
    try:
        ctx.check(lib.lk_register_layer(ctx.handle, name, _EVALUATE_POINTER, shape, key, _DESTROY_POINTER))
    except BaseException:
        _forget(key)
        raise


def _forget(key) -> None:
    with _objects_lock:
        _objects.pop(key, None)


def _shape_of(shapes, ranks, index: int) -> tuple:
    return tuple(shapes[index][: ranks[index]])


def _as_shape(value, what: str) -> tuple:
    try:
        shape = tuple(int(dim) for dim in value)
    except TypeError:
        raise TypeError(f"{what} must be a sequence of ints, got {value!r}") from None
    if not 1 <= len(shape) <= _native.MAX_RANK or min(shape) < 1:
        raise ValueError(f"{what} {shape} must have 1 to {_native.MAX_RANK} dims, each at least 1")
    return shape


def _one(values, what: str):
    if not isinstance(values, (list, tuple)) or len(values) != 1:
        raise TypeError(f"{what} must return a list of one item (a Python layer has one output), got {values!r:.80}")
    return values[0]


def _evaluate(key, count, inputs, shapes, ranks, output, output_shape, output_rank) -> int:
    try:
        layer = _objects[key]
        arrays = [np.ctypeslib.as_array(inputs[i], shape=_shape_of(shapes, ranks, i)).copy() for i in range(count)]
        expected = tuple(output_shape[:output_rank])
        result = np.asarray(_one(layer.evaluate(arrays), "evaluate"), dtype=np.float32)
        if result.shape != expected:
            raise ValueError(f"evaluate returned an array of shape {result.shape}; the output's shape is {expected} "
                             "(output_shapes' or, without it, input 0's)")
        np.ctypeslib.as_array(output, shape=expected)[...] = result
        return 0
    except BaseException as failure:  # nothing may unwind into the library
        return callback_failures.record(failure)


def _output_shape(key, count, shapes, ranks, output_shape, output_rank) -> int:
    try:
        layer = _objects[key]
        shape = _as_shape(_one(layer.output_shapes([_shape_of(shapes, ranks, i) for i in range(count)]),
                               "output_shapes"), "the shape output_shapes returned")
        for i, dim in enumerate(shape):
            output_shape[i] = dim
        output_rank[0] = len(shape)
        return 0
    except BaseException as failure:
        return callback_failures.record(failure)


def _destroy(key) -> None:
    _forget(key)


_EVALUATE = _native.EVALUATE_FN(_evaluate)
_SHAPE = _native.SHAPE_FN(_output_shape)
_DESTROY = _native.DESTROY_FN(_destroy)
_EVALUATE_POINTER = ctypes.cast(_EVALUATE, ctypes.c_void_p)
_SHAPE_POINTER = ctypes.cast(_SHAPE, ctypes.c_void_p)
_DESTROY_POINTER = ctypes.cast(_DESTROY, ctypes.c_void_p)
