"""Read and write PNG images with zlib and NumPy only, so `pytflite run --input x=cat.png` and the
profiler's bar chart need no imaging library.

Reads 8- and 16-bit grayscale, RGB, palette and alpha images (not interlaced); writes 8-bit RGB.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}  # color type -> samples per pixel


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def encode_png(image: np.ndarray) -> bytes:
    """An HxWx3 (or HxW) uint8 array as PNG bytes."""
    image = np.asarray(image, dtype=np.uint8)
    if image.ndim == 2:
        image = np.repeat(image[:, :, None], 3, axis=2)
    height, width, channels = image.shape
    if channels != 3:
        raise ValueError(f"encode_png takes RGB images, not {channels} channels")
    rows = np.concatenate([np.zeros((height, 1), np.uint8), image.reshape(height, width * 3)], axis=1)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        _SIGNATURE
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
        + _chunk(b"IEND", b"")
    )


def _unfilter(raw: bytes, height: int, stride: int, pixel_bytes: int) -> np.ndarray:
    """Undo PNG's per-row filters (None, Sub, Up, Average, Paeth)."""
    data = np.frombuffer(raw, np.uint8).reshape(height, stride + 1)
    out = np.zeros((height, stride), np.uint8)
    previous = np.zeros(stride, np.int32)
    for y in range(height):
        kind, row = data[y, 0], data[y, 1:].astype(np.int32)
        if kind == 0:
            current = row
        elif kind == 2:
            current = (row + previous) & 0xFF
        elif kind == 1 and stride % pixel_bytes == 0:  # Sub: a running sum per channel
            current = np.cumsum(row.reshape(-1, pixel_bytes), axis=0).reshape(-1) & 0xFF
        else:  # Sub, Average and Paeth depend on the reconstructed left neighbour: byte by byte
            current = np.zeros(stride, np.int32)
            for x in range(stride):
                left = current[x - pixel_bytes] if x >= pixel_bytes else 0
                up = previous[x]
                if kind == 1:
                    predictor = left
                elif kind == 3:
                    predictor = (left + up) // 2
                elif kind == 4:
                    upper_left = previous[x - pixel_bytes] if x >= pixel_bytes else 0
                    p = left + up - upper_left
                    pa, pb, pc = abs(p - left), abs(p - up), abs(p - upper_left)
                    predictor = left if pa <= pb and pa <= pc else up if pb <= pc else upper_left
                else:
                    raise ValueError(f"PNG row {y} has an unknown filter type {kind}")
                current[x] = (row[x] + predictor) & 0xFF
        out[y] = current
        previous = current
    return out


def decode_png(data: bytes) -> np.ndarray:
    """PNG bytes as an HxWxC uint8 array (C = 1, 2, 3 or 4; palette images become RGB/RGBA)."""
    if not data.startswith(_SIGNATURE):
        raise ValueError("not a PNG file")
    position, idat, palette, transparency = len(_SIGNATURE), [], None, None
    header = None
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        position += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            palette = np.frombuffer(body, np.uint8).reshape(-1, 3)
        elif kind == b"tRNS":
            transparency = np.frombuffer(body, np.uint8)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    if header is None:
        raise ValueError("PNG file has no IHDR chunk")
    width, height, depth, color_type, _, _, interlace = header
    if interlace:
        raise ValueError("interlaced PNG files are not supported")
    if color_type not in _CHANNELS or (depth not in (8, 16) and not (color_type in (0, 3) and depth < 8)):
        raise ValueError(f"unsupported PNG: bit depth {depth}, color type {color_type}")
    channels = _CHANNELS[color_type]
    bits_per_pixel = depth * channels
    stride = (width * bits_per_pixel + 7) // 8
    rows = _unfilter(zlib.decompress(b"".join(idat)), height, stride, max(1, bits_per_pixel // 8))
    if depth < 8:
        bits = np.unpackbits(rows, axis=1).reshape(height, -1, depth)[:, :width]
        samples = (bits * (1 << np.arange(depth - 1, -1, -1))).sum(axis=2).astype(np.uint8)
        if color_type == 0:
            samples = (samples.astype(np.int32) * 255 // ((1 << depth) - 1)).astype(np.uint8)
        image = samples[:, :, None]
    elif depth == 16:
        image = rows.reshape(height, width, channels, 2)[..., 0]  # the high byte of each sample
    else:
        image = rows.reshape(height, width, channels)
    if color_type == 3:
        if palette is None:
            raise ValueError("palette PNG without a PLTE chunk")
        indices = image[:, :, 0]
        rgb = palette[indices]
        if transparency is not None:
            alpha = np.full(len(palette), 255, np.uint8)
            alpha[: len(transparency)] = transparency
            return np.concatenate([rgb, alpha[indices][:, :, None]], axis=2)
        return rgb
    return image
