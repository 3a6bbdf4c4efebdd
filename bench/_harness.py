"""What every script in bench/ measures with: one timed loop, action tables, medians, rate and
table formatting, the core count and the metadata printed beside each run's results.

The timing rules (bench/README.md, "Harness", says the same):

- Warm-up: before its first timed run, a contender steps untimed for ``Budget.warmup``
  seconds (default: one timed run's ``seconds``), and at least one pass over its action table.
- Stop: a timed run steps whole passes over the action table and stops after the first pass
  at which both ``Budget.min_calls`` batch steps and ``Budget.seconds`` of wall time are done;
  its rate is rows x batch steps / elapsed seconds.
- A C++-driven loop (``NativeLoop``: it can only be told a step count) obeys the same two
  minima: its warm-up runs grow the step count until a run lasts ``warmup`` seconds, every
  timed run is sized from the last rate to last ``seconds``, and a run that still ends short
  is discarded and rerun longer.
- Figures are medians over ``repeats`` timed runs of each contender; ``interleaved`` warms
  every contender up, then times them in rounds (each contender once a round, in order), so
  that drifting load falls on all of them alike.

No env reaches this module through an import: the scripts pass their env's spaces and step
functions in. It imports two fastbatch helpers for the run's metadata, so that a figure is
printed beside what the library itself reads: `fastbatch.cpu` (the CPU model and the features
fastbatch's dispatch checks, for the header's CPU line) and `fastbatch.process.other_cpu`
(``OthersCpu``: the cores other processes used, as the process backend's rebalancer measures
them).
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import gymnasium
import numpy as np

from fastbatch import cpu
from fastbatch.process.other_cpu import OthersCpu

TABLE_SIZE = 16  # action arrays in a default table: one pass of the timed loop


# ------------------------------------------------------------------------------------- cores
def core_ids() -> list[int]:
    """The ids of the cores this process may run on (its affinity mask), sorted; on a system
    without affinity masks, 0 .. os.cpu_count() - 1."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return list(range(os.cpu_count() or 1))


def cores() -> int:
    """How many cores this process may run on: ``len(core_ids())``, at least 1. The same count
    fastbatch's default ``num_workers`` uses."""
    return max(1, len(core_ids()))


# ----------------------------------------------------------------------------- action tables
def action_table(
    space: gymnasium.spaces.Space, rows: int, count: int = TABLE_SIZE, seed: int = 0
) -> np.ndarray:
    """Pre-drawn random actions for `rows` envs whose single action space is `space`.

    Returns a new C-contiguous array of shape ``[count, rows, *space.shape]`` and dtype
    ``space.dtype``; ``table[k]`` is one batch step's actions. Draws depend only on `seed`
    (not on what was drawn before). Discrete and MultiDiscrete: uniform over the space's
    values (``start`` included); MultiBinary: 0 or 1; Box: uniform within its bounds (an
    unbounded side is taken one unit from the other bound, or at -1 / 1 when both are
    unbounded), integer Boxes inclusive of ``high``. Other spaces raise TypeError.
    """
    if rows < 1 or count < 1:
        raise ValueError(f"rows and count must be at least 1, got {rows} and {count}")
    spaces = gymnasium.spaces
    if not isinstance(
        space, (spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary, spaces.Box)
    ):
        raise TypeError(
            "action_table takes a Discrete, MultiDiscrete, MultiBinary or Box space, got "
            f"{type(space).__name__}"
        )
    rng = np.random.default_rng(seed)
    shape = (count, rows, *space.shape)
    if isinstance(space, spaces.Discrete):
        table = int(space.start) + rng.integers(int(space.n), size=shape)
    elif isinstance(space, spaces.MultiDiscrete):
        table = space.start + rng.integers(space.nvec, size=shape)
    elif isinstance(space, spaces.MultiBinary):
        table = rng.integers(2, size=shape)
    else:  # Box
        low = np.broadcast_to(space.low, space.shape).astype(np.float64)
        high = np.broadcast_to(space.high, space.shape).astype(np.float64)
        low, high = (
            np.where(np.isfinite(low), low, np.where(np.isfinite(high), high - 1.0, -1.0)),
            np.where(np.isfinite(high), high, np.where(np.isfinite(low), low + 1.0, 1.0)),
        )
        if np.issubdtype(space.dtype, np.integer):
            table = rng.integers(
                low.astype(np.int64), high.astype(np.int64), size=shape, endpoint=True
            )
        else:
            table = rng.uniform(low, high, size=shape)
    return np.ascontiguousarray(table, dtype=space.dtype)


