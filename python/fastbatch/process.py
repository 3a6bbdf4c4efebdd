"""The process backend: any gymnasium env, stepped in worker processes through shared memory.

`ProcessVectorEnv` splits `num_envs` Python envs into contiguous blocks, one per worker process.
Actions, observations, rewards, flags and episode statistics travel through one shared-memory
segment laid out like the native batch buffers (64-byte aligned); workers are woken through
futexes in that segment (spin, then sleep). Pipes carry only the start-up handshake, infos
(when an env returned a non-empty one) and errors.

Lifecycle: workers are fresh interpreters (``python -m fastbatch._process_worker``), so the
caller's script is never re-imported; they die with the parent (PR_SET_PDEATHSIG) and ignore
Ctrl-C (the parent handles it). The shared memory is an anonymous memfd: it has no name in
/dev/shm and is freed by the kernel with the last process that maps it, even if every process
is killed. A dead worker is noticed within `liveness_interval` seconds and reported; the env is
then closed.
"""

from __future__ import annotations

import functools
import mmap
import numbers
import os
import socket
import subprocess
import sys
import time
import traceback
from multiprocessing.connection import Connection
from typing import Any, Callable, Sequence

import cloudpickle
import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from fastbatch import _core, _process_worker
from fastbatch._shm import (
    CMD_SEQ,
    DONE_SEQ,
    ENDED,
    HAS_INFO,
    INFO_PIPE,
    INFO_SHARED,
    LINE,
    OP,
    OP_CLOSE,
    OP_RESET,
    OP_RESET_PENDING,
    OP_STEP,
    STATUS,
    STATUS_ERROR,
    Layout,
    decode_info,
    word_address,
)
from fastbatch.errors import AsyncStateError, EnvError, WorkerDiedError
from fastbatch.vector import (
    _MODE_CODES,
    _autoreset_mode,
    _available_cores,
    _CallChecks,
    _positive_int,
    _seed_list,
    aligned_copy,
    block_info,
    episode_info,
    merge_block_info,
)

__all__ = ["ProcessVectorEnv"]

# The parent waits for its workers the same way: yield-spin for about a millisecond, then sleep.
_WAIT_SPIN_US = 1000.0
# Full-batch result arrays are recycled once the caller has dropped them; at most this many sets
# are kept (a caller holding more gets fresh arrays, never shared ones).
_MAX_SLOTS = 8
_RESULT_FIELDS = ("obs", "reward", "terminated", "truncated")


_WORDS = LINE // 4  # control words per worker line


def _slot_free(slot: tuple[np.ndarray, ...]) -> bool:
    """True when only `slot` refers to its arrays: no caller holds one, nor a view of one. Each
    array is a view of its own raw aligned buffer (`aligned_copy`), and numpy makes every
    further view refer to that buffer, not to the array: both counts must be at their floor."""
    getrefcount = sys.getrefcount
    return all(getrefcount(slot[j]) == 2 and getrefcount(slot[j].base) == 2 for j in range(4))


