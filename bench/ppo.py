"""BatchPPO presets against Stable-Baselines3 (rl-baselines3-zoo hyperparameters), one run.

    python bench/ppo.py [--presets cartpole,pendulum] [--seeds 0,1,2] [--set KEY=VALUE ...]
                        [--no-sb3] [--sb3-threads 1,2] [--sb3-time-limit S] [--json FILE]
                        [--workers N]
    python bench/ppo.py --mujoco [--presets ...] [--seeds ...] [--steps N] [--set KEY=VALUE ...]
    python bench/ppo.py --dm-control [--presets ...] [--seeds ...] [--steps N] [--set ...]
    python bench/ppo.py --pixels [--presets ...] [--seeds ...] [--steps N] [--target [P=]R ...]
                        [--set KEY=VALUE ...] [--no-sb3] [--sb3-stop] [--plugin LIB] [--json FILE]

`--mujoco` runs the MuJoCo presets instead (ppo_mujoco.py: evaluation returns beside the
published 1M-step PPO scores, a table and a PNG of learning curves), `--dm-control` the
dm_control suite presets the same way; `--pixels` the MinAtar
presets (ppo_pixels.py: time to a target training return against SB3 PPO with the same small
CNN, a table a run and a summary); the rest of this text is about the default mode.

For every preset and seed: wall-clock seconds (tracing and start-up included) and env steps
until the mean return of the last 20 training episodes first reaches the env's threshold, the
mean return at the end of the budget, and the run's learning curve (``curve``: see
learning_curve). `--set` overrides config fields of every preset (e.g. `--set policy=mlp`: the
NoVel presets without memory). When `stable-baselines3` is installed (pip install '.[bench]'
plus torch), the same figures for SB3 with the zoo's tuned hyperparameters: PPO
(hyperparams/ppo.yml) for the full envs, sb3-contrib's RecurrentPPO (hyperparams/ppo_lstm.yml)
for the NoVel envs, on gymnasium's env with the zoo's velocity mask (the velocity columns
multiplied by zero), with each of `--sb3-threads` torch threads (the faster setting is
compared). SB3 runs stop at the threshold, or after `--sb3-time-limit` seconds (then the row
says how far they got: a lower bound on their time to the threshold), so their curves end there.
`--workers N` trains each fastbatch run with N data-parallel worker processes on this host
(`fastbatch train --workers N`; steps count every worker's), in place of one process.

Training runs are their own loop; medians and the run's metadata (printed first and kept in
the JSON) are bench/_harness.py's.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

import _harness as harness

THRESHOLDS = {
    "CartPole-v1": 475.0,
    "Pendulum-v1": -200.0,
    "Acrobot-v1": -100.0,
    "MountainCarContinuous-v0": 90.0,
    "HalfCheetah-v5": 3000.0,
    "CartPoleNoVel-v1": 475.0,
    "PendulumNoVel-v1": -250.0,
}

CURVE_POINTS = 200  # the most points a run's learning curve keeps in the JSON

# rl-baselines3-zoo's NoVel envs (rl_zoo3/wrappers.py): the full env, velocity columns zeroed.
NOVEL = {"CartPoleNoVel-v1": ("CartPole-v1", (1, 3)), "PendulumNoVel-v1": ("Pendulum-v1", (2,))}

# rl-baselines3-zoo (hyperparams/ppo.yml) settings for these envs.
ZOO = {
    "CartPole-v1": dict(
        n_envs=8,
        n_timesteps=100_000,
        normalize=False,
        kwargs=dict(
            n_steps=32,
            batch_size=256,
            gae_lambda=0.8,
            gamma=0.98,
            n_epochs=20,
            ent_coef=0.0,
            learning_rate="lin_0.001",
            clip_range="lin_0.2",
        ),
    ),
    "Pendulum-v1": dict(
        n_envs=4,
        n_timesteps=100_000,
        normalize=False,
        kwargs=dict(
            n_steps=1024,
            gae_lambda=0.95,
            gamma=0.9,
            n_epochs=10,
            ent_coef=0.0,
            learning_rate=1e-3,
            clip_range=0.2,
            use_sde=True,
            sde_sample_freq=4,
        ),
    ),
    "Acrobot-v1": dict(
        n_envs=16,
        n_timesteps=1_000_000,
        normalize=True,
        kwargs=dict(n_steps=256, gae_lambda=0.94, gamma=0.99, n_epochs=4, ent_coef=0.0),
    ),
    "MountainCarContinuous-v0": dict(
        n_envs=1,
        n_timesteps=20_000,
        normalize=True,
        kwargs=dict(
            batch_size=256,
            n_steps=8,
            gamma=0.9999,
            learning_rate=7.77e-05,
            ent_coef=0.00429,
            clip_range=0.1,
            n_epochs=10,
            gae_lambda=0.9,
            max_grad_norm=5,
            vf_coef=0.19,
            use_sde=True,
            policy_kwargs=dict(log_std_init=-3.29, ortho_init=False),
        ),
    ),
    # hyperparams/ppo_lstm.yml (sb3-contrib RecurrentPPO, MlpLstmPolicy defaults otherwise).
    "CartPoleNoVel-v1": dict(
        n_envs=8,
        n_timesteps=100_000,
        normalize=False,
        kwargs=dict(
            n_steps=32,
            batch_size=256,
            gae_lambda=0.8,
            gamma=0.98,
            n_epochs=20,
            ent_coef=0.0,
            learning_rate="lin_0.001",
            clip_range="lin_0.2",
        ),
    ),
    "PendulumNoVel-v1": dict(
        n_envs=4,
        n_timesteps=100_000,
        normalize=False,
        kwargs=dict(
            n_steps=1024,
            gae_lambda=0.95,
            gamma=0.9,
            n_epochs=10,
            ent_coef=0.0,
            learning_rate=1e-3,
            clip_range=0.2,
            use_sde=True,
            sde_sample_freq=4,
        ),
    ),
}


def learning_curve(
    points: list[tuple[float, float, float, float]], window: int
) -> list[list[float]]:
    """A run's learning curve as the JSON keeps it: ``[env_steps, wall_seconds, mean_return]``
    points, where mean_return is that of the last `window` training episodes.

    `points` are (env steps, seconds since the run began, mean return, episodes that mean
    covers), in order, one an update (fastbatch's progress.csv rows) or a rollout (SB3's). Only
    points whose mean covers a whole `window` are kept (as in ``harness.first_crossing``), and
    of those at most CURVE_POINTS, evenly spaced, the first and the last among them."""
    full = [(s, t, r) for s, t, r, episodes in points if episodes >= window]
    if len(full) > CURVE_POINTS:
        last = len(full) - 1
        kept = sorted({round(i * last / (CURVE_POINTS - 1)) for i in range(CURVE_POINTS)})
        full = [full[i] for i in kept]
    return [[int(s), round(t, 3), round(r, 4)] for s, t, r in full]


def run_fastbatch(
    preset: str,
    seed: int,
    overrides: list[str],
    workers: int | None,
    threshold: float | None = None,
    total_steps: int | None = None,
) -> dict:
    """One training run of `preset` and its time to `threshold` (default: the env's entry in
    THRESHOLDS) from its progress.csv; `total_steps` replaces the preset's."""
    from fastbatch.ppo import resolve, train
    from fastbatch.ppo.launch import launch
    from fastbatch.ppo.train import read_progress

    config = resolve(preset, overrides, seed=seed)
    if total_steps is not None:
        config = config.replace(total_steps=total_steps)
    if threshold is None:
        threshold = THRESHOLDS[config.env_id]
    with tempfile.TemporaryDirectory() as logdir:
        if workers is None:
            result = train(config, logdir, progress=False)
        else:
            result = launch(config, logdir, workers=workers, progress=False)
        rows = read_progress(Path(logdir) / "progress.csv").tolist()
    steps, seconds = harness.first_crossing(rows, threshold, config.return_window)
    return {
        "env": config.env_id,
        "seed": seed,
        "steps_to_threshold": steps,
        "seconds_to_threshold": seconds,
        "final_return": result["train_return"],
        "eval_return": result.get("eval_return"),
        "budget_steps": result["env_steps"],
        "seconds": result["seconds"],
        "steps_per_second": result["env_steps"] / result["seconds"],
        "workers": result.get("workers", 1),
        "curve": learning_curve(rows, config.return_window),
    }


