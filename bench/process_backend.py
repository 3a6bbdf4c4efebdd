"""The process backend against gymnasium's vector envs, side by side in one run.

    python bench/process_backend.py [--quick]

Methods: "fastbatch processes" steps every block in a worker process (in_parent=False);
"fastbatch in_parent" has the calling process step the first block itself, one process fewer
(the default when the workers are at least the available cores, as on a 2-core machine).
Rows:
  HalfCheetah-v5, 16 envs   fastbatch process backend (2 workers) vs SyncVectorEnv and
                            AsyncVectorEnv (needs `pip install '.[mujoco]'`; skipped otherwise)
  CartPole-v1, 16 envs      the same, for a cheap pure-Python env
  no-op env, 16 envs        an env whose step does nothing: the time per batch step is the
                            backend's own overhead (IPC, copies, wake-ups)
Figures are env steps/s and microseconds per batch step, medians of repeated timed runs under
bench/_harness.py's rules (each env warmed up for one run's length, then runs of at least the
budget and 32 batch steps), printed after the run's metadata.
"""

from __future__ import annotations

import argparse
import sys

import _harness as harness
import gymnasium
import numpy as np

import fastbatch


class NoOpEnv(gymnasium.Env):
    """Returns the same observation forever: measures everything but the env."""

    observation_space = gymnasium.spaces.Box(-1.0, 1.0, (17,), np.float32)
    action_space = gymnasium.spaces.Box(-1.0, 1.0, (6,), np.float32)

    def __init__(self):
        self._obs = np.zeros(17, dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        return self._obs, {}

    def step(self, action):
        return self._obs, 0.0, False, False, {}


def rate(env, actions, budget: harness.Budget, repeats: int) -> float:
    """Median batch steps per second of `repeats` timed runs (bench/_harness.py's rules)."""
    env.reset(seed=0)
    return harness.median(harness.repeated(harness.Loop(env.step, actions, 1, budget), repeats))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    repeats, seconds = (3, 0.5) if args.quick else (5, 1.5)
    budget = harness.Budget(seconds)
    n = args.num_envs
    run = harness.RunInfo(
        packages=("mujoco",), num_envs=n, workers=args.workers, repeats=repeats, budget_s=seconds
    )
    table = harness.Table(
        ("env", -18), ("method", -22), ("steps/s", 12), ("us/batch step", 15), ("vs sync", 9)
    )

    cases = [
        ("HalfCheetah-v5", "HalfCheetah-v5"),
        ("CartPole-v1", "CartPole-v1"),
        ("no-op env", NoOpEnv),
    ]
    print(run.header())
    print(
        f"{n} envs, fastbatch process backend with {args.workers} workers; medians of {repeats} x "
        f"{seconds}s"
    )
    print(table.header())
    for label, env in cases:
        factory = (lambda env=env: gymnasium.make(env)) if isinstance(env, str) else env
        try:
            factory().close()
        except Exception as exc:  # e.g. MuJoCo not installed
            print(f"{label:<18}skipped: {type(exc).__name__}: {exc}")
            continue
        probe = factory()
        actions = harness.action_table(probe.action_space, n)
        probe.close()
        methods = {
            "fastbatch processes": lambda factory=factory: fastbatch.make(
                [factory] * n, backend="process", num_workers=args.workers, in_parent=False
            ),
            "fastbatch in_parent": lambda factory=factory: fastbatch.make(
                [factory] * n, backend="process", num_workers=args.workers, in_parent=True
            ),
            "gymnasium Sync": lambda factory=factory: gymnasium.vector.SyncVectorEnv([factory] * n),
            "gymnasium Async": lambda factory=factory: gymnasium.vector.AsyncVectorEnv(
                [factory] * n
            ),
        }
        rates = {}
        for name, build in methods.items():
            env = build()
            try:
                rates[name] = rate(env, actions, budget, repeats)
            finally:
                env.close()
        for name, r in rates.items():
            ratio = harness.format_ratio(r, rates["gymnasium Sync"])
            print(table.row(label, name, harness.format_rate(r * n), f"{1e6 / r:.1f}", ratio))
    print(run.footer())
    return 0


if __name__ == "__main__":
    sys.exit(main())
