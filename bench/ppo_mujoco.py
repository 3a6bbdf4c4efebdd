"""BatchPPO's MuJoCo presets over seeds, beside published 1M-step PPO scores.

    python bench/ppo.py --mujoco [--presets halfcheetah,hopper] [--seeds 0,1,2]
                                 [--steps 1000000] [--set KEY=VALUE ...]
    python bench/ppo.py --dm-control [--presets dmc_cheetah_run] [--seeds 0,1,2]

`--dm-control` runs the dm_control suite presets (`DMC_PRESETS`) the same way, beside CleanRL's
published runs on the same shimmy ids, with the env steps and seconds at which the training
return (last 20 episodes) first reached the issue's targets (cartpole-swingup 800, cheetah-run
500), and writes ``ppo_dm_control.*`` instead.

For every preset and seed: the deterministic evaluation return over the preset's
`eval_episodes` (10) episodes at the end of training, wall-clock seconds from the start of
`train()` (env and agent construction, tracing and compilation included, evaluation and
export not), and env steps/s over that time. Writes `bench/results/ppo_mujoco.md` (the table)
and `.json` (every figure and every learning curve), and `bench/ppo_mujoco.png`: the training
return (last 20 episodes) against env steps, median and range over the seeds, one panel a
preset.

Published anchors at 1M env steps (not rerun here): rl-baselines3-zoo PPO (one run each, its
benchmark table) and CleanRL's `ppo_continuous_action.py` (its documented results).

Training runs are their own loop; medians and the run's metadata (printed first, and the JSON's
``meta`` beside its ``results``, the runs) are bench/_harness.py's.
"""

from __future__ import annotations

import tempfile
import time
import warnings
from pathlib import Path

import _harness as harness
import numpy as np

PRESETS = ("halfcheetah", "hopper", "walker2d", "ant", "humanoid")
DMC_PRESETS = ("dmc_cartpole_swingup", "dmc_cheetah_run", "dmc_walker_walk", "dmc_finger_spin")

# env id: (rl-baselines3-zoo PPO, CleanRL PPO) at 1M steps; None where none is published.
PUBLISHED = {
    "HalfCheetah-v5": (5819, 1443),
    "Hopper-v5": (2410, 2383),
    "Walker2d-v5": (3479, 2288),
    "Ant-v5": (1327, None),
    "Humanoid-v5": (None, 716),
    # CleanRL's ppo_continuous_action.py on shimmy's ids (docs: "dm_control environments").
    "dm_control/cartpole-swingup-v0": (None, 641),
    "dm_control/cheetah-run-v0": (None, 433),
    "dm_control/walker-walk-v0": (None, 393),
    "dm_control/finger-spin-v0": (None, 590),
}
# Training returns to reach (the dm_control issue's), reported as the first crossing.
TARGETS = {"dm_control/cartpole-swingup-v0": 800, "dm_control/cheetah-run-v0": 500}


def run_one(preset: str, seed: int, steps: int | None, overrides: list[str]) -> dict:
    from fastbatch.ppo import resolve, train
    from fastbatch.ppo.train import read_progress

    config = resolve(preset, overrides, seed=seed)
    if steps is not None:
        config = config.replace(total_steps=steps)
    with tempfile.TemporaryDirectory() as logdir:
        started = time.perf_counter()
        result = train(config, logdir, progress=False)
        total = time.perf_counter() - started
        rows = read_progress(Path(logdir) / "progress.csv")
    seconds = float(rows[-1, 1])  # from the start of train() to the end of the last update
    return {
        "preset": preset,
        "env": config.env_id,
        "seed": seed,
        "env_steps": result["env_steps"],
        "eval_return": result.get("eval_return"),
        "train_return": result["train_return"],
        "seconds": seconds,
        "seconds_with_eval": total,
        "steps_per_second": result["env_steps"] / seconds,
        "target": TARGETS.get(config.env_id),
        "target_reached": harness.first_crossing(rows, TARGETS.get(config.env_id, np.inf), 20),
        "curve": rows.tolist(),
    }


