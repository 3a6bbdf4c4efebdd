"""Rebalancing the process backend: which blocks of envs the caller steps itself.

With ``in_parent`` the caller steps block 0 while worker processes step the others. That is the
fastest layout while every worker has a core of its own. When another program takes a core, a
worker that shares it gets a fraction of it, and its part of the batch then takes as long as
the whole batch does in one process (measured: 0.47x gymnasium's SyncVectorEnv on MinAtar
Breakout x8 with one of two cores busy). So the caller takes blocks over from their workers when
that measures faster, and gives them back when the workers are quick again.

The choice is the native pool's rule, written once: a `_core._ThreadTuner` over the number of
blocks stepped in parallel (1: the caller steps every block; ``num_workers``: each worker its
own), fed the duration of every batch step. The caller steps a prefix of the blocks (block 0
and the ones after it) as one block: a block more in the caller costs no per-block overhead.

A move: the worker pickles its block's envs and episode books (OP_HAND_OVER; block.py's
`pickle_to_move` refuses envs that would not come out the same, such as gymnasium's EzPickle
envs: MuJoCo, ALE) and keeps its own copies aside, unstepped; the caller unpickles them and
steps them on the same rows of the shared arrays. Giving a block back (OP_TAKE_BACK) pickles
the caller's copies to the worker, which steps them from then on. A worker whose hand-over the
caller never took (an error, a Ctrl-C) goes on with its own copies at its next command. Results
are the same whoever steps an env (tests/process/test_rebalance.py). A probe costs two moves:
the tuner spaces its probes by 32 times that cost.

A probe that would hand a block back to its worker (one more block in parallel) is skipped
while other programs hold the cores it needs (other_cpu.py: since the last check, they used
more than the machine's cores less the blocks the probe steps at once, with half a core of
slack; this process's own threads and its workers do not count): its worker would share a core
with them, so the probe could only lose, and its moves alone cost a few percent of the steps
between probes. The tuner counts it as lost (`skip_probe`): the choice stays and the next
probe waits longer.

The first block that cannot move turns rebalancing off for the life of the vector env
(``off_reason`` says why); the blocks then stay where they are.

Threading: the facade's caller only.
"""

from __future__ import annotations

import os
import time

from fastbatch import _core
from fastbatch.process import shm
from fastbatch.process.block import Block
from fastbatch.process.moving import NotMovableError, settled
from fastbatch.process.other_cpu import OthersCpu
from fastbatch.process.worker_set import WorkerSet

__all__ = ["SLACK_CORES", "Rebalancer"]

SLACK_CORES = 0.5
"""Cores other programs may hold beyond those a probe toward the workers leaves them."""
MIN_WINDOW_S = 0.1
"""Seconds the other programs' use must be measured over to count (/proc's ticks are 10 ms)."""


class Rebalancer:
    """Moves blocks of `workers` between their worker processes and the caller, before each
    sync batch step, to the placement its tuner measures fastest."""

    def __init__(self, workers: WorkerSet) -> None:
        self.workers = workers
        self.tuner = _core._ThreadTuner(workers.num_workers)
        self.off_reason: str | None = None  # why blocks no longer move (None: they do)
        self.forced: int | None = None  # tests: a fixed number of blocks stepped in parallel
        self.others = OthersCpu(exclude=lambda: [p.pid for p in workers.processes if p])
        self.skipped_probes = 0  # probes toward the workers skipped: other programs had the cores

    def place(self) -> None:
        """Before a batch step: with ``parallel`` blocks stepped in parallel (as the tuner or
        ``forced`` says), the caller steps blocks ``0 .. num_workers - parallel``, as one block,
        and the workers the others."""
        if self.off_reason is not None:
            return
        parallel = self.tuner.threads if self.forced is None else self.forced
        if self.forced is None and parallel > self.tuner.chosen and not self._room_for(parallel):
            self.tuner.skip_probe()  # a probe toward the workers, with no cores for them
            self.skipped_probes += 1
            parallel = self.tuner.threads
        workers, moved = self.workers, 0
        want = workers.num_workers - parallel + 1
        if workers.local_workers == want:  # every step but a probe's first and last
            return
        start = time.perf_counter()
        try:
            while workers.local_workers != want:
                if workers.local_workers < want:
                    _move_to_caller(workers, workers.local_workers)
                else:
                    _move_to_worker(workers, workers.local_workers - 1)
                moved += 1
        except NotMovableError as exc:
            self.off_reason = str(exc)
            return
        if moved:  # a probe moves a block there and back
            self.tuner.set_probe_cost(2.0 * (time.perf_counter() - start) / moved)

    def _room_for(self, parallel: int) -> bool:
        """Whether `parallel` blocks stepped at once would find cores that other programs left
        free since the last check (True where that cannot be told)."""
        if self.others.elapsed() < MIN_WINDOW_S:
            return True
        others = self.others.cores()
        self.others.restart()
        return others is None or others <= (os.cpu_count() or 1) - parallel + SLACK_CORES

    def record(self, seconds: float) -> None:
        """The duration of the batch step just taken with the current placement."""
        if self.off_reason is None and self.forced is None:
            self.tuner.record(seconds)


def _rebuilt(workers: WorkerSet, state: dict) -> None:
    """The caller's block from now on: `state`'s envs, blocks 0 .. local_workers - 1."""
    block = Block(state["envs"], 0, workers.mode_code, workers.views)
    block.take_over(state)
    workers.local = block


def _move_to_caller(workers: WorkerSet, w: int) -> None:
    """Block `w` (the one after the caller's) moves from its worker to this process, which steps
    it from now on. NotMovableError (nothing moved) when its envs would not come out the same or
    do not unpickle here."""
    workers.op = shm.OP_HAND_OVER
    workers.dispatch(shm.OP_HAND_OVER, [w])
    workers.wait_for([w])
    try:
        message = workers.read_message(w)  # unpickles the envs
    except Exception as exc:  # the worker goes on with its own copies at its next command
        raise NotMovableError(f"block {w}'s envs did not unpickle in the caller: {exc}") from exc
    if message is None or message[0] != "result":
        reason = message[2].strip().splitlines()[-1] if message else "no answer"
        raise NotMovableError(f"block {w}'s envs cannot move: {reason}")
    _rebuilt(workers, Block.joined(workers.local.hand_over(), settled(message[1]["block"])))
    workers.local_workers = w + 1


def _move_to_worker(workers: WorkerSet, w: int) -> None:
    """Block `w` (the caller's last) moves from this process back to its worker. NotMovableError
    when its envs no longer pickle or unpickle: the caller then keeps stepping them."""
    whole = workers.local.hand_over()
    head, tail = Block.split(whole, workers.block_bounds[w])
    try:
        workers.op = shm.OP_TAKE_BACK
        workers.dispatch(shm.OP_TAKE_BACK, [w], {w: tail})  # pickled before the worker wakes
        workers.local_workers = w
        _rebuilt(workers, head)  # block w is the worker's from here, even after a Ctrl-C
        workers.wait_for([w])
        message = workers.read_message(w)
        if message is not None and message[0] == "error":
            raise NotMovableError(message[2].strip().splitlines()[-1])
    except Exception as exc:
        workers.local_workers = w + 1
        _rebuilt(workers, whole)
        raise NotMovableError(f"block {w}'s envs cannot go back to their worker: {exc}") from exc
