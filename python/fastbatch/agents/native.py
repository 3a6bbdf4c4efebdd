"""`NativeAgentsVectorEnv`: a native multi-agent env (C++, ABI version 6: ``Spread-v0``, or a
plugin's env whose spec declares ``Agents(n)``) as one vector env whose batch axis is every
(env, agent) pair, stepped by the C++ pool in threads.

The pool writes one row per agent, env-major (row ``env * num_agents + k`` is agent ``k`` of
env ``env``), straight into its aligned result buffers: observations, rewards and flags are
handed out as numpy views with no copy, as `fastbatch.make` hands out a single-agent batch. The
rows follow the rules of `AgentsVectorEnv` (docs/multi-agent.md), so the same code trains on
both: ``info["active"]``, gone agents' rows zeroed until their env resets, an env's episode
ending when all its agents are done, the three autoreset modes, per-row ``final_obs`` and the
per-row episode statistics of `AgentEpisodes`.

Async mode (``batch_size`` < ``num_parallel_envs``) works on whole envs, as
`fastbatch.make`'s: ``send(actions, env_ids)`` steps the envs ``env_ids`` (their agent rows of
actions, env-major), ``recv()`` returns the rows of the first ``batch_size`` envs to finish, in
env id order, with ``info["env_id"]`` (one id per env) and ``step`` is a send to the envs of the
last recv and a recv. No ``frame_stack`` yet (`fastbatch.make_agents` refuses it, saying so).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from fastbatch import _core
from fastbatch._args import (
    MODE_CODES,
    parse_autoreset_mode,
    pool_time_limit,
    positive_int,
    seed_list,
    worker_count,
)
from fastbatch._base import NO_IDLE_ENVS, NO_IDS, BatchVectorEnv
from fastbatch.agents.episodes import AgentEpisodes
from fastbatch.agents.rows import checked_actions, final_obs_rows
from fastbatch.agents.spec import AgentSpec
from fastbatch.errors import AsyncStateError, EnvError, PluginError
from fastbatch.registry import RegisteredEnv, spec_from_dict

__all__ = ["NativeAgentsVectorEnv"]


class NativeAgentsVectorEnv(BatchVectorEnv):
    """``num_parallel_envs`` native multi-agent envs as ``num_envs = num_parallel_envs *
    num_agents`` batch rows, by the row rules of `AgentsVectorEnv` (docs/multi-agent.md), stepped
    by the C++ pool with no copy. Build it with `fastbatch.make_agents`.

    It keeps `fastbatch.make`'s env contract (`fastbatch._base.BatchVectorEnv`): the call rules,
    fork and pickling, DISABLED autoreset, sync ``send``/``recv``, with envs (not rows) as the
    unit of reset masks, seeds, env ids and ``batch_size``.

    Agents are named ``"agent_0"``, ``"agent_1"``, ... (`possible_agents`).

    Args:
        entry: The registry entry of the env (`fastbatch.make_agents` resolves the id to it).
        num_envs: Envs (not rows) in the batch: ``num_parallel_envs``.
        num_workers: Threads stepping the batch (default: the cores, at most ``num_envs``).
        seed: Env ``i`` gets ``seed + i`` (a list: one seed per env).
        autoreset_mode: gymnasium's ``AutoresetMode`` or its name, e.g. ``"same_step"``.
        max_episode_steps: The time limit, which truncates every agent still in (default: the
            env's; 0: none).
        stats_key: The info key of each agent's finished episodes (None: none).
        batch_size: Envs (not rows) a `recv` returns; below ``num_parallel_envs`` it is async
            mode, on whole envs: ``send(actions, env_ids)`` takes their agent rows of actions
            (env-major) and `recv` returns the rows of the first ``batch_size`` envs to finish,
            in env id order, with ``info["env_id"]`` (one id per env).
        **env_kwargs: The env's own params.

    Raises:
        TypeError: A non-integer count, or a param of the wrong type or unknown.
        ValueError: A count below 1, ``batch_size`` above ``num_envs``, an unknown mode, a
            param out of range, a bad seed, or an env refusing its params.
        EnvError: An env's constructor raised (PluginError: its spec breaks the ABI).
    """

    backend = "native"
    multi_agent = True
    _max_seed = None  # numpy's SeedSequence takes seeds of any size

    def __init__(
        self,
        entry: RegisteredEnv,
        num_envs: int,
        *,
        num_workers: int | None = None,
        seed: int | list[int | None] | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        max_episode_steps: int | None = None,
        stats_key: str | None = None,
        batch_size: int | None = None,
        **env_kwargs: Any,
    ) -> None:
        count = positive_int("num_envs", num_envs)
        batch = count if batch_size is None else positive_int("batch_size", batch_size)
        if batch > count:
            raise ValueError(f"batch_size must be at most num_envs={count}, got {batch}")
        mode = parse_autoreset_mode(autoreset_mode)
        limit = pool_time_limit(entry.spec.id, max_episode_steps, entry.time_limit)
        params = entry.spec.encode_params(env_kwargs)
        seeds = None if seed is None else seed_list(seed, count, self._max_seed)
        try:
            self._pool = _core._VectorPool(
                entry.env_type,
                count,
                worker_count(num_workers, None, count),
                MODE_CODES[mode],
                limit,
                params,
                batch,
            )
        except (EnvError, PluginError, ValueError) as exc:  # the env's MakeSpec or constructor
            raise type(exc)(f"{entry.spec.id}: {exc}") from None
        spec = spec_from_dict(self._pool.spec, entry.spec.id)
        agents = self._pool.num_agents
        self._setup(
            count,
            batch,
            mode,
            spec.observation_space,
            spec.action_space,
            seed=seeds,
            rows_per_env=agents,
        )
        self.env_id = spec.id
        """The native env id."""
        self.num_parallel_envs = count
        """Envs in the batch (``num_envs`` counts rows: ``num_parallel_envs * num_agents``)."""
        self.num_agents = agents
        """Agents of every env: rows per env."""
        self.possible_agents = tuple(f"agent_{k}" for k in range(agents))
        """``("agent_0", "agent_1", ...)``, in row order within each env."""
        self.agent_spec = AgentSpec(
            possible_agents=self.possible_agents,
            agent_observation_space=spec.observation_space,
            observation_space=spec.observation_space,
            action_space=spec.action_space,
            mask_source=None,
            mask_shape=(),
            metadata={},
            render_mode=None,
        )
        """The agents and their spaces, as `AgentsVectorEnv` gives them."""
        own = spec.max_episode_steps
        self.time_limit: int | None = own if limit < 0 else (limit or None)
        """The time limit the pool applies, in steps (None: none)."""
        self._stats_key = stats_key
        self._mode = mode
        self._obs_shape = (self.num_envs, *spec.observation_space.shape)
        self._act_shape = (self.num_envs, *spec.action_space.shape)
        self._episodes = AgentEpisodes(self.num_envs, agents, stats_key)
        self._ended = np.zeros(count, np.bool_)  # envs whose episode ended in their last step
        # Async mode: each row's latest info["active"] (a reset cannot read the pool's books of
        # envs in flight); sync mode reads the pool's.
        self._active = np.ones(self.num_envs, np.bool_)
        self._agent_rows = np.arange(agents, dtype=np.int64)
        self._idle_ids = self._all_ids  # async: the envs the next send() without env_ids steps
        if seeds is not None:
            self._pool.seed(seeds)

    @property
    def num_workers(self) -> int:
        """Threads stepping the batch at most (the calling thread counts as one)."""
        return self._pool.num_threads

    # ------------------------------------------------------------------ primitives
    def _reset_envs(self, seeds, mask):
        if any(s is not None for s in seeds):
            self._pool.seed(seeds)
        obs = self._pool.reset(mask)
        self._episodes.restart(mask)
        self._ended[mask if mask is not None else slice(None)] = False
        if mask is None:  # a full reset also drops every step in flight (async mode)
            self._idle_ids = self._all_ids
        if self.is_async:  # the pool's books of envs in flight are their steppers' now
            reset_rows = slice(None) if mask is None else np.repeat(mask, self.num_agents)
            self._active[reset_rows] = True
            active = self._active.copy()
        else:
            active = self._pool.agent_active()
        return obs, {"active": active}

    def _step_envs(self, actions):
        obs, reward, terminated, truncated, ended = self._pool.step(
            self._checked(actions, self.num_parallel_envs)
        )
        return self._result(obs, reward, terminated, truncated, None, ended)

    def _send_envs(self, actions, env_ids):
        ids = self._idle_ids if env_ids is None else env_ids
        if env_ids is None and len(ids) == 0:
            raise AsyncStateError(NO_IDLE_ENVS)
        if self._disabled:
            self._check_disabled_autoreset(np.asarray(ids, dtype=np.int64))
        self._pool.send(self._checked(actions, len(ids)), ids)
        if env_ids is None:
            self._idle_ids = NO_IDS

    def _recv_envs(self):
        return self._result(*self._pool.recv())

    def _send_recv_envs(self, actions):
        ids = self._idle_ids
        if len(ids) == 0:
            raise AsyncStateError(NO_IDLE_ENVS)
        return self._result(*self._pool.send_recv(self._checked(actions, len(ids)), ids))

    def _envs_ended(self, result: tuple) -> np.ndarray:
        ids = result[4].get("env_id")
        return self._ended.copy() if ids is None else self._ended[ids]

    def _close_envs(self):
        self._pool.close()

    def _abandon_envs(self):
        self._pool._abandon()  # the pool's threads live in the parent: never join them here

    # ------------------------------------------------------------------ internals
    def _checked(self, actions: Any, envs: int) -> np.ndarray:
        shape = (envs * self.num_agents, *self._act_shape[1:])
        return checked_actions(actions, shape, envs, self.num_agents)

    def _result(self, obs, reward, terminated, truncated, ids, ended) -> tuple:
        """The step results of every env (``ids`` None: a sync step) or of the envs ``ids`` (a
        recv), with their info: ``active``, SAME_STEP's ``final_obs``, episode statistics."""
        agents = self.num_agents
        envs = self.num_parallel_envs if ids is None else len(ids)
        rows = None if ids is None else (ids[:, None] * agents + self._agent_rows).ravel()
        active = self._pool.agent_active()
        done = terminated | truncated
        info: dict[str, Any] = {}
        env_ended = self._pool.episode_stats()[0] if ended else np.zeros(envs, np.bool_)
        if self._mode == AutoresetMode.SAME_STEP:
            finals = {}
            if ended:
                final = self._pool.final_obs().reshape(envs, agents, *self._obs_shape[1:])
                finals = {int(i): final[i] for i in np.flatnonzero(env_ended)}
            final_rows = final_obs_rows(obs, finals, done, agents)
            if final_rows is not None:
                info["final_obs"], info["_final_obs"] = final_rows
        info["active"] = active
        was_ended = self._ended if ids is None else self._ended[ids]
        reset_rows = None
        if self._mode == AutoresetMode.NEXT_STEP and was_ended.any():
            reset_rows = np.repeat(was_ended, agents)
        if ids is None:
            self._ended = env_ended
        else:
            self._ended[ids] = env_ended
            self._active[rows] = active
            self._idle_ids = ids
            info["env_id"] = ids
        info.update(self._episodes.step(reward, active, done, reset_rows, rows))
        return obs, reward, terminated, truncated, info

    def __repr__(self) -> str:
        return (
            f"NativeAgentsVectorEnv({self.env_id}, num_parallel_envs={self.num_parallel_envs}, "
            f"num_agents={self.num_agents})"
        )
