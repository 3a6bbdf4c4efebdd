"""Soak test: many steps with the process's resident memory sampled along the way.

    python bench/soak.py [--native-steps 100000000] [--process-steps 1000000]

Native: CartPole-v1, 256 envs, 2 threads, until `--native-steps` env steps. Process backend:
CartPole-v1 (gymnasium's), 16 envs, 2 workers, until `--process-steps` env steps. RSS of this
process (and, for the process backend, of the workers) is sampled at 10 points; the growth
after the first tenth (warm-up) is reported. Target: flat, under 1 MiB. Its loop is its own (a
fixed step count, memory sampled along the way); actions, rates and the run's metadata come
from bench/_harness.py.
"""

from __future__ import annotations

import argparse
import sys
import time

import _harness as harness

import fastbatch


def rss(pid="self") -> int:
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * 4096


def soak(env, steps: int, pids) -> tuple[list[int], float]:
    env.reset(seed=0)
    actions = harness.action_table(env.single_action_space, env.num_envs)
    per_call = env.num_envs
    calls = steps // per_call
    samples, start = [], time.perf_counter()
    for i in range(calls):
        env.step(actions[i % len(actions)])
        if i % max(1, calls // 10) == 0:
            samples.append(sum(rss(p) for p in pids))
    return samples, calls * per_call / (time.perf_counter() - start)


def report(name, samples, rate):
    growth = samples[-1] - samples[1] if len(samples) > 1 else 0
    mib = [round(s / 2**20, 2) for s in samples]
    print(
        f"{name}: {harness.format_rate(rate)} steps/s; RSS MiB {mib}; growth after warm-up {growth / 2**20:+.3f} MiB"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--native-steps", type=int, default=100_000_000)
    parser.add_argument("--process-steps", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    run = harness.RunInfo(native_steps=args.native_steps, process_steps=args.process_steps)
    print(run.header())
    native = fastbatch.make("CartPole-v1", num_envs=256, num_workers=2)
    report("native CartPole-v1 x256", *soak(native, args.native_steps, ["self"]))
    native.close()
    proc = fastbatch.make("CartPole-v1", 16, backend="process", num_workers=2)
    pids = ["self"] + [pid for pid in proc.worker_pids if pid]
    report("process CartPole-v1 x16 (parent + workers)", *soak(proc, args.process_steps, pids))
    proc.close()
    print(run.footer())
    return 0


if __name__ == "__main__":
    sys.exit(main())
