"""One native env behind gymnasium's single-env API: what ``gymnasium.make("fastbatch/<id>")``
returns for every native id (a one-env pool, stepped on the calling thread)."""

from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode

from fastbatch.native.vector import NativeVectorEnv
from fastbatch.registry import REGISTRY, RegisteredEnv

__all__ = ["NativeEnv"]


class NativeEnv(gymnasium.Env):
    """A native env as a `gymnasium.Env`: ``reset(seed=, options=)`` -> ``(obs, info)``,
    ``step(action)`` -> ``(obs, reward, terminated, truncated, info)``.

    ``params`` are the env's constructor params (as for `fastbatch.make`). The env's own time
    limit applies (for an id whose limit is the same for every make, gymnasium.make adds its
    TimeLimit wrapper with that limit; an id whose limit depends on its params is registered
    without one, so only the env's real limit applies). After an
    episode ends, call ``reset()`` before stepping again (stepping an ended episode raises
    ValueError). Envs that draw themselves (an env class with ``Render``: fastbatch-atari's, a
    plugin's) and the built-in classic-control and MuJoCo envs (gymnasium's renderer draws the
    native state) render with ``render_mode="rgb_array"``; other native envs take
    ``render_mode=None`` only.
    """

    # gymnasium.make checks a render mode against the class's modes; each env narrows its own.
    metadata: dict[str, Any] = {"render_modes": ["rgb_array"]}  # noqa: RUF012
    _gym_spec: gymnasium.envs.registration.EnvSpec | None = None

    def __init__(
        self, env_id: str | RegisteredEnv, render_mode: str | None = None, **params: Any
    ) -> None:
        # gymnasium.make hands its entry point the id: the one lookup outside fastbatch.api
        # (whose make_single hands over the entry it resolved).
        entry = env_id if isinstance(env_id, RegisteredEnv) else REGISTRY.resolve(env_id)
        self._envs = NativeVectorEnv(
            entry,
            1,
            num_workers=1,
            autoreset_mode=AutoresetMode.DISABLED,
            render_mode=render_mode,
            **params,
        )
        self.render_mode = render_mode
        self.metadata = self._envs.get_attr("metadata")[0]
        self.observation_space = self._envs.single_observation_space
        self.action_space = self._envs.single_action_space
        self._discrete = isinstance(self.action_space, gymnasium.spaces.Discrete)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Starts an episode; ``seed`` reseeds the env (None continues its random stream)."""
        super().reset(seed=seed)
        if options:
            raise ValueError(f"native envs accept no reset options, got {sorted(options)}")
        obs, info = self._envs.reset(seed=seed)
        return obs[0].copy(), _row_info(info)

    def step(self, action: Any):
        if self._discrete:
            batch = np.asarray([action])
        else:
            batch = np.asarray(action)[None]
        obs, reward, terminated, truncated, info = self._envs.step(batch)
        return (
            obs[0].copy(),
            float(reward[0]),
            bool(terminated[0]),
            bool(truncated[0]),
            _row_info(info),
        )

    @property
    def spec(self) -> gymnasium.envs.registration.EnvSpec | None:
        """gymnasium's spec of the env (set by `gymnasium.make`), its ``max_episode_steps`` the
        limit the env applies itself (a ``TimeLimit`` wrapper around it reports its own)."""
        return self._gym_spec

    @spec.setter
    def spec(self, value: gymnasium.envs.registration.EnvSpec | None) -> None:
        if value is not None:
            value = dataclasses.replace(value, max_episode_steps=self._envs.time_limit)
        self._gym_spec = value

    def render(self) -> Any:
        """The env's frame (``render_mode="rgb_array"``), or None without a render mode."""
        frames = self._envs.render()
        return None if frames is None else frames[0]

    def close(self) -> None:
        self._envs.close()

    def __repr__(self) -> str:
        return f"NativeEnv({self._envs._env_spec.id})"


def _row_info(info: dict[str, Any]) -> dict[str, Any]:
    """The single env's info from a batch of one: each numeric info the env reported."""
    return {
        key: value[0]
        for key, value in info.items()
        if not key.startswith("_") and info.get("_" + key, (False,))[0]
    }
