"""Atari steps per second: fastbatch-atari's native envs against the alternatives, raw frames.

    python bench/atari.py            # Pong and Breakout, 8 and 64 envs (a few minutes)
    python bench/atari.py --quick

Every contender steps gymnasium's ``ALE/<Game>-v5`` env as registered (210x160 RGB frames,
frameskip 4, sticky actions 0.25, no preprocessing) with random actions:
  native-loop  fastbatch-atari's envs and pool stepped by a C++ loop on one thread (no Python)
  fastbatch    fastbatch.make("ALE/<Game>-v5", n): the native pool, `--threads` threads
  fb-async     the same in async mode, batch_size = n / 2 (steady recv()/send())
  ale-vector   ale-py's own C++ AtariVectorEnv, the same threads, set to raw frames (210x160
               RGB, no stacking, max-pooling, noops, fire reset or reward clipping)
  process      fastbatch's process backend over ale-py's env (backend="process")
  gym-sync     gymnasium.vector.SyncVectorEnv over ale-py's env
  gym-async    gymnasium.vector.AsyncVectorEnv (only up to 16 envs: one process per env)

fastbatch-atari must be installed (pip install --no-build-isolation ./plugins/atari). Figures
are env steps/s, medians of `--repeats` timed runs (bench/_harness.py's rules). The issue's
targets are for the CleanRL/EnvPool preprocessing (84x84 gray, stack 4, max-pool, noops):
that stack is not native yet, so this compares raw frames only (bench/README.md says so).
"""

from __future__ import annotations

import argparse
import sys

import _harness as harness
import gymnasium

import fastbatch
from fastbatch import _core
from fastbatch.registry import REGISTRY

GAMES = ("Pong", "Breakout")
NUM_ENVS = (8, 64)
METHODS = ("native-loop", "fastbatch", "fb-async", "ale-vector", "process", "gym-sync", "gym-async")


def _ale_ids() -> None:
    import ale_py

    gymnasium.register_envs(ale_py)


def make_stepper(method: str, env_id: str, num_envs: int, threads: int):
    """(step function, close function, envs per step), or None where it does not apply."""
    if method == "fastbatch":
        env = fastbatch.make(env_id, num_envs, seed=0, num_workers=threads)
        env.reset()
        return (lambda a: env.step(a)), env.close, num_envs
    if method == "fb-async":
        env = fastbatch.make(
            env_id, num_envs, batch_size=num_envs // 2, seed=0, num_workers=threads
        )
        env.reset()
        first = harness.action_table(env.single_action_space, num_envs, count=1, seed=1)[0]
        return harness.async_cycle(env, first), env.close, num_envs // 2
    if method == "ale-vector":
        from ale_py.vector_env import AtariVectorEnv

        game = gymnasium.spec(env_id).kwargs["game"]
        env = AtariVectorEnv(
            game,
            num_envs,
            num_threads=threads,
            repeat_action_probability=0.25,
            img_height=210,
            img_width=160,
            grayscale=False,
            stack_num=1,
            frameskip=4,
            maxpool=False,
            noop_max=0,
            reward_clipping=False,
            use_fire_reset=False,
        )
        env.reset(seed=0)
        return (lambda a: env.step(a)), env.close, num_envs
    if method == "process":
        env = fastbatch.make(env_id, num_envs, backend="process", seed=0, num_workers=threads)
        env.reset()
        return (lambda a: env.step(a)), env.close, num_envs
    if method in ("gym-sync", "gym-async"):
        if method == "gym-async" and num_envs > 16:
            return None
        vector = gymnasium.vector.SyncVectorEnv if method == "gym-sync" else None
        vector = vector or gymnasium.vector.AsyncVectorEnv
        env = vector([lambda: gymnasium.make(env_id) for _ in range(num_envs)])
        env.reset(seed=0)
        return (lambda a: env.step(a)), env.close, num_envs
    raise ValueError(method)


def measure(method, env_id, num_envs, threads, budget, repeats) -> float | None:
    if method == "native-loop":
        env_type = REGISTRY.resolve(env_id).env_type
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
    parser.add_argument("--games", default=",".join(GAMES), help="comma-separated game names")
    parser.add_argument("--num-envs", default=",".join(map(str, NUM_ENVS)))
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--budget", type=float, default=None, help="seconds per timed run")
    parser.add_argument("--threads", type=int, default=harness.cores())
    parser.add_argument("--json", default="bench/results/atari.json")
    args = parser.parse_args(argv)
    try:
        import fastbatch_atari
    except ImportError:
        print("fastbatch-atari is not installed: pip install --no-build-isolation ./plugins/atari")
        return 1
    fastbatch_atari.register()
    _ale_ids()
    repeats = args.repeats or (3 if args.quick else 5)
    seconds = args.budget or (0.3 if args.quick else 1.0)
    budget = harness.Budget(seconds)
    methods = [m for m in args.methods.split(",") if m]
    sizes = [int(n) for n in args.num_envs.split(",") if n]
    run = harness.RunInfo(
        packages=("ale-py", "fastbatch-atari"),
        threads=args.threads,
        repeats=repeats,
        budget_s=seconds,
        quick=args.quick,
    )
    table = harness.Table(
        ("env", -18), ("N", 4), *((m, 12) for m in methods), ("fb/ale", 8), ("fb/async", 9)
    )
    print(run.header())
    print(f"raw frames, {args.threads} threads, medians of {repeats} x {seconds}s (env steps/s)")
    print(table.header())
    print(table.rule())
    results = []
    for game in [g for g in args.games.split(",") if g]:
        env_id = f"ALE/{game}-v5"
        for n in sizes:
            row = {"env": env_id, "num_envs": n}
            for method in methods:
                row[method] = measure(method, env_id, n, args.threads, budget, repeats)
            results.append(row)
            cells = [harness.format_rate(row[m]) for m in methods]
            print(
                table.row(
                    env_id,
                    n,
                    *cells,
                    harness.format_ratio(row.get("fastbatch"), row.get("ale-vector")),
                    harness.format_ratio(row.get("fastbatch"), row.get("gym-async")),
                ),
                flush=True,
            )
    print(run.footer())
    harness.write_json(args.json, run.meta, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
