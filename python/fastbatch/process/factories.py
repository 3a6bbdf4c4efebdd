"""Env constructors for the process backend: from an env id (``gymnasium.make`` with the env's
keyword arguments), one factory, or a list of factories (one per env)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import gymnasium

from fastbatch._args import positive_int

__all__ = ["env_factories"]


def env_factories(
    env_id_or_fns: Any, num_envs: int | None, kwargs: dict[str, Any]
) -> list[Callable]:
    """Env constructors for the process backend from an id, one factory, or a list of them."""
    if isinstance(env_id_or_fns, str):
        count = positive_int("num_envs", 1 if num_envs is None else num_envs)
        return [functools.partial(gymnasium.make, env_id_or_fns, **kwargs)] * count
    if kwargs:
        raise TypeError(f"env keyword arguments ({', '.join(kwargs)}) apply only to an env id")
    if callable(env_id_or_fns):
        count = positive_int("num_envs", 1 if num_envs is None else num_envs)
        return [env_id_or_fns] * count
    fns = list(env_id_or_fns)
    if not fns or not all(callable(f) for f in fns):
        raise TypeError("expected an env id, an env factory, or a non-empty list of env factories")
    if num_envs is not None and num_envs != len(fns):
        raise ValueError(f"num_envs={num_envs} does not match the {len(fns)} factories given")
    return fns
