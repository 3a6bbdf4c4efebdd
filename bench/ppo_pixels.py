"""BatchPPO's pixel presets (MinAtar) over seeds, against Stable-Baselines3 PPO with the same
small CNN on the same env, in the same process.

    python bench/ppo.py --pixels [--presets minatar_breakout,...] [--seeds 0,1,2] [--steps N]
                                 [--target [PRESET=]RETURN ...] [--set KEY=VALUE ...]
                                 [--no-sb3] [--sb3-threads 1] [--sb3-time-limit S] [--sb3-stop]
                                 [--plugin LIB] [--json FILE]

For every preset, seed and trainer: seconds and env steps until the training return (the mean
of the last 20 episodes) first reaches the preset's target, the training return at the end,
the env steps run, the wall-clock seconds and env steps/s over them. fastbatch's figures come
from the run's progress.csv (a row an update; seconds from the start of `train()`: env and agent
set-up and tracing included, the final evaluation not; the env package, e.g. minatar, is
imported into this process before either trainer's clock starts, so neither pays that import:
fastbatch's worker processes still import it in its time), read as ppo.py reads them for its
classic presets; `--set` changes fastbatch's config only, `--steps` both trainers' budgets (the
default: the preset's `total_steps`, 1M). Writes ``--json`` (default
``bench/results/ppo_pixels.json``: every run, rewritten after each) and the summary table beside
it as ``.md``; the summary compares the times to target seed by seed (fastbatch / SB3) against
issue 28's bar: at most 1/3 of SB3's time on every seed, and for minatar_breakout a return of
10 within 170 s.

SB3 (`pip install stable-baselines3` and CPU torch): PPO("CnnPolicy") with the MinAtar paper's
network as its features extractor (conv 3x3, 16 filters, stride 1, ReLU, flatten, linear 128,
ReLU; NatureCNN needs 36x36 or more), linear policy and value heads on it (``net_arch=[]``, as
the presets' empty ``policy_layers``/``value_layers``), ``normalize_images=False`` over frames
that `FloatFrames` makes channel-first float32 (bool as 0/1, uint8 / 255). Settings: SB3's
MinAtar PPO anchor of issue 28 (8 envs x 128 steps, lr 5e-4 constant, 4 epochs of minibatches
of 256, entropy 0.01, gamma 0.99, GAE 0.95, clip 0.2) over DummyVecEnv with Monitor (SB3's
make_vec_env; envs seeded seed + i), `--sb3-threads` torch threads (default 1). The fastbatch
presets (ppo/presets.py) take 32 envs x 128 steps (asterix and space_invaders 16) in 8
minibatches, lr 1e-3 annealed to 0 (asterix and space_invaders: 2e-3 and GAE 0.9); the network,
epochs, entropy, gamma and clip are SB3's. SB3's clock starts before its envs
are built; its time to target is read by a callback from the Monitor returns (last 20) at every
env step. SB3 runs the same budget, or stops at the target (`--sb3-stop`) or after
`--sb3-time-limit` seconds: a run that ends short of the target gives a lower bound on its time.

Default targets: a fifth of the evaluation return pgx's MinAtar PPO ends at after its 20M
steps (sotetsuk/pgx, examples/minatar-ppo, the README's curves; read off the plots, rounded
down): breakout 50 -> 10 (issue 28's target), asterix ~25 -> 5, freeway ~63 -> 12, seaquest ~54
-> 10, space_invaders ~150 -> 30. gridchase (the README's plugin example, only with
``--plugin build/libgrid_chase.so``): 0.9, nine episodes in ten reaching the target in time.

Training runs are their own loop; medians and the run's metadata (printed first, and the JSON's
``meta`` beside its ``results``) are bench/_harness.py's.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _harness as harness
import gymnasium
import numpy as np

PRESETS = (
    "minatar_breakout",
    "minatar_asterix",
    "minatar_freeway",
    "minatar_seaquest",
    "minatar_space_invaders",
)
PLUGIN_PRESETS = ("gridchase",)  # native plugin envs: run only with --plugin

# Target training return (mean of the last 20 episodes); the module docstring says whence.
TARGETS = {
    "minatar_breakout": 10.0,
    "minatar_asterix": 5.0,
    "minatar_freeway": 12.0,
    "minatar_seaquest": 10.0,
    "minatar_space_invaders": 30.0,
    "gridchase": 0.9,
}
# Issue 28's bars: fastbatch's time to target at most this fraction of SB3's, on every seed,
# and (where listed) within this many seconds.
RATIO_BAR = 1 / 3
SECONDS_BAR = {"minatar_breakout": 170.0}

SB3_ENVS = 8
SB3_PPO = dict(
    n_steps=128,
    batch_size=256,
    n_epochs=4,
    learning_rate=5e-4,
    ent_coef=0.01,
    gamma=0.99,
    gae_lambda=0.95,
    clip_range=0.2,
)
RETURN_WINDOW = 20  # episodes in the training return, as fastbatch's return_window


def parse_targets(items: list[str], presets: list[str]) -> dict[str, float]:
    """`TARGETS` for `presets`, changed by ``--target`` items: ``PRESET=RETURN`` (the preset's
    name, or its game's: ``breakout=12``), or a bare ``RETURN`` for every preset."""
    targets = {p: TARGETS.get(p) for p in presets}
    for item in items:
        key, _, text = item.rpartition("=")
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"--target takes [PRESET=]RETURN, got {item!r}") from None
        if not key:
            targets = dict.fromkeys(presets, value)
            continue
        name = key if key in targets else f"minatar_{key}"
        if name not in targets:
            raise ValueError(f"--target {item!r}: {key!r} is not one of {', '.join(presets)}")
        targets[name] = value
    missing = [p for p, t in targets.items() if t is None]
    if missing:
        raise ValueError(f"no target for {', '.join(missing)}: give --target PRESET=RETURN")
    return targets


