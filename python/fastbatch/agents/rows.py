"""Rules that every batch of agent rows follows, whichever backend steps it (`AgentsVectorEnv`
over PettingZoo envs, `NativeAgentsVectorEnv` over native multi-agent envs): the shape of the
actions, SAME_STEP's final observations per row, and the env-major order of the rows.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["checked_actions", "final_obs_rows"]


def checked_actions(
    actions: object, shape: tuple[int, ...], num_envs: int, num_agents: int
) -> np.ndarray:
    """`actions` as an array of `shape` (``[rows, *action_shape]``), or ValueError saying what
    the rows are."""
    shaped = np.asarray(actions)
    if shaped.shape != shape:
        raise ValueError(
            f"actions must have shape {shape}: one row per (env, agent) pair, {num_envs} envs x "
            f"{num_agents} agents, env-major; got {shaped.shape}"
        )
    return shaped


def final_obs_rows(
    obs: np.ndarray, finals: Mapping[int, np.ndarray], done: np.ndarray, num_agents: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """SAME_STEP's ``(info["final_obs"], info["_final_obs"])`` over the rows whose flags are set
    (`done`, ``[rows]``): for an env that reset in this step, its agent's row of the env's final
    observation (`finals`: env -> ``[num_agents, *obs_shape]``); for an agent that ended before
    the rest of its env, its row of `obs` (``[rows, *obs_shape]``). None when no row's flags are
    set."""
    if not done.any():
        return None
    final_obs = np.full(len(done), None, dtype=object)
    for row in np.flatnonzero(done).tolist():
        env, agent = divmod(row, num_agents)
        source = finals.get(env)
        final_obs[row] = (obs[row] if source is None else source[agent]).copy()
    return final_obs, done.copy()
