"""Cost of one BatchPPO iteration's parts: in-graph collection and the update.

    python bench/ppo_collect.py [--memory-only]

1. CartPole-v1 at 8 and 64 envs (rollouts of 128 steps): microseconds per batch step of
   `Agent.collect()` with the rollout op and with the `tf.numpy_function` fallback, and
   milliseconds per `Agent.update()` (10 epochs x 4 minibatches). Target for collection: at
   most 40 us per batch step at 8-64 envs.
2. The cost of memory: the `cartpole_novel` preset (CartPoleNoVel-v1) with its GRU core and with
   `policy=mlp` (the same heads, no core), at 8 and 64 envs, through the rollout op, side by
   side. Target: GRU collection at most 2x the MLP's per batch step.

Medians of 10 rollouts after a warm-up (tracing excluded): this script keeps its own loop (one
timed collection and update a rollout); medians, formatting and the run's metadata are
bench/_harness.py's.
"""

from __future__ import annotations

import sys
import time

import _harness as harness
import tensorflow as tf

import fastbatch.ppo  # noqa: F401 - first: it sets TensorFlow's start-up options


def measure(preset: str, use_op: bool = True, **changes) -> tuple[str, float, float]:
    """(collection path, us per batch step, ms per update): medians of 10 rollouts."""
    from fastbatch.ppo import resolve
    from fastbatch.ppo.agent import Agent
    from fastbatch.ppo.train import make_env

    config = resolve(preset, **changes)
    env = make_env(config)
    agent = Agent(config, env, rollout_op=use_op)
    path = "rollout op" if agent.rollout.uses_op else "numpy_function"
    agent.start(0)
    agent.update(agent.collect())  # warm-up: traces both functions
    collect, update = [], []
    for _ in range(10):
        t0 = time.perf_counter()
        actions = agent.collect()
        t1 = time.perf_counter()
        agent.update(actions)
        t2 = time.perf_counter()
        collect.append((t1 - t0) / config.rollout_steps)
        update.append(t2 - t1)
    env.close()
    return path, harness.median(collect) * 1e6, harness.median(update) * 1e3


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    tf.config.threading.set_inter_op_parallelism_threads(1)  # as `fastbatch train` does
    tf.config.threading.set_intra_op_parallelism_threads(1)
    run = harness.RunInfo(packages=("tensorflow",), memory_only="--memory-only" in argv)
    print(run.header())
    if "--memory-only" not in argv:
        print(f"{'envs':>5} {'path':<16} {'collect us/batch step':>22} {'update ms':>10}")
        for num_envs in (8, 64):
            for use_op in (True, False):
                path, collect, update = measure(
                    "cartpole",
                    use_op,
                    num_envs=num_envs,
                    rollout_steps=128,
                    minibatches=4,
                    epochs=10,
                )
                print(f"{num_envs:>5} {path:<16} {collect:>22.1f} {update:>10.1f}", flush=True)
        print()
    print("cartpole_novel (CartPoleNoVel-v1), rollout op: GRU core against policy=mlp")
    print(f"{'envs':>5} {'gru us/step':>12} {'mlp us/step':>12} {'ratio':>6} {'gru update ms':>14}")
    for num_envs in (8, 64):
        gru, mlp = [], []
        for _ in range(3):  # alternated, so that both see the same load on a busy machine
            gru.append(measure("cartpole_novel", num_envs=num_envs))
            mlp.append(measure("cartpole_novel", num_envs=num_envs, policy="mlp"))
        g = harness.median(r[1] for r in gru)
        m = harness.median(r[1] for r in mlp)
        u = harness.median(r[2] for r in gru)
        print(f"{num_envs:>5} {g:>12.1f} {m:>12.1f} {g / m:>6.2f} {u:>14.1f}", flush=True)
    print(run.footer())
    return 0


if __name__ == "__main__":
    sys.exit(main())
