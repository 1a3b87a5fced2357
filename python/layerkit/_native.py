"""ctypes declarations of the C API (include/layerkit.h) this package uses.

Every function gets its argtypes and restype, so ctypes converts and checks
each argument; outputs are pointers (``ctypes.byref``), and no struct crosses
the boundary. The library is the ``liblayerkit.so.1`` beside this module.
Strings go to C through ``c_string``/``c_path``, which refuse an embedded
NUL (C would end the string there), and handles that users may close
through ``SharedHandle``.
"""
import contextlib
import ctypes
import os
import threading
from ctypes import POINTER, c_char, c_char_p, c_double, c_int32, c_int64, c_size_t, c_void_p

from . import callback_failures
from .errors import LayerKitError

LK_OK = 0
LK_ERROR_WEIGHTS = 3
LK_ERROR_FILE = 4
LK_ERROR_UNKNOWN_OP = 7
LK_ERROR_BUFFER_TOO_SMALL = 9
LK_COMPUTE = {"auto": 0, "cpu": 1, "gpu": 2}
LK_DEVICE_KINDS = {0: "other", 1: "integrated", 2: "discrete", 3: "virtual", 4: "cpu"}
MAX_RANK = 8
#: The names of the C API's element types (lk_element_type, ONNX's codes), as LayerKit and numpy spell them.
ELEMENT_TYPE_NAMES = {
    1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 8: "string", 9: "bool",
    10: "float16", 11: "float64", 12: "uint32", 13: "uint64", 14: "complex64", 15: "complex128", 16: "bfloat16",
    17: "float8e4m3fn", 18: "float8e4m3fnuz", 19: "float8e5m2", 20: "float8e5m2fnuz", 21: "uint4", 22: "int4",
    23: "float4e2m1", 24: "float8e8m0", 25: "uint2", 26: "int2", 27: "float6e2m3", 28: "float6e3m2",
}
#: The header version this binding was written against (LK_API_VERSION).
API_VERSION = 1

HERE = os.path.dirname(os.path.abspath(__file__))
LIBRARY_PATH = os.path.join(HERE, "liblayerkit.so.1")

# Opaque handles are plain pointers here: the C side checks their kind.
handle = c_void_p
status = c_int32
c_float_p = POINTER(ctypes.c_float)
c_int64_p = POINTER(c_int64)
c_size_t_p = POINTER(c_size_t)
c_int32_p = POINTER(c_int32)
c_double_p = POINTER(c_double)
c_char_pp = POINTER(c_char_p)
handle_p = POINTER(handle)

