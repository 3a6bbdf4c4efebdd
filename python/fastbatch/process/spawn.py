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

from fastbatch.errors import EnvError
from fastbatch.process.shm import recv_message
from fastbatch.process.spaces import env_spaces

__all__ = ["exit_description", "expect", "ready_message", "shared_spaces", "spawn_worker"]


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
    """("ready", the first env's (observation, action) spaces, whether every env has them, the
    first env's ``metadata`` and ``render_mode``)."""
    spaces = [env_spaces(e) for e in envs]
    about = {
        "metadata": dict(getattr(envs[0], "metadata", {})),
        "render_mode": getattr(envs[0], "render_mode", None),
    }
    return ("ready", spaces[0], all(s == spaces[0] for s in spaces), about)


def shared_spaces(messages: list[tuple]) -> tuple:
    """The (observation, action) spaces of every block's ready message: RuntimeError, as
    gymnasium's vector envs raise, when an env's differ from the first env's."""
    spaces = messages[0][1]
    for w, message in enumerate(messages):
        if not message[2] or message[1] != spaces:
            raise RuntimeError(
                f"the envs of worker {w} do not all have the first env's spaces (observation "
                f"{spaces[0]}, action {spaces[1]})"
            )
    return spaces


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
        raise EnvError(f"env {message[1]} could not be created in worker {index}:\n{message[2]}")
    if message[0] != kind:
        raise RuntimeError(f"worker {index} sent {message[0]!r} where {kind!r} was expected")
    return message


def exit_description(code: int) -> str:
    """How a process ended, from its return code."""
    return f"signal {-code}" if code < 0 else f"exit code {code}"
