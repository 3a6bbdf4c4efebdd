"""The native env registry: built-in envs and plugins by id, with their specs.

This module only records what exists; `fastbatch.api` registers each public id with gymnasium
too (as ``fastbatch/<id>``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import gymnasium
import numpy as np

from fastbatch._args import strip_namespace
from fastbatch.errors import UnknownEnvError

__all__ = ["REGISTRY", "NativeEnvSpec", "list_envs", "spec"]


@dataclass(frozen=True)
class NativeEnvSpec:
    """What fastbatch knows about a native env type, read from its C++ spec."""

    id: str
    observation_space: gymnasium.spaces.Space
    action_space: gymnasium.spaces.Space
    max_episode_steps: int | None
    reward_threshold: float | None
    params: dict[str, float] = field(default_factory=dict)


def _space(desc: dict[str, Any]) -> gymnasium.spaces.Space:
    if desc["kind"] == "discrete":
        return gymnasium.spaces.Discrete(int(desc["n"]))
    dtype = np.dtype(desc["dtype"])
    shape = tuple(int(d) for d in desc["shape"])
    low = np.asarray(desc["low"], dtype=np.float64).reshape(shape)
    high = np.asarray(desc["high"], dtype=np.float64).reshape(shape)
    if np.issubdtype(dtype, np.floating):
        low, high = low.astype(dtype), high.astype(dtype)
    return gymnasium.spaces.Box(low=low, high=high, shape=shape, dtype=dtype)


def _spec_from_type(env_type: Any, env_id: str | None = None) -> NativeEnvSpec:
    raw = env_type.spec
    return NativeEnvSpec(
        id=env_id or raw["id"],
        observation_space=_space(raw["observation"]),
        action_space=_space(raw["action"]),
        max_episode_steps=int(raw["max_episode_steps"]) or None,
        reward_threshold=raw["reward_threshold"],
        params=dict(raw["params"]),
    )


class _Registry:
    def __init__(self) -> None:
        self._types: dict[str, Any] = {}
        self._specs: dict[str, NativeEnvSpec] = {}

    def add(
        self, env_type: Any, env_id: str | None = None, defaults: dict | None = None
    ) -> NativeEnvSpec:
        """Records `env_type` under `env_id` (default: its spec's id), replacing any entry;
        `defaults` override its declared parameter defaults. Returns the spec."""
        spec = _spec_from_type(env_type, env_id)
        if defaults:
            unknown = sorted(set(defaults) - set(spec.params))
            if unknown:
                accepted = ", ".join(spec.params) or "none"
                raise TypeError(
                    f"{spec.id} has no parameter(s) {', '.join(map(repr, unknown))}; "
                    f"it accepts: {accepted}"
                )
            for name, value in defaults.items():
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise TypeError(f"{spec.id} parameter {name!r} must be a number, got {value!r}")
            params = {**spec.params, **{k: float(v) for k, v in defaults.items()}}
            spec = dataclasses.replace(spec, params=params)
        self._types[spec.id] = env_type
        self._specs[spec.id] = spec
        return spec

    def resolve(self, env_id: str) -> tuple[Any, NativeEnvSpec]:
        """(env type, spec) of a native id, with or without the "fastbatch/" prefix."""
        if not isinstance(env_id, str):
            raise TypeError(f"env id must be a string, got {type(env_id).__name__}")
        name = strip_namespace(env_id)
        if name not in self._types:
            known = ", ".join(self.ids())
            raise UnknownEnvError(
                f"no native env is registered as {env_id!r}; native ids: {known} (gymnasium ids "
                "run in worker processes with backend='process')"
            )
        return self._types[name], self._specs[name]

    def has(self, env_id: Any) -> bool:
        """True if `env_id` (with or without the "fastbatch/" prefix) is a native env."""
        return isinstance(env_id, str) and strip_namespace(env_id) in self._types

    def ids(self) -> list[str]:
        """Public ids (those not starting with '_'), sorted."""
        return sorted(i for i in self._types if not i.startswith("_"))


REGISTRY = _Registry()


def list_envs() -> list[str]:
    """The ids of every registered native env, sorted."""
    return REGISTRY.ids()


def spec(env_id: str) -> NativeEnvSpec:
    """The spec (spaces, time limit, reward threshold, constructor params) of a native env."""
    return REGISTRY.resolve(env_id)[1]
