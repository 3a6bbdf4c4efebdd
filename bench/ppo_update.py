"""Time of one PPO update (every epoch and minibatch of one rollout), variants side by side.

    python bench/ppo_update.py [--preset halfcheetah] [--rounds 15] [--variants graph,xla]
                               [--set KEY=VALUE ...]

Builds one agent per variant (`jit_compile` off: graph, on: XLA) on the preset's env, collects one
rollout each, then calls the update on that rollout in alternating rounds (so machine load
falls on both alike) and prints milliseconds per update: median, min and max over the rounds,
after one untimed call that traces and compiles. The update here is the whole graph call
(`Agent._update_call`: `_update`, or it compiled by XLA): GAE, the reward
scaling and epochs x minibatches of gradient steps. Its loop is its own (rounds of whole
updates); medians and the run's metadata are bench/_harness.py's.
"""

from __future__ import annotations

import argparse
import sys
import time

import _harness as harness


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--preset", default="halfcheetah")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument(
        "--variants",
        default="graph,xla",
        help="which of graph,xla to time (XLA's CPU convolutions take minutes on Atari's CNN)",
    )
    args = parser.parse_args(argv)
    variants = args.variants.split(",")
    if not variants or set(variants) - {"graph", "xla"}:
        parser.error(f"--variants takes graph and/or xla, got {args.variants!r}")
    import tensorflow as tf

    from fastbatch.ppo import resolve
    from fastbatch.ppo.agent import Agent
    from fastbatch.ppo.train import make_env

    base = resolve(args.preset, args.set)
    run = harness.RunInfo(
        packages=("tensorflow",), preset=args.preset, rounds=args.rounds, set=args.set
    )
    print(run.header())
    for threads, setter in (
        (base.tf_inter_op_threads, tf.config.threading.set_inter_op_parallelism_threads),
        (base.tf_intra_op_threads, tf.config.threading.set_intra_op_parallelism_threads),
    ):
        if threads:
            setter(threads)
    calls = {}
    for jit in (name == "xla" for name in variants):
        config = base.replace(jit_compile=jit)
        agent = Agent(config, make_env(config))
        agent.start(config.seed)
        actions = agent.collect()
        t = agent.rollout.tensors
        state0, starts0 = agent._rollout_start()
        inputs = (actions, t["obs"], t["reward"], t["terminated"], t["truncated"])
        inputs += (t["final_obs"], t["active"], state0, starts0)
        start = time.perf_counter()
        float(agent._update_call(*inputs)["kl"])
        name = "xla" if jit else "graph"
        print(f"{name}: first call (trace + compile) {time.perf_counter() - start:.2f} s")
        calls[name] = (agent, inputs)
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(args.rounds):
        for name, (agent, inputs) in calls.items():
            start = time.perf_counter()
            float(agent._update_call(*inputs)["kl"])
            times[name].append(1000 * (time.perf_counter() - start))
    steps = base.epochs * base.minibatches
    print(
        f"{args.preset}: {base.num_envs} envs x {base.rollout_steps} steps, {base.epochs} epochs x "
        f"{base.minibatches} minibatches, layers {base.policy_layers}; {args.rounds} rounds"
    )
    for name, values in times.items():
        median = harness.median(values)
        print(
            f"{name:>6}: median {median:7.1f} ms/update ({median / steps:.3f} ms/minibatch), "
            f"min {min(values):.1f}, max {max(values):.1f}"
        )
    for agent, _ in calls.values():
        agent.rollout.env.close()
    print(run.footer())
    return 0


if __name__ == "__main__":
    sys.exit(main())
