"""The native backend: a batch of C++ envs stepped by the C++ worker pool (`_core._VectorPool`)."""

from __future__ import annotations

import atexit
import dataclasses
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode

from fastbatch import _core
from fastbatch._args import (
    MODE_CODES,
    blocking_threads,
    frame_stack_size,
    parse_autoreset_mode,
    pool_time_limit,
    positive_int,
    seed_list,
    worker_count,
)
from fastbatch._base import NO_IDLE_ENVS, NO_IDS, BatchVectorEnv
from fastbatch._infos import add_info, episode_info, numeric_info
from fastbatch.errors import AsyncStateError, EnvError, PluginError
from fastbatch.native.attrs import NativeAttributes, check_render_mode, render_metadata
from fastbatch.registry import RegisteredEnv, spec_from_dict

__all__ = ["NativeVectorEnv", "RolloutBinding"]


# Envs still open at interpreter exit are closed before Python's finalization starts: once it
# has, a pool thread that takes the GIL (a MuJoCo timer or callback set from Python, while
# steps are in flight) is ended by Python in the middle of the step, and the process crashed.
_OPEN: weakref.WeakSet[NativeVectorEnv] = weakref.WeakSet()


@atexit.register
def _close_open_envs() -> None:
    for env in list(_OPEN):
        try:
            env.close()
        except Exception:  # exiting: close the others regardless
            pass


@dataclass(frozen=True)
class RolloutBinding:
    """How compiled code (the TensorFlow rollout op) steps a native env with no Python involved.

    ``step_fn`` is the address of ``int32_t step(void* context, int64_t t, const void* actions,
    void* next_obs, bool* done)``: one batch step written into slot ``t`` of the rollout storage
    (the new observations into ``obs[t + 1]`` and, copied raw in the storage dtype, into
    ``next_obs`` unless it is NULL; each env's done flag into ``done``); it returns 0, or -1
    with the message available from ``error_fn`` (``const char* error(void* context)``).
    ``context`` stays valid until the env is closed or binds other storage; the storage arrays
    are kept alive by the env meanwhile. Calls must not overlap with any other call on the env.
    """

    context: int
    """The address of the bound storage's context, the first argument of both functions."""
    step_fn: int
    """The address of the C step function (above)."""
    error_fn: int
    """The address of the C function returning the last error's message."""
    episodes: Callable[[], tuple[np.ndarray, np.ndarray]]
    """Returns and lengths of the episodes that ended through ``step_fn`` since the last call."""


