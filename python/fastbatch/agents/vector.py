"""`AgentsVectorEnv`: PettingZoo ``ParallelEnv`` envs as one gymnasium-style vector env whose batch
axis is every (env, agent) pair, stepped by the process backend.

Each ParallelEnv is wrapped in `AgentsEnv` (adapter.py: every agent in one Dict observation of
fixed-shape arrays) and the adapters are stepped by `ProcessVectorEnv`, through its shared
memory. This class only reshapes: row ``env * num_agents + k`` is agent ``possible_agents[k]``
of env ``env`` (env-major), and every array it returns is a view of the backend's result arrays
(no copy), as fresh and as safe to keep as those (see ProcessVectorEnv).

Row rules (the full table is in docs/multi-agent.md):

- ``info["active"]`` (``[rows]`` bool): the row holds a real step of its agent (observation,
  reward, flags). An agent that ended (``terminated`` or ``truncated`` on its row) has
  ``active=False``, zeros as observation, reward 0 and False flags from the next step until its
  env resets; the actions given for it meanwhile are ignored.
- An env's episode ends when all its agents are done; then it resets as gymnasium's autoreset
  mode says: NEXT_STEP on the next step (rows: the reset observation, reward 0, no flags, active
  for the agents of the new episode), SAME_STEP at once (rows: the final step's reward, flags and
  ``active``, the new episode's observation; ``info["final_obs"]`` holds the final observation of
  every row whose flags are set, with ``info["_final_obs"]``, also for an agent that ended
  before the rest of its env), DISABLED never (``reset(options={"reset_mask": mask})`` with one
  entry per env, ``[num_parallel_envs]``).
- ``info["action_mask"]`` (``[rows, *mask_shape]`` int8) when the env gives masks.
"""

from __future__ import annotations

import functools
import importlib
import types
from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from fastbatch import api
from fastbatch._args import parse_autoreset_mode, positive_int, split_options
from fastbatch._base import BatchVectorEnv
from fastbatch.agents.adapter import AgentsEnv
from fastbatch.agents.episodes import AgentEpisodes
from fastbatch.agents.native import NativeAgentsVectorEnv
from fastbatch.agents.rows import checked_actions, final_obs_rows
from fastbatch.agents.spec import AgentSpec, describe
from fastbatch.process import ProcessVectorEnv

__all__ = ["AgentsVectorEnv", "make_agents"]


def _env_factory(env_fn: Any) -> Callable[..., Any]:
    """`env_fn` as a callable: a PettingZoo env module (e.g. ``mpe2.simple_spread_v3``) gives its
    ``parallel_env``; a string names a module (``"mpe2.simple_spread_v3"``) or a callable in one
    (``"my_pkg.envs:make_env"``), as a JSON config can."""
    if isinstance(env_fn, str):
        module_name, _, attr = env_fn.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ValueError(
                f"cannot import {module_name!r} to build the PettingZoo env {env_fn!r} ({exc}); "
                "name a module with parallel_env() ('mpe2.simple_spread_v3') or a callable "
                "('package.module:function'), and install its package"
            ) from exc
        if not attr:
            env_fn = module
        elif callable(getattr(module, attr, None)):
            return getattr(module, attr)
        else:
            raise ValueError(f"module {module_name} has no callable {attr!r} ({env_fn!r})")
    if isinstance(env_fn, types.ModuleType):
        if not callable(getattr(env_fn, "parallel_env", None)):
            raise TypeError(f"module {env_fn.__name__} has no parallel_env() to build envs with")
        return env_fn.parallel_env
    if not callable(env_fn):
        raise TypeError(
            "env_fn must be a callable returning a PettingZoo ParallelEnv (e.g. "
            f"mpe2.simple_spread_v3.parallel_env), got {type(env_fn).__name__}"
        )
    return env_fn


