"""One async recv/send loop, timed: what an A/B of a change to async mode compares.

    python bench/async_loop.py [--env CartPole-v1] [--envs 4096] [--seconds 2] [--runs 1] [--sync]
                               [--num-workers N] [--param NAME=VALUE ...]

Steps `--envs` native envs in async mode with ``batch_size = envs / 2`` (default threads):
each cycle receives a batch and sends random actions back to the envs it returned, nothing
else in between. Prints env steps/s of each timed run of `--seconds`. `--sync` also times the
same envs in sync mode (one step of all envs a cycle), alternating with the async runs, and
prints the medians and their ratio; each run also prints the threads the pool had stepping at
its end (`active_workers`). `--param` passes an env parameter (e.g. `--param stall_prob=0.01`
for `_TestVariableCost-v0`). To compare two builds,
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


def draw(env, rows: int, count: int) -> list[np.ndarray]:
    space = env.single_action_space
    space.seed(0)
    return [
        np.stack([space.sample() for _ in range(rows)]).astype(space.dtype) for _ in range(count)
    ]


def rate(env_id: str, num_envs: int, seconds: float, sync: bool = False, **make_kwargs):
    """(env steps/s, the threads the pool had stepping at the end) of one timed run."""
    batch = num_envs if sync else num_envs // 2
    env = fastbatch.make(
        env_id, num_envs, seed=0, batch_size=None if sync else batch, **make_kwargs
    )
    try:
        env.reset()
        actions = draw(env, batch, 16)
        if sync:
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
    args = parser.parse_args(argv)
    kwargs = {"num_workers": args.num_workers}
    for item in args.param:  # e.g. stall_prob=0.01 for _TestVariableCost-v0
        name, value = item.split("=", 1)
        kwargs[name] = float(value) if "." in value or "e" in value else int(value)
    rates: dict[str, list[float]] = {"async": [], "sync": []}
    for _ in range(args.runs):
        for mode in ["async", "sync"] if args.sync else ["async"]:
            steps, active = rate(args.env, args.envs, args.seconds, mode == "sync", **kwargs)
            rates[mode].append(steps)
            print(f"{args.env} x{args.envs} {mode}: {steps / 1e6:.3f}M steps/s, {active} threads")
    if args.sync:
        a, s = statistics.median(rates["async"]), statistics.median(rates["sync"])
        print(f"medians: async {a / 1e6:.3f}M, sync {s / 1e6:.3f}M, async / sync {a / s:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
