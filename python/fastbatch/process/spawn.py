"""Starting one worker process of the process backend, and the messages of its handshake.

A worker is a fresh interpreter (``python -m fastbatch.process.worker``), so the caller's script
is never re-imported. Its first message from the caller holds the caller's ``sys.path``, the
block's env factories (cloudpickled) and the caller's gymnasium registry (see
gym_registry.py); it answers with `ready_message` (or an error), then maps the shared
memory it is sent and answers "attached".
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import cloudpickle

from fastbatch.process.shm import env_error, recv_message
from fastbatch.process.spaces import env_spaces

__all__ = ["check_spaces", "exit_description", "expect", "ready_message", "spawn_worker"]


def spawn_worker(
    index: int, first: int, env_fns: list, memfd: int, mode_code: int, registry: list[bytes]
) -> tuple[subprocess.Popen, Connection]:
    """Starts worker `index` for the envs `first, first + 1, ...` that `env_fns` build, and sends
    it its start message. Returns the process and the caller's end of its pipe."""
    parent_end, child_end = socket.socketpair()
    args = [child_end.fileno(), memfd, index, os.getpid(), first, mode_code]
    process = subprocess.Popen(
        [sys.executable, "-m", "fastbatch.process.worker", *map(str, args)],
        pass_fds=(child_end.fileno(), memfd),
        stdin=subprocess.DEVNULL,
    )
    child_end.close()
    connection = Connection(parent_end.detach())
    # The worker imports what the factories need with the caller's sys.path (a factory from a
    # module beside the caller's script then loads wherever the caller was started).
    start = (list(sys.path), cloudpickle.dumps(env_fns), registry)
    connection.send_bytes(cloudpickle.dumps(start))
    return process, connection


def ready_message(envs: list) -> tuple:
    """("ready", the first env's (observation, action) spaces, None or (k, the spaces of env k)
    for the block's first env k whose spaces differ from them, the first env's ``metadata`` and
    ``render_mode``)."""
    spaces = [env_spaces(e) for e in envs]
    odd = next(((k, s) for k, s in enumerate(spaces) if s != spaces[0]), None)
    about = {
        "metadata": dict(getattr(envs[0], "metadata", {})),
        "render_mode": getattr(envs[0], "render_mode", None),
    }
    return ("ready", spaces[0], odd, about)


def check_spaces(expected: tuple, first: int, message: tuple) -> None:
    """Raises RuntimeError, in the words of gymnasium's AsyncVectorEnv and naming the env and
    how its space differs, when an env of the block that starts at env `first` (its ready
    `message`) has spaces other than `expected`, env 0's (observation, action) spaces. The
    process backend batches one pair of spaces: it takes no ``observation_mode``."""
    index, spaces = first, message[1]
    if spaces == expected:
        if message[2] is None:
            return
        index, spaces = first + message[2][0], message[2][1]
    if spaces[0] != expected[0]:
        raise RuntimeError(
            "ProcessVectorEnv: some of the sub-environments observation spaces are not "
            f"equivalent: env {index} has {spaces[0]} where env 0 has {expected[0]} "
            f"({_how_differs(spaces[0], expected[0])}). Every env of a process-backend batch "
            "needs env 0's spaces (gymnasium's observation_mode='same'; 'different' is not taken)."
        )
    raise RuntimeError(
        f"ProcessVectorEnv: Some environments have an action space different from `{expected[1]}`. "
        "In order to batch actions, the action spaces from all environments must be equal: "
        f"env {index} has {spaces[1]} ({_how_differs(spaces[1], expected[1])})."
    )


def _how_differs(found: Any, expected: Any) -> str:
    """How space `found` differs from space `expected`, in a few words."""
    if type(found) is not type(expected):
        return f"a {type(found).__name__}, not a {type(expected).__name__}"
    shape, expected_shape = getattr(found, "shape", None), getattr(expected, "shape", None)
    if shape != expected_shape:
        return f"shape {shape}, not {expected_shape}"
    dtype, expected_dtype = getattr(found, "dtype", None), getattr(expected, "dtype", None)
    if dtype != expected_dtype:
        return f"dtype {dtype}, not {expected_dtype}"
    return "the same type, shape and dtype, with other bounds or parameters"


def expect(
    connection: Connection,
    process: subprocess.Popen,
    index: int,
    kind: str,
    timeout: float,
    on_dead: Callable[[], Any],
) -> tuple:
    """The next message of worker `index`, which must be of `kind`, within `timeout` seconds;
    `on_dead()` (which raises) if the process ends without one."""
    deadline = time.monotonic() + timeout
    while not connection.poll(0.05):
        if process.poll() is not None and not connection.poll():
            on_dead()
        if time.monotonic() > deadline:
            raise TimeoutError(f"worker {index} did not answer within {timeout:.0f} s")
    message = recv_message(connection)
    if message[0] == "error":
        raise env_error(*message[1:], f"could not be created in worker {index}")
    if message[0] != kind:
        raise RuntimeError(f"worker {index} sent {message[0]!r} where {kind!r} was expected")
    return message


def exit_description(code: int) -> str:
    """How a process ended, from its return code."""
    return f"signal {-code}" if code < 0 else f"exit code {code}"
