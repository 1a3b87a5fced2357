"""ONNX models: ``Model(path).predict({name: array})``."""
import contextlib
import ctypes
import os
import re
import weakref
from typing import Dict, Mapping, Optional

import numpy as np

from . import _native, custom_layers
from ._context import as_float32, as_typed, context, model_context, read_names, take_arrays, tensor_from
from ._native import lib
from .errors import LayerKitError

# The end of the library's message for a node no registered layer runs.
_MISSING_LAYER = re.compile(r"register a layer named '([^']*)'")


class Model:
    """An ONNX model loaded and planned for one backend.

    ``Model(path, backend="cpu", threads=None, layers=None)`` reads the
    model (external weights beside it); ``path`` is a str, bytes or
    os.PathLike; ``backend`` is ``"cpu"``, ``"gpu"`` or ``"auto"`` as in
    :func:`layerkit.apply`; ``threads`` the CPU evaluator's thread count
    (None: the cores the process may use). Custom nodes of domain
    ``layerkit`` (Swish and the catalog's ops) run as LayerKit's own layers,
    and nodes of any domain as the layers of :func:`layerkit.register_layer`
    and of ``layers``: ``{op type: formula or layer object}`` for this model
    alone (see :mod:`layerkit.custom_layers`; they replace registered layers
    and LayerKit's own of the same op type). A node no layer runs is a
    :class:`LayerKitError` saying how to give one. The model is released by
    :meth:`close`, at the end of a ``with`` block, or when it is collected.
    One model may be run by several threads at once, and closed by one while
    others run it (see :meth:`close`).
    """

    def __init__(self, path, backend: str = "cpu", threads: Optional[int] = None,
                 layers: Optional[Mapping[str, custom_layers.Layer]] = None):
        encoded = _native.c_path(path, "the model path")
        if layers is not None and not isinstance(layers, Mapping):
            raise TypeError(f"layers must be a mapping {{op type: formula or layer object}}, got {type(layers).__name__}")
        for op_type, layer in (layers or {}).items():
            custom_layers.check_layer(op_type, layer)
        # A model with layers of its own has a context of its own, released with it.
        self._context = model_context(backend, threads, layers) if layers else context(backend, threads)
        owned = self._context if layers else None
        self.backend = backend
        #: The CPU evaluator's thread count (None: the cores the process may use).
        self.threads = threads
        self.path = os.fspath(path)
        pointer = _native.handle()
        try:
            with self._context.use() as context_handle, self._context.registrations.reading():
                self._context.check(lib.lk_model_load(context_handle, encoded, ctypes.byref(pointer)))
        except LayerKitError as error:
            if owned:
                owned.close()
            raise _with_layer_hint(error) from error.__cause__
        except BaseException:
            if owned:
                owned.close()
            raise
        self._shared = _native.SharedHandle(pointer, lib.lk_model_destroy, "model")
        # The finalizer holds the context, so the context outlives the model.
        self._finalizer = weakref.finalize(self, Model._release, self._shared, self._context, owned)
        with self._using() as handle:
            #: The names of the model's inputs, in the model's order.
            self.inputs = read_names(self._context, lib.lk_model_input_count, lib.lk_model_input_name, handle)
            #: The names of the model's outputs, in the model's order.
            self.outputs = read_names(self._context, lib.lk_model_output_count, lib.lk_model_output_name, handle)
            #: Each input's declared shape; a symbolic or unknown dim is -1.
            self.input_shapes = {name: self._input_shape(handle, index) for index, name in enumerate(self.inputs)}
            #: Each input's element type as the model declares it, by name ("float32", "int64", "bool",
            #: "float16", ...; "float32" when it declares none): the dtype :meth:`predict` takes.
            self.input_types = {name: self._type(lib.lk_model_input_type, handle, index)
                                for index, name in enumerate(self.inputs)}
            #: Each output's element type, by name: the dtype :meth:`predict` returns it in.
            self.output_types = {name: self._type(lib.lk_model_output_type, handle, index)
                                 for index, name in enumerate(self.outputs)}

    @staticmethod
    def _release(shared, _context, owned):
        shared.close()
        if owned is not None:
            owned.close()

    @contextlib.contextmanager
    def _using(self):
        """The model's handle for one call, with its context: neither is
        destroyed before the call ends, even when :meth:`close` (or the
        interpreter's exit) comes meanwhile; ValueError once closed."""
        with self._context.use(), self._shared.use() as handle:
            yield handle

    def _input_shape(self, handle, index: int):
        shape = (ctypes.c_int64 * _native.MAX_RANK)()
        rank = ctypes.c_size_t(0)
        self._context.check(lib.lk_model_input_shape(self._context.handle, handle, index, shape,
                                                     _native.MAX_RANK, ctypes.byref(rank)))
        return tuple(shape[: rank.value])

    def _type(self, function, handle, index: int) -> str:
        code = ctypes.c_int32(0)
        self._context.check(function(self._context.handle, handle, index, ctypes.byref(code)))
        return _native.ELEMENT_TYPE_NAMES.get(code.value, f"element type {code.value}")

    def predict(self, inputs: Mapping[str, object], trace: Optional[str] = None) -> Dict[str, np.ndarray]:
        """Runs the model on ``{input name: array}`` (every input once) and
        returns ``{output name: array}`` in the model's output order, each
        of the dtype the model declares for it (:attr:`output_types`).

        The array for a float32 input may be anything numpy converts to
        float32 (it is copied as float32, as it always was). The array for an
        input of any other type (:attr:`input_types`: int64, int32, bool,
        float16, float64, uint8, ...) must be of that dtype: another dtype is
        a TypeError naming both, never converted. A string input takes a
        numpy ``<U`` array (or an object array or list of str), and a string
        output comes back as one. Lists and scalars are read as ``np.array``
        reads them (Python ints as int64).

        ``trace``, when given, is a path (str, bytes or os.PathLike) where the
        run's steps are written as a Chrome trace (open it in Perfetto).
        Raises ValueError once the model is closed.
        """
        if not isinstance(inputs, Mapping):
            raise TypeError("inputs must be a mapping {input name: array}")
        # The caller's objects are read before the model is held, so code of
        # theirs run here (an __array__) may close it without effect on this call.
        names = list(inputs)
        c_names = _native.c_strings(names, "input name")
        # Unknown names go to the library as float32, which names the model's inputs in its error.
        arrays = [as_float32(inputs[name], f"input {name!r}")
                  if self.input_types.get(name, "float32") == "float32"
                  else as_typed(inputs[name], f"input {name!r}", self.input_types[name]) for name in names]
        trace_path = None if trace is None else _native.c_path(trace, "the trace path")
        ctx = self._context
        with self._using() as handle, contextlib.ExitStack() as stack:
            tensors = [stack.enter_context(tensor_from(ctx, array)) for array in arrays]
            profiler = stack.enter_context(_profiler(ctx)) if trace is not None else None
            c_inputs = (_native.handle * max(len(tensors), 1))(*tensors)
            outputs = (_native.handle * max(len(self.outputs), 1))()
            ctx.check(lib.lk_model_predict(ctx.handle, handle, c_names, c_inputs, len(tensors), outputs,
                                           len(self.outputs), profiler))
            results = take_arrays(ctx, outputs[: len(self.outputs)], self.outputs)
            if profiler is not None:
                ctx.check(lib.lk_profiler_write_trace(ctx.handle, profiler, trace_path))
        return dict(zip(self.outputs, results))

    def close(self) -> None:
        """Releases the model (later calls raise ValueError). Idempotent.

        Safe while other threads run :meth:`predict`: their calls finish on
        the model, which is released when the last of them ends (at once when
        none is running); close itself never waits.
        """
        self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()

    def __repr__(self):
        return f"Model({self.path!r}, backend={self.backend!r}, inputs={self.inputs}, outputs={self.outputs})"


def _with_layer_hint(error: LayerKitError) -> LayerKitError:
    """``error``, when the library asks to register a layer for a custom op,
    with how Python gives one; else ``error``."""
    found = _MISSING_LAYER.search(error.message)
    if found is None:
        return error
    op = found.group(1)
    hint = (f" (from Python: layerkit.Model(path, layers={{{op!r}: formula or layer object}}) for this model, "
            f"or layerkit.register_layer({op!r}, ...) for every model; see help(layerkit.custom_layers))")
    return LayerKitError(error.status, error.code, error.message + hint)


@contextlib.contextmanager
def _profiler(ctx):
    pointer = _native.handle()
    ctx.check(lib.lk_profiler_create(ctx.handle, ctypes.byref(pointer)))
    try:
        yield pointer
    finally:
        lib.lk_profiler_destroy(pointer)
