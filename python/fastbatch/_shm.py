"""The shared-memory layout of the process backend, built identically by parent and workers.

One segment holds a control block (one 64-byte line per worker plus a completion counter) and
the batch arrays, each 64-byte aligned and laid out like the native batch buffers: actions,
observations, float32 rewards, bool terminated/truncated, then the reset request (mask and
seeds) and the episode statistics the workers compute.
"""

from __future__ import annotations

import marshal
from dataclasses import dataclass
from typing import Any

import numpy as np

LINE = 64

# Control words (uint32) of each worker's line. Each futex word is followed by its sleeper
# count (see _core._wait_word); the last line holds the completion counter and its count.
CMD_SEQ, CMD_SLEEPERS, OP, STATUS, HAS_INFO, ENDED, DONE_SEQ = range(7)
# Operations.
# OP_RESET_PENDING resets like OP_RESET and leaves the envs to reset again on their next step
# (a restarted worker's envs in NEXT_STEP mode, which just reported truncated=True).
OP_STEP, OP_RESET, OP_CLOSE, OP_RESET_PENDING = 1, 2, 3, 4
# Statuses.
STATUS_OK, STATUS_ERROR = 0, 1
# Where a worker's infos are (HAS_INFO): none, pickled on its pipe, or encoded in its info area.
INFO_NONE, INFO_PIPE, INFO_SHARED = 0, 1, 2
# Bytes of each worker's info area: infos that are flat numeric arrays (the common case, e.g.
# MuJoCo's per-step x_position/x_velocity/...) travel here, without pickling or a syscall.
INFO_BYTES = 1 << 16


def _align(n: int) -> int:
    return (n + LINE - 1) // LINE * LINE


@dataclass(frozen=True)
class Layout:
    num_envs: int
    num_workers: int
    obs_shape: tuple[int, ...]
    obs_dtype: str
    act_shape: tuple[int, ...]
    act_dtype: str

    def fields(self) -> list[tuple[str, tuple[int, ...], str]]:
        n = self.num_envs
        return [
            (
                "control",
                (self.num_workers + 1, LINE // 4),
                "uint32",
            ),  # last line: completion counter
            ("actions", (n, *self.act_shape), self.act_dtype),
            ("obs", (n, *self.obs_shape), self.obs_dtype),
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
            ("final_obs", (n, *self.obs_shape), self.obs_dtype),
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