# ------------------------------------------------------------------------------ timed loops
@dataclass(frozen=True)
class Budget:
    """How long a contender is warmed up and how long each of its timed runs lasts."""

    seconds: float
    """Minimum wall time of one timed run, seconds."""
    min_calls: int = 32
    """Minimum batch steps (calls of the step function) of one timed run."""
    warmup: float | None = None
    """Untimed seconds before a contender's first timed run; None: ``seconds``."""

    def __post_init__(self) -> None:
        if not self.seconds > 0:
            raise ValueError(f"seconds must be positive, got {self.seconds}")
        if self.min_calls < 1:
            raise ValueError(f"min_calls must be at least 1, got {self.min_calls}")
        if self.warmup is not None and self.warmup < 0:
            raise ValueError(f"warmup must be at least 0, got {self.warmup}")

    @property
    def warmup_seconds(self) -> float:
        """The warm-up in seconds (``warmup``, or ``seconds`` when it is None)."""
        return self.seconds if self.warmup is None else self.warmup


def calls_per_second(
    step: Callable[[Any], object],
    actions: Sequence[Any],
    seconds: float,
    min_calls: int = 1,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Calls of `step` per second: calls `step(a)` for each `a` of `actions`, pass after pass,
    and stops after the first pass at which at least `min_calls` calls and `seconds` seconds
    (by `clock`) are done. The clock is read once a pass, so a pass should be short against
    `seconds`. This is the one timed loop of bench/; ``Loop`` adds the warm-up."""
    if len(actions) == 0:
        raise ValueError("actions must hold at least one entry")
    calls, start = 0, clock()
    while True:
        for a in actions:
            step(a)
        calls += len(actions)
        elapsed = clock() - start
        if calls >= min_calls and elapsed >= seconds:
            return calls / elapsed


class Timed(Protocol):
    """A contender: ``warm_up()`` once (``warm`` says whether it was), then ``rate()`` is env
    steps/s of one timed run."""

    warm: bool

    def warm_up(self) -> None: ...

    def rate(self) -> float: ...


class Loop:
    """A Python step function over an action table, timed under a Budget.

    `step` is called with one entry of `actions` per batch step (entries may be None for a
    step that draws its own actions); each call steps `rows` envs. ``rate()`` warms up first
    if ``warm_up()`` was not called. Not thread-safe: one caller at a time."""

    def __init__(
        self,
        step: Callable[[Any], object],
        actions: Sequence[Any],
        rows: int,
        budget: Budget,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.step, self.actions, self.rows, self.budget = step, actions, rows, budget
        self.clock = clock
        self.warm = False

    def warm_up(self) -> None:
        """Untimed passes over the table for ``budget.warmup_seconds`` (at least one pass)."""
        calls_per_second(self.step, self.actions, self.budget.warmup_seconds, 1, self.clock)
        self.warm = True

    def rate(self) -> float:
        """Env steps per second (rows x batch steps / s) of one timed run."""
        if not self.warm:
            self.warm_up()
        budget = self.budget
        return self.rows * calls_per_second(
            self.step, self.actions, budget.seconds, budget.min_calls, self.clock
        )


class NativeLoop:
    """A loop driven outside Python, told only a step count: ``run(steps)`` performs `steps`
    batch steps of `rows` envs each and returns the seconds they took (e.g.
    ``_core._native_loop_seconds``). Timed under the same Budget minima as Loop (module
    docstring); the step count carries over from run to run."""

    GROWTH = 16.0  # the most a step count grows from one run to the next

    def __init__(self, run: Callable[[int], float], rows: int, budget: Budget) -> None:
        self.run, self.rows, self.budget = run, rows, budget
        self.steps = budget.min_calls
        self.warm = False

    def _next_steps(self, elapsed: float, target: float) -> int:
        """A step count that should take 1.1 x `target` seconds at the last run's pace."""
        per_step = max(elapsed, 1e-9) / self.steps
        wanted = math.ceil(1.1 * target / per_step)
        return max(self.budget.min_calls, min(wanted, int(self.steps * self.GROWTH) + 1))

    def warm_up(self) -> None:
        """Runs of growing length until one lasts ``budget.warmup_seconds`` (at least one)."""
        target = self.budget.warmup_seconds
        while True:
            elapsed = self.run(self.steps)
            done = elapsed >= target
            self.steps = self._next_steps(elapsed, self.budget.seconds if done else target)
            if done:
                break
        self.warm = True

    def rate(self) -> float:
        """Env steps per second of one timed run of at least ``budget.seconds`` seconds and
        ``budget.min_calls`` steps (shorter runs are discarded and rerun longer)."""
        if not self.warm:
            self.warm_up()
        while True:
            steps = self.steps
            elapsed = self.run(steps)
            self.steps = self._next_steps(elapsed, self.budget.seconds)
            if elapsed >= self.budget.seconds:
                return self.rows * steps / elapsed


def interleaved(contenders: Mapping[str, Timed], repeats: int) -> dict[str, list[float]]:
    """Every timed rate of every contender: those not yet warm are warmed up in turn, then
    `repeats` rounds each time every contender once, in the mapping's order. Returns name ->
    its `repeats` rates."""
    for c in contenders.values():
        if not c.warm:
            c.warm_up()
    rates: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, c in contenders.items():
            rates[name].append(c.rate())
    return rates


def repeated(contender: Timed, repeats: int) -> list[float]:
    """`repeats` timed rates of one contender (warmed up first if it is not warm)."""
    return interleaved({"only": contender}, repeats)["only"]


def async_cycle(env: Any, first_actions: np.ndarray) -> Callable[[np.ndarray], None]:
    """The steady loop of a vector env in async mode: sends `first_actions` (one row per env)
    now, and returns a step function that receives a batch and sends its argument (one row
    per env of that batch) back to the envs it returned. ``env`` needs ``send``/``recv``."""
    env.send(first_actions)

    def step(actions: np.ndarray) -> None:
        env.recv()
        env.send(actions)

    return step


# ---------------------------------------------------------------------------------- medians
def median(values: Iterable[float | None]) -> float | None:
    """The median of the values that are not None; None when there are none."""
    kept = [v for v in values if v is not None]
    return statistics.median(kept) if kept else None


def medians(runs: Mapping[str, Iterable[float | None]]) -> dict[str, float | None]:
    """``median`` of each entry: name -> median of its runs."""
    return {name: median(values) for name, values in runs.items()}


# -------------------------------------------------------------------- training curves
def first_crossing(
    rows: Iterable[Sequence[float]], threshold: float, window: int
) -> tuple[float, float] | tuple[None, None]:
    """(env steps, seconds) of the first progress.csv row (fastbatch.ppo.train's
    PROGRESS_COLUMNS) whose mean return reaches `threshold` over a whole `window` of episodes, or
    (None, None). A mean of fewer episodes does not count, as SB3's Monitor rows here always
    cover a whole window."""
    for steps, seconds, mean_return, episodes in rows:
        if mean_return >= threshold and episodes >= window:  # False for a nan mean or count
            return steps, seconds
    return None, None


# ------------------------------------------------------------------------------- formatting
def format_rate(x: float | None) -> str:
    """A rate (per second) in three or four significant figures: ``1.23M``, ``45.6k``,
    ``789``; ``-`` for None (a contender that did not run)."""
    if x is None:
        return "-"
    if abs(x) >= 1e6:
        return f"{x / 1e6:.2f}M"
    if abs(x) >= 1e3:
        return f"{x / 1e3:.1f}k"
    return f"{x:.0f}"


def format_ratio(a: float | None, b: float | None) -> str:
    """``a / b`` as ``1.23x``; ``-`` when either is None or zero."""
    return "-" if not a or not b else f"{a / b:.2f}x"


class Table:
    """A fixed-width text table: columns given as (title, width), right-aligned, or
    left-aligned where the width is negative. Cells are printed with ``str``; None as ``-``."""

    def __init__(self, *columns: tuple[str, int]) -> None:
        if not columns:
            raise ValueError("a table needs at least one column")
        self.columns = columns

    def row(self, *cells: object) -> str:
        """One line of `cells`, one a column; raises ValueError for a wrong count."""
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(self.columns)} cells expected, got {len(cells)}")
        parts = []
        for cell, (_, width) in zip(cells, self.columns, strict=True):
            text = "-" if cell is None else str(cell)
            parts.append(f"{text:<{-width}}" if width < 0 else f"{text:>{width}}")
        return "".join(parts)

    def header(self) -> str:
        """The line of column titles."""
        return self.row(*(title for title, _ in self.columns))

    def rule(self) -> str:
        """A line of dashes as long as the header."""
        return "-" * len(self.header())


