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

    def step(self, reward, active, done, reset_rows=None, rows=None) -> dict[str, Any]:
        """Folds one step of the rows ``rows`` (an int array: an async recv's envs' rows; None:
        every row), given ``reward``, ``active``, ``done`` = terminated or truncated, each one
        entry per row stepped, and returns the info entries of the rows whose episode ended, in
        that order (none when the env keeps no statistics or none ended). ``reset_rows`` (bool,
        one per row stepped): rows whose step was their env's reset (NEXT_STEP), which start
        over and count nothing."""
        if self.stats_key is None:  # nothing kept: no work per step
            return {}
        at = slice(None) if rows is None else rows
        # Views of every row, or copies of the rows stepped (written back below).
        returns, lengths, began = self._return[at], self._length[at], self._began[at]
        if reset_rows is not None and reset_rows.any():
            returns[reset_rows] = 0.0
            lengths[reset_rows] = 0
            began[reset_rows] = time.perf_counter()
            active = active & ~reset_rows
        returns += np.where(active, reward, 0.0)
        lengths += active
        info: dict[str, Any] = {}
        if done.any():
            ended = done.copy()
            now = time.perf_counter()
            info = episode_info(
                ended,
                np.where(ended, returns, 0.0),
                np.where(ended, lengths, 0),
                np.where(ended, np.round(now - began, 6), 0.0),
                self.stats_key,
            )
            returns[ended] = 0.0
            lengths[ended] = 0
            began[ended] = now
        if rows is not None:
            self._return[rows], self._length[rows], self._began[rows] = returns, lengths, began
        return info
