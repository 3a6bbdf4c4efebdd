"""The worker side of the process backend: steps a contiguous block of Python envs.

Protocol (see shm.py for the layout): the parent writes an operation into this worker's
control line and bumps its command sequence word; the worker spins briefly, then sleeps on that
word's futex, runs the operation over its block (reading the operation's argument from its pipe
when it has one: a pickled space's actions, a call), writes results into the shared arrays,
marks the command done, bumps the shared completion counter, and then sends at most one message
over its pipe: its error, or the results that are not in the shared memory (infos that do not
fit the info area, a pickled space's observations, a call's results). The pipe also carries the
start-up handshake.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import signal
import sys
from multiprocessing.connection import Connection

import cloudpickle

from fastbatch import _core
from fastbatch._infos import block_info
from fastbatch.process.block import Block
from fastbatch.process.gym_registry import install_registry, quiet_reregistration
from fastbatch.process.moving import pickle_to_move, settled
from fastbatch.process.shm import (
    CMD_SEQ,
    DONE_SEQ,
    ENDED,
    HAS_INFO,
    INFO_NONE,
    INFO_PIPE,
    INFO_SHARED,
    LINE,
    OP,
    OP_CALL,
    OP_CLOSE,
    OP_HAND_OVER,
    OP_RESET,
    OP_RESET_PENDING,
    OP_STEP,
    OP_TAKE_BACK,
    PIPED,
    STATUS,
    STATUS_ERROR,
    STATUS_OK,
    Layout,
    encode_info,
    error_message,
    recv_message,
    send_message,
    word_address,
)
from fastbatch.process.spawn import ready_message

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


def main(argv: list[str]) -> None:
    """Entry point: ``python -m fastbatch.process.worker CONN_FD MEM_FD INDEX PARENT_PID FIRST MODE``.

    CONN_FD is this worker's end of a socket pair to the parent; MEM_FD is the shared memory
    (a memfd, sized by the parent once the spaces are known).
    """
    conn_fd, mem_fd, index, parent_pid, first, mode = (int(x) for x in argv)
    _die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    conn = Connection(conn_fd)
    envs: list = []
    try:
        paths, factories, registry = cloudpickle.loads(conn.recv_bytes())
        sys.path[:] = paths + [p for p in sys.path if p not in paths]  # before unpickling envs
        fns = cloudpickle.loads(factories)
        with quiet_reregistration():
            install_registry(registry)
            for fn in fns:
                envs.append(fn())
        send_message(conn, ready_message(envs))
    except BaseException as exc:  # names the env whose factory raised
        send_message(conn, error_message(first + len(envs), exc))
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
        _serve(index, conn, Block(envs, first, mode, views), views, layout, parent_pid)
    finally:
        views = None


def _run(op: int, conn: Connection, block: Block, info_area) -> tuple[int, int, int, bytes | None]:
    """Runs `op` over the block: (status, where the infos are, episodes ended, the pickled
    message to send or None)."""
    result: dict = {}
    try:
        if block.lent is not None and op not in (OP_TAKE_BACK, OP_CLOSE):
            block.take_over(None)  # the caller never took what this block handed over
        infos, ended, where = [], 0, INFO_NONE
        if op == OP_STEP:
            infos, ended = block.step(None if block.act_plan.shared else recv_message(conn))
        elif op in (OP_RESET, OP_RESET_PENDING):
            infos, ended = block.reset(pending_autoreset=op == OP_RESET_PENDING)
        elif op == OP_CALL:
            result["call"] = block.call(*recv_message(conn))
        elif op == OP_CLOSE:  # envs handed over are the caller's to close
            for env in block.envs:
                env.close()
        elif op == OP_HAND_OVER:
            return STATUS_OK, INFO_NONE, 0, _hand_over(block)
        elif op == OP_TAKE_BACK:
            block.take_over(settled(recv_message(conn)))
        if op in (OP_STEP, OP_RESET, OP_RESET_PENDING) and not block.obs_plan.shared:
            result["obs"] = block.obs_values
        if infos:  # merged here, in parallel with the other workers: one array per key
            merged = block_info(infos, block.first, len(block.envs))
            where = INFO_SHARED if encode_info(merged, info_area) else INFO_PIPE
            if where == INFO_PIPE:
                result["info"] = merged
        # Pickled here, so that a value that does not pickle is this command's error.
        return STATUS_OK, where, ended, cloudpickle.dumps(("result", result)) if result else None
    except BaseException as exc:  # reported to the parent
        error = error_message(block.first + block.current, exc)
        return STATUS_ERROR, INFO_NONE, 0, cloudpickle.dumps(error)


def _hand_over(block: Block) -> bytes:
    """The block's envs and books pickled for the caller, which steps them from now on (the
    block keeps them aside until OP_TAKE_BACK). If they do not pickle, or would not come out the
    same (NotMovableError), the block keeps its envs and the error is this command's."""
    state = block.hand_over()
    try:
        return pickle_to_move(("result", {"block": state}))
    except BaseException:
        block.take_over(None)
        raise


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
        status, where, ended, message = _run(op, conn, block, info_area)
        ctl[line + HAS_INFO] = where
        ctl[line + ENDED] = ended
        ctl[line + STATUS] = status
        ctl[line + PIPED] = int(message is not None)
        ctl[line + DONE_SEQ] = seq
        _core._add_word(counter_address, 1)
        if (
            message is not None
        ):  # after the counter: the parent reads it once it sees the command done
            conn.send_bytes(message)
        if op == OP_CLOSE:
            return


if __name__ == "__main__":
    main(sys.argv[1:])
