"""Idle CPU on this machine, from Linux's ``/proc/stat``: what the rebalancer (rebalance.py)
reads before a probe that would hand a block back to its worker. Such a probe costs two moves
of pickled envs and a block of batch steps in the probed layout; where no core is idle (another
program has the one the worker would run on) it cannot pay, so it is skipped.

Threading: one owner (the facade's caller).
"""

from __future__ import annotations

__all__ = ["IdleCpu"]


class IdleCpu:
    """Cores the whole machine left idle (idle and iowait time, every process counted) between
    the readings of `cores`."""

    MIN_TICKS = 20
    """Clock ticks (10 ms each on most kernels), summed over the CPUs, a reading must span to
    count: fewer make the fraction too coarse, and the reading waits for more."""

    def __init__(self, path: str = "/proc/stat") -> None:
        self.path = path
        self._last = self._read()[1]

    def _read(self) -> tuple[int, tuple[int, int] | None]:
        """(CPUs listed, (idle ticks, all ticks) of the machine), or (0, None) where the file is
        missing or not Linux's."""
        try:
            with open(self.path, "rb") as f:
                lines = f.read().splitlines()
        except OSError:
            return 0, None
        fields = lines[0].split() if lines else []
        if len(fields) < 6 or fields[0] != b"cpu":
            return 0, None
        # user nice system idle iowait irq softirq steal (guest time is counted in user already)
        ticks = [int(v) for v in fields[1:9]]
        cpus = sum(1 for line in lines[1:] if line.startswith(b"cpu"))
        return cpus, (ticks[3] + ticks[4], sum(ticks))

    def cores(self) -> float | None:
        """Idle cores (0 to the machine's count) since the last reading that counted; None where
        ``/proc/stat`` cannot be read or too little time has passed to tell."""
        cpus, now = self._read()
        if now is None or self._last is None or cpus == 0:
            self._last = now
            return None
        idle, total = now[0] - self._last[0], now[1] - self._last[1]
        if total < self.MIN_TICKS:
            return None  # the baseline stays: the next reading spans more time
        self._last = now
        return cpus * idle / total
