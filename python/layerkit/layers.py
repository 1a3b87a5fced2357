"""Ops and formulas on numpy arrays: ``apply`` and ``parity``."""
import contextlib
import ctypes
import dataclasses
import re
from typing import Mapping, Sequence, Union

import numpy as np

from . import _native
from ._context import Context, as_float32, context, read_names, take_arrays, tensor_from
from ._native import lib

# A bare name is an op (Swish, Relu, a registered layer); anything else is a formula.
_OP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")

Weights = Union[None, np.ndarray, Sequence, Mapping[str, object]]


def _scalars(params: Mapping[str, float]):
    names = list(params)
    try:
        values = (ctypes.c_double * max(len(names), 1))(*[float(params[name]) for name in names])
    except (TypeError, ValueError):
        raise TypeError(f"parameters must be numbers, got {params!r}") from None
    return _native.c_strings(names, "parameter"), values, len(names)


def _weight_arrays(weights: Weights, formula: bool):
    """(names, float32 arrays) of ``weights``: a mapping gives the names (an
    op's are put in its weight order by ``_in_weight_order``); an op also
    takes one array or a sequence of them, in its weight order."""
    if weights is None:
        return [], []
    if isinstance(weights, Mapping):
        return list(weights), [as_float32(value, f"weight {name!r}").reshape(-1) for name, value in weights.items()]
    if formula:
        raise TypeError("a formula's weights must be a mapping {name: per-channel values}")
    if isinstance(weights, np.ndarray):
        weights = [weights]
    return [], [as_float32(value, "a weight").reshape(-1) for value in weights]


def _in_weight_order(ctx: Context, layer, op: str, names: list, arrays: list) -> list:
    """``arrays``, named ``names``, in the order the op's layer takes its
    weights (``lk_layer_weight_name``): matched by name, never by the
    mapping's order. A name the op does not take, or one it takes that is
    not given, is an ``LK_ERROR_WEIGHTS`` naming the expected names."""
    expected = read_names(ctx, lib.lk_layer_weight_count, lib.lk_layer_weight_name, layer)
    unknown = [name for name in names if name not in expected]
    missing = [name for name in expected if name not in names]
    if unknown or missing:
        found = "; ".join(f"{kind} {', '.join(map(repr, listed))}"
                          for kind, listed in (("unknown", unknown), ("missing", missing)) if listed)
        raise _native.error(_native.LK_ERROR_WEIGHTS,
                            f"{op} takes the weights {', '.join(expected) or '(none)'} by name; {found}")
    by_name = dict(zip(names, arrays))
    return [by_name[name] for name in expected]


@contextlib.contextmanager
def _layer(ctx: Context, op_or_formula: str, weights: Weights, params: Mapping[str, float]):
    """An ``lk_layer`` with its parameters and weights set, destroyed on exit
    (the caller holds ``ctx.use()``)."""
    text = _native.c_string(op_or_formula, "op_or_formula")
    formula = op_or_formula.strip() == "x" or not _OP_NAME.fullmatch(op_or_formula.strip())
    weight_names, arrays = _weight_arrays(weights, formula)
    c_weight_names = _native.c_strings(weight_names, "weight")
    names, values, count = _scalars(params)
    pointer = _native.handle()
    with ctx.registrations.reading():
        if formula:
            ctx.check(lib.lk_layer_create_formula(ctx.handle, text, names, values, count, c_weight_names,
                                                  len(weight_names), ctypes.byref(pointer)))
        else:
            ctx.check(lib.lk_layer_create(ctx.handle, text, names, values, count, ctypes.byref(pointer)))
    try:
        if isinstance(weights, Mapping) and not formula:
            arrays = _in_weight_order(ctx, pointer, op_or_formula, weight_names, arrays)
        if arrays:
            data = (_native.c_float_p * len(arrays))(*[a.ctypes.data_as(_native.c_float_p) for a in arrays])
            counts = (ctypes.c_size_t * len(arrays))(*[a.size for a in arrays])
            ctx.check(lib.lk_layer_set_weights(ctx.handle, pointer, data, counts, len(arrays)))
        yield pointer
    finally:
        lib.lk_layer_destroy(pointer)


