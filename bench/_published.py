"""What bench/plots.py reads from the published results (bench/published/, or any folder of
the JSON files the bench scripts write): the files, each run's machine, date and command from
its ``meta``, the methods a table holds, ratios and their formatting, and each method's label
and colour. Only the standard library: no fastbatch, no matplotlib.
"""

from __future__ import annotations

import json
import shlex
import statistics
from pathlib import Path
from typing import Any

PUBLISHED = Path(__file__).resolve().parent / "published"

# Each method's label and line colour, the same in every figure; methods not listed are drawn
# under their own name in grey.
STYLES: dict[str, tuple[str, str]] = {
    "fastbatch": ("fastbatch", "#1f77b4"),
    "fb-sync": ("fastbatch", "#1f77b4"),
    "fastbatch-1t": ("fastbatch, 1 thread", "#6baed6"),
    "fb-async": ("fastbatch async", "#17becf"),
    "fb-clock": ("fastbatch, MuJoCo profiling clock on", "#9ecae1"),
    "native-loop": ("C++ loop (no Python)", "#7f7f7f"),
    "cpp-loop": ("C++ loop (no Python)", "#7f7f7f"),
    "envpool": ("EnvPool", "#d62728"),
    "ale-vector": ("ALE AtariVectorEnv", "#9467bd"),
    "process": ("process backend", "#8c564b"),
    "gym-sync": ("gymnasium SyncVectorEnv", "#2ca02c"),
    "gym-async": ("gymnasium AsyncVectorEnv", "#ff7f0e"),
    "sb3": ("Stable-Baselines3", "#ff7f0e"),
}

# throughput.json's row keys that are not methods.
ROW_KEYS = ("env", "num_envs", "frames", "fastbatch_us_per_batch_step")


# ------------------------------------------------------------------------------- the data
def load(data_dir: Path, name: str) -> dict[str, Any] | None:
    """`name`'s ``{"meta": ..., "results": ...}`` in `data_dir`, or None if there is no file."""
    path = Path(data_dir) / name
    return json.loads(path.read_text()) if path.exists() else None


def command(meta: dict[str, Any]) -> str:
    """The command line that wrote the data (``python`` and ``meta["argv"]``, quoted as a
    shell would need it), or a line that says it was not recorded."""
    argv = meta.get("argv")
    return "python " + shlex.join(argv) if argv else "(command not recorded)"


def machine(meta: dict[str, Any]) -> str:
    """The CPU with its code-path features and the cores: "AMD EPYC (avx2 ...), 2 cores (of 2)"."""
    return (
        f"{meta.get('cpu', 'unknown CPU')}, {meta.get('cores')} cores (of {meta.get('cpu_count')})"
    )


def when(meta: dict[str, Any]) -> str:
    """The run's UTC start as "2026-12-06 19:29 UTC"."""
    return meta["utc"][:16].replace("T", " ") + " UTC" if "utc" in meta else "date unknown"


def load_line(meta: dict[str, Any]) -> str:
    """The 1-minute load average at the start and the end of the run, as the meta has them."""
    start, end = meta.get("load_average"), meta.get("load_average_end")
    return (
        f"load average {start[0] if start else '-'} at the start, {end[0] if end else '-'} at"
        " the end"
    )


def footer(meta: dict[str, Any]) -> str:
    """A figure's two footer lines: the command and date, then the machine and its load."""
    return f"{command(meta)}    {when(meta)}\n{machine(meta)}; {load_line(meta)}"


def methods_of(rows: list[dict[str, Any]]) -> list[str]:
    """The methods the rows hold a figure for (in some row), in the order of the rows' keys."""
    keys = dict.fromkeys(key for row in rows for key in row if key not in ROW_KEYS)
    return [k for k in keys if any(isinstance(row.get(k), (int, float)) for row in rows)]


def ratio(a: float | None, b: float | None) -> float | None:
    """``a / b``, or None when either is missing or zero."""
    return a / b if a and b else None


def format_ratio(x: float | None) -> str:
    """A ratio in three significant figures (``1.23x``, ``45.6x``, ``789x``; whole numbers
    from 100x); ``-`` for None."""
    if x is None:
        return "-"
    return f"{x:.2f}x" if x < 10 else f"{x:.1f}x" if x < 100 else f"{x:.0f}x"


def spread(values: list[float]) -> str:
    """The median of `values` and their range: ``2.10x (1.50x to 3.00x)``; ``-`` if none."""
    if not values:
        return "-"
    return (
        f"{format_ratio(statistics.median(values))} "
        f"({format_ratio(min(values))} to {format_ratio(max(values))})"
    )


def style(method: str) -> tuple[str, str]:
    """`method`'s (label, colour)."""
    return STYLES.get(method, (method, "#bbbbbb"))


def mujoco_stat(row: dict[str, Any]) -> dict[str, float | None]:
    """A mujoco_envs.json row's figures per method: its ``median`` (or ``max``, with --stat)."""
    return row.get("median", row.get("max", {}))


def best_sb3_runs(row: dict[str, Any]) -> tuple[int | None, list[dict[str, Any]]]:
    """A ppo.json row's SB3 runs at its faster thread count: (threads, runs); (None, [])
    when SB3 did not run. JSON keeps the thread counts as strings."""
    threads = row.get("sb3_best_threads")
    if threads is None:
        return None, []
    return threads, row["sb3"][str(threads)]
