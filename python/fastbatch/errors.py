"""Exceptions raised by fastbatch."""

from __future__ import annotations

import gymnasium.error

from fastbatch._core import AsyncStateError, ClosedEnvError, EnvError, PluginError

__all__ = [
    "AsyncStateError",
    "ClosedEnvError",
    "EnvError",
    "PluginError",
    "UnknownEnvError",
    "WorkerDiedError",
]

EnvError.__doc__ = (
    "An environment raised an error while resetting or stepping. `env_index` names the env "
    "(None when no single env is to blame); the message is the env's own. The vector env stays "
    "usable after `reset()`."
)

AsyncStateError.__doc__ = (
    "`send()`/`recv()` were used out of order: `recv()` without a pending `send()`, an env sent "
    "again before it was received, or fewer envs in flight than `batch_size`. A subclass of RuntimeError and of gymnasium's "
    "`AlreadyPendingCallError` and `NoAsyncCallError`."
)

ClosedEnvError.__doc__ = (
    "The vector env was used after `close()`. A subclass of RuntimeError and of gymnasium's "
    "`ClosedEnvironmentError`."
)

PluginError.__doc__ = (
    "A native env plugin could not be loaded or breaks the ABI contract (missing entry symbol, "
    "another ABI version, unsupported spec). A subclass of ValueError."
)


class UnknownEnvError(ValueError, gymnasium.error.NameNotFound):
    """No env is registered under the requested id (also a gymnasium ``NameNotFound``)."""


class WorkerDiedError(EnvError):
    """A worker process of the process backend died (crash, os._exit, killed). `env_index` is
    the first env of its block. The vector env is closed when this is raised."""