class AgentsVectorEnv(BatchVectorEnv):
    """``num_parallel_envs`` PettingZoo ParallelEnvs as ``num_envs = num_parallel_envs *
    num_agents`` batch rows, by the row rules of the multi-agent guide (docs/multi-agent.md:
    ``info["active"]``, gone agents' rows zeroed until their env resets, an env's episode ending
    when all its agents are done). Build it with `make_agents`.

    It keeps `fastbatch.make`'s env contract (`fastbatch._base.BatchVectorEnv`): the call rules,
    fork and pickling, DISABLED autoreset, sync ``send``/``recv``, with envs (not rows) as the
    unit of reset masks, seeds and env ids.

    ``single_observation_space`` / ``single_action_space``: one agent's (the observation without
    its mask); ``observation_space`` / ``action_space``: the batch of every row. Actions are
    ``[num_envs, *action_shape]``, rows env-major. Use it as a context manager, or ``close()``.

    Args:
        env_fn: A callable returning a PettingZoo ParallelEnv, a PettingZoo env module (its
            ``parallel_env``), or either's name (``"mpe2.simple_spread_v3"``,
            ``"pkg.mod:fn"``).
        num_envs: ParallelEnvs in the batch (``num_parallel_envs``).
        num_workers: Worker processes (blocks of envs), as for `fastbatch.ProcessVectorEnv`.
        seed: Env ``i`` gets ``seed + i`` at the first reset (a list: one seed per env).
        autoreset_mode: gymnasium's ``AutoresetMode`` or its name, e.g. ``"same_step"``.
        start_timeout: Seconds a worker may take to build its envs.
        in_parent: As for `fastbatch.ProcessVectorEnv`.
        stats_key: The info key of each agent's finished episodes (None: none).
        batch_size: None or ``num_envs``: PettingZoo envs step in sync mode.
        env_kwargs: Keyword arguments of ``env_fn``.

    Raises:
        TypeError: ``env_fn`` is not a callable, module or name, or builds no ParallelEnv; its
            agents' spaces are not array spaces.
        ValueError: A module or callable that does not import; agents with different spaces;
            no agents; ``batch_size`` other than ``num_envs``; a bad count, seed or mode.
        EnvError: An env could not be created in a worker (its own exception type too).
    """

    backend = "process"
    multi_agent = True

    def __init__(
        self,
        env_fn: Any,
        num_envs: int,
        *,
        num_workers: int | None = None,
        seed: int | list[int | None] | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        start_timeout: float = 120.0,
        in_parent: bool | None = None,
        stats_key: str | None = None,
        batch_size: int | None = None,
        env_kwargs: dict | None = None,
    ) -> None:
        env_fn = _env_factory(env_fn)
        count = positive_int("num_envs", num_envs)
        if batch_size is not None and batch_size != count:
            raise ValueError(
                f"batch_size={batch_size}: async mode is for native multi-agent envs (such as "
                "'Spread-v0'); PettingZoo envs step in sync mode (leave batch_size out)"
            )
        mode = parse_autoreset_mode(autoreset_mode)
        env_kwargs = dict(env_kwargs or {})
        probe = env_fn(**env_kwargs)  # one env in the caller, to read its agents and spaces
        try:
            spec = describe(probe)
        finally:
            probe.close()
        factory = functools.partial(AgentsEnv, env_fn, spec, env_kwargs)
        self._envs = ProcessVectorEnv(
            [factory] * count,
            num_workers=num_workers,
            seed=seed,
            autoreset_mode=mode,
            start_timeout=start_timeout,
            in_parent=in_parent,
        )
        self._setup(
            count,
            count,
            mode,
            spec.observation_space,
            spec.action_space,
            seed=seed,
            rows_per_env=spec.num_agents,
        )
        self.agent_spec: AgentSpec = spec
        """The agents and spaces read from the first env."""
        self.num_parallel_envs = count
        """ParallelEnvs in the batch (``num_envs`` counts rows: ``num_parallel_envs *
        num_agents``)."""
        self.num_agents = spec.num_agents
        """Agents of every env: rows per env."""
        self.possible_agents = spec.possible_agents
        """The env's agents, in row order within each env."""
        self.metadata = {**spec.metadata, "autoreset_mode": mode}
        self.render_mode = spec.render_mode
        self._stats_key = stats_key
        self._same_step = mode == AutoresetMode.SAME_STEP
        self._obs_shape = (self.num_envs, *spec.observation_space.shape)
        self._act_shape = (self.num_envs, *spec.action_space.shape)
        self._env_act_shape = (count, spec.num_agents, *spec.action_space.shape)
        self._mask_shape = (self.num_envs, *spec.mask_shape)
        self._episodes = AgentEpisodes(self.num_envs, spec.num_agents, stats_key)
        self._ended = np.zeros(count, np.bool_)  # envs whose episode ended in the last step
        self.time_limit: int | None = None
        """No limit of the batch's own: a PettingZoo env ends its episodes itself."""

    @property
    def num_workers(self) -> int:
        """Blocks of envs, each stepped by one worker process (or by the caller: in_parent)."""
        return self._envs.num_workers

    @property
    def worker_pids(self) -> list[int | None]:
        """The process id of each block's worker (None: stepped in the caller, or closed)."""
        return self._envs.worker_pids

    # ------------------------------------------------------------------ primitives
    def _reset_envs(self, seeds, mask):
        options = None if mask is None else {"reset_mask": mask}
        packed, _ = self._envs.reset(seed=seeds, options=options)
        self._episodes.restart(mask)
        self._ended[mask if mask is not None else slice(None)] = False
        info = {"active": packed["active"].reshape(self.num_envs)}
        if "action_mask" in packed:
            info["action_mask"] = packed["action_mask"].reshape(self._mask_shape)
        return packed["obs"].reshape(self._obs_shape), info

    def _step_envs(self, actions):
        """One step of every env with ``actions`` ``[num_envs, *action_shape]`` (one row per
        (env, agent), env-major; a gone agent's row is ignored but must still be a valid
        action): ``(obs, reward, terminated, truncated, info)`` per row (module docstring)."""
        shaped = checked_actions(actions, self._act_shape, self.num_parallel_envs, self.num_agents)
        packed, _, env_ended, _, env_info = self._envs.step(shaped.reshape(self._env_act_shape))
        rows = self.num_envs
        reward, active = packed["reward"], packed["active"]
        terminated, truncated = packed["terminated"], packed["truncated"]
        obs = packed["obs"]
        info: dict[str, Any] = {}
        if self._same_step:
            final = self._final_obs(obs, packed, env_info)
            if final is not None:
                info["final_obs"], info["_final_obs"] = final
        info["active"] = active.reshape(rows)
        if "action_mask" in packed:
            info["action_mask"] = packed["action_mask"].reshape(self._mask_shape)
        reset_rows = None
        if self.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP and self._ended.any():
            reset_rows = np.repeat(self._ended, self.num_agents)
        self._ended = np.array(env_ended, np.bool_)
        info.update(
            self._episodes.step(
                reward.reshape(rows),
                info["active"],
                (terminated | truncated).reshape(rows),
                reset_rows,
            )
        )
        return (
            obs.reshape(self._obs_shape),
            reward.reshape(rows),
            terminated.reshape(rows),
            truncated.reshape(rows),
            info,
        )

    def _final_obs(self, obs: np.ndarray, packed: dict, env_info: dict):
        """SAME_STEP: puts the final step's reward, flags and ``active`` of every env that reset
        into its rows of `packed` (which hold the new episode's), and returns (final_obs,
        _final_obs) over the rows whose flags are set, or None when no row's are."""
        ended = env_info.get("_final_obs")
        finals = {}
        if ended is not None:
            for i in np.flatnonzero(ended).tolist():
                last = env_info["final_obs"][i]
                for key in ("reward", "terminated", "truncated", "active"):
                    packed[key][i] = last[key]
                finals[i] = last["obs"]
        done = (packed["terminated"] | packed["truncated"]).reshape(-1)
        return final_obs_rows(obs.reshape(self._obs_shape), finals, done, self.num_agents)

    def _envs_ended(self, result: tuple) -> np.ndarray:
        return self._ended.copy()

    def _close_envs(self) -> None:
        self._envs.close()

    def _abandon_envs(self) -> None:
        self._envs.close()  # in a forked child it lets go of the parent's workers, untouched

    def __repr__(self) -> str:
        return (
            f"AgentsVectorEnv(num_parallel_envs={self.num_parallel_envs}, "
            f"num_agents={self.num_agents}, num_workers={self.num_workers})"
        )


