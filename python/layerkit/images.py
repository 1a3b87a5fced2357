"""Pictures as model inputs: :func:`load_image`, LayerKit's own picture
reader (the C API's ``lk_image_load``, the code ``layerkit run`` uses)."""
import ctypes

from . import _native
from ._context import context, take_array
from ._native import lib


def _option(value, what: str):
    """A string option as C bytes, None as NULL; ints and (width, height) pairs as "N" and "WxH"."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise TypeError(f"{what} must be a str, an int or a (width, height) pair, got bool")
    if isinstance(value, int):
        value = str(value)
    elif isinstance(value, (tuple, list)):
        if len(value) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise TypeError(f"{what} must be a (width, height) pair of ints, got {value!r}")
        value = f"{value[0]}x{value[1]}"
    return _native.c_string(value, what)


def load_image(path, resize=None, center_crop=None, interpolation="bilinear", normalize="0,1",
               channel_order="rgb", scale=1, layout="nchw"):
    """Reads a PNG or JPEG file as a float32 numpy array, prepared as a
    model's picture input exactly as ``layerkit run`` prepares it::

        x = layerkit.load_image("cat.jpg", resize=256, center_crop=224, normalize="imagenet")
        # x.shape == (1, 3, 224, 224): torchvision's Resize(256), CenterCrop(224), ToTensor, Normalize

    ``resize``: an int N (the shorter side to N, the aspect kept), a
    (width, height) pair or ``"WxH"`` (stretched), or None. ``center_crop``:
    N, (width, height) or ``"WxH"``, or None. ``interpolation``:
    ``"bilinear"``, ``"nearest"`` or ``"bicubic"``, as Pillow's
    ``Image.resize`` (antialiased when shrinking). ``normalize``: ``"0,1"``
    (none), ``"-1,1"``, ``"imagenet"`` or ``"mean=A,B,C,std=D,E,F"``.
    ``channel_order``: ``"rgb"`` or ``"bgr"``. ``scale``: what a
    full-intensity pixel becomes (255 for 0..255 inputs). ``layout``:
    ``"nchw"`` (1xCxHxW) or ``"nhwc"`` (1xHxWxC). C is 1 for a gray
    picture, 3 for RGB, 4 for RGBA. Raises :class:`LayerKitError` for a bad
    option or an unreadable picture.
    """
    try:
        scale = float(scale)
    except (TypeError, ValueError):
        raise TypeError(f"scale must be a number, got {type(scale).__name__}") from None
    if not scale > 0 or scale == float("inf"):
        raise ValueError(f"scale must be a positive finite number, got {scale}")
    arguments = [_native.c_path(path, "the picture path"), _option(resize, "resize"),
                 _option(center_crop, "center_crop"), _option(interpolation, "interpolation"),
                 _option(normalize, "normalize"), _option(channel_order, "channel_order"), ctypes.c_float(scale),
                 _option(layout, "layout")]
    ctx = context("cpu")
    tensor = _native.handle()
    with ctx.use():
        ctx.check(lib.lk_image_load(ctx.handle, *arguments, ctypes.byref(tensor)))
        return take_array(ctx, tensor, "the picture")
