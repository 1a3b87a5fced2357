"""ctypes declarations of the C API (include/layerkit.h) this package uses.

Every function gets its argtypes and restype, so ctypes converts and checks
each argument; outputs are pointers (``ctypes.byref``), and no struct crosses
the boundary. The library is the ``liblayerkit.so.1`` beside this module.
"""
import ctypes
import os
from ctypes import POINTER, c_char, c_char_p, c_double, c_int32, c_int64, c_size_t, c_void_p

from .errors import LayerKitError

LK_OK = 0
LK_ERROR_FILE = 4
LK_ERROR_UNKNOWN_OP = 7
LK_ERROR_BUFFER_TOO_SMALL = 9
LK_COMPUTE = {"auto": 0, "cpu": 1, "gpu": 2}
LK_DEVICE_KINDS = {0: "other", 1: "integrated", 2: "discrete", 3: "virtual", 4: "cpu"}
MAX_RANK = 8
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
    "lk_layer_create": (status, [handle, c_char_p, c_char_pp, c_double_p, c_size_t, handle_p]),
    "lk_layer_create_formula": (status, [handle, c_char_p, c_char_pp, c_double_p, c_size_t, c_char_pp, c_size_t,
                                         handle_p]),
    "lk_layer_set_weights": (status, [handle, handle, POINTER(c_float_p), c_size_t_p, c_size_t]),
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
    "lk_model_predict": (status, [handle, handle, c_char_pp, handle_p, c_size_t, handle_p, c_size_t, handle]),
    "lk_profiler_create": (status, [handle, handle_p]),
    "lk_profiler_destroy": (None, [handle]),
    "lk_profiler_write_trace": (status, [handle, handle, c_char_p]),
}


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


def check(context, code: int) -> None:
    """Raises the calling thread's last error on ``context`` when ``code`` is not LK_OK.

    The message is read at once, on the thread that made the call: it is kept
    per thread and replaced by that thread's next call.
    """
    if code != LK_OK:
        message = lib.lk_context_last_error(context).decode("utf-8", "replace")
        raise LayerKitError(status_name(code), code, message)


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


def c_strings(names):
    """A C array of UTF-8 copies of ``names`` (``const char *const *``; never empty, so ctypes can make it)."""
    return (c_char_p * max(len(names), 1))(*[str(name).encode() for name in names])
