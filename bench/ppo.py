"""BatchPPO presets against Stable-Baselines3 PPO (rl-baselines3-zoo hyperparameters), one run.

    python bench/ppo.py [--presets cartpole,pendulum] [--seeds 0,1,2] [--no-sb3] [--json FILE]

For every preset and seed: wall-clock seconds (tracing and start-up included) and env steps
until the mean return of the last 20 training episodes first reaches the env's threshold, and
the mean return at the end of the budget. When `stable-baselines3` is installed (pip install
'.[bench]' plus torch), the same figures for SB3 PPO with the zoo's tuned hyperparameters, with
1 and 2 torch threads (the faster setting is compared). SB3 runs stop at the threshold.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

THRESHOLDS = {
    "CartPole-v1": 475.0,
    "Pendulum-v1": -200.0,
    "Acrobot-v1": -100.0,
    "MountainCarContinuous-v0": 90.0,
    "HalfCheetah-v5": 3000.0,
}

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
}


def first_crossing(rows, threshold):
    for steps, seconds, ret in rows:
        if not math.isnan(ret) and ret >= threshold:
            return steps, seconds
    return None, None


def run_fastbatch(preset: str, seed: int) -> dict:
    from fastbatch.ppo import resolve, train

    config = resolve(preset, seed=seed)
    with tempfile.TemporaryDirectory() as logdir:
        result = train(config, logdir, progress=False)
        rows = [
            tuple(float(x) for x in line.split(","))
            for line in (Path(logdir) / "progress.csv").read_text().split()
        ]
    steps, seconds = first_crossing(rows, THRESHOLDS[config.env_id])
    return {
        "env": config.env_id,
        "seed": seed,
        "steps_to_threshold": steps,
        "seconds_to_threshold": seconds,
        "final_return": result["train_return"],
        "eval_return": result.get("eval_return"),
        "budget_steps": result["env_steps"],
        "seconds": result["seconds"],
    }


def run_sb3(env_id: str, seed: int, threads: int) -> dict | None:
    try:
        import torch
        from stable_baselines3 import PPO
        from stable_baselines3.common.callbacks import BaseCallback
        from stable_baselines3.common.env_util import make_vec_env
        from stable_baselines3.common.vec_env import VecNormalize
    except ImportError:
        return None
    torch.set_num_threads(threads)
    zoo = ZOO[env_id]
    start = time.perf_counter()
    env = make_vec_env(env_id, n_envs=zoo["n_envs"], seed=seed)
    if zoo["normalize"]:
        env = VecNormalize(env)
    kwargs = dict(zoo["kwargs"])
    for key in ("learning_rate", "clip_range"):
        if isinstance(kwargs.get(key), str):
            initial = float(kwargs[key].split("_")[1])
            kwargs[key] = lambda progress, initial=initial: progress * initial
    threshold = THRESHOLDS[env_id]

    class Stop(BaseCallback):
        hit = None

        def _on_step(self) -> bool:
            buffer = self.model.ep_info_buffer
            if (
                len(buffer) >= 20
                and statistics.mean(e["r"] for e in list(buffer)[-20:]) >= threshold
            ):
                Stop.hit = (self.num_timesteps, time.perf_counter() - start)
                return False
            return True

    model = PPO("MlpPolicy", env, seed=seed, verbose=0, device="cpu", **kwargs)
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
    }


def median_or_none(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--presets", default="cartpole,pendulum,acrobot,mountaincar_continuous")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--no-sb3", action="store_true")
    parser.add_argument("--json", default="bench/results/ppo.json")
    args = parser.parse_args(argv)
    from fastbatch.ppo import PRESETS

    seeds = [int(s) for s in args.seeds.split(",")]
    report = []
    for preset in args.presets.split(","):
        env_id = PRESETS[preset].env_id
        ours = [run_fastbatch(preset, s) for s in seeds]
        theirs = {}
        if not args.no_sb3 and env_id in ZOO:
            for threads in (1, 2):
                runs = [run_sb3(env_id, s, threads) for s in seeds]
                if runs and runs[0] is not None:
                    theirs[threads] = runs
        row = {"preset": preset, "env": env_id, "threshold": THRESHOLDS[env_id], "fastbatch": ours}
        line = (
            f"{preset:<24} fastbatch: {sum(r['steps_to_threshold'] is not None for r in ours)}/{len(seeds)} reached,"
            f" median {median_or_none([r['seconds_to_threshold'] for r in ours])} s /"
            f" {median_or_none([r['steps_to_threshold'] for r in ours])} steps,"
            f" final {[round(r['final_return'], 1) for r in ours]}"
        )
        if theirs:
            best = min(
                theirs,
                key=lambda k: (
                    median_or_none([r["seconds_to_threshold"] for r in theirs[k]]) or math.inf
                ),
            )
            row["sb3"] = theirs
            row["sb3_best_threads"] = best
            sb3 = theirs[best]
            line += (
                f"\n{'':<24} SB3 ({best} thread{'s' if best > 1 else ''}): "
                f"{sum(r['steps_to_threshold'] is not None for r in sb3)}/{len(seeds)} reached, median "
                f"{median_or_none([r['seconds_to_threshold'] for r in sb3])} s /"
                f" {median_or_none([r['steps_to_threshold'] for r in sb3])} steps"
            )
        print(line, flush=True)
        report.append(row)
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