# ------------------------------------------------------------------------------------ SB3
class FloatFrames(gymnasium.ObservationWrapper):
    """An image env's frames as channel-first float32, as SB3's CNN policies take them: bool as
    0/1, uint8 divided by 255, other dtypes cast. The channel axis is found as fastbatch finds it
    (`fastbatch.ppo.torsos.image_layout`, channels "auto")."""

    def __init__(self, env: gymnasium.Env) -> None:
        from fastbatch.ppo.torsos import image_layout

        super().__init__(env)
        space = env.observation_space
        height, width, channels, layout = image_layout(space.shape, "auto")
        self._scale = 1 / 255 if space.dtype == np.uint8 else 1.0
        self._axes = None if layout == "first" else (2, 0, 1)
        self.observation_space = gymnasium.spaces.Box(
            0.0, 1.0, (channels, height, width), np.float32
        )

    def observation(self, observation):
        frame = np.asarray(observation, np.float32) * np.float32(self._scale)
        return frame if self._axes is None else np.ascontiguousarray(frame.transpose(self._axes))


def sb3_policy_kwargs() -> dict[str, Any]:
    """PPO("CnnPolicy")'s policy_kwargs for the MinAtar paper's network (Young & Tian 2019;
    fastbatch's ``cnn="small"``): conv 3x3, 16 filters, stride 1, no padding, ReLU, flatten,
    linear 128, ReLU, then linear heads."""
    import torch
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

    class MinAtarCNN(BaseFeaturesExtractor):
        def __init__(self, observation_space: gymnasium.spaces.Box, features_dim: int = 128):
            super().__init__(observation_space, features_dim)
            channels, height, width = observation_space.shape
            self.net = torch.nn.Sequential(
                torch.nn.Conv2d(channels, 16, kernel_size=3, stride=1),
                torch.nn.ReLU(),
                torch.nn.Flatten(),
                torch.nn.Linear(16 * (height - 2) * (width - 2), features_dim),
                torch.nn.ReLU(),
            )

        def forward(self, observations):
            return self.net(observations)

    return dict(features_extractor_class=MinAtarCNN, normalize_images=False, net_arch=[])


def sb3_env_id(env_id: str, plugins: tuple[str, ...]) -> str:
    """The gymnasium id SB3 makes for a preset's env: a plugin's env after loading the plugin
    (``fastbatch/<id>``), or a package's id after its package has registered it."""
    from fastbatch.env_packages import load_plugins, register_package_for

    if plugins:
        load_plugins(plugins)
        return f"fastbatch/{env_id}"
    register_package_for(env_id)
    return env_id


