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
    """True when `as_tensor(array)` can share the memory: C-contiguous, writeable, aligned."""
    return (
        isinstance(array, np.ndarray)
        and array.flags.c_contiguous
        and array.flags.writeable
        and array.ctypes.data % ALIGNMENT == 0
    )


def as_tensor(array: np.ndarray, *, copy: bool | None = None) -> tf.Tensor:
    """A `tf.Tensor` over `array`'s memory.

    With ``copy=None`` (default) an array that cannot be shared (not C-contiguous, read-only,
    or not 64-byte aligned) raises ``ValueError`` saying why; ``copy=True`` copies such an array
    into aligned memory first (and only then); ``copy=False`` is the same as None.

    The tensor keeps the array's memory alive. A fastbatch buffer viewed by a live tensor is
    never recycled, so the tensor never changes behind your back; the caller's own arrays
    (e.g. a rollout filled by `step_into`) are shared as they are: later writes show through.
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
