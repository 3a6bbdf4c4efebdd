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
last recv and a recv. No ``frame_stack`` yet (the pool refuses it).
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from fastbatch import _core
from fastbatch._args import (
    MODE_CODES,
    parse_autoreset_mode,
    pool_time_limit,
    positive_int,
    seed_list,
    worker_count,
)
from fastbatch._base import (
    CLOSED,
    NO_IDLE_ENVS,
    NO_IDS,
    RECV_WITHOUT_SEND,
    SEND_TWICE,
    STEP_WHILE_PENDING,
    SYNC_SEND_ALL,
)
from fastbatch.agents.episodes import AgentEpisodes
from fastbatch.agents.rows import checked_actions, final_obs_rows
from fastbatch.agents.spec import AgentSpec
from fastbatch.errors import AsyncStateError, ClosedEnvError, EnvError, PluginError
from fastbatch.registry import REGISTRY, spec_from_dict

__all__ = ["NativeAgentsVectorEnv", "is_native_agents_id"]


def is_native_agents_id(env_id: Any) -> bool:
    """Whether `env_id` names a registered native env of more than one agent."""
    return isinstance(env_id, str) and REGISTRY.has(env_id) and _agents_of(env_id) > 1


def _agents_of(env_id: str) -> int:
    return REGISTRY.resolve(env_id).spec.num_agents


