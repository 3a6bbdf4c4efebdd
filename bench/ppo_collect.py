"""Cost of one BatchPPO iteration's parts: in-graph collection and the update.

    python bench/ppo_collect.py

For CartPole-v1 at 8 and 64 envs (rollouts of 128 steps): microseconds per batch step of
`Agent.collect()` with the rollout op and with the `tf.numpy_function` fallback, and
milliseconds per `Agent.update()` (10 epochs x 4 minibatches). Medians of 10 rollouts after a
warm-up (tracing excluded). Target for collection: at most 40 us per batch step at 8-64 envs.
"""

from __future__ import annotations

import statistics
import sys
import time

import tensorflow as tf

import fastbatch.ppo  # noqa: F401 - first: it sets TensorFlow's start-up options


def main() -> int:
    tf.config.threading.set_inter_op_parallelism_threads(1)  # as `fastbatch train` does
    tf.config.threading.set_intra_op_parallelism_threads(1)
    from fastbatch.ppo import resolve
    from fastbatch.ppo.agent import Agent
    from fastbatch.ppo.train import make_env

    print(f"{'envs':>5} {'path':<16} {'collect us/batch step':>22} {'update ms':>10}")
    for num_envs in (8, 64):
        for use_op in (True, False):
            config = resolve(
                "cartpole", num_envs=num_envs, rollout_steps=128, minibatches=4, epochs=10
            )
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
            print(
                f"{num_envs:>5} {path:<16} {statistics.median(collect) * 1e6:>22.1f} "
                f"{statistics.median(update) * 1e3:>10.1f}",
                flush=True,
            )
            env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
