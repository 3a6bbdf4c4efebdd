"""Atari steps per second: fastbatch-atari's native envs against the alternatives.

    python bench/atari.py            # Pong and Breakout, 8 and 64 envs, preprocessed frames
    python bench/atari.py --raw      # ALE's raw v5 frames instead
    python bench/atari.py --quick
    python bench/atari.py --startup  # seconds from make to the first reset's end instead

Preprocessed (the default; issue 29's table): every contender gives the same observations, as
CleanRL and EnvPool use them: 84x84 grayscale, 4 stacked, each action repeated 4 frames with
the last two max-pooled, up to 30 noops at reset, no sticky actions, no fire reset, episodic
life or reward clipping. Raw (`--raw`): gymnasium's `ALE/<Game>-v5` as registered (210x160 RGB,
frameskip 4, sticky actions 0.25). Random actions throughout.
  native-loop  the same native envs and pool (same params and stack) stepped by a C++ loop on the
               same threads: no Python, the limit
  fastbatch    fastbatch.make("ALE/<Game>-v5", n, ...): the native pool, `--threads` threads
               (preprocessed: frameskip=1, atari_preprocessing=True, frame_stack=4)
  fb-async     the same in async mode, batch_size = n / 2 (steady recv()/send())
  fb-scaled    fastbatch with scale_obs=True: float32 frames in [0, 1] (preprocessed only; not
               in the default methods: --methods fastbatch,fb-scaled)
  envpool      EnvPool's own Atari envs (ALE 0.11 inside), sync mode, the same threads (only if
               envpool is installed: pip install ".[bench]"; preprocessed only)
  ale-vector   ale-py's C++ AtariVectorEnv, sync, the same threads (raw: set to raw frames)
  process      fastbatch's process backend over ale-py's env (and gymnasium's wrappers)
  gym-async    gymnasium.vector.AsyncVectorEnv over the same (up to --max-async-envs, 16)
  gym-sync     gymnasium.vector.SyncVectorEnv over the same

fastbatch-atari must be installed (pip install --no-build-isolation ./plugins/atari). Figures
are env steps/s, medians of `--repeats` timed runs (bench/_harness.py's rules); the ratio
columns are fastbatch's sync figure over each contender's.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
import warnings

import _harness as harness
import gymnasium
import numpy as np

import fastbatch
from fastbatch import _core
from fastbatch.registry import REGISTRY

GAMES = ("Pong", "Breakout")
NUM_ENVS = (8, 64)
METHODS = (
    "native-loop",
    "fastbatch",
    "fb-async",
    "envpool",
    "ale-vector",
    "process",
    "gym-async",
    "gym-sync",
)
STACK, SKIP, SIZE, NOOPS = 4, 4, 84, 30
# gymnasium's AsyncVectorEnv runs one process per env: above this many envs it is left out
# unless --max-async-envs says otherwise (64 ALE processes take a minute to start on 2 cores).
MAX_ASYNC_ENVS = 16

# fastbatch's params for each kind of frames (preprocessed: CleanRL's stack, as the others below).
NATIVE = {
    "raw": {},
    "preprocessed": {
        "frameskip": 1,
        "repeat_action_probability": 0.0,
        "atari_preprocessing": True,
        "frame_stack": STACK,
    },
}


def _gym_env(env_id: str, raw: bool):
    """ale-py's env (and, preprocessed, gymnasium's wrappers around it), for gymnasium's vectors."""
    if raw:
        return gymnasium.make(env_id)
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

    env = gymnasium.make(env_id, frameskip=1, repeat_action_probability=0.0)
    env = AtariPreprocessing(env, noop_max=NOOPS, frame_skip=SKIP, screen_size=SIZE)
    return FrameStackObservation(env, STACK)


