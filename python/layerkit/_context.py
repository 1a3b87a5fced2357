"""Contexts (one per backend and thread count, shared by the package's calls) and tensors.

A context holds a backend and, for the GPU, an open Vulkan device: opening
one per call would cost more than most calls, so each (backend, threads)
context is made on first use and kept until the interpreter exits (a weakref
finalizer closes it then, after the models made on it, which are finalized
first). A model given its own ``layers=`` gets a context of its own
(:func:`model_context`), released with the model. Every call holds its
context through :meth:`Context.use`, so a context closed at exit while a
daemon thread is still in a call is destroyed when that call ends, not under
it. Each context has the layers of :func:`layerkit.register_layer` and
sends its notices to ``logging`` (:mod:`layerkit.notices`). Tensors and
layers live only for the call that makes them.
"""
import contextlib
import ctypes
import threading
import weakref

import numpy as np

from . import _native, custom_layers
from ._native import lib
from .errors import LayerKitError
from .notices import NOTICE_POINTER


class _Registrations:
    """The C API's rule for a context's custom layers: no registration while
    another call creates layers or loads models on it. Those calls share
    (:meth:`reading`), a registration excludes them all (:meth:`writing`)."""

    def __init__(self):
        self._condition = threading.Condition()
        self._readers = 0

    @contextlib.contextmanager
    def reading(self):
        with self._condition:
            self._readers += 1
        try:
            yield
        finally:
            with self._condition:
                self._readers -= 1
                self._condition.notify_all()

    @contextlib.contextmanager
    def writing(self):
        with self._condition:
            self._condition.wait_for(lambda: self._readers == 0)
            yield


def check_threads(threads) -> int:
    """The C API's thread count of ``threads``: None (the cores the process
    may use) is 0; otherwise an int of at least 1 (TypeError, ValueError)."""
    if threads is None:
        return 0
    if isinstance(threads, bool) or not isinstance(threads, int):
        raise TypeError(f"threads must be None or an int, got {type(threads).__name__}")
    if threads < 1:
        raise ValueError(f"threads must be at least 1 (None: every core), got {threads}")
    return threads


class Context:
    """An ``lk_context`` for one backend: ``"cpu"``, ``"gpu"`` or ``"auto"``,
    with ``threads`` CPU threads (None: the cores the process may use).

    ``handle`` is the raw pointer, for calls made inside :meth:`use`.
    ``registrations`` orders custom-layer registrations against the calls
    that create layers or load models on it.
    """

    def __init__(self, backend: str, threads=None):
        if backend not in _native.LK_COMPUTE:
            raise ValueError(f"backend must be 'cpu', 'gpu' or 'auto', got {backend!r}")
        count = check_threads(threads)
        self.backend = backend
        self.threads = threads
        pointer = _native.handle()
        error = ctypes.create_string_buffer(1024)
        code = lib.lk_context_create(_native.LK_COMPUTE[backend], count, ctypes.byref(pointer), error, len(error))
        if code != _native.LK_OK:
            raise _native.error(code, error.value.decode("utf-8", "replace"))
        self.handle = pointer
        self._shared = _native.SharedHandle(pointer, lib.lk_context_destroy, f"{backend} context")
        self._finalizer = weakref.finalize(self, self._shared.close)
        self.registrations = _Registrations()
        self.check(lib.lk_context_set_notice(pointer, NOTICE_POINTER, None))

    def use(self):
        """Holds the context for one call (a context manager); see :class:`_native.SharedHandle`."""
        return self._shared.use()

    def register(self, layers) -> None:
        """Registers ``{op type: formula or layer object}`` on the context."""
        with self.use(), self.registrations.writing():
            for op_type, layer in layers.items():
                custom_layers.register_on(self, op_type, layer)

    def close(self) -> None:
        """Releases the context once the calls holding it end (a model's own context)."""
        self._finalizer()

    def check(self, code: int) -> None:
        """Raises this thread's last error on the context unless ``code`` is LK_OK."""
        _native.check(self.handle, code)

    @property
    def uses_gpu(self) -> bool:
        """Whether the context's layers may run on a GPU."""
        uses = ctypes.c_int32(0)
        with self.use():
            self.check(lib.lk_context_uses_gpu(self.handle, ctypes.byref(uses)))
        return bool(uses.value)


