"""The caller's results of the process backend, read out of the shared arrays.

Observations keep the structure of the observation space (an array, or the dict/tuple of arrays
gymnasium's ``SyncVectorEnv`` returns); a pickled space's observations are batched with
gymnasium's ``concatenate`` from the values the workers sent. Every array handed out is a
64-byte-aligned copy that never changes behind the caller's back: full-batch result sets
(observation leaves, rewards and flags) are recycled once the caller has dropped every array of
the set, so a steady loop allocates nothing.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from fastbatch._buffers import aligned_copy
from fastbatch._infos import episode_info
from fastbatch.process.spaces import SpacePlan
from fastbatch.process.worker_set import WorkerSet

__all__ = ["ResultReader"]

# At most this many full-batch result sets are kept (a caller holding more gets fresh arrays,
# never shared ones).
MAX_RESULT_SETS = 8
STEP_FIELDS = ("reward", "terminated", "truncated")


def _result_set_free(arrays: tuple[np.ndarray, ...]) -> bool:
    """True when only the reader refers to these arrays: no caller holds one, nor a view of one.
    Each array is a view of its own raw aligned buffer (`aligned_copy`), and numpy makes every
    further view refer to that buffer, not to the array: both counts must be at their floor."""
    getrefcount = sys.getrefcount
    return all(getrefcount(a) == 3 and getrefcount(a.base) == 2 for a in arrays)


class ResultReader:
    """Builds ``reset``/``step`` results from the shared arrays of `workers` (read after the
    workers' results were collected, before the next command)."""

    def __init__(self, workers: WorkerSet, obs_plan: SpacePlan, stats_key: str | None) -> None:
        self._workers = workers
        self._plan = obs_plan
        self._stats_key = stats_key
        obs_leaves = [f"obs/{k}" for k in range(len(obs_plan.leaves))]
        self._fields = (*obs_leaves, *STEP_FIELDS)
        self._sets: list[tuple[np.ndarray, ...]] = []

    def observations(self) -> Any:
        """Every env's latest observation, as fresh arrays (or a fresh batch of pickled values)."""
        if not self._plan.shared:
            return self._plan.batch(self._workers.obs_values)
        v = self._workers.views
        return self._plan.assemble(
            [aligned_copy(v[f"obs/{k}"]) for k in range(len(self._plan.leaves))]
        )

    def step(self, rows: slice | np.ndarray, infos: dict, ended: int) -> tuple:
        """(obs, reward, terminated, truncated, info) of the envs `rows` (a slice: all), with the
        episode statistics of the `ended` episodes added to `infos`."""
        v = self._workers.views
        arrays = (
            self._full_batch()
            if isinstance(rows, slice)
            else tuple(aligned_copy(v[name][rows]) for name in self._fields)
        )
        reward, terminated, truncated = arrays[-3:]
        if self._plan.flat:
            obs = arrays[0]
        elif self._plan.shared:
            obs = self._plan.assemble(list(arrays[:-3]))
        else:
            values = self._workers.obs_values
            obs = self._plan.batch(values if isinstance(rows, slice) else [values[i] for i in rows])
        if ended and self._stats_key is not None:
            done = v["done"][rows].copy()  # workers write statistics only for ended episodes
            stats = episode_info(
                done,
                np.where(done, v["ep_return"][rows], 0.0),
                np.where(done, v["ep_length"][rows], 0),
                np.where(done, v["ep_time"][rows], 0.0),
                self._stats_key,
            )
            infos.update(stats)
        return obs, reward, terminated, truncated, infos

    def _full_batch(self) -> tuple[np.ndarray, ...]:
        """Fresh-to-the-caller copies of every env's shared results: a recycled set of aligned
        arrays when the caller has dropped one, else a new set."""
        v = self._workers.views
        for arrays in self._sets:
            if _result_set_free(arrays):
                for name, array in zip(self._fields, arrays, strict=True):
                    np.copyto(array, v[name])
                return arrays
        arrays = tuple(aligned_copy(v[name]) for name in self._fields)
        if len(self._sets) < MAX_RESULT_SETS:
            self._sets.append(arrays)
        return arrays
