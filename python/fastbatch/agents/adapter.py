"""`AgentsEnv`: one PettingZoo ``ParallelEnv`` as a gymnasium env whose observation and action
hold every agent, so the process backend steps it as it steps any env with array spaces.

The observation is a Dict of fixed-shape arrays, agents in the order of ``possible_agents``
(``A`` agents):

- ``"obs"``: ``(A, *obs_shape)``, each agent's observation (zeros for an agent that is gone);
- ``"reward"`` ``(A,)`` float32, ``"terminated"`` / ``"truncated"`` ``(A,)`` bool: this step's;
- ``"active"`` ``(A,)`` bool: the agent took part in this step (or is in the episode the reset
  began), so its row holds a real observation, reward and flags; False from the step after it
  ended until its env resets;
- ``"action_mask"`` ``(A, *mask_shape)`` int8, only for envs that give masks (in each agent's
  observation dict or info): a gone agent's row is all ones (its action is ignored, so masked
  sampling stays well defined).

The action is ``(A, *action_shape)`` (a MultiDiscrete for Discrete agents); the actions of agents
that are not in the env (``env.agents``) are ignored. The env-level reward is the agents' sum and
the env-level episode ends (``terminated=True``, never ``truncated``) when no agent is left, so
the backend's autoreset resets the ParallelEnv when all its agents are done. Per-agent infos
other than ``action_mask`` are not carried.

Each result holds fresh arrays (the backend keeps a SAME_STEP final observation as it is).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from fastbatch.agents.spec import MASK_DTYPE, AgentSpec, stacked

__all__ = ["AgentsEnv", "adapter_spaces"]


def adapter_spaces(spec: AgentSpec) -> tuple[spaces.Dict, spaces.Space]:
    """(observation space, action space) of the adapter of an env with this spec."""
    count = spec.num_agents
    flags = spaces.Box(0, 1, (count,), dtype=np.bool_)
    fields = {
        "obs": stacked(spec.observation_space, count),
        "reward": spaces.Box(-np.inf, np.inf, (count,), dtype=np.float32),
        "terminated": flags,
        "truncated": flags,
        "active": flags,
    }
    if spec.mask_source is not None:
        fields["action_mask"] = spaces.Box(0, 1, (count, *spec.mask_shape), dtype=MASK_DTYPE)
    return spaces.Dict(fields), stacked(spec.action_space, count)


class AgentsEnv(gymnasium.Env):
    """The ParallelEnv ``env_fn(**env_kwargs)`` with every agent in one observation and one
    action (see the module docstring). Built in a worker process of the backend."""

    def __init__(self, env_fn: Callable[..., Any], spec: AgentSpec, env_kwargs: dict) -> None:
        self.par_env = env_fn(**env_kwargs)
        if tuple(self.par_env.possible_agents) != spec.possible_agents:
            raise ValueError(
                f"this env's possible_agents {list(self.par_env.possible_agents)} differ from "
                f"the first env's {list(spec.possible_agents)}: every env must have the same agents"
            )
        self.spec_ = spec
        self.observation_space, self.action_space = adapter_spaces(spec)
        self.metadata = spec.metadata
        self.render_mode = spec.render_mode
        self._index = {agent: k for k, agent in enumerate(spec.possible_agents)}
        self._obs_shape = (spec.num_agents, *spec.observation_space.shape)
        self._obs_dtype = spec.observation_space.dtype
        self._discrete = isinstance(spec.action_space, spaces.Discrete)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        obs, infos = self.par_env.reset(seed=seed, options=options)
        return self._pack(obs, {}, {}, {}, infos), {}

    def step(self, action: np.ndarray) -> tuple[dict, float, bool, bool, dict]:
        index, discrete = self._index, self._discrete
        actions = {
            agent: (action[index[agent]].item() if discrete else action[index[agent]])
            for agent in self.par_env.agents
        }
        obs, rewards, terminated, truncated, infos = self.par_env.step(actions)
        packed = self._pack(obs, rewards, terminated, truncated, infos)
        return packed, float(packed["reward"].sum()), not self.par_env.agents, False, {}

    def _pack(self, obs: dict, rewards: dict, terminated: dict, truncated: dict, infos: dict):
        """The adapter's observation from PettingZoo's per-agent dicts."""
        spec, index, count = self.spec_, self._index, self.spec_.num_agents
        out = np.zeros(self._obs_shape, self._obs_dtype)
        active = np.zeros(count, np.bool_)
        mask = None
        if spec.mask_source is not None:
            mask = np.ones((count, *spec.mask_shape), MASK_DTYPE)
        for agent, value in obs.items():
            k = index[agent]
            active[k] = True
            if spec.mask_source == "obs":
                mask[k] = value["action_mask"]
                value = value["observation"]
            out[k] = value
        if spec.mask_source == "info":
            for agent, info in infos.items():
                if agent in index and isinstance(info, dict) and "action_mask" in info:
                    mask[index[agent]] = info["action_mask"]
        reward = np.zeros(count, np.float32)
        for agent, r in rewards.items():
            reward[index[agent]] = r
        packed = {
            "obs": out,
            "reward": reward,
            "terminated": self._flags(terminated),
            "truncated": self._flags(truncated),
            "active": active,
        }
        if mask is not None:
            packed["action_mask"] = mask
        return packed

    def _flags(self, flags: dict) -> np.ndarray:
        out = np.zeros(self.spec_.num_agents, np.bool_)
        for agent, flag in flags.items():
            out[self._index[agent]] = flag
        return out

    def render(self) -> Any:
        return self.par_env.render()

    def close(self) -> None:
        self.par_env.close()
