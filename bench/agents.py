"""PettingZoo's simple_spread_v3 as a batch of agents: `fastbatch.make_agents` against SuperSuit's
vector env over the same parallel envs and a plain Python loop over them, side by side in one run
(issue 30's first target).

    python bench/agents.py [--quick] [--num-envs 8] [--workers 2] [--agents 3]

Contenders, each stepping `num_envs` simple_spread_v3 parallel envs of N agents (24 agent rows
by default) with the same pre-drawn actions (one Discrete(5) action a row):
  fastbatch make_agents       make_agents(simple_spread_v3.parallel_env, 8, num_workers=2): the
                              default layout (on 2 cores the caller steps one block itself)
  fastbatch in_parent=False   the same with a process for every block (2 worker processes)
  supersuit concat_vec_envs   concat_vec_envs_v1(pettingzoo_env_to_vec_env_v1(env), 8,
                              num_cpus=2, base_class="gymnasium"): PettingZoo's documented path
  plain loop                  the 8 ParallelEnvs stepped in this process, dict actions (built
                              before timing), reset when no agent is left
  fastbatch native Spread-v0  make_agents("Spread-v0", 8, num_workers=2): fastbatch's own C++
                              particle task in simple_spread's spirit (src/cpp/envs/spread.h,
                              same agent and landmark counts, 25-step episodes), rows written by
                              the C++ pool: not the same env, so compare it as the native path's
                              rate, not as a like-for-like port
  native Spread-v0 x --big    the same with --big envs (256 by default) in one batch
  ... async                   the --big envs in async mode, batch_size=--big / 2 envs: each
                              step sends the envs of the last recv and receives half of them
Rates are agent steps/s (rows x batch steps / s), medians of interleaved timed runs under
bench/_harness.py's rules, printed after the run's metadata; `vs supersuit` is the ratio to
SuperSuit's rate. Needs `pip install '.[agents,bench]'` (pettingzoo, mpe2, supersuit).
"""

from __future__ import annotations

import argparse
import sys

import _harness as harness
import numpy as np
import supersuit
from mpe2 import simple_spread_v3

import fastbatch


class PlainLoop:
    """`num_envs` ParallelEnvs stepped one after the other in this process: what a user without a
    vector env writes. ``step(k)`` steps every env with entry `k` of the dict-action table."""

    def __init__(self, num_envs: int, agents: int, table: np.ndarray) -> None:
        self.envs = [simple_spread_v3.parallel_env(N=agents) for _ in range(num_envs)]
        for i, env in enumerate(self.envs):
            env.reset(seed=i)
        names = self.envs[0].possible_agents
        self.actions = [  # table[k]: one batch of rows -> per env, a dict keyed by agent
            [{a: int(row[i * agents + j]) for j, a in enumerate(names)} for i in range(num_envs)]
            for row in table
        ]

    def step(self, k: int) -> None:
        for env, actions in zip(self.envs, self.actions[k], strict=True):
            if not env.agents:
                env.reset()
                continue
            env.step({a: actions[a] for a in env.agents})

    def close(self) -> None:
        for env in self.envs:
            env.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--agents", type=int, default=3)
    parser.add_argument("--big", type=int, default=256, help="envs of the large native batch")
    parser.add_argument("--json", default="bench/results/agents.json")
    args = parser.parse_args(argv)
    repeats, seconds = (3, 0.5) if args.quick else (5, 2.0)
    budget = harness.Budget(seconds)
    n, agents = args.num_envs, args.agents
    rows = n * agents
    run = harness.RunInfo(
        packages=("pettingzoo", "mpe2", "supersuit"),
        num_envs=n,
        agents=agents,
        workers=args.workers,
        repeats=repeats,
        budget_s=seconds,
    )
    built: list = []
    try:
        fast = fastbatch.make_agents(
            simple_spread_v3.parallel_env, n, num_workers=args.workers, seed=0, N=agents
        )
        built.append(fast)
        table = harness.action_table(fast.single_action_space, rows)  # Discrete(5) a row
        procs = fastbatch.make_agents(
            simple_spread_v3.parallel_env,
            n,
            num_workers=args.workers,
            seed=0,
            in_parent=False,
            N=agents,
        )
        built.append(procs)
        ss = supersuit.concat_vec_envs_v1(
            supersuit.pettingzoo_env_to_vec_env_v1(simple_spread_v3.parallel_env(N=agents)),
            n,
            num_cpus=args.workers,
            base_class="gymnasium",
        )
        built.append(ss)
        plain = PlainLoop(n, agents, table)
        built.append(plain)
        native = fastbatch.make_agents(
            "Spread-v0", n, num_workers=args.workers, seed=0, agents=agents
        )
        built.append(native)
        big = fastbatch.make_agents(
            "Spread-v0", args.big, num_workers=args.workers, seed=0, agents=agents
        )
        built.append(big)
        half = args.big // 2
        big_async = fastbatch.make_agents(
            "Spread-v0", args.big, num_workers=args.workers, seed=0, agents=agents, batch_size=half
        )
        built.append(big_async)
        big_async.reset()
        big_async.step(harness.action_table(big.single_action_space, big.num_envs, count=1)[0])
        half_table = harness.action_table(big.single_action_space, half * agents)
        big_table = harness.action_table(big.single_action_space, big.num_envs)
        for env in (fast, procs, native, big):
            env.reset()
        ss.reset(seed=0)
        contenders = {
            "fastbatch make_agents": harness.Loop(fast.step, table, rows, budget),
            "fastbatch in_parent=False": harness.Loop(procs.step, table, rows, budget),
            "supersuit concat_vec_envs": harness.Loop(ss.step, table, rows, budget),
            "plain loop": harness.Loop(plain.step, range(len(table)), rows, budget),
            "fastbatch native Spread-v0": harness.Loop(native.step, table, rows, budget),
            f"native Spread-v0 x{args.big}": harness.Loop(
                big.step, big_table, big.num_envs, budget
            ),
            f"native x{args.big} async": harness.Loop(
                big_async.step, half_table, half * agents, budget
            ),
        }
        print(run.header())
        print(
            f"simple_spread_v3 N={agents}, {n} envs ({rows} agent rows), {args.workers} "
            f"processes; medians of {repeats} x {seconds}s"
        )
        rates = harness.medians(harness.interleaved(contenders, repeats))
    finally:
        for env in built:
            env.close()
    out = harness.Table(("method", -28), ("agent steps/s", 15), ("vs supersuit", 14))
    print(out.header())
    for name, r in rates.items():
        ratio = harness.format_ratio(r, rates["supersuit concat_vec_envs"])
        print(out.row(name, harness.format_rate(r), ratio))
    print(run.footer())  # also completes run.meta
    harness.write_json(args.json, run.meta, rates)
    return 0


if __name__ == "__main__":
    sys.exit(main())