# name: (restype, argtypes)
SIGNATURES = {
    "lk_api_version": (c_int32, []),
    "lk_version_string": (c_char_p, []),
    "lk_status_string": (c_char_p, [status]),
    "lk_context_create": (status, [c_int32, c_int32, handle_p, POINTER(c_char), c_size_t]),
    "lk_context_destroy": (None, [handle]),
    "lk_context_last_error": (c_char_p, [handle]),
    "lk_context_uses_gpu": (status, [handle, c_int32_p]),
    "lk_device_count": (status, [handle, c_int32_p]),
    "lk_device_info": (status, [handle, c_int32, POINTER(c_char), c_size_t, c_size_t_p, c_int32_p, c_int32_p,
                                c_int32_p]),
    "lk_tensor_create": (status, [handle, c_int64_p, c_size_t, c_float_p, handle_p]),
    "lk_tensor_destroy": (None, [handle]),
    "lk_tensor_shape": (status, [handle, handle, c_int64_p, c_size_t, c_size_t_p]),
    "lk_tensor_element_count": (status, [handle, handle, c_size_t_p]),
    "lk_tensor_read": (status, [handle, handle, c_float_p, c_size_t]),
    "lk_tensor_create_typed": (status, [handle, c_int32, c_int64_p, c_size_t, c_void_p, c_size_t, handle_p]),
    "lk_tensor_element_type": (status, [handle, handle, c_int32_p]),
    "lk_tensor_read_bytes": (status, [handle, handle, c_void_p, c_size_t]),
    "lk_tensor_create_strings": (status, [handle, c_int64_p, c_size_t, c_char_pp, c_size_t, handle_p]),
    "lk_tensor_read_string": (status, [handle, handle, c_size_t, ctypes.c_char_p, c_size_t, c_size_t_p]),
    "lk_layer_create": (status, [handle, c_char_p, c_char_pp, c_double_p, c_size_t, handle_p]),
    "lk_layer_create_formula": (status, [handle, c_char_p, c_char_pp, c_double_p, c_size_t, c_char_pp, c_size_t,
                                         handle_p]),
    "lk_layer_set_weights": (status, [handle, handle, POINTER(c_float_p), c_size_t_p, c_size_t]),
    "lk_layer_weight_count": (status, [handle, handle, c_size_t_p]),
    "lk_layer_weight_name": (status, [handle, handle, c_size_t, POINTER(c_char), c_size_t, c_size_t_p]),
    "lk_layer_destroy": (None, [handle]),
    "lk_layer_apply": (status, [handle, handle, handle_p, c_size_t, handle_p, c_size_t, c_size_t_p, handle]),
    "lk_parity": (status, [handle, handle, handle, c_double, c_int32_p, c_double_p, c_double_p]),
    "lk_model_load": (status, [handle, c_char_p, handle_p]),
    "lk_model_destroy": (None, [handle]),
    "lk_model_input_count": (status, [handle, handle, c_size_t_p]),
    "lk_model_output_count": (status, [handle, handle, c_size_t_p]),
    "lk_model_input_name": (status, [handle, handle, c_size_t, POINTER(c_char), c_size_t, c_size_t_p]),
    "lk_model_output_name": (status, [handle, handle, c_size_t, POINTER(c_char), c_size_t, c_size_t_p]),
    "lk_model_input_shape": (status, [handle, handle, c_size_t, c_int64_p, c_size_t, c_size_t_p]),
    "lk_model_input_type": (status, [handle, handle, c_size_t, c_int32_p]),
    "lk_model_output_type": (status, [handle, handle, c_size_t, c_int32_p]),
    "lk_model_predict": (status, [handle, handle, c_char_pp, handle_p, c_size_t, handle_p, c_size_t, handle]),
    "lk_profiler_create": (status, [handle, handle_p]),
    "lk_profiler_destroy": (None, [handle]),
    "lk_profiler_write_trace": (status, [handle, handle, c_char_p]),
    "lk_context_set_notice": (status, [handle, c_void_p, c_void_p]),
    "lk_register_node_formula": (status, [handle, c_char_p, c_char_p]),
    "lk_register_layer": (status, [handle, c_char_p, c_void_p, c_void_p, c_void_p, c_void_p]),
    "lk_image_load": (status, [handle, c_char_p, c_char_p, c_char_p, c_char_p, c_char_p, c_char_p, ctypes.c_float,
                               c_char_p, handle_p]),
}

# The C API's callback types (include/layerkit.h). Callbacks are passed as
# c_void_p (``ctypes.cast(function, c_void_p)``), so NULL is None.
#: lk_notice_fn: (user_data, message).
NOTICE_FN = ctypes.CFUNCTYPE(None, c_void_p, c_char_p)
#: lk_evaluate_fn: (user_data, input_count, inputs, input_shapes, input_ranks, output, output_shape, output_rank).
EVALUATE_FN = ctypes.CFUNCTYPE(c_int32, c_void_p, c_size_t, POINTER(c_float_p), POINTER(c_int64_p), c_size_t_p,
                               c_float_p, c_int64_p, c_size_t)
#: lk_shape_fn: (user_data, input_count, input_shapes, input_ranks, output_shape, output_rank).
SHAPE_FN = ctypes.CFUNCTYPE(c_int32, c_void_p, c_size_t, POINTER(c_int64_p), c_size_t_p, c_int64_p, c_size_t_p)
#: The destroy callback of lk_register_layer: (user_data).
DESTROY_FN = ctypes.CFUNCTYPE(None, c_void_p)


def _load() -> ctypes.CDLL:
    if not os.path.exists(LIBRARY_PATH):
        raise ImportError(f"layerkit: {LIBRARY_PATH} is missing; reinstall the package (pip install .)")
    library = ctypes.CDLL(LIBRARY_PATH)
    for name, (restype, argtypes) in SIGNATURES.items():
        function = getattr(library, name)
        function.restype = restype
        function.argtypes = argtypes
    found = library.lk_api_version()
    if found != API_VERSION:
        raise ImportError(f"layerkit: {LIBRARY_PATH} has C API version {found}, this package needs {API_VERSION}")
    return library