def zoo_env(env_id: str):
    """gymnasium's `env_id`, or for a NoVel id the zoo's definition: the full env with its
    velocity columns multiplied by zero."""
    import gymnasium
    import numpy as np

    if env_id not in NOVEL:
        return gymnasium.make(env_id)
    full, columns = NOVEL[env_id]
    env = gymnasium.make(full)
    mask = np.ones(env.observation_space.shape, env.observation_space.dtype)
    mask[list(columns)] = 0
    return gymnasium.wrappers.TransformObservation(env, lambda o: o * mask, env.observation_space)


def run_sb3(env_id: str, seed: int, threads: int, time_limit: float) -> dict | None:
    try:
        import torch
        from stable_baselines3 import PPO
        from stable_baselines3.common.callbacks import BaseCallback
        from stable_baselines3.common.env_util import make_vec_env
        from stable_baselines3.common.vec_env import VecNormalize

        if env_id in NOVEL:
            from sb3_contrib import RecurrentPPO
    except ImportError:
        return None
    torch.set_num_threads(threads)
    zoo = ZOO[env_id]
    start = time.perf_counter()
    env = make_vec_env(lambda: zoo_env(env_id), n_envs=zoo["n_envs"], seed=seed)
    if zoo["normalize"]:
        env = VecNormalize(env)
    kwargs = dict(zoo["kwargs"])
    for key in ("learning_rate", "clip_range"):
        if isinstance(kwargs.get(key), str):
            initial = float(kwargs[key].split("_")[1])
            kwargs[key] = lambda progress, initial=initial: progress * initial
    threshold = THRESHOLDS[env_id]
    points = []  # (env steps, seconds, mean return, episodes): learning_curve's input

    def record() -> None:
        """Appends the model's point now to `points` (the mean of its last 20 episodes)."""
        window = list(model.ep_info_buffer)[-20:]
        mean = statistics.mean(e["r"] for e in window) if window else math.nan
        points.append((model.num_timesteps, time.perf_counter() - start, mean, len(window)))

    class Stop(BaseCallback):
        hit = None
        timed_out = False

        def _on_step(self) -> bool:
            if time.perf_counter() - start > time_limit:
                Stop.timed_out = True
                record()
                return False
            buffer = self.model.ep_info_buffer
            if (
                len(buffer) >= 20
                and statistics.mean(e["r"] for e in list(buffer)[-20:]) >= threshold
            ):
                Stop.hit = (self.num_timesteps, time.perf_counter() - start)
                record()
                return False
            return True

        def _on_rollout_end(self) -> None:
            record()

    algo, policy = (RecurrentPPO, "MlpLstmPolicy") if env_id in NOVEL else (PPO, "MlpPolicy")
    model = algo(policy, env, seed=seed, verbose=0, device="cpu", **kwargs)
    model.learn(total_timesteps=zoo["n_timesteps"], callback=Stop())
    buffer = list(model.ep_info_buffer)[-20:]
    env.close()
    return {
        "env": env_id,
        "seed": seed,
        "threads": threads,
        "steps_to_threshold": Stop.hit[0] if Stop.hit else None,
        "seconds_to_threshold": Stop.hit[1] if Stop.hit else None,
        "final_return": statistics.mean(e["r"] for e in buffer) if buffer else None,
        "steps": model.num_timesteps,
        "seconds": time.perf_counter() - start,
        "timed_out": Stop.timed_out,
        "curve": learning_curve(points, 20),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mujoco", action="store_true", help="the MuJoCo presets (ppo_mujoco.py)")
    parser.add_argument(
        "--dm-control", action="store_true", help="the dm_control presets (ppo_mujoco.py)"
    )
    parser.add_argument("--pixels", action="store_true", help="the MinAtar presets (ppo_pixels.py)")
    parser.add_argument(
        "--steps", type=int, default=None, help="env steps a run (--mujoco, --pixels)"
    )
    parser.add_argument("--presets", default=None)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--no-sb3", action="store_true")
    parser.add_argument(
        "--sb3-threads", default=None, help="torch threads (default 1,2; --pixels 1)"
    )
    parser.add_argument("--sb3-time-limit", type=float, default=math.inf, metavar="SECONDS")
    parser.add_argument(
        "--json", default=None, help="default bench/results/ppo.json (ppo_pixels.json)"
    )
    parser.add_argument("--workers", type=int, default=None, help="data-parallel worker processes")
    pixels = parser.add_argument_group("--pixels")
    pixels.add_argument(
        "--target",
        action="append",
        default=[],
        metavar="[PRESET=]RETURN",
        help="target training return (a bare number: every preset)",
    )
    pixels.add_argument("--sb3-stop", action="store_true", help="SB3 stops at the target")
    pixels.add_argument("--plugin", default=None, metavar="LIB", help="runs gridchase from LIB")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    presets = args.presets.split(",") if args.presets else None
    if args.mujoco:
        import ppo_mujoco

        return ppo_mujoco.main(presets or list(ppo_mujoco.PRESETS), seeds, args.steps, args.set)
    if args.dm_control:
        import ppo_mujoco

        chosen = presets or list(ppo_mujoco.DMC_PRESETS)
        return ppo_mujoco.main(chosen, seeds, args.steps, args.set, name="ppo_dm_control")
    if args.pixels:
        import ppo_pixels

        threads = args.sb3_threads or "1"
        if not threads.isdigit():
            parser.error("--pixels takes one --sb3-threads count")
        return ppo_pixels.main(
            presets,
            seeds,
            args.steps,
            args.set,
            target_items=args.target,
            sb3=not args.no_sb3,
            sb3_threads=int(threads),
            sb3_time_limit=args.sb3_time_limit,
            sb3_stop=args.sb3_stop,
            plugin=args.plugin,
            json_path=args.json,
            run_fastbatch=run_fastbatch,
        )
    from fastbatch.ppo import PRESETS

    args.presets = args.presets or "cartpole,pendulum,acrobot,mountaincar_continuous"
    args.sb3_threads = args.sb3_threads or "1,2"
    args.json = args.json or "bench/results/ppo.json"
    pixel_only = ("target", "sb3_stop", "plugin")
    run = harness.RunInfo(
        packages=("tensorflow", "stable_baselines3", "sb3_contrib", "torch"),
        **{
            k: v
            for k, v in vars(args).items()
            if k not in ("mujoco", "dm_control", "pixels", "steps", "json", *pixel_only)
        },
    )
    print(run.header(), flush=True)
    report = []
    for preset in args.presets.split(","):
        env_id = PRESETS[preset].env_id
        ours = [run_fastbatch(preset, s, args.set, args.workers) for s in seeds]
        theirs = {}
        if not args.no_sb3 and env_id in ZOO:
            for threads in (int(t) for t in args.sb3_threads.split(",")):
                runs = [run_sb3(env_id, s, threads, args.sb3_time_limit) for s in seeds]
                if runs and runs[0] is not None:
                    theirs[threads] = runs
        label = " ".join(
            [preset, *args.set, *([f"workers={args.workers}"] if args.workers else [])]
        )
        row = {
            "preset": label,
            "env": env_id,
            "threshold": THRESHOLDS[env_id],
            "fastbatch": ours,
        }
        line = (
            f"{label:<24} fastbatch: {sum(r['steps_to_threshold'] is not None for r in ours)}/{len(seeds)} reached,"
            f" median {harness.median([r['seconds_to_threshold'] for r in ours])} s /"
            f" {harness.median([r['steps_to_threshold'] for r in ours])} steps,"
            f" final {[round(r['final_return'], 1) for r in ours]}"
        )
        if theirs:
            best = min(
                theirs,
                key=lambda k: (
                    harness.median([r["seconds_to_threshold"] for r in theirs[k]]) or math.inf
                ),
            )
            row["sb3"] = theirs
            row["sb3_best_threads"] = best
            sb3 = theirs[best]
            line += (
                f"\n{'':<24} SB3 ({best} thread{'s' if best > 1 else ''}): "
                f"{sum(r['steps_to_threshold'] is not None for r in sb3)}/{len(seeds)} reached, median "
                f"{harness.median([r['seconds_to_threshold'] for r in sb3])} s /"
                f" {harness.median([r['steps_to_threshold'] for r in sb3])} steps"
            )
            for r in sb3:
                if r["timed_out"]:
                    line += (
                        f"\n{'':<24}   seed {r['seed']}: stopped at the time limit, "
                        f"{r['seconds']:.0f} s / {r['steps']} steps, return {r['final_return']}"
                    )
        print(line, flush=True)
        report.append(row)
    print(run.footer())
    harness.write_json(args.json, run.meta, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
