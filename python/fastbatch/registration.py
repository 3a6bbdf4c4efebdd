"""Registering native envs, in fastbatch's registry and in gymnasium's: the one place that does.

Every registrar comes through `add_native_env`: the built-ins (`register_builtin_envs`, run once
by ``import fastbatch``), plugins (`fastbatch.plugins.register_native_env`) and the MuJoCo envs
(`fastbatch.mujoco.register`, through plugins). This module sits below every backend: it
imports the registry and `_core` only, and names gymnasium's entry points as strings.

What gymnasium is told: ``fastbatch/<id>`` with the env's reward threshold and, when the time
limit is the same for every make (registered with ``max_episode_steps``, or a spec that does not
depend on params), that limit. An env whose limit depends on its params is registered with no
limit: fastbatch applies the real one itself (`gymnasium.make` adds no ``TimeLimit`` cutting it
short, `gymnasium.make_vec` passes none) and reports it as ``spec.max_episode_steps``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium

from fastbatch import _core
from fastbatch._args import NAMESPACE, NEXT_STEP, time_limit
from fastbatch.errors import PluginError
from fastbatch.registry import REGISTRY, NativeEnvSpec, RegisteredEnv, spec_from_dict

__all__ = ["CLASSIC_CONTROL", "add_native_env", "gymnasium_id", "register_builtin_envs"]

# The built-ins that gymnasium's renderer of the same id draws (their state is what it reads).
CLASSIC_CONTROL = (
    "CartPole-v1",
    "Pendulum-v1",
    "Acrobot-v1",
    "MountainCar-v0",
    "MountainCarContinuous-v0",
)


_ENTRY_POINT = "fastbatch.native.single:NativeEnv"


def gymnasium_id(env_id: str) -> str:
    """The gymnasium id of a native id: ``fastbatch/<id>`` (an id with a namespace keeps it)."""
    return env_id if "/" in env_id else f"{NAMESPACE}/{env_id}"


def add_native_env(
    env_type: Any,
    env_id: str | None = None,
    defaults: dict[str, Any] | None = None,
    max_episode_steps: int | None = None,
    *,
    renderer: str | None = None,
    observation_keys: dict[str, slice] | None = None,
) -> NativeEnvSpec:
    """Registers a native env type (`_core._EnvType`) under `env_id` (default: its spec's id),
    replacing any entry of that id, with fastbatch and, unless the id starts with '_', with
    gymnasium as ``fastbatch/<id>`` (`gymnasium.make` gives a single env,
    `fastbatch.native.single.NativeEnv`; `gymnasium.make_vec` a fastbatch vector env). A
    namespaced id is its own gymnasium id; one that gymnasium has from another package (e.g.
    ale-py's ``ALE/Pong-v5``) stays that package's.

    ``defaults`` override the declared param defaults (checked as make()'s keyword arguments
    are); the registered spec is the spec for those defaults (spaces and limit included).
    ``max_episode_steps`` replaces the time limit for every make of the id (0: none).
    A multi-agent env (more than one agent per env) is not registered with gymnasium, which has
    no multi-agent API: `fastbatch.make_agents` makes it.
    ``renderer``: the gymnasium id whose renderer draws the env from its state.
    ``observation_keys``: names of parts of the flat observation row (`_observation_keys`).
    Returns the spec. Every error names the env id."""
    name = env_type.id if env_id is None else env_id
    limit = time_limit(name, max_episode_steps)
    spec = _spec(env_type, name, defaults or {}, renderer)
    if limit is not None:
        spec = dataclasses.replace(spec, max_episode_steps=limit or None)
    if observation_keys:
        spec = dataclasses.replace(spec, observation_keys=_observation_keys(spec, observation_keys))
    REGISTRY.add(RegisteredEnv(env_type, spec, limit))
    if not spec.id.startswith("_") and spec.num_agents == 1:  # gymnasium has no multi-agent env
        fixed = limit is not None or not env_type.spec_depends_on_params
        _register_with_gymnasium(spec, spec.max_episode_steps if fixed else None)
    return spec


def _observation_keys(spec: NativeEnvSpec, keys: dict[str, Any]) -> dict[str, slice]:
    """`keys` (name -> slice or (start, stop)) checked against `spec`'s flat observation."""
    shape = getattr(spec.observation_space, "shape", None)
    if shape is None or len(shape) != 1:
        raise ValueError(f"{spec.id}: observation_keys name parts of a flat Box observation")
    out = {}
    for name, part in keys.items():
        start, stop = (part.start, part.stop) if isinstance(part, slice) else part
        if not (isinstance(name, str) and isinstance(start, int) and isinstance(stop, int)):
            raise TypeError(f"{spec.id}: observation_keys must map names to slices, got {keys!r}")
        if not 0 <= start < stop <= shape[0]:
            raise ValueError(
                f"{spec.id}: observation key {name!r} = [{start}:{stop}] is not within the "
                f"observation's {shape[0]} values"
            )
        out[name] = slice(start, stop)
    return out


def register_builtin_envs() -> None:
    """Registers the envs compiled into `_core` (done once, by ``import fastbatch``)."""
    for env_id, env_type in _core._builtin_env_types().items():
        add_native_env(env_type, renderer=env_id if env_id in CLASSIC_CONTROL else None)


def _spec(env_type: Any, env_id: str, defaults: dict[str, Any], renderer: str | None):
    """The spec of `env_type` for its declared defaults overridden by `defaults`: read from one
    env made with them when the spec depends on the params."""
    spec = spec_from_dict(env_type.spec, env_id, renderer)
    if spec.frame is not None and renderer is not None:
        raise ValueError(
            f"{env_id} draws itself (its env class has Render), so it takes no renderer= (the "
            "gymnasium twin that draws envs without Render); leave renderer out"
        )
    if not defaults:
        return spec
    values = spec.encode_params(defaults)  # make()'s checks, naming the env id
    if env_type.spec_depends_on_params:
        try:
            probe = _core._VectorPool(
                env_type,
                num_envs=1,
                num_threads=1,
                autoreset_mode=NEXT_STEP,
                max_episode_steps=-1,  # the env's own
                params=values,
                batch_size=1,
                max_async_threads=1,
            )
        except (RuntimeError, ValueError) as exc:
            raise PluginError(f"{env_id}: making an env with {defaults} failed: {exc}") from None
        try:
            spec = spec_from_dict(probe.spec, env_id, renderer)
        finally:
            probe.close()
    return dataclasses.replace(spec, params={**spec.params, **defaults})


def _register_with_gymnasium(spec: NativeEnvSpec, max_episode_steps: int | None) -> None:
    gym_id = gymnasium_id(spec.id)
    if gym_id in gymnasium.registry:
        if gymnasium.registry[gym_id].entry_point != _ENTRY_POINT:
            # Another package's env of this id (a namespaced native id such as fastbatch-atari's
            # "ALE/Pong-v5" is gymnasium's id as it is): gymnasium.make keeps making that env.
            return
        del gymnasium.registry[gym_id]
    # Entry points as strings (so specs serialise and compare equal), the id as a kwarg.
    gymnasium.register(
        id=gym_id,
        entry_point=_ENTRY_POINT,
        vector_entry_point="fastbatch.api:make_vector",
        max_episode_steps=max_episode_steps,
        reward_threshold=spec.reward_threshold,
        kwargs={"env_id": spec.id},
    )