def make_agents(
    env_fn: Any,
    num_envs: int,
    *,
    num_workers: int | None = None,
    seed: int | list[int | None] | None = None,
    autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
    start_timeout: float = 120.0,
    in_parent: bool | None = None,
    stats_key: str | None = None,
    batch_size: int | None = None,
    **env_kwargs: Any,
) -> AgentsVectorEnv | NativeAgentsVectorEnv:
    """``num_envs`` PettingZoo ParallelEnvs ``env_fn(**env_kwargs)`` stepped in worker processes,
    as one vector env of ``num_envs * num_agents`` rows (`AgentsVectorEnv`).

    One env is built in the caller first to read the agents and spaces (and closed).
    ``frame_stack`` is not supported yet (refused, saying so). For example,
    ``envs = fastbatch.make_agents(simple_spread_v3.parallel_env, 8, num_workers=2, seed=0, N=3)``.

    Args:
        env_fn: A callable returning a ParallelEnv (``mpe2.simple_spread_v3.parallel_env``), a
            PettingZoo env module, or either's name (``"mpe2.simple_spread_v3"``,
            ``"pkg.mod:fn"``); or the id of a native multi-agent env (``"Spread-v0"``, a
            plugin's): then it is a `NativeAgentsVectorEnv` stepped by the C++ pool
            (``num_workers`` threads), with the same rows; or a `fastbatch.api.Route`
            (``fastbatch.api.route(env, multi_agent=True, ...)``), with no other keyword
            arguments.
        num_envs: Envs (not rows) in the batch.
        num_workers: As for the process backend (``fastbatch.make(..., backend="process")``);
            threads for a native id.
        seed: Env ``i`` gets ``seed + i`` at the first reset (or ``seed[i]`` from a list), as
            in `fastbatch.make`.
        autoreset_mode: gymnasium's ``AutoresetMode`` or its name, e.g. ``"same_step"``.
        start_timeout: As for the process backend.
        in_parent: As for the process backend (PettingZoo envs only).
        stats_key: The info key of each agent's finished episodes (``"episode"``: return,
            length and time per row, as ``RecordEpisodeStatistics``), None for none.
        batch_size: Native ids only: envs a ``recv`` returns, for async mode.
        **env_kwargs: The keyword arguments of ``env_fn``; for a native id, its params, plus
            ``max_episode_steps``. ``backend`` (``"native"``, ``"process"``) is taken as
            `fastbatch.make` takes it.

    Returns:
        An `AgentsVectorEnv`, or a `NativeAgentsVectorEnv` for a native id.

    Raises:
        TypeError: Keyword arguments with a `Route`; an ``env_fn`` of no accepted kind, or one
            that builds no ParallelEnv.
        ValueError: A single-agent native id (made by `fastbatch.make`), ``frame_stack``,
            agents with different spaces, ``batch_size`` for PettingZoo envs, a module that
            does not import, or a bad count, seed or mode.
        UnknownEnvError: ``backend="native"`` with no native multi-agent env of that id.
        EnvError: An env could not be created (its own exception type too).
    """
    if isinstance(env_fn, api.Route):
        if env_kwargs:
            raise TypeError("a Route carries its keyword arguments: pass none with it")
        found = env_fn
    else:
        options = {"num_workers": num_workers, "seed": seed, "autoreset_mode": autoreset_mode}
        options.update(in_parent=in_parent, stats_key=stats_key, batch_size=batch_size)
        found = api.route(env_fn, multi_agent=True, **options, **env_kwargs)
    if found.kind == "native_agents":
        return NativeAgentsVectorEnv(found.target, num_envs, **found.options)
    if found.kind != "process_agents":
        raise ValueError(f"a {found.kind!r} route is made by fastbatch.make, not make_agents")
    options, kwargs = split_options(AgentsVectorEnv, found.env_kwargs)
    options.setdefault("start_timeout", start_timeout)
    return AgentsVectorEnv(found.target, num_envs, env_kwargs=kwargs, **options)