def make_stepper(method: str, env_id: str, num_envs: int, threads: int, raw: bool, max_async: int):
    """(step function, close function, envs per step), or None where it does not apply."""
    native = NATIVE["raw" if raw else "preprocessed"]
    game = gymnasium.spec(env_id).kwargs["game"]
    if method == "fastbatch":
        env = fastbatch.make(env_id, num_envs, seed=0, num_workers=threads, **native)
        env.reset()
        return (lambda a: env.step(a)), env.close, num_envs
    if method == "fb-scaled":
        if raw:
            return None
        env = fastbatch.make(
            env_id, num_envs, seed=0, num_workers=threads, scale_obs=True, **native
        )
        env.reset()
        return (lambda a: env.step(a)), env.close, num_envs
    if method == "fb-async":
        env = fastbatch.make(
            env_id, num_envs, batch_size=num_envs // 2, seed=0, num_workers=threads, **native
        )
        env.reset()
        first = harness.action_table(env.single_action_space, num_envs, count=1, seed=1)[0]
        return harness.async_cycle(env, first), env.close, num_envs // 2
    if method == "envpool":
        if raw:
            return None
        try:
            import envpool
        except ImportError:
            return None
        name = env_id.split("/")[1]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            env = envpool.make(
                name,
                env_type="gymnasium",
                num_envs=num_envs,
                batch_size=num_envs,
                num_threads=threads,
                seed=0,
                img_height=SIZE,
                img_width=SIZE,
                stack_num=STACK,
                frame_skip=SKIP,
                noop_max=NOOPS,
                repeat_action_probability=0.0,
                use_fire_reset=False,
                episodic_life=False,
                reward_clip=False,
            )
        env.reset()
        return (lambda a: env.step(np.asarray(a, dtype=np.int32))), env.close, num_envs
    if method == "ale-vector":
        from ale_py.vector_env import AtariVectorEnv

        if raw:
            frames = dict(img_height=210, img_width=160, grayscale=False, stack_num=1)
            frames.update(maxpool=False, noop_max=0, repeat_action_probability=0.25)
        else:
            frames = dict(img_height=SIZE, img_width=SIZE, grayscale=True, stack_num=STACK)
            frames.update(maxpool=True, noop_max=NOOPS, repeat_action_probability=0.0)
        env = AtariVectorEnv(
            game,
            num_envs,
            num_threads=threads,
            frameskip=SKIP,
            reward_clipping=False,
            use_fire_reset=False,
            **frames,
        )
        env.reset(seed=0)
        return (lambda a: env.step(a)), env.close, num_envs
    if method == "process":
        env = fastbatch.make(
            [functools.partial(_gym_env, env_id, raw) for _ in range(num_envs)],
            seed=0,
            num_workers=threads,
        )
        env.reset()
        return (lambda a: env.step(a)), env.close, num_envs
    if method in ("gym-sync", "gym-async"):
        if method == "gym-async" and num_envs > max_async:
            return None
        vector = {"gym-sync": gymnasium.vector.SyncVectorEnv}.get(method)
        vector = vector or gymnasium.vector.AsyncVectorEnv
        env = vector([functools.partial(_gym_env, env_id, raw) for _ in range(num_envs)])
        env.reset(seed=0)
        return (lambda a: env.step(a)), env.close, num_envs
    raise ValueError(method)


def measure(method, env_id, num_envs, threads, budget, repeats, raw, max_async) -> float | None:
    if method == "native-loop":
        entry = REGISTRY.resolve(env_id)
        kwargs = dict(NATIVE["raw" if raw else "preprocessed"])
        stack = kwargs.pop("frame_stack", 1)
        params = entry.spec.encode_params(kwargs)
        loop = harness.NativeLoop(
            lambda steps: _core._native_loop_seconds(
                entry.env_type, num_envs, steps, 0, threads, params=params, frame_stack=stack
            ),
            num_envs,
            budget,
        )
        return harness.median(harness.repeated(loop, repeats))
    stepper = make_stepper(method, env_id, num_envs, threads, raw, max_async)
    if stepper is None:
        return None
    step, close, rows = stepper
    try:
        actions = harness.action_table(fastbatch.spec(env_id).action_space, rows)
        rates = harness.repeated(harness.Loop(step, actions, rows, budget), repeats)
    finally:
        close()
    return harness.median(rates)


