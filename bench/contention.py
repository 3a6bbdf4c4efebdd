"""The native pool on a busy machine: default threads against one thread, idle and with one
core taken by another process, measured side by side in one run (issue 14).

    python bench/contention.py            # full run (about 3 minutes on 2 cores)
    python bench/contention.py --quick    # short run

The busy core is reproduced here: a busy-loop process pinned with os.sched_setaffinity to the
last available core, started before the "busy" rows and stopped after them (and on any exit).
This process itself is not pinned.

Sections:
  sync      CartPole, Pendulum, Acrobot at 256 and 4096 envs, idle and busy: the default thread
            count (`num_workers` = available cores) against `num_workers=1`; the two envs
            live side by side and their timed runs alternate; medians. `active` is the thread
            count the default env's tuner had chosen at the end.
  async     async mode (batch_size = num_envs / 2, default threads) against sync mode (default
            threads) on the same envs idle, and on _TestVariableCost-v0 (step cost 1-20 units
            by env and over time; `+stalls`: also 1% of steps sleep 1 ms); alternating runs,
            medians. `+policy` rows: the caller computes each batch's actions with a small numpy
            MLP from the last observations (sync: step then policy; async: recv, policy of
            those rows, send), the work that async mode's threads overlap.
  process   the process backend (gymnasium's CartPole-v1, default layout) idle and busy.
  minatar   MinAtar Breakout-v1 and Asterix-v1 (the `minatar` package, ~20-30 us a step) at 8
            and 64 envs, idle and busy: the process backend (default layout) against gymnasium's
            SyncVectorEnv in this process, alternating runs, medians (issue 28's bar: at least
            1.0x with one core busy). `caller`: the blocks the caller stepped itself at the end
            of the row, of all blocks (rebalancing moves blocks to it while that is faster).
            `--layouts`: also the process backend without rebalancing (`rebalance=False`, the
            default layout before it), with one worker process (`num_workers=1`) and with a
            process for every block (`in_parent=False`).
  latency   microseconds per batch step with 1 env (CartPole); the CPU an idle pool uses.

Every rate is env steps per second (batch steps x rows per batch), actions drawn before timing,
each timed run under bench/_harness.py's rules (every env warmed up for one run's length first).
`others`: the cores that processes other than this one and its busy loop used during the timed
runs of the row (the machine is shared: "idle" means no busy loop of ours, not an idle machine).
Results are printed and written as JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import subprocess
import sys
import time

import _harness as harness
import numpy as np

import fastbatch

SYNC_ENVS = ["CartPole-v1", "Pendulum-v1", "Acrobot-v1"]
SIZES = [256, 4096]
MINATAR = ["MinAtar/Breakout-v1", "MinAtar/Asterix-v1"]
MINATAR_SIZES = [8, 64]
# The process backend's layouts the minatar section can time (`--layouts`: all of them).
MINATAR_LAYOUTS = {
    "default": {},
    "rebalance=False": {"rebalance": False},
    "num_workers=1": {"num_workers": 1},
    "in_parent=False": {"in_parent": False},
}
VARIABLE = "_TestVariableCost-v0"
VARIABLE_SIZES = [16, 256]
# The variable-cost env with stalls: 1% of its steps sleep 1 ms (an env that waits on I/O or
# another process): sync mode waits for the stall, async mode returns the other envs.
STALLS = {"stall_prob": 0.01, "stall_us": 1000}

BUSY_PIDS: list[int] = []  # our busy-loop process, while it runs: not "other" load


@contextlib.contextmanager
def busy_core(core: int):
    """A busy-loop process pinned to `core` for the duration of the block."""
    code = f"import os\nos.sched_setaffinity(0, {{{core}}})\nwhile True:\n    pass\n"
    proc = subprocess.Popen([sys.executable, "-c", code])
    BUSY_PIDS.append(proc.pid)
    try:
        time.sleep(0.3)  # let it start spinning
        yield proc
    finally:
        BUSY_PIDS.remove(proc.pid)
        proc.kill()
        proc.wait()


class Stepper(harness.Loop):
    """One env and its timed loop (bench/_harness.py's rules): `rate()` is env steps per
    second of one timed run."""

    def __init__(self, env, rows: int, step, actions, budget: harness.Budget) -> None:
        super().__init__(step, actions, rows, budget)
        self.env = env


def sync_stepper(env_id: str, num_envs: int, budget, **kwargs) -> Stepper:
    env = fastbatch.make(env_id, num_envs, seed=0, **kwargs)
    env.reset()
    actions = harness.action_table(env.single_action_space, num_envs)
    return Stepper(env, num_envs, env.step, actions, budget)


def async_stepper(env_id: str, num_envs: int, budget, **kwargs) -> Stepper:
    batch = num_envs // 2
    env = fastbatch.make(env_id, num_envs, seed=0, batch_size=batch, **kwargs)
    env.reset()
    space = env.single_action_space
    step = harness.async_cycle(env, harness.action_table(space, num_envs, count=1, seed=1)[0])
    return Stepper(env, batch, step, harness.action_table(space, batch), budget)


class Policy:
    """A small MLP on the caller's thread (numpy, obs -> 64 tanh units -> action): the work a
    trainer does between batch steps, which async mode lets the pool's threads overlap."""

    def __init__(self, env, rng):
        self.space = env.single_action_space
        size = int(np.prod(env.single_observation_space.shape))
        outputs = self.space.n if hasattr(self.space, "n") else int(np.prod(self.space.shape))
        self.w1 = rng.standard_normal((size, 64)).astype(np.float32) / np.sqrt(size)
        self.w2 = rng.standard_normal((64, outputs)).astype(np.float32) / 8.0

        self.hidden: dict[int, np.ndarray] = {}  # per batch size, reused: no page faults
        self.out: dict[int, np.ndarray] = {}

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        # Preallocated results keep the cost linear in the rows: a fresh 1 MiB array a call
        # costs ~3 ms of page faults on this VM, which would favour async's half batches.
        n = len(obs)
        if n not in self.hidden:
            self.hidden[n] = np.empty((n, self.w1.shape[1]), np.float32)
            self.out[n] = np.empty((n, self.w2.shape[1]), np.float32)
        hidden = np.matmul(obs.reshape(n, -1), self.w1, out=self.hidden[n], dtype=np.float32)
        out = np.matmul(np.tanh(hidden, out=hidden), self.w2, out=self.out[n])
        if hasattr(self.space, "n"):
            return out.argmax(axis=1)
        return np.clip(out, self.space.low, self.space.high).astype(self.space.dtype)


def policy_steppers(env_id: str, num_envs: int, rng, budget) -> tuple[Stepper, Stepper]:
    """(async, sync) steppers whose actions come from a Policy of the last observations."""
    sync = fastbatch.make(env_id, num_envs, seed=0)
    policy = Policy(sync, rng)
    state = {"sync": sync.reset()[0]}

    def sync_step(_):
        state["sync"] = sync.step(policy(state["sync"]))[0]

    asyn = fastbatch.make(env_id, num_envs, seed=0, batch_size=num_envs // 2)
    asyn.send(policy(asyn.reset()[0]))

    def async_step(_):
        asyn.send(policy(asyn.recv()[0]))

    none = [None] * harness.TABLE_SIZE
    return (
        Stepper(asyn, num_envs // 2, async_step, none, budget),
        Stepper(sync, num_envs, sync_step, none, budget),
    )


def compare(a: Stepper, b: Stepper, repeats: int):
    """Alternating timed runs of two steppers, after both warm-ups; (median rate of a, median
    rate of b, cores the other processes on the machine used during the timed runs)."""
    a.warm_up()
    b.warm_up()
    others = harness.OthersCpu(exclude=lambda: BUSY_PIDS)
    rates = harness.interleaved({"a": a, "b": b}, repeats)
    return harness.median(rates["a"]), harness.median(rates["b"]), others.cores() or 0.0


fmt = harness.format_rate


def sync_section(load: str, budget, repeats) -> list[dict]:
    rows = []
    for env_id in SYNC_ENVS:
        for n in SIZES:
            default = sync_stepper(env_id, n, budget)
            one = sync_stepper(env_id, n, budget, num_workers=1)
            try:
                d, o, others = compare(default, one, repeats)
                active = f"{default.env.active_workers}/{default.env.num_workers}"
            finally:
                default.env.close()
                one.env.close()
            row = {"load": load, "env": env_id, "num_envs": n, "default": d, "one_thread": o}
            row.update(ratio=d / o, active=active, others_cores=others)
            rows.append(row)
            print(
                SYNC_TABLE.row(load, env_id, n, fmt(d), fmt(o), harness.format_ratio(d, o))
                + f"{active:>7}{others:>8.2f}",
                flush=True,
            )
    return rows


def async_section(budget, repeats, rng) -> list[dict]:
    cases = [(e, n, {}) for e in SYNC_ENVS for n in SIZES]
    cases += [(VARIABLE, n, {}) for n in VARIABLE_SIZES]
    cases += [(VARIABLE, n, STALLS) for n in VARIABLE_SIZES]
    cases += [(e, n, "policy") for e in SYNC_ENVS for n in SIZES]
    rows = []
    for env_id, n, params in cases:
        if params == "policy":
            asyn, sync = policy_steppers(env_id, n, rng, budget)
        else:
            sync = sync_stepper(env_id, n, budget, **params)
            asyn = async_stepper(env_id, n, budget, **params)
        try:
            a, s, others = compare(asyn, sync, repeats)
        finally:
            sync.env.close()
            asyn.env.close()
        case = "+policy" if params == "policy" else "+stalls" if params else ""
        rows.append(
            {"env": env_id + case, "num_envs": n, "batch_size": n // 2, "sync": s, "async": a}
            | {"others_cores": others}
        )
        print(
            ASYNC_TABLE.row(env_id + case, n, n // 2, fmt(s), fmt(a), harness.format_ratio(a, s))
            + f"{others:>8.2f}",
            flush=True,
        )
    return rows


def process_rate(num_envs: int, budget, repeats) -> float:
    env = fastbatch.make("CartPole-v1", num_envs, backend="process", seed=0)
    try:
        env.reset()
        actions = harness.action_table(env.single_action_space, num_envs)
        return harness.median(
            harness.repeated(harness.Loop(env.step, actions, num_envs, budget), repeats)
        )
    finally:
        env.close()


def minatar_section(load: str, budget, repeats, layouts=("default",)) -> list[dict]:
    """The process backend (in each of `layouts`, names of MINATAR_LAYOUTS) against gymnasium's
    SyncVectorEnv on MinAtar, one row an env, size and layout (`load`: "idle" or "busy", for
    the table)."""
    import gymnasium

    from fastbatch.env_packages import register_package_for

    rows = []
    for env_id in MINATAR:
        register_package_for(env_id)  # MinAtar's ids exist once minatar.gym registers them
        for n, layout in [(n, name) for n in MINATAR_SIZES for name in layouts]:
            kwargs = MINATAR_LAYOUTS[layout]
            ours = fastbatch.make(env_id, n, backend="process", seed=0, **kwargs)
            theirs = gymnasium.make_vec(env_id, n, vectorization_mode="sync")
            try:
                ours.reset()
                theirs.reset(seed=0)
                actions = harness.action_table(ours.single_action_space, n)
                a, b, _ = compare(
                    Stepper(ours, n, ours.step, actions, budget),
                    Stepper(theirs, n, theirs.step, actions, budget),
                    repeats,
                )
                caller = f"{ours.caller_blocks}/{ours.num_workers}"
            finally:
                ours.close()
                theirs.close()
            rows.append(
                {"load": load, "env": env_id, "num_envs": n, "layout": layout}
                | {"process": a, "sync": b, "caller_blocks": caller}
            )
            ratio = harness.format_ratio(a, b)
            print(
                MINATAR_TABLE.row(load, env_id, n, f"  {layout}", fmt(a), fmt(b), ratio, caller),
                flush=True,
            )
    return rows


def latency_us(budget, repeats) -> float:
    env = fastbatch.make("CartPole-v1", 1, seed=0)
    try:
        env.reset()
        actions = harness.action_table(env.single_action_space, 1)
        rate = harness.median(harness.repeated(harness.Loop(env.step, actions, 1, budget), repeats))
    finally:
        env.close()
    return 1e6 / rate


def idle_cpu() -> float:
    """The share of a core this process uses while a stepped 256-env pool sits idle."""
    env = fastbatch.make("CartPole-v1", 256, seed=0)
    env.reset()
    actions = np.zeros(256, dtype=np.int64)
    for _ in range(500):
        env.step(actions)
    time.sleep(0.05)  # past the workers' spinning and yielding
    cpu, wall = time.process_time(), time.perf_counter()
    time.sleep(1.0)
    used = (time.process_time() - cpu) / (time.perf_counter() - wall)
    env.close()
    return used


# The ratio's column is 9 wide: "1.28x" right-aligned under "ratio" (the tables of
# bench/README.md); `active` and `others` follow.
SYNC_TABLE = harness.Table(
    ("load", -6), ("env", -14), ("N", 6), ("default", 10), ("1 thread", 10), ("ratio", 9)
)
ASYNC_TABLE = harness.Table(
    ("env (idle)", -30), ("N", 6), ("B", 6), ("sync", 10), ("async", 10), ("ratio", 9)
)
PROCESS_TABLE = harness.Table(
    ("process backend, CartPole-v1", -30), ("N", 6), ("idle", 10), ("busy", 10), ("ratio", 9)
)
MINATAR_TABLE = harness.Table(
    ("load", -6),
    ("env", -20),
    ("N", 6),
    ("  layout", -17),
    ("process", 10),
    ("Sync", 10),
    ("ratio", 9),
    ("caller", 8),
)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="short budgets and fewer repeats")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per cell")
    parser.add_argument("--budget", type=float, default=None, help="seconds per timed run")
    parser.add_argument("--sections", default="sync,async,process,minatar,latency")
    parser.add_argument(
        "--layouts", action="store_true", help="minatar: every process-backend layout"
    )
    parser.add_argument("--json", default="bench/results/contention.json")
    args = parser.parse_args(argv)
    repeats = args.repeats or (3 if args.quick else 7)
    seconds = args.budget or (0.1 if args.quick else 0.25)
    budget = harness.Budget(seconds)
    sections = set(args.sections.split(","))
    rng = np.random.default_rng(0)
    busy = harness.core_ids()[-1]
    run = harness.RunInfo(
        busy_core=busy, repeats=repeats, budget_s=seconds, sections=sorted(sections)
    )
    results: dict = {}
    print(run.header())
    print(
        f"fastbatch {fastbatch.__version__}, {harness.cores()} cores, busy loop on core {busy}, "
        f"medians of {repeats} x {seconds}s (env steps/s)"
    )
    if "sync" in sections:
        print("\n" + SYNC_TABLE.header() + f"{'active':>7}{'others':>8}")
        rows = sync_section("idle", budget, repeats)
        with busy_core(busy):
            rows += sync_section("busy", budget, repeats)
        results["sync"] = rows
    if "async" in sections:
        print("\n" + ASYNC_TABLE.header() + f"{'others':>8}")
        results["async"] = async_section(budget, repeats, rng)
    if "process" in sections:
        print("\n" + PROCESS_TABLE.header())
        results["process"] = []
        for n in (16, 256):
            idle = process_rate(n, budget, repeats)
            with busy_core(busy):
                loaded = process_rate(n, budget, repeats)
            results["process"].append({"num_envs": n, "idle": idle, "busy": loaded})
            ratio = harness.format_ratio(loaded, idle)
            print(PROCESS_TABLE.row("", n, fmt(idle), fmt(loaded), ratio))
    if "minatar" in sections and importlib.util.find_spec("minatar") is None:
        print("\nminatar section skipped: pip install minatar")
    elif "minatar" in sections:
        print("\n" + MINATAR_TABLE.header())
        layouts = tuple(MINATAR_LAYOUTS) if args.layouts else ("default", "rebalance=False")
        rows = minatar_section("idle", budget, repeats, layouts)
        with busy_core(busy):
            rows += minatar_section("busy", budget, repeats, layouts)
        results["minatar"] = rows
    if "latency" in sections:
        us = latency_us(budget, repeats)
        cpu = idle_cpu()
        results["latency"] = {"us_per_batch_step_1_env": us, "idle_pool_cpu": cpu}
        print(f"\n1-env latency (CartPole): {us:.2f} us per batch step")
        print(f"idle pool (256 envs, default threads): {cpu:.1%} of a core")
    print("\n" + run.footer())
    harness.write_json(args.json, run.meta, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
