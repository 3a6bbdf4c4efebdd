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

Every figure is env steps per second (batch steps x num_envs), the median of `--repeats` timed
runs of `--budget` seconds each under bench/_harness.py's rules (a warm-up of one run's length
first; whole passes over a pre-drawn action table until both the time and 32 batch steps are
done; the C++ loop sized to last as long). Results are printed as a table, with the run's
metadata, and written as JSON.
"""

from __future__ import annotations

import argparse
import sys
import warnings

import _harness as harness
import gymnasium

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
        first = harness.action_table(env.single_action_space, num_envs, count=1, seed=1)[0]
        return harness.async_cycle(env, first), env.close, batch
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
                num_threads=min(threads, num_envs),  # EnvPool's own name (not fastbatch's)
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


def measure(method, env_id, num_envs, threads, budget: harness.Budget, repeats) -> float | None:
    """Median env steps/s of `repeats` timed runs of one method (the harness's rules), or None
    when the method does not apply or is not installed."""
    if method == "native-loop":
        env_type = _core._builtin_env_types()[env_id]
        loop = harness.NativeLoop(
            lambda steps: _core._native_loop_seconds(env_type, num_envs, steps), num_envs, budget
        )
        return harness.median(harness.repeated(loop, repeats))
    stepper = make_stepper(method, env_id, num_envs, threads)
    if stepper is None:
        return None
    step, close, rows = stepper
    try:
        actions = harness.action_table(fastbatch.spec(env_id).action_space, rows)
        rates = harness.repeated(harness.Loop(step, actions, rows, budget), repeats)
    finally:
        close()
    return harness.median(rates)


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
        "--threads", type=int, default=harness.cores(), help="threads for fastbatch and envpool"
    )
    parser.add_argument(
        "--json", default="bench/results/throughput.json", help="where to write the results"
    )
    args = parser.parse_args(argv)
    repeats = args.repeats or (3 if args.quick else 5)
    seconds = args.budget or (0.1 if args.quick else 0.4)
    budget = harness.Budget(seconds)
    env_ids = [e for e in args.envs.split(",") if e]
    sizes = [int(n) for n in args.num_envs.split(",") if n]
    methods = [m for m in args.methods.split(",") if m]
    run = harness.RunInfo(
        packages=("envpool",),
        threads=args.threads,
        repeats=repeats,
        budget_s=seconds,
        quick=args.quick,
    )

    results = []
    table = harness.Table(("env", -26), ("N", 6), *((m, 14) for m in methods), ("us/step", 10))
    print(run.header())
    print(
        f"fastbatch {fastbatch.__version__}, {args.threads} threads, medians of {repeats} x "
        f"{seconds}s (env steps/s)"
    )
    print(table.header())
    print(table.rule())
    for env_id in env_ids:
        for n in sizes:
            row = {"env": env_id, "num_envs": n}
            for method in methods:
                row[method] = measure(method, env_id, n, args.threads, budget, repeats)
            best = row.get("fastbatch-1t") if n == 1 else row.get("fastbatch")
            row["fastbatch_us_per_batch_step"] = (n / best * 1e6) if best else None
            results.append(row)
            us = row["fastbatch_us_per_batch_step"]
            cells = [harness.format_rate(row[m]) for m in methods]
            print(table.row(env_id, n, *cells, f"{us:.2f}" if us else None), flush=True)
    print(run.footer())
    print()
    harness.write_json(args.json, run.meta, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
