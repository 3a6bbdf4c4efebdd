"""Exceptions raised by fastbatch."""

from __future__ import annotations

from fastbatch._core import EnvError

__all__ = ["EnvError", "UnknownEnvError", "ClosedEnvError"]

EnvError.__doc__ = (
    "An environment raised an error while resetting or stepping. `env_index` names the env "
    "(None when no single env is to blame); the message is the env's own. The vector env stays "
    "usable after `reset()`."
)


class UnknownEnvError(ValueError):
    """No env is registered under the requested id."""


class ClosedEnvError(RuntimeError):
    """The vector env was used after `close()`."""
