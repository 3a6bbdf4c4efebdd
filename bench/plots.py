"""The benchmark page's figures and headline table, rendered from the published results.

    python bench/plots.py [--data bench/published] [--out DIR]   # DIR default: DATA/plots

Reads the JSON files that bench/throughput.py, mujoco_envs.py, atari.py and ppo.py wrote into
`--data` (``{"meta": ..., "results": ...}``, bench/_harness.py's write_json) and writes one SVG
a file into `--out`:

  throughput.svg       env steps/s against batch size (log-log), a panel per classic-control
                       env, a line per method the JSON holds (throughput.json)
  atari.svg            env steps/s of each contender at each batch size, a panel per game
                       (atari.json)
  mujoco.svg           per env, fastbatch sync over EnvPool and over gymnasium's
                       SyncVectorEnv (mujoco_envs.json)
  learning_curves.svg  mean return of the last 20 training episodes against wall-clock
                       seconds and against env steps, BatchPPO beside SB3, a column per
                       preset, a thin line per seed (ppo.json)

and prints the headline ratios (``headlines``) as Markdown. Every figure's footer names the
machine (the CPU with the features that pick code paths, and the cores), the UTC date and the
command that measured its data, all from the JSON's ``meta`` (``argv``: the command line). A
missing JSON file skips its figure (and its table) with a line that says so. The output is
deterministic: rendering the same JSON again gives the same bytes (a fixed ``svg.hashsalt``,
no date in the SVG's metadata, text kept as text rather than glyph paths).

Needs only matplotlib and the JSON: neither fastbatch nor the harness is imported.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib
from _published import (
    PUBLISHED,
    best_sb3_runs,
    command,
    footer,
    format_ratio,
    load,
    machine,
    methods_of,
    mujoco_stat,
    ratio,
    spread,
    style,
    when,
)
from matplotlib.figure import Figure

# The figures: output name -> the JSON file its data comes from.
SOURCES = {
    "throughput.svg": "throughput.json",
    "atari.svg": "atari.json",
    "mujoco.svg": "mujoco_envs.json",
    "learning_curves.svg": "ppo.json",
}

# Matplotlib settings that make the SVG bytes depend on the data alone.
RC = {
    "svg.hashsalt": "fastbatch-bench",  # ids of clip paths and glyphs, else random per run
    "svg.fonttype": "none",  # text as <text>, so that the footer is searchable text
    "font.size": 8,
}
SVG_METADATA = {"Date": None}  # no creation date in the file

# A learning curve of fewer points than this is drawn with markers (one point is no line).
SPARSE_CURVE = 20


# -------------------------------------------------------------------------------- figures
def _finish(fig: Figure, meta: dict[str, Any], path: Path) -> Path:
    fig.text(0.01, 0.005, footer(meta), fontsize=6.5, color="#555555", va="bottom")
    fig.savefig(path, format="svg", metadata=SVG_METADATA)
    return path


def throughput_figure(data: dict[str, Any], path: Path) -> Path:
    """throughput.svg: steps/s against batch size, log-log, a panel per env."""
    rows = data["results"]
    envs = list(dict.fromkeys(r["env"] for r in rows))
    methods = methods_of(rows)
    cols = 3
    nrows = math.ceil((len(envs) + 1) / cols)  # one more panel holds the legend
    fig = Figure(figsize=(10, 3.0 * nrows + 0.6), layout="constrained")
    fig.get_layout_engine().set(rect=(0, 0.06, 1, 0.94))
    axes = fig.subplots(nrows, cols, squeeze=False).ravel()
    for ax, env in zip(axes, envs, strict=False):
        env_rows = sorted((r for r in rows if r["env"] == env), key=lambda r: r["num_envs"])
        for method in methods:
            points = [(r["num_envs"], r[method]) for r in env_rows if r.get(method)]
            if not points:
                continue
            label, color = style(method)
            dashed = method in ("native-loop", "cpp-loop")
            ax.plot(
                *zip(*points, strict=True),
                marker="o",
                ms=3,
                color=color,
                label=label,
                ls="--" if dashed else "-",
            )
        ax.set(xscale="log", yscale="log", title=env, xlabel="envs (batch size)")
        ax.set_xticks([r["num_envs"] for r in env_rows], [str(r["num_envs"]) for r in env_rows])
        ax.set_ylabel("env steps/s")
        ax.grid(alpha=0.3)
    legend_ax = axes[len(envs)]
    legend_ax.axis("off")
    lines = {}  # label -> its first line, over every panel (a method may skip an env)
    for ax in axes[: len(envs)]:
        for line, label in zip(*ax.get_legend_handles_labels(), strict=True):
            lines.setdefault(label, line)
    legend_ax.legend(lines.values(), lines.keys(), loc="center", frameon=False)
    for ax in axes[len(envs) + 1 :]:
        ax.axis("off")
    fig.suptitle("Classic control: env steps per second (medians of timed runs)")
    return _finish(fig, data["meta"], path)


def atari_figure(data: dict[str, Any], path: Path) -> Path:
    """atari.svg: grouped bars, steps/s of each contender at each batch size, a panel per game."""
    rows = data["results"]
    games = list(dict.fromkeys(r["env"] for r in rows))
    methods = methods_of(rows)
    fig = Figure(figsize=(5.2 * len(games), 4.8), layout="constrained")
    fig.get_layout_engine().set(rect=(0, 0.07, 1, 0.93))
    panels = fig.subplot_mosaic(
        [games, ["legend"] * len(games)], gridspec_kw={"height_ratios": [1, 0.14]}
    )
    width = 0.8 / len(methods)
    for game in games:
        ax = panels[game]
        game_rows = sorted((r for r in rows if r["env"] == game), key=lambda r: r["num_envs"])
        for i, method in enumerate(methods):
            label, color = style(method)
            xs = [g + (i - (len(methods) - 1) / 2) * width for g in range(len(game_rows))]
            ys = [r.get(method) or 0.0 for r in game_rows]
            ax.bar(xs, ys, width, color=color, label=label)
        ax.set_xticks(range(len(game_rows)), [f"{r['num_envs']} envs" for r in game_rows])
        ax.set(title=f"{game} ({game_rows[0].get('frames', '')} frames)", ylabel="env steps/s")
        ax.grid(alpha=0.3, axis="y")
    panels["legend"].axis("off")
    panels["legend"].legend(
        *panels[games[0]].get_legend_handles_labels(),
        loc="center",
        ncols=math.ceil(len(methods) / 2),
        frameon=False,
    )
    fig.suptitle("Atari: env steps per second (medians of timed runs; no bar: not run)")
    return _finish(fig, data["meta"], path)


def mujoco_figure(data: dict[str, Any], path: Path) -> Path:
    """mujoco.svg: per env, fb-sync over EnvPool and over gymnasium's SyncVectorEnv, as bars
    from the 1.0 line on a log scale (to the left: fastbatch is the slower)."""
    rows = data["results"]
    meta = data["meta"]
    against = ["envpool", "gym-sync"]
    fig = Figure(figsize=(7.5, 0.42 * len(rows) + 2.0), layout="constrained")
    fig.get_layout_engine().set(rect=(0, 0.07, 1, 0.93))
    ax = fig.subplots()
    height = 0.8 / len(against)
    shown = []
    for i, other in enumerate(against):
        label, color = style(other)
        ys = [k + (i - (len(against) - 1) / 2) * height for k in range(len(rows))]
        values = [ratio(mujoco_stat(r).get("fb-sync"), mujoco_stat(r).get(other)) for r in rows]
        shown += [v for v in values if v is not None]
        bars = ax.barh(
            ys,
            [v - 1.0 if v else 0.0 for v in values],
            height,
            left=1.0,
            color=color,
            label=f"fastbatch over {label}",
        )
        ax.bar_label(bars, [format_ratio(v) for v in values], padding=2, fontsize=6.5)
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_yticks(range(len(rows)), [r["env"] for r in rows])
    ax.invert_yaxis()
    ax.set_xscale("log")
    low, high = min([*shown, 1.0]) / 1.15, max([*shown, 1.0]) * 1.3
    ticks = [t for t in (0.25, 0.5, 1, 2, 4, 8, 16, 32, 64) if low <= t <= high]
    ax.set_xlim(low, high)
    ax.set_xticks(ticks, [f"{t:g}x" for t in ticks])
    ax.set_xticks([], minor=True)
    ax.set_xlabel("ratio of env steps/s (log scale; right of the line: fastbatch is faster)")
    ax.grid(alpha=0.3, axis="x")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.07), ncols=len(against), frameon=False)
    stat = "median" if "median" in rows[0] else "max"
    fig.suptitle(
        f"MuJoCo v5: fastbatch sync over EnvPool and gymnasium, {meta.get('num_envs')} envs, "
        f"{meta.get('threads')} threads ({stat}s of {meta.get('repeats')} rounds)"
    )
    return _finish(fig, meta, path)


def learning_curves_figure(data: dict[str, Any], path: Path) -> Path:
    """learning_curves.svg: a column per preset, return against seconds (top) and env steps
    (bottom); BatchPPO and SB3 (its faster thread count), a thin line per seed."""
    rows = data["results"]
    fig = Figure(figsize=(4.6 * len(rows), 6.4), layout="constrained")
    fig.get_layout_engine().set(rect=(0, 0.06, 1, 0.94))
    axes = fig.subplots(2, len(rows), squeeze=False)
    for col, row in enumerate(rows):
        threads, sb3 = best_sb3_runs(row)
        trainers = [("BatchPPO (fastbatch)", style("fastbatch")[1], row["fastbatch"])]
        if sb3:
            name = f"SB3 PPO, {threads} torch thread{'s' if threads > 1 else ''}"
            trainers.append((name, style("sb3")[1], sb3))
        for axis, (x, xlabel) in enumerate(((1, "wall-clock seconds"), (0, "env steps"))):
            ax = axes[axis, col]
            for label, color, runs in trainers:
                for k, run in enumerate(r for r in runs if r.get("curve")):
                    curve = run["curve"]
                    ax.plot(
                        [p[x] for p in curve],
                        [p[2] for p in curve],
                        color=color,
                        lw=0.8,
                        alpha=0.8,
                        marker="o" if len(curve) < SPARSE_CURVE else None,  # visible if short
                        ms=2,
                        label=label if k == 0 else None,
                    )
            ax.axhline(row["threshold"], color="black", ls=":", lw=0.8, label="threshold")
            ax.set(xlabel=xlabel, ylabel="mean return, last 20 episodes")
            ax.grid(alpha=0.3)
        axes[0, col].set_title(f"{row['preset']} ({row['env']})")
        axes[0, col].legend(fontsize=7, loc="lower right")
    fig.suptitle(
        "Learning curves: BatchPPO against Stable-Baselines3 (rl-zoo hyperparameters); "
        "a line per seed; SB3 stops at the threshold"
    )
    return _finish(fig, data["meta"], path)


FIGURES: dict[str, Callable[[dict[str, Any], Path], Path]] = {
    "throughput.svg": throughput_figure,
    "atari.svg": atari_figure,
    "mujoco.svg": mujoco_figure,
    "learning_curves.svg": learning_curves_figure,
}


def render(data_dir: Path | str = PUBLISHED, out_dir: Path | str | None = None) -> list[Path]:
    """Writes every figure whose JSON is in `data_dir` into `out_dir` (default
    ``data_dir/plots``; made if missing) and returns their paths; prints a line for each
    figure skipped for want of its JSON."""
    data_dir = Path(data_dir)
    out_dir = Path(out_dir) if out_dir is not None else data_dir / "plots"
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    with matplotlib.rc_context(RC):
        for name, draw in FIGURES.items():
            data = load(data_dir, SOURCES[name])
            if data is None:
                print(f"skipped {name}: no {SOURCES[name]} in {data_dir}")
                continue
            written.append(draw(data, out_dir / name))
    return written


# ------------------------------------------------------------------------------ headlines
def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(cells) + " |" for cells in rows]


def _source(meta: dict[str, Any]) -> str:
    return f"{machine(meta)}; {when(meta)}; `{command(meta)}`"


def throughput_headlines(data: dict[str, Any]) -> list[str]:
    """fastbatch over EnvPool, SyncVectorEnv and AsyncVectorEnv at each batch size: the
    median over the classic-control envs and the range."""
    rows = data["results"]
    others = [m for m in ("envpool", "gym-sync", "gym-async") if m in methods_of(rows)]
    envs = len({r["env"] for r in rows})
    table = []
    for n in sorted({r["num_envs"] for r in rows}):
        cells = [str(n)]
        for other in others:
            values = [ratio(r.get("fastbatch"), r.get(other)) for r in rows if r["num_envs"] == n]
            cells.append(spread([v for v in values if v is not None]))
        table.append(cells)
    header = ["envs", *(f"/ {style(m)[0]}" for m in others)]
    return [
        f"**Classic control** (bench/throughput.py): env steps/s of `fastbatch` (default "
        f"threads) over each alternative; median over the {envs} envs (range); `-`: not run "
        "(AsyncVectorEnv runs a process per env, up to 16 envs).",
        "",
        *_table(header, table),
        "",
        _source(data["meta"]),
    ]


def mujoco_headlines(data: dict[str, Any]) -> list[str]:
    """fb-sync over EnvPool and over gymnasium's SyncVectorEnv, per env."""
    meta = data["meta"]
    table = [
        [
            r["env"],
            format_ratio(ratio(mujoco_stat(r).get("fb-sync"), mujoco_stat(r).get("envpool"))),
            format_ratio(ratio(mujoco_stat(r).get("fb-sync"), mujoco_stat(r).get("gym-sync"))),
        ]
        for r in data["results"]
    ]
    return [
        f"**MuJoCo v5** (bench/mujoco_envs.py): env steps/s of fastbatch sync over each, "
        f"{meta.get('num_envs')} envs, {meta.get('threads')} threads.",
        "",
        *_table(["env", "/ EnvPool", "/ gymnasium SyncVectorEnv"], table),
        "",
        _source(meta),
    ]


