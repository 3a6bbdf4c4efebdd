"""fastbatch: batched reinforcement-learning environments stepped in C++.

>>> import fastbatch
>>> envs = fastbatch.make("CartPole-v1", num_envs=8, seed=0)
>>> obs, info = envs.reset()

`import fastbatch` never imports TensorFlow.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastbatch import _core
from fastbatch._buffers import ALIGNMENT, aligned_empty
from fastbatch.api import backend_for, make, spec
from fastbatch.errors import (
    AsyncStateError,
    ClosedEnvError,
    EnvError,
    PluginError,
    UnknownEnvError,
    WorkerDiedError,
)
from fastbatch.native import NativeVectorEnv, RolloutBinding
from fastbatch.plugins import register_native_env
from fastbatch.registration import register_builtin_envs
from fastbatch.registry import NativeEnvSpec, list_envs

__all__ = [
    "ALIGNMENT",
    "AsyncStateError",
    "ClosedEnvError",
    "EnvError",
    "NativeEnvSpec",
    "NativeVectorEnv",
    "PluginError",
    "ProcessVectorEnv",
    "RolloutBinding",
    "UnknownEnvError",
    "WorkerDiedError",
    "aligned_empty",
    "backend_for",
    "get_cmake_dir",
    "get_include",
    "list_envs",
    "make",
    "make_agents",
    "register_native_env",
    "spec",
]


def get_include() -> str:
    """The directory holding the public C++ headers (``fastbatch/env.h``, ``fastbatch/abi.h``).

    Returns:
        Its absolute path, for a compiler's ``-I`` when building a native env plugin.
    """
    # Installed beside the extension (also in editable installs, where this file is the source).
    return str(Path(_core.__file__).parent / "include")


def get_cmake_dir() -> str:
    """The directory holding ``fastbatchConfig.cmake``, for ``find_package(fastbatch CONFIG)``.

    Returns:
        Its absolute path (pass it as ``-Dfastbatch_DIR=...`` to CMake).
    """
    return str(Path(_core.__file__).parent / "share" / "cmake" / "fastbatch")


def __getattr__(name: str) -> Any:
    # Loaded on first use, to keep `import fastbatch` light: the process backend (it imports
    # cloudpickle, subprocess, sockets) and the version (importlib.metadata takes ~30 ms).
    if name == "ProcessVectorEnv":
        from fastbatch.process import ProcessVectorEnv

        return ProcessVectorEnv
    if name == "make_agents":  # PettingZoo envs as batches of agents (also the process backend)
        from fastbatch.agents import make_agents

        return make_agents
    if name == "__version__":
        from fastbatch._compile import package_version

        return package_version()
    raise AttributeError(f"module 'fastbatch' has no attribute {name!r}")


register_builtin_envs()
