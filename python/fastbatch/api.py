"""`fastbatch.make`: one entry point for native (C++) envs and Python envs in worker processes."""

from __future__ import annotations

from typing import Any

import gymnasium

from fastbatch.errors import UnknownEnvError
from fastbatch.registry import REGISTRY
from fastbatch.vector import NativeVectorEnv

__all__ = ["make"]

_PROCESS_OPTIONS = (
    "num_workers", "seed", "autoreset_mode", "stats_key", "batch_size", "start_timeout", "in_parent",
    "restart",
)


def make(env: Any, num_envs: int | None = None, *, backend: str | None = None, **kwargs: Any):
    """Makes a batch of ``num_envs`` envs as a gymnasium ``VectorEnv``.

    ``env`` is a native id (``fastbatch.list_envs()``, stepped in C++ threads), any gymnasium id,
    an env factory, or a list of factories (one per env; Python envs run in worker processes).
    ``backend``: ``"native"``, ``"process"``, or None to choose: native for native ids, the
    process backend otherwise.

    Native keyword arguments: ``num_threads`` (default: the available cores, at most
    ``num_envs``), ``seed`` (env ``i`` gets ``seed + i``), ``autoreset_mode`` (gymnasium's
    ``AutoresetMode`` or its string; default ``NEXT_STEP``), ``max_episode_steps`` (default: the
    env's; 0 disables the time limit), ``stats_key`` (info key of the episode statistics,
    default ``"episode"``; None turns them off), ``batch_size`` (async mode below ``num_envs``),
    and the env's own parameters.

    Process keyword arguments: ``num_workers`` (default: the available cores, at most
    ``num_envs``), ``seed``, ``autoreset_mode``, ``stats_key``, ``batch_size`` (whole worker
    blocks), ``start_timeout`` (seconds for workers to build their envs), ``in_parent`` (the
    calling process steps the first block itself, as the native pool's calling thread does: one
    process fewer; an env crash in that block then reaches the caller), ``restart`` (replace a
    worker process that dies, see ``ProcessVectorEnv``); everything else
    (``max_episode_steps`` included) goes to ``gymnasium.make`` for an id.
    """
    if backend not in (None, "native", "process"):
        raise ValueError(f"backend must be 'native', 'process' or None, got {backend!r}")
    if backend == "native" or (backend is None and REGISTRY.has(env)):
        return NativeVectorEnv(env, 1 if num_envs is None else num_envs, **kwargs)
    if backend is None and not isinstance(env, str) and not callable(env) and not isinstance(env, (list, tuple)):
        raise TypeError(f"env must be an env id, a factory or a list of factories, got {type(env).__name__}")
    from fastbatch.process import ProcessVectorEnv, env_factories

    if isinstance(env, str):
        name = env[len("fastbatch/") :] if env.startswith("fastbatch/") else env
        try:
            gymnasium.spec(name)
        except gymnasium.error.Error:
            raise UnknownEnvError(
                f"{env!r} is neither a native env ({', '.join(REGISTRY.ids())}) nor a gymnasium id"
            ) from None
        env = name
    options = {k: kwargs.pop(k) for k in _PROCESS_OPTIONS if k in kwargs}
    return ProcessVectorEnv(env_factories(env, num_envs, kwargs), **options)