class ProcessVectorEnv(_CallChecks, gymnasium.vector.VectorEnv):
    """`len(env_fns)` gymnasium envs stepped in `num_workers` processes, as a `VectorEnv`.

    Build it with ``fastbatch.make(env_id_or_factories, num_envs, backend="process", ...)``.
    Results are 64-byte-aligned copies of the shared memory that never change behind the
    caller's back (a set the caller has dropped is recycled, so a steady loop allocates
    nothing). With ``batch_size < num_envs`` (async mode), whole worker blocks are sent and
    received: ``batch_size`` must be a multiple of the block size ``num_envs // num_workers``.

    ``in_parent``: the calling process steps block 0 itself (as the native pool's calling thread
    does), so ``num_workers`` blocks need ``num_workers - 1`` processes. The default (None)
    turns it on in sync mode when ``num_workers`` is at least the number of available cores
    and ``restart`` is off: a process per block would then leave the waiting caller competing
    for the cores (measured on 2 cores: 1.7x SyncVectorEnv on HalfCheetah instead of 1.3x).
    An env that crashes the interpreter in block 0 then takes the caller down, as with
    ``SyncVectorEnv``; a Ctrl-C inside one of its envs leaves the env needing ``reset()``.

    ``restart=True``: a worker process that dies is replaced by a fresh one that builds its
    envs again from the factories and resets them without a seed. The call in progress still
    returns: the replaced block's rows report ``truncated=True`` (reward 0, terminated False,
    no episode statistics, the new episode's first observation, also as ``final_obs`` in
    SAME_STEP mode) and ``info["worker_restarted"]``; the episodes in flight are lost. In
    NEXT_STEP mode those envs reset once more on their next step, as any truncated env does;
    in DISABLED mode reset them with a mask. ``self.restarts`` counts replacements. A worker
    that dies again while being restarted, or whose envs cannot be rebuilt, raises
    ``WorkerDiedError`` and closes the env. Block 0 of ``in_parent`` is never restarted.
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], Any]],
        *,
        num_workers: int | None = None,
        seed: int | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        stats_key: str | None = "episode",
        batch_size: int | None = None,
        start_timeout: float = 120.0,
        liveness_interval: float = 0.05,
        in_parent: bool | None = None,
        restart: bool = False,
    ) -> None:
        self.closed = False
        self._local = None  # in_parent: the block this process steps itself
        self._processes: list = []
        self._conns: list = []
        self._memory = None
        self._memfd = -1
        for name, flag in (("restart", restart), ("in_parent", in_parent)):
            if not isinstance(flag, bool) and not (name == "in_parent" and flag is None):
                raise TypeError(f"{name} must be {'True, False or None' if name == 'in_parent' else 'a bool'}, got {flag!r}")
        for name, seconds in (("start_timeout", start_timeout), ("liveness_interval", liveness_interval)):
            if isinstance(seconds, bool) or not isinstance(seconds, numbers.Real):
                raise TypeError(f"{name} must be a number of seconds, got {seconds!r}")
            if not 0 < seconds < float("inf"):
                raise ValueError(f"{name} must be a positive, finite number of seconds, got {seconds!r}")
        self._restart = restart
        self.restarts = 0  # worker processes replaced so far (restart=True)
        self._restarted: set[int] = set()  # workers replaced during the call in progress
        self._restarting = False
        self._env_fns = list(env_fns)
        self._start_timeout = float(start_timeout)
        self._op = OP_STEP
        self.num_envs = _positive_int("num_envs", len(env_fns))
        workers = min(_available_cores(), self.num_envs) if num_workers is None else num_workers
        workers = _positive_int("num_workers", workers)
        if workers > self.num_envs:
            raise ValueError(f"num_workers={workers} is more than num_envs={self.num_envs}")
        mode = _autoreset_mode(autoreset_mode)
        self.metadata = {"autoreset_mode": mode}
        self.render_mode = None
        self._mode_code = _MODE_CODES[mode]
        self._stats_key = stats_key
        self._liveness = float(liveness_interval)
        bounds = [self.num_envs * w // workers for w in range(workers + 1)]
        self._bounds = bounds
        self.batch_size = self.num_envs if batch_size is None else _positive_int("batch_size", batch_size)
        if self.batch_size > self.num_envs:
            raise ValueError(f"batch_size must be at most num_envs={self.num_envs}, got {self.batch_size}")
        if in_parent is None:  # auto: one process per block would oversubscribe the cores
            in_parent = (self.batch_size == self.num_envs and not self._restart
                         and workers > 1 and workers >= _available_cores())
        self._in_parent = bool(in_parent)
        if self._in_parent and self.batch_size < self.num_envs:
            raise ValueError("in_parent=True steps a block in the caller, which async mode cannot overlap")
        if self.batch_size < self.num_envs:
            block = self.num_envs // workers
            if self.num_envs % workers or self.batch_size % block:
                raise ValueError(
                    "async mode of the process backend sends whole worker blocks: num_envs must be a "
                    f"multiple of num_workers and batch_size a multiple of {block} envs per worker"
                )
        pending_seeds = _seed_list(seed, self.num_envs) if seed is not None else None
        try:
            self._start(env_fns, workers, start_timeout)
        except BaseException:
            self.close()
            raise
        self._pending_seeds = pending_seeds
        self._reset_called = False
        self._broken = False
        self._needs_reset = np.zeros(self.num_envs, dtype=bool)
        self._in_flight: list[int] = []  # async: workers sent and not yet received
        self._idle_workers = list(range(workers))
        self._pending_actions: Any = None
        self._slots: list[tuple[np.ndarray, ...]] = []

    # ------------------------------------------------------------------ start-up
    def _start(self, env_fns, workers, timeout) -> None:
        # Workers are fresh interpreters (not multiprocessing children): the caller's __main__
        # is never re-imported, so scripts need no `if __name__ == "__main__"` guard. The
        # shared memory is a memfd: it has no name and vanishes with the last process using it.
        self._memfd = os.memfd_create("fastbatch-batch", os.MFD_CLOEXEC)
        local_envs = None
        for w in range(workers):
            first, last = self._bounds[w], self._bounds[w + 1]
            if w == 0 and self._in_parent:
                local_envs = [fn() for fn in env_fns[first:last]]
                self._processes.append(None)
                self._conns.append(None)
                continue
            self._processes.append(None)
            self._conns.append(None)
            self._spawn(w)
        spaces = [self._expect(w, "ready", timeout) if w else self._local_ready(local_envs, timeout)
                  for w in range(workers)]
        obs_space, act_space = spaces[0][1]
        for w, message in enumerate(spaces):
            if not message[2] or message[1] != (obs_space, act_space):
                raise ValueError(f"the envs of worker {w} do not all share the first env's spaces")
        for space, what in ((obs_space, "observation"), (act_space, "action")):
            if not isinstance(space, (gymnasium.spaces.Box, gymnasium.spaces.Discrete)):
                raise TypeError(f"the process backend needs Box or Discrete {what} spaces, got {space}")
        self.single_observation_space, self.single_action_space = obs_space, act_space
        self.observation_space = batch_space(obs_space, self.num_envs)
        self.action_space = batch_space(act_space, self.num_envs)
        self._discrete = isinstance(act_space, gymnasium.spaces.Discrete)
        layout = Layout(
            num_envs=self.num_envs, num_workers=workers,
            obs_shape=tuple(obs_space.shape), obs_dtype=np.dtype(obs_space.dtype).str,
            act_shape=() if self._discrete else tuple(act_space.shape),
            act_dtype="int64" if self._discrete else np.dtype(act_space.dtype).str,
        )
        self._layout = layout
        os.ftruncate(self._memfd, layout.size())
        self._memory = mmap.mmap(self._memfd, layout.size())
        self._v = layout.views(self._memory)
        for conn in self._conns:
            if conn is not None:
                conn.send(("attach", layout))
        for w in self._remote():
            self._expect(w, "attached", timeout)
        if self._in_parent:
            self._local = _process_worker._Block(local_envs, 0, self._mode_code, self._v)
        if not self._restart:  # every worker holds the mapping now; a restart needs the fd
            os.close(self._memfd)
            self._memfd = -1
        control = self._v["control"]
        # The control words as a flat memoryview: item access is several times cheaper than
        # numpy scalar indexing, and the step path reads a handful of them per worker.
        self._ctl = memoryview(control).cast("B").cast("I")
        self._cmd_address = [word_address(control, w, CMD_SEQ) for w in range(workers)]
        self._counter_address = word_address(control, workers, 0)
        self._cmd = [0] * workers
        self._uncollected: set[int] = set()  # workers sent a command whose results were not read

    def _spawn(self, w: int) -> None:
        """Starts the worker process of block `w` and sends it the block's env factories."""
        first, last = self._bounds[w], self._bounds[w + 1]
        parent_end, child_end = socket.socketpair()
        args = [child_end.fileno(), self._memfd, w, os.getpid(), first, self._mode_code]
        self._processes[w] = subprocess.Popen(
            [sys.executable, "-m", "fastbatch._process_worker", *map(str, args)],
            pass_fds=(child_end.fileno(), self._memfd),
            stdin=subprocess.DEVNULL,
        )
        child_end.close()
        self._conns[w] = Connection(parent_end.detach())
        # The worker imports what the factories need with the caller's sys.path (a factory from
        # a module beside the caller's script then loads wherever the caller was started).
        factories = cloudpickle.dumps(self._env_fns[first:last])
        self._conns[w].send_bytes(cloudpickle.dumps((list(sys.path), factories)))

    def _restart_worker(self, w: int) -> None:
        """restart=True: replaces dead worker `w` by a fresh process with new envs and resets them.

        The block's rows of the call in progress then report what `_collect` makes of
        `self._restarted` (truncated episodes and info["worker_restarted"])."""
        first, last = self._bounds[w], self._bounds[w + 1]
        old = self._processes[w]
        code = old.returncode
        self._conns[w].close()
        self.restarts += 1
        control = self._v["control"]
        control[w, :] = 0  # fresh command/done sequence and sleeper count for the new process
        self._cmd[w] = 0
        self._v["done"][first:last] = False  # the new worker knows nothing of the old rows
        self._restarting = True
        try:
            self._spawn(w)
            message = self._expect(w, "ready", self._start_timeout)
            if not message[2] or message[1] != (self.single_observation_space, self.single_action_space):
                raise ValueError(f"the restarted envs of worker {w} have different spaces")
            self._conns[w].send(("attach", self._layout))
            self._expect(w, "attached", self._start_timeout)
            v = self._v
            v["reset_mask"][first:last] = True
            if self._op != OP_RESET:  # a reset() in progress keeps the seeds it was given
                v["seed_set"][first:last] = False
            pending = self._op == OP_STEP and self._mode_code == _MODE_CODES[AutoresetMode.NEXT_STEP]
            self._dispatch(OP_RESET_PENDING if pending else OP_RESET, [w])
            self._wait_for([w])
        except KeyboardInterrupt:  # the replacement is half built: close, let Ctrl-C through
            self.close()
            raise
        except BaseException as exc:
            self.close()
            how = f"signal {-code}" if code < 0 else f"exit code {code}"
            error = WorkerDiedError(
                f"worker {w} (envs {first}..{last - 1}) died ({how}) and could not be restarted: {exc}"
            )
            error.env_index = first
            raise error from exc
        finally:
            self._restarting = False
        self._restarted.add(w)

    def _remote(self) -> list[int]:
        """Blocks stepped by worker processes (all but block 0 when in_parent)."""
        return [w for w, p in enumerate(self._processes) if p is not None]

    def _local_ready(self, envs, timeout):
        if envs is None:  # block 0 is remote
            return self._expect(0, "ready", timeout)
        spaces = [(_process_worker.to_gymnasium_space(e.observation_space),
                   _process_worker.to_gymnasium_space(e.action_space)) for e in envs]
        return ("ready", spaces[0], all(x == spaces[0] for x in spaces))

    def _expect(self, w: int, kind: str, timeout: float):
        deadline = time.monotonic() + timeout
        conn = self._conns[w]
        while not conn.poll(0.05):
            if self._processes[w].poll() is not None and not conn.poll():
                self._check_alive()
            if time.monotonic() > deadline:
                raise TimeoutError(f"worker {w} did not answer within {timeout:.0f} s")
        message = conn.recv()
        if message[0] == "error":
            raise EnvError(f"env {message[1]} could not be created in worker {w}:\n{message[2]}")
        if message[0] != kind:
            raise RuntimeError(f"worker {w} sent {message[0]!r} where {kind!r} was expected")
        return message

    # ------------------------------------------------------------------ protocol
    def _dispatch(self, op: int, workers: list[int]) -> None:
        ctl = self._ctl
        self._uncollected.update(workers)
        for w in workers:
            ctl[w * _WORDS + OP] = op
            self._cmd[w] = (self._cmd[w] + 1) & 0xFFFFFFFF
            _core._store_word(self._cmd_address[w], self._cmd[w])

    def _run(self, op: int, workers: list[int]) -> None:
        """Runs `op` on `workers`: the remote ones in their processes while this process steps
        its own block (in_parent), then waits for the remote ones."""
        self._op = op
        remote = [w for w in workers if self._conns[w] is not None]
        self._dispatch(op, remote)
        if self._local is not None and 0 in workers:
            try:
                entries, ended = self._local.step() if op == OP_STEP else self._local.reset()
                # Merged now, while the worker processes may still be stepping.
                first, count = self._local.first, len(self._local.envs)
                infos = block_info(entries, self._v, first, count) if entries else None
                self._local_result = (None, infos, ended)
            except Exception as exc:  # noqa: BLE001 - reported like a worker's error
                index = self._local.first + self._local.current
                self._local_result = ((index, "".join(traceback.format_exception(exc))), None, 0)
            except BaseException:  # Ctrl-C inside an env of this block: its state is unknown
                self._broken = True
                raise
        self._wait_for(remote)

    def _wait_for(self, workers: list[int]) -> None:
        """Waits until every worker in `workers` has answered its last command."""
        while True:
            seen = _core._load_word(self._counter_address)
            if all(self._is_done(w) for w in workers):
                return
            if _core._wait_word(self._counter_address, seen, self._liveness, _WAIT_SPIN_US, True) == seen:
                self._check_alive(workers)

    def _is_done(self, w: int) -> bool:
        return self._ctl[w * _WORDS + DONE_SEQ] == self._cmd[w]

    def _settle(self) -> None:
        """Before a new command: finish and discard any command a Ctrl-C left uncollected."""
        stale = [w for w in self._uncollected if w not in self._in_flight]
        if stale:
            self._wait_for(stale)
            for w in stale:
                self._drop_messages(w)
            self._uncollected.difference_update(stale)
            self._restarted.difference_update(stale)  # those results are discarded

    def _check_alive(self, waiting: list[int] | None = None) -> None:
        """Raises WorkerDiedError (and closes the env) if a worker process has died; with
        restart=True a dead worker among `waiting` is replaced instead."""
        for w, process in enumerate(self._processes):
            if process is not None and process.poll() is not None:
                if self._restart and not self._restarting and waiting is not None:
                    if w in waiting:
                        self._restart_worker(w)
                    continue
                first, last = self._bounds[w], self._bounds[w + 1]
                code = process.returncode
                how = f"signal {-code}" if code < 0 else f"exit code {code}"
                self.close()
                error = WorkerDiedError(
                    f"worker {w} (envs {first}..{last - 1}) died ({how}); the env is now closed"
                )
                error.env_index = first
                raise error

    def _restarted_rows(self, w: int, block: dict | None) -> dict:
        """The rows of block `w`, whose worker was replaced during this call: after a step they
        report a truncated episode (reward 0, the new episode's first observation; in SAME_STEP
        mode also as final_obs); every row carries info["worker_restarted"]."""
        self._restarted.discard(w)
        first, last = self._bounds[w], self._bounds[w + 1]
        v = self._v
        stepped = self._op == OP_STEP
        if stepped:
            v["reward"][first:last] = 0.0
            v["terminated"][first:last] = False
            v["truncated"][first:last] = True
            v["done"][first:last] = False  # the cut episodes get no statistics
            if self.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP:
                v["final_obs"][first:last] = v["obs"][first:last]
        else:  # a reset in progress: the whole block was reset, masked or not
            self._needs_reset[first:last] = False
        final = {} if stepped and self.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP else None
        entries = [(i, final, {"worker_restarted": True}) for i in range(first, last)]
        return merge_block_info(block or {}, block_info(entries, v, first, last - first), 0, last - first)

    def _collect(self, workers: list[int], rows: dict[int, int] | None = None) -> tuple[dict, int]:
        """Reads statuses, infos and errors of finished `workers`; raises the first env error."""
        ctl = self._ctl
        self._uncollected.difference_update(workers)
        infos: dict[str, Any] = {}
        ended, error = 0, None
        nrows = self.num_envs if rows is None else len(rows)
        for w in workers:
            first = self._bounds[w]
            if self._conns[w] is None:  # the block this process stepped itself
                local_error, block, local_ended = self._local_result
                ended += local_ended
                error = error or local_error
            else:
                line = w * _WORDS
                ended += ctl[line + ENDED]
                failed = ctl[line + STATUS] == STATUS_ERROR
                if failed:
                    _, index, text = self._conns[w].recv()
                    error = error or (index, text)
                where = ctl[line + HAS_INFO]
                if where == INFO_SHARED:
                    block = decode_info(self._v["info_area"][w])
                else:
                    block = self._conns[w].recv()[1] if where == INFO_PIPE else None
            if w in self._restarted:
                block = self._restarted_rows(w, block)
            if block:
                infos = merge_block_info(infos, block, first if rows is None else rows[first], nrows)
        if error is not None:
            self._broken = True
            exc = EnvError(f"env {error[0]}: the env raised in its worker process:\n{error[1]}")
            exc.env_index = error[0]
            raise exc
        return infos, ended

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed=None, options=None):
        self._check_open()
        mask = np.ones(self.num_envs, dtype=bool)
        masked = False
        if options:
            unknown = sorted(set(options) - {"reset_mask"})
            if unknown:
                raise ValueError(f"unsupported reset option(s) {', '.join(map(repr, unknown))}")
            given = options.get("reset_mask")
            if given is not None:
                if not isinstance(given, np.ndarray) or given.dtype != np.bool_:
                    raise TypeError("options['reset_mask'] must be a numpy array of dtype bool")
                if given.shape != (self.num_envs,):
                    raise ValueError(f"options['reset_mask'] must have shape ({self.num_envs},), got {given.shape}")
                if not given.any():
                    raise ValueError("options['reset_mask'] must contain at least one True value")
                if not self._reset_called:
                    raise ValueError("the first reset must reset every env (no reset_mask)")
                if self._broken:
                    raise RuntimeError(
                        "a previous step raised an env error, so envs outside the mask may be out of "
                        "step with the observations you hold; call reset() without a mask first"
                    )
                mask, masked = given, True
        seeds = _seed_list(seed, self.num_envs)
        if seed is None and self._pending_seeds is not None:
            seeds, self._pending_seeds = self._pending_seeds, None
        workers = list(range(len(self._processes)))
        if masked:
            workers = [w for w in workers if mask[self._bounds[w] : self._bounds[w + 1]].any()]
            busy = set(workers) & set(self._in_flight)
            if busy:
                raise AsyncStateError(f"workers {sorted(busy)} have envs in flight; recv() them first")
        else:
            self._drain()  # a full reset discards every step in flight
            self._idle_workers = list(range(len(self._processes)))
        self._settle()
        v = self._v
        v["reset_mask"][:] = mask
        v["seed_set"][:] = [s is not None for s in seeds]
        v["seeds"][:] = [0 if s is None else s for s in seeds]
        self._run(OP_RESET, workers)
        infos, _ = self._collect(workers)
        self._reset_called, self._broken = True, False
        self._needs_reset[mask] = False
        self._pending_actions = None
        return aligned_copy(v["obs"]), infos

    def step(self, actions):
        self._check_stepable()
        if self.batch_size < self.num_envs:
            self.send(actions)
            return self.recv()
        if self._pending_actions is not None:
            raise AsyncStateError("step() while a send() is pending; recv() it first")
        return self._step_all(actions)

    def _step_all(self, actions):
        self._settle()  # a step a Ctrl-C left running must not see the new actions
        self._write_actions(actions, None)
        workers = list(range(len(self._processes)))
        self._run(OP_STEP, workers)
        infos, ended = self._collect(workers)
        return self._results(slice(None), infos, ended)

    def _full_batch(self) -> tuple[np.ndarray, ...]:
        """Fresh-to-the-caller copies of the shared obs, reward and flags of every env: a
        recycled set of aligned arrays when the caller has dropped one, else a new set."""
        v = self._v
        for slot in self._slots:
            if _slot_free(slot):
                for name, array in zip(_RESULT_FIELDS, slot):
                    np.copyto(array, v[name])
                return slot
        slot = tuple(aligned_copy(v[name]) for name in _RESULT_FIELDS)
        if len(self._slots) < _MAX_SLOTS:
            self._slots.append(slot)
        return slot

    def _results(self, rows, infos, ended):
        v = self._v
        if isinstance(rows, slice):
            obs, reward, terminated, truncated = self._full_batch()
        else:
            obs, reward = aligned_copy(v["obs"][rows]), aligned_copy(v["reward"][rows])
            terminated, truncated = aligned_copy(v["terminated"][rows]), aligned_copy(v["truncated"][rows])
        if self.metadata["autoreset_mode"] != AutoresetMode.SAME_STEP:
            if isinstance(rows, slice):
                np.logical_or(terminated, truncated, out=self._needs_reset)
            else:
                self._needs_reset[rows] = terminated | truncated
        if ended and self._stats_key is not None:
            done = v["done"][rows].copy()  # workers write statistics only for ended episodes
            stats = episode_info(
                done, np.where(done, v["ep_return"][rows], 0.0), np.where(done, v["ep_length"][rows], 0),
                np.where(done, v["ep_time"][rows], 0.0), self._stats_key,
            )
            infos.update(stats)
        return obs, reward, terminated, truncated, infos

    def _write_actions(self, actions, env_ids: np.ndarray | None) -> None:
        """Checks `actions` for `env_ids` (None: every env) and writes them to shared memory."""
        space = self.single_action_space
        a = actions if type(actions) is np.ndarray else np.asarray(actions)
        count = self.num_envs if env_ids is None else len(env_ids)
        if self._discrete:
            if a.dtype.kind not in "iu":
                raise TypeError(f"actions for a Discrete({space.n}) space must be integers, got dtype {a.dtype}")
            if a.shape != (count,):
                raise ValueError(f"actions must have shape {(count,)}, got {a.shape}")
            low, high = a.min(), a.max()
            if low < space.start or high >= space.start + space.n:
                bad = (a < space.start) | (a >= space.start + space.n)
                j = int(np.flatnonzero(bad)[0])
                raise ValueError(f"action {a[j]} for env {self._env_id(env_ids, j)} is outside Discrete({space.n})")
        else:
            if a.dtype.kind not in "fiu":
                raise TypeError(f"actions for a Box space must be real numbers, got dtype {a.dtype}")
            if a.shape != (count, *space.shape):
                raise ValueError(f"actions must have shape {(count, *space.shape)}, got {a.shape}")
            if a.dtype.kind == "f" and np.isnan(a).any():
                j = int(np.flatnonzero(np.isnan(a).reshape(count, -1).any(axis=1))[0])
                raise ValueError(f"action for env {self._env_id(env_ids, j)} is NaN")
        if self.metadata["autoreset_mode"] == AutoresetMode.DISABLED:
            pending = self._needs_reset if env_ids is None else self._needs_reset[env_ids]
            if pending.any():
                i = self._env_id(env_ids, int(np.flatnonzero(pending)[0]))
                raise ValueError(
                    f"env {i} has ended its episode and autoreset is disabled: reset it first with "
                    "reset(options={'reset_mask': mask})"
                )
        if env_ids is None:
            self._v["actions"][...] = a
        else:
            self._v["actions"][env_ids] = a

    @staticmethod
    def _env_id(env_ids: np.ndarray | None, j: int) -> int:
        return j if env_ids is None else int(env_ids[j])

    # ------------------------------------------------------------------ async
    def send(self, actions, env_ids=None) -> None:
        """Starts a step of `env_ids` (whole worker blocks; default: the last recv's envs)."""
        self._check_stepable()
        if self.batch_size == self.num_envs:
            if self._pending_actions is not None:
                raise AsyncStateError("send() twice without recv()")
            if env_ids is not None and not np.array_equal(np.asarray(env_ids), np.arange(self.num_envs)):
                raise ValueError("in sync mode (batch_size == num_envs) send() steps every env")
            self._pending_actions = actions
            return
        if env_ids is None:
            workers = self._idle_workers
            if not workers:
                raise AsyncStateError("no env is waiting for actions; recv() first (or pass env_ids)")
        else:
            workers = self._workers_of(np.asarray(env_ids))
        ids = np.concatenate([np.arange(self._bounds[w], self._bounds[w + 1]) for w in workers])
        self._settle()
        self._write_actions(actions, ids)
        self._op = OP_STEP
        self._dispatch(OP_STEP, workers)
        self._in_flight += workers
        self._idle_workers = [w for w in self._idle_workers if w not in workers]

    def _workers_of(self, env_ids: np.ndarray) -> list[int]:
        workers = []
        for w in range(len(self._processes)):
            block = np.arange(self._bounds[w], self._bounds[w + 1])
            inside = np.isin(block, env_ids)
            if inside.any() and not inside.all():
                raise ValueError(f"the process backend sends whole worker blocks; envs {block.tolist()} go together")
            if inside.any():
                if w in self._in_flight:
                    raise AsyncStateError(f"envs {block.tolist()} were already sent; recv() them first")
                workers.append(w)
        if sum(self._bounds[w + 1] - self._bounds[w] for w in workers) != len(env_ids):
            raise ValueError("env_ids must be distinct envs of this vector env")
        return workers

    def recv(self):
        """Waits for `batch_size` sent envs and returns their results; info["env_id"] maps rows."""
        self._check_stepable()
        if self.batch_size == self.num_envs:
            if self._pending_actions is None:
                raise AsyncStateError("recv() without a pending send()")
            actions, self._pending_actions = self._pending_actions, None
            obs, reward, terminated, truncated, info = self._step_all(actions)
            info["env_id"] = np.arange(self.num_envs)
            return obs, reward, terminated, truncated, info
        if not self._in_flight:
            raise AsyncStateError("recv() without a pending send()")
        block = self.num_envs // len(self._processes)
        need = self.batch_size // block
        if len(self._in_flight) < need:
            raise AsyncStateError(
                f"only {len(self._in_flight) * block} envs are in flight but recv() returns "
                f"batch_size={self.batch_size}; send() more envs first"
            )
        finished = self._wait_workers(need)
        ids = np.concatenate([np.arange(self._bounds[w], self._bounds[w + 1]) for w in finished])
        infos, ended = self._collect(finished, rows={int(i): j for j, i in enumerate(ids)})
        self._in_flight = [w for w in self._in_flight if w not in finished]
        self._idle_workers = list(finished)
        result = self._results(ids, infos, ended)
        result[4]["env_id"] = ids
        return result

    def _wait_workers(self, need: int) -> list[int]:
        """The first `need` in-flight workers found finished (waits on the shared counter)."""
        while True:
            seen = _core._load_word(self._counter_address)
            finished = [w for w in self._in_flight if self._is_done(w)][:need]
            if len(finished) == need:
                return finished
            if _core._wait_word(self._counter_address, seen, self._liveness, _WAIT_SPIN_US, True) == seen:
                self._check_alive(self._in_flight)

    def _drain(self) -> None:
        """Waits for every step in flight (async mode) and discards its results."""
        if self._in_flight:
            self._wait_workers(len(self._in_flight))
            for w in self._in_flight:
                self._drop_messages(w)
            self._uncollected.difference_update(self._in_flight)
            self._restarted.difference_update(self._in_flight)  # a full reset follows
            self._in_flight = []

    def _drop_messages(self, w: int) -> None:
        while self._conns[w] is not None and self._conns[w].poll():
            self._conns[w].recv()

    # ------------------------------------------------------------------ lifecycle
    def close_extras(self, **kwargs: Any) -> None:
        if self._local is not None:
            for env in self._local.envs:
                env.close()
            self._local = None
        live = [w for w, p in enumerate(self._processes) if p is not None and p.poll() is None]
        if self._memory is not None and live:
            try:
                self._dispatch(OP_CLOSE, live)
            except Exception:  # noqa: BLE001 - closing must go on
                pass
        deadline = time.monotonic() + 2.0  # for all workers together, then kill
        for process in filter(None, self._processes):
            try:
                process.wait(timeout=max(0.01, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=2.0)
        for conn in filter(None, self._conns):
            conn.close()
        self._processes, self._conns = [], []
        if self._memfd >= 0:
            os.close(self._memfd)
            self._memfd = -1
        if self._memory is not None:
            if getattr(self, "_ctl", None) is not None:
                self._ctl.release()
                self._ctl = None
            self._v = {}
            try:
                self._memory.close()
            except BufferError:  # a caller still holds a view: the mapping goes with it
                pass
            self._memory = None

    def close(self, **kwargs: Any) -> None:
        if self.closed:
            return
        self.closed = True
        self.close_extras(**kwargs)

    def __del__(self) -> None:
        if not getattr(self, "closed", True):
            try:
                self.close()
            except Exception:  # noqa: BLE001 - at interpreter exit modules may be gone
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ProcessVectorEnv(num_envs={self.num_envs}, num_workers={len(self._processes)})"


def env_factories(env_id_or_fns: Any, num_envs: int | None, kwargs: dict[str, Any]) -> list[Callable]:
    """Env constructors for the process backend from an id, one factory, or a list of them."""
    if isinstance(env_id_or_fns, str):
        count = _positive_int("num_envs", 1 if num_envs is None else num_envs)
        return [functools.partial(gymnasium.make, env_id_or_fns, **kwargs)] * count
    if kwargs:
        raise TypeError(f"env keyword arguments ({', '.join(kwargs)}) apply only to an env id")
    if callable(env_id_or_fns):
        count = _positive_int("num_envs", 1 if num_envs is None else num_envs)
        return [env_id_or_fns] * count
    fns = list(env_id_or_fns)
    if not fns or not all(callable(f) for f in fns):
        raise TypeError("expected an env id, an env factory, or a non-empty list of env factories")
    if num_envs is not None and num_envs != len(fns):
        raise ValueError(f"num_envs={num_envs} does not match the {len(fns)} factories given")
    return fns