_contexts = {}
# The layers of register_layer, by lowercased op type (the library matches
# names case-insensitively): every shared context and model context has them.
_registered = {}
_contexts_lock = threading.Lock()


def context(backend: str, threads=None) -> Context:
    """The package's shared context for ``backend`` and ``threads``, made on
    first use with the layers of :func:`layerkit.register_layer`."""
    check_threads(threads)
    with _contexts_lock:
        key = (backend, threads)
        if key not in _contexts:
            made = Context(backend, threads)
            made.register(dict(_registered.values()))
            _contexts[key] = made
        return _contexts[key]


def model_context(backend: str, threads, layers) -> Context:
    """A context of one model's own, with the layers of
    :func:`layerkit.register_layer` and then ``layers``, which replace those
    of the same op type; the caller closes it with the model."""
    with _contexts_lock:
        registered = dict(_registered.values())
    made = Context(backend, threads)
    try:
        made.register(registered)
        made.register(layers)
    except BaseException:
        made.close()
        raise
    return made


def register_everywhere(op_type: str, layer) -> None:
    """Registers ``layer`` as ``op_type`` on every shared context, made and to be made."""
    custom_layers.check_layer(op_type, layer)
    with _contexts_lock:
        # Registered on one context at least now, so a formula's error is raised here.
        if not _contexts:
            _contexts[("cpu", None)] = Context("cpu")
        for made in _contexts.values():
            made.register({op_type: layer})
        _registered[op_type.lower()] = (op_type, layer)


def as_float32(array, what: str = "x") -> np.ndarray:
    """A C-contiguous float32 copy of ``array`` (never a view of the caller's)."""
    try:
        return np.array(array, dtype=np.float32, order="C", copy=True)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{what} must be convertible to a float32 array: {error}") from None


def _float_pointer(array: np.ndarray):
    return array.ctypes.data_as(_native.c_float_p)


#: The numpy dtypes that are lk_element_types, by code: every type a model
#: takes or returns but strings and the types numpy lacks (bfloat16, the
#: float8/6/4 and 4/2-bit types).
_DTYPES = {code: np.dtype(name) for code, name in _native.ELEMENT_TYPE_NAMES.items()
           if name in ("float32", "uint8", "int8", "uint16", "int16", "int32", "int64", "bool", "float16", "float64",
                       "uint32", "uint64", "complex64", "complex128")}
_CODES = {dtype: code for code, dtype in _DTYPES.items()}
_DTYPES_BY_NAME = {dtype.name: dtype for dtype in _CODES}


def _as_strings(array, what: str) -> np.ndarray:
    """``array`` (a numpy ``<U`` array, or an object array or list of str)
    as a C-contiguous ``<U`` array; TypeError for anything else, never
    converted (numbers are not strings)."""
    try:
        given = np.asarray(array)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{what} must be convertible to a numpy array: {error}") from None
    if given.dtype.kind == "O" and all(isinstance(item, str) for item in given.flat):
        given = given.astype(str) if given.size else np.empty(given.shape, dtype="<U1")
    if given.dtype.kind != "U":
        raise TypeError(f"{what} is {given.dtype}; the model takes strings (a numpy '<U' array, "
                        "or an object array of str), and nothing is converted")
    return np.ascontiguousarray(given)


def dtype_of(type_name: str):
    """The numpy dtype of an element type's name ("int64"), None when numpy has none."""
    return _DTYPES_BY_NAME.get(type_name)


def as_typed(array, what: str, type_name: str) -> np.ndarray:
    """A C-contiguous copy of ``array`` in native byte order, which must be of
    dtype ``type_name`` already (no conversion: TypeError naming both);
    for ``"string"``, a ``<U`` array (``_as_strings``)."""
    if type_name == "string":
        return _as_strings(array, what)
    dtype = dtype_of(type_name)
    if dtype is None:
        raise TypeError(f"the model takes {type_name} for {what}, which numpy has no dtype for; "
                        "the package cannot pass it")
    try:
        copy = np.array(array, order="C", copy=True)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{what} must be convertible to a numpy array: {error}") from None
    if not copy.dtype.isnative:
        copy = copy.astype(copy.dtype.newbyteorder("="))
    if copy.dtype != dtype:
        raise TypeError(f"{what} is {copy.dtype}; the model takes {dtype}, and nothing is converted "
                        f"(pass array.astype(np.{dtype.name}))")
    return copy


