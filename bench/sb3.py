"""Stable-Baselines3 PPO on fastbatch's native CartPole (through `fastbatch.sb3.SB3VecEnv`)
against SB3's own DummyVecEnv over Monitor-wrapped gymnasium CartPole, one run each.

    python bench/sb3.py [--steps 100000] [--seed 0] [--torch-threads 1] [--json FILE]

Needs `pip install torch==2.13.0 stable-baselines3` (or the `sb3` extra). PPO uses the
rl-baselines3-zoo CartPole-v1 hyperparameters (8 envs, as bench/ppo.py). Reported per vec env:
the env alone through SB3's VecEnv API (random actions: steps/s, the median of 3 timed runs of
0.25 s under bench/_harness.py's rules), then PPO's FPS over the whole
`learn()` (as SB3 logs it: env steps / wall seconds), the mean return of the last 100 training
episodes, and the deterministic evaluation return over 20 episodes.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # SB3's logger imports TensorBoard

import _harness as harness
import gymnasium
import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

import fastbatch
from fastbatch.sb3 import SB3VecEnv

N_ENVS = 8
ZOO_CARTPOLE = dict(
    n_steps=32,
    batch_size=256,
    gae_lambda=0.8,
    gamma=0.98,
    n_epochs=20,
    ent_coef=0.0,
    learning_rate=lambda progress: 0.001 * progress,
    clip_range=lambda progress: 0.2 * progress,
)


def make_vec_env(kind: str):
    if kind == "fastbatch native":
        return SB3VecEnv(
            fastbatch.make("CartPole-v1", N_ENVS, autoreset_mode="same_step", num_workers=1)
        )
    return DummyVecEnv([lambda: Monitor(gymnasium.make("CartPole-v1")) for _ in range(N_ENVS)])


ENV_BUDGET = harness.Budget(0.25)  # the env-alone runs
ENV_REPEATS = 3


def env_rate(kind: str) -> float:
    """Env steps/s through the VecEnv API with random actions (no learning): the median of
    ENV_REPEATS timed runs of ENV_BUDGET (bench/_harness.py's rules)."""
    env = make_vec_env(kind)
    try:
        env.seed(0)
        env.reset()
        actions = harness.action_table(gymnasium.spaces.Discrete(2), N_ENVS)
        loop = harness.Loop(env.step, actions, N_ENVS, ENV_BUDGET)
        return harness.median(harness.repeated(loop, ENV_REPEATS))
    finally:
        env.close()


def ppo_run(kind: str, steps: int, seed: int) -> dict[str, float]:
    env = make_vec_env(kind)
    model = PPO("MlpPolicy", env, seed=seed, device="cpu", **ZOO_CARTPOLE)
    start = time.perf_counter()
    model.learn(steps)
    seconds = time.perf_counter() - start
    train_return = float(np.mean([e["r"] for e in model.ep_info_buffer]))
    eval_return, _ = evaluate_policy(model, env, n_eval_episodes=20)
    env.close()
    return {
        "fps": model.num_timesteps / seconds,
        "seconds": seconds,
        "train_return": train_return,
        "eval_return": float(eval_return),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    torch.set_num_threads(args.torch_threads)
    run = harness.RunInfo(
        packages=("stable_baselines3", "torch"),
        steps=args.steps,
        seed=args.seed,
        torch_threads=args.torch_threads,
    )
    print(run.header())
    results = {}
    for kind in ("fastbatch native", "DummyVecEnv"):
        results[kind] = {"env_steps_per_s": env_rate(kind), **ppo_run(kind, args.steps, args.seed)}
    print(
        f"SB3 PPO, CartPole-v1, {N_ENVS} envs, {args.steps} steps, seed {args.seed}, "
        f"{args.torch_threads} torch thread(s)"
    )
    table = harness.Table(
        ("vec env", -18),
        ("env steps/s", 12),
        ("PPO FPS", 10),
        ("seconds", 9),
        ("train return", 14),
        ("eval return", 13),
    )
    print(table.header())
    for kind, r in results.items():
        print(
            table.row(
                kind,
                harness.format_rate(r["env_steps_per_s"]),
                harness.format_rate(r["fps"]),
                f"{r['seconds']:.1f}",
                f"{r['train_return']:.1f}",
                f"{r['eval_return']:.1f}",
            )
        )
    print(run.footer())
    if args.json:
        harness.write_json(args.json, run.meta, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
