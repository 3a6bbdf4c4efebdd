"""The worker side of the process backend: steps a contiguous block of Python envs.

Protocol (see _shm.py for the layout): the parent writes an operation into this worker's
control line and bumps its command sequence word; the worker spins briefly, then sleeps on that
word's futex, runs the operation over its block, writes results into the shared arrays, sends
infos and errors over its pipe (only when there are any), and bumps the shared completion
counter. The pipe also carries the start-up handshake.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import signal
import sys
import time
import traceback
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from fastbatch import _core
from fastbatch._shm import (
    CMD_SEQ,
    DONE_SEQ,
    ENDED,
    HAS_INFO,
    INFO_NONE,
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
    STATUS_OK,
    Layout,
    encode_info,
    word_address,
)
from fastbatch.vector import block_info

NEXT_STEP, SAME_STEP, DISABLED = 0, 1, 2
# After a command a worker keeps checking for the next one for about a millisecond, yielding its
# core between checks (on a machine with as many workers as cores, the parent needs a core the
# moment it is woken), then sleeps on the futex: an idle pool costs nothing.
SPIN_US = 1000.0


def _die_with_parent(parent_pid: int) -> None:
    """Linux: the kernel kills this process when the parent goes away, even by SIGKILL."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def to_gymnasium_space(space: Any):
    """A gymnasium space for `space`, converting legacy `gym` spaces (Box and Discrete)."""
    import gymnasium

    if isinstance(space, gymnasium.spaces.Space):
        return space
    kind = type(space).__name__
    if kind == "Discrete":
        return gymnasium.spaces.Discrete(int(space.n), start=int(getattr(space, "start", 0)))
    if kind == "Box":
        return gymnasium.spaces.Box(
            low=np.asarray(space.low), high=np.asarray(space.high), dtype=np.dtype(space.dtype)
        )
    raise TypeError(f"unsupported space {space!r}: the process backend handles Box and Discrete")


class _Block:
    """The envs [first, first + len(envs)) of one block and their episode bookkeeping.

    Per-env counters are plain Python lists: the step loop is Python either way, and list items
    are several times cheaper to read and write than numpy scalars."""

    def __init__(self, envs, first: int, mode: int, views: dict[str, np.ndarray]):
        self.envs = envs
        self.first = first
        self.mode = mode
        self.v = views
        n = len(envs)
        self.needs_reset = [False] * n
        self.ep_return = [0.0] * n
        self.ep_length = [0] * n
        self.ep_start = [0.0] * n
        self.discrete = views["actions"].ndim == 1
        self.current = 0  # the env being worked on (names the env in error reports)
        self._done_rows_set = False  # whether this block's rows of views["done"] hold a True

    def _start(self, k: int) -> None:
        self.needs_reset[k] = False
        self.ep_return[k] = 0.0
        self.ep_length[k] = 0
        self.ep_start[k] = time.perf_counter()

    def reset(self, pending_autoreset: bool = False) -> tuple[list, int]:
        """Resets the envs of the block that views["reset_mask"] selects. With
        `pending_autoreset` (a restarted worker in NEXT_STEP mode) they also reset again on
        their next step, as envs that just reported truncated=True do."""
        v, infos = self.v, []
        for k, env in enumerate(self.envs):
            i, self.current = self.first + k, k
            if not v["reset_mask"][i]:
                continue
            seed = int(v["seeds"][i]) if v["seed_set"][i] else None
            obs, info = env.reset(seed=seed)
            v["obs"][i] = obs
            self._start(k)
            self.needs_reset[k] = pending_autoreset
            if info:
                infos.append((i, None, info))
        return infos, 0

    def step(self) -> tuple[list, int]:
        """Steps (or autoresets) every env of the block. Per-env results are gathered in Python
        lists and written to the shared rows once per block: one numpy call per array rather
        than several per env."""
        v, infos, ended = self.v, [], 0
        first, last = self.first, self.first + len(self.envs)
        actions = v["actions"][first:last].tolist() if self.discrete else v["actions"][first:last].copy()
        needs_reset, ep_return, ep_length = self.needs_reset, self.ep_return, self.ep_length
        next_step, same_step = self.mode == NEXT_STEP, self.mode == SAME_STEP
        obs_rows, rewards, terms, truncs = [], [], [], []
        done_rows = None
        for k, env in enumerate(self.envs):
            self.current = k
            if needs_reset[k] and next_step:
                obs, info = env.reset()
                self._start(k)
                obs_rows.append(obs)
                rewards.append(0.0)
                terms.append(False)
                truncs.append(False)
                if info:
                    infos.append((first + k, None, info))
                continue
            obs, reward, terminated, truncated, info = env.step(actions[k])
            ep_return[k] += float(reward)
            ep_length[k] += 1
            final_info = None
            if terminated or truncated:
                i = first + k
                ended += 1
                if done_rows is None:
                    done_rows = [False] * len(self.envs)
                done_rows[k] = True
                v["ep_return"][i] = ep_return[k]
                v["ep_length"][i] = ep_length[k]
                v["ep_time"][i] = time.perf_counter() - self.ep_start[k]
                if same_step:
                    v["final_obs"][i] = obs
                    final_info = info
                    obs, info = env.reset()
                    self._start(k)
                else:
                    needs_reset[k] = True
            obs_rows.append(obs)
            rewards.append(reward)
            terms.append(terminated)
            truncs.append(truncated)
            if info or final_info is not None:
                infos.append((first + k, final_info, info))
        v["obs"][first:last] = obs_rows
        v["reward"][first:last] = rewards
        v["terminated"][first:last] = terms
        v["truncated"][first:last] = truncs
        if done_rows is not None:
            v["done"][first:last] = done_rows
            self._done_rows_set = True
        elif self._done_rows_set:  # the parent reads "done" only when an episode ended
            v["done"][first:last] = False
            self._done_rows_set = False
        return infos, ended


