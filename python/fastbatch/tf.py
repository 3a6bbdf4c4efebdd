"""numpy batch buffers as TensorFlow tensors without copies (DLPack).

Importing this module imports TensorFlow; `import fastbatch` alone never does.

TensorFlow's DLPack import accepts any address, but the first ordinary TF op on a tensor whose
data is not 64-byte aligned aborts the whole process (``Check failed: IsAligned()``), which
Python cannot catch. `as_tensor` therefore checks alignment first: every buffer fastbatch hands
out (and every array from `fastbatch.aligned_empty`) qualifies.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from fastbatch._buffers import ALIGNMENT, aligned_empty

__all__ = ["as_tensor", "is_aliasable"]


def is_aliasable(array: np.ndarray) -> bool:
    """True when `as_tensor(array)` can share the memory: C-contiguous, writeable, aligned.

    Args:
        array: Any value (not a numpy array: False).

    Returns:
        Whether the array's memory can be shared with TensorFlow as it is.
    """
    return (
        isinstance(array, np.ndarray)
        and array.flags.c_contiguous
        and array.flags.writeable
        and array.ctypes.data % ALIGNMENT == 0
    )


def as_tensor(array: np.ndarray, *, copy: bool | None = None) -> tf.Tensor:
    """A `tf.Tensor` over `array`'s memory (DLPack), or over an aligned copy with ``copy=True``.

    The tensor keeps the array's memory alive. A fastbatch buffer viewed by a live tensor is
    never recycled, so the tensor never changes behind your back; the caller's own arrays
    (e.g. a rollout filled by `step_into`) are shared as they are: later writes show through.

    Args:
        array: A numpy array; every buffer fastbatch hands out (and every array from
            `fastbatch.aligned_empty`) can be shared.
        copy: None (default) or False: an array that cannot be shared (not C-contiguous,
            read-only, or not 64-byte aligned) raises; True copies such an array into aligned
            memory first (and only then).

    Returns:
        The tensor, of the array's shape and dtype.

    Raises:
        TypeError: ``array`` is not a numpy array.
        ValueError: The array cannot be shared and ``copy`` is not True (saying why).
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"as_tensor takes a numpy array, got {type(array).__name__}")
    if not is_aliasable(array):
        if copy:
            aligned = aligned_empty(array.shape, array.dtype)
            aligned[...] = array
            array = aligned
        else:
            reasons = []
            if not array.flags.c_contiguous:
                reasons.append("not C-contiguous")
            if not array.flags.writeable:
                reasons.append("read-only")
            if array.ctypes.data % ALIGNMENT:
                reasons.append(f"not {ALIGNMENT}-byte aligned")
            raise ValueError(
                f"array cannot be shared with TensorFlow without a copy ({', '.join(reasons)}); "
                "allocate it with fastbatch.aligned_empty or pass copy=True"
            )
    return tf.experimental.dlpack.from_dlpack(array.__dlpack__())