def run_sb3(
    env_id: str,
    seed: int,
    steps: int,
    target: float,
    threads: int,
    time_limit: float,
    stop_at_target: bool,
) -> dict | None:
    """One SB3 PPO run (module docstring); None when SB3 or torch is missing."""
    try:
        import torch
        from stable_baselines3 import PPO
        from stable_baselines3.common.callbacks import BaseCallback
        from stable_baselines3.common.env_util import make_vec_env
    except ImportError:
        return None
    torch.set_num_threads(threads)
    start = time.perf_counter()
    env = make_vec_env(  # a callable: make_vec_env would ask an id for render_mode="rgb_array"
        lambda: gymnasium.make(env_id), n_envs=SB3_ENVS, seed=seed, wrapper_class=FloatFrames
    )

    def last_returns(model) -> list[float]:
        return [e["r"] for e in list(model.ep_info_buffer)[-RETURN_WINDOW:]]

    class Watch(BaseCallback):
        """Records the first step at which the last 20 episodes' mean reaches the target; stops
        the run there (`stop_at_target`) or at the time limit."""

        hit: tuple[int, float] | None = None
        timed_out = False

        def _on_step(self) -> bool:
            seconds = time.perf_counter() - start
            if seconds > time_limit:
                self.timed_out = True
                return False
            returns = last_returns(self.model)
            if (
                self.hit is None
                and len(returns) == RETURN_WINDOW
                and statistics.mean(returns) >= target
            ):
                self.hit = (self.num_timesteps, seconds)
            return not (stop_at_target and self.hit)

    watch = Watch()
    model = PPO(
        "CnnPolicy",
        env,
        seed=seed,
        verbose=0,
        device="cpu",
        policy_kwargs=sb3_policy_kwargs(),
        **SB3_PPO,
    )
    model.learn(total_timesteps=steps, callback=watch)
    seconds = time.perf_counter() - start
    returns = last_returns(model)
    env.close()
    stopped = "time limit" if watch.timed_out else "target" if stop_at_target and watch.hit else ""
    return {
        "trainer": "sb3",
        "seed": seed,
        "threads": threads,
        "steps_to_threshold": watch.hit[0] if watch.hit else None,
        "seconds_to_threshold": watch.hit[1] if watch.hit else None,
        "final_return": statistics.mean(returns) if returns else None,
        "env_steps": model.num_timesteps,
        "seconds": seconds,
        "steps_per_second": model.num_timesteps / seconds,
        "stopped": stopped or "budget",
    }


# ------------------------------------------------------------------------------- reporting
ROWS = harness.Table(
    ("preset", -24),
    ("seed", 5),
    ("trainer", 11),
    ("target", 8),
    ("steps to it", 12),
    ("s to it", 9),
    ("final return", 14),
    ("env steps", 11),
    ("wall s", 8),
    ("steps/s", 9),
    ("stopped", 12),
)


def _fmt(value, digits=1):
    return "-" if value is None else f"{value:.{digits}f}"


def row_line(preset: str, target: float, run: dict) -> str:
    """One printed row of the per-run table (`ROWS`)."""
    return ROWS.row(
        preset,
        run["seed"],
        run["trainer"],
        f"{target:g}",
        None if run["steps_to_threshold"] is None else int(run["steps_to_threshold"]),
        _fmt(run["seconds_to_threshold"]),
        _fmt(run["final_return"], 2),
        run["env_steps"],
        _fmt(run["seconds"], 0),
        harness.format_rate(run["steps_per_second"]),
        run.get("stopped", "budget"),
    )


def seed_ratio(ours: dict, theirs: dict | None) -> tuple[float | None, bool]:
    """fastbatch's time to target over SB3's for one seed, and whether it is only an upper
    bound (SB3 ended short of the target: its time to it exceeds its whole run). None when
    fastbatch did not reach the target or SB3 did not run."""
    if theirs is None or ours["seconds_to_threshold"] is None:
        return None, False
    if theirs["seconds_to_threshold"] is None:
        return ours["seconds_to_threshold"] / theirs["seconds"], True
    return ours["seconds_to_threshold"] / theirs["seconds_to_threshold"], False


def verdict(preset: str, ours: list[dict], ratios: list[tuple[float | None, bool]]) -> str:
    """Issue 28's bar for one preset: every seed within `RATIO_BAR` of SB3's time (and within
    `SECONDS_BAR`, where it names the preset)."""
    limit = SECONDS_BAR.get(preset)
    in_time = [
        r["seconds_to_threshold"] is not None
        and (limit is None or r["seconds_to_threshold"] <= limit)
        for r in ours
    ]
    if not all(in_time):
        return "not met" + (f" (within {limit:g} s: {sum(in_time)}/{len(ours)})" if limit else "")
    if not ratios:
        return "reached; no SB3" + (f", within {limit:g} s" if limit else "")
    met = sum(r is not None and r <= RATIO_BAR for r, _ in ratios)
    return f"{'met' if met == len(ours) else 'not met'} ({met}/{len(ours)} seeds)"


