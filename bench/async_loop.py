"""One async recv/send loop, timed: what an A/B of a change to async mode compares.

    python bench/async_loop.py [--env CartPole-v1] [--envs 4096] [--seconds 2] [--runs 1] [--sync]
                               [--num-workers N] [--param NAME=VALUE ...] [--step] [--native]

Steps `--envs` native envs in async mode with ``batch_size = envs / 2`` (default threads):
each cycle receives a batch and sends random actions back to the envs it returned, nothing
else in between (`--step`: each cycle is one `env.step(actions)`, the same send and recv in one
call). Prints env steps/s of each timed run of `--seconds` (bench/_harness.py's rules: each
env is built once and warmed up for `--seconds` before its first run; a run steps until both
`--seconds` and 32 cycles are done). `--sync` also times the same envs in sync mode (one step of all envs a cycle), alternating with the async runs, and
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
import sys

import _harness as harness

import fastbatch
from fastbatch import _core


class Cycles(harness.Loop):
    """One env of the A/B and its timed loop (bench/_harness.py's rules): sync mode steps all
    envs a cycle; async mode receives a batch of ``envs / 2`` and sends actions back to the
    envs it returned (`step`: one ``env.step`` doing both). Built once, warmed up once; each
    ``rate()`` is one timed run."""

    def __init__(self, env_id, num_envs, budget, sync=False, step=False, **make_kwargs):
        batch = num_envs if sync else num_envs // 2
        self.env = fastbatch.make(
            env_id, num_envs, seed=0, batch_size=None if sync else batch, **make_kwargs
        )
        self.env.reset()
        space = self.env.single_action_space
        first = harness.action_table(space, num_envs, count=1, seed=1)[0]
        if sync:
            cycle = self.env.step
        elif step:
            self.env.step(first)  # after reset: all envs, then batches
            cycle = self.env.step
        else:
            cycle = harness.async_cycle(self.env, first)
        super().__init__(cycle, harness.action_table(space, batch), batch, budget)


def native_loop(env_id: str, num_envs: int, budget, sync: bool, threads: int):
    """The C++ loop of one mode (one step: sync, or a recv and a send), timed by the harness;
    every run is a fresh pool."""
    env_type = _core._builtin_env_types()[env_id]
    batch = 0 if sync else num_envs // 2
    rows = num_envs if sync else num_envs // 2
    return harness.NativeLoop(
        lambda steps: _core._native_loop_seconds(
            env_type, num_envs, steps, num_threads=threads, batch_size=batch
        ),
        rows,
        budget,
    )


def print_medians(rates: dict[str, list[float]]) -> None:
    a, s = harness.median(rates["async"]), harness.median(rates["sync"])
    print(
        f"medians: async {harness.format_rate(a)}, sync {harness.format_rate(s)}, async / sync "
        f"{harness.format_ratio(a, s)}"
    )


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
    budget = harness.Budget(args.seconds)
    if args.native:
        builtin = _core._builtin_env_types()
        if args.env.removeprefix("fastbatch/") not in builtin:
            parser.error(f"--native takes a built-in env: one of {', '.join(sorted(builtin))}")
        if args.param:
            parser.error("--native runs the env with its default parameters")
        args.env = args.env.removeprefix("fastbatch/")
        threads = args.num_workers or harness.cores()
        run = harness.RunInfo(**vars(args))
        print(run.header())
        loops = {
            mode: native_loop(args.env, args.envs, budget, mode == "sync", threads)
            for mode in ("async", "sync")
        }
        rates: dict[str, list[float]] = {"async": [], "sync": []}
        for loop in loops.values():
            loop.warm_up()
        for _ in range(args.runs):
            for mode, loop in loops.items():
                rates[mode].append(loop.rate())
                print(
                    f"{args.env} x{args.envs} native {mode}: "
                    f"{harness.format_rate(rates[mode][-1])} steps/s"
                )
        print_medians(rates)
        print(run.footer())
        return 0
    kwargs = {"num_workers": args.num_workers}
    for item in args.param:  # e.g. stall_prob=0.01 for _TestVariableCost-v0
        name, value = item.split("=", 1)
        kwargs[name] = float(value) if "." in value or "e" in value else int(value)
    run = harness.RunInfo(**vars(args))
    print(run.header())
    modes = ["async", "sync"] if args.sync else ["async"]
    envs = {}
    try:
        for mode in modes:
            envs[mode] = Cycles(
                args.env, args.envs, budget, sync=mode == "sync", step=args.step, **kwargs
            )
        for cycles in envs.values():
            cycles.warm_up()
        rates = {"async": [], "sync": []}
        for _ in range(args.runs):
            for mode, cycles in envs.items():
                rates[mode].append(cycles.rate())
                print(
                    f"{args.env} x{args.envs} {mode}: {harness.format_rate(rates[mode][-1])} "
                    f"steps/s, {cycles.env.active_workers} threads",
                    flush=True,
                )
    finally:
        for cycles in envs.values():
            cycles.env.close()
    if args.sync:
        print_medians(rates)
    print(run.footer())
    return 0


if __name__ == "__main__":
    sys.exit(main())
