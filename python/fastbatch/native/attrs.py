"""What gymnasium's ``get_attr``/``call``/``render`` reach on native envs, which live in C++.

A native env has no Python object per env, so ``NativeVectorEnv.get_attr(name)`` answers from
this table: the env's constructor params (the values it was made with), its single-env spaces,
``spec``, ``metadata``, ``render_mode``, ``np_random_seed`` and ``state`` (the env's float64
state: gymnasium's ``env.state`` for classic control, ``qpos ++ qvel`` (``state_vector()``)
for MuJoCo). Anything else raises AttributeError listing what there is; ``set_attr`` raises,
because params are fixed when the envs are made.

Rendering: an env that draws itself (ABI version 7, an env class with ``Render``:
``NativeEnvSpec.frame``; fastbatch-atari's envs, the plugin example) is drawn by the pool, env
by env. An env whose spec names a renderer instead (``NativeEnvSpec.renderer``: the built-in
classic-control and MuJoCo envs, each its own gymnasium id) renders through gymnasium's: one
gymnasium env of that id is given each native env's state and drawn.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium
import numpy as np

from fastbatch.registration import gymnasium_id
from fastbatch.registry import NativeEnvSpec

__all__ = ["NativeAttributes", "check_render_mode", "render_metadata", "renderer_class"]

RENDER_MODES = ("rgb_array",)


def render_metadata(spec: NativeEnvSpec) -> dict[str, Any]:
    """The env's ``metadata``: its render modes and, when it renders, its frame rate: the
    spec's (``spec.frame``: the env draws itself; None when it declares 0) or, for an env drawn
    by a gymnasium twin (``spec.renderer``), that renderer's."""
    if spec.frame is not None:
        fps = spec.frame[2]
        return {"render_modes": list(RENDER_MODES), "render_fps": fps if fps > 0 else None}
    if spec.renderer is None:
        return {"render_modes": []}
    try:
        creator = renderer_class(spec)
    except ImportError:  # no rendering stack (mujoco-core alone): the env steps, it cannot draw
        return {"render_modes": [], "render_fps": None}
    return {"render_modes": list(RENDER_MODES), "render_fps": creator.metadata.get("render_fps")}


def renderer_class(spec: NativeEnvSpec) -> Any:
    """The gymnasium env class that draws `spec`'s env (its ``renderer``). ImportError naming the
    id and what is missing when that class cannot be imported (gymnasium's MuJoCo renderer
    imports glfw, which mujoco-core alone does not bring)."""
    entry_point = gymnasium.spec(spec.renderer).entry_point
    try:
        return gymnasium.envs.registration.load_env_creator(entry_point)
    except ImportError as exc:
        raise ImportError(
            f"native env {spec.id} renders through gymnasium's {spec.renderer}, which cannot be "
            f"imported here ({exc}); install its rendering dependencies (for MuJoCo envs: "
            f"pip install 'gymnasium[mujoco]')"
        ) from exc


def check_render_mode(spec: NativeEnvSpec, render_mode: str | None) -> None:
    """Refuses a render mode the native env cannot honour, saying what it can."""
    if render_mode is None:
        return
    if not spec.renders:
        raise ValueError(
            f"native env {spec.id} does not render (render_mode must be None); the built-in "
            "classic-control and MuJoCo envs and fastbatch-atari's render with "
            "render_mode='rgb_array', a plugin renders when its env class has Render "
            "(fastbatch/env.h, 'Rendering') or names a gymnasium twin: "
            "register_native_env(..., renderer=<gymnasium id>)"
        )
    if render_mode not in RENDER_MODES:
        raise ValueError(
            f"native envs render with render_mode in {list(RENDER_MODES)}, got {render_mode!r}; "
            "for a window of every env's frame, tiled, wrap the rgb_array env: "
            "gymnasium.wrappers.vector.HumanRendering(fastbatch.make(id, n, "
            "render_mode='rgb_array'))"
        )
    if spec.frame is None and spec.renderer is not None:
        renderer_class(spec)  # ImportError saying what to install, at make rather than render


class NativeAttributes:
    """The per-env attributes of one `NativeVectorEnv` (see the module docstring)."""

    def __init__(self, venv: Any, params: dict[str, Any], render_mode: str | None) -> None:
        self._venv = venv
        self._params = params
        self.render_mode = render_mode
        self._renderer: gymnasium.Env | None = None
        self.metadata = render_metadata(venv._spec)

    def names(self) -> list[str]:
        fixed = ["action_space", "metadata", "np_random_seed", "observation_space"]
        return sorted([*fixed, "render", "render_mode", "spec", "state", *self._params])

    def value(self, name: str, index: int) -> Any:
        """Attribute `name` of env `index` (bound methods for callables)."""
        venv = self._venv
        if name in self._params:
            return self._params[name]
        if name == "observation_space":
            return venv.single_observation_space
        if name == "action_space":
            return venv.single_action_space
        if name == "metadata":
            return self.metadata
        if name == "render_mode":
            return self.render_mode
        if name == "spec":
            return self.spec()
        if name == "np_random_seed":
            return venv.np_random_seed[index]
        if name == "state":
            return venv.get_env_state(index)
        if name == "render":
            return lambda: self.render_one(index)
        raise AttributeError(
            f"native env {venv._spec.id} has no attribute {name!r}; native envs answer "
            f"{', '.join(self.names())} (the envs live in C++: for any other attribute use "
            "the process backend, fastbatch.make(..., backend='process'))"
        )

    def spec(self) -> gymnasium.envs.registration.EnvSpec | None:
        """The single env's gymnasium spec: ``fastbatch/<id>`` with the params it was made with
        and the time limit applied to it."""
        gym_id = gymnasium_id(self._venv._spec.id)
        if gym_id not in gymnasium.registry:
            return None
        spec = gymnasium.registry[gym_id]
        return dataclasses.replace(
            spec,
            kwargs={**spec.kwargs, **self._params},
            max_episode_steps=self._venv.time_limit,
        )

    # ------------------------------------------------------------------ rendering
    def render_one(self, index: int) -> np.ndarray | None:
        """Env `index` drawn by itself or by gymnasium's renderer (None without a render
        mode)."""
        if self.render_mode is None:
            return None
        if self._venv._env_spec.frame is not None:  # the frame of the params made with
            return self._venv._pool.render(index)
        renderer = self._renderer_env()
        state = self._venv.get_env_state(index)
        if hasattr(renderer, "set_state") and hasattr(renderer, "model"):  # MuJoCo
            nq = renderer.model.nq
            renderer.set_state(state[:nq], state[nq:])
        else:
            renderer.state = state
            if hasattr(renderer, "last_u"):  # Pendulum draws the last torque: not kept natively
                renderer.last_u = None
        return renderer.render()

    def _renderer_env(self) -> Any:
        if self._renderer is None:
            env = gymnasium.make(self._venv._spec.renderer, render_mode=self.render_mode)
            env.reset(seed=0)
            self._renderer = env
        return self._renderer.unwrapped

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
