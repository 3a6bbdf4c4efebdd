"""Cost of one BatchPPO iteration's parts: in-graph collection and the update.

    python bench/ppo_collect.py [--memory-only | --pixels-only] [--quick]

(`--quick`: shorter timed runs in section 3.)

1. CartPole-v1 at 8 and 64 envs (rollouts of 128 steps): microseconds per batch step of
   `Agent.collect()` with the rollout op and with the `tf.numpy_function` fallback, and
   milliseconds per `Agent.update()` (10 epochs x 4 minibatches). Target for collection: at
   most 40 us per batch step at 8-64 envs.
2. The cost of memory: the `cartpole_novel` preset (CartPoleNoVel-v1) with its GRU core and with
   `policy=mlp` (the same heads, no core), at 8 and 64 envs, through the rollout op, side by
   side. Target: GRU collection at most 2x the MLP's per batch step.
3. Pixels: the rollout op's own cost per batch step, at 8 envs, for CartPole-v1 and for the
   uint8 image env `_TestImage-v0` at 84x84x4 (channels last): the op's collection loop (a
   `tf.while_loop` of `Rollout.step` under a trivial policy, action = done) minus the env's own
   stepping (the same pool and storage stepped by a C++ loop, `FastbatchRolloutLoopSeconds`,
   1 env thread), and the rollout's observation storage in bytes per env step against float32's.
   Targets: the image env's op cost at most 1.2x CartPole's; its storage 1/4 of float32's. Each
   figure is a median of interleaved timed runs of both loops (bench/_harness.py's NativeLoop;
   `--quick`: 5 runs of 0.2 s, else 11 of 0.5 s).

Medians of 10 rollouts after a warm-up (tracing excluded): this script keeps its own loop (one
timed collection and update a rollout); medians, formatting and the run's metadata are
bench/_harness.py's.
"""

from __future__ import annotations

import ctypes
import sys
import time

import _harness as harness
import numpy as np
import tensorflow as tf

import fastbatch.ppo  # first: it sets TensorFlow's start-up options

PIXEL_ENVS = {  # name: (env id, params)
    "CartPole-v1": ("CartPole-v1", {}),
    "_TestImage-v0 84x84x4": (
        "_TestImage-v0",
        {"size": 84, "channels": 4, "channels_last": True},
    ),
}


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


def op_cost(env_id: str, params: dict, num_envs: int, budget, repeats: int):
    """(collection us per batch step, the env's own stepping us per batch step, observation
    storage bytes per env step, its dtype): medians of `repeats` interleaved timed runs."""
    from fastbatch import _core
    from fastbatch.ppo.rollout import Rollout

    steps = 128  # rollout slots, reused cyclically by the timed loops
    env = fastbatch.make(
        env_id,
        num_envs,
        autoreset_mode="same_step",
        stats_key="episode",
        num_workers=1,  # as make_env does for native envs
        **params,
    )
    rollout = Rollout(env, steps)
    if not rollout.uses_op:
        raise RuntimeError(f"{env_id}: the rollout op is not available (see the log)")
    rollout.start(0)
    act_dtype = tf.as_dtype(env.single_action_space.dtype)

    @tf.function(autograph=False, input_signature=[tf.TensorSpec([], tf.int32)])
    def collect(count):
        def body(k, done):  # the trivial policy: action 1 where an episode just began, else 0
            return k + 1, rollout.step(k % steps, tf.cast(done, act_dtype))[1]

        start = (tf.constant(0), tf.zeros([num_envs], tf.bool))
        return tf.while_loop(lambda k, _: k < count, body, start)[1]

    def collect_seconds(count: int) -> float:
        t0 = time.perf_counter()
        collect(tf.constant(count, tf.int32)).numpy()
        return time.perf_counter() - t0

    loop = ctypes.CDLL(_core.__file__).FastbatchRolloutLoopSeconds
    loop.restype = ctypes.c_double
    loop.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p]
    context = rollout._binding.context
    zeros = np.zeros(num_envs, env.single_action_space.dtype)  # the policy's usual action

    def env_seconds(count: int) -> float:
        seconds = loop(context, count, zeros.ctypes.data)
        if seconds < 0:
            raise RuntimeError(f"{env_id}: the C++ stepping loop failed")
        return seconds

    rates = harness.interleaved(
        {
            "collect": harness.NativeLoop(collect_seconds, 1, budget),
            "env": harness.NativeLoop(env_seconds, 1, budget),
        },
        repeats,
    )
    rollout.finish()
    obs = rollout.arrays["obs"]
    bytes_per_env_step = obs.nbytes // (obs.shape[0] * num_envs)
    env.close()
    us = {k: 1e6 / harness.median(v) for k, v in rates.items()}
    return us["collect"], us["env"], bytes_per_env_step, obs.dtype


def pixels(quick: bool, num_envs: int = 8) -> None:
    """Section 3: the rollout op's own cost for CartPole and a uint8 84x84x4 image env."""
    repeats, seconds = (5, 0.2) if quick else (11, 0.5)
    budget = harness.Budget(seconds)
    print(f"pixels: the rollout op's own cost per batch step at {num_envs} envs")
    table = harness.Table(
        ("env", -22),
        ("collect us", 11),
        ("env us", 8),
        ("op us", 7),
        ("vs cartpole", 12),
        ("obs B/env step", 15),
        ("vs float32", 11),
    )
    print(table.header())
    base = None
    for name, (env_id, params) in PIXEL_ENVS.items():
        collect, env_us, row, dtype = op_cost(env_id, params, num_envs, budget, repeats)
        op = collect - env_us
        base = op if base is None else base
        float32_row = row // dtype.itemsize * 4
        print(
            table.row(
                name,
                f"{collect:.1f}",
                f"{env_us:.1f}",
                f"{op:.1f}",
                f"{op / base:.2f}x",
                f"{row} {dtype}",
                f"{row / float32_row:.2f}x",
            ),
            flush=True,
        )
    print()


def collection() -> None:
    """Section 1: CartPole collection through the op and the fallback, and the update."""
    print(f"{'envs':>5} {'path':<16} {'collect us/batch step':>22} {'update ms':>10}")
    for num_envs in (8, 64):
        for use_op in (True, False):
            path, collect, update = measure(
                "cartpole", use_op, num_envs=num_envs, rollout_steps=128, minibatches=4, epochs=10
            )
            print(f"{num_envs:>5} {path:<16} {collect:>22.1f} {update:>10.1f}", flush=True)
    print()


def memory() -> None:
    """Section 2: the GRU core against the MLP on CartPoleNoVel-v1."""
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
    print()


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    tf.config.threading.set_inter_op_parallelism_threads(1)  # as `fastbatch train` does
    tf.config.threading.set_intra_op_parallelism_threads(1)
    quick = "--quick" in argv
    if "--memory-only" in argv:
        sections = ("memory",)
    elif "--pixels-only" in argv:
        sections = ("pixels",)
    else:
        sections = ("collection", "memory", "pixels")
    run = harness.RunInfo(packages=("tensorflow",), sections=sections, quick=quick)
    print(run.header())
    if "collection" in sections:
        collection()
    if "memory" in sections:
        memory()
    if "pixels" in sections:
        pixels(quick)
    print(run.footer())
    return 0


if __name__ == "__main__":
    sys.exit(main())
