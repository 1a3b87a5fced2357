"""The one exception the package raises for a failed LayerKit call."""


class LayerKitError(Exception):
    """A LayerKit call failed.

    ``status`` is the C API's status name (``"LK_ERROR_SHAPE"``, ...),
    ``code`` its number and ``message`` what the library said went wrong;
    ``str(error)`` is ``"LK_ERROR_SHAPE: <message>"``.
    """

    def __init__(self, status: str, code: int, message: str):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.code = code
        self.message = message