# --------------------------------------------------------------------------------- metadata
def package_version(name: str) -> str | None:
    """`name`'s version: the imported module's ``__version__`` if it is imported, else the
    installed distribution's; None if neither (nothing is imported to find it)."""
    module = sys.modules.get(name)
    version = getattr(module, "__version__", None)
    if version is not None:
        return str(version)
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


# The CPU features that decide which code paths run (fastbatch's dispatch, TensorFlow's oneDNN
# default, EnvPool's and ALE's compilers' choices): named beside every figure.
FIGURE_FEATURES = ("avx2", "avx512f", "avx512bw", "avx512vbmi", "avx512_vnni", "avx512_bf16")


def cpu_line() -> str:
    """The CPU model and the FIGURE_FEATURES it has, plus any that
    FASTBATCH_DISABLE_CPU_FEATURES switches off: "AMD EPYC (avx2 avx512f ...)"."""
    flags = cpu.flags()
    have = " ".join(f for f in FIGURE_FEATURES if f in flags) or "none of " + "/".join(
        FIGURE_FEATURES
    )
    off = cpu.disabled()
    line = f"{cpu.model()} ({have})"
    return line + (f" with {cpu.DISABLE_VARIABLE}={','.join(sorted(off))}" if off else "")


class RunInfo:
    """The metadata of one benchmark run, taken when it is built: UTC date and time, the
    process's command line (``argv``: ``sys.argv``, the script first), cores (``cores()``) and
    ``os.cpu_count()``, the load average, python, the machine, the versions of fastbatch,
    numpy, gymnasium and any `packages`, and the script's `settings`.
    ``header()`` is the line a script prints before its results; ``finish()`` adds the load
    average at the end and the cores other processes used over the run (``OthersCpu``)."""

    def __init__(self, packages: Sequence[str] = (), **settings: Any) -> None:
        self._others = OthersCpu()
        now = datetime.datetime.now(datetime.timezone.utc)
        names = ("fastbatch", "numpy", "gymnasium", *packages)
        self.meta: dict[str, Any] = {
            "utc": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "argv": list(sys.argv),
            "cores": cores(),
            "cpu_count": os.cpu_count(),
            "load_average": _load_average(),
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpu": cpu_line(),
            "versions": {name: package_version(name) for name in names},
            **settings,
        }
        if "tensorflow" in packages:  # TensorFlow's oneDNN switch changes its CPU kernels
            self.meta["TF_ENABLE_ONEDNN_OPTS"] = os.environ.get("TF_ENABLE_ONEDNN_OPTS", "unset")

    def header(self) -> str:
        """One line: when, where (cores, load average) and with which versions."""
        meta = self.meta
        load = meta["load_average"]
        versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items() if v is not None)
        when = meta["utc"].replace("T", " ").removesuffix("Z")
        return (
            f"# {when} UTC; {meta['cpu']}; {meta['cores']} cores (of {meta['cpu_count']}); "
            "load average "
            + ("-" if load is None else " ".join(f"{x:.2f}" for x in load))
            + f"; python {meta['python']}, {versions}"
            + (
                f"; TF_ENABLE_ONEDNN_OPTS {meta['TF_ENABLE_ONEDNN_OPTS']}"
                if "TF_ENABLE_ONEDNN_OPTS" in meta
                else ""
            )
        )

    def finish(self) -> dict[str, Any]:
        """The metadata with ``load_average_end`` and ``others_cores`` (cores used by other
        processes since this RunInfo was built) added; call it once the results are in."""
        self.meta["load_average_end"] = _load_average()
        self.meta["others_cores"] = self._others.cores()
        return self.meta

    def footer(self) -> str:
        """``finish()``, as the line a script prints after its results."""
        meta = self.finish()
        load, others = meta["load_average_end"], meta["others_cores"]
        return (
            "# load average at end "
            + ("-" if load is None else " ".join(f"{x:.2f}" for x in load))
            + ("" if others is None else f"; other processes used {others:.2f} cores meanwhile")
        )


def _load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def write_json(
    path: str | Path, meta: Mapping[str, Any], results: Any, announce: bool = True
) -> Path:
    """Writes ``{"meta": meta, "results": results}`` to `path` (its folder made if missing;
    a file there is replaced), prints ``wrote PATH`` if `announce`, and returns the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": dict(meta), "results": results}, indent=2))
    if announce:
        print(f"wrote {out}")
    return out
