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
  latency   microseconds per batch step with 1 env (CartPole); the CPU an idle pool uses.

Every rate is env steps per second (batch steps x rows per batch), actions drawn before timing.
`others`: the cores that processes other than this one and its busy loop used during the timed
runs of the row (the machine is shared: "idle" means no busy loop of ours, not an idle machine).
Results are printed and written as JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import fastbatch

SYNC_ENVS = ["CartPole-v1", "Pendulum-v1", "Acrobot-v1"]
SIZES = [256, 4096]
VARIABLE = "_TestVariableCost-v0"
VARIABLE_SIZES = [16, 256]
# The variable-cost env with stalls: 1% of its steps sleep 1 ms (an env that waits on I/O or
# another process): sync mode waits for the stall, async mode returns the other envs.
STALLS = {"stall_prob": 0.01, "stall_us": 1000}


def cores() -> list[int]:
    return sorted(os.sched_getaffinity(0))


TICK = os.sysconf("SC_CLK_TCK")
BUSY_PIDS: list[int] = []  # our busy-loop process, while it runs


def cpu_seconds_not_ours() -> tuple[float, float]:
    """(CPU seconds the machine spent busy outside this process and our busy loop, wall time):
    two readings give the other processes' load over an interval, in cores."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:9]]
    busy = (sum(ticks) - ticks[3] - ticks[4]) / TICK  # all but idle and iowait
    for pid in BUSY_PIDS:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        busy -= (int(fields[11]) + int(fields[12])) / TICK  # utime, stime
    return busy - time.process_time(), time.perf_counter()


def others_load(start: tuple[float, float]) -> float:
    """Cores the other processes used since `start` (from cpu_seconds_not_ours)."""
    busy, wall = cpu_seconds_not_ours()
    return max(0.0, (busy - start[0]) / (wall - start[1]))


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


def actions_for(env, rows: int, rng: np.random.Generator, count: int = 16) -> list[np.ndarray]:
    space = env.single_action_space
    if hasattr(space, "n"):
        return [rng.integers(space.n, size=rows) for _ in range(count)]
    low, high = space.low, space.high
    return [
        rng.uniform(low, high, size=(rows, *space.shape)).astype(space.dtype) for _ in range(count)
    ]


class Stepper:
    """One env and its timed loop: `rate(budget)` is env steps per second over one timed run."""

    def __init__(self, env, rows: int, step, actions):
        self.env, self.rows, self.step, self.actions = env, rows, step, actions

    def rate(self, budget: float) -> float:
        n, start = 0, time.perf_counter()
        while True:
            for a in self.actions:
                self.step(a)
            n += len(self.actions)
            elapsed = time.perf_counter() - start
            if elapsed >= budget:
                return n * self.rows / elapsed


def sync_stepper(env_id: str, num_envs: int, rng, **kwargs) -> Stepper:
    env = fastbatch.make(env_id, num_envs, seed=0, **kwargs)
    env.reset()
    return Stepper(env, num_envs, env.step, actions_for(env, num_envs, rng))


def async_stepper(env_id: str, num_envs: int, rng, **kwargs) -> Stepper:
    batch = num_envs // 2
    env = fastbatch.make(env_id, num_envs, seed=0, batch_size=batch, **kwargs)
    env.reset()
    env.send(actions_for(env, num_envs, rng, 1)[0])

    def step(actions):
        env.recv()
        env.send(actions)

    return Stepper(env, batch, step, actions_for(env, batch, rng))


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


def policy_steppers(env_id: str, num_envs: int, rng) -> tuple[Stepper, Stepper]:
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

    none = [None] * 16
    return Stepper(asyn, num_envs // 2, async_step, none), Stepper(sync, num_envs, sync_step, none)


def compare(a: Stepper, b: Stepper, budget: float, repeats: int, warmup: float):
    """Alternating timed runs of two steppers; (median rate of a, median rate of b, cores the
    other processes on the machine used meanwhile)."""
    a.rate(warmup)
    b.rate(warmup)
    rates_a, rates_b = [], []
    start = cpu_seconds_not_ours()
    for _ in range(repeats):
        rates_a.append(a.rate(budget))
        rates_b.append(b.rate(budget))
    return statistics.median(rates_a), statistics.median(rates_b), others_load(start)


def fmt(x: float) -> str:
    return f"{x / 1e6:.2f}M" if x >= 1e6 else f"{x / 1e3:.1f}k"


def sync_section(load: str, budget, repeats, warmup, rng) -> list[dict]:
    rows = []
    for env_id in SYNC_ENVS:
        for n in SIZES:
            default = sync_stepper(env_id, n, rng)
            one = sync_stepper(env_id, n, rng, num_workers=1)
            try:
                d, o, others = compare(default, one, budget, repeats, warmup)
                active = f"{default.env.active_workers}/{default.env.num_workers}"
            finally:
                default.env.close()
                one.env.close()
            row = {"load": load, "env": env_id, "num_envs": n, "default": d, "one_thread": o}
            row.update(ratio=d / o, active=active, others_cores=others)
            rows.append(row)
            print(
                f"{load:<6}{env_id:<14}{n:>6}{fmt(d):>10}{fmt(o):>10}{d / o:>8.2f}x{active:>7}"
                f"{others:>8.2f}",
                flush=True,
            )
    return rows


def async_section(budget, repeats, warmup, rng) -> list[dict]:
    cases = [(e, n, {}) for e in SYNC_ENVS for n in SIZES]
    cases += [(VARIABLE, n, {}) for n in VARIABLE_SIZES]
    cases += [(VARIABLE, n, STALLS) for n in VARIABLE_SIZES]
    cases += [(e, n, "policy") for e in SYNC_ENVS for n in SIZES]
    rows = []
    for env_id, n, params in cases:
        if params == "policy":
            asyn, sync = policy_steppers(env_id, n, rng)
        else:
            sync = sync_stepper(env_id, n, rng, **params)
            asyn = async_stepper(env_id, n, rng, **params)
        try:
            a, s, others = compare(asyn, sync, budget, repeats, warmup)
        finally:
            sync.env.close()
            asyn.env.close()
        case = "+policy" if params == "policy" else "+stalls" if params else ""
        rows.append(
            {"env": env_id + case, "num_envs": n, "batch_size": n // 2, "sync": s, "async": a}
            | {"others_cores": others}
        )
        print(
            f"{env_id + case:<30}{n:>6}{n // 2:>6}{fmt(s):>10}{fmt(a):>10}{a / s:>8.2f}x"
            f"{others:>8.2f}",
            flush=True,
        )
    return rows


def process_rate(num_envs: int, budget, repeats, warmup, rng) -> float:
    env = fastbatch.make("CartPole-v1", num_envs, backend="process", seed=0)
    try:
        env.reset()
        stepper = Stepper(env, num_envs, env.step, actions_for(env, num_envs, rng))
        stepper.rate(warmup)
        return statistics.median(stepper.rate(budget) for _ in range(repeats))
    finally:
        env.close()


def latency_us(budget, repeats) -> float:
    env = fastbatch.make("CartPole-v1", 1, seed=0)
    env.reset()
    stepper = Stepper(env, 1, env.step, [np.array([k % 2]) for k in range(16)])
    stepper.rate(budget)
    rate = statistics.median(stepper.rate(budget) for _ in range(repeats))
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="short budgets and fewer repeats")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per cell")
    parser.add_argument("--budget", type=float, default=None, help="seconds per timed run")
    parser.add_argument("--sections", default="sync,async,process,latency")
    parser.add_argument("--json", default="bench/results/contention.json")
    args = parser.parse_args(argv)
    repeats = args.repeats or (3 if args.quick else 7)
    budget = args.budget or (0.1 if args.quick else 0.25)
    warmup = 2 * budget
    sections = set(args.sections.split(","))
    rng = np.random.default_rng(0)
    available = cores()
    busy = available[-1]
    results: dict = {
        "meta": {
            "fastbatch": fastbatch.__version__,
            "cores": len(available),
            "busy_core": busy,
            "repeats": repeats,
            "budget_s": budget,
            "load_average_at_start": os.getloadavg(),
        }
    }
    print(
        f"fastbatch {fastbatch.__version__}, {len(available)} cores, busy loop on core {busy}, "
        f"medians of {repeats} x {budget}s (env steps/s); load average at start "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
    )
    if "sync" in sections:
        print(
            f"\n{'load':<6}{'env':<14}{'N':>6}{'default':>10}{'1 thread':>10}{'ratio':>9}{'active':>7}"
            f"{'others':>8}"
        )
        rows = sync_section("idle", budget, repeats, warmup, rng)
        with busy_core(busy):
            rows += sync_section("busy", budget, repeats, warmup, rng)
        results["sync"] = rows
    if "async" in sections:
        print(
            f"\n{'env (idle)':<30}{'N':>6}{'B':>6}{'sync':>10}{'async':>10}{'ratio':>9}{'others':>8}"
        )
        results["async"] = async_section(budget, repeats, warmup, rng)
    if "process" in sections:
        print(f"\n{'process backend, CartPole-v1':<30}{'N':>6}{'idle':>10}{'busy':>10}{'ratio':>9}")
        results["process"] = []
        for n in (16, 256):
            idle = process_rate(n, budget, repeats, warmup, rng)
            with busy_core(busy):
                loaded = process_rate(n, budget, repeats, warmup, rng)
            results["process"].append({"num_envs": n, "idle": idle, "busy": loaded})
            print(f"{'':<30}{n:>6}{fmt(idle):>10}{fmt(loaded):>10}{loaded / idle:>8.2f}x")
    if "latency" in sections:
        us = latency_us(budget, repeats)
        cpu = idle_cpu()
        results["latency"] = {"us_per_batch_step_1_env": us, "idle_pool_cpu": cpu}
        print(f"\n1-env latency (CartPole): {us:.2f} us per batch step")
        print(f"idle pool (256 envs, default threads): {cpu:.1%} of a core")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
