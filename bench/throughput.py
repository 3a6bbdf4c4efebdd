"""Steps per second of fastbatch against the alternatives, measured side by side in one run.

    python bench/throughput.py            # full run (a few minutes on 2 cores)
    python bench/throughput.py --quick    # short run

Methods (columns):
  native-loop   the same C++ envs and pool stepped by a C++ loop on one thread (no Python)
  fastbatch-1t  fastbatch.make(..., num_workers=1)
  fastbatch     fastbatch.make(...) with the default threads (the available cores)
  fb-async      fastbatch async mode, batch_size = num_envs / 2: steady recv()/send() loop
  envpool       EnvPool sync mode, same threads (only if `envpool` is installed: pip install '.[bench]')
  gym-sync      gymnasium.vector.SyncVectorEnv over gymnasium's own envs
  gym-async     gymnasium.vector.AsyncVectorEnv (only up to 16 envs: one process per env)

Every figure is env steps per second (batch steps x num_envs), the median of repeated timed
runs; actions are drawn before timing. Results are printed as a table and written as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

import gymnasium
import numpy as np

import fastbatch
from fastbatch import _core

ENV_IDS = ["CartPole-v1", "Pendulum-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Acrobot-v1"]
NUM_ENVS = [1, 16, 256, 4096]
METHODS = [
    "native-loop",
    "fastbatch-1t",
    "fastbatch",
    "fb-async",
    "envpool",
    "gym-sync",
    "gym-async",
]


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def action_table(
    space: gymnasium.spaces.Space, num_envs: int, rng: np.random.Generator, count: int = 16
):
    if isinstance(space, gymnasium.spaces.Discrete):
        return [rng.integers(space.n, size=num_envs) for _ in range(count)]
    return [
        rng.uniform(space.low, space.high, size=(num_envs, *space.shape)).astype(space.dtype)
        for _ in range(count)
    ]


def time_steps(step, actions, budget: float) -> float:
    """Steps until `budget` seconds pass; returns batch steps per second."""
    for a in actions[:4]:  # warm up
        step(a)
    n, start = 0, time.perf_counter()
    while True:
        for a in actions:
            step(a)
        n += len(actions)
        elapsed = time.perf_counter() - start
        if elapsed >= budget:
            return n / elapsed


def make_stepper(method: str, env_id: str, num_envs: int, threads: int):
    """Returns (step function, close function, envs per step), or None when it does not apply."""
    if method in ("fastbatch", "fastbatch-1t"):
        env = fastbatch.make(
            env_id,
            num_envs=num_envs,
            seed=0,
            num_workers=1 if method == "fastbatch-1t" else threads,
        )
        env.reset()
        return (lambda a: env.step(a)), env.close, num_envs
    if method == "fb-async":
        if num_envs < 2:
            return None
        batch = num_envs // 2
        env = fastbatch.make(
            env_id, num_envs=num_envs, batch_size=batch, seed=0, num_workers=threads
        )
        env.reset()
        env.send(action_table(env.single_action_space, num_envs, np.random.default_rng(1), 1)[0])

        def step(actions):
            env.recv()
            env.send(actions)

        return step, env.close, batch
    if method == "envpool":
        try:
            import envpool
        except ImportError:
            return None
        with warnings.catch_warnings():  # EnvPool builds float32 Boxes from float64 bounds
            warnings.simplefilter("ignore")
            env = envpool.make(
                env_id,
                env_type="gymnasium",
                num_envs=num_envs,
                batch_size=num_envs,
                num_workers=min(threads, num_envs),
                seed=0,
            )
        env.reset()
        return (lambda a: env.step(a)), env.close, num_envs
    if method == "gym-sync":
        env = gymnasium.vector.SyncVectorEnv(
            [lambda: gymnasium.make(env_id) for _ in range(num_envs)]
        )
        env.reset(seed=0)
        return (lambda a: env.step(a)), env.close, num_envs
    if method == "gym-async":
        if num_envs > 16:
            return None
        env = gymnasium.vector.AsyncVectorEnv(
            [lambda: gymnasium.make(env_id) for _ in range(num_envs)]
        )
        env.reset(seed=0)
        return (lambda a: env.step(a)), env.close, num_envs
    raise ValueError(method)


def measure(method, env_id, num_envs, threads, budget, repeats, rng):
    space = fastbatch.spec(env_id).action_space
    if method == "native-loop":
        env_type = _core._builtin_env_types()[env_id]
        steps = max(1, int(2_000_000 / num_envs))
        _core._native_loop_seconds(env_type, num_envs, max(1, steps // 10))  # warm up
        rates = []
        for _ in range(repeats):
            seconds = _core._native_loop_seconds(env_type, num_envs, steps)
            rates.append(steps / seconds)
        return statistics.median(rates) * num_envs
    stepper = make_stepper(method, env_id, num_envs, threads)
    if stepper is None:
        return None
    step, close, rows = stepper
    try:
        actions = action_table(space, rows, rng)
        rates = [time_steps(step, actions, budget) for _ in range(repeats)]
    finally:
        close()
    return statistics.median(rates) * rows


def fmt(x: float | None) -> str:
    if x is None:
        return "-"
    if x >= 1e6:
        return f"{x / 1e6:.2f}M"
    if x >= 1e3:
        return f"{x / 1e3:.1f}k"
    return f"{x:.0f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="short budgets and fewer repeats")
    parser.add_argument("--envs", default=",".join(ENV_IDS), help="comma-separated env ids")
    parser.add_argument(
        "--num-envs", default=",".join(map(str, NUM_ENVS)), help="comma-separated batch sizes"
    )
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated methods")
    parser.add_argument(
        "--repeats", type=int, default=None, help="timed runs per cell (median is reported)"
    )
    parser.add_argument("--budget", type=float, default=None, help="seconds per timed run")
    parser.add_argument(
        "--threads", type=int, default=cores(), help="threads for fastbatch and envpool"
    )
    parser.add_argument(
        "--json", default="bench/results/throughput.json", help="where to write the results"
    )
    args = parser.parse_args(argv)
    repeats = args.repeats or (3 if args.quick else 5)
    budget = args.budget or (0.1 if args.quick else 0.4)
    env_ids = [e for e in args.envs.split(",") if e]
    sizes = [int(n) for n in args.num_envs.split(",") if n]
    methods = [m for m in args.methods.split(",") if m]
    rng = np.random.default_rng(0)

    results = []
    header = f"{'env':<26}{'N':>6}" + "".join(f"{m:>14}" for m in methods) + f"{'us/step':>10}"
    print(
        f"fastbatch {fastbatch.__version__}, {args.threads} threads, medians of {repeats} x {budget}s (env steps/s)"
    )
    print(header)
    print("-" * len(header))
    for env_id in env_ids:
        for n in sizes:
            row = {"env": env_id, "num_envs": n}
            for method in methods:
                row[method] = measure(method, env_id, n, args.threads, budget, repeats, rng)
            best = row.get("fastbatch-1t") if n == 1 else row.get("fastbatch")
            row["fastbatch_us_per_batch_step"] = (n / best * 1e6) if best else None
            results.append(row)
            us = row["fastbatch_us_per_batch_step"]
            print(
                f"{env_id:<26}{n:>6}"
                + "".join(f"{fmt(row[m]):>14}" for m in methods)
                + (f"{us:>10.2f}" if us else f"{'-':>10}"),
                flush=True,
            )

    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "fastbatch": fastbatch.__version__,
        "gymnasium": gymnasium.__version__,
        "numpy": np.__version__,
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "cores": cores(),
        "threads": args.threads,
        "repeats": repeats,
        "budget_s": budget,
        "quick": args.quick,
    }
    out.write_text(json.dumps({"meta": meta, "results": results}, indent=2))
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
