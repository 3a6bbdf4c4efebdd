"""One async recv/send loop, timed: what an A/B of a change to async mode compares.

    python bench/async_loop.py [--env CartPole-v1] [--envs 4096] [--seconds 2] [--runs 1]

Steps `--envs` native envs in async mode with ``batch_size = envs / 2`` (default threads):
each cycle receives a batch and sends random actions back to the envs it returned, nothing
else in between. Prints env steps/s of each timed run of `--seconds`. To compare two builds,
run it alternately against each (e.g. copying each build's `_core*.so` into place before a
run) and compare medians: on a shared machine single runs of bench/contention.py's async rows
move by up to 0.3x between runs a minute apart.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import fastbatch


def rate(env_id: str, num_envs: int, seconds: float) -> float:
    batch = num_envs // 2
    env = fastbatch.make(env_id, num_envs, seed=0, batch_size=batch)
    try:
        env.reset()
        space = env.single_action_space
        space.seed(0)
        actions = [
            np.stack([space.sample() for _ in range(batch)]).astype(space.dtype) for _ in range(16)
        ]
        env.send(np.stack([space.sample() for _ in range(num_envs)]).astype(space.dtype))
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            for a in actions:
                env.recv()
                env.send(a)  # to the envs the last recv returned
            steps += len(actions) * batch
        return steps / (time.perf_counter() - start)
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
    args = parser.parse_args(argv)
    for _ in range(args.runs):
        print(
            f"{args.env} x{args.envs}: {rate(args.env, args.envs, args.seconds) / 1e6:.2f}M steps/s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
