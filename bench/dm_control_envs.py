"""dm_control suite tasks: fastbatch's native envs against EnvPool and shimmy's envs, one run.

    python bench/dm_control_envs.py                     # 4 tasks x 8 and 64 envs, 2 threads
    python bench/dm_control_envs.py --envs dm_control/walker-walk-v0 --num-envs 64

Contenders (columns), all on the same envs and threads, stepping the same pre-drawn table of
uniform random float64 actions within the action bounds:
  fb-sync      fastbatch.make(id, N, num_workers=T): env.step(actions)
  envpool      EnvPool's native task of the same name (``CheetahRun-v1``), sync mode,
               batch_size = N, num_threads = T (if ``envpool`` is installed)
  shimmy-sync  gymnasium's SyncVectorEnv over FlattenObservation(gymnasium.make(id)): shimmy's
               env, dm_control's own Python, the episodes fastbatch replays bit for bit

As in bench/mujoco_envs.py, each contender runs with MuJoCo's profiling clock as its users have
it: shimmy's envs with the clock `import mujoco` installs (MuJoCo calls it around every stage of
mj_step), fastbatch's without it (`fastbatch.make` removes it), EnvPool's MuJoCo has none.

Figures are env steps per second, the median over `--repeats` rounds; each round times every
contender once in turn for `--budget` seconds (bench/_harness.py: warm-up, at least 32 batch
steps a run). Printed ratios: fb-sync over EnvPool and over shimmy-sync. The JSON keeps every run.
"""

from __future__ import annotations

import argparse
import sys
import warnings

import _harness as harness
import gymnasium
import mujoco_envs  # its clock rule and measuring loop
import numpy as np

import fastbatch
from fastbatch import dm_control as fb_dmc

ENV_IDS = [
    "dm_control/cheetah-run-v0",
    "dm_control/walker-walk-v0",
    "dm_control/humanoid-walk-v0",
    "dm_control/cartpole-swingup-v0",
]
METHODS = ["fb-sync", "envpool", "shimmy-sync"]


def envpool_id(env_id: str) -> str:
    """EnvPool's name of a suite task: dm_control/ball_in_cup-catch-v0 -> BallInCupCatch-v1."""
    name = env_id.removeprefix("dm_control/").removesuffix("-v0")
    return "".join(part.capitalize() for part in name.replace("-", "_").split("_")) + "-v1"


def contender(method: str, env_id: str, table: np.ndarray, threads: int, budget):
    num_envs = table.shape[1]
    if method == "fb-sync":
        env = fastbatch.make(env_id, num_envs, seed=0, num_workers=threads)
        env.reset()
    elif method == "envpool":
        import envpool

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            env = envpool.make(
                envpool_id(env_id),
                env_type="gymnasium",
                num_envs=num_envs,
                batch_size=num_envs,
                num_threads=threads,
                seed=0,
            )
        env.reset()
    elif method == "shimmy-sync":
        import shimmy  # noqa: F401  (registers the dm_control/ ids)
        from gymnasium.wrappers import FlattenObservation

        def factory():
            return FlattenObservation(gymnasium.make(env_id))

        env = gymnasium.vector.SyncVectorEnv([factory] * num_envs)
        env.reset(seed=0)
    else:
        raise ValueError(method)
    loop = harness.Loop(env.step, table, num_envs, budget)
    return mujoco_envs.Clocked(loop, clocked=method == "shimmy-sync", close=env.close)


def available(method: str) -> bool:
    module = {"envpool": "envpool", "shimmy-sync": "shimmy"}.get(method)
    if module is None:
        return True
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--envs", default=",".join(ENV_IDS), help="comma-separated env ids")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--num-envs", default="8,64", help="comma-separated batch sizes")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3, help="rounds (medians are reported)")
    parser.add_argument("--budget", type=float, default=1.0, help="seconds per timed run")
    parser.add_argument("--json", default="bench/results/dm_control_envs.json")
    args = parser.parse_args(argv)
    fb_dmc.register()
    methods = [m for m in args.methods.split(",") if m]
    sizes = [int(n) for n in args.num_envs.split(",") if n]
    budget = harness.Budget(args.budget)
    run = harness.RunInfo(
        packages=("mujoco", "envpool", "dm-control", "shimmy"),
        num_envs=sizes,
        threads=args.threads,
        repeats=args.repeats,
        budget_s=args.budget,
        stat="median",
    )
    names = ("fb/envpool", "fb/shimmy")
    table = harness.Table(
        ("env", -32), ("N", 4), *((m, 12) for m in methods), *((n, 11) for n in names)
    )
    print(run.header())
    print(
        f"fastbatch {fastbatch.__version__}, mujoco {harness.package_version('mujoco')}, "
        f"{args.threads} threads, median of {args.repeats} x {args.budget}s (env steps/s)"
    )
    print(table.header())
    print(table.rule())
    results = []
    for env_id in [e for e in args.envs.split(",") if e]:
        for num_envs in sizes:
            rates = mujoco_envs.measure(
                env_id, methods, num_envs, args.threads, budget, args.repeats, contender, available
            )
            row = {m: harness.median(r) for m, r in rates.items()}
            fb = row.get("fb-sync")
            ratios = [
                harness.format_ratio(fb, row.get("envpool")),
                harness.format_ratio(fb, row.get("shimmy-sync")),
            ]
            cells = [harness.format_rate(row.get(m)) for m in methods]
            print(table.row(env_id, str(num_envs), *cells, *ratios), flush=True)
            results.append({"env": env_id, "num_envs": num_envs, "median": row, "runs": rates})
    print(run.footer())
    print()
    harness.write_json(args.json, run.meta, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
