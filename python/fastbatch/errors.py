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
    "env_error_type",
]

EnvError.__doc__ = (
    "An environment raised an error while resetting or stepping. `env_index` names the env "
    "(None when no single env is to blame); the message is the env's own. The vector env stays "
    "usable after `reset()`."
)

AsyncStateError.__doc__ = (
    "`send()`/`recv()` were used out of order: `recv()` without a pending `send()`, an env sent "
    "again before it was received, or fewer envs in flight than `batch_size`; also a call that "
    "needs envs which are in flight (`recv()` them first), and `step_into` in async mode. A "
    "subclass of RuntimeError and of gymnasium's `AlreadyPendingCallError` and "
    "`NoAsyncCallError`."
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


# The env exception types already made EnvErrors (see env_error_type), by the env's type.
_AS_ENV_ERROR: dict[type, type] = {}


def env_error_type(kind: type[Exception]) -> type[EnvError]:
    """The exception type under which an env's error of type `kind` is raised in the caller.

    A subclass of both `kind` and EnvError, named like `kind` and made once per type, so that
    ``except ValueError`` catches an env's ValueError (as gymnasium's AsyncVectorEnv re-raises
    it) and ``except EnvError`` catches every env error. Its message is the caller's (``str()``
    gives it whatever `kind`'s own ``__str__`` does); its instances pickle.

    Args:
        kind: The exception type the env raised.

    Returns:
        The made type; `kind` itself when it is an EnvError already; EnvError when `kind`
        cannot be subclassed (a final type, a layout conflict).
    """
    if issubclass(kind, EnvError):
        return kind
    made = _AS_ENV_ERROR.get(kind)
    if made is None:
        namespace = {
            "__module__": kind.__module__,
            "__qualname__": kind.__qualname__,
            "__doc__": f"An env's {kind.__name__}, raised by fastbatch as an EnvError too.",
            "__str__": BaseException.__str__,
            "__reduce__": _reduce_env_error,
        }
        try:
            made = type(kind.__name__, (kind, EnvError), namespace)
        except TypeError:
            made = EnvError
        _AS_ENV_ERROR[kind] = made
    return made


def _reduce_env_error(error: EnvError) -> tuple:
    """Pickles an `env_error_type` instance by its env type (the made type is not importable)."""
    return _rebuild_env_error, (type(error).__bases__[0], error.args), error.__dict__


def _rebuild_env_error(kind: type[Exception], args: tuple) -> EnvError:
    return env_error_type(kind)(*args)
