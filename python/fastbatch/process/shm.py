"""The shared-memory layout and pipe messages of the process backend, used alike by the caller
and its workers.

One segment holds a control block (one 64-byte line per worker plus a completion counter) and
the batch arrays, each 64-byte aligned and laid out like the native batch buffers: the action
and observation leaves (one array per leaf of a shared space, see spaces.py), float32
rewards, bool terminated/truncated, then the reset request (mask and seeds) and the episode
statistics the workers compute.

Pipe messages (`send_message`/`recv_message`) are cloudpickled, so that values of classes the
worker rebuilt from the caller's pickles (a custom space, an env's own info objects) travel back.
A worker sends at most one message per command, after it has marked the command done: the
caller reads it then, so a message larger than the socket buffer cannot deadlock the two.
"""

from __future__ import annotations

import marshal
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import cloudpickle
import numpy as np

from fastbatch.errors import EnvError, env_error_type

LINE = 64

# Control words (uint32) of each worker's line. Each futex word is followed by its sleeper
# count (see _core._wait_word); the last line holds the completion counter and its count.
# PIPED: a message follows on the pipe (an error when STATUS is STATUS_ERROR, else a result).
CMD_SEQ, CMD_SLEEPERS, OP, STATUS, HAS_INFO, ENDED, DONE_SEQ, PIPED = range(8)
# Operations.
# OP_RESET_PENDING resets like OP_RESET and leaves the envs to reset again on their next step
# (a restarted worker's envs in NEXT_STEP mode, which just reported truncated=True).
# OP_CALL runs a call the caller sends on the pipe (get_attr, set_attr, call) on every env.
# OP_HAND_OVER sends the block's envs and books, pickled, to the caller, which steps them from
# then on; the worker keeps its copies, unstepped, until OP_TAKE_BACK sends the caller's back (or
# None: the caller could not take them, the worker's own copies go on). See rebalance.py.
OP_STEP, OP_RESET, OP_CLOSE, OP_RESET_PENDING, OP_CALL = 1, 2, 3, 4, 5
OP_HAND_OVER, OP_TAKE_BACK = 6, 7
# Statuses.
STATUS_OK, STATUS_ERROR = 0, 1
# Where a worker's infos are (HAS_INFO): none, in its piped result, or encoded in its info area.
INFO_NONE, INFO_PIPE, INFO_SHARED = 0, 1, 2
# Bytes of each worker's info area: infos that are flat numeric arrays (the common case, e.g.
# MuJoCo's per-step x_position/x_velocity/...) travel here, without pickling or a syscall.
INFO_BYTES = 1 << 16


def _align(n: int) -> int:
    return (n + LINE - 1) // LINE * LINE


Leaves = tuple[tuple[tuple[int, ...], str], ...]  # (per-env shape, dtype) of each leaf


