"""`BatchVectorEnv`: the gymnasium vector contract, written once for every fastbatch backend.

The base class owns the call rules (closed, not reset, broken by an env error, async state),
reset options and masks, ``step = send + recv`` in async mode, the sync emulation of
``send``/``recv``, the DISABLED-autoreset rule and closing. A backend implements only its
primitives:

- ``_reset_envs(seeds, mask) -> (obs, info)``: reset the envs of ``mask`` (None: all) with
  per-env ``seeds`` (None entries keep a generator running); a full reset also drops every step
  in flight.
- ``_step_envs(actions) -> (obs, reward, terminated, truncated, info)``: one step of every env.
- ``_send_envs(actions, env_ids)`` / ``_recv_envs() -> (..., info)``: async mode only
  (``batch_size < num_envs``); ``env_ids`` None means the envs the last recv returned (the
  backend resolves them, then calls ``_check_disabled_autoreset(ids)`` in DISABLED mode), and
  ``_recv_envs`` puts ``info["env_id"]``. ``_send_recv_envs(actions)`` (async ``step``: a send
  to the envs of the last recv, then a recv) may be overridden to do both in one call.
- ``_close_envs()``: release everything (called once).
- ``_abandon_envs()``: in a forked child, let go of everything without touching the parent's
  threads or worker processes (called once, instead of ``_close_envs``).

A batch of agents (``fastbatch.make_agents``: each env holds ``rows_per_env`` agents, one batch
row each, env-major) follows the same rules with envs as the unit of masks, seeds, env ids and
``batch_size``, while ``num_envs`` and the arrays count rows; ``_note_ended`` asks
``_envs_ended(result)`` which envs' episodes ended (one agent's flags end only its row).

Threading: one thread at a time may call an env.

Fork: an env belongs to the process that made it (its worker threads or worker processes serve
that process only). In a child forked from it (``multiprocessing``'s fork start method, a
pre-forking server, a DataLoader worker) every call raises ``RuntimeError`` naming fork, while
``close()`` and garbage collection abandon the env there: nothing is joined, signalled or sent,
and the parent's env keeps working.

Pickling: an env owns threads, processes and shared buffers, so it cannot be pickled (nor
copied); pickling raises ``TypeError`` saying what to send instead (the arguments of
``fastbatch.make``, or the env factories).
"""

from __future__ import annotations

import os
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from fastbatch._args import MAX_SEED, seed_list
from fastbatch.errors import AsyncStateError, ClosedEnvError, EnvError

__all__ = ["BatchVectorEnv"]

# Messages that more than one rule or backend raises.
CLOSED = "this fastbatch env is closed"
NOT_RESET = "call reset() before step()"
BROKEN = "a previous step raised an env error; call reset() before stepping again"
NO_IDLE_ENVS = (
    "no env is waiting for actions: the envs of the last recv() were already sent; "
    "recv() first (or pass env_ids)"
)
NO_IDS = np.empty(0, dtype=np.int64)  # async: no env waits for actions (the idle ids then)
NO_IDS.flags.writeable = False
STEP_WHILE_PENDING = "step() while a send() is pending; recv() it first"
SEND_TWICE = "send() twice without recv()"
SYNC_SEND_ALL = "in sync mode (batch_size == num_envs) send() steps every env"
RECV_WITHOUT_SEND = "recv() without a pending send()"
FORKED = (
    "this fastbatch env was created in process {owner} and cannot be used after fork (this is "
    "process {pid}, a fork of it): its workers serve the parent only. Make a new env in the "
    "child (fastbatch.make(...)); closing the inherited one here is safe and leaves the "
    "parent's env running"
)
NOT_PICKLABLE = (
    "cannot pickle or copy a {name}: it owns worker threads or processes and shared buffers. "
    "To use such an env in another process, send what builds it and call fastbatch.make "
    "there: the env id and keyword arguments (e.g. ('CartPole-v1', dict(num_envs=8, seed=0))) "
    "or, for the process backend, the list of env factories"
)

# This process's id, refreshed in a forked child (os.getpid() is a system call; the step path
# compares with this instead).
_pid = os.getpid()


def _after_fork_in_child() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_after_fork_in_child)


