"""MuJoCo v5 envs: fastbatch's native envs against EnvPool, a C++ loop and gymnasium, one run.

    python bench/mujoco_envs.py                  # every env, 64 envs, 2 threads (a few minutes)
    python bench/mujoco_envs.py --envs Hopper-v5,Ant-v5 --repeats 3

Contenders (columns), all on the same `--num-envs` envs and `--threads` threads, stepping the
same pre-drawn table of uniform random actions (float32, within the action bounds):
  cpp-loop   the same native envs and pool stepped by a C++ loop (`_native_loop_seconds`), no Python
  fb-sync    fastbatch.make(id, N, num_workers=T): env.step(actions)
  fb-async   the same in async mode, batch_size = N / 2: a steady recv()/send() loop
  fb-clock   fb-sync with MuJoCo's profiling clock left on (as before fastbatch removed it)
  envpool    EnvPool sync mode, batch_size = N, num_threads = T (if `envpool` is installed)
  gym-sync   gymnasium.make_vec(id, N, vectorization_mode="sync"): gymnasium's own envs

Figures are env steps per second over `--repeats` rounds (`--stat`: the median, or the best run,
which is the least disturbed by other processes on a shared machine); each round times every
contender once in turn for `--budget` seconds, so many short rounds spread other load over the
contenders alike. The JSON keeps every run. The ratios
printed are fb-sync's: over EnvPool, over the C++ loop, over gymnasium's SyncVectorEnv, fb-async
over fb-sync, and fb-sync over fb-clock (what removing the profiling clock gained).
gymnasium's envs are timed with the profiling clock that `import mujoco` installs (MuJoCo calls
it around every stage of mj_step), as its users run them; fastbatch's envs without it, as
`fastbatch.make` leaves the process (EnvPool bundles its own MuJoCo, whose clock is unset).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

import gymnasium
import mujoco
import numpy as np

import fastbatch
from fastbatch import _core
from fastbatch import mujoco as fb_mujoco
from fastbatch.registry import REGISTRY

ENV_IDS = [
    "HalfCheetah-v5",
    "Hopper-v5",
    "Walker2d-v5",
    "Ant-v5",
    "Humanoid-v5",
    "HumanoidStandup-v5",
    "Swimmer-v5",
    "Reacher-v5",
    "Pusher-v5",
    "InvertedPendulum-v5",
    "InvertedDoublePendulum-v5",
]
METHODS = ["cpp-loop", "fb-sync", "fb-async", "fb-clock", "envpool", "gym-sync"]
CLOCKED = ("fb-clock", "gym-sync")  # timed with the clock `import mujoco` installs


def timed(step, table: np.ndarray, budget: float) -> float:
    """Batch steps per second of `step(actions)` over the table, for about `budget` seconds."""
    for k in range(2):  # warm up
        step(table[k])
    n, start = 0, time.perf_counter()
    while True:
        for actions in table:
            step(actions)
            n += 1
            if n % 16 == 0 and time.perf_counter() - start >= budget:
                return n / (time.perf_counter() - start)


class Contender:
    """One method on one env: `rate(budget)` returns env steps per second."""

    def __init__(self, method: str, env_id: str, table: np.ndarray, threads: int) -> None:
        self.method, self.table, self.rows = method, table, table.shape[1]
        num_envs = table.shape[1]
        self.close = lambda: None
        if method == "cpp-loop":
            self.env_type = REGISTRY.resolve(env_id)[0]
            self.threads = threads
            return
        if method in ("fb-sync", "fb-clock"):
            env = fastbatch.make(env_id, num_envs, seed=0, num_workers=threads)
            env.reset()
            self.step, self.close = env.step, env.close
        elif method == "fb-async":
            env = fastbatch.make(
                env_id, num_envs, seed=0, num_workers=threads, batch_size=num_envs // 2
            )
            env.reset()
            env.send(table[0])
            self.rows = num_envs // 2

            def step(actions):
                *_, info = env.recv()
                env.send(actions[info["env_id"]])

            self.step, self.close = step, env.close
        elif method == "envpool":
            import envpool

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                env = envpool.make(
                    env_id,
                    env_type="gymnasium",
                    num_envs=num_envs,
                    batch_size=num_envs,
                    num_threads=threads,
                    seed=0,
                )
            env.reset()
            self.step, self.close = env.step, env.close
        elif method == "gym-sync":
            env = gymnasium.make_vec(env_id, num_envs, vectorization_mode="sync")
            env.reset(seed=0)
            self.step, self.close = env.step, env.close
        else:
            raise ValueError(method)

    def rate(self, budget: float) -> float:
        # Each contender runs with MuJoCo's process-wide profiling clock (mjcb_time) as its
        # users get it: gymnasium's envs with the clock `import mujoco` installs, fastbatch's
        # without it (fastbatch.make removes it: fastbatch.mujoco.drop_default_timer).
        mujoco.set_mjcb_time(None)
        if self.method not in CLOCKED:
            fb_mujoco.drop_default_timer()
        if self.method == "cpp-loop":
            loop = _core._native_loop_seconds
            per_step = loop(self.env_type, self.rows, 8, 0, self.threads, self.table) / 8
            steps = max(8, int(budget / per_step))  # a calibrating run sets the length
            return (
                steps
                * self.rows
                / loop(self.env_type, self.rows, steps, 0, self.threads, self.table)
            )
        return timed(self.step, self.table, budget) * self.rows


def available(method: str) -> bool:
    if method != "envpool":
        return True
    try:
        import envpool  # noqa: F401
    except ImportError:
        return False
    return True


def measure(env_id, methods, num_envs, threads, budget, repeats) -> dict[str, list[float]]:
    """Every timed rate of every contender (`repeats` each, interleaved round by round)."""
    space = fastbatch.spec(env_id).action_space
    rng = np.random.default_rng(0)
    table = rng.uniform(space.low, space.high, (64, num_envs, *space.shape)).astype(np.float32)
    contenders = [Contender(m, env_id, table, threads) for m in methods if available(m)]
    rates: dict[str, list[float]] = {c.method: [] for c in contenders}
    try:
        for _ in range(repeats):
            for c in contenders:
                rates[c.method].append(c.rate(budget))
    finally:
        for c in contenders:
            c.close()
    return rates


def fmt(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x / 1e3:.1f}k" if x >= 1e3 else f"{x:.0f}"


def ratio(a: float | None, b: float | None) -> str:
    return "-" if not a or not b else f"{a / b:.2f}x"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--envs", default=",".join(ENV_IDS), help="comma-separated env ids")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=15, help="rounds (medians are reported)")
    parser.add_argument("--budget", type=float, default=0.2, help="seconds per timed run")
    parser.add_argument(
        "--stat",
        choices=("median", "max"),
        default="median",
        help="the statistic printed: median, or max (best run: the least disturbed by other load)",
    )
    parser.add_argument("--json", default="bench/results/mujoco_envs.json")
    args = parser.parse_args(argv)
    fb_mujoco.register()
    methods = [m for m in args.methods.split(",") if m]
    names = ("fb/envpool", "fb/cpp-loop", "fb/gym-sync", "async/sync", "sync/clock")
    header = f"{'env':<27}" + "".join(f"{m:>11}" for m in methods)
    header += "".join(f"{n:>13}" for n in names)
    print(
        f"fastbatch {fastbatch.__version__}, mujoco {fb_mujoco._mujoco()[0]}, "
        f"{args.num_envs} envs, {args.threads} threads, {args.stat} of {args.repeats} x "
        f"{args.budget}s (env steps/s)"
    )
    print(header)
    print("-" * len(header))
    results = []
    for env_id in [e for e in args.envs.split(",") if e]:
        rates = measure(env_id, methods, args.num_envs, args.threads, args.budget, args.repeats)
        stat = statistics.median if args.stat == "median" else max
        row = {m: stat(r) for m, r in rates.items()}
        fb = row.get("fb-sync")
        ratios = [
            ratio(fb, row.get("envpool")),
            ratio(fb, row.get("cpp-loop")),
            ratio(fb, row.get("gym-sync")),
            ratio(row.get("fb-async"), fb),
            ratio(fb, row.get("fb-clock")),
        ]
        print(
            f"{env_id:<27}"
            + "".join(f"{fmt(row.get(m)):>11}" for m in methods)
            + "".join(f"{r:>13}" for r in ratios),
            flush=True,
        )
        results.append({"env": env_id, args.stat: row, "runs": rates})
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "fastbatch": fastbatch.__version__,
        "mujoco": fb_mujoco._mujoco()[0],
        "gymnasium": gymnasium.__version__,
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "num_envs": args.num_envs,
        "threads": args.threads,
        "repeats": args.repeats,
        "budget_s": args.budget,
        "stat": args.stat,
    }
    out.write_text(json.dumps({"meta": meta, "results": results}, indent=2))
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
