"""LayerKit's notices, sent to Python's ``logging`` (logger ``"layerkit"``).

The library says once per context when layers that could use the GPU run on
the CPU, and why ("model.onnx: all 24 layers run on the CPU: ..."), and when
a DOUBLE input is computed in float32. The package's contexts send those
lines here (``lk_context_set_notice``) as WARNING records of the logger
``"layerkit"``, never to standard error: the logger has a NullHandler, so
they are silent until the application configures logging
(``logging.basicConfig()`` shows them; ``logging.getLogger("layerkit")
.setLevel(logging.ERROR)`` drops them).
"""
import ctypes
import logging

from . import _native

#: The logger LayerKit's notices go to.
logger = logging.getLogger("layerkit")
logger.addHandler(logging.NullHandler())


def _log(_user_data, message: bytes) -> None:
    # logging reports its handlers' failures itself (Handler.handleError).
    logger.warning("%s", message.decode("utf-8", "replace"))


# Module-level, so the C function pointer lives as long as the package.
_NOTICE = _native.NOTICE_FN(_log)
#: The notice callback every context of the package is given.
NOTICE_POINTER = ctypes.cast(_NOTICE, ctypes.c_void_p)