def atari_headlines(data: dict[str, Any]) -> list[str]:
    """fastbatch over each other contender the JSON holds, per game and batch size."""
    rows = data["results"]
    others = [
        m
        for m in ("envpool", "ale-vector", "process", "gym-sync", "gym-async")
        if m in methods_of(rows)
    ]
    table = [
        [r["env"], str(r["num_envs"])]
        + [format_ratio(ratio(r.get("fastbatch"), r.get(m))) for m in others]
        for r in rows
    ]
    frames = rows[0].get("frames", "") if rows else ""
    return [
        f"**Atari** (bench/atari.py, {frames} frames): env steps/s of fastbatch over each; "
        "`-`: not run (AsyncVectorEnv runs a process per env, up to 16 envs).",
        "",
        *_table(["game", "envs", *(f"/ {style(m)[0]}" for m in others)], table),
        "",
        _source(data["meta"]),
    ]


def _time_to_threshold(runs: list[dict[str, Any]]) -> tuple[float | None, str]:
    """The median seconds to the threshold over the runs that reached it, and a cell that
    says it with how many of the runs did."""
    reached = [r["seconds_to_threshold"] for r in runs if r["seconds_to_threshold"] is not None]
    if not reached:
        return None, f"not reached (0/{len(runs)})"
    seconds = statistics.median(reached)
    return seconds, f"{seconds:.1f} s ({len(reached)}/{len(runs)} seeds)"


