"""Whether this machine can draw MuJoCo frames with EGL (the pixel tests skip without it)."""

from __future__ import annotations

import ctypes


def has_egl() -> bool:
    """Whether libEGL.so.1 loads (Mesa's llvmpipe on a CPU, or a GPU driver)."""
    try:
        ctypes.CDLL("libEGL.so.1")
    except OSError:
        return False
    return True
