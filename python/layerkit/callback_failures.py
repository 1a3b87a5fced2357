"""The exceptions raised in Python layers' callbacks, until the call that ran them reports them.

A callback cannot raise through the C API: it returns a non-zero number,
and the library fails the call with a message naming the layer and that
number (``custom layer 'Swish': its evaluate callback returned 7``). Each
failure gets its own number here, so the thread that made the failed call
finds its own exception (``claim``), whichever thread ran the callback.
"""
import itertools
import re
import threading

# Unclaimed failures (a callback run by a call that failed for another
# reason first) are dropped past this many.
_KEPT = 64
_RETURNED = re.compile(r"callback returned (\d+)")
_lock = threading.Lock()
_numbers = itertools.count()
_failures = {}


def record(exception: BaseException) -> int:
    """Keeps ``exception`` and returns the number its callback returns (1 to 2**31 - 1)."""
    with _lock:
        number = next(_numbers) % (2**31 - 1) + 1
        _failures[number] = exception
        while len(_failures) > _KEPT:
            del _failures[next(iter(_failures))]
    return number


def claim(message: str):
    """The exception whose number ``message`` names, removed; None when it names none."""
    found = _RETURNED.search(message)
    if found is None:
        return None
    with _lock:
        return _failures.pop(int(found.group(1)), None)