def ppo_headlines(data: dict[str, Any]) -> list[str]:
    """Time to the threshold, BatchPPO against SB3 at its faster thread count: medians over
    the seeds that reached it, and SB3's over BatchPPO's."""
    table = []
    for row in data["results"]:
        ours, ours_cell = _time_to_threshold(row["fastbatch"])
        threads, sb3 = best_sb3_runs(row)
        theirs, theirs_cell = _time_to_threshold(sb3) if sb3 else (None, "-")
        plural = "s" if threads and threads > 1 else ""
        sb3_name = f"{theirs_cell}, {threads} torch thread{plural}" if sb3 else "-"
        table.append(
            [
                row["preset"],
                f"{row['threshold']:g}",
                ours_cell,
                sb3_name,
                format_ratio(ratio(theirs, ours)),
            ]
        )
    return [
        "**Time to threshold** (bench/ppo.py): wall-clock seconds until the mean return of the "
        "last 20 training episodes reaches the threshold, median over the seeds that reached it.",
        "",
        *_table(["preset", "threshold", "BatchPPO", "SB3 PPO", "SB3 / BatchPPO"], table),
        "",
        _source(data["meta"]),
    ]


HEADLINES: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "throughput.json": throughput_headlines,
    "mujoco_envs.json": mujoco_headlines,
    "atari.json": atari_headlines,
    "ppo.json": ppo_headlines,
}


def headlines(data_dir: Path | str = PUBLISHED) -> str:
    """The headline ratios as Markdown: a table for each JSON file in `data_dir` (each with
    the machine, date and command under it), and a line for each file that is missing."""
    parts = []
    for name, section in HEADLINES.items():
        data = load(Path(data_dir), name)
        parts.append(f"(no {name}: skipped)" if data is None else "\n".join(section(data)))
    return "\n\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=PUBLISHED, help="folder of the JSON files")
    parser.add_argument("--out", type=Path, default=None, help="folder of the SVGs (DATA/plots)")
    args = parser.parse_args(argv)
    for path in render(args.data, args.out):
        print(f"wrote {path}")
    print()
    print(headlines(args.data), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
