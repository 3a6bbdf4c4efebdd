"""64-byte-aligned numpy arrays: the one implementation every fastbatch buffer goes through.

TensorFlow's DLPack import aborts the process on the first op over data that is not 64-byte
aligned (see `fastbatch.tf`), and aligned rows keep worker threads off each other's cache lines,
so every array fastbatch hands out starts on a 64-byte boundary.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

ALIGNMENT = 64

__all__ = ["ALIGNMENT", "aligned_copy", "aligned_empty"]


def aligned_empty(shape: int | tuple[int, ...], dtype: npt.DTypeLike = np.float32) -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts on a 64-byte boundary.

    The array is a view of a slightly larger raw byte buffer (its ``base``), which it keeps alive.
    """
    dtype = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    offset = (-raw.ctypes.data) % ALIGNMENT
    return raw[offset : offset + nbytes].view(dtype).reshape(shape)


def aligned_copy(array: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of `array` whose data starts on a 64-byte boundary."""
    out = aligned_empty(array.shape, array.dtype)
    np.copyto(out, array)
    return out
