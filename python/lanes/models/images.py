"""Synthetic sample images for the demo zoo: inputs for smoke tests and load-test corpora.

:func:`sample_images` draws, with Pillow and a fixed seed, two small sets of grayscale PNGs:

- ``char/char_NNN.png``: one glyph (a letter or digit) on a roughly 32x32 image, turned by a
  multiple of 90°, for ``char_cnn`` and ``misc_cls``;
- ``line/line_NNN.png``: a line of text 32 pixels high and 60-300 wide, for ``line_rnn_zh`` and
  ``line_rnn_en``.

Each kind has its own folder, so a folder is a ready input set for ``lanes bench corpus``. The
text is ASCII drawn with Pillow's default font (it has no CJK glyphs). Paper and ink gray levels
vary and light noise is added, so preprocessing sees more than one clean case. The same seed
gives the same bytes with the same Pillow build.
"""

from __future__ import annotations

import functools
import io
import string
from pathlib import Path
from typing import IO

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from lanes.files import write_atomic

GLYPHS = string.ascii_letters + string.digits
"""The characters drawn on glyph images."""
LINE_CHARS = string.ascii_letters + string.digits + "     .,:;-'!?"
"""The characters drawn on line images (spaces repeated so words come out word-sized)."""

Font = ImageFont.FreeTypeFont | ImageFont.ImageFont


@functools.lru_cache(maxsize=16)
def _font(size: int) -> Font:
    """Pillow's default font at ``size`` pixels (its fixed bitmap font where FreeType or the
    ``size`` argument is unavailable)."""
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1 has no size argument
        return ImageFont.load_default()


def _draw(
    size: tuple[int, int], text: str, font: Font, paper: int, ink: int, at: str
) -> Image.Image:
    """``text`` drawn in gray ``ink`` on a ``paper`` image of ``size``: centred (``at="centre"``)
    or left-aligned 4 px in and centred vertically (``at="left"``), placed by the text's ink box."""
    img = Image.new("L", size, paper)
    draw = ImageDraw.Draw(img)
    left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
    x = (size[0] - (right - left)) // 2 - left if at == "centre" else 4 - left
    y = (size[1] - (bottom - top)) // 2 - top
    draw.text((x, y), text, fill=ink, font=font)
    return img


def _noisy_png(img: Image.Image, rng: np.random.Generator) -> bytes:
    """``img`` with Gaussian noise (sigma 6 gray levels) added, encoded as PNG."""
    pixels = np.asarray(img, dtype=np.float64) + rng.normal(0.0, 6.0, size=(img.height, img.width))
    noisy = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), mode="L")
    buffer = io.BytesIO()
    noisy.save(buffer, format="PNG")
    return buffer.getvalue()


def glyph_image(rng: np.random.Generator) -> bytes:
    """One glyph PNG: a random letter or digit, 28-40 px a side, ink 0-89 on paper 200-255,
    rotated by 0, 90, 180 or 270 degrees."""
    w, h = (int(v) for v in rng.integers(28, 41, size=2))
    paper, ink = int(rng.integers(200, 256)), int(rng.integers(0, 90))
    char = GLYPHS[int(rng.integers(len(GLYPHS)))]
    img = _draw((w, h), char, _font(int(min(w, h) * 0.8)), paper, ink, "centre")
    turns = int(rng.integers(4))
    if turns:
        rotations = (Image.Transpose.ROTATE_90, Image.Transpose.ROTATE_180)
        img = img.transpose((*rotations, Image.Transpose.ROTATE_270)[turns - 1])
    return _noisy_png(img, rng)


def line_image(rng: np.random.Generator) -> bytes:
    """One text-line PNG: 32 px high, 60-300 px wide, random words in a 20 px font filling the
    width less an 8 px margin, ink 0-89 on paper 200-255."""
    width = int(rng.integers(60, 301))
    paper, ink = int(rng.integers(200, 256)), int(rng.integers(0, 90))
    font = _font(20)
    picks = rng.integers(len(LINE_CHARS), size=width // 6)
    text = "".join(LINE_CHARS[int(i)] for i in picks).strip() or "x"
    # Rule: drop characters from the end until the text fits (font.getlength is its advance).
    while len(text) > 1 and font.getlength(text) > width - 8:
        text = text[:-1].rstrip() or text[0]
    return _noisy_png(_draw((width, 32), text, font, paper, ink, "left"), rng)


def sample_images(directory: Path, count_per_model: int = 8, seed: int = 0) -> list[Path]:
    """Write ``count_per_model`` glyph images to ``directory/char/`` and as many line images to
    ``directory/line/``; returns their paths, glyphs first.

    Files are named ``char_000.png`` ... and ``line_000.png`` ..., written atomically; the folders
    are created as needed. ``seed`` fixes every pixel.
    """
    rng = np.random.default_rng(seed)
    paths: list[Path] = []
    for kind, make in (("char", glyph_image), ("line", line_image)):
        folder = directory / kind
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(count_per_model):
            data = make(rng)
            path = folder / f"{kind}_{i:03d}.png"

            def write(f: IO[bytes], data: bytes = data) -> None:
                f.write(data)

            write_atomic(path, write)
            paths.append(path)
    return paths
