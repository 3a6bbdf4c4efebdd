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
contenders alike. Timing follows bench/_harness.py: every contender is warmed up for one run's
length before the first round (the C++ loop's warm-up only sizes its runs: each is a fresh
pool), and a run lasts at least `--budget` seconds and 32 batch steps. The JSON keeps every run. The ratios
printed are fb-sync's: over EnvPool, over the C++ loop, over gymnasium's SyncVectorEnv, fb-async
over fb-sync, and fb-sync over fb-clock (what removing the profiling clock gained).
gymnasium's envs are timed with the profiling clock that `import mujoco` installs (MuJoCo calls
it around every stage of mj_step), as its users run them; fastbatch's envs without it, as
`fastbatch.make` leaves the process (EnvPool bundles its own MuJoCo, whose clock is unset).
"""

from __future__ import annotations

import argparse
import sys
import warnings

import _harness as harness
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


class Clocked:
    """A timed loop run with MuJoCo's process-wide profiling clock (mjcb_time) as its users
    have it: ``clocked`` envs (gymnasium's, shimmy's) with the clock `import mujoco` installs,
    fastbatch's without it (fastbatch.make removes it: fastbatch.mujoco.drop_default_timer)."""

    def __init__(self, loop, clocked: bool, close=lambda: None) -> None:
        self.loop, self.clocked, self.close = loop, clocked, close

    @property
    def warm(self) -> bool:
        return self.loop.warm

    def _set_clock(self) -> None:
        mujoco.set_mjcb_time(None)
        if not self.clocked:
            fb_mujoco.drop_default_timer()

    def warm_up(self) -> None:
        self._set_clock()
        self.loop.warm_up()

    def rate(self) -> float:
        self._set_clock()
        return self.loop.rate()


class Contender(Clocked):
    """One method on one env, timed by the harness: `rate()` returns env steps per second of
    one timed run, with MuJoCo's profiling clock set as the method's users have it."""

    def __init__(
        self, method: str, env_id: str, table: np.ndarray, threads: int, budget: harness.Budget
    ) -> None:
        self.method = method
        num_envs = table.shape[1]
        self.close = lambda: None
        if method == "cpp-loop":
            env_type = REGISTRY.resolve(env_id)[0]
            actions = np.ascontiguousarray(table, dtype=np.float32)

            def run(steps: int) -> float:
                return _core._native_loop_seconds(env_type, num_envs, steps, 0, threads, actions)

            super().__init__(harness.NativeLoop(run, num_envs, budget), False)
            return
        rows = num_envs
        if method in ("fb-sync", "fb-clock"):
            env = fastbatch.make(env_id, num_envs, seed=0, num_workers=threads)
            env.reset()
            self.step, self.close = env.step, env.close
        elif method == "fb-async":
            env = fastbatch.make(
                env_id, num_envs, seed=0, num_workers=threads, batch_size=num_envs // 2
            )
            env.reset()
            rows = num_envs // 2
            self.step, self.close = harness.async_cycle(env, table[0]), env.close
            table = table[:, :rows]  # the first rows of the same table
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

        super().__init__(
            harness.Loop(self.step, table, rows, budget), method in CLOCKED, self.close
        )


def available(method: str) -> bool:
    if method != "envpool":
        return True
    try:
        import envpool  # noqa: F401
    except ImportError:
        return False
    return True


def measure(
    env_id, methods, num_envs, threads, budget, repeats, make=None, usable=None
) -> dict[str, list[float]]:
    """Every timed rate of every contender (`repeats` each, interleaved round by round):
    ``make(method, env_id, table, threads, budget)`` builds each (`Contender` by default) of the
    methods ``usable(method)`` allows (`available`)."""
    make, usable = make or Contender, usable or available
    space = fastbatch.spec(env_id).action_space
    table = harness.action_table(space, num_envs, count=64)
    contenders = {}
    try:
        for m in methods:
            if usable(m):
                contenders[m] = make(m, env_id, table, threads, budget)
        return harness.interleaved(contenders, repeats)
    finally:
        for c in contenders.values():
            c.close()


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
    budget = harness.Budget(args.budget)
    run = harness.RunInfo(
        packages=("mujoco", "envpool"),
        num_envs=args.num_envs,
        threads=args.threads,
        repeats=args.repeats,
        budget_s=args.budget,
        stat=args.stat,
    )
    names = ("fb/envpool", "fb/cpp-loop", "fb/gym-sync", "async/sync", "sync/clock")
    table = harness.Table(("env", -27), *((m, 11) for m in methods), *((n, 13) for n in names))
    print(run.header())
    print(
        f"fastbatch {fastbatch.__version__}, mujoco {harness.package_version('mujoco')}, "
        f"{args.num_envs} envs, {args.threads} threads, {args.stat} of {args.repeats} x "
        f"{args.budget}s (env steps/s)"
    )
    print(table.header())
    print(table.rule())
    results = []
    stat = harness.median if args.stat == "median" else max
    for env_id in [e for e in args.envs.split(",") if e]:
        rates = measure(env_id, methods, args.num_envs, args.threads, budget, args.repeats)
        row = {m: stat(r) for m, r in rates.items()}
        fb = row.get("fb-sync")
        ratios = [
            harness.format_ratio(fb, row.get("envpool")),
            harness.format_ratio(fb, row.get("cpp-loop")),
            harness.format_ratio(fb, row.get("gym-sync")),
            harness.format_ratio(row.get("fb-async"), fb),
            harness.format_ratio(fb, row.get("fb-clock")),
        ]
        cells = [harness.format_rate(row.get(m)) for m in methods]
        print(table.row(env_id, *cells, *ratios), flush=True)
        results.append({"env": env_id, args.stat: row, "runs": rates})
    print(run.footer())
    print()
    harness.write_json(args.json, run.meta, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