class NativeVectorEnv(BatchVectorEnv):
    """A batch of `num_envs` native (C++) envs stepped together, as a gymnasium `VectorEnv`.

    Build it with :func:`fastbatch.make`. Observations, rewards (float32) and flags are returned
    as numpy views of 64-byte-aligned buffers owned by the env; an array you hold is never
    written again (buffers are recycled only once every array of a step has been dropped).

    Threading: one thread at a time may call an env; a concurrent call raises ``RuntimeError``,
    as does every call in a process forked from the one that made the env (see `close`). Every
    method but `close` raises `fastbatch.ClosedEnvError` once the env is closed.

    Args:
        entry: The registry entry of the env (`fastbatch.make` resolves the id to it).
        num_envs: Envs in the batch.
        num_workers: Threads stepping the batch (default: the cores, at most ``num_envs``).
        num_threads: Deprecated name of ``num_workers``.
        seed: Env ``i`` gets ``seed + i`` (a list: one seed per env); None: unseeded.
        autoreset_mode: gymnasium's ``AutoresetMode`` or its name, e.g. ``"same_step"``.
        max_episode_steps: The time limit in steps (0: none; default: see `time_limit`).
        stats_key: The info key of finished episodes' statistics (None: none reported).
        batch_size: Envs a `recv` returns; below ``num_envs`` it is async mode.
        render_mode: None or ``"rgb_array"`` (an env that renders).
        frame_stack: ``k > 1`` keeps each env's last ``k`` observations in the pool, as
            gymnasium's ``FrameStackObservation(env, k)`` would: observations (``final_obs``
            too) have the shape ``(k, *shape)``, oldest first, and an episode's first
            observation fills all ``k``. None, 0 or 1: no stacking.
        **kwargs: The env's own params (`NativeEnvSpec.params`).

    Raises:
        TypeError: A wrong type (of ``entry``, a count, a param, ``stats_key``), or both
            ``num_workers`` and ``num_threads``.
        ValueError: A count below 1 or ``batch_size`` above ``num_envs``; an unknown
            ``autoreset_mode``, param value, seed or render mode; an env refusing its params.
        ImportError: ``render_mode`` given and gymnasium's renderer of the id cannot load.
        EnvError: An env's constructor raised (PluginError: its spec breaks the ABI).
    """

    _max_seed = None  # numpy's SeedSequence takes seeds of any size
    _gym_spec: gymnasium.envs.registration.EnvSpec | None = None
    backend = "native"

    def __init__(
        self,
        entry: RegisteredEnv,
        num_envs: int = 1,
        *,
        num_workers: int | None = None,
        num_threads: int | None = None,
        seed: int | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        max_episode_steps: int | None = None,
        stats_key: str | None = None,
        batch_size: int | None = None,
        render_mode: str | None = None,
        frame_stack: int | None = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(entry, RegisteredEnv):  # ids are resolved by fastbatch.api, once
            raise TypeError(
                f"NativeVectorEnv is built from a registry entry; make native envs with "
                f"fastbatch.make(env_id, num_envs, ...), got {type(entry).__name__}"
            )
        env_type, spec = entry.env_type, entry.spec
        check_render_mode(spec, render_mode)
        num_envs = positive_int("num_envs", num_envs)
        batch_size = num_envs if batch_size is None else positive_int("batch_size", batch_size)
        if batch_size > num_envs:
            raise ValueError(f"batch_size must be at most num_envs={num_envs}, got {batch_size}")
        workers = worker_count(num_workers, num_threads, num_envs)
        mode = parse_autoreset_mode(autoreset_mode)
        max_episode_steps = pool_time_limit(spec.id, max_episode_steps, entry.time_limit)
        if stats_key is not None and not isinstance(stats_key, str):
            raise TypeError(f"stats_key must be a string or None, got {stats_key!r}")
        frames = frame_stack_size(frame_stack)
        params = spec.encode_params(kwargs)
        seeds = None if seed is None else seed_list(seed, num_envs, self._max_seed)

        self._spec = spec
        self._stats_key = stats_key
        made_with = {name: kwargs.get(name, default) for name, default in spec.params.items()}
        self._attrs = NativeAttributes(self, made_with, render_mode)
        try:
            self._pool = _core._VectorPool(
                env_type,
                num_envs,
                workers,
                MODE_CODES[mode],
                int(max_episode_steps),
                params,
                batch_size,
                blocking_threads(workers, num_workers is None and num_threads is None),
                frame_stack=frames,
            )
        except (EnvError, PluginError, ValueError) as exc:  # the env's MakeSpec or constructor
            raise type(exc)(f"{spec.id}: {exc}") from None
        _OPEN.add(self)
        # The envs' own spec: spaces and time limit may depend on the params they were made with.
        self._env_spec = spec_from_dict(self._pool.spec, spec.id, spec.renderer)
        # The limit the pool applies (None: none): the one given or registered, else the envs' own.
        own = self._env_spec.max_episode_steps
        self._time_limit = own if max_episode_steps < 0 else (int(max_episode_steps) or None)
        self._setup(
            num_envs,
            batch_size,
            mode,
            self._env_spec.observation_space,
            self._env_spec.action_space,
            seed=seeds,
        )
        self._idle_ids = self._all_ids  # async: the envs the next send() without env_ids steps
        self._same_step = mode == AutoresetMode.SAME_STEP
        # Whether ended episodes put anything in info (else their statistics are not copied).
        self._episode_rows = stats_key is not None or self._same_step
        self._info_layout = self._env_spec.infos  # numeric infos (contract v3), name -> size
        if seeds is not None:
            self._pool.seed(seeds)
        self.render_mode = render_mode
        self._attrs.metadata = render_metadata(self._env_spec)  # the frame rate of these params
        self.metadata.update(self._attrs.metadata)

    # ------------------------------------------------------------------ primitives
    def _reset_envs(self, seeds, mask):
        if any(s is not None for s in seeds):
            self._pool.seed(seeds)
        obs = self._pool.reset(mask)
        if mask is None:  # a full reset also drops every step in flight (async mode)
            self._idle_ids = self._all_ids
        if not self._info_layout:
            return obs, {}
        values = self._pool.infos("reset")
        if mask is not None:
            values[~np.asarray(mask, dtype=bool)] = np.nan  # rows not reset report nothing
        return obs, numeric_info({}, values, self._info_layout)

    def _step_envs(self, actions):
        obs, reward, terminated, truncated, ended = self._pool.step(actions)
        return obs, reward, terminated, truncated, self._step_info(ended)

    def _send_envs(self, actions, env_ids):
        ids = self._idle_ids if env_ids is None else env_ids
        if env_ids is None and len(ids) == 0:
            raise AsyncStateError(NO_IDLE_ENVS)
        if self._disabled:
            self._check_disabled_autoreset(np.asarray(ids, dtype=np.int64))
        self._pool.send(actions, ids)
        if env_ids is None:
            self._idle_ids = NO_IDS

    def _recv_envs(self):
        return self._recv_result(*self._pool.recv())

    def _send_recv_envs(self, actions):
        # One call into the pool: if it raises anything but an EnvError, nothing was sent.
        if len(self._idle_ids) == 0:
            raise AsyncStateError(NO_IDLE_ENVS)
        return self._recv_result(*self._pool.send_recv(actions, self._idle_ids))

    def _recv_result(self, obs, reward, terminated, truncated, ids, ended):
        self._idle_ids = ids
        info = self._step_info(ended)
        info["env_id"] = ids
        return obs, reward, terminated, truncated, info

    def _step_info(self, ended: int) -> dict[str, Any]:
        """The info of the last step or recv: the statistics of the episodes that ended (when
        there are any to report) and the env's numeric infos."""
        info: dict[str, Any] = self._episode_info() if ended and self._episode_rows else {}
        if self._info_layout:
            numeric_info(info, self._pool.infos(), self._info_layout)
        return info

    def _close_envs(self):
        self._attrs.close()
        self._pool.close()

    def _abandon_envs(self):
        self._pool._abandon()  # the pool's threads live in the parent: never join them here

    # ------------------------------------------------------------------ fastbatch extras
    def step_into(
        self,
        actions: Any,
        obs: np.ndarray,
        reward: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
    ) -> dict[str, Any]:
        """Steps every env, writing results straight into the caller's arrays; returns ``info``.

        Each array must be C-contiguous, writeable, 64-byte aligned and have the exact dtype
        and shape of :meth:`step`'s results (for example slot ``t`` of a rollout made with
        :func:`fastbatch.aligned_empty`). Nothing else is allocated. Sync mode only.

        Args:
            actions: One action per env, ``[num_envs, *action_shape]``.
            obs: Receives the observations, ``[num_envs, *obs_shape]`` in their dtype.
            reward: Receives the rewards, ``[num_envs]`` float32.
            terminated: Receives the terminated flags, ``[num_envs]`` bool.
            truncated: Receives the truncated flags, ``[num_envs]`` bool.

        Returns:
            The step's ``info`` dict, as `step` gives it.

        Raises:
            RuntimeError: Before the first `reset` or after an env error.
            AsyncStateError: The env is in async mode (``batch_size < num_envs``).
            TypeError: An array of another dtype, or actions of the wrong kind.
            ValueError: An array of another shape or layout, or unaligned; bad actions (as
                `step`); DISABLED mode: an ended env was not reset.
            EnvError: An env raised while stepping.
        """
        self._check_stepable()
        if self._disabled:
            self._check_disabled_autoreset(None)
        ended = self._pool.step_into(actions, obs, reward, terminated, truncated)
        if self._disabled:
            np.logical_or(terminated, truncated, out=self._needs_reset)
        return self._step_info(ended)

    def rollout_binding(
        self,
        obs: np.ndarray,
        reward: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
        final_obs: np.ndarray,
    ) -> RolloutBinding:
        """Binds rollout storage for compiled stepping (see :class:`RolloutBinding`).

        The storage: C-contiguous, writeable arrays. ``step_fn`` copies each new row of
        observations to ``next_obs`` as stored, in the observation dtype (float32, float64,
        uint8, int32 or int64; no conversion). Binding again replaces the previous binding.

        Args:
            obs: ``[T + 1, N, *obs_shape]``, in the observation dtype.
            reward: ``[T, N]`` float32.
            terminated: ``[T, N]`` bool.
            truncated: ``[T, N]`` bool.
            final_obs: ``[T, N, *obs_shape]`` (SAME_STEP mode: the final observation of each
                episode that ended at step t).

        Returns:
            The `RolloutBinding` for compiled code.

        Raises:
            ValueError: A storage array of the wrong shape or layout (not C-contiguous and
                writeable), or a multi-agent env.
        """
        self._check_open()
        context = self._pool.rollout_context(obs, reward, terminated, truncated, final_obs)
        return RolloutBinding(
            context=context,
            step_fn=_core._rollout_step_address,
            error_fn=_core._rollout_error_address,
            episodes=self._pool.rollout_episodes,
        )

    @property
    def time_limit(self) -> int | None:
        """The time limit the pool applies, in steps (None: none): ``max_episode_steps`` given
        to make, else the one registered for the id, else the envs' own (which may depend on
        the params they were made with)."""
        return self._time_limit

    @property
    def spec(self) -> gymnasium.envs.registration.EnvSpec | None:
        """gymnasium's spec of the envs (set by `gymnasium.make_vec`), its
        ``max_episode_steps`` the limit applied (:attr:`time_limit`)."""
        return self._gym_spec

    @spec.setter
    def spec(self, value: gymnasium.envs.registration.EnvSpec | None) -> None:
        if value is not None:
            value = dataclasses.replace(value, max_episode_steps=self._time_limit)
        self._gym_spec = value

    @property
    def num_workers(self) -> int:
        """Threads stepping the batch at most (the calling thread counts as one): the configured
        ``num_workers``, clamped to ``num_envs``."""
        return self._pool.num_threads

    @property
    def active_workers(self) -> int:
        """How many threads step envs now (the calling thread counts as one). The pool times its
        batch steps (async mode: its ``recv`` cycles) and moves to the count that measures fastest,
        probing the neighbouring counts now and then: with a core taken by another process, or with
        envs too cheap to share, fewer threads can be faster than all :attr:`num_workers`. In async
        mode with the default ``num_workers``, it may also go above it, up to ``min(8 x, 64 +)`` the
        cores, while the envs' steps block (sleep, wait on I/O or another process) so that the
        process uses under 35% of the cores its threads could. Results never depend on it."""
        return self._pool.active_threads

    @property
    def num_threads(self) -> int:
        """Deprecated name of :attr:`num_workers`."""
        import warnings

        warnings.warn("num_threads is deprecated; use num_workers", DeprecationWarning, 2)
        return self.num_workers

    def get_env_state(self, index: int) -> np.ndarray:
        """The internal float64 state of env ``index`` (for tests and debugging).

        Args:
            index: The env, ``0 <= index < num_envs``.

        Returns:
            A new 1-D float64 array (classic control: gymnasium's ``env.state``).

        Raises:
            IndexError: No env ``index``.
            ValueError: The env type does not expose its state.
        """
        self._check_open()
        return self._pool.get_state(index)

    def set_env_state(self, index: int, state: np.ndarray) -> None:
        """Replaces env ``index``'s internal state, as ``env.unwrapped.state = state`` does.

        Its next step starts there. Only the env's state changes: its episode's step count
        and return go on, and the last observation is not rewritten.

        Args:
            index: The env, ``0 <= index < num_envs``.
            state: A float64 numpy array laid out as `get_env_state` returns it (gymnasium's
                ``env.state`` for classic control).

        Raises:
            IndexError: No env ``index``.
            TypeError: Not a float64 numpy array (nothing is converted).
            ValueError: Another shape than the state's.
            NotImplementedError: The env class has no ``SetState`` (names the env id).
            AsyncStateError: The env's step is in flight: ``recv()`` it first.
        """
        self._check_open()
        self._pool.set_state(index, state)

    # ------------------------------------------------------------------ gymnasium extras
    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Calls (or, when not callable, reads) ``name`` on every env: a tuple in env order.

        Native envs answer their params, spaces, ``spec``, ``metadata``, ``render_mode``,
        ``np_random_seed``, ``state`` and ``render`` (see `fastbatch.native.attrs`).

        Args:
            name: The attribute or method.
            *args: Positional arguments of a call (ignored for a value).
            **kwargs: Keyword arguments of a call (ignored for a value).

        Returns:
            One result per env, in env order.

        Raises:
            AttributeError: A name native envs do not answer (the message lists those they do).
        """
        self._check_open()
        values = [self._attrs.value(name, i) for i in range(self.num_envs)]
        return tuple(v(*args, **kwargs) if callable(v) else v for v in values)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Attribute ``name`` of every env, a tuple in env order (see :meth:`call`).

        Args:
            name: The attribute; a method is called without arguments.

        Returns:
            One value per env, in env order.

        Raises:
            AttributeError: A name native envs do not answer.
        """
        return self.call(name)

    def set_attr(self, name: str, values: Any) -> None:
        """Refused: a native env's params are fixed when it is made.

        Args:
            name: The attribute.
            values: Its value(s), never set.

        Raises:
            AttributeError: Always (for a known name, saying to make new envs with it).
        """
        self._check_open()
        self._attrs.value(name, 0)  # an unknown name raises AttributeError first
        raise AttributeError(
            f"cannot set {name!r} on native envs: their params and state are fixed when they are "
            f"made; make new envs with fastbatch.make({self._spec.id!r}, n, {name}=...)"
        )

    @property
    def np_random_seed(self) -> tuple[int, ...]:
        """Per env, the seed it was last seeded with, or (never seeded) the 128-bit entropy it
        drew, as gymnasium's ``np_random_seed``: reseeding with it replays the env's stream."""
        self._check_open()
        return tuple(self._pool.np_random_seeds())

    def render(self) -> tuple[Any, ...] | None:
        """Every env's frame (``render_mode="rgb_array"``), drawn by the env itself (an env class
        with ``Render``) or by gymnasium's renderer of the same id from the env's state.

        Returns:
            One ``[height, width, 3]`` uint8 frame per env, in env order; None without a
            render mode.
        """
        self._check_open()
        if self.render_mode is None:
            return None
        return tuple(self._attrs.render_one(i) for i in range(self.num_envs))

    # ------------------------------------------------------------------ internals
    def _episode_info(self) -> dict[str, Any]:
        done, ret, length, elapsed = self._pool.episode_stats()
        info = episode_info(done, ret, length, elapsed, self._stats_key)
        if self._same_step:
            final = self._pool.final_obs()
            for i in np.flatnonzero(done):
                info = add_info(info, {"final_obs": final[i], "final_info": {}}, int(i), len(done))
            if self._info_layout:  # the infos of the final steps, as the env reported them
                values = self._pool.infos("final")
                values[~done] = np.nan
                info["final_info"] = numeric_info({}, values, self._info_layout)
        return info

    def __repr__(self) -> str:
        return f"NativeVectorEnv({self._spec.id}, num_envs={self.num_envs})"
