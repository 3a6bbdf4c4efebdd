"""fastbatch: batched reinforcement-learning environments stepped in C++.

>>> import fastbatch
>>> envs = fastbatch.make("CartPole-v1", num_envs=8, seed=0)
>>> obs, info = envs.reset()

`import fastbatch` never imports TensorFlow.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fastbatch import _core
from fastbatch.errors import (
    AsyncStateError,
    ClosedEnvError,
    EnvError,
    PluginError,
    UnknownEnvError,
    WorkerDiedError,
)
from fastbatch.plugins import register_native_env
from fastbatch.registry import NativeEnvSpec, _register_builtins, list_envs, spec
from fastbatch.api import make
from fastbatch.vector import NativeVectorEnv

__version__ = "0.1.0"

__all__ = [
    "AsyncStateError",
    "ClosedEnvError",
    "EnvError",
    "NativeEnvSpec",
    "NativeVectorEnv",
    "PluginError",
    "UnknownEnvError",
    "WorkerDiedError",
    "aligned_empty",
    "get_cmake_dir",
    "get_include",
    "list_envs",
    "make",
    "register_native_env",
    "spec",
]

ALIGNMENT = 64


def get_include() -> str:
    """The directory holding the public C++ headers (``fastbatch/env.h``, ``fastbatch/abi.h``)."""
    # Installed beside the extension (also in editable installs, where this file is the source).
    return str(Path(_core.__file__).parent / "include")


def get_cmake_dir() -> str:
    """The directory holding ``fastbatchConfig.cmake``, for ``find_package(fastbatch CONFIG)``."""
    return str(Path(_core.__file__).parent / "share" / "cmake" / "fastbatch")


def aligned_empty(shape: int | tuple[int, ...], dtype: np.typing.DTypeLike = np.float32) -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts on a 64-byte boundary."""
    dtype = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    offset = (-raw.ctypes.data) % ALIGNMENT
    return raw[offset : offset + nbytes].view(dtype).reshape(shape)


_register_builtins()