def summary(runs: list[dict], targets: dict[str, float]) -> str:
    """The markdown summary: one row a preset, figures per seed and medians, the time ratios
    seed by seed (``<`` marks a bound) and the verdict."""
    lines = [
        "| preset (target) | trainer | reached | s to target per seed | median | final return "
        "per seed | steps/s (median) | time ratio per seed | issue 28 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for preset in dict.fromkeys(r["preset"] for r in runs):
        by_trainer = {
            t: [r for r in runs if r["preset"] == preset and r["trainer"] == t]
            for t in ("fastbatch", "sb3")
        }
        sb3_by_seed = {r["seed"]: r for r in by_trainer["sb3"]}
        ours = by_trainer["fastbatch"]
        ratios = [seed_ratio(r, sb3_by_seed.get(r["seed"])) for r in ours] if sb3_by_seed else []
        ratio_text = ", ".join(
            "-" if v is None else f"{'<' if bound else ''}{v:.2f}" for v, bound in ratios
        )
        for trainer, rs in by_trainer.items():
            if not rs:
                continue
            first = trainer == "fastbatch"
            times = ", ".join(
                _fmt(r["seconds_to_threshold"])
                if r["seconds_to_threshold"] is not None
                else f">{r['seconds']:.0f}"
                for r in rs
            )
            lines.append(
                f"| {preset} ({targets[preset]:g}) | {trainer} "
                f"| {sum(r['seconds_to_threshold'] is not None for r in rs)}/{len(rs)} "
                f"| {times} | {_fmt(harness.median(r['seconds_to_threshold'] for r in rs))} "
                f"| {', '.join(_fmt(r['final_return'], 2) for r in rs)} "
                f"| {harness.format_rate(harness.median(r['steps_per_second'] for r in rs))} "
                f"| {ratio_text if first else ''} "
                f"| {verdict(preset, ours, ratios) if first and ours else ''} |"
            )
    return "\n".join(lines)


# ------------------------------------------------------------------------------------ main
def main(
    presets: list[str] | None,
    seeds: list[int],
    steps: int | None,
    overrides: list[str],
    *,
    target_items: list[str],
    sb3: bool,
    sb3_threads: int,
    sb3_time_limit: float,
    sb3_stop: bool,
    plugin: str | None,
    json_path: str | None,
    run_fastbatch: Callable[..., dict],
) -> int:
    """`--pixels`: `run_fastbatch` is ppo.py's (a preset's run and its time to a threshold)."""
    from fastbatch.ppo import PRESETS as ALL_PRESETS
    from fastbatch.ppo import resolve

    if presets is None:
        presets = list(PRESETS) + (list(PLUGIN_PRESETS) if plugin else [])
    for preset in presets:
        if preset not in ALL_PRESETS:
            raise ValueError(f"unknown preset {preset!r}; pixel presets: {', '.join(TARGETS)}")
        if preset in PLUGIN_PRESETS and not plugin:
            raise ValueError(f"{preset} is a plugin's env: give --plugin build/libgrid_chase.so")
    plugins = (os.path.abspath(plugin),) if plugin else ()
    targets = parse_targets(target_items, presets)
    json_file = Path(json_path or "bench/results/ppo_pixels.json")
    run_info = harness.RunInfo(
        packages=("tensorflow", "minatar", "stable_baselines3", "torch"),
        presets=presets,
        seeds=seeds,
        steps=steps,
        set=overrides,
        targets=targets,
        sb3=sb3,
        sb3_threads=sb3_threads,
        sb3_time_limit=sb3_time_limit if sb3_time_limit != float("inf") else None,
        sb3_stop=sb3_stop,
        plugin=plugins[0] if plugins else None,
    )
    print(run_info.header(), flush=True)
    print(ROWS.header(), flush=True)
    print(ROWS.rule(), flush=True)
    runs: list[dict] = []
    for preset in presets:
        own = plugins if preset in PLUGIN_PRESETS else ()
        changes = [*overrides, *(f"plugins={p}" for p in own)]
        config = resolve(preset, changes)
        budget = steps if steps is not None else config.total_steps
        # Before any clock: SB3's starts after its env id is registered (sb3_env_id), and the
        # first fastbatch run of a process would otherwise pay the package's import alone.
        sb3_env = sb3_env_id(config.env_id, own)
        for seed in seeds:
            ours = run_fastbatch(
                preset, seed, changes, None, threshold=targets[preset], total_steps=steps
            )
            ours["env_steps"] = ours.pop("budget_steps")
            done = [{"preset": preset, "trainer": "fastbatch", **ours}]
            if sb3:
                theirs = run_sb3(
                    sb3_env,
                    seed,
                    budget,
                    targets[preset],
                    sb3_threads,
                    sb3_time_limit,
                    sb3_stop,
                )
                if theirs is None:
                    print("# SB3 or torch is not installed: fastbatch only", flush=True)
                    sb3 = False
                else:
                    done.append({"preset": preset, "env": config.env_id, **theirs})
            for run in done:
                print(row_line(preset, targets[preset], run), flush=True)
            runs += done
            # Written after every seed, so an interrupted sweep keeps what it measured.
            harness.write_json(json_file, run_info.finish(), runs, announce=False)
            json_file.with_suffix(".md").write_text(summary(runs, targets) + "\n")
    print()
    print(summary(runs, targets))
    print(run_info.footer())
    harness.write_json(json_file, run_info.meta, runs)
    return 0