class BatchVectorEnv(gymnasium.vector.VectorEnv):
    """A batch of envs behind gymnasium's ``VectorEnv`` API (see the module docstring)."""

    closed = True  # until _setup: a half-built env is closed, so __del__ does nothing
    _owner_pid = 0  # the process that made the envs (set by _claim)
    _max_seed: int | None = MAX_SEED  # the largest seed the backend's envs take (None: any)
    _stats_key: str | None = None
    backend: str
    """Which backend steps the envs: "native" (C++ threads) or "process" (worker processes)."""
    multi_agent = False
    """True for a batch of (env, agent) rows (`fastbatch.make_agents`): rows can sit out steps
    (``info["active"]``) and the envs are ``num_parallel_envs``."""

    def _setup(
        self,
        num_envs: int,
        batch_size: int,
        mode: AutoresetMode,
        observation_space: gymnasium.spaces.Space,
        action_space: gymnasium.spaces.Space,
        seed: Any = None,
        rows_per_env: int = 1,
    ) -> None:
        """The state every backend starts from, once its envs exist: ``num_envs`` envs of
        ``rows_per_env`` rows each (agents), ``batch_size`` envs a recv returns. ``seed``
        (make's) also seeds the action spaces, so ``action_space.sample()`` repeats for the same
        seed (the batch space draws from a copy of the single space's generator, as in
        gymnasium)."""
        self._claim()
        first = seed[0] if isinstance(seed, (list, tuple)) and seed else seed
        if first is not None:
            action_space.seed(int(first))
        self._env_count = num_envs  # the unit of masks, seeds, env ids and batch_size
        num_envs *= rows_per_env  # rows from here on: what gymnasium's num_envs counts
        self.num_envs = num_envs
        self.batch_size = batch_size
        self.metadata = {"autoreset_mode": mode}
        self.render_mode = None
        self.single_observation_space = observation_space
        self.single_action_space = action_space
        self.observation_space = batch_space(observation_space, num_envs)
        self.action_space = batch_space(action_space, num_envs)
        self.closed = False
        self._all_ids = np.arange(self._env_count, dtype=np.int64)
        self._reset_called = False
        self._broken = False  # an env raised: a full reset() is needed
        self._pending_actions: Any = None  # sync send(): actions waiting for recv()
        # DISABLED mode: envs whose episode ended and that were not reset since.
        self._disabled = mode == AutoresetMode.DISABLED
        self._needs_reset = np.zeros(self._env_count, dtype=np.bool_)

    def _claim(self) -> None:
        """Marks the envs as this process's (a backend that can close before `_setup` calls it
        as soon as it holds anything to close)."""
        self._owner_pid = _pid

    def _forked(self) -> bool:
        """True in a process forked from the one that made the envs."""
        return self._owner_pid != _pid

    # ------------------------------------------------------------------ state rules
    def _check_open(self) -> None:
        if self.closed:
            raise ClosedEnvError(CLOSED)
        if self._owner_pid != _pid:
            raise RuntimeError(FORKED.format(owner=self._owner_pid, pid=_pid))

    def _check_stepable(self) -> None:
        self._check_open()
        if not self._reset_called:
            raise RuntimeError(NOT_RESET)
        if self._broken:
            raise RuntimeError(BROKEN)

    def _check_disabled_autoreset(self, env_ids: np.ndarray | None) -> None:
        """DISABLED mode: refuses to step an env whose episode ended and was not reset."""
        pending = self._needs_reset if env_ids is None else self._needs_reset[env_ids]
        if pending.any():
            j = int(np.flatnonzero(pending)[0])
            i = j if env_ids is None else int(env_ids[j])
            raise ValueError(
                f"env {i} has ended its episode and autoreset is disabled: reset it first with "
                "reset(options={'reset_mask': mask})"
            )

    def _envs_ended(self, result: tuple) -> np.ndarray:
        """Which envs of a step result ended their episode (a batch of agents overrides it)."""
        return np.logical_or(result[2], result[3])

    def _note_ended(self, result: tuple, env_ids: np.ndarray | None) -> tuple:
        """DISABLED mode: remembers which envs of a step result ended their episode."""
        ended = self._envs_ended(result)
        if env_ids is None:
            self._needs_reset[:] = ended
        else:
            self._needs_reset[env_ids] = ended
        return result

    def _reset_mask(self, options: Any) -> np.ndarray | None:
        """The checked ``options["reset_mask"]``, or None for a full reset."""
        if options is None:
            return None
        if not isinstance(options, dict):
            raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
        unknown = sorted(set(options) - {"reset_mask"})
        if unknown:
            raise ValueError(
                f"unsupported reset option(s) {', '.join(map(repr, unknown))}; fastbatch envs "
                "accept only 'reset_mask'"
            )
        mask = options.get("reset_mask")
        if mask is None:
            return None
        # The messages are gymnasium's own (SyncVectorEnv's), so code that matches them works.
        if not isinstance(mask, np.ndarray):
            raise TypeError(
                "`options['reset_mask']` must be a numpy array of `dtype=np.bool_`, got "
                f"{type(mask).__name__}"
            )
        if mask.dtype != np.bool_:
            raise TypeError(f"`options['reset_mask']` must have `dtype=np.bool_`, got {mask.dtype}")
        if mask.shape != (self._env_count,):
            raise ValueError(
                f"`options['reset_mask']` must have shape `({self._env_count},)`, got {mask.shape}"
            )
        if not mask.any():
            raise ValueError(
                "`options['reset_mask']` must contain a boolean array with at least one True "
                f"value, got reset_mask={mask}"
            )
        if not self._reset_called:
            if not mask.all():
                raise ValueError(
                    "the first reset must reset every env (no reset_mask, or an all-True one)"
                )
            return None
        if self._broken:
            raise RuntimeError(
                "a previous step raised an env error, so envs outside the mask may be out of "
                "step with the observations you hold; call reset() without a mask first"
            )
        return mask

    # ------------------------------------------------------------------ gymnasium API
    def reset(
        self,
        *,
        seed: int | list[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Resets all envs (or those in ``options["reset_mask"]``) and returns ``(obs, info)``.

        A full reset also drops every step in flight (async mode) and clears a previous env
        error. The first reset must reset every env.

        Args:
            seed: An int seeds env ``i`` with ``seed + i``; a list gives each env's seed (None
                keeps that env's generator running); None keeps every generator running. With
                a mask, only the masked envs are reseeded.
            options: None, or ``{"reset_mask": mask}``: a bool numpy array with one entry per
                env (``[num_envs]``; of a batch of agents, one per env, not per row) and at
                least one True, to reset only those envs.

        Returns:
            ``(obs, info)``: the observations of every env (``[num_envs, *obs_shape]``; rows not
            reset keep their last observation) and gymnasium's vector info dict.

        Raises:
            ClosedEnvError: The env is closed.
            RuntimeError: Used in a process forked from the one that made the env, or a masked
                reset after an env error (reset without a mask first).
            TypeError: ``options`` is not a dict, the mask not a bool numpy array, or a seed
                not an int.
            ValueError: An option other than ``reset_mask``; a mask of another shape, with no
                True, or not all True at the first reset; a seed list of another length; a
                negative seed.
            EnvError: An env raised while resetting (its own exception type too).
        """
        self._check_open()
        mask = self._reset_mask(options)
        seeds = seed_list(seed, self._env_count, self._max_seed)
        if mask is not None:
            seeds = [s if m else None for s, m in zip(seeds, mask.tolist(), strict=True)]
        try:
            result = self._reset_envs(seeds, mask)
        except EnvError:
            self._broken = True
            raise
        self._reset_called = True
        self._broken = False
        self._pending_actions = None
        if mask is None:
            self._needs_reset[:] = False
        else:
            self._needs_reset[mask] = False
        return result

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Steps every env once (in async mode: ``send(actions)`` then ``recv()``).

        Args:
            actions: One action per env, ``[num_envs, *action_shape]`` (async mode: one per
                env of the last `recv`, ``[batch_size, *action_shape]``).

        Returns:
            ``(obs, reward, terminated, truncated, info)``: observations
            ``[N, *obs_shape]`` (a batch of the observation space), rewards ``[N]`` float32,
            ``terminated`` and ``truncated`` ``[N]`` bool, N the rows stepped.
            ``info`` holds the episode statistics of envs whose episode ended
            (``info[stats_key]``, with its mask), in SAME_STEP mode ``final_obs`` and
            ``final_info`` as gymnasium's ``SyncVectorEnv`` gives them, and in async mode
            ``env_id``.

        Raises:
            ClosedEnvError: The env is closed.
            RuntimeError: Before the first `reset`, after an env error (reset first), or in a
                forked process.
            AsyncStateError: A `send` is pending (sync mode: `recv` it first), or no env waits
                for actions (async mode).
            TypeError: ``actions`` is not an array of the action space's kind.
            ValueError: ``actions`` has another shape or holds an action outside the space;
                DISABLED mode: an env whose episode ended was not reset.
            EnvError: An env raised while stepping (its own exception type too).
        """
        if self.closed or not self._reset_called or self._broken or self._owner_pid != _pid:
            self._check_stepable()  # raises the rule's error
        if self.batch_size < self._env_count:
            if self._disabled:
                self.send(actions)
                return self.recv()
            try:  # send to the envs of the last recv (all after reset) and recv, in one call
                return self._send_recv_envs(actions)
            except EnvError:
                self._broken = True
                raise
        if self._pending_actions is not None:
            raise AsyncStateError(STEP_WHILE_PENDING)
        if self._disabled:
            return self._sync_step(actions)
        try:  # the hot path, kept to one call into the backend
            return self._step_envs(actions)
        except EnvError:
            self._broken = True
            raise

    @property
    def stats_key(self) -> str | None:
        """The info key under which finished episodes' statistics are reported (make's
        ``stats_key``), or None: the env reports none."""
        return self._stats_key

    @property
    def is_async(self) -> bool:
        """True when ``batch_size`` is below the number of envs: `recv` returns the first envs
        to finish."""
        return self.batch_size < self._env_count

    def send(self, actions: Any, env_ids: Any = None) -> None:
        """Starts one step of the envs ``env_ids`` with ``actions``; `recv` returns the results.

        In sync mode (``batch_size == num_envs``) ``send`` + ``recv`` is ``step``, and
        ``send`` steps every env.

        Args:
            actions: One action per env sent, ``(len(env_ids), *action_shape)``, in the order
                of ``env_ids``.
            env_ids: The envs to step (an int array or list of env indices); default: those
                the last `recv` returned, or every env after `reset`.

        Raises:
            ClosedEnvError: The env is closed.
            RuntimeError: Before the first `reset`, after an env error, or in a forked process.
            AsyncStateError: A second ``send`` without `recv` (sync mode), an env sent again
                before it was received, or no ``env_ids`` while no env waits for actions.
            ValueError: Sync mode with ``env_ids`` other than every env; actions of another
                shape or outside the space; DISABLED mode: an env to step ended and was not
                reset.
            TypeError: ``actions`` or ``env_ids`` of the wrong kind.
            EnvError: An env raised (its own exception type too).
        """
        if self.closed or not self._reset_called or self._broken or self._owner_pid != _pid:
            self._check_stepable()  # raises the rule's error
        if self.batch_size == self._env_count:
            if self._pending_actions is not None:
                raise AsyncStateError(SEND_TWICE)
            if env_ids is not None and not np.array_equal(np.asarray(env_ids), self._all_ids):
                raise ValueError(SYNC_SEND_ALL)
            self._pending_actions = actions
            return
        try:
            self._send_envs(actions, env_ids)
        except EnvError:
            self._broken = True
            raise

    def recv(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Waits for the first ``batch_size`` sent envs to finish and returns their results.

        Returns:
            ``(obs, reward, terminated, truncated, info)`` as `step` gives them, for
            ``batch_size`` envs; ``info["env_id"]`` gives the env of each row (native: in env
            id order).

        Raises:
            ClosedEnvError: The env is closed.
            RuntimeError: Before the first `reset`, after an env error, or in a forked process.
            AsyncStateError: No `send` is pending, or fewer than ``batch_size`` envs are in
                flight.
            EnvError: An env raised while stepping (its own exception type too).
        """
        if self.closed or not self._reset_called or self._broken or self._owner_pid != _pid:
            self._check_stepable()  # raises the rule's error
        if self.batch_size == self._env_count:
            if self._pending_actions is None:
                raise AsyncStateError(RECV_WITHOUT_SEND)
            actions, self._pending_actions = self._pending_actions, None
            result = self._sync_step(actions)
            result[4]["env_id"] = self._all_ids
            return result
        try:
            result = self._recv_envs()
        except EnvError:
            self._broken = True
            raise
        if self._disabled:
            self._note_ended(result, result[4]["env_id"])
        return result

    def _sync_step(self, actions: Any) -> tuple:
        if self._disabled:
            self._check_disabled_autoreset(None)
        try:
            result = self._step_envs(actions)
        except EnvError:
            self._broken = True
            raise
        return self._note_ended(result, None) if self._disabled else result

    def close(self, **kwargs: Any) -> None:
        """Closes the envs and releases the workers; later calls raise ``ClosedEnvError``.

        Closing twice is harmless. In a forked child it only lets go of the inherited env (the
        parent's keeps running). The env is also a context manager that closes on exit.

        Args:
            **kwargs: Accepted for gymnasium's ``VectorEnv.close`` signature and ignored.
        """
        if self.closed:
            return
        self.closed = True
        if self._forked():
            self._abandon_envs()
        else:
            self._close_envs()

    def __del__(self) -> None:
        if not getattr(self, "closed", True):
            try:
                self.close()
            except Exception:  # at interpreter exit modules may be gone
                pass

    def __reduce_ex__(self, protocol: Any):
        raise TypeError(NOT_PICKLABLE.format(name=type(self).__name__))

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ primitives
    def _reset_envs(self, seeds: list[int | None], mask: np.ndarray | None) -> tuple:
        raise NotImplementedError

    def _step_envs(self, actions: Any) -> tuple:
        raise NotImplementedError

    def _send_envs(self, actions: Any, env_ids: Any) -> None:
        raise NotImplementedError

    def _recv_envs(self) -> tuple:
        raise NotImplementedError

    def _send_recv_envs(self, actions: Any) -> tuple:
        """`step` in async mode: a send to the envs the last recv returned (all after a reset),
        then a recv; a backend may do both in one call."""
        self._send_envs(actions, None)
        return self._recv_envs()

    def _close_envs(self) -> None:
        raise NotImplementedError

    def _abandon_envs(self) -> None:
        raise NotImplementedError