lib = _load()


def status_name(code: int) -> str:
    """The C API's constant name of a status, e.g. ``"LK_ERROR_SHAPE"``."""
    return lib.lk_status_string(code).decode()


def error(code: int, message: str) -> LayerKitError:
    """A :class:`LayerKitError` of status ``code`` raised on this side of the boundary."""
    return LayerKitError(status_name(code), code, message)


def check(context, code: int) -> None:
    """Raises the calling thread's last error on ``context`` when ``code`` is not LK_OK.

    The message is read at once, on the thread that made the call: it is kept
    per thread and replaced by that thread's next call. A failure of a Python
    layer's callback names the exception it raised, which is the error's
    ``__cause__``.
    """
    if code != LK_OK:
        message = lib.lk_context_last_error(context).decode("utf-8", "replace")
        cause = callback_failures.claim(message)
        if cause is None:
            raise error(code, message)
        raise error(code, f"{message}: {type(cause).__name__}: {cause}") from cause


def read_string(call):
    """(status, text) of a string the C API writes as (buffer, capacity,
    length): ``call(buffer, capacity, length_pointer)`` returns a status; it
    is called again with room for the full length when the buffer was cut."""
    capacity = 256
    while True:
        buffer = ctypes.create_string_buffer(capacity)
        length = c_size_t(0)
        code = call(buffer, capacity, ctypes.byref(length))
        if code == LK_ERROR_BUFFER_TOO_SMALL and length.value + 1 > capacity:
            capacity = length.value + 1
            continue
        return code, buffer.value.decode("utf-8", "replace")


def _refuse_nul(data: bytes, what: str) -> bytes:
    # The C API takes NUL-terminated strings: past a NUL the library would
    # silently see a shorter string ("x*2\0+1" runs as "x*2").
    at = data.find(b"\0")
    if at >= 0:
        raise ValueError(f"{what} contains a NUL byte (at byte {at}); LayerKit takes strings without NULs")
    return data


def c_string(text, what: str) -> bytes:
    """``text`` (a str: an op, a formula, a name) as UTF-8 for the C API;
    TypeError for another type, ValueError for an embedded NUL or text that
    is not encodable."""
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a str, got {type(text).__name__}")
    try:
        return _refuse_nul(text.encode("utf-8"), what)
    except UnicodeEncodeError as failure:
        raise ValueError(f"{what} is not encodable as UTF-8: {failure}") from None


def c_path(path, what: str) -> bytes:
    """A path (str, bytes or os.PathLike) as the file system's bytes for the
    C API; TypeError for another type, ValueError for an embedded NUL."""
    try:
        return _refuse_nul(os.fsencode(path), what)
    except TypeError:
        raise TypeError(f"{what} must be a str, bytes or os.PathLike, got {type(path).__name__}") from None


def c_strings(names, what: str):
    """A C array of ``c_string`` copies of ``names`` (``const char *const *``;
    never empty, so ctypes can make it)."""
    return (c_char_p * max(len(names), 1))(*[c_string(name, f"{what} {name!r}") for name in names])


class SharedHandle:
    """A native handle that threads use while another may close it.

    Each call holds the handle through :meth:`use`; :meth:`close` marks it
    closed (later uses raise ValueError) and the handle is destroyed at once
    when no call holds it, else by the last call to let go. A close during
    calls so never frees memory under them (the crash it would be), and never
    waits: a thread that closes the handle from inside a call cannot deadlock.
    """

    def __init__(self, pointer, destroy, what: str):
        self._pointer = pointer
        self._destroy = destroy
        self._what = what
        self._users = 0
        self._closed = False
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def use(self):
        """The handle, kept alive until the block ends; ValueError once closed."""
        with self._lock:
            if self._closed:
                raise ValueError(f"layerkit: the {self._what} is closed")
            self._users += 1
        try:
            yield self._pointer
        finally:
            with self._lock:
                self._users -= 1
                last = self._closed and self._users == 0
            if last:
                self._destroy(self._pointer)

    def close(self) -> None:
        """Marks the handle closed; it is destroyed now, or when the last call in flight ends. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            idle = self._users == 0
        if idle:
            self._destroy(self._pointer)

    @property
    def closed(self) -> bool:
        return self._closed
