"""``register_layer``: a custom layer for every model and ``apply`` of the process."""
from . import _context
from .custom_layers import Layer


def register_layer(op_type: str, layer: Layer) -> None:
    """Runs the model nodes of op type ``op_type`` (matched case-insensitively,
    in any domain) as ``layer`` in every :class:`layerkit.Model` loaded
    afterwards, and makes ``layerkit.apply(op_type, x)`` run it.

    ``layer`` is a formula (a str, Docs/FORMULAS.md, whose names other than
    ``x`` are each node's attributes and constant inputs, by name, or
    ``apply``'s keyword parameters) or a layer object, Core ML's
    MLCustomLayer in Python: ``evaluate(inputs) -> [output]`` on float32
    arrays and optionally ``output_shapes(input_shapes) -> [shape]`` (see
    :mod:`layerkit.custom_layers`). It replaces an earlier registration of
    that op type and LayerKit's own layer of that name; a model's own
    ``layers=`` replace it in turn. Models already loaded keep the layer they
    were loaded with. A formula that does not parse is a
    :class:`LayerKitError` (``LK_ERROR_INVALID_ARGUMENT``) raised here; an op
    type or layer of the wrong type a TypeError.
    """
    _context.register_everywhere(op_type, layer)
