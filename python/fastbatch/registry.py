"""The native env registry: built-in envs (and, later, plugins) by id.

Every native id is also registered with gymnasium as ``fastbatch/<id>`` with a
``vector_entry_point``, so ``gymnasium.make_vec("fastbatch/CartPole-v1", num_envs=8,
vectorization_mode="vector_entry_point")`` builds a fastbatch vector env.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Any

import gymnasium
import numpy as np

from fastbatch import _core
from fastbatch.errors import UnknownEnvError

NAMESPACE = "fastbatch"

_DTYPE_NAMES = {"float32", "float64", "int32", "int64", "uint8"}


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

    def add(self, env_type: Any, env_id: str | None = None, defaults: dict | None = None) -> None:
        """Registers `env_type` under `env_id` (default: its spec's id), replacing any entry."""
        spec = _spec_from_type(env_type, env_id)
        if defaults:
            unknown = sorted(set(defaults) - set(spec.params))
            if unknown:
                accepted = ", ".join(spec.params) or "none"
                raise TypeError(
                    f"{spec.id} has no parameter(s) {', '.join(map(repr, unknown))}; it accepts: {accepted}"
                )
            for name, value in defaults.items():
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise TypeError(f"{spec.id} parameter {name!r} must be a number, got {value!r}")
            spec = dataclasses.replace(spec, params={**spec.params, **{k: float(v) for k, v in defaults.items()}})
        self._types[spec.id] = env_type
        self._specs[spec.id] = spec
        if not spec.id.startswith("_"):
            _register_with_gymnasium(spec)

    def resolve(self, env_id: str) -> tuple[Any, NativeEnvSpec]:
        if not isinstance(env_id, str):
            raise TypeError(f"env id must be a string, got {type(env_id).__name__}")
        name = env_id[len(NAMESPACE) + 1 :] if env_id.startswith(NAMESPACE + "/") else env_id
        if name not in self._types:
            known = ", ".join(self.ids())
            raise UnknownEnvError(
                f"no native env is registered as {env_id!r}; native ids: {known} (gymnasium ids "
                "run in worker processes with backend='process')"
            )
        return self._types[name], self._specs[name]

    def has(self, env_id: str) -> bool:
        """True if `env_id` (with or without the "fastbatch/" prefix) is a native env."""
        if not isinstance(env_id, str):
            return False
        name = env_id[len(NAMESPACE) + 1 :] if env_id.startswith(NAMESPACE + "/") else env_id
        return name in self._types

    def ids(self) -> list[str]:
        return sorted(i for i in self._types if not i.startswith("_"))


def _register_with_gymnasium(spec: NativeEnvSpec) -> None:
    from fastbatch.api import make  # late import: api imports this module

    gym_id = spec.id if "/" in spec.id else f"{NAMESPACE}/{spec.id}"
    if gym_id in gymnasium.registry:
        del gymnasium.registry[gym_id]
    gymnasium.register(
        id=gym_id,
        entry_point=None,
        vector_entry_point=functools.partial(make, spec.id),
        max_episode_steps=spec.max_episode_steps,
        reward_threshold=spec.reward_threshold,
    )


REGISTRY = _Registry()


def _register_builtins() -> None:
    for env_type in _core._builtin_env_types().values():
        REGISTRY.add(env_type)


def list_envs() -> list[str]:
    """The ids of every registered native env, sorted."""
    return REGISTRY.ids()


def spec(env_id: str) -> NativeEnvSpec:
    """The spec (spaces, time limit, reward threshold, constructor params) of a native env."""
    return REGISTRY.resolve(env_id)[1]