@dataclass(frozen=True)
class Layout:
    num_envs: int
    num_workers: int
    obs_leaves: Leaves  # views "obs/0", "obs/1", ... (none for a pickled space)
    act_leaves: Leaves  # views "actions/0", ...

    def fields(self) -> list[tuple[str, tuple[int, ...], str]]:
        n = self.num_envs
        leaves = [
            (f"{what}/{k}", (n, *shape), dtype)
            for what, group in (("actions", self.act_leaves), ("obs", self.obs_leaves))
            for k, (shape, dtype) in enumerate(group)
        ]
        return [
            ("control", (self.num_workers + 1, LINE // 4), "uint32"),  # last: completion counter
            *leaves,
            ("reward", (n,), "float32"),
            ("terminated", (n,), "bool"),
            ("truncated", (n,), "bool"),
            ("reset_mask", (n,), "bool"),
            ("seed_set", (n,), "bool"),
            ("seeds", (n,), "uint64"),
            ("done", (n,), "bool"),
            ("ep_return", (n,), "float64"),
            ("ep_length", (n,), "int64"),
            ("ep_time", (n,), "float64"),
            ("info_area", (self.num_workers, INFO_BYTES), "uint8"),
        ]

    def size(self) -> int:
        total = 0
        for _, shape, dtype in self.fields():
            total += _align(int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize)
        return total + LINE  # room to align the start of the mapping

    def views(self, buffer) -> dict[str, np.ndarray]:
        """numpy views of every field over `buffer` (a writable buffer of at least size())."""
        raw = np.frombuffer(buffer, dtype=np.uint8)
        offset = (-raw.ctypes.data) % LINE
        out = {}
        for name, shape, dtype in self.fields():
            nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
            out[name] = raw[offset : offset + nbytes].view(dtype).reshape(shape)
            offset += _align(nbytes)
        return out


def leaf_views(views: dict[str, np.ndarray], what: str) -> list[np.ndarray]:
    """The leaf arrays of `what` ("obs" or "actions") among `views`, in leaf order."""
    out, k = [], 0
    while f"{what}/{k}" in views:
        out.append(views[f"{what}/{k}"])
        k += 1
    return out


def send_message(connection: Connection, message: Any) -> None:
    connection.send_bytes(cloudpickle.dumps(message))


def recv_message(connection: Connection) -> Any:
    return cloudpickle.loads(connection.recv_bytes())


def error_message(env_index: int, exc: BaseException) -> tuple:
    """("error", env index, traceback text, the exception's type cloudpickled, or None when it
    does not pickle): the caller raises it as `env_error` builds it. A type the worker rebuilt
    from the caller's pickles (one defined in the caller's script) goes back to that very type."""
    try:
        kind = cloudpickle.dumps(type(exc))
    except Exception:
        kind = None
    return ("error", env_index, "".join(traceback.format_exception(exc)), kind)


def env_error(
    index: int, text: str, kind: bytes | None, what: str = "the env raised in its worker process"
) -> Exception:
    """The caller's exception for an error of env `index` (the fields of `error_message`), with
    `what` happened, the worker's traceback and ``env_index``. One rule for every env error
    (creating an env, reset, step, a call): of the env's own type made an EnvError
    (`errors.env_error_type`) when that type can be rebuilt here and built from a message
    alone, else a plain EnvError."""
    message = f"env {index}: {what}:\n{text}"
    cls: type[Exception] = EnvError
    if kind is not None:
        try:
            loaded = cloudpickle.loads(kind)
            if isinstance(loaded, type) and issubclass(loaded, Exception):
                cls = env_error_type(loaded)
        except Exception:  # not importable here: EnvError
            cls = EnvError
    try:
        exc = cls(message)
    except Exception:  # a constructor that needs other arguments
        exc = EnvError(message)
    exc.env_index = index
    return exc


def word_address(control: np.ndarray, line: int, word: int) -> int:
    return control.ctypes.data + (line * (LINE // 4) + word) * 4


def encode_info(block: dict[str, Any], area: np.ndarray) -> bool:
    """Writes `block` (one worker's infos, key -> array) into `area` when every value is a
    numeric numpy array and it all fits; False otherwise (the caller then pickles it).

    Format: a uint32 header length, a marshalled list of (key, dtype, shape, offset, nbytes)
    entries, then each array's bytes at its 8-byte-aligned offset."""
    entries, offset = [], 0
    for key, value in block.items():
        if type(value) is not np.ndarray or value.dtype.kind not in "biuf" or type(key) is not str:
            return False
        entries.append((key, value.dtype.str, value.shape, offset, value.nbytes))
        offset += (value.nbytes + 7) & ~7
    header = marshal.dumps(entries)
    start = (4 + len(header) + 7) & ~7
    if start + offset > len(area):
        return False
    raw = memoryview(area)
    raw[:4] = len(header).to_bytes(4, "little")
    raw[4 : 4 + len(header)] = header
    for (_, _, _, at, nbytes), value in zip(entries, block.values(), strict=True):
        raw[start + at : start + at + nbytes] = np.ascontiguousarray(value).tobytes()
    return True


def decode_info(area: np.ndarray) -> dict[str, Any]:
    """The infos `encode_info` wrote, as arrays viewing `area` (valid until the next command)."""
    raw = memoryview(area)
    length = int.from_bytes(raw[:4], "little")
    start = (4 + length + 7) & ~7
    out = {}
    for key, dtype, shape, at, nbytes in marshal.loads(raw[4 : 4 + length]):
        out[key] = np.frombuffer(raw[start + at : start + at + nbytes], dtype=dtype).reshape(shape)
    return out
