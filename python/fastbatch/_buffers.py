"""64-byte-aligned numpy arrays: the one implementation every fastbatch buffer goes through.

TensorFlow's DLPack import aborts the process on the first op over data that is not 64-byte
aligned (see `fastbatch.tf`), and aligned rows keep worker threads off each other's cache lines,
so every array fastbatch hands out starts on a 64-byte boundary.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

ALIGNMENT = 64
"""The byte boundary every array fastbatch hands out starts on (64: a cache line, and what
TensorFlow's DLPack import needs)."""

__all__ = ["ALIGNMENT", "aligned_copy", "aligned_empty"]


def aligned_empty(shape: int | tuple[int, ...], dtype: npt.DTypeLike = np.float32) -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts on a 64-byte boundary.

    The array is a view of a slightly larger raw byte buffer (its ``base``), which it keeps alive.
    Use it for storage that `fastbatch.tf.as_tensor` shares without a copy or that
    `NativeVectorEnv.step_into` writes into.

    Args:
        shape: The array's shape (an int for 1-D), as for ``numpy.empty``.
        dtype: Anything ``numpy.dtype`` takes.

    Returns:
        The array, writeable, its values undefined.

    Raises:
        TypeError: ``dtype`` is not a numpy dtype.
        ValueError: ``shape`` is not a sequence of integers, or has a negative one.
    """
    dtype = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(int(n) < 0 for n in shape):
        raise ValueError(f"aligned_empty: negative dimensions are not allowed: shape {shape}")
    count = int(np.prod(shape, dtype=np.int64))
    # At least one element's bytes: numpy gives an empty slice its base's address, so an empty
    # array is cut from a one-element one to start on the boundary too.
    nbytes = max(count, 1) * dtype.itemsize
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    offset = (-raw.ctypes.data) % ALIGNMENT
    return raw[offset : offset + nbytes].view(dtype)[:count].reshape(shape)


def aligned_copy(array: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of `array` whose data starts on a 64-byte boundary."""
    out = aligned_empty(array.shape, array.dtype)
    np.copyto(out, array)
    return out
