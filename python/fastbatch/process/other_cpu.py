"""The cores other programs used, from Linux's ``/proc``: the machine's busy time less this
process's CPU time (every thread), that of its children it has waited for, and that of the live
processes ``exclude()`` names (the process backend's workers; a bench's own busy loop).

The rebalancer (rebalance.py) reads it before a probe that would hand a block back to its worker:
where other programs hold the cores the workers would need, such a probe cannot pay, so it is
skipped. Benches report it beside their figures (bench/_harness.py).

Threading: one owner.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable, Iterable

__all__ = ["OthersCpu"]

TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100  # /proc's clock ticks a second


class OthersCpu:
    """The cores that processes other than this one (and those ``exclude()`` names) used over an
    interval: `cores` since the interval began (construction or `restart`). None where ``/proc``
    cannot be read (not Linux)."""

    def __init__(
        self,
        exclude: Callable[[], Iterable[int]] = tuple,
        proc: str = "/proc",
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.exclude = exclude
        self.proc = proc
        self.clock = clock
        self.start = self._reading()

    def own_seconds(self) -> float:
        """CPU seconds of this process and of the children it has waited for."""
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.process_time() + children.ru_utime + children.ru_stime

    def _reading(self) -> tuple[float, float] | None:
        """(seconds the other processes were busy, all told since boot; the time now)."""
        try:
            with open(f"{self.proc}/stat") as f:
                ticks = [int(x) for x in f.readline().split()[1:9]]
            busy = (sum(ticks) - ticks[3] - ticks[4]) / TICK  # all but idle and iowait
            for pid in self.exclude():
                with open(f"{self.proc}/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                busy -= (int(fields[11]) + int(fields[12])) / TICK  # utime, stime
        except (OSError, ValueError, IndexError):
            return None
        return busy - self.own_seconds(), self.clock()

    def restart(self) -> None:
        """Starts the interval again, now."""
        self.start = self._reading()

    def elapsed(self) -> float:
        """Seconds since the interval began (0 where it could not be read)."""
        return 0.0 if self.start is None else self.clock() - self.start[1]

    def cores(self) -> float | None:
        """Cores the other processes used since the interval began, at least 0."""
        end = self._reading()
        if self.start is None or end is None or end[1] <= self.start[1]:
            return None
        return max(0.0, (end[0] - self.start[0]) / (end[1] - self.start[1]))
