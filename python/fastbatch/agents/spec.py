"""`AgentSpec`: what the agents-as-batch env needs to know of a PettingZoo ``ParallelEnv``, read
once in the caller from one env built there: the agents, their one shared pair of spaces, and
where the env keeps its action masks. Also the stacked (agents-first) spaces the adapter's
observation and action take.

Every agent must have the same observation space and the same action space (PettingZoo's
``observation_space(agent)`` / ``action_space(agent)``): heterogeneous envs are refused with an
error naming the agents of each space. An agent's observation space is an array space (Box,
Discrete, MultiDiscrete, MultiBinary), or the Dict ``{"observation": <array space>,
"action_mask": ...}`` of PettingZoo's classic envs; its action space an array space too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

__all__ = ["AgentSpec", "describe", "stacked"]

ARRAY_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)
MASK_DTYPE = np.int8  # as PettingZoo's classic envs give their masks


@dataclass(frozen=True)
class AgentSpec:
    """One ParallelEnv's agents and spaces, as the adapter (in each worker) and the vector env
    (in the caller) use them. Picklable: it travels to the workers with the env factory.

    Read from one env by the batch (``envs.agent_spec``); its fields are below.
    """

    possible_agents: tuple[Any, ...]
    """The env's ``possible_agents``, in its order: agent ``k`` of every env is batch row
    ``env * num_agents + k``."""
    agent_observation_space: spaces.Space
    """Every agent's observation space, as the env gives it (the Dict of a masked env)."""
    observation_space: spaces.Space
    """One agent's observation without its mask: one batch row of the vector env."""
    action_space: spaces.Space
    """Every agent's action space: one batch row's action."""
    mask_source: str | None
    """Where the env puts each agent's action mask: ``"obs"`` (its observation dict),
    ``"info"`` (its info dict) or None (no masks)."""
    mask_shape: tuple[int, ...]
    """One agent's mask shape (``()`` without masks)."""
    metadata: dict
    """The env's ``metadata``."""
    render_mode: str | None
    """The env's ``render_mode``."""

    @property
    def num_agents(self) -> int:
        """Agents of every env (``len(possible_agents)``)."""
        return len(self.possible_agents)


def _check_array_space(kind: str, space: Any) -> spaces.Space:
    if not isinstance(space, ARRAY_SPACES):
        raise TypeError(
            f"an agent's {kind} space must be a Box, Discrete, MultiDiscrete or MultiBinary "
            f"space{' (or a Dict of observation and action_mask)' if kind == 'observation' else ''}"
            f", got {space!r}"
        )
    return space


def _one_space(kind: str, agents: tuple, space_of: Callable[[Any], Any]) -> spaces.Space:
    """The one space every agent has, or ValueError naming the agents of each space."""
    groups: list[tuple[Any, list]] = []
    for agent in agents:
        space = space_of(agent)
        for seen, names in groups:
            if space == seen:
                names.append(agent)
                break
        else:
            groups.append((space, [agent]))
    if len(groups) > 1:
        listed = "; ".join(f"{names} have {space!r}" for space, names in groups)
        raise ValueError(
            f"every agent must have the same {kind} space (agents are rows of one batch): "
            f"{listed}. Heterogeneous agents are not supported yet; pad them to one space "
            "(e.g. supersuit's pad_observations_v0 / pad_action_space_v0) first"
        )
    return groups[0][0]


def describe(env: Any) -> AgentSpec:
    """The AgentSpec of a PettingZoo ParallelEnv. An env whose observations carry no mask is
    reset once (unseeded) to see whether its infos carry one (``info["action_mask"]``)."""
    if hasattr(env, "agent_iter") or not hasattr(env, "possible_agents"):
        raise TypeError(
            "env_fn must return a PettingZoo ParallelEnv (with possible_agents, reset and step "
            f"over dicts keyed by agent), got {type(env).__name__}; for an AEC env use its "
            "module's parallel_env() or pettingzoo.utils.conversions.aec_to_parallel"
        )
    agents = tuple(env.possible_agents)
    if not agents:
        raise ValueError("the env's possible_agents is empty: there is no agent to batch")
    obs_space = _one_space("observation", agents, env.observation_space)
    act_space = _check_array_space("action", _one_space("action", agents, env.action_space))
    mask_source, mask_shape, row_space = None, (), obs_space
    if isinstance(obs_space, spaces.Dict) and "action_mask" in obs_space.spaces:
        if set(obs_space.spaces) != {"observation", "action_mask"}:
            raise TypeError(
                "a Dict observation space must hold exactly 'observation' and 'action_mask', "
                f"got the keys {list(obs_space.spaces)}"
            )
        mask_source, mask_shape = "obs", tuple(obs_space["action_mask"].shape)
        row_space = obs_space["observation"]
    elif not isinstance(obs_space, ARRAY_SPACES):
        _check_array_space("observation", obs_space)
    else:
        _, infos = env.reset()
        masks = [info.get("action_mask") for info in infos.values() if isinstance(info, dict)]
        if infos and len(masks) == len(infos) and all(m is not None for m in masks):
            mask_source, mask_shape = "info", tuple(np.shape(masks[0]))
    return AgentSpec(
        possible_agents=agents,
        agent_observation_space=obs_space,
        observation_space=_check_array_space("observation", row_space),
        action_space=act_space,
        mask_source=mask_source,
        mask_shape=mask_shape,
        metadata=dict(getattr(env, "metadata", None) or {}),
        render_mode=getattr(env, "render_mode", None),
    )


def stacked(space: spaces.Space, count: int) -> spaces.Space:
    """`count` copies of one agent's array `space` as one space of shape ``(count, *shape)``:
    Box and MultiBinary stacked, Discrete and MultiDiscrete as a MultiDiscrete."""
    if isinstance(space, spaces.Box):
        low = np.broadcast_to(space.low, (count, *space.shape))
        high = np.broadcast_to(space.high, (count, *space.shape))
        return spaces.Box(low=low, high=high, dtype=space.dtype)
    if isinstance(space, spaces.Discrete):
        return spaces.MultiDiscrete(
            np.full(count, space.n), dtype=space.dtype, start=np.full(count, space.start)
        )
    if isinstance(space, spaces.MultiDiscrete):
        nvec = np.broadcast_to(space.nvec, (count, *space.shape))
        start = np.broadcast_to(space.start, (count, *space.shape))
        return spaces.MultiDiscrete(nvec, dtype=space.dtype, start=start)
    if isinstance(space, spaces.MultiBinary):
        return spaces.MultiBinary((count, *np.atleast_1d(space.n).tolist()))
    raise TypeError(f"cannot stack {space!r}: expected an array space")