def apply(op_or_formula: str, x, weights: Weights = None, backend: str = "cpu", **params):
    """Runs an op or a formula on ``x`` and returns its output as a new float32 array.

    ``op_or_formula`` is an op of LayerKit's catalog by name (``"Swish"``,
    ``"Relu"``, ...; case-insensitive) or a per-element formula over ``x``
    (``"x * tanh(softplus(x))"``, Docs/FORMULAS.md). ``params`` are its
    scalar parameters (``apply("Swish", x, beta=1.5)``). ``weights`` are
    per-channel values (one per channel of ``x``, the second axis of an NCHW
    array): for an op, a mapping from its weight names to arrays, matched by
    name (every name the op takes, no other: Linear's ``{"scale": s, "bias":
    b}``), or one array or a sequence in the op's weight order (Swish: beta;
    Linear: scale, bias); for a formula, a mapping from the names it uses to
    arrays. Strings (op, formula, names) must be str without NUL bytes
    (ValueError: C would cut them there).
    ``backend`` is ``"cpu"``, ``"gpu"`` (Vulkan; a :class:`LayerKitError`
    when none is usable) or ``"auto"``. ``x`` is copied as float32 in C order;
    a 4-D array is NCHW. An op with several outputs returns a tuple.

    Raises :class:`LayerKitError` with the library's message and status
    (an unknown op, a shape that does not fit, a bad parameter).
    """
    ctx = context(backend)
    array = as_float32(x)
    with ctx.use(), _layer(ctx, op_or_formula, weights, params) as layer, tensor_from(ctx, array) as tensor:
        inputs = (_native.handle * 1)(tensor)
        capacity = 8
        while True:
            outputs = (_native.handle * capacity)()
            count = ctypes.c_size_t(0)
            code = lib.lk_layer_apply(ctx.handle, layer, inputs, 1, outputs, capacity, ctypes.byref(count), None)
            if code == _native.LK_ERROR_BUFFER_TOO_SMALL and count.value > capacity:
                capacity = count.value
                continue
            ctx.check(code)
            break
        arrays = take_arrays(ctx, outputs[: count.value])
    return arrays[0] if len(arrays) == 1 else tuple(arrays)


@dataclasses.dataclass(frozen=True)
class ParityResult:
    """The GPU against the CPU on one input (``bool(result)`` is ``passed``)."""

    passed: bool
    max_abs_error: float
    max_rel_error: float
    tolerance: float

    def __bool__(self) -> bool:
        return self.passed


def parity(op_or_formula: str, x, weights: Weights = None, tolerance: float = 1e-3, **params) -> ParityResult:
    """Runs an op or a formula on the GPU and on the CPU and compares them.

    Arguments as in :func:`apply`. ``x`` is first rounded to fp16, so both
    sides read the same values; it passes when every element is within
    ``tolerance * max(1, |cpu|)`` (1e-3: the rule of ``layerkit parity``)
    and no non-finite value differs. Needs a usable Vulkan device
    (:class:`LayerKitError` ``LK_ERROR_GPU_UNAVAILABLE`` otherwise).
    """
    ctx = context("gpu")
    array = as_float32(x)
    passed = ctypes.c_int32(0)
    max_abs, max_rel = ctypes.c_double(0), ctypes.c_double(0)
    with ctx.use(), _layer(ctx, op_or_formula, weights, params) as layer, tensor_from(ctx, array) as tensor:
        ctx.check(lib.lk_parity(ctx.handle, layer, tensor, float(tolerance), ctypes.byref(passed),
                                ctypes.byref(max_abs), ctypes.byref(max_rel)))
    return ParityResult(bool(passed.value), max_abs.value, max_rel.value, float(tolerance))