def _fmt(value, digits=0):
    return "-" if value is None else f"{value:.{digits}f}"


def table(runs: list[dict]) -> str:
    lines = [
        "| preset | env steps | eval return per seed | median | zoo PPO | CleanRL PPO "
        "| wall-clock s (median) | steps/s (median) | target: steps, s per seed |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for preset in dict.fromkeys(r["preset"] for r in runs):
        rs = [r for r in runs if r["preset"] == preset]
        zoo, cleanrl = PUBLISHED.get(rs[0]["env"], (None, None))
        per_seed = ", ".join(f"{r['seed']}: {_fmt(r['eval_return'])}" for r in rs)
        target = "-"
        if rs[0].get("target") is not None:
            reached = [r["target_reached"] for r in rs]
            target = f"{rs[0]['target']}: " + ", ".join(
                "not reached" if steps is None else f"{steps:.0f} in {seconds:.0f} s"
                for steps, seconds in reached
            )
        lines.append(
            f"| {preset} | {rs[0]['env_steps']} | {per_seed} "
            f"| {_fmt(harness.median([r['eval_return'] for r in rs]))} | {_fmt(zoo)} | {_fmt(cleanrl)} "
            f"| {_fmt(harness.median([r['seconds'] for r in rs]))} "
            f"| {_fmt(harness.median([r['steps_per_second'] for r in rs]))} | {target} |"
        )
    return "\n".join(lines)


def plot(runs: list[dict], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    presets = list(dict.fromkeys(r["preset"] for r in runs))
    fig, axes = plt.subplots(1, len(presets), figsize=(4 * len(presets), 3.2), squeeze=False)
    for ax, preset in zip(axes[0], presets, strict=True):
        curves = [np.array(r["curve"]) for r in runs if r["preset"] == preset]
        length = min(len(c) for c in curves)
        steps = curves[0][:length, 0]
        returns = np.stack([c[:length, 2] for c in curves])  # [seeds, rows]; NaN before episodes
        with warnings.catch_warnings():  # rows before any seed's first episode are all NaN
            warnings.simplefilter("ignore", RuntimeWarning)
            low, mid, high = (f(returns, axis=0) for f in (np.nanmin, np.nanmedian, np.nanmax))
        ax.plot(steps, mid, label=f"median of {len(curves)} seeds")
        ax.fill_between(steps, low, high, alpha=0.3)
        env = next(r["env"] for r in runs if r["preset"] == preset)
        published = PUBLISHED.get(env, (None, None))
        for score, name, style in zip(published, ("zoo", "CleanRL"), ("--", ":"), strict=True):
            if score is not None:
                ax.axhline(score, color="gray", linestyle=style, label=f"{name} PPO at 1M")
        ax.set_title(env)
        ax.set_xlabel("env steps")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("training return (last 20 episodes)")
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)


def main(
    presets: list[str],
    seeds: list[int],
    steps: int | None,
    overrides: list[str],
    name: str = "ppo_mujoco",
) -> int:
    """Runs every preset on every seed; writes bench/results/<name>.{json,md}, bench/<name>.png."""
    results = Path("bench/results")
    results.mkdir(parents=True, exist_ok=True)
    run_info = harness.RunInfo(
        packages=("tensorflow", "mujoco"),
        presets=presets,
        seeds=seeds,
        steps=steps,
        set=overrides,
    )
    print(run_info.header(), flush=True)
    runs = []
    for preset in presets:
        for seed in seeds:
            run = run_one(preset, seed, steps, overrides)
            print(
                f"{preset} seed {seed}: eval {_fmt(run['eval_return'])} after "
                f"{run['env_steps']} steps in {run['seconds']:.0f} s "
                f"({run['steps_per_second']:.0f} steps/s)",
                flush=True,
            )
            runs.append(run)
            # Written after every run, so an interrupted sweep keeps what it measured.
            harness.write_json(results / f"{name}.json", run_info.finish(), runs, announce=False)
            (results / f"{name}.md").write_text(table(runs) + "\n")
            plot(runs, Path(f"bench/{name}.png"))
    print(table(runs))
    print(run_info.footer())
    return 0