@contextlib.contextmanager
def tensor_from(ctx: Context, array: np.ndarray):
    """An ``lk_tensor`` holding a copy of ``array`` (C order, native byte
    order; float32, another dtype of ``_DTYPES``, or ``<U`` strings),
    destroyed on exit."""
    shape = (ctypes.c_int64 * max(array.ndim, 1))(*array.shape)
    pointer = _native.handle()
    if array.dtype.kind == "U":
        strings = [str(item) for item in array.flat]
        ctx.check(lib.lk_tensor_create_strings(ctx.handle, shape, array.ndim, _native.c_strings(strings, "string"),
                                               len(strings), ctypes.byref(pointer)))
    elif array.dtype == np.float32:
        ctx.check(lib.lk_tensor_create(ctx.handle, shape, array.ndim, _float_pointer(array), ctypes.byref(pointer)))
    else:
        ctx.check(lib.lk_tensor_create_typed(ctx.handle, _CODES[array.dtype], shape, array.ndim,
                                             array.ctypes.data_as(ctypes.c_void_p), array.nbytes,
                                             ctypes.byref(pointer)))
    try:
        yield pointer
    finally:
        lib.lk_tensor_destroy(pointer)


def take_array(ctx: Context, tensor, what: str = "the output") -> np.ndarray:
    """Copies a tensor the library made into a new numpy array of its own
    element type (strings as ``<U``) and destroys it; TypeError for a type
    numpy has no dtype for."""
    try:
        shape = (ctypes.c_int64 * _native.MAX_RANK)()
        rank = ctypes.c_size_t(0)
        code = ctypes.c_int32(0)
        ctx.check(lib.lk_tensor_shape(ctx.handle, tensor, shape, _native.MAX_RANK, ctypes.byref(rank)))
        ctx.check(lib.lk_tensor_element_type(ctx.handle, tensor, ctypes.byref(code)))
        if _native.ELEMENT_TYPE_NAMES.get(code.value) == "string":
            return _take_strings(ctx, tensor, tuple(shape[: rank.value]))
        dtype = _DTYPES.get(code.value)
        if dtype is None:
            name = _native.ELEMENT_TYPE_NAMES.get(code.value, f"element type {code.value}")
            raise TypeError(f"{what} is {name}, which numpy has no dtype for; the package cannot return it")
        array = np.empty(tuple(shape[: rank.value]), dtype=dtype)
        ctx.check(lib.lk_tensor_read_bytes(ctx.handle, tensor, array.ctypes.data_as(ctypes.c_void_p), array.nbytes))
        return array
    finally:
        lib.lk_tensor_destroy(tensor)


def _take_strings(ctx: Context, tensor, shape: tuple) -> np.ndarray:
    """A string tensor's elements as a ``<U`` array of ``shape``."""
    strings = []
    for index in range(int(np.prod(shape, dtype=np.int64))):
        code, text = _native.read_string(
            lambda buffer, capacity, length: lib.lk_tensor_read_string(ctx.handle, tensor, index, buffer, capacity,
                                                                       length))
        ctx.check(code)
        strings.append(text)
    return np.array(strings, dtype=str).reshape(shape) if strings else np.empty(shape, dtype="<U1")


def take_arrays(ctx: Context, tensors, names=None) -> list:
    """``take_array`` over every handle (``names`` naming them in errors),
    destroying them all even when one read fails."""
    arrays, failure = [], None
    for index, tensor in enumerate(tensors):
        try:
            arrays.append(take_array(ctx, tensor, f"output {names[index]!r}" if names else "the output"))
        except (LayerKitError, TypeError) as error:
            failure = failure or error
    if failure:
        raise failure
    return arrays


def read_names(ctx: Context, count_function, name_function, *handles) -> list:
    """The names a (count, name) pair of C API functions lists for
    ``handles`` (a model's inputs, a layer's weights), in their order."""
    count = ctypes.c_size_t(0)
    ctx.check(count_function(ctx.handle, *handles, ctypes.byref(count)))
    names = []
    for index in range(count.value):
        code, name = _native.read_string(
            lambda buffer, capacity, length: name_function(ctx.handle, *handles, index, buffer, capacity, length))
        ctx.check(code)
        names.append(name)
    return names
