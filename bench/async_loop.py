"""One async recv/send loop, timed: what an A/B of a change to async mode compares.

    python bench/async_loop.py [--env CartPole-v1] [--envs 4096] [--seconds 2] [--runs 1] [--sync]
                               [--num-workers N] [--param NAME=VALUE ...] [--step] [--native]

Steps `--envs` native envs in async mode with ``batch_size = envs / 2`` (default threads):
each cycle receives a batch and sends random actions back to the envs it returned, nothing
else in between (`--step`: each cycle is one `env.step(actions)`, the same send and recv in one
call). Prints env steps/s of each timed run of `--seconds`. `--sync` also times the
same envs in sync mode (one step of all envs a cycle), alternating with the async runs, and
prints the medians and their ratio; each run also prints the threads the pool had stepping at
its end (`active_workers`). `--param` passes an env parameter (e.g. `--param stall_prob=0.01`
for `_TestVariableCost-v0`). `--native` times the same loops driven by C++ instead
(`_core._native_loop_seconds`: no Python call, no action check, the pool's own buffers; a
built-in env with its default parameters; `--num-workers` threads, none beyond them for
blocking envs), async and sync alternating: what async mode costs
against sync with no Python in the loop. To compare two builds,
run it alternately against each (e.g. copying each build's `_core*.so` into place before a
run) and compare medians: on a shared machine single runs of bench/contention.py's async rows
move by up to 0.3x between runs a minute apart.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import fastbatch
from fastbatch import _core
from fastbatch._args import available_cores


def draw(env, rows: int, count: int) -> list[np.ndarray]:
    space = env.single_action_space
    space.seed(0)
    return [
        np.stack([space.sample() for _ in range(rows)]).astype(space.dtype) for _ in range(count)
    ]


def rate(
    env_id: str,
    num_envs: int,
    seconds: float,
    sync: bool = False,
    step: bool = False,
    **make_kwargs,
):
    """(env steps/s, the threads the pool had stepping at the end) of one timed run; `step`:
    each async cycle is one `env.step` (send to the envs of the last recv, then recv)."""
    batch = num_envs if sync else num_envs // 2
    env = fastbatch.make(
        env_id, num_envs, seed=0, batch_size=None if sync else batch, **make_kwargs
    )
    try:
        env.reset()
        actions = draw(env, batch, 16)
        if sync:
            cycle = env.step
        elif step:
            env.step(draw(env, num_envs, 1)[0])  # after reset: all envs, then batches
            cycle = env.step
        else:
            env.send(draw(env, num_envs, 1)[0])

            def cycle(a):
                env.recv()
                env.send(a)  # to the envs the last recv returned

        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            for a in actions:
                cycle(a)
            steps += len(actions) * batch
        return steps / (time.perf_counter() - start), env.active_workers
    finally:
        env.close()


def native_rate(env_id: str, num_envs: int, seconds: float, sync: bool, threads: int) -> float:
    """Env steps/s of one timed run of the C++ loop (one step: sync, or a recv and a send)."""
    env_type = _core._builtin_env_types()[env_id]
    batch = 0 if sync else num_envs // 2
    rows = num_envs if sync else num_envs // 2
    steps = 8
    while True:  # double the steps until a run takes `seconds` (each run is a fresh pool)
        elapsed = _core._native_loop_seconds(
            env_type, num_envs, steps, num_threads=threads, batch_size=batch
        )
        if elapsed >= seconds:
            return steps * rows / elapsed
        steps = int(steps * min(16.0, 1.2 * seconds / max(elapsed, 1e-6))) + 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--envs", type=int, default=4096)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--sync", action="store_true", help="also time sync mode, alternating")
    parser.add_argument("--num-workers", type=int, default=None, help="default: the cores")
    parser.add_argument(
        "--param", action="append", default=[], metavar="NAME=VALUE", help="an env parameter"
    )
    parser.add_argument("--native", action="store_true", help="C++-driven loops, async and sync")
    parser.add_argument("--step", action="store_true", help="async cycles as env.step(actions)")
    args = parser.parse_args(argv)
    if args.envs < 2:
        parser.error("--envs must be at least 2 (async mode returns envs / 2 a batch)")
    if args.native:
        builtin = _core._builtin_env_types()
        if args.env.removeprefix("fastbatch/") not in builtin:
            parser.error(f"--native takes a built-in env: one of {', '.join(sorted(builtin))}")
        if args.param:
            parser.error("--native runs the env with its default parameters")
        args.env = args.env.removeprefix("fastbatch/")
        threads = args.num_workers or available_cores()
        rates = {"async": [], "sync": []}
        for _ in range(args.runs):
            for mode in ["async", "sync"]:
                steps = native_rate(args.env, args.envs, args.seconds, mode == "sync", threads)
                rates[mode].append(steps)
                print(f"{args.env} x{args.envs} native {mode}: {steps / 1e6:.3f}M steps/s")
        a, s = statistics.median(rates["async"]), statistics.median(rates["sync"])
        print(f"medians: async {a / 1e6:.3f}M, sync {s / 1e6:.3f}M, async / sync {a / s:.2f}x")
        return 0
    kwargs = {"num_workers": args.num_workers}
    for item in args.param:  # e.g. stall_prob=0.01 for _TestVariableCost-v0
        name, value = item.split("=", 1)
        kwargs[name] = float(value) if "." in value or "e" in value else int(value)
    rates: dict[str, list[float]] = {"async": [], "sync": []}
    for _ in range(args.runs):
        for mode in ["async", "sync"] if args.sync else ["async"]:
            steps, active = rate(
                args.env, args.envs, args.seconds, mode == "sync", args.step, **kwargs
            )
            rates[mode].append(steps)
            print(f"{args.env} x{args.envs} {mode}: {steps / 1e6:.3f}M steps/s, {active} threads")
    if args.sync:
        a, s = statistics.median(rates["async"]), statistics.median(rates["sync"])
        print(f"medians: async {a / 1e6:.3f}M, sync {s / 1e6:.3f}M, async / sync {a / s:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
