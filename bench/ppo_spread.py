"""Parameter-shared BatchPPO on the native multi-agent Spread-v0: time to solve it (issue 30's
"solves the native env in minutes"), one run.

    python bench/ppo_spread.py [--seeds 0,1,2] [--steps 1000000] [--episodes 2000]
                               [--bars 0.5,0.75,0.9] [--eval-episodes 600]
                               [--set KEY=VALUE ...] [--json FILE]

"Solved" is measured against two policies played here first on the same env: uniform random
actions, and a scripted controller that knows the task (each env's agents take the landmarks of
the assignment with the least total distance, and each agent picks the action whose one-step
prediction of the env's own dynamics lands nearest its landmark). Both are read from the
observations only. Each bar is a fraction of the way from random to scripted (`--bars`), in the
mean return of an agent episode (25 steps); each seed trains the ``spread`` preset (fastbatch
train spread) for `--steps` agent steps (the learning rate anneals over them) and the table gives
its seconds and agent steps to each bar, its training return at the end (the mean of the last 100
agent episodes of the sampling policy, progress.csv) and the return of its greedy policy (the
most likely action of each agent) over `--eval-episodes` agent episodes on fresh envs, as
`fastbatch train` evaluates. Needs ``pip install '.[bench]'``.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
from pathlib import Path

import _harness as harness
import numpy as np

import fastbatch

WINDOW = 100  # agent episodes averaged (the preset's return_window)
AGENTS = 3
FORCE, DAMPING, DT = 5.0, 0.25, 0.1  # src/cpp/envs/spread.h
PUSH = np.array([[0, 0], [-1, 0], [1, 0], [0, -1], [0, 1]], np.float64)  # actions 0-4


def scripted_actions(obs: np.ndarray, agents: int) -> np.ndarray:
    """The controller's actions for rows `obs` ([envs * agents, obs_size]), from observations."""
    envs = obs.shape[0] // agents
    rows = obs.reshape(envs, agents, -1).astype(np.float64)
    velocity, position = rows[..., 0:2], rows[..., 2:4]
    marks = rows[..., 4 : 4 + 2 * agents].reshape(envs, agents, agents, 2)  # relative to agent
    cost = np.linalg.norm(marks, axis=-1)  # [env, agent, landmark]
    perms = np.array(list(itertools.permutations(range(agents))))  # agent k takes perm[k]
    totals = cost[:, np.arange(agents), perms].sum(axis=-1)  # [env, perm]
    best = perms[totals.argmin(axis=1)]  # [env, agent]
    target = np.take_along_axis(marks, best[..., None, None], axis=2)[:, :, 0] + position
    # One step of the env's dynamics for each action: v' = v (1 - damping) + F dt, x' = x + v' dt.
    moved = velocity[..., None, :] * (1 - DAMPING) + FORCE * PUSH * DT
    landed = position[..., None, :] + moved * DT  # [env, agent, action, 2]
    miss = np.linalg.norm(landed - target[..., None, :], axis=-1)
    return miss.argmin(axis=-1).reshape(-1).astype(np.int64)


def play(policy: str, episodes: int, seed: int = 0) -> float:
    """The mean return of `episodes` agent episodes of `policy` ("random" or "scripted")."""
    envs = fastbatch.make_agents("Spread-v0", 64, agents=AGENTS, seed=seed, stats_key="episode")
    rng = np.random.default_rng(seed)
    obs, _ = envs.reset()
    returns: list[float] = []
    while len(returns) < episodes:
        if policy == "random":
            actions = rng.integers(0, 5, envs.num_envs)
        else:
            actions = scripted_actions(obs, AGENTS)
        obs, _, _, _, info = envs.step(actions)
        if "episode" in info:
            returns.extend(info["episode"]["r"][info["_episode"]].tolist())
    envs.close()
    return float(np.mean(returns[:episodes]))


def run_fastbatch(
    seed: int, steps: int, overrides: list[str], bars: list[float], eval_episodes: int
) -> dict:
    from fastbatch.ppo import resolve, train
    from fastbatch.ppo.train import read_progress

    config = resolve("spread", [f"return_window={WINDOW}", *overrides], seed=seed)
    config = config.replace(total_steps=steps, eval_episodes=eval_episodes)
    with tempfile.TemporaryDirectory() as logdir:
        result = train(config, logdir, progress=False)
        rows = read_progress(Path(logdir) / "progress.csv").tolist()
    hits = [harness.first_crossing(rows, bar, WINDOW) for bar in bars]
    return {
        "seed": seed,
        "steps": result["env_steps"],
        "seconds": result["seconds"],
        "final_return": result["train_return"],
        "greedy_return": result["eval_return"],
        "steps_to_bars": [h[0] for h in hits],
        "seconds_to_bars": [h[1] for h in hits],
        "curve": rows,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--steps", type=int, default=1_000_000, help="agent steps a run")
    parser.add_argument("--episodes", type=int, default=2000, help="agent episodes a bar policy")
    parser.add_argument("--bars", default="0.5,0.75,0.9", help="fractions, random to scripted")
    parser.add_argument(
        "--eval-episodes", type=int, default=600, help="agent episodes of the greedy policy"
    )
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--json", default="bench/results/ppo_spread.json")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    run = harness.RunInfo(
        packages=("tensorflow",), seeds=seeds, steps=args.steps, overrides=args.overrides
    )
    print(run.header(), flush=True)
    random_return = play("random", args.episodes)
    scripted_return = play("scripted", args.episodes)
    fractions = [float(f) for f in args.bars.split(",")]
    bars = [random_return + f * (scripted_return - random_return) for f in fractions]
    print(
        f"random {random_return:.2f}, scripted {scripted_return:.2f} (mean return of an agent "
        f"episode, {args.episodes} episodes each); bars "
        + ", ".join(f"{f:.0%} {b:.2f}" for f, b in zip(fractions, bars, strict=True)),
        flush=True,
    )
    columns = [(f"{f:.0%}: s / steps", 20) for f in fractions]
    table = harness.Table(("seed", 5), *columns, ("final return", 13), ("greedy", 8), ("run s", 7))
    print(table.header())
    print(table.rule())
    runs = []
    for seed in seeds:
        r = run_fastbatch(seed, args.steps, args.overrides, bars, args.eval_episodes)
        runs.append(r)
        cells = [
            "never" if t is None else f"{t:.0f} / {s:.0f}"
            for t, s in zip(r["seconds_to_bars"], r["steps_to_bars"], strict=True)
        ]
        print(
            table.row(
                seed,
                *cells,
                f"{r['final_return']:.2f}",
                f"{r['greedy_return']:.2f}",
                f"{r['seconds']:.0f}",
            ),
            flush=True,
        )
    for k, f in enumerate(fractions):
        times = [r["seconds_to_bars"][k] for r in runs if r["seconds_to_bars"][k] is not None]
        median = f"median {statistics.median(times):.0f} s" if times else "never"
        print(f"{f:.0%} of the way: reached by {len(times)}/{len(runs)} seeds, {median}")
    print(run.footer())
    harness.write_json(
        args.json,
        run.meta,
        {
            "random": random_return,
            "scripted": scripted_return,
            "bars": dict(zip(args.bars.split(","), bars, strict=True)),
            "fastbatch": runs,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
