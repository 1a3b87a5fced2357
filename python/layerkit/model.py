"""ONNX models: ``Model(path).predict({name: array})``."""
import contextlib
import ctypes
import os
import weakref
from typing import Dict, Mapping, Optional

import numpy as np

from . import _native
from ._context import as_float32, context, take_arrays, tensor_from
from ._native import lib


class Model:
    """An ONNX model loaded and planned for one backend.

    ``Model(path, backend="cpu")`` reads the model (external weights beside
    it); ``backend`` is ``"cpu"``, ``"gpu"`` or ``"auto"`` as in
    :func:`layerkit.apply`. Custom nodes of domain ``layerkit`` (Swish and
    the catalog's ops) run as LayerKit's own layers. The model is released by
    :meth:`close`, at the end of a ``with`` block, or when it is collected.
    One model may be run by several threads at once.
    """

    def __init__(self, path, backend: str = "cpu"):
        self._context = context(backend)
        self.backend = backend
        self.path = os.fspath(path)
        pointer = _native.handle()
        self._context.check(lib.lk_model_load(self._context.handle, self.path.encode(), ctypes.byref(pointer)))
        self._handle = pointer
        # The finalizer holds the context, so the context outlives the model.
        self._finalizer = weakref.finalize(self, Model._destroy, pointer, self._context)
        #: The names of the model's inputs, in the model's order.
        self.inputs = self._names(lib.lk_model_input_count, lib.lk_model_input_name)
        #: The names of the model's outputs, in the model's order.
        self.outputs = self._names(lib.lk_model_output_count, lib.lk_model_output_name)
        #: Each input's declared shape; a symbolic or unknown dim is -1.
        self.input_shapes = {name: self._input_shape(index) for index, name in enumerate(self.inputs)}

    @staticmethod
    def _destroy(pointer, _context):
        lib.lk_model_destroy(pointer)

    def _live(self):
        if not self._finalizer.alive:
            raise ValueError("the model is closed")
        return self._handle

    def _names(self, count_function, name_function):
        ctx, handle = self._context, self._live()
        count = ctypes.c_size_t(0)
        ctx.check(count_function(ctx.handle, handle, ctypes.byref(count)))
        names = []
        for index in range(count.value):
            code, name = _native.read_string(
                lambda buffer, capacity, length: name_function(ctx.handle, handle, index, buffer, capacity, length))
            ctx.check(code)
            names.append(name)
        return names

    def _input_shape(self, index: int):
        shape = (ctypes.c_int64 * _native.MAX_RANK)()
        rank = ctypes.c_size_t(0)
        self._context.check(lib.lk_model_input_shape(self._context.handle, self._live(), index, shape,
                                                     _native.MAX_RANK, ctypes.byref(rank)))
        return tuple(shape[: rank.value])

    def predict(self, inputs: Mapping[str, object], trace: Optional[str] = None) -> Dict[str, np.ndarray]:
        """Runs the model on ``{input name: array}`` (every input once) and
        returns ``{output name: float32 array}`` in the model's output order.

        ``trace``, when given, is a path where the run's steps are written as
        a Chrome trace (open it in Perfetto).
        """
        ctx, handle = self._context, self._live()
        if not isinstance(inputs, Mapping):
            raise TypeError("inputs must be a mapping {input name: array}")
        names = list(inputs)
        arrays = [as_float32(inputs[name], f"input {name!r}") for name in names]
        with contextlib.ExitStack() as stack:
            tensors = [stack.enter_context(tensor_from(ctx, array)) for array in arrays]
            profiler = stack.enter_context(_profiler(ctx)) if trace is not None else None
            c_names = _native.c_strings(names)
            c_inputs = (_native.handle * max(len(tensors), 1))(*tensors)
            outputs = (_native.handle * max(len(self.outputs), 1))()
            ctx.check(lib.lk_model_predict(ctx.handle, handle, c_names, c_inputs, len(tensors), outputs,
                                           len(self.outputs), profiler))
            results = take_arrays(ctx, outputs[: len(self.outputs)])
            if profiler is not None:
                ctx.check(lib.lk_profiler_write_trace(ctx.handle, profiler, os.fspath(trace).encode()))
        return dict(zip(self.outputs, results))

    def close(self) -> None:
        """Releases the model now (later calls raise ValueError). Idempotent."""
        self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()

    def __repr__(self):
        return f"Model({self.path!r}, backend={self.backend!r}, inputs={self.inputs}, outputs={self.outputs})"


@contextlib.contextmanager
def _profiler(ctx):
    pointer = _native.handle()
    ctx.check(lib.lk_profiler_create(ctx.handle, ctypes.byref(pointer)))
    try:
        yield pointer
    finally:
        lib.lk_profiler_destroy(pointer)