class NativeAgentsVectorEnv(gymnasium.vector.VectorEnv):
    """``num_parallel_envs`` native multi-agent envs as ``num_envs = num_parallel_envs *
    num_agents`` batch rows (see the module docstring). Build it with `fastbatch.make_agents`.

    Agents are named ``"agent_0"``, ``"agent_1"``, ... (`possible_agents`). ``seed``: env ``i``
    gets ``seed + i`` (a list: one seed per env). ``max_episode_steps``: the time limit, which
    truncates every agent still in (default: the env's; 0: none). ``num_workers``: threads.
    ``batch_size``: envs (not rows) a `recv` returns; below ``num_parallel_envs`` it is async
    mode (module docstring).
    """

    backend = "native"

    def __init__(
        self,
        env_id: str,
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
        self.closed = True  # until the pool exists
        entry = REGISTRY.resolve(env_id)
        count = positive_int("num_envs", num_envs)
        batch = count if batch_size is None else positive_int("batch_size", batch_size)
        if batch > count:
            raise ValueError(f"batch_size must be at most num_envs={count}, got {batch}")
        mode = parse_autoreset_mode(autoreset_mode)
        limit = pool_time_limit(entry.spec.id, max_episode_steps, entry.time_limit)
        params = entry.spec.encode_params(env_kwargs)
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
        self.closed = False
        spec = spec_from_dict(self._pool.spec, entry.spec.id)
        agents = self._pool.num_agents
        self.env_id = spec.id
        self.num_parallel_envs = count
        self.num_agents = agents
        self.num_envs = count * agents
        self.batch_size = batch
        """Envs (each ``num_agents`` rows) a `recv` returns: ``num_parallel_envs`` in sync mode."""
        self.possible_agents = tuple(f"agent_{k}" for k in range(agents))
        self.single_observation_space = spec.observation_space
        self.single_action_space = spec.action_space
        self.observation_space = batch_space(spec.observation_space, self.num_envs)
        self.action_space = batch_space(spec.action_space, self.num_envs)
        self.metadata = {"autoreset_mode": mode}
        self.render_mode = None
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
        self._mode = mode
        self._obs_shape = (self.num_envs, *spec.observation_space.shape)
        self._act_shape = (self.num_envs, *spec.action_space.shape)
        self._episodes = AgentEpisodes(self.num_envs, agents, stats_key)
        self._ended = np.zeros(count, np.bool_)  # envs whose episode ended in their last step
        # Async mode: each row's latest info["active"] (a reset cannot read the pool's books of
        # envs in flight); sync mode reads the pool's.
        self._active = np.ones(self.num_envs, np.bool_)
        self._all_ids = np.arange(count, dtype=np.int64)
        self._agent_rows = np.arange(agents, dtype=np.int64)
        self._idle_ids = self._all_ids  # async: the envs the next send() without env_ids steps
        self._pending: np.ndarray | None = None  # sync: the actions of a send() not yet recv'd
        if seed is not None:
            self._pool.seed(seed_list(seed, count, None))
            first = seed[0] if isinstance(seed, (list, tuple)) and seed else seed
            if first is not None:  # as fastbatch.make: sample() repeats for the same seed
                self.action_space.seed(int(first))

    @property
    def stats_key(self) -> str | None:
        """The info key of finished episodes' statistics, one entry per agent row, or None."""
        return self._episodes.stats_key

    @property
    def num_workers(self) -> int:
        """Threads stepping the batch at most (the calling thread counts as one)."""
        return self._pool.num_threads

    @property
    def is_async(self) -> bool:
        """True when ``batch_size < num_parallel_envs``: `recv` returns the first envs to
        finish."""
        return self.batch_size < self.num_parallel_envs

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Resets every env (or those of ``options["reset_mask"]``, one bool per env:
        ``[num_parallel_envs]``) and returns ``(obs, {"active": ...})``. ``seed``: an int seeds
        env ``i`` with ``seed + i``, a list one seed per env. A full reset drops every step in
        flight (async mode); a masked one refuses envs in flight."""
        self._check_open()
        if seed is not None:
            self._pool.seed(seed_list(seed, self.num_parallel_envs, None))
        mask = None if options is None else options.get("reset_mask")
        if mask is not None:
            mask = np.asarray(mask)
        obs = self._pool.reset(mask)
        env_mask = None if mask is None else mask.astype(np.bool_)
        self._episodes.restart(env_mask)
        self._ended[env_mask if env_mask is not None else slice(None)] = False
        if mask is None:
            self._idle_ids = self._all_ids
            self._pending = None
        if self.is_async:  # the pool's books of envs in flight are their steppers' now
            reset_rows = slice(None) if env_mask is None else np.repeat(env_mask, self.num_agents)
            self._active[reset_rows] = True
            active = self._active.copy()
        else:
            active = self._pool.agent_active()
        return obs, {"active": active}

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Steps every env once with ``actions`` ``[num_envs, *action_shape]`` (one row per (env,
        agent), env-major; a gone agent's row is ignored but must still be a valid action). In
        async mode: `send` to the envs of the last `recv` (every env after a reset), `recv`."""
        self._check_open()
        if self.is_async:
            ids = self._idle_ids
            if len(ids) == 0:
                raise AsyncStateError(NO_IDLE_ENVS)
            return self._result(*self._pool.send_recv(self._checked(actions, len(ids)), ids))
        if self._pending is not None:
            raise AsyncStateError(STEP_WHILE_PENDING)
        obs, reward, terminated, truncated, ended = self._pool.step(
            self._checked(actions, self.num_parallel_envs)
        )
        return self._result(obs, reward, terminated, truncated, None, ended)

    def send(self, actions: Any, env_ids: Any = None) -> None:
        """Starts one step of the envs ``env_ids`` (default: those the last `recv` returned, or
        every env after `reset`) with ``actions`` ``[len(env_ids) * num_agents, *action_shape]``
        (their agent rows, env-major, in the order of ``env_ids``). In sync mode ``send`` +
        ``recv`` is ``step``."""
        self._check_open()
        if not self.is_async:
            if self._pending is not None:
                raise AsyncStateError(SEND_TWICE)
            if env_ids is not None and not np.array_equal(np.asarray(env_ids), self._all_ids):
                raise ValueError(SYNC_SEND_ALL)
            self._pending = self._checked(actions, self.num_parallel_envs)
            return
        ids = self._idle_ids if env_ids is None else env_ids
        if env_ids is None and len(ids) == 0:
            raise AsyncStateError(NO_IDLE_ENVS)
        self._pool.send(self._checked(actions, len(ids)), ids)
        if env_ids is None:
            self._idle_ids = NO_IDS

    def recv(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Waits for the first ``batch_size`` sent envs to finish and returns their agent rows
        (``[batch_size * num_agents, ...]``, env id order); ``info["env_id"]`` gives each env's
        id (``[batch_size]``) and ``info["active"]`` its rows' flags."""
        self._check_open()
        if self.is_async:
            return self._result(*self._pool.recv())
        if self._pending is None:
            raise AsyncStateError(RECV_WITHOUT_SEND)
        actions, self._pending = self._pending, None
        obs, reward, terminated, truncated, ended = self._pool.step(actions)
        result = self._result(obs, reward, terminated, truncated, None, ended)
        result[4]["env_id"] = self._all_ids
        return result

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

    def _check_open(self) -> None:
        if self.closed:
            raise ClosedEnvError(CLOSED)

    def close(self, **kwargs: Any) -> None:
        """Frees the envs and the pool's threads (twice is harmless)."""
        if getattr(self, "closed", True):
            return
        self.closed = True
        self._pool.close()

    def __enter__(self) -> NativeAgentsVectorEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"NativeAgentsVectorEnv({self.env_id}, num_parallel_envs={self.num_parallel_envs}, "
            f"num_agents={self.num_agents})"
        )
