"""The shared-memory layout of the process backend, built identically by parent and workers.

One segment holds a control block (one 64-byte line per worker plus a completion counter) and
the batch arrays, each 64-byte aligned and laid out like the native batch buffers: actions,
observations, float32 rewards, bool terminated/truncated, then the reset request (mask and
seeds) and the episode statistics the workers compute.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LINE = 64

# Control words (uint32) of each worker's line. Each futex word is followed by its sleeper
# count (see _core._wait_word); the last line holds the completion counter and its count.
CMD_SEQ, CMD_SLEEPERS, OP, STATUS, HAS_INFO, ENDED, DONE_SEQ = range(7)
# Operations.
OP_STEP, OP_RESET, OP_CLOSE = 1, 2, 3
# Statuses.
STATUS_OK, STATUS_ERROR = 0, 1


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
            ("control", (self.num_workers + 1, LINE // 4), "uint32"),  # last line: completion counter
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
