"""Episode statistics of a batch of agent rows, in ``RecordEpisodeStatistics``' layout: one
entry per row (an agent of an env) whose episode ended in this step.

An agent's episode is the steps its row is active (``info["active"]``): its return sums the
rewards of those steps, its length counts them, its time is the wall clock since the row's
previous episode ended (or its env was made or reset). An agent's episode ends on the step its row's ``terminated`` or ``truncated`` is
set (which may come before the rest of its env). In NEXT_STEP mode the step after an env's end
is its reset: it starts the new episodes and counts for none.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from fastbatch._infos import episode_info

__all__ = ["AgentEpisodes"]


class AgentEpisodes:
    """Running returns and lengths of `rows` agent rows, `agents` per env (env-major)."""

    def __init__(self, rows: int, agents: int, stats_key: str | None) -> None:
        self.stats_key = stats_key
        self._agents = agents
        self._return = np.zeros(rows, np.float64)
        self._length = np.zeros(rows, np.int64)
        self._began = np.full(rows, time.perf_counter())

    def restart(self, env_mask: np.ndarray | None = None) -> None:
        """The envs of `env_mask` (``[envs]`` bool; None: all) begin new episodes."""
        rows = slice(None) if env_mask is None else np.repeat(env_mask, self._agents)
        self._return[rows] = 0.0
        self._length[rows] = 0
        self._began[rows] = time.perf_counter()

    def step(self, reward, active, done, reset_rows=None) -> dict[str, Any]:
        """Folds one step of every row (``reward``, ``active``, ``done`` = terminated or
        truncated, each ``[rows]``) and returns the info entries of the rows whose episode ended
        (none when the env keeps no statistics or none ended). ``reset_rows`` (``[rows]`` bool):
        rows whose step was their env's reset (NEXT_STEP), which start over and count nothing."""
        if self.stats_key is None:  # nothing kept: no work per step
            return {}
        if reset_rows is not None and reset_rows.any():
            self._return[reset_rows] = 0.0
            self._length[reset_rows] = 0
            self._began[reset_rows] = time.perf_counter()
            active = active & ~reset_rows
        self._return += np.where(active, reward, 0.0)
        self._length += active
        if not done.any():
            return {}
        ended = done.copy()
        now = time.perf_counter()
        info = episode_info(
            ended,
            np.where(ended, self._return, 0.0),
            np.where(ended, self._length, 0),
            np.where(ended, np.round(now - self._began, 6), 0.0),
            self.stats_key,
        )
        self._return[ended] = 0.0
        self._length[ended] = 0
        self._began[ended] = now
        return info
