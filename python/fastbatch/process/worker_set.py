"""`WorkerSet`: the worker processes of the process backend and the protocol that drives them.

It spawns the workers, hands them their env factories and the shared memory (handshake), sends
commands, waits for them, collects statuses, infos and errors, replaces dead workers
(``restart=True``) and closes everything. It knows nothing of gymnasium's API: `ProcessVectorEnv`
(vector.py) is the facade on top.

Lifecycle: workers are fresh interpreters (``python -m fastbatch.process.worker``), so the
caller's script is never re-imported; they die with the parent (PR_SET_PDEATHSIG) and ignore
Ctrl-C (the parent handles it). The shared memory is an anonymous memfd: it has no name in
/dev/shm and is freed by the kernel with the last process that maps it, even if every process
is killed. Every wait is bounded: a dead worker is noticed within `liveness_interval` seconds.

Threading: one thread at a time (the facade's caller).
"""

from __future__ import annotations

import copy
import enum
import mmap
import os
import subprocess
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import cloudpickle

from fastbatch import _core
from fastbatch._args import NEXT_STEP, SAME_STEP
from fastbatch._infos import block_info, merge_block_info
from fastbatch.errors import WorkerDiedError
from fastbatch.process import shm, spawn
from fastbatch.process.block import Block
from fastbatch.process.gym_registry import registry_snapshot
from fastbatch.process.shm import (
    Layout,
    env_error,
    error_message,
    leaf_views,
    recv_message,
)
from fastbatch.process.spaces import SpacePlan

__all__ = ["SetState", "WorkerSet"]

# The parent waits for its workers the way workers wait for it: yield-spin for about a
# millisecond, then sleep on the futex.
WAIT_SPIN_US = 1000.0
WORDS_PER_LINE = shm.LINE // 4  # control words per worker line


class SetState(enum.Enum):
    """Where the worker set is in its life."""

    STARTING = "starting"  # spawning workers and handshaking
    RUNNING = "running"  # commands may be sent
    RESTARTING = "restarting"  # replacing a dead worker (restart=True): no second restart
    CLOSED = "closed"


