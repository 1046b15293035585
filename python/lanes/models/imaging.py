"""Image pre- and post-processing shared by the demo zoo's models.

Pre-processing turns an encoded image (PNG, JPEG, anything Pillow reads) or a raw grayscale array
into the float tensor a model takes:

1. :func:`decode_gray` decodes bytes to an 8-bit grayscale ``HxW`` array (transparent pixels are
   laid on white first); anything that is not a readable image raises
   ``LanesError("bad_input", ...)``.
2. :func:`ink` maps gray levels to *ink* in ``[0, 1]``: ink is high, the background is 0,
   whatever the image's polarity (dark text on light paper or light text on dark).
3. :func:`resize_char` fits a glyph into a square, :func:`resize_line` fits a text line to a fixed
   height and width; both pad with the background value 0.

Post-processing: :func:`softmax` for class scores and :func:`ctc_greedy` for CTC text decoding.
Everything is vectorised with numpy (and Pillow's resampling); no Python loop runs over pixels.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from PIL import Image, UnidentifiedImageError

from lanes.errors import BAD_INPUT, LanesError

W_FIXED = 128
"""The width every text line is brought to (:func:`resize_line`); with height 32 a line model
sees ``W_FIXED / 4 = 32`` time steps."""
LINE_HEIGHT = 32
"""The height every text line is brought to."""
CHAR_SIZE = 32
"""The side of the square a glyph is fitted into."""
MAX_PIXELS = 4096 * 4096
"""The largest image (width x height) :func:`decode_gray` accepts; larger ones are refused
before their pixels are decoded."""

FloatArray = npt.NDArray[np.float32]


def decode_gray(data: bytes) -> npt.NDArray[np.uint8]:
    """Decode an encoded image to an 8-bit grayscale ``HxW`` array.

    Rule: the image is converted with Pillow's ``L`` mode (ITU-R 601-2 luma); an image with
    transparency is first composited over white, so transparent background reads as paper.
    Empty data, data Pillow cannot identify or decode, a truncated file, and an image over
    :data:`MAX_PIXELS` raise ``LanesError("bad_input", ...)`` naming the problem.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise LanesError(
            BAD_INPUT, f"image: expected encoded image bytes, got {type(data).__name__}"
        )
    if len(data) == 0:
        raise LanesError(BAD_INPUT, "image: empty (0 bytes)")
    try:
        img: Image.Image = Image.open(io.BytesIO(bytes(data)))
        width, height = img.size
        if width * height > MAX_PIXELS:
            raise LanesError(
                BAD_INPUT,
                f"image {width}x{height}: too large; at most {MAX_PIXELS} pixels",
            )
        img.load()
        if img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info):
            rgba = img.convert("RGBA")
            paper = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
            img = Image.alpha_composite(paper, rgba)
        gray = img.convert("L")
    except LanesError:
        raise
    except UnidentifiedImageError:
        raise LanesError(
            BAD_INPUT, f"image ({len(data)} bytes): not a format Pillow can read"
        ) from None
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as err:
        raise LanesError(BAD_INPUT, f"image ({len(data)} bytes): cannot decode: {err}") from None
    return np.asarray(gray, dtype=np.uint8)


def ink(img: npt.NDArray[Any]) -> FloatArray:
    """Gray levels → ink in ``[0, 1]`` with the background at 0.

    ``img`` is ``HxW``: ``uint8`` gray levels (0-255) or floats in ``[0, 1]`` (1 is white; values
    outside are clipped). Rule: the median of the image's border pixels is the background; when
    it is light (``>= 0.5``) the image is inverted (``1 - gray``), so dark strokes become high,
    otherwise the gray levels are ink as they are.
    """
    gray: FloatArray
    if img.dtype == np.uint8:
        gray = img.astype(np.float32) * np.float32(1 / 255)
    else:
        gray = np.clip(np.nan_to_num(img.astype(np.float32)), 0.0, 1.0)
    border = np.concatenate([gray[0, :], gray[-1, :], gray[:, 0], gray[:, -1]])
    if float(np.median(border)) >= 0.5:
        gray = np.float32(1.0) - gray
    return gray


def _resample(x: FloatArray, width: int, height: int) -> FloatArray:
    """``x`` resized to ``width x height`` with Pillow's bilinear filter (antialiased when
    shrinking), in float32."""
    if x.shape == (height, width):
        return x
    img = Image.fromarray(np.ascontiguousarray(x, dtype=np.float32), mode="F")
    return np.asarray(img.resize((width, height), Image.Resampling.BILINEAR), dtype=np.float32)


def resize_char(img: npt.NDArray[Any], size: int = CHAR_SIZE) -> FloatArray:
    """A glyph image → ``float32 [1, size, size]`` ink.

    Rule: the image (see :func:`ink` for the accepted forms) is scaled, aspect ratio kept, so its
    longer side is ``size``, and centred on a background (0) square.
    """
    x = ink(img)
    h, w = x.shape
    scale = size / max(h, w)
    nh, nw = max(1, min(size, round(h * scale))), max(1, min(size, round(w * scale)))
    out = np.zeros((1, size, size), dtype=np.float32)
    top, left = (size - nh) // 2, (size - nw) // 2
    out[0, top : top + nh, left : left + nw] = _resample(x, nw, nh)
    return out


def resize_line(
    img: npt.NDArray[Any], height: int = LINE_HEIGHT, width: int = W_FIXED
) -> FloatArray:
    """A text-line image → ``float32 [1, height, width]`` ink.

    Rule: the image (see :func:`ink` for the accepted forms) is scaled, aspect ratio kept, to
    ``height``; a line that comes out narrower than ``width`` is right-padded with the background
    (0), a wider one is squeezed to ``width``.
    """
    x = ink(img)
    h, w = x.shape
    nw = max(1, min(width, round(w * height / h)))
    out = np.zeros((1, height, width), dtype=np.float32)
    out[0, :, :nw] = _resample(x, nw, height)
    return out


def softmax(x: npt.NDArray[Any], axis: int = -1) -> FloatArray:
    """``exp(x) / sum(exp(x))`` along ``axis``, computed from ``x - max(x)`` so it never
    overflows."""
    z = np.asarray(x, dtype=np.float32)
    z = z - z.max(axis=axis, keepdims=True)
    e: FloatArray = np.exp(z)
    out: FloatArray = e / e.sum(axis=axis, keepdims=True)
    return out


def ctc_greedy(
    logits: npt.NDArray[Any],
    charset: Sequence[str] | npt.NDArray[np.object_],
    blank: int = 0,
) -> list[str]:
    """CTC best-path decoding: one string per sequence.

    ``logits`` is ``[T, C]`` (one sequence) or ``[n, T, C]``; ``charset[k]`` is the symbol of
    class ``k`` (``len(charset) == C``; the entry at ``blank`` is never emitted). Rule: take the
    arg-max class at each time step, collapse runs of the same class to one, then drop blanks —
    so ``a a _ a b b`` reads ``aab``.
    """
    scores = np.asarray(logits)
    if scores.ndim == 2:
        scores = scores[None]
    if scores.ndim != 3:
        raise ValueError(f"logits: shape {list(scores.shape)}: expected [T, C] or [n, T, C]")
    symbols = np.asarray(charset, dtype=object)
    if symbols.shape != (scores.shape[2],):
        raise ValueError(f"charset: {len(symbols)} symbols for {scores.shape[2]} classes")
    path = scores.argmax(axis=2)
    keep = path != blank
    keep[:, 1:] &= path[:, 1:] != path[:, :-1]
    return ["".join(symbols[row[mask]]) for row, mask in zip(path, keep, strict=True)]