def main(argv: list[str]) -> None:
    """Entry point: ``python -m fastbatch._process_worker CONN_FD MEM_FD INDEX PARENT_PID FIRST MODE``.

    CONN_FD is this worker's end of a socket pair to the parent; MEM_FD is the shared memory
    (a memfd, sized by the parent once the spaces are known).
    """
    conn_fd, mem_fd, index, parent_pid, first, mode = (int(x) for x in argv)
    _die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    import cloudpickle

    conn = Connection(conn_fd)
    try:
        paths, factories = cloudpickle.loads(conn.recv_bytes())
        sys.path[:] = paths + [p for p in sys.path if p not in paths]  # before unpickling envs
        envs = [fn() for fn in cloudpickle.loads(factories)]
        spaces = [(to_gymnasium_space(e.observation_space), to_gymnasium_space(e.action_space)) for e in envs]
        conn.send(("ready", spaces[0], all(s == spaces[0] for s in spaces)))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        conn.send(("error", first, "".join(traceback.format_exception(exc))))
        return
    message = conn.recv()
    if message[0] != "attach":
        return
    layout: Layout = message[1]
    memory = mmap.mmap(mem_fd, layout.size())
    os.close(mem_fd)
    views = layout.views(memory)
    conn.send(("attached",))
    try:
        _serve(index, conn, _Block(envs, first, mode, views), views, layout, parent_pid)
    finally:
        views = None


def _serve(index, conn, block, views, layout: Layout, parent_pid) -> None:
    control = views["control"]
    ctl = memoryview(control).cast("B").cast("I")  # cheaper item access than numpy scalars
    line = index * (LINE // 4)
    info_area = views["info_area"][index]
    cmd_address = word_address(control, index, CMD_SEQ)
    counter_address = word_address(control, layout.num_workers, 0)
    seen = 0
    while True:
        seq = _core._wait_word(cmd_address, seen, 1.0, SPIN_US, True)
        if seq == seen:
            if os.getppid() != parent_pid:
                return
            continue
        seen = seq
        op = ctl[line + OP]
        status, infos, ended = STATUS_OK, [], 0
        try:
            if op == OP_STEP:
                infos, ended = block.step()
            elif op in (OP_RESET, OP_RESET_PENDING):
                infos, ended = block.reset(pending_autoreset=op == OP_RESET_PENDING)
            elif op == OP_CLOSE:
                for env in block.envs:
                    env.close()
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            status = STATUS_ERROR
            env_index = block.first + block.current
            conn.send(("error", env_index, "".join(traceback.format_exception(exc))))
        where = INFO_NONE
        if infos:  # merged here, in parallel with the other workers: one array per key
            merged = block_info(infos, views, block.first, len(block.envs))
            if encode_info(merged, info_area):
                where = INFO_SHARED
            else:
                where = INFO_PIPE
                conn.send(("info", merged))
        ctl[line + HAS_INFO] = where
        ctl[line + ENDED] = ended
        ctl[line + STATUS] = status
        ctl[line + DONE_SEQ] = seq
        _core._add_word(counter_address, 1)
        if op == OP_CLOSE:
            return



if __name__ == "__main__":
    main(sys.argv[1:])