def startup_seconds(method, env_id, num_envs, threads, raw, max_async) -> float | None:
    """Seconds to make `method`'s envs and reset them once (the envs are closed after); None
    for the C++ loop, which times steps only."""
    if method == "native-loop":
        return None
    start = time.perf_counter()
    stepper = make_stepper(method, env_id, num_envs, threads, raw, max_async)
    seconds = time.perf_counter() - start
    if stepper is None:
        return None
    stepper[1]()
    return seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="short budgets and fewer repeats")
    parser.add_argument("--raw", action="store_true", help="raw v5 frames, no preprocessing")
    parser.add_argument(
        "--startup",
        action="store_true",
        help="seconds from make to the end of the first reset, one timing a cell",
    )
    parser.add_argument("--games", default=",".join(GAMES), help="comma-separated game names")
    parser.add_argument("--num-envs", default=",".join(map(str, NUM_ENVS)))
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--budget", type=float, default=None, help="seconds per timed run")
    parser.add_argument("--threads", type=int, default=harness.cores())
    parser.add_argument("--json", default=None, help="default: bench/results/atari[_raw].json")
    parser.add_argument(
        "--max-async-envs",
        type=int,
        default=MAX_ASYNC_ENVS,
        help="run gymnasium's AsyncVectorEnv (a process per env) up to this many envs (16)",
    )
    args = parser.parse_args(argv)
    try:
        import fastbatch_atari
    except ImportError:
        print("fastbatch-atari is not installed: pip install --no-build-isolation ./plugins/atari")
        return 1
    fastbatch_atari.register()
    import ale_py

    gymnasium.register_envs(ale_py)
    repeats = args.repeats or (3 if args.quick else 5)
    seconds = args.budget or (0.3 if args.quick else 1.0)
    budget = harness.Budget(seconds)
    methods = [m for m in args.methods.split(",") if m]
    sizes = [int(n) for n in args.num_envs.split(",") if n]
    run = harness.RunInfo(
        packages=("ale-py", "fastbatch-atari", "envpool"),
        threads=args.threads,
        repeats=repeats,
        budget_s=seconds,
        quick=args.quick,
    )
    others = [m for m in methods if m not in ("fastbatch", "native-loop", "fb-scaled")]
    table = harness.Table(
        ("env", -16),
        ("N", 5),
        *((m, 12) for m in methods),
        *((f"/{m}", 12) for m in others),
    )
    kind = "raw v5 frames" if args.raw else "84x84 gray, stack 4, skip 4, max-pool, noop 30"
    print(run.header())
    print(f"{kind}; {args.threads} threads; medians of {repeats} x {seconds}s (env steps/s)")
    print(table.header())
    print(table.rule())
    results = []
    for game in [g for g in args.games.split(",") if g]:
        env_id = f"ALE/{game}-v5"
        for n in sizes:
            row = {"env": env_id, "num_envs": n, "frames": "raw" if args.raw else "preprocessed"}
            for method in methods:
                if args.startup:
                    row[method] = startup_seconds(
                        method, env_id, n, args.threads, args.raw, args.max_async_envs
                    )
                    continue
                row[method] = measure(
                    method, env_id, n, args.threads, budget, repeats, args.raw, args.max_async_envs
                )
            results.append(row)
            if args.startup:
                cells = ["-" if row[m] is None else f"{row[m]:.2f} s" for m in methods]
                print(table.row(env_id, n, *cells, *[""] * len(others)), flush=True)
                continue
            cells = [harness.format_rate(row[m]) for m in methods]
            ratios = [harness.format_ratio(row.get("fastbatch"), row[m]) for m in others]
            print(table.row(env_id, n, *cells, *ratios), flush=True)
    print(run.footer())
    kind = "_startup" if args.startup else "_raw" if args.raw else ""
    default_json = f"bench/results/atari{kind}.json"
    harness.write_json(args.json or default_json, run.meta, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
