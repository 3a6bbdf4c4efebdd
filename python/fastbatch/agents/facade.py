"""`ParallelFacade`: the PettingZoo parallel API (``reset``/``step`` over dicts keyed by agent)
over a batch of one env, so that PettingZoo's own ``parallel_api_test`` and code written for a
``ParallelEnv`` run on fastbatch's agents-as-batch path unchanged.

The facade owns an `AgentsVectorEnv` of one env in DISABLED autoreset mode (the parallel API
leaves resetting to the caller). Observations, rewards, flags and infos are given for the agents
whose rows are active (those that took part in the step, as PettingZoo gives them); ``agents``
are those still in the episode. Infos are empty dicts except for an env that gives its masks in
its infos (``info["action_mask"]``); a masked env's observations are PettingZoo's classic
``{"observation", "action_mask"}`` dicts again. ``reset``'s ``options`` are not passed to the
env (the batch resets take no env options).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from pettingzoo import ParallelEnv

from fastbatch.agents.native import NativeAgentsVectorEnv
from fastbatch.agents.vector import AgentsVectorEnv, make_agents

__all__ = ["ParallelFacade", "parallel_env"]


def _filler(space: spaces.Space) -> np.ndarray:
    """A valid action of `space`, sent for an agent that is gone (whose action is ignored)."""
    if isinstance(space, spaces.Discrete):
        return np.asarray(space.start, dtype=space.dtype)
    if isinstance(space, spaces.MultiDiscrete):
        return np.asarray(space.start, dtype=space.dtype)
    if isinstance(space, spaces.Box):
        return np.clip(np.zeros(space.shape), space.low, space.high).astype(space.dtype)
    return np.zeros(space.shape, dtype=space.dtype)


class ParallelFacade(ParallelEnv):
    """A PettingZoo ``ParallelEnv`` over `batch`, an `AgentsVectorEnv` (or a native
    `NativeAgentsVectorEnv`) of one env in DISABLED autoreset mode (`parallel_env` builds both).

    Observations, rewards, flags and infos are given for the agents whose rows are active (those
    that took part in the step); ``agents`` are those still in the episode. Infos are empty dicts
    except for an env that gives its masks in its infos (``info["action_mask"]``); a masked
    env's observations are PettingZoo's classic ``{"observation", "action_mask"}`` dicts again.

    Args:
        batch: The batch of one env; the facade owns it (closing the facade closes it).

    Raises:
        TypeError: ``batch`` is not a batch of agents.
        ValueError: A batch of more than one env, or not in DISABLED autoreset mode.
    """

    def __init__(self, batch: AgentsVectorEnv) -> None:
        if not isinstance(batch, (AgentsVectorEnv, NativeAgentsVectorEnv)):
            raise TypeError(
                "batch must be an AgentsVectorEnv or a NativeAgentsVectorEnv, got "
                f"{type(batch).__name__}"
            )
        if batch.num_parallel_envs != 1:
            raise ValueError(
                f"a ParallelFacade steps a batch of one env, got {batch.num_parallel_envs} envs"
            )
        if batch.metadata["autoreset_mode"] != AutoresetMode.DISABLED:
            raise ValueError(
                "a ParallelFacade needs autoreset_mode=DISABLED (the parallel API leaves resets "
                f"to the caller), got {batch.metadata['autoreset_mode']}"
            )
        self.batch = batch
        spec = batch.agent_spec
        self._spec = spec
        self.possible_agents = list(spec.possible_agents)
        self.agents: list = []
        self._episode_over = False  # every agent done: only reset() may follow
        self.metadata = spec.metadata
        self.render_mode = spec.render_mode
        self._filler = _filler(spec.action_space)
        self._index = {agent: k for k, agent in enumerate(spec.possible_agents)}

    def observation_space(self, agent: Any) -> spaces.Space:
        """The agent's observation space, as the wrapped env gives it (one object for all).

        Args:
            agent: One of ``possible_agents``.

        Raises:
            ValueError: An unknown agent.
        """
        self._check_agent(agent)
        return self._spec.agent_observation_space

    def action_space(self, agent: Any) -> spaces.Space:
        """The agent's action space (one object for every agent; the batch's rows share it).

        Args:
            agent: One of ``possible_agents``.

        Raises:
            ValueError: An unknown agent.
        """
        self._check_agent(agent)
        return self._spec.action_space

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """Starts an episode.

        Args:
            seed: Seeds the env (None: its generator runs on).
            options: Ignored (the batch resets take no env options).

        Returns:
            ``(observations, infos)``, dicts keyed by the agents of the new episode.
        """
        obs, info = self.batch.reset(seed=seed)
        active = info["active"]
        self.agents = [a for a in self.possible_agents if active[self._index[a]]]
        self._episode_over = False
        return self._dicts(obs, info, active)

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        """One step of the env with an action for each live agent.

        Args:
            actions: Agent -> action, for every agent in ``agents`` (others are ignored).

        Returns:
            ``(observations, rewards, terminations, truncations, infos)``, dicts keyed by the
            agents that took part in the step.

        Raises:
            TypeError: ``actions`` is not a dict.
            ValueError: An unknown agent, a live agent without an action, or a step after
                every agent is done (reset first).
        """
        if not isinstance(actions, dict):
            raise TypeError(f"actions must be a dict keyed by agent, got {type(actions).__name__}")
        if self._episode_over:
            raise ValueError("every agent of the episode is done: call reset() before step()")
        unknown = [a for a in actions if a not in self._index]
        if unknown:
            raise ValueError(
                f"actions for unknown agents {unknown}; agents: {self.possible_agents}"
            )
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise ValueError(f"no action for the live agents {missing}")
        rows = np.stack(
            [np.asarray(actions.get(a, self._filler)) for a in self.possible_agents]
        ).astype(self._spec.action_space.dtype, copy=False)
        obs, reward, terminated, truncated, info = self.batch.step(rows)
        active = info["active"]
        present = [a for a in self.possible_agents if active[self._index[a]]]
        index = self._index
        observations, infos = self._dicts(obs, info, active)
        rewards = {a: float(reward[index[a]]) for a in present}
        terms = {a: bool(terminated[index[a]]) for a in present}
        truncs = {a: bool(truncated[index[a]]) for a in present}
        self.agents = [a for a in present if not (terms[a] or truncs[a])]
        self._episode_over = not self.agents
        return observations, rewards, terms, truncs, infos

    def _dicts(self, obs: np.ndarray, info: dict, active: np.ndarray) -> tuple[dict, dict]:
        """(observations, infos) of the active agents, keyed by agent."""
        masks = info.get("action_mask")
        source = self._spec.mask_source
        observations, infos = {}, {}
        for agent, k in self._index.items():
            if not active[k]:
                continue
            observations[agent] = (
                {"observation": obs[k], "action_mask": masks[k]} if source == "obs" else obs[k]
            )
            infos[agent] = {"action_mask": masks[k]} if source == "info" else {}
        return observations, infos

    def _check_agent(self, agent: Any) -> None:
        if agent not in self._index:
            raise ValueError(f"unknown agent {agent!r}; agents: {self.possible_agents}")

    def close(self) -> None:
        """Closes the batch (and with it the env); closing twice is harmless."""
        self.batch.close()

    def __enter__(self) -> ParallelFacade:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def parallel_env(env_fn: Any, *, seed: int | None = None, **kwargs: Any) -> ParallelFacade:
    """A `ParallelFacade` over ``make_agents(env_fn, 1, autoreset_mode="disabled", ...)``:
    one ParallelEnv stepped in a worker process (or one native multi-agent env, for a native id)
    behind the PettingZoo parallel API.

    Args:
        env_fn: What `make_agents` takes: a ParallelEnv maker, module or name, or a native
            multi-agent id.
        seed: Env seed at the first reset (None: unseeded).
        **kwargs: Go to `make_agents` (its options, then the env's).

    Returns:
        The facade; close it (or use it as a context manager) to stop its worker.

    Raises:
        TypeError: As `make_agents`.
        ValueError: As `make_agents`.
    """
    batch = make_agents(env_fn, 1, seed=seed, autoreset_mode=AutoresetMode.DISABLED, **kwargs)
    return ParallelFacade(batch)
