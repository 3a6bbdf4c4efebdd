"""Keeps Mesa's LLVM apart from TensorFlow's, so MuJoCo frames can be drawn in a process that
runs TensorFlow.

TensorFlow's wheels (2.20 and later) load their library ``RTLD_GLOBAL``, which puts TensorFlow's
statically linked LLVM into the process's global symbols. Mesa's EGL opens its llvmpipe driver
``RTLD_GLOBAL`` too, and the driver links its own libLLVM. With TensorFlow first, the driver
binds to TensorFlow's LLVM; with Mesa first, TensorFlow binds to Mesa's; either way the process
crashes (a segfault at the first frame, or at ``import tensorflow``).

`isolate` loads ``fastbatch_gl_shim.so`` (src/cpp/gl/gl_shim.cc) ``RTLD_DEEPBIND`` before
anything loads Mesa. The shim depends on ``libEGL_mesa.so.0`` and defines ``dlopen``, so Mesa's
EGL is loaded with the shim first in its lookup scope and its ``dlopen`` calls reach the shim,
which opens Mesa's driver ``RTLD_DEEPBIND`` and without ``RTLD_GLOBAL``: the driver binds to its
own LLVM first, and puts nothing global for TensorFlow to bind to. Every renderer in the process
then benefits: fastbatch's own (fastbatch/mujoco_render.h) and gymnasium's and dm_control's,
which load EGL through PyOpenGL. Without Mesa (a GPU vendor's EGL, which has no LLVM) there is
nothing to isolate.

`fastbatch.mujoco.register` and `fastbatch.dm_control.register` call it, so it runs before
fastbatch draws a MuJoCo frame. Where drawing is then safe (isolated, or no Mesa) it also sets,
unless set: ``MUJOCO_GL=egl`` on a machine without a display, so gymnasium's and dm_control's
renderers (GLFW by default) work headless; and ``LP_NUM_THREADS=0``, so llvmpipe draws each frame
on the thread that asks for it (the pool's threads are the parallelism).
``FASTBATCH_GL_ISOLATE=0`` turns it off. A sanitizer build skips it (AddressSanitizer refuses
``RTLD_DEEPBIND``).

OSMesa instead of EGL (``MUJOCO_GL=osmesa``, set here when MUJOCO_GL is unset and the machine
has OSMesa but no EGL): fastbatch's renderer loads libOSMesa ``RTLD_DEEPBIND`` without
``RTLD_GLOBAL`` itself, and `isolate` loads ``fastbatch_osmesa_proc.so`` ``RTLD_GLOBAL`` for
MuJoCo's GL loader (src/cpp/gl/osmesa_proc.cc).
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import warnings
from pathlib import Path

from fastbatch._build_info import build_info, package_dir

__all__ = ["isolate", "state"]

_LOCK = threading.Lock()
_STATE: list[str] = []  # the outcome, once decided


def _mesa_loaded() -> bool:
    """Whether something already loaded Mesa's EGL into this process."""
    try:
        ctypes.CDLL("libEGL_mesa.so.0", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        return False
    return True


def isolate() -> str:
    """Loads Mesa's EGL so that its driver binds to its own LLVM (see the module docstring);
    returns `state`. Idempotent and thread-safe; never raises."""
    with _LOCK:
        if not _STATE:
            _STATE.append(_isolate())
        return _STATE[0]


def state() -> str:
    """What `isolate` did: "isolated", "not needed (...)", "off (...)", "too late (...)", or
    "not yet" before it ran."""
    return _STATE[0] if _STATE else "not yet"


def _isolate() -> str:
    if not sys.platform.startswith("linux"):
        return "not needed (not Linux)"
    _prepare_osmesa()
    state = _load_shim()
    if state == "isolated" or state.startswith("not needed"):
        # Only where drawing is safe: with the isolation off (a sanitizer build, or
        # FASTBATCH_GL_ISOLATE=0), MUJOCO_GL=egl would make a later `import mujoco` load Mesa
        # unisolated beside TensorFlow.
        _set_defaults()
    return state


def _set_defaults() -> None:
    # llvmpipe's own rasterizer threads (one per core by default) compete with the pool's
    # threads, which already draw one frame each: measured in bench/README.md ("DMC from
    # pixels"), fast frames at 32 envs went from 1.1k to 2.5k frames/s on 2 cores without them.
    os.environ.setdefault("LP_NUM_THREADS", "0")
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        # Headless: MuJoCo's Python renderers (gymnasium's, dm_control's) default to GLFW, which
        # needs a display; EGL needs none.
        os.environ.setdefault("MUJOCO_GL", "egl")


def _prepare_osmesa() -> None:
    """OSMesa where it is asked for (MUJOCO_GL=osmesa), or where there is no EGL but OSMesa and
    MUJOCO_GL is unset (then it sets MUJOCO_GL=osmesa): loads fastbatch_osmesa_proc.so
    RTLD_GLOBAL, the ``OSMesaGetProcAddress`` MuJoCo's GL loader looks for, which forwards to
    libOSMesa loaded apart (src/cpp/gl/osmesa_proc.cc); and loads libOSMesa RTLD_DEEPBIND first,
    before ``import mujoco`` loads it through PyOpenGL without it (which would bind it to
    TensorFlow's LLVM)."""
    import ctypes.util

    if "MUJOCO_GL" not in os.environ and ctypes.util.find_library("EGL") is None:
        if ctypes.util.find_library("OSMesa") is not None:
            os.environ["MUJOCO_GL"] = "osmesa"
    forward = Path(package_dir()) / "fastbatch_osmesa_proc.so"
    if os.environ.get("MUJOCO_GL") == "osmesa" and forward.is_file():
        ctypes.CDLL(str(forward), mode=os.RTLD_NOW | os.RTLD_GLOBAL)
        try:  # before `import mujoco` loads it (through PyOpenGL) without RTLD_DEEPBIND
            ctypes.CDLL("libOSMesa.so.8", mode=os.RTLD_NOW | os.RTLD_LOCAL | os.RTLD_DEEPBIND)
        except OSError:
            pass  # no OSMesa: the renderer says so when it draws


def _load_shim() -> str:
    if os.environ.get("FASTBATCH_GL_ISOLATE") == "0":
        return "off (FASTBATCH_GL_ISOLATE=0)"
    if build_info().get("sanitize") or "san" in os.environ.get("LD_PRELOAD", ""):
        return "off (a sanitizer runtime refuses RTLD_DEEPBIND)"
    shim = Path(package_dir()) / "fastbatch_gl_shim.so"
    if not shim.is_file():
        return "off (this build has no fastbatch_gl_shim.so)"
    if _mesa_loaded():
        warnings.warn(
            "Mesa's EGL was loaded before fastbatch could keep its LLVM apart from TensorFlow's: "
            "drawing MuJoCo frames in a process that also imports tensorflow may crash. Import "
            "fastbatch's MuJoCo envs (fastbatch.make) before anything that renders, or call "
            "fastbatch.mujoco.isolate_gl() first",
            RuntimeWarning,
            stacklevel=4,
        )
        return "too late (Mesa's EGL was already loaded)"
    try:
        ctypes.CDLL(str(shim), mode=os.RTLD_NOW | os.RTLD_LOCAL | os.RTLD_DEEPBIND)
    except OSError as exc:  # no libEGL_mesa.so.0: no Mesa, nothing to isolate
        return f"not needed (no Mesa: {exc})"
    return "isolated"