class WorkerSet:
    """The workers stepping `len(env_fns)` envs in contiguous blocks, one block per worker.

    ``block_bounds[w] : block_bounds[w + 1]`` are the envs of worker ``w``. With ``in_parent``
    block 0 is stepped by this process, the others by worker processes. This process steps
    blocks ``0 .. local_workers - 1`` as one block, ``local`` (block 0, and the blocks after it
    that rebalance.py moved here from their workers).
    ``views`` are the shared arrays (see shm.Layout). ``obs_values`` holds each env's latest
    observation when the observation space is pickled (see spaces.py); ``about`` the
    first env's ``metadata`` and ``render_mode``. ``on_fatal`` is called (to close the owner)
    before a WorkerDiedError is raised.
    """

    def __init__(
        self,
        env_fns: list[Callable[[], Any]],
        num_workers: int,
        mode_code: int,
        *,
        in_parent: bool,
        restart: bool,
        start_timeout: float,
        liveness_interval: float,
        on_fatal: Callable[[], None],
    ) -> None:
        n = len(env_fns)
        self.env_fns = env_fns
        self.block_bounds = [n * w // num_workers for w in range(num_workers + 1)]
        self.mode_code = mode_code
        self.in_parent = in_parent
        self.restart = restart
        self.start_timeout = start_timeout
        self.liveness_interval = liveness_interval
        self.on_fatal = on_fatal
        self.state = SetState.STARTING
        self.restarts = 0  # worker processes replaced so far
        self.replaced_this_call: set[int] = set()  # workers replaced during the call in progress
        self.uncollected: set[int] = set()  # sent a command whose results were not read
        self.op = shm.OP_STEP  # the operation of the call in progress
        self.processes: list[subprocess.Popen | None] = [None] * num_workers
        self.connections: list[Connection | None] = [None] * num_workers
        self.local: Block | None = None  # the envs of blocks 0 .. local_workers - 1
        self.local_workers = 0
        self.local_result: tuple = (None, None, 0, None)  # (error, infos, ended, calls)
        self.local_interrupted = False  # a Ctrl-C hit an env of `local`: its state is unknown
        self.views: dict = {}
        self.spaces: tuple = ()
        self.about: dict = {}
        self.obs_values: list = [None] * n
        self.call_results: list = [None] * n
        self._registry: list[bytes] | None = None  # the caller's registry, pickled once
        self._memory: mmap.mmap | None = None
        self._memfd = -1
        self._control: memoryview | None = None
        self._command_seq = [0] * num_workers
        self._command_address: list[int] = []
        self._counter_address = 0

    @property
    def num_workers(self) -> int:
        return len(self.processes)

    def block(self, w: int) -> range:
        return range(self.block_bounds[w], self.block_bounds[w + 1])

    # ------------------------------------------------------------------ start-up
    def start(self, layout_for: Callable[[Any, Any], Layout]) -> None:
        """Builds every block's envs, checks they share one pair of spaces (stored in
        ``spaces``), then lays out and maps the shared memory (``layout_for(obs_space,
        act_space)``) and hands it to the workers."""
        self._memfd = os.memfd_create("fastbatch-batch", os.MFD_CLOEXEC)
        # The workers first: their interpreters start and import the envs' packages while this
        # process builds its own block.
        for w in range(1 if self.in_parent else 0, self.num_workers):
            self._spawn(w)
        local_envs = self._make_local_envs() if self.in_parent else None
        messages = [
            spawn.ready_message(local_envs)
            if w == 0 and self.in_parent
            else self._expect(w, "ready")
            for w in range(self.num_workers)
        ]
        spaces = self.spaces = messages[0][1]
        for w, message in enumerate(messages):
            spawn.check_spaces(spaces, self.block_bounds[w], message)
        self.about = messages[0][3]
        self.obs_plan = SpacePlan(spaces[0])
        layout = self._layout = layout_for(*spaces)
        os.ftruncate(self._memfd, layout.size())
        self._memory = mmap.mmap(self._memfd, layout.size())
        self.views = layout.views(self._memory)
        for w in self.remote_workers():
            self.connections[w].send(("attach", layout))
        for w in self.remote_workers():
            self._expect(w, "attached")
        if self.in_parent:
            self.local = Block(local_envs, 0, self.mode_code, self.views)
            self.local_workers = 1
        if not self.restart:  # every worker holds the mapping now; only a restart needs the fd
            os.close(self._memfd)
            self._memfd = -1
        control = self.views["control"]
        # The control words as a flat memoryview: item access is several times cheaper than
        # numpy scalar indexing, and the step path reads a handful of them per worker.
        self._control = memoryview(control).cast("B").cast("I")
        self._command_address = [shm.word_address(control, w, 0) for w in range(self.num_workers)]
        self._counter_address = shm.word_address(control, self.num_workers, 0)
        self.state = SetState.RUNNING

    def _make_local_envs(self) -> list:
        """The envs of block 0, built in this process (in_parent); a factory's error is raised
        as a worker's is (`shm.env_error`)."""
        envs = []
        for i in self.block(0):
            try:
                envs.append(self.env_fns[i]())
            except Exception as exc:
                fields = error_message(i, exc)[1:]
                raise env_error(*fields, "could not be created in the calling process") from exc
        return envs

    def _spawn(self, w: int) -> None:
        """Starts the worker process of block `w` (see spawn.py)."""
        self._registry = self._registry or registry_snapshot()
        first, last = self.block_bounds[w], self.block_bounds[w + 1]
        self.processes[w], self.connections[w] = spawn.spawn_worker(
            w, first, self.env_fns[first:last], self._memfd, self.mode_code, self._registry
        )

    def _expect(self, w: int, kind: str) -> tuple:
        """The next message of worker `w`, which must be of `kind` (within start_timeout)."""
        connection, process = self.connections[w], self.processes[w]
        return spawn.expect(connection, process, w, kind, self.start_timeout, self.check_alive)

    def remote_workers(self) -> list[int]:
        """Blocks stepped by worker processes (all but block 0 with in_parent)."""
        return [w for w, p in enumerate(self.processes) if p is not None]

    # ------------------------------------------------------------------ commands
    def dispatch(self, op: int, workers: list[int], arguments: dict | None = None) -> None:
        """Sends `op` to the worker processes `workers` (no wait), and then on its pipe each
        worker's argument (`arguments[w]`: a pickled space's actions, a call) if any. Every
        argument is pickled first: one that does not pickle raises before any worker is woken."""
        control = self._control
        pickled = {w: cloudpickle.dumps(arguments[w]) for w in workers} if arguments else None
        self.uncollected.update(workers)
        for w in workers:
            control[w * WORDS_PER_LINE + shm.OP] = op
            self._command_seq[w] = (self._command_seq[w] + 1) & 0xFFFFFFFF
            _core._store_word(self._command_address[w], self._command_seq[w])
            if pickled is not None:
                try:
                    self.connections[w].send_bytes(pickled[w])
                except OSError:  # a dead worker's broken pipe: waiting for it reports the death
                    pass

    def run(self, op: int, workers: list[int], arguments: dict | None = None) -> None:
        """Runs `op` (with `arguments`, see `dispatch`) on `workers`: the remote ones in their
        processes while this process steps its own block (in_parent), then waits for them."""
        self.op = op
        remote = [w for w in workers if w >= self.local_workers]
        self.dispatch(op, remote, arguments)
        local = [w for w in workers if w < self.local_workers]
        if local:
            self.local_result = self._run_local(op, _joined(arguments, local, op))
        self.wait_for(remote)

    def _run_local(self, op: int, argument) -> tuple:
        """Runs `op` on the envs this process steps: (error, infos, episodes ended, calls)."""
        block, calls = self.local, None
        try:
            if op == shm.OP_STEP:
                entries, ended = block.step(argument)
            elif op == shm.OP_CALL:  # copies, as the workers' results are (pickled)
                entries, ended, calls = [], 0, copy.deepcopy(block.call(*argument))
            else:
                entries, ended = block.reset()
            # Merged now, while the worker processes may still be stepping.
            infos = block_info(entries, block.first, len(block.envs)) if entries else None
            return (None, infos, ended, calls)
        except Exception as exc:  # reported like a worker's error
            return (error_message(block.first + block.current, exc)[1:], None, 0, None)
        except BaseException:
            self.local_interrupted = True
            raise

    def wait_for(self, workers: list[int]) -> None:
        """Waits until every worker in `workers` has answered its last command."""
        while True:
            seen = _core._load_word(self._counter_address)
            if all(self.is_done(w) for w in workers):
                return
            if self._wait_counter(seen) == seen:
                self.check_alive(workers)

    def wait_any(self, workers: list[int], need: int) -> list[int]:
        """The first `need` of `workers` found finished (waits on the completion counter)."""
        while True:
            seen = _core._load_word(self._counter_address)
            finished = [w for w in workers if self.is_done(w)][:need]
            if len(finished) == need:
                return finished
            if self._wait_counter(seen) == seen:
                self.check_alive(workers)

    def _wait_counter(self, seen: int) -> int:
        return _core._wait_word(
            self._counter_address, seen, self.liveness_interval, WAIT_SPIN_US, True
        )

    def is_done(self, w: int) -> bool:
        return self._control[w * WORDS_PER_LINE + shm.DONE_SEQ] == self._command_seq[w]

    def settle(self, in_flight: list[int]) -> None:
        """Before a new command: finishes and discards any command a Ctrl-C left uncollected
        (steps in flight in async mode are not stale)."""
        stale = [w for w in self.uncollected if w not in in_flight]
        if stale:
            self.discard(stale)

    def discard(self, workers: list[int]) -> None:
        """Waits for `workers` and throws their results away."""
        self.wait_for(workers)
        for w in workers:
            self.read_message(w)
        self.replaced_this_call.difference_update(workers)  # those results are discarded

    def read_message(self, w: int) -> tuple | None:
        """The message remote worker `w` sent for its last command, read once (None: none)."""
        if w not in self.uncollected:
            return None
        self.uncollected.discard(w)
        if not self._control[w * WORDS_PER_LINE + shm.PIPED]:
            return None
        return recv_message(self.connections[w])

    def collect(self, workers: list[int], rows: dict[int, int] | None = None) -> tuple[dict, int]:
        """Statuses, infos and errors of the finished `workers`: (infos, episodes ended); a
        pickled space's observations go to ``obs_values``, a call's results to ``call_results``.

        Infos are merged at each block's rows (``rows`` maps a block's first env to its row in
        a partial batch; None: the full batch). Raises the first env error (`shm.env_error`)."""
        control = self._control
        infos: dict[str, Any] = {}
        ended, error = 0, None
        nrows = len(self.env_fns) if rows is None else len(rows)
        local_seen = False
        for w in workers:
            first, last = self.block_bounds[w], self.block_bounds[w + 1]
            if w < self.local_workers:  # the envs this process stepped itself, reported once
                if local_seen:
                    continue
                local_seen, first = True, 0
                last = self.block_bounds[self.local_workers]
                local_error, block, local_ended, calls = self.local_result
                ended += local_ended
                error = error or local_error
                result = {}
                if calls is not None:
                    self.call_results[first:last] = calls
                if not self.local.obs_plan.shared:  # copied, as the workers' pickles are
                    self.obs_values[first:last] = copy.deepcopy(self.local.obs_values)
            else:
                message = self.read_message(w)
                result = message[1] if message is not None and message[0] == "result" else {}
                if message is not None and message[0] == "error":
                    error = error or message[1:]
                line = w * WORDS_PER_LINE
                ended += control[line + shm.ENDED]
                if control[line + shm.HAS_INFO] == shm.INFO_SHARED:
                    block = shm.decode_info(self.views["info_area"][w])
                else:
                    block = result.get("info")
            if result:  # a worker's pickled observations or call results
                if result.get("obs") is not None:
                    self.obs_values[first:last] = result["obs"]
                if result.get("call") is not None:
                    self.call_results[first:last] = result["call"]
            if w in self.replaced_this_call:
                block = self._replaced_rows(w, block)
            if block:  # at the block's first row of the batch
                infos = merge_block_info(infos, block, rows[first] if rows else first, nrows)
        if error is not None:
            what = "the call raised" if self.op == shm.OP_CALL else "the env raised"
            raise env_error(*error, f"{what} in its worker process")
        return infos, ended

    # ------------------------------------------------------------------ death and restart
    def check_alive(self, waiting: list[int] | None = None) -> None:
        """Raises WorkerDiedError (after `on_fatal`) if a worker process has died; with
        restart=True a dead worker among `waiting` is replaced instead."""
        for w, process in enumerate(self.processes):
            if process is None or process.poll() is None:
                continue
            if self.restart and self.state is SetState.RUNNING and waiting is not None:
                if w in waiting:
                    self._replace(w)
                continue
            self.on_fatal()
            raise self._died(w, process.returncode, "; the env is now closed")

    def _replace(self, w: int) -> None:
        """restart=True: replaces dead worker `w` by a fresh process with new envs and resets
        them; the block's rows of the call in progress are then rewritten by `_replaced_rows`."""
        block = self.block(w)
        code = self.processes[w].returncode
        self.connections[w].close()
        self.restarts += 1
        self.views["control"][w, :] = 0  # fresh command/done sequence and sleeper count
        self._command_seq[w] = 0
        self.views["done"][block.start : block.stop] = False  # the new worker knows no old rows
        self.state = SetState.RESTARTING
        try:
            self._spawn(w)
            message = self._expect(w, "ready")
            spawn.check_spaces(self.spaces, block.start, message)
            self.connections[w].send(("attach", self._layout))
            self._expect(w, "attached")
            v = self.views
            v["reset_mask"][block.start : block.stop] = True
            if self.op != shm.OP_RESET:  # a reset() in progress keeps the seeds it was given
                v["seed_set"][block.start : block.stop] = False
            pending = self.op == shm.OP_STEP and self.mode_code == NEXT_STEP
            self.dispatch(shm.OP_RESET_PENDING if pending else shm.OP_RESET, [w])
            self.wait_for([w])
        except KeyboardInterrupt:  # the replacement is half built: close, let Ctrl-C through
            self.on_fatal()
            raise
        except BaseException as exc:  # reported to the parent
            self.on_fatal()
            raise self._died(w, code, f" and could not be restarted: {exc}") from exc
        finally:
            if self.state is SetState.RESTARTING:
                self.state = SetState.RUNNING
        self.replaced_this_call.add(w)

    def _died(self, w: int, code: int, tail: str) -> WorkerDiedError:
        block, how = self.block(w), spawn.exit_description(code)
        error = WorkerDiedError(f"worker {w} (envs {block[0]}..{block[-1]}) died ({how}){tail}")
        error.env_index = block[0]
        return error

    def _replaced_rows(self, w: int, block: dict | None) -> dict:
        """The rows of block `w`, whose worker was replaced during this call: after a step they
        report a truncated episode (reward 0, the new episode's first observation; in SAME_STEP
        mode also as final_obs); every row carries info["worker_restarted"]."""
        self.replaced_this_call.discard(w)
        rows = self.block(w)
        first, last = rows.start, rows.stop
        v = self.views
        stepped = self.op == shm.OP_STEP
        same_step = self.mode_code == SAME_STEP
        if stepped:
            v["reward"][first:last] = 0.0
            v["terminated"][first:last] = False
            v["truncated"][first:last] = True
            v["done"][first:last] = False  # the cut episodes get no statistics
        obs = leaf_views(v, "obs")  # a final observation: the new episode's first, as it is
        final = (
            [(self.obs_plan.row(obs, i) if obs else self.obs_values[i], {}) for i in rows]
            if stepped and same_step
            else [None] * len(rows)
        )
        entries = [(i, f, {"worker_restarted": True}) for i, f in zip(rows, final, strict=True)]
        restarted = block_info(entries, first, len(rows))
        return merge_block_info(block or {}, restarted, 0, len(rows))

    # ------------------------------------------------------------------ close
    def close(self) -> None:
        """Closes the envs and stops every worker (2 s for all together, then SIGKILL).
        Idempotent; never raises for a worker that is already gone."""
        if self.state is SetState.CLOSED:
            return
        self.state = SetState.CLOSED
        if self.local is not None:
            for env in self.local.envs:
                env.close()
            self.local = None
        live = [w for w, p in enumerate(self.processes) if p is not None and p.poll() is None]
        if self._control is not None and live:
            try:
                self.dispatch(shm.OP_CLOSE, live)
            except Exception:  # closing must go on
                pass
        deadline = time.monotonic() + 2.0
        for process in filter(None, self.processes):
            try:
                process.wait(timeout=max(0.01, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=2.0)
        for connection in filter(None, self.connections):
            connection.close()
        self.processes = [None] * len(self.processes)
        self.connections = [None] * len(self.connections)
        if self._memfd >= 0:
            os.close(self._memfd)
            self._memfd = -1
        if self._control is not None:
            self._control.release()
            self._control = None
        self.views = {}
        if self._memory is not None:
            try:
                self._memory.close()
            except BufferError:  # a caller still holds a view: the mapping goes with it
                pass
            self._memory = None


def _joined(arguments: dict | None, workers: list[int], op: int):
    """The argument of the caller's own envs (blocks `workers`, in order) from the workers' ones:
    a pickled space's actions, one list; a call, its values joined."""
    if arguments is None:
        return None
    if op == shm.OP_CALL:
        name, values, args, kwargs = arguments[workers[0]]
        if values is not None:
            values = [v for w in workers for v in arguments[w][1]]
        return name, values, args, kwargs
    return [a for w in workers for a in arguments[w]]
