"""Rollout storage and how one batch step reaches the env: the only PPO module that knows
fastbatch envs (through their public API).

Storage is preallocated, 64-byte aligned, in the env's observation dtype (uint8 images take a
quarter of float32's bytes) and read by TensorFlow through DLPack aliases (no copies):
``obs [T + 1, N, *shape]`` (slot 0: where the rollout starts, slot t + 1: after step t; `shape`
is the env's observation shape, of any rank: a vector, or an image such as (3, 84, 84) or
(84, 84, 4)), ``reward``, ``terminated``, ``truncated`` ``[T, N]`` and ``final_obs [T, N, *shape]``
(the env runs in SAME_STEP autoreset mode: the final observation of an episode that ended at
step t) and ``active [T, N]`` (True everywhere, except in a batch of agents, `make_agents`: the
row's agent acted in step t; rows of agents that left their env before it ended are False until
it resets, and the update leaves them out). ``Rollout.step`` hands the new observations back in that same dtype on every path: the
agent casts or scales them.

A step reaches the env in one of three ways, fastest first:
1. the rollout op (a prebuilt TensorFlow op, see ``tf_op``): native envs with float32, float64,
   uint8, int32 or int64 observations and int64 or float32 actions, bound with
   ``env.rollout_binding(...)``; no Python per step;
2. ``env.step_into`` from ``tf.numpy_function``: native envs whose observation rows fill whole
   cache lines, writing straight into the storage;
3. ``env.step`` from ``tf.numpy_function`` and a copy into the storage: any env (process backend).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

import fastbatch
from fastbatch.tf import as_tensor

__all__ = ["Rollout"]

# The observation dtypes the rollout op returns as they are (its obs_dtype attr).
_OP_OBS_DTYPES = tuple(np.dtype(t) for t in ("float32", "float64", "uint8", "int32", "int64"))


class Rollout:
    """Storage for rollouts of `steps` batch steps of `env`, and the env step inside the graph.

    ``obs_shape`` (``[N, *shape]``) and ``obs_dtype`` (the env's observation dtype, numpy's)
    describe the storage's rows and what :meth:`step` returns. ``use_op=False`` keeps the rollout
    op out (numpy_function paths only: for comparisons). Episodes that end are recorded in
    ``episode_returns``/``episode_lengths`` (in order) and, in a batch of agents, each one's
    agent (its row's index in the env, ``row % num_agents``) in ``episode_agents``."""

    def __init__(self, env, steps: int, *, use_op: bool = True):
        self.env = env
        self.steps = steps
        # Episodes reach the fallback paths through the env's own statistics.
        self._stats_key = env.stats_key
        if self._stats_key is None:
            raise ValueError(
                "PPO reads finished episodes from the env's statistics: make the env with "
                "fastbatch.make(..., stats_key='episode')"
            )
        n = env.num_envs
        space = env.single_observation_space
        shape = tuple(int(d) for d in space.shape)
        self.obs_shape = [n, *shape]
        self.obs_dtype = obs_dtype = np.dtype(space.dtype)
        self.arrays = {
            "obs": fastbatch.aligned_empty((steps + 1, n, *shape), obs_dtype),
            "reward": fastbatch.aligned_empty((steps, n), np.float32),
            "terminated": fastbatch.aligned_empty((steps, n), np.bool_),
            "truncated": fastbatch.aligned_empty((steps, n), np.bool_),
            "final_obs": fastbatch.aligned_empty((steps, n, *shape), obs_dtype),
            "active": fastbatch.aligned_empty((steps, n), np.bool_),
        }
        for array in self.arrays.values():
            array.fill(0)
        self.arrays["active"].fill(True)
        # A batch of agents (fastbatch.make_agents) has rows that can sit out steps
        # (info["active"]); the env says what it is (BatchVectorEnv.multi_agent, .backend).
        self.masked = env.multi_agent
        self.tensors = {k: as_tensor(v) for k, v in self.arrays.items()}  # aliases, no copies
        self.episode_returns: list[float] = []
        self.episode_lengths: list[int] = []
        self.episode_agents: list[int] = []  # a batch of agents only
        self.agent_names: tuple[str, ...] = tuple(env.possible_agents) if self.masked else ()
        native = env.backend == "native" and not env.multi_agent  # step_into, the rollout op
        # Rows of obs[t] are 64-byte aligned when a row of N observations is a multiple of 64
        # bytes: then the pool writes each step straight into the storage (step_into).
        row_bytes = n * int(np.prod(shape, dtype=np.int64)) * obs_dtype.itemsize
        self._direct = native and row_bytes % 64 == 0
        # The op's next_obs aliases row t + 1 of the storage when every row is 64-byte aligned
        # (TensorFlow's requirement of a tensor's data); else the op copies it.
        base = self.arrays["obs"].ctypes.data
        self._obs_address = base if row_bytes % 64 == 0 and base % 64 == 0 else 0
        self._scratch = [fastbatch.aligned_empty(n, dt) for dt in (np.float32, np.bool_, np.bool_)]
        self._op, self._binding = None, None
        act_dtype = np.dtype(env.single_action_space.dtype)
        discrete = hasattr(env.single_action_space, "n")
        op_fits = obs_dtype in _OP_OBS_DTYPES and (discrete or act_dtype == np.float32)
        if use_op and native and op_fits:
            from . import tf_op

            self._op = tf_op.load()
            if self._op is not None:
                a = self.arrays
                self._binding = env.rollout_binding(
                    a["obs"], a["reward"], a["terminated"], a["truncated"], a["final_obs"]
                )

    @property
    def uses_op(self) -> bool:
        """True when the rollout op steps the env (no Python per step)."""
        return self._binding is not None

    def start(self, seed: int) -> None:
        """Resets every env (env i gets seed + i) into slot 0."""
        obs, _ = self.env.reset(seed=seed)
        self.arrays["obs"][0] = obs

    def carry_over(self) -> None:
        """The next rollout starts where this one ended: obs[T] becomes obs[0]."""
        self.arrays["obs"][0] = self.arrays["obs"][-1]

    def step(self, t, env_action):
        """Graph side of one batch step at slot `t`: returns the new observations ``[N, *shape]``
        in the storage dtype (the values of ``obs[t + 1]``) and ``done [N]`` (terminated or
        truncated, or in a batch of agents a row that sat out the step: the new observation of
        such a row may start its next episode, so a recurrent core's state restarts there)."""
        dtype = tf.as_dtype(self.obs_dtype)
        if self._binding is not None:
            b = self._binding
            next_obs, done = self._op.fastbatch_rollout_step(
                t,
                env_action,
                step_fn=b.step_fn,
                error_fn=b.error_fn,
                context=b.context,
                obs_shape=self.obs_shape,
                obs_dtype=dtype,
                obs_address=self._obs_address,
            )
        else:
            next_obs, done = tf.numpy_function(
                self._host_step, [t, env_action], [dtype, tf.bool], stateful=True
            )
        # Neither the op nor numpy_function knows its outputs' static shapes.
        next_obs.set_shape(self.obs_shape)
        done.set_shape(self.obs_shape[:1])
        return next_obs, done

    def finish(self) -> None:
        """After a rollout: records the episodes the rollout op saw end."""
        if self._binding is not None:
            returns, lengths = self._binding.episodes()
            self.episode_returns.extend(returns.tolist())
            self.episode_lengths.extend(lengths.tolist())

    def _host_step(self, t, actions):
        """The numpy_function body: steps the env and stores slot `t`."""
        t = int(t)
        s = self.arrays
        if self._direct:
            reward, terminated, truncated = self._scratch
            info = self.env.step_into(actions, s["obs"][t + 1], reward, terminated, truncated)
        else:
            obs, reward, terminated, truncated, info = self.env.step(actions)
            s["obs"][t + 1] = obs
        s["reward"][t], s["terminated"][t], s["truncated"][t] = reward, terminated, truncated
        if self.masked:
            s["active"][t] = info["active"]
        if "final_obs" in info:
            for i in np.flatnonzero(info["_final_obs"]):
                s["final_obs"][t, i] = info["final_obs"][i]
        key = self._stats_key
        if key in info:
            done = info["_" + key]
            self.episode_returns.extend(info[key]["r"][done].tolist())
            self.episode_lengths.extend(info[key]["l"][done].tolist())
            if self.masked:
                self.episode_agents.extend((np.flatnonzero(done) % len(self.agent_names)).tolist())
        done = terminated | truncated
        if self.masked:  # a row that sat out may begin its agent's next episode at obs[t + 1]
            done = done | ~s["active"][t]
        return s["obs"][t + 1], done

    def agent_returns(self, window: int) -> dict[str, float]:
        """A batch of agents: per agent, the mean return of its episodes among the last
        ``window * num_agents`` recorded (about `window` each), as ``{name: mean}``; agents with
        none there are left out. Empty for other envs."""
        if not self.agent_names:
            return {}
        recent = window * len(self.agent_names)
        returns = np.asarray(self.episode_returns[-recent:], np.float64)
        agents = np.asarray(self.episode_agents[-recent:], np.int64)
        return {
            name: float(returns[agents == k].mean())
            for k, name in enumerate(self.agent_names)
            if (agents == k).any()
        }
